"""vLLM's KV-cache arithmetic: bytes per token, layer groups, blocks, logged tokens and concurrency.

Owns the part of the start-up that is exact integer arithmetic once the memory left for the cache
is known (vLLM ``v1/core/kv_cache_utils.py``; see ../shared/reference/vllm-memory-model.md):
per-layer cache specs (GQA heads split over tensor parallel and replicated below one head per GPU,
MLA latent not split, fp8 halving), pipeline stages as ``get_pp_indices`` splits them, hybrid
grouping of sliding-window and chunked-local layers with padding, the block count as the minimum
over workers, ``GPU KV cache size`` and ``Maximum concurrency`` as logged, and the start-up check
with its estimated maximum model length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from capacity.errors import CapacityError
from capacity.model_facts import AttentionKind, ModelFacts

KV_DTYPE_BYTES = {
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
}
# vLLM pads to the larger layer-type count when max < 1.5 x min (``_get_kv_cache_groups_uniform_page_size``).
GROUP_SIZE_SLACK = 1.5
DEFAULT_BLOCK_SIZE = 16


@dataclass(frozen=True)
class LayerKV:
    """The KV cache of one layer on one GPU."""

    kind: AttentionKind
    window: int | None
    bytes_per_token: int


@dataclass(frozen=True)
class KVCapacity:
    """What vLLM derives from the memory left for the cache on every worker."""

    num_blocks: int
    num_groups: int
    kv_cache_tokens: int
    max_concurrency: float
    blocks_per_request: int
    limiting_stage: int
    fits: bool
    max_fitting_model_len: int | None
    needed_bytes: int
    """KV bytes one max-length request needs on the limiting worker."""


def kv_dtype_bytes(kv_cache_dtype: str, activation_bytes: int) -> int:
    """Bytes per cached element: ``auto`` follows the model dtype, fp8 variants are one byte."""
    name = kv_cache_dtype.strip().lower()
    if name == "auto":
        return activation_bytes
    if name not in KV_DTYPE_BYTES:
        raise CapacityError(
            f"kvCacheDtype {kv_cache_dtype!r} is not supported; use auto, {', '.join(KV_DTYPE_BYTES)}"
        )
    return KV_DTYPE_BYTES[name]


def layer_kv(facts: ModelFacts, tensor_parallel_size: int, element_bytes: int) -> tuple[LayerKV, ...]:
    """Per-layer KV spec on one GPU for the given tensor-parallel size."""
    if facts.is_mla:
        per_token = facts.mla_cache_dim * element_bytes  # one latent, K only, every TP rank keeps all of it
    else:
        heads = max(1, facts.num_kv_heads // tensor_parallel_size)
        per_token = 2 * heads * facts.head_dim * element_bytes
    return tuple(LayerKV(layer.kind, layer.window, per_token) for layer in facts.attention_layers)


def pp_partition(num_layers: int, pipeline_parallel_size: int) -> list[tuple[int, int]]:
    """Layer ranges per stage as vLLM's ``get_pp_indices``: extra layers go to the stages before the last."""
    per = num_layers // pipeline_parallel_size
    sizes = [per] * pipeline_parallel_size
    for i in range(2, num_layers % pipeline_parallel_size + 2):
        sizes[-i] += 1
    ranges, start = [], 0
    for size in sizes:
        ranges.append((start, start + size))
        start += size
    return ranges


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def blocks_per_layer(
    kind: AttentionKind, window: int | None, max_model_len: int, block: int, batched: int
) -> int:
    """Blocks one request of ``max_model_len`` tokens holds in one layer (``max_memory_usage_bytes``)."""
    if kind == "sliding":
        return _cdiv(min(int(window or 0) - 1 + batched, max_model_len), block) + 1
    if kind == "chunked":
        return _cdiv(min(int(window or 0) + batched, max_model_len), block)
    return _cdiv(max_model_len, block)


