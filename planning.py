"""From validated settings to the stack's capacity plan.

Owns the bridge between `settings` (what the user asked for) and `capacity` (pure planning):
which GPU each model runs on, its parallel layout and replicas, each pool's node bounds, the
model filesystem's size, and the $/hour. Planner failures come back as SettingsError lines that
name the config key to change, so a plan problem reads like any other bad setting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capacity import (
    CapacityError,
    GpuModel,
    InstanceType,
    ModelFacts,
    ModelPlan,
    ServingRequest,
    StoragePlan,
    get_gpu_model,
    get_instance_type,
    plan_model,
    plan_storage,
    resolve_model_facts,
)
from settings import GpuPoolSettings, ModelSettings, SettingsError, StackSettings, key_path

# Nodes per pool when autoscaling is on and the user did not bound replicas: room for one
# extra replica per model, so a queue spike can get GPUs without a config change.
AUTOSCALING_REPLICA_HEADROOM = 1


@dataclass(frozen=True)
class PoolPlan:
    """Node bounds of one GPU pool, summed over the models it serves."""

    name: str
    gpus_per_node: int
    gpu_model: str
    instance_type: str | None
    interconnect: str
    min_nodes: int
    max_nodes: int
    hourly_cost_usd_at_min: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "instanceType": self.instance_type,
            "gpuModel": self.gpu_model,
            "gpusPerNode": self.gpus_per_node,
            "interconnect": self.interconnect,
            "minNodes": self.min_nodes,
            "maxNodes": self.max_nodes,
            "hourlyCostUsdAtMin": self.hourly_cost_usd_at_min,
        }


@dataclass(frozen=True)
class ServedModel:
    """One model with everything decided about it."""

    settings: ModelSettings
    pool: GpuPoolSettings
    facts: ModelFacts
    plan: ModelPlan
    min_replicas: int
    max_replicas: int

    @property
    def multi_node(self) -> bool:
        return self.plan.nodes_per_replica > 1


@dataclass(frozen=True)
class StackPlan:
    """The whole stack's plan: models, pools, storage, cost."""

    models: tuple[ServedModel, ...]
    pools: tuple[PoolPlan, ...]
    storage: StoragePlan

    def model(self, name: str) -> ServedModel:
        return next(m for m in self.models if m.settings.name == name)

    def pool(self, name: str) -> PoolPlan:
        return next(p for p in self.pools if p.name == name)

    @property
    def hourly_cost_usd(self) -> float | None:
        costs = [p.hourly_cost_usd_at_min for p in self.pools]
        if any(c is None for c in costs):
            return None
        storage = self.storage.hourly_cost_usd or 0.0
        return round(sum(c for c in costs if c is not None) + storage, 2)

    def to_dict(self) -> dict[str, Any]:
        return {
            "models": {
                m.settings.name: {
                    **m.plan.to_dict(),
                    "pool": m.pool.name,
                    "minReplicas": m.min_replicas,
                    "maxReplicas": m.max_replicas,
                }
                for m in self.models
            },
            "pools": {p.name: p.to_dict() for p in self.pools},
            "storage": self.storage.to_dict(),
            "hourlyCostUsd": self.hourly_cost_usd,
        }


def pool_hardware(
    settings: StackSettings, pool: GpuPoolSettings
) -> tuple[GpuModel, int, InstanceType | None]:
    """GPU model, GPUs per node and (on EKS) the instance type of a pool."""
    if pool.instance_type is not None:
        instance = get_instance_type(pool.instance_type)
        gpu = GpuModel(name=instance.gpu_model, memory_gib=instance.gpu_memory_gib, nvlink=instance.nvlink)
        return gpu, instance.gpu_count, instance
    assert pool.gpu_model is not None and pool.gpus_per_node is not None  # guaranteed by settings rules
    return get_gpu_model(pool.gpu_model), pool.gpus_per_node, None


