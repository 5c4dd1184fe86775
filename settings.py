"""Typed stack settings: the one validated object every other part of the program reads.

Owns the pydantic model tree for the `vllm-serving:*` config keys of a `Pulumi.<stack>.yaml`,
the cross-field rules between them, and the formatting of every problem as one line that names
the full key path (`vllm-serving:models[1].maxModelLen`), the bad value and what is allowed.
Nothing here registers resources or talks to a cloud: `parse_settings` takes plain data, and
`load_settings` only reads `pulumi.Config`.

Defaults live here and are mirrored in Pulumi.yaml's config schema (a test keeps them in step).
Secrets (API key, Hugging Face token, Grafana password, kubeconfig) are not part of this tree:
they stay Pulumi secrets and are read by the program with `Config.get_secret` (see SECRET_KEYS).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from capacity import CapacityError, get_gpu_model, get_instance_type

NAMESPACE = "vllm-serving"

# Secret config keys, read by the program as Pulumi secrets (never into this model tree).
SECRET_KEYS = ("apiKey", "hfToken", "grafanaAdminPassword", "kubeconfig")

DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_MODEL_NAME_LENGTH = 40  # leaves room for "-leader", "-sync-<hash>" suffixes within 63 characters
S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?$")
IMAGE_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
EKS_VERSION = re.compile(r"^1\.(2[89]|3[0-9])$")
AWS_AZ = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")
ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
OPEN_CIDRS = ("0.0.0.0/0", "::/0")

# vLLM flags a user may add through `extraArgs`. Everything the plan or the component decides
# (parallel sizes, model, port, host, API key) is not here, so it cannot be overridden by accident.
ALLOWED_EXTRA_ARGS = frozenset(
    {
        "--enable-prefix-caching",
        "--no-enable-prefix-caching",
        "--max-num-seqs",
        "--enforce-eager",
        "--block-size",
        "--swap-space",
        "--cpu-offload-gb",
        "--tool-call-parser",
        "--enable-auto-tool-choice",
        "--reasoning-parser",
        "--chat-template",
        "--generation-config",
        "--long-prefill-token-threshold",
        "--max-num-partial-prefills",
        "--load-format",
        "--model-loader-extra-config",
        "--speculative-config",
        "--limit-mm-per-prompt",
        "--disable-log-requests",
        "--enable-log-requests",
        "--override-generation-config",
        "--scheduling-policy",
        "--async-scheduling",
    }
)


class SettingsError(Exception):
    """Invalid stack settings: one line per problem, each naming its config key."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


def key_path(*parts: str | int) -> str:
    """`("models", 1, "maxModelLen")` -> `vllm-serving:models[1].maxModelLen`."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return f"{NAMESPACE}:{text}"


class _Model(BaseModel):
    """Base: camelCase keys as in the stack file, unknown keys rejected (typos surface)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


# --------------------------------------------------------------------------- network


class ExistingNetworkSettings(_Model):
    """Adopt the VPC of another stack instead of creating one."""

    stack: str = Field(min_length=3, description="Fully qualified network stack, e.g. acme/network/prod.")
    vpc_id_output: str = Field(default="vpcId", description="Output key holding the VPC id.")
    private_subnet_ids_output: str = Field(
        default="privateSubnetIds",
        description="Output key holding the private subnet ids (list, one per AZ).",
    )
    availability_zones_output: str = Field(
        default="availabilityZones",
        description="Output key holding the AZ of each private subnet, in the same order.",
    )


class NetworkSettings(_Model):
    """The private VPC segment the GPU nodes live in."""

    cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.40.0.0/16"), description="VPC CIDR (a /16 to /20)."
    )
    availability_zones: list[Annotated[str, Field(pattern=AWS_AZ.pattern)]] = Field(
        default_factory=lambda: ["us-east-1a", "us-east-1b"],
        description="AZs for private subnets; EKS needs at least two.",
    )
    egress: Literal["nat", "endpoints"] = Field(
        default="nat", description="nat: NAT gateways; endpoints: no internet egress, VPC endpoints only."
    )
    nat_gateways: Literal["single", "per-az"] = Field(
        default="single", description="One NAT gateway (dev) or one per AZ (prod). Only with egress nat."
    )
    flow_logs_retention_days: PositiveInt = Field(default=30, description="VPC flow log retention in days.")
    existing: ExistingNetworkSettings | None = Field(
        default=None, description="Adopt an existing VPC from a network stack's outputs."
    )

    @field_validator("cidr")
    @classmethod
    def _cidr_size(cls, value: ipaddress.IPv4Network) -> ipaddress.IPv4Network:
        if not 16 <= value.prefixlen <= 20:
            raise ValueError(f"VPC CIDR must be a /16 to /20 (got /{value.prefixlen})")
        return value

    @field_validator("availability_zones")
    @classmethod
    def _unique_azs(cls, value: list[str]) -> list[str]:
        if len(value) != len(set(value)):
            raise ValueError("availability zones must be unique")
        if len({az[:-1] for az in value}) > 1:
            raise ValueError("availability zones must all be in one region")
        return value


