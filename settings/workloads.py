"""Settings of what runs on the cluster: the model store, the models, and the serving, monitoring
and autoscaling options every model shares.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    Field,
    PositiveInt,
    field_validator,
    model_validator,
)

from settings.base import (
    ALLOWED_EXTRA_ARGS,
    DNS_LABEL,
    IMAGE_DIGEST,
    MAX_MODEL_NAME_LENGTH,
    S3_URI,
    SettingsModel,
)

# --------------------------------------------------------------------------- model store


class ModelStoreSettings(SettingsModel):
    """Where model weights live, shared by every replica."""

    kind: Literal["fsx-lustre", "efs", "existing"] = Field(
        default="fsx-lustre", description="fsx-lustre (eks default) | efs | existing (a PVC or NFS export)."
    )
    s3_uri: str | None = Field(
        default=None, description="s3://bucket/prefix linked to FSx; empty: the stack creates a bucket."
    )
    storage_capacity_gib: PositiveInt | None = Field(
        default=None, description="Pinned FSx capacity (1200, 2400, then 2400 steps). Default: planned."
    )
    throughput_per_tib: PositiveInt | None = Field(
        default=None,
        description="Pinned FSx PERSISTENT_2 MB/s per TiB (125, 250, 500, 1000). Default: planned.",
    )
    cold_start_target_seconds: PositiveInt = Field(
        default=600, description="Time in which every replica must be able to read its weights at once."
    )
    existing_claim_name: str | None = Field(default=None, description="Existing PVC holding the models.")
    nfs_server: str | None = Field(default=None, description="NFS server of an existing export.")
    nfs_path: str | None = Field(default=None, description="Path of that NFS export.")
    existing_throughput_mbps: PositiveInt = Field(
        default=1000,
        description="Read throughput assumed for existing storage (MB/s), for cold-start budgets.",
    )
    mount_path: str = Field(default="/models", description="Where pods mount the store.")

    @field_validator("s3_uri")
    @classmethod
    def _s3(cls, value: str | None) -> str | None:
        if value is not None and not S3_URI.match(value):
            raise ValueError("must be an S3 URI such as s3://my-bucket/models")
        return value

    @model_validator(mode="after")
    def _existing_source(self) -> ModelStoreSettings:
        has_claim = self.existing_claim_name is not None
        has_nfs = self.nfs_server is not None or self.nfs_path is not None
        if self.kind == "existing":
            if has_claim == has_nfs:
                raise ValueError("kind existing needs either existingClaimName or nfsServer + nfsPath")
            if has_nfs and not (self.nfs_server and self.nfs_path):
                raise ValueError("an NFS export needs both nfsServer and nfsPath")
        elif has_claim or has_nfs:
            raise ValueError(
                f"existingClaimName / nfsServer / nfsPath only apply to kind existing, not {self.kind}"
            )
        return self


# --------------------------------------------------------------------------- models


class ModelSettings(SettingsModel):
    """One served model: what to serve, where, and for how many concurrent requests."""

    name: str = Field(description="DNS label naming the service (unique).")
    model_id: str = Field(pattern=r"^[\w.-]+/[\w.-]+$", description="Hugging Face id, org/name.")
    revision: str = Field(min_length=1, description="Pinned Hub revision (commit sha or tag).")
    facts_file: str | None = Field(
        default=None, description="Model facts JSON (python -m capacity lock); default: the built-in catalog."
    )
    pool: str = Field(description="Name of the GPU pool that serves it.")
    served_model_name: str | None = Field(default=None, description="API model name; default: modelId.")
    max_model_len: PositiveInt = Field(description="Context length per request (tokens).")
    target_concurrency: PositiveInt = Field(
        default=1, description="Concurrent requests of maxModelLen tokens the model must hold."
    )
    gpu_memory_utilization: float = Field(
        default=0.90, gt=0.5, le=0.98, description="Fraction of each GPU vLLM may use (vLLM default 0.9)."
    )
    dtype: Literal["auto", "bfloat16", "float16", "float32"] = "auto"
    quantization: (
        Literal[
            "fp8", "awq", "awq_marlin", "gptq", "gptq_marlin", "compressed-tensors", "bitsandbytes", "mxfp4"
        ]
        | None
    ) = None
    kv_cache_dtype: Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2"] = "auto"
    max_num_batched_tokens: PositiveInt | None = Field(
        default=None, description="Scheduler token budget per step; default vLLM's (8192)."
    )
    enable_chunked_prefill: bool = True
    tensor_parallel_size: PositiveInt | None = Field(default=None, description="Pin TP; default planned.")
    pipeline_parallel_size: PositiveInt | None = Field(default=None, description="Pin PP; default planned.")
    enable_expert_parallel: bool = Field(default=False, description="MoE: data-parallel attention + EP.")
    distributed_backend: Literal["ray", "mp"] = Field(
        default="ray", description="Executor backend across nodes: ray (default) or mp."
    )
    min_replicas: PositiveInt | None = Field(default=None, description="Default: the planned replica count.")
    max_replicas: PositiveInt | None = Field(
        default=None, description="Default: minReplicas (or 2x with autoscaling)."
    )
    extra_args: list[str] = Field(default_factory=list, description="Allow-listed extra vLLM flags.")

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not DNS_LABEL.match(value) or len(value) > MAX_MODEL_NAME_LENGTH:
            raise ValueError(
                "must be a DNS label: lowercase letters, digits and '-', starting with a letter, "
                f"at most {MAX_MODEL_NAME_LENGTH} characters"
            )
        return value

    @field_validator("extra_args")
    @classmethod
    def _allow_listed(cls, value: list[str]) -> list[str]:
        for arg in value:
            if arg.startswith("--") and arg.split("=", 1)[0] not in ALLOWED_EXTRA_ARGS:
                raise ValueError(
                    f"flag {arg.split('=', 1)[0]} is not allowed; allowed: {', '.join(sorted(ALLOWED_EXTRA_ARGS))}"
                )
        return value

    @model_validator(mode="after")
    def _replicas(self) -> ModelSettings:
        if self.min_replicas and self.max_replicas and self.min_replicas > self.max_replicas:
            raise ValueError(
                f"minReplicas {self.min_replicas} is larger than maxReplicas {self.max_replicas}"
            )
        return self

    @property
    def api_model_name(self) -> str:
        return self.served_model_name or self.model_id


# --------------------------------------------------------------------------- serving, monitoring, scaling


class ServingSettings(SettingsModel):
    """What every vLLM service shares: image, namespace, who may call it."""

    namespace: str = Field(default="vllm", pattern=DNS_LABEL.pattern)
    image: str = Field(default="vllm/vllm-openai:v0.19.0", description="vLLM image, pinned by tag.")
    image_digest: str | None = Field(default=None, description="sha256:... digest pinning the image.")
    client_namespaces: list[Annotated[str, Field(pattern=DNS_LABEL.pattern)]] = Field(
        default_factory=list, description="Namespaces whose pods may call the API (port 8000)."
    )
    internal_load_balancer: bool = Field(
        default=False,
        description="Also expose each model on an internal NLB (never internet-facing, source ranges the "
        "VPC CIDR) through the AWS Load Balancer Controller, which the stack installs. Platform eks only.",
    )
    efa_check: Literal["enforce", "warn"] = Field(
        default="enforce",
        description="Multi-node pods on EFA first check that the image has libfabric and the aws-ofi-nccl "
        "plugin (else NCCL silently uses TCP): enforce refuses to start, warn logs and starts.",
    )
    nccl_debug: Literal["WARN", "INFO", "TRACE", "VERSION"] = Field(
        default="WARN", description="NCCL_DEBUG; INFO shows which transport NCCL selected."
    )
    ray_join_timeout_seconds: PositiveInt = Field(
        default=600, description="How long a Ray leader waits for its workers to join."
    )
    termination_grace_seconds: PositiveInt = Field(
        default=120, description="Time for in-flight requests to finish on shutdown."
    )

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        name, _, tag = value.rpartition(":")
        if not name or "/" in tag or tag in ("", "latest", "main", "nightly"):
            raise ValueError("must be pinned to a release tag, e.g. vllm/vllm-openai:v0.19.0 (not latest)")
        return value

    @field_validator("image_digest")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE_DIGEST.match(value):
            raise ValueError("must be sha256: followed by 64 hex digits")
        return value


class MonitoringSettings(SettingsModel):
    """The Prometheus stack and its alerts."""

    enabled: bool = True
    namespace: str = Field(default="monitoring", pattern=DNS_LABEL.pattern)
    retention_days: PositiveInt = 15
    storage_gib: PositiveInt = Field(default=100, description="Prometheus gp3 volume size in GiB.")
    ttft_slo_seconds: float = Field(default=2.0, gt=0, description="Alert when TTFT p95 exceeds this.")
    kv_cache_alert_ratio: float = Field(
        default=0.9, gt=0, le=1, description="KV-cache usage alert threshold."
    )


class AutoscalingSettings(SettingsModel):
    """KEDA scaling on the request queue, and GPU nodes that follow."""

    enabled: bool = False
    waiting_requests_threshold: PositiveInt = Field(
        default=10, description="Scale up when more requests than this wait per replica."
    )
    activation_threshold: int = Field(default=0, ge=0, description="Waiting requests that wake from zero.")
    cooldown_seconds: PositiveInt = Field(default=300, description="At least the cold start (GPU warm-up).")
    polling_interval_seconds: PositiveInt = 15
    scale_down_stabilization_seconds: PositiveInt = 600
    scale_to_zero: bool = Field(default=False, description="Allow 0 replicas when idle (cold start on wake).")
    fallback_replicas: PositiveInt | None = Field(
        default=None, description="Replicas to hold when Prometheus is unreachable; default minReplicas."
    )
