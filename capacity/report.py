"""Readable text for the CLI: a memory estimate and a whole plan as aligned tables."""

from __future__ import annotations

from capacity.hardware import pricing_note
from capacity.memory import MemoryEstimate
from capacity.planner import ModelPlan
from capacity.storage import StoragePlan

WIDTH = 26


def _row(label: str, value: object) -> str:
    return f"  {label:<{WIDTH}}{value}"


def _gib(value: float) -> str:
    return f"{value:7.2f} GiB"


def estimate_lines(estimate: MemoryEstimate, max_model_len: int) -> list[str]:
    """Memory per GPU of the limiting worker and the two start-up lines vLLM will log."""
    lines = [
        "Memory per GPU (limiting worker)",
        _row("total", _gib(estimate.total_gib)),
        _row("requested", _gib(estimate.requested_gib)),
        _row("weights", _gib(estimate.weights_gib)),
        _row("activation peak", _gib(estimate.activation_gib)),
        _row("non-torch", _gib(estimate.non_torch_gib)),
        _row("CUDA graphs", _gib(estimate.cuda_graph_gib)),
        _row(
            "KV cache",
            f"{_gib(estimate.kv_cache_gib)}  ({estimate.bytes_per_token_per_gpu:,} bytes per token)",
        ),
        _row(
            "profiled batch", f"{estimate.max_num_batched_tokens:,} tokens, {estimate.max_num_seqs} sequences"
        ),
        "",
        "vLLM start-up (predicted)",
        f"  GPU KV cache size: {estimate.kv_cache_tokens:,} tokens",
        f"  Maximum concurrency for {max_model_len:,} tokens per request: {estimate.max_concurrency:.2f}x",
    ]
    if not estimate.fits:
        lines.append(f"  does not fit: {estimate.message}")
    return lines


def plan_text(plan: ModelPlan, storage: StoragePlan | None, node_label: str) -> str:
    """The whole plan of one model (and its model store) as text."""
    lines = [
        f"Plan for {plan.model_id} on {node_label} ({plan.gpus_per_node}x {plan.gpu_model})",
        f"  max model len {plan.max_model_len:,} tokens, target {plan.target_concurrency} concurrent requests",
        "",
        "Layout",
        _row("tensor parallel", plan.tensor_parallel_size),
        _row("pipeline parallel", plan.pipeline_parallel_size),
        _row("data parallel", plan.data_parallel_size),
        _row("expert parallel", "yes" if plan.expert_parallel else "no"),
        _row(
            "GPUs per replica",
            f"{plan.gpus_per_replica} ({plan.nodes_per_replica} node(s), "
            f"{plan.gpus_per_node_used} GPUs per node used)",
        ),
        "",
        *estimate_lines(plan.estimate, plan.max_model_len),
        "",
        "Replicas and node pool",
        _row("replica concurrency", f"{plan.max_concurrency:.2f} requests"),
        _row("replicas for target", plan.replicas),
        _row("autoscaling", f"{plan.min_replicas} - {plan.max_replicas} replicas"),
        _row("node pool", f"{plan.pool_min_nodes} - {plan.pool_max_nodes} nodes"),
        _row("GPU cost per replica", _cost(plan.gpu_hourly_cost_usd)),
        _row("cost at target", _cost(plan.hourly_cost_at_target_usd)),
    ]
    if storage is not None:
        lines += ["", f"Model store ({storage.kind})", *_storage_lines(storage)]
    lines += ["", "Why", *(f"  - {reason}" for reason in plan.reasons)]
    if storage is not None:
        lines += [f"  - {reason}" for reason in storage.reasons]
    return "\n".join(lines) + "\n"


def _cost(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}/hour ({pricing_note()})"


def _storage_lines(storage: StoragePlan) -> list[str]:
    lines = []
    if storage.storage_capacity_gib is not None:
        lines.append(_row("capacity", f"{storage.storage_capacity_gib:,} GiB"))
    if storage.throughput_per_tib_mbps is not None:
        lines.append(_row("throughput tier", f"{storage.throughput_per_tib_mbps} MB/s per TiB"))
    return [
        *lines,
        _row("throughput", f"{storage.throughput_mbps:,.0f} MB/s"),
        _row("weights stored", f"{storage.total_weight_bytes / 2**30:,.1f} GiB"),
        _row("cold start, one replica", f"{storage.replica_cold_start_seconds:,.0f} s"),
        _row(
            "cold start, all replicas",
            f"{storage.all_replicas_cold_start_seconds:,.0f} s "
            f"(target {storage.target_seconds:g} s: {'met' if storage.meets_target else 'NOT met'})",
        ),
        _row(
            "cost", "unknown" if storage.hourly_cost_usd is None else f"${storage.hourly_cost_usd:,.2f}/hour"
        ),
    ]