# --------------------------------------------------------------------------- cluster


class ExistingClusterSettings(_Model):
    """How to reach a cluster this stack does not create (platform `existing`)."""

    kubeconfig_path: str | None = Field(default=None, description="Path to a kubeconfig file.")
    context: str | None = Field(default=None, description="Context inside the kubeconfig.")
    stack: str | None = Field(default=None, description="A cluster stack whose output holds the kubeconfig.")
    kubeconfig_output: str = Field(default="kubeconfig", description="Output key of that stack.")
    use_secret_kubeconfig: bool = Field(
        default=False, description="Read the kubeconfig from the secret config key `kubeconfig`."
    )

    @model_validator(mode="after")
    def _one_source(self) -> ExistingClusterSettings:
        sources = [self.kubeconfig_path is not None, self.stack is not None, self.use_secret_kubeconfig]
        if sum(sources) != 1:
            raise ValueError(
                "set exactly one kubeconfig source: kubeconfigPath, stack, or useSecretKubeconfig"
            )
        return self


class SystemNodeGroupSettings(_Model):
    """Small on-demand node group for controllers (CoreDNS, KEDA, Prometheus, LWS, sync jobs)."""

    instance_type: str = Field(default="m7i.xlarge", description="Non-GPU instance type.")
    min_size: PositiveInt = 2
    max_size: PositiveInt = 4

    @model_validator(mode="after")
    def _min_le_max(self) -> SystemNodeGroupSettings:
        if self.min_size > self.max_size:
            raise ValueError(f"minSize {self.min_size} is larger than maxSize {self.max_size}")
        return self


class ClusterSettings(_Model):
    """The EKS control plane (platform `eks`) or how to reach an existing cluster."""

    version: str = Field(default="1.33", description="Kubernetes minor version, pinned (e.g. 1.33).")
    public_access_cidrs: list[ipaddress.IPv4Network] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public API endpoint. Empty: private endpoint only.",
    )
    admin_role_arns: list[Annotated[str, Field(pattern=ROLE_ARN.pattern)]] = Field(
        default_factory=list, description="IAM roles granted cluster-admin access entries."
    )
    service_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("172.20.0.0/16"), description="Kubernetes service CIDR."
    )
    system_node_group: SystemNodeGroupSettings = Field(default_factory=SystemNodeGroupSettings)
    existing: ExistingClusterSettings | None = Field(
        default=None, description="Platform existing: where the kubeconfig comes from."
    )

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not EKS_VERSION.match(value):
            raise ValueError("must be a Kubernetes minor version such as 1.33 (1.28 to 1.39)")
        return value

    @field_validator("public_access_cidrs")
    @classmethod
    def _no_open_cidr(cls, value: list[ipaddress.IPv4Network]) -> list[ipaddress.IPv4Network]:
        for cidr in value:
            if cidr.prefixlen == 0:
                raise ValueError(
                    "0.0.0.0/0 would expose the Kubernetes API to the internet; list your office/VPN CIDRs"
                )
        return value


# --------------------------------------------------------------------------- GPU pools


Interconnect = Literal["efa", "infiniband", "tcp"]
CapacityType = Literal["on-demand", "spot", "capacity-block"]


