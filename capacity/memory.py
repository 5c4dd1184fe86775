"""The vLLM memory model: what one worker has left for the KV cache and what vLLM logs from it.

Owns ``estimate_memory`` and ``MemoryEstimate``. Per pipeline stage: requested memory
(``gpu_memory_utilization`` x total), weights of the stage's layers split over tensor parallel
(embeddings on the first stage, LM head on the last, routed experts over the expert-parallel
group), the activation peak and non-torch memory of ``capacity.profile``, CUDA-graph memory where the
vLLM version subtracts it; then the exact block arithmetic of ``capacity.kv_cache`` with the worst
stage deciding, as vLLM takes the minimum over workers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from capacity import kv_cache, profile
from capacity.errors import CapacityError
from capacity.model_facts import ModelFacts
from capacity.parallelism import check_pipeline_parallel, check_tensor_parallel
from capacity.weights import WeightBytes, activation_bytes, weight_bytes

GIB = profile.GIB


@dataclass(frozen=True)
class MemoryEstimate:
    """Predicted memory of the worst worker and the two lines vLLM logs at start-up."""

    total_gib: float
    requested_gib: float
    weights_gib: float
    activation_gib: float
    non_torch_gib: float
    cuda_graph_gib: float
    kv_cache_gib: float
    """Memory left for the KV cache on the limiting worker ("Available KV cache memory")."""
    bytes_per_token_per_gpu: int
    num_blocks: int
    kv_cache_tokens: int
    """"GPU KV cache size: N tokens"."""
    max_concurrency: float
    """"Maximum concurrency for L tokens per request: X"."""
    fits: bool
    max_fitting_model_len: int | None
    message: str | None
    block_size: int = kv_cache.DEFAULT_BLOCK_SIZE
    kv_cache_groups: int = 1
    max_num_batched_tokens: int = 0
    max_num_seqs: int = 0
    limiting_stage: int = 0

    def to_dict(self) -> dict[str, object]:
        """JSON-able, camelCase keys."""
        return {_camel(k): (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _validate(facts: ModelFacts, gpu_memory_gib: float, utilization: float, max_model_len: int) -> None:
    if gpu_memory_gib <= 0:
        raise CapacityError(f"gpuMemoryGib {gpu_memory_gib} must be positive")
    if not 0 < utilization <= 1:
        raise CapacityError(f"gpuMemoryUtilization {utilization} must be in (0, 1]")
    if max_model_len < 1:
        raise CapacityError(f"maxModelLen {max_model_len} must be a positive number of tokens")
    limit = facts.context_limit
    if limit is not None and max_model_len > limit:
        raise CapacityError(
            f"maxModelLen {max_model_len} exceeds the {limit}-token context of {facts.model_id} "
            f"(max_position_embeddings); use at most {limit}"
        )


def stage_weight_bytes(
    weights: WeightBytes,
    stage: tuple[int, int],
    *,
    first: bool,
    last: bool,
    tied_copy: int,
    tp: int,
    expert_group: int,
) -> float:
    """Weight bytes one GPU of a pipeline stage holds."""
    start, end = stage
    dense = sum(weights.layer_dense[start:end]) + (weights.embedding + weights.vision if first else 0)
    if last:
        dense += weights.lm_head + tied_copy
    return dense / tp + sum(weights.layer_experts[start:end]) / expert_group


def _activation_inputs(
    facts: ModelFacts, element: int, tp: int, expert_parallel: bool
) -> profile.ActivationInputs:
    widths = [facts.intermediate_size if not facts.is_moe_layer(i) else 0 for i in range(facts.num_layers)]
    shared = facts.shared_expert_intermediate_size
    mlp_width = max([*widths, shared]) // tp
    workspace = 0
    if facts.is_moe:
        expert = facts.moe_intermediate_size // (1 if expert_parallel else tp)
        workspace = facts.experts_per_token * (max(2 * expert, facts.hidden_size) + expert)
    return profile.ActivationInputs(
        hidden_size=facts.hidden_size,
        vocab_size=facts.vocab_size,
        mlp_width_per_gpu=mlp_width,
        element_bytes=element,
        moe_workspace_elements=workspace,
        multimodal=facts.is_multimodal,
    )


def estimate_memory(
    facts: ModelFacts,
    *,
    gpu_memory_gib: float,
    tensor_parallel_size: int,
    pipeline_parallel_size: int,
    max_model_len: int,
    gpu_memory_utilization: float,
    dtype: str = "auto",
    kv_cache_dtype: str = "auto",
    quantization: str | None = None,
    max_num_batched_tokens: int | None = None,
    vllm_version: str = "0.19.0",
    data_parallel_size: int = 1,
    expert_parallel: bool = False,
    gpu_name: str | None = None,
    block_size: int = kv_cache.DEFAULT_BLOCK_SIZE,
) -> MemoryEstimate:
    """Predict the KV cache vLLM will allocate on every worker of one replica (one data-parallel rank)."""
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    _validate(facts, gpu_memory_gib, gpu_memory_utilization, max_model_len)
    if data_parallel_size < 1:
        raise CapacityError(f"dataParallelSize {data_parallel_size} must be at least 1")
    check_tensor_parallel(facts, tp, limit=max(tp, 8))
    check_pipeline_parallel(facts, pp)
    batch = profile.batch_defaults(gpu_memory_gib, gpu_name, max_num_batched_tokens)
    graphs = profile.cuda_graph_gib(vllm_version)
    element = activation_bytes(facts, dtype)
    specs = kv_cache.layer_kv(facts, tp, kv_cache.kv_dtype_bytes(kv_cache_dtype, element))
    weights = weight_bytes(facts, dtype, quantization)
    expert_group = tp * data_parallel_size if expert_parallel else tp
    non_torch = profile.non_torch_gib(tp, pp, expert_group if expert_parallel else 1)
    inputs = _activation_inputs(facts, element, tp, expert_parallel)
    requested = gpu_memory_gib * gpu_memory_utilization
    stages = kv_cache.pp_partition(facts.num_layers, pp)
    tied_copy = weights.embedding if facts.tie_word_embeddings and pp > 1 else 0
    per_stage = []
    for index, stage in enumerate(stages):
        first, last = index == 0, index == pp - 1
        stage_weights = stage_weight_bytes(
            weights, stage, first=first, last=last, tied_copy=tied_copy, tp=tp, expert_group=expert_group
        )
        activation = profile.activation_gib(inputs, batch, first_stage=first, last_stage=last)
        available = requested - stage_weights / GIB - activation - non_torch - graphs
        per_stage.append((stage_weights / GIB, activation, available))
    capacity = kv_cache.kv_capacity(
        specs,
        stages,
        [int(available * GIB) for _, _, available in per_stage],
        max_model_len=max_model_len,
        max_num_batched_tokens=batch.max_num_batched_tokens,
        block_size=block_size,
    )
    weights_gib, activation, available = per_stage[capacity.limiting_stage]
    start, end = stages[capacity.limiting_stage]
    return MemoryEstimate(
        total_gib=gpu_memory_gib,
        requested_gib=requested,
        weights_gib=weights_gib,
        activation_gib=activation,
        non_torch_gib=non_torch,
        cuda_graph_gib=graphs,
        kv_cache_gib=available,
        bytes_per_token_per_gpu=sum(spec.bytes_per_token for spec in specs[start:end]),
        num_blocks=capacity.num_blocks,
        kv_cache_tokens=capacity.kv_cache_tokens,
        max_concurrency=capacity.max_concurrency,
        fits=capacity.fits,
        max_fitting_model_len=capacity.max_fitting_model_len,
        message=None if capacity.fits else _failure(capacity, per_stage, max_model_len, requested),
        block_size=block_size,
        kv_cache_groups=capacity.num_groups,
        max_num_batched_tokens=batch.max_num_batched_tokens,
        max_num_seqs=batch.max_num_seqs,
        limiting_stage=capacity.limiting_stage,
    )


def _failure(
    capacity: kv_cache.KVCapacity,
    per_stage: list[tuple[float, float, float]],
    max_model_len: int,
    requested: float,
) -> str:
    """vLLM's start-up error for a KV cache that cannot hold one request of ``max_model_len`` tokens."""
    weights, _, available = min(per_stage, key=lambda s: s[2])
    if weights >= requested:
        return (
            f"model weights take {weights:.2f} GiB per GPU, more than the {requested:.2f} GiB vLLM may use "
            "(gpu_memory_utilization x total); use more GPUs or quantize the model"
        )
    if available <= 0:
        return (
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine."
        )
    longest = capacity.max_fitting_model_len
    estimate = (
        f"Based on the available memory, the estimated maximum model length is {longest}. " if longest else ""
    )
    return (
        f"To serve at least one request with the models's max seq len ({max_model_len}), "
        f"({capacity.needed_bytes / GIB:.2f} GiB KV cache is needed, which is larger than the available "
        f"KV cache memory ({available:.2f} GiB). {estimate}Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine."
    )
