"""Parallel layouts: which tensor / pipeline / data-parallel splits vLLM accepts and which to try.

Owns vLLM's divisibility rules (tensor parallel must divide the attention heads; KV heads are split
evenly or replicated; pipeline parallel cannot exceed the layers) with messages that name the
setting and the allowed values, and the candidate layouts of the planner, following vLLM's
distributed-serving guidance: one GPU; tensor parallel over the GPUs of one node; tensor parallel =
GPUs per node and pipeline parallel = nodes beyond one node; pipeline parallel with tensor parallel
1 where the GPUs have no NVLink or the heads do not divide; data-parallel attention with expert
parallel for mixture-of-experts models.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.errors import PlanError, one_of
from capacity.model_facts import ModelFacts

SINGLE_NODE_GPU_COUNTS = (1, 2, 4, 8)
MAX_NODES_PER_REPLICA = 16


@dataclass(frozen=True)
class Layout:
    """How one replica is split over GPUs."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int = 1
    expert_parallel: bool = False

    @property
    def gpus(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    def describe(self) -> str:
        text = f"TP {self.tensor_parallel_size} x PP {self.pipeline_parallel_size}"
        if self.data_parallel_size > 1 or self.expert_parallel:
            text += f" x DP {self.data_parallel_size}" + (
                " (expert parallel)" if self.expert_parallel else ""
            )
        return text


def _kv_compatible(facts: ModelFacts, tp: int) -> bool:
    if facts.is_mla:
        return True
    kv = facts.num_kv_heads
    return kv % tp == 0 if kv >= tp else tp % kv == 0


def valid_tensor_parallel_sizes(facts: ModelFacts, limit: int) -> list[int]:
    """Tensor-parallel sizes up to ``limit`` that vLLM accepts for this model."""
    return [
        tp for tp in range(1, limit + 1) if facts.num_attention_heads % tp == 0 and _kv_compatible(facts, tp)
    ]


def check_tensor_parallel(facts: ModelFacts, tensor_parallel_size: int, limit: int = 8) -> None:
    """Raise PlanError unless vLLM can split the attention heads ``tensor_parallel_size`` ways."""
    tp = tensor_parallel_size
    if tp < 1:
        raise PlanError(f"tensorParallelSize {tp} must be at least 1")
    allowed = one_of(valid_tensor_parallel_sizes(facts, max(limit, 1)))
    heads = facts.num_attention_heads
    if heads % tp:
        raise PlanError(
            f"tensorParallelSize {tp} does not divide the {heads} attention heads of {facts.model_id}; "
            f"use {allowed}"
        )
    if not _kv_compatible(facts, tp):
        raise PlanError(
            f"tensorParallelSize {tp} neither divides nor is a multiple of the {facts.num_kv_heads} KV heads "
            f"of {facts.model_id}; use {allowed}"
        )


def check_pipeline_parallel(facts: ModelFacts, pipeline_parallel_size: int) -> None:
    """Raise PlanError unless every pipeline stage gets at least one layer."""
    pp = pipeline_parallel_size
    if pp < 1:
        raise PlanError(f"pipelineParallelSize {pp} must be at least 1")
    if pp > facts.num_layers:
        raise PlanError(
            f"pipelineParallelSize {pp} exceeds the {facts.num_layers} layers of {facts.model_id}; "
            f"use at most {facts.num_layers}"
        )


def _split(facts: ModelFacts, gpus: int, nvlink: bool, within: int) -> Layout | None:
    """The layout of ``gpus`` GPUs (``within`` of them sharing NVLink): largest valid TP, rest pipeline."""
    if not nvlink:
        return Layout(1, gpus) if gpus <= facts.num_layers else None
    for tp in range(min(gpus, within), 0, -1):
        if gpus % tp == 0 and tp in valid_tensor_parallel_sizes(facts, tp) and gpus // tp <= facts.num_layers:
            return Layout(tp, gpus // tp)
    return None


def candidate_layouts(
    facts: ModelFacts,
    gpus_per_node: int,
    nvlink: bool,
    *,
    expert_parallel: bool = False,
    tensor_parallel_size: int | None = None,
    pipeline_parallel_size: int | None = None,
) -> list[Layout]:
    """Layouts to try, smallest first: 1, 2, 4, 8 GPUs within a node, then 2, 3, ... whole nodes."""
    if expert_parallel and not facts.is_moe:
        raise PlanError(f"enableExpertParallel needs a mixture-of-experts model; {facts.model_id} is dense")
    if expert_parallel and (pipeline_parallel_size or 1) > 1:
        raise PlanError("pipelineParallelSize must be 1 with enableExpertParallel (data-parallel attention)")
    counts = [n for n in SINGLE_NODE_GPU_COUNTS if n < gpus_per_node] + [gpus_per_node]
    counts += [gpus_per_node * nodes for nodes in range(2, MAX_NODES_PER_REPLICA + 1)]
    layouts: list[Layout] = []
    for gpus in counts:
        layout = _pinned(
            facts, gpus, gpus_per_node, tensor_parallel_size, pipeline_parallel_size, expert_parallel
        )
        if layout is None and tensor_parallel_size is None and pipeline_parallel_size is None:
            if expert_parallel:
                layout = Layout(1, 1, gpus, True)
            else:
                layout = _split(facts, gpus, nvlink, min(gpus, gpus_per_node))
        if layout is not None and layout not in layouts:
            layouts.append(layout)
    return layouts


def _pinned(
    facts: ModelFacts, gpus: int, per_node: int, tp: int | None, pp: int | None, expert_parallel: bool
) -> Layout | None:
    """The layout of ``gpus`` GPUs that honours the pinned sizes, or None when they do not multiply to it."""
    if tp is None and pp is None:
        return None
    if expert_parallel:
        tp = tp or 1
        return Layout(tp, 1, gpus // tp, True) if gpus % tp == 0 else None
    if tp is not None and pp is not None:
        return Layout(tp, pp) if tp * pp == gpus else None
    if tp is not None:
        return Layout(tp, gpus // tp) if gpus % tp == 0 and gpus // tp <= facts.num_layers else None
    assert pp is not None
    if (
        gpus % pp
        or gpus // pp > per_node
        or (gpus // pp) not in valid_tensor_parallel_sizes(facts, gpus // pp)
    ):
        return None
    return Layout(gpus // pp, pp)


def check_layout(facts: ModelFacts, layout: Layout, gpus_per_node: int, node_label: str) -> None:
    """Raise PlanError when a (pinned) layout breaks vLLM's rules or does not fill whole nodes."""
    check_tensor_parallel(facts, layout.tensor_parallel_size, limit=gpus_per_node)
    check_pipeline_parallel(facts, layout.pipeline_parallel_size)
    if layout.tensor_parallel_size > gpus_per_node:
        raise PlanError(
            f"tensorParallelSize {layout.tensor_parallel_size} exceeds the {gpus_per_node} GPUs per node of "
            f"{node_label}; keep tensor parallel within a node and add nodes with pipelineParallelSize"
        )
    if layout.gpus > gpus_per_node and layout.gpus % gpus_per_node:
        raise PlanError(
            f"tensorParallelSize {layout.tensor_parallel_size} x pipelineParallelSize "
            f"{layout.pipeline_parallel_size} = {layout.gpus} GPUs does not fill whole nodes of "
            f"{gpus_per_node} GPUs ({node_label}); use a multiple of {gpus_per_node}"
        )