@dataclass(frozen=True)
class _Group:
    layers: tuple[int, ...]
    kind: AttentionKind
    window: int | None
    block_size: int


def _groups(specs: Sequence[LayerKV], block_size: int) -> tuple[list[_Group], int]:
    """Global KV cache groups and the uniform page size (bytes per block per layer)."""
    by_type: dict[tuple[AttentionKind, int | None, int], list[int]] = {}
    for i, spec in enumerate(specs):
        by_type.setdefault((spec.kind, spec.window, spec.bytes_per_token), []).append(i)
    pages = {key[2] * block_size for key in by_type}
    page = max(pages)
    if len(by_type) == 1:
        (kind, window, _), layers = next(iter(by_type.items()))
        return [_Group(tuple(layers), kind, window, block_size)], page
    counts = [len(layers) for layers in by_type.values()]
    group_size = max(counts) if max(counts) < min(counts) * GROUP_SIZE_SLACK else min(counts)
    groups = []
    for (kind, window, per_token), layers in by_type.items():
        if page % (per_token * block_size):
            raise CapacityError(
                "layer KV page sizes cannot be unified (vLLM: cannot unify by adjusting block_size)"
            )
        scaled_block = block_size * page // (per_token * block_size)
        n = _cdiv(len(layers), group_size)
        groups += [_Group(tuple(layers[i::n]), kind, window, scaled_block) for i in range(n)]
    return groups, page


def kv_capacity(
    specs: Sequence[LayerKV],
    stages: Sequence[tuple[int, int]],
    available_bytes: Sequence[int],
    *,
    max_model_len: int,
    max_num_batched_tokens: int,
    block_size: int = DEFAULT_BLOCK_SIZE,
) -> KVCapacity:
    """Blocks, logged tokens and concurrency from the memory left on each pipeline stage's GPUs."""
    groups, page = _groups(specs, block_size)
    per_request = [
        blocks_per_layer(g.kind, g.window, max_model_len, g.block_size, max_num_batched_tokens)
        for g in groups
    ]
    worker_blocks, fit_limits, needed_per_worker = [], [], []
    for (start, end), available in zip(stages, available_bytes, strict=True):
        group_size = max(sum(1 for layer in g.layers if start <= layer < end) for g in groups)
        if group_size == 0:
            continue
        worker_blocks.append(max(0, int(available // page // group_size)) if available > 0 else 0)
        needed = group_size * page * sum(per_request)
        needed_per_worker.append(needed)
        if available <= 0:
            fit_limits.append(0)
        elif needed > available:
            fit_limits.append(
                _estimate_max_len(groups, group_size, page, available, max_model_len, max_num_batched_tokens)
            )
    limiting = min(range(len(worker_blocks)), key=lambda i: worker_blocks[i])
    num_blocks = worker_blocks[limiting]
    min_block = min(g.block_size for g in groups)
    blocks_needed = sum(per_request)
    return KVCapacity(
        num_blocks=num_blocks,
        num_groups=len(groups),
        kv_cache_tokens=num_blocks // len(groups) * min_block,
        max_concurrency=num_blocks / blocks_needed,
        blocks_per_request=blocks_needed,
        limiting_stage=limiting,
        fits=not fit_limits,
        max_fitting_model_len=min(fit_limits) if fit_limits else None,
        needed_bytes=needed_per_worker[limiting],
    )


def _estimate_max_len(
    groups: list[_Group], group_size: int, page: int, available: int, max_model_len: int, batched: int
) -> int:
    """Largest model length whose one request fits ``available`` bytes (vLLM's binary search), 0 if none."""

    def fits(length: int) -> bool:
        blocks = sum(blocks_per_layer(g.kind, g.window, length, g.block_size, batched) for g in groups)
        return group_size * page * blocks <= available

    if not fits(1):
        return 0
    low, high, best = 1, max_model_len, 1
    while low <= high:
        mid = (low + high) // 2
        if fits(mid):
            best, low = mid, mid + 1
        else:
            high = mid - 1
    return best