def _plan_one(
    settings: StackSettings, index: int, model: ModelSettings, base_dir: Path
) -> tuple[ServedModel | None, list[str]]:
    pool = settings.pool(model.pool)
    try:
        facts = resolve_model_facts(model.model_id, model.facts_file, base_dir=base_dir)
    except CapacityError as err:
        field = "factsFile" if model.facts_file else "modelId"
        return None, [f"{key_path('models', index, field)}: {err}"]
    limit = facts.context_limit
    if limit is not None and model.max_model_len > limit:
        return None, [
            f"{key_path('models', index, 'maxModelLen')}: {model.max_model_len} exceeds the "
            f"{limit} tokens {model.model_id} supports (max_position_embeddings)"
        ]
    gpu, gpus_per_node, instance = pool_hardware(settings, pool)
    request = ServingRequest(
        facts=facts,
        gpu=gpu,
        gpus_per_node=gpus_per_node,
        max_model_len=model.max_model_len,
        target_concurrency=model.target_concurrency,
        gpu_memory_utilization=model.gpu_memory_utilization,
        dtype=model.dtype,
        quantization=model.quantization,
        kv_cache_dtype=model.kv_cache_dtype,
        max_num_batched_tokens=model.max_num_batched_tokens,
        vllm_version=vllm_version(settings.serving.image),
        tensor_parallel_size=model.tensor_parallel_size,
        pipeline_parallel_size=model.pipeline_parallel_size,
        min_replicas=model.min_replicas,
        max_replicas=model.max_replicas,
        enable_expert_parallel=model.enable_expert_parallel,
        price_per_node_hour_usd=instance.price_per_hour_usd if instance else None,
    )
    try:
        plan = plan_model(request)
    except CapacityError as err:
        return None, [f"{key_path('models', index)}: {err}"]
    min_replicas = model.min_replicas or plan.replicas
    if settings.autoscaling.enabled and settings.autoscaling.scale_to_zero and model.min_replicas is None:
        min_replicas = 0
    default_max = max(plan.replicas, min_replicas) + (
        AUTOSCALING_REPLICA_HEADROOM if settings.autoscaling.enabled else 0
    )
    max_replicas = model.max_replicas or default_max
    served = ServedModel(model, pool, facts, plan, min_replicas, max_replicas)
    return served, []


def vllm_version(image: str) -> str:
    """`vllm/vllm-openai:v0.19.0` -> `0.19.0` (the memory model is version dependent)."""
    return image.rpartition(":")[2].removeprefix("v")


def _plan_pools(settings: StackSettings, models: list[ServedModel]) -> list[PoolPlan]:
    pools = []
    for pool in settings.gpu_pools:
        gpu, gpus_per_node, instance = pool_hardware(settings, pool)
        served = [m for m in models if m.pool.name == pool.name]
        min_nodes = sum(m.min_replicas * m.plan.nodes_per_replica for m in served)
        max_nodes = sum(m.max_replicas * m.plan.nodes_per_replica for m in served)
        if pool.max_nodes is not None:
            max_nodes = pool.max_nodes
        price = instance.price_per_hour_usd if instance else None
        pools.append(
            PoolPlan(
                name=pool.name,
                gpus_per_node=gpus_per_node,
                gpu_model=gpu.name,
                instance_type=pool.instance_type,
                interconnect=settings.interconnect_of(pool),
                min_nodes=min_nodes,
                max_nodes=max_nodes,
                hourly_cost_usd_at_min=None if price is None else round(price * min_nodes, 2),
            )
        )
    return pools


def _check_pool_bounds(settings: StackSettings, pools: list[PoolPlan]) -> list[str]:
    problems = []
    for i, pool in enumerate(pools):
        if pool.max_nodes < pool.min_nodes:
            problems.append(
                f"{key_path('gpuPools', i, 'maxNodes')}: {pool.max_nodes} nodes cannot hold the "
                f"{pool.min_nodes} the planned minimum replicas need; raise it or lower models' minReplicas"
            )
    return problems


def plan_stack(settings: StackSettings, base_dir: Path) -> StackPlan:
    """Plan every model, pool and the model store; raise SettingsError naming keys on failure."""
    problems: list[str] = []
    models: list[ServedModel] = []
    for index, model in enumerate(settings.models):
        served, errors = _plan_one(settings, index, model, base_dir)
        problems += errors
        if served is not None:
            models.append(served)
    if problems:
        raise SettingsError(problems)
    pools = _plan_pools(settings, models)
    problems += _check_pool_bounds(settings, pools)
    store = settings.model_store
    try:
        storage = plan_storage(
            [(m.plan, m.max_replicas) for m in models],
            kind=store.kind,
            cold_start_target_seconds=store.cold_start_target_seconds,
            storage_capacity_gib=store.storage_capacity_gib,
            throughput_per_tib_mbps=store.throughput_per_tib,
            existing_throughput_mbps=store.existing_throughput_mbps,
        )
    except CapacityError as err:
        problems.append(f"{key_path('modelStore')}: {err}")
    if problems:
        raise SettingsError(problems)
    return StackPlan(models=tuple(models), pools=tuple(pools), storage=storage)