class GpuPoolSettings(_Model):
    """One pool of identical GPU nodes (a managed node group on EKS, a node selector elsewhere)."""

    name: str = Field(description="DNS label naming the pool.")
    instance_type: str | None = Field(default=None, description="EC2 instance type (platform eks).")
    gpu_model: str | None = Field(
        default=None, description="Generic GPU name (platform existing), e.g. H100."
    )
    gpus_per_node: PositiveInt | None = Field(default=None, description="GPUs per node (platform existing).")
    availability_zone: str | None = Field(
        default=None, description="The single AZ of an EFA pool (required with EFA; one of network AZs)."
    )
    interconnect: Interconnect | None = Field(
        default=None, description="efa | infiniband | tcp. Default: efa when the instance supports it."
    )
    capacity_type: CapacityType = Field(default="on-demand", description="on-demand | spot | capacity-block.")
    capacity_reservation_id: str | None = Field(
        default=None, description="Capacity reservation / capacity block id (cr-...)."
    )
    root_volume_gib: PositiveInt = Field(default=512, description="Encrypted gp3 root volume size in GiB.")
    max_nodes: PositiveInt | None = Field(
        default=None, description="Upper bound on nodes; default from the plan (max replicas x nodes)."
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Extra node labels the pods select (platform existing)."
    )
    rdma_resource: str | None = Field(
        default=None, description="InfiniBand: extended resource name of the RDMA device, e.g. rdma/ib."
    )
    ib_hca: str | None = Field(default=None, description="InfiniBand: NCCL_IB_HCA value, e.g. mlx5.")

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not DNS_LABEL.match(value) or len(value) > 30:
            raise ValueError("must be a DNS label: lowercase letters, digits and '-', at most 30 characters")
        return value

    @field_validator("capacity_reservation_id")
    @classmethod
    def _reservation(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^cr-[0-9a-f]{8,17}$", value):
            raise ValueError("must be a capacity reservation id such as cr-0123456789abcdef0")
        return value

    @model_validator(mode="after")
    def _capacity_block_needs_reservation(self) -> GpuPoolSettings:
        if self.capacity_type == "capacity-block" and not self.capacity_reservation_id:
            raise ValueError("capacityType capacity-block needs capacityReservationId (cr-...)")
        return self

    @model_validator(mode="after")
    def _infiniband_needs_device(self) -> GpuPoolSettings:
        if self.interconnect == "infiniband" and not self.rdma_resource:
            raise ValueError("interconnect infiniband needs rdmaResource (the RDMA device plugin resource)")
        return self


# --------------------------------------------------------------------------- model store


class ModelStoreSettings(_Model):
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


class ModelSettings(_Model):
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


class ServingSettings(_Model):
    """What every vLLM service shares: image, namespace, who may call it."""

    namespace: str = Field(default="vllm", pattern=DNS_LABEL.pattern)
    image: str = Field(default="vllm/vllm-openai:v0.19.0", description="vLLM image, pinned by tag.")
    image_digest: str | None = Field(default=None, description="sha256:... digest pinning the image.")
    client_namespaces: list[Annotated[str, Field(pattern=DNS_LABEL.pattern)]] = Field(
        default_factory=list, description="Namespaces whose pods may call the API (port 8000)."
    )
    internal_load_balancer: bool = Field(
        default=False,
        description="Also expose each model on an internal NLB (never internet-facing); eks installs the "
        "AWS Load Balancer Controller for it, an existing cluster must run one.",
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


class MonitoringSettings(_Model):
    """The Prometheus stack and its alerts."""

    enabled: bool = True
    namespace: str = Field(default="monitoring", pattern=DNS_LABEL.pattern)
    retention_days: PositiveInt = 15
    storage_gib: PositiveInt = Field(default=100, description="Prometheus gp3 volume size in GiB.")
    ttft_slo_seconds: float = Field(default=2.0, gt=0, description="Alert when TTFT p95 exceeds this.")
    kv_cache_alert_ratio: float = Field(
        default=0.9, gt=0, le=1, description="KV-cache usage alert threshold."
    )


class AutoscalingSettings(_Model):
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


# --------------------------------------------------------------------------- the stack


class StackSettings(_Model):
    """Every `vllm-serving:*` key of one stack."""

    platform: Literal["eks", "existing"] = Field(
        default="eks", description="eks: create VPC + EKS + node groups; existing: deploy into your cluster."
    )
    network: NetworkSettings = Field(
        default_factory=NetworkSettings, description="Private VPC segment (platform eks)."
    )
    cluster: ClusterSettings = Field(
        default_factory=ClusterSettings, description="EKS control plane, or how to reach an existing cluster."
    )
    gpu_pools: list[GpuPoolSettings] = Field(min_length=1, description="GPU node pools (at least one).")
    model_store: ModelStoreSettings = Field(
        default_factory=ModelStoreSettings, description="Shared model filesystem and cold-start target."
    )
    models: list[ModelSettings] = Field(min_length=1, description="Served models (at least one).")
    serving: ServingSettings = Field(
        default_factory=ServingSettings,
        description="vLLM image, namespace and API access shared by all models.",
    )
    monitoring: MonitoringSettings = Field(
        default_factory=MonitoringSettings, description="Prometheus stack, alerts, dashboard."
    )
    autoscaling: AutoscalingSettings = Field(
        default_factory=AutoscalingSettings, description="KEDA on the request queue + cluster autoscaler."
    )

    def pool(self, name: str) -> GpuPoolSettings:
        return next(p for p in self.gpu_pools if p.name == name)

    def interconnect_of(self, pool: GpuPoolSettings) -> Interconnect:
        """The pool's interconnect, defaulting to EFA where the instance type has it."""
        if pool.interconnect is not None:
            return pool.interconnect
        if self.platform == "eks" and pool.instance_type:
            return "efa" if get_instance_type(pool.instance_type).efa_supported else "tcp"
        return "tcp"


# Cross-field rules: each returns (key path parts, message) problems; all are collected.
Problem = tuple[tuple[str | int, ...], str]


def _check_platform(s: StackSettings) -> list[Problem]:
    problems: list[Problem] = []
    if s.platform == "existing":
        if s.cluster.existing is None:
            problems.append(
                (
                    ("cluster", "existing"),
                    "platform existing needs a kubeconfig source "
                    "(cluster.existing.kubeconfigPath, .stack or .useSecretKubeconfig)",
                )
            )
        if s.model_store.kind != "existing":
            problems.append(
                (
                    ("modelStore", "kind"),
                    f"{s.model_store.kind!r} needs AWS; platform existing allows only 'existing'",
                )
            )
    else:
        if s.cluster.existing is not None:
            problems.append((("cluster", "existing"), "only applies to platform existing, not eks"))
        if s.model_store.kind == "existing" and s.model_store.existing_claim_name is None:
            problems.append(
                (("modelStore", "kind"), "platform eks with kind existing needs existingClaimName")
            )
    return problems


def _check_networks(s: StackSettings) -> list[Problem]:
    if s.platform != "eks":
        return []
    problems: list[Problem] = []
    if s.network.existing is None:
        if s.cluster.service_cidr.overlaps(s.network.cidr):
            problems.append(
                (
                    ("cluster", "serviceCidr"),
                    f"{s.cluster.service_cidr} overlaps the VPC CIDR {s.network.cidr}; "
                    "choose a range outside it (e.g. 172.20.0.0/16)",
                )
            )
        if len(s.network.availability_zones) < 2:
            problems.append(
                (("network", "availabilityZones"), "EKS needs subnets in at least 2 availability zones")
            )
    if s.network.egress == "endpoints" and s.network.nat_gateways == "per-az":
        problems.append((("network", "natGateways"), "per-az NAT gateways need egress nat, not endpoints"))
    return problems


def _check_pools(s: StackSettings) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, pool in enumerate(s.gpu_pools):
        if pool.name in seen:
            problems.append(
                (("gpuPools", i, "name"), f"duplicate pool name {pool.name!r}; names must be unique")
            )
        seen.add(pool.name)
        problems += _check_eks_pool(s, i, pool) if s.platform == "eks" else _check_existing_pool(i, pool)
    return problems


def _check_eks_pool(s: StackSettings, i: int, pool: GpuPoolSettings) -> list[Problem]:
    if pool.instance_type is None:
        return [
            (("gpuPools", i, "instanceType"), "platform eks needs an EC2 instance type, e.g. p5.48xlarge")
        ]
    try:
        instance = get_instance_type(pool.instance_type)
    except CapacityError as err:
        return [(("gpuPools", i, "instanceType"), str(err))]
    problems: list[Problem] = []
    interconnect = s.interconnect_of(pool)
    if interconnect == "efa" and not instance.efa_supported:
        problems.append(
            (
                ("gpuPools", i, "interconnect"),
                f"{pool.instance_type} has no EFA; use tcp or an EFA instance type "
                "(p4d, p5, p5en, p6-b200, g6e.12xlarge and larger, ...)",
            )
        )
    if interconnect == "infiniband":
        problems.append(
            (("gpuPools", i, "interconnect"), "infiniband is for platform existing; on eks use efa")
        )
    if interconnect == "efa":
        azs = s.network.availability_zones if s.network.existing is None else None
        if pool.availability_zone is None:
            problems.append(
                (
                    ("gpuPools", i, "availabilityZone"),
                    "an EFA pool must sit in exactly one AZ; set one"
                    + (f" of {', '.join(azs)}" if azs else ""),
                )
            )
        elif azs is not None and pool.availability_zone not in azs:
            problems.append(
                (
                    ("gpuPools", i, "availabilityZone"),
                    f"{pool.availability_zone} is not one of the network's AZs ({', '.join(azs)})",
                )
            )
    if pool.gpu_model is not None or pool.gpus_per_node is not None:
        problems.append(
            (("gpuPools", i, "gpuModel"), "gpuModel/gpusPerNode come from instanceType on eks; remove them")
        )
    return problems


def _check_existing_pool(i: int, pool: GpuPoolSettings) -> list[Problem]:
    problems: list[Problem] = []
    if pool.gpu_model is None:
        problems.append((("gpuPools", i, "gpuModel"), "platform existing needs the GPU model, e.g. H100"))
    else:
        try:
            get_gpu_model(pool.gpu_model)
        except CapacityError as err:
            problems.append((("gpuPools", i, "gpuModel"), str(err)))
    if pool.gpus_per_node is None:
        problems.append((("gpuPools", i, "gpusPerNode"), "platform existing needs the GPUs per node, e.g. 8"))
    if pool.interconnect == "efa" and pool.instance_type is None:
        problems.append(
            (("gpuPools", i, "interconnect"), "efa on an existing cluster needs the instance type")
        )
    if pool.capacity_type != "on-demand" or pool.capacity_reservation_id:
        problems.append((("gpuPools", i, "capacityType"), "capacity settings only apply to platform eks"))
    return problems


def _check_models(s: StackSettings) -> list[Problem]:
    problems: list[Problem] = []
    pools = {p.name for p in s.gpu_pools}
    seen: set[str] = set()
    for i, model in enumerate(s.models):
        if model.name in seen:
            problems.append(
                (("models", i, "name"), f"duplicate model name {model.name!r}; names must be unique")
            )
        seen.add(model.name)
        if model.pool not in pools:
            problems.append(
                (
                    ("models", i, "pool"),
                    f"{model.pool!r} is not a GPU pool; defined pools: {', '.join(sorted(pools))}",
                )
            )
    return problems


CROSS_FIELD_RULES: tuple[Callable[[StackSettings], list[Problem]], ...] = (
    _check_platform,
    _check_networks,
    _check_pools,
    _check_models,
)


def _format_pydantic_error(error: Mapping[str, Any]) -> str:
    loc = [part for part in error["loc"] if part not in ("function-after[_cidr_size(), IPv4Network]",)]
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        return f"{key_path(*loc)}: unknown key; check its spelling against Pulumi.yaml's config schema"
    if error["type"] == "missing":
        return f"{key_path(*loc)}: required key is missing"
    value = error.get("input")
    shown = (
        repr(value) if not isinstance(value, dict | list) or len(repr(value)) < 80 else type(value).__name__
    )
    return f"{key_path(*loc)}: {message} (got {shown})"


def parse_settings(raw: Mapping[str, Any]) -> StackSettings:
    """Validate raw config (camelCase keys without the namespace) into StackSettings.

    Raises SettingsError listing every problem, each naming its full key path.
    """
    try:
        settings = StackSettings.model_validate(dict(raw))
    except ValidationError as err:
        raise SettingsError(_format_pydantic_error(e) for e in err.errors()) from None
    problems = [
        f"{key_path(*path)}: {message}" for rule in CROSS_FIELD_RULES for path, message in rule(settings)
    ]
    if problems:
        raise SettingsError(problems)
    return settings


def config_keys() -> list[str]:
    """The top-level (non-secret) config keys, in the order of StackSettings."""
    return [field.alias or to_camel(name) for name, field in StackSettings.model_fields.items()]


def load_settings(config: Any) -> StackSettings:
    """Read every key of the project's namespace from a `pulumi.Config` and validate it."""
    raw: dict[str, Any] = {}
    for key in config_keys():
        try:
            value = config.get_object(key)
        except Exception:  # a structured key holding a non-JSON scalar
            value = config.get(key)
        if value is None:
            value = config.get(key)
        if value is not None:
            raw[key] = value
    return parse_settings(raw)
