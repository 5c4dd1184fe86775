"""Serving plans: GPUs, parallel layout, replicas and node-pool size for one model.

Owns ``ServingRequest`` (one model to serve on one GPU pool), ``ModelPlan`` and ``plan_model``.
The layout follows vLLM's distributed-serving guidance (``capacity.parallelism``); each candidate
is sized with the vLLM memory model (``capacity.memory``). A replica qualifies when its KV cache
holds one request of ``max_model_len`` tokens with a margin for prediction error. Among the
single-node layouts that qualify, the plan takes the one that reaches the target concurrency on
the fewest nodes, then the fewest GPUs, then the smaller replica; a model that fits no single node
takes the fewest whole nodes that hold it. Replicas are then added until the predicted concurrency
reaches the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from capacity.errors import PlanError
from capacity.hardware import GpuModel, InstanceType, get_instance_type
from capacity.memory import MemoryEstimate, estimate_memory
from capacity.model_facts import ModelFacts
from capacity.parallelism import Layout, candidate_layouts, check_layout, check_pipeline_parallel
from capacity.weights import checkpoint_bytes

# A replica qualifies when its KV cache holds this many max-length requests: one, plus a margin
# above the worst KV-token error of the calibration runs (0.9%, capacity/ACCURACY.md) and the
# spread between vLLM versions, so that a planned replica also starts in practice.
FIT_MARGIN = 1.10


@dataclass(frozen=True)
class ServingRequest:
    """One model to plan on one GPU pool."""

    facts: ModelFacts
    gpu: GpuModel
    gpus_per_node: int
    max_model_len: int
    target_concurrency: int
    gpu_memory_utilization: float = 0.90
    dtype: str = "auto"
    quantization: str | None = None
    kv_cache_dtype: str = "auto"
    max_num_batched_tokens: int | None = None
    """None: vLLM's API-server default (8192 on H100-class GPUs, 2048 elsewhere)."""
    vllm_version: str = "0.19.0"
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    min_replicas: int | None = None
    max_replicas: int | None = None
    enable_expert_parallel: bool = False
    price_per_node_hour_usd: float | None = None
    node_label: str | None = None
    """How messages name a node (the instance type); defaults to the GPU model."""

    @classmethod
    def for_instance_type(
        cls, facts: ModelFacts, instance_type: str | InstanceType, **settings: object
    ) -> ServingRequest:
        """A request on an EC2 instance type (GPU, GPUs per node and price come from its facts)."""
        instance = get_instance_type(instance_type) if isinstance(instance_type, str) else instance_type
        return cls(
            facts=facts,
            gpu=instance.gpu,
            gpus_per_node=instance.gpu_count,
            price_per_node_hour_usd=instance.price_per_hour_usd,
            node_label=instance.name,
            **settings,  # type: ignore[arg-type]
        )

    @property
    def label(self) -> str:
        return self.node_label or f"{self.gpus_per_node}x {self.gpu.name} nodes"


@dataclass(frozen=True)
class ModelPlan:
    """How one model is served: layout, replicas, node pool and what each replica holds."""

    model_id: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    gpus_per_replica: int
    nodes_per_replica: int
    gpus_per_node_used: int
    replicas: int
    """Replicas needed for the target concurrency."""
    min_replicas: int
    max_replicas: int
    kv_cache_tokens: int
    """Per engine (data-parallel rank), as vLLM logs it."""
    max_concurrency: float
    """Max-length requests one replica holds at once."""
    weights_gib_per_gpu: float
    """Weights on one GPU of the limiting worker (the pipeline stage with the least KV cache)."""
    model_weight_bytes: int
    """Bytes of the whole checkpoint (what a cold start reads)."""
    estimate: MemoryEstimate
    gpu_hourly_cost_usd: float | None
    """Cost of the GPUs one replica uses, per hour (None when the price is unknown)."""
    reasons: tuple[str, ...]
    max_model_len: int = 0
    target_concurrency: int = 0
    gpu_model: str = ""
    gpus_per_node: int = 0
    pool_min_nodes: int = 0
    pool_max_nodes: int = 0
    hourly_cost_at_target_usd: float | None = None

    def nodes_for(self, replicas: int) -> int:
        """Nodes that ``replicas`` replicas occupy (replicas smaller than a node share nodes)."""
        return nodes_needed(replicas, self.gpus_per_replica, self.gpus_per_node)

    def to_dict(self) -> dict[str, object]:
        """JSON-able, camelCase keys (the stack's ``capacityPlan`` entry for this model)."""
        return {
            "modelId": self.model_id,
            "maxModelLen": self.max_model_len,
            "targetConcurrency": self.target_concurrency,
            "gpuModel": self.gpu_model,
            "gpusPerNode": self.gpus_per_node,
            "tensorParallelSize": self.tensor_parallel_size,
            "pipelineParallelSize": self.pipeline_parallel_size,
            "dataParallelSize": self.data_parallel_size,
            "expertParallel": self.expert_parallel,
            "gpusPerReplica": self.gpus_per_replica,
            "nodesPerReplica": self.nodes_per_replica,
            "gpusPerNodeUsed": self.gpus_per_node_used,
            "replicas": self.replicas,
            "minReplicas": self.min_replicas,
            "maxReplicas": self.max_replicas,
            "poolMinNodes": self.pool_min_nodes,
            "poolMaxNodes": self.pool_max_nodes,
            "kvCacheTokens": self.kv_cache_tokens,
            "maxConcurrency": round(self.max_concurrency, 2),
            "weightsGibPerGpu": round(self.weights_gib_per_gpu, 2),
            "modelWeightBytes": self.model_weight_bytes,
            "gpuHourlyCostUsd": _money(self.gpu_hourly_cost_usd),
            "hourlyCostAtTargetUsd": _money(self.hourly_cost_at_target_usd),
            "memory": self.estimate.to_dict(),
            "reasons": list(self.reasons),
        }


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def nodes_needed(replicas: int, gpus_per_replica: int, gpus_per_node: int) -> int:
    """Nodes for ``replicas`` replicas: whole nodes each when they span nodes, packed otherwise."""
    if gpus_per_replica >= gpus_per_node:
        return replicas * math.ceil(gpus_per_replica / gpus_per_node)
    return math.ceil(replicas / (gpus_per_node // gpus_per_replica))


def _validate(request: ServingRequest) -> None:
    if request.gpus_per_node < 1:
        raise PlanError(f"gpusPerNode {request.gpus_per_node} must be at least 1")
    if request.target_concurrency < 1:
        raise PlanError(f"targetConcurrency {request.target_concurrency} must be at least 1")
    if request.min_replicas is not None and request.min_replicas < 0:
        raise PlanError(f"minReplicas {request.min_replicas} must be 0 or more")
    if request.max_replicas is not None and request.max_replicas < 1:
        raise PlanError(f"maxReplicas {request.max_replicas} must be at least 1")
    low, high = request.min_replicas, request.max_replicas
    if low is not None and high is not None and low > high:
        raise PlanError(f"minReplicas {low} exceeds maxReplicas {high}")


def _estimate(request: ServingRequest, layout: Layout) -> MemoryEstimate:
    return estimate_memory(
        request.facts,
        gpu_memory_gib=request.gpu.memory_gib,
        tensor_parallel_size=layout.tensor_parallel_size,
        pipeline_parallel_size=layout.pipeline_parallel_size,
        max_model_len=request.max_model_len,
        gpu_memory_utilization=request.gpu_memory_utilization,
        dtype=request.dtype,
        kv_cache_dtype=request.kv_cache_dtype,
        quantization=request.quantization,
        max_num_batched_tokens=request.max_num_batched_tokens,
        vllm_version=request.vllm_version,
        data_parallel_size=layout.data_parallel_size,
        expert_parallel=layout.expert_parallel,
        gpu_name=request.gpu.name,
    )


@dataclass(frozen=True)
class _Candidate:
    layout: Layout
    estimate: MemoryEstimate

    @property
    def concurrency(self) -> float:
        return self.estimate.max_concurrency * self.layout.data_parallel_size

    @property
    def qualifies(self) -> bool:
        # Every engine (each data-parallel rank) must start on its own, so the margin applies per engine.
        return self.estimate.fits and self.estimate.max_concurrency >= FIT_MARGIN


def _describe(candidate: _Candidate, request: ServingRequest) -> str:
    head = f"{candidate.layout.describe()} ({candidate.layout.gpus} GPU{'s' * (candidate.layout.gpus > 1)}): "
    if not candidate.estimate.fits:
        return head + "does not fit: " + (candidate.estimate.message or "")
    return head + (
        f"{candidate.estimate.kv_cache_tokens:,} KV tokens, {candidate.concurrency:.2f} requests of "
        f"{request.max_model_len:,} tokens" + ("" if candidate.qualifies else f" (below {FIT_MARGIN})")
    )


def _pinned_layouts(request: ServingRequest) -> list[Layout] | None:
    tp, pp = request.tensor_parallel_size, request.pipeline_parallel_size
    if tp is None and pp is None:
        return None
    if pp is not None:
        check_pipeline_parallel(request.facts, pp)
    if tp is not None and pp is not None and not request.enable_expert_parallel:
        layout = Layout(tp, pp)
        check_layout(request.facts, layout, request.gpus_per_node, request.label)
        return [layout]
    if tp is not None:
        check_layout(request.facts, Layout(tp, 1), request.gpus_per_node, request.label)
    return None


def plan_model(request: ServingRequest) -> ModelPlan:
    """Plan one model; raises PlanError naming the setting when it cannot be served as asked."""
    _validate(request)
    facts = request.facts
    pinned = _pinned_layouts(request)
    layouts = pinned or candidate_layouts(
        facts,
        request.gpus_per_node,
        request.gpu.nvlink,
        expert_parallel=request.enable_expert_parallel,
        tensor_parallel_size=request.tensor_parallel_size,
        pipeline_parallel_size=request.pipeline_parallel_size,
    )
    if not layouts:
        raise PlanError(
            f"no layout of whole nodes of {request.label} has pipelineParallelSize {request.pipeline_parallel_size}; "
            "leave it unset or use a smaller value"
        )
    reasons = [_interconnect_reason(request)]
    if not request.gpu.nvlink and (request.tensor_parallel_size or 1) > 1:
        reasons.append(
            f"tensorParallelSize {request.tensor_parallel_size} all-reduces over PCIe on {request.gpu.name}; "
            "vLLM recommends pipeline parallel on GPUs without NVLink"
        )
    candidates: list[_Candidate] = []
    for layout in layouts:
        if layout.gpus > request.gpus_per_node and any(c.qualifies for c in candidates):
            break  # one node holds the model, or the fewest whole nodes that hold it were found
        candidate = _Candidate(layout, _estimate(request, layout))
        candidates.append(candidate)
        reasons.append(_describe(candidate, request))
    chosen = _choose(candidates, request)
    return _build(request, chosen, reasons)


def _interconnect_reason(request: ServingRequest) -> str:
    if request.enable_expert_parallel:
        return "mixture of experts: data-parallel attention, experts split over every GPU (expert parallel)"
    if request.gpu.nvlink:
        return (
            f"{request.gpu.name} GPUs share NVLink: tensor parallel within a node, "
            "pipeline parallel across nodes"
        )
    return f"{request.gpu.name} GPUs have no NVLink: pipeline parallel with tensor parallel 1 (vLLM guidance)"


def _target_cost(candidate: _Candidate, request: ServingRequest) -> tuple[int, int, int]:
    replicas = math.ceil(request.target_concurrency / candidate.concurrency)
    gpus = candidate.layout.gpus
    return nodes_needed(replicas, gpus, request.gpus_per_node), replicas * gpus, gpus


def _choose(candidates: list[_Candidate], request: ServingRequest) -> _Candidate:
    qualifying = [c for c in candidates if c.qualifies]
    if not qualifying:
        best = max(candidates, key=lambda c: (c.estimate.fits, c.estimate.kv_cache_gib))
        setting = (
            ""
            if request.tensor_parallel_size is None and request.pipeline_parallel_size is None
            else "pinned "
        )
        raise PlanError(
            f"{request.facts.model_id} at maxModelLen {request.max_model_len} does not fit the "
            f"{setting}layouts tried on {request.label} (closest: {best.layout.describe()}): "
            + (
                best.estimate.message
                or f"only {best.estimate.max_concurrency:.2f} requests fit, below {FIT_MARGIN}"
            )
        )
    single = [c for c in qualifying if c.layout.gpus <= request.gpus_per_node]
    if single:
        return min(single, key=lambda c: _target_cost(c, request))
    return qualifying[0]


def _build(request: ServingRequest, chosen: _Candidate, reasons: list[str]) -> ModelPlan:
    layout, estimate = chosen.layout, chosen.estimate
    per_node = request.gpus_per_node
    replicas = math.ceil(request.target_concurrency / chosen.concurrency)
    min_replicas = 1 if request.min_replicas is None else request.min_replicas
    max_replicas = max(replicas, min_replicas) if request.max_replicas is None else request.max_replicas
    if max_replicas < replicas:
        raise PlanError(
            f"maxReplicas {max_replicas} holds {max_replicas * chosen.concurrency:.1f} concurrent requests "
            f"of {request.max_model_len} tokens; targetConcurrency {request.target_concurrency} needs "
            f"{replicas} replicas of {layout.describe()}"
        )
    nodes_per_replica = math.ceil(layout.gpus / per_node)
    price = request.price_per_node_hour_usd
    reasons = [
        *reasons,
        f"chose {layout.describe()}: {nodes_needed(replicas, layout.gpus, per_node)} node(s) and "
        f"{replicas * layout.gpus} GPU(s) reach {request.target_concurrency} concurrent requests",
        f"replicas: ceil({request.target_concurrency} / {chosen.concurrency:.2f}) = {replicas}",
    ]
    plan = ModelPlan(
        model_id=request.facts.model_id,
        tensor_parallel_size=layout.tensor_parallel_size,
        pipeline_parallel_size=layout.pipeline_parallel_size,
        data_parallel_size=layout.data_parallel_size,
        expert_parallel=layout.expert_parallel,
        gpus_per_replica=layout.gpus,
        nodes_per_replica=nodes_per_replica,
        gpus_per_node_used=min(layout.gpus, per_node),
        replicas=replicas,
        min_replicas=min_replicas,
        max_replicas=max_replicas,
        kv_cache_tokens=estimate.kv_cache_tokens,
        max_concurrency=chosen.concurrency,
        weights_gib_per_gpu=estimate.weights_gib,
        model_weight_bytes=checkpoint_bytes(request.facts),
        estimate=estimate,
        gpu_hourly_cost_usd=None if price is None else price * layout.gpus / per_node,
        reasons=tuple(reasons),
        max_model_len=request.max_model_len,
        target_concurrency=request.target_concurrency,
        gpu_model=request.gpu.name,
        gpus_per_node=per_node,
    )
    return replace(
        plan,
        pool_min_nodes=plan.nodes_for(min_replicas),
        pool_max_nodes=plan.nodes_for(max_replicas),
        hourly_cost_at_target_usd=None if price is None else plan.nodes_for(replicas) * price,
    )
