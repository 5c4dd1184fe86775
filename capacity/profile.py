"""The non-KV memory of a vLLM worker: activation peak, non-torch buffers, CUDA graphs, scheduler defaults.

Owns the few fitted constants of the planner. Everything here predicts what vLLM's profiling run
(``gpu_worker.determine_available_memory``) measures on one GPU, from the model config and the run
settings only. Each constant names what it physically is and what it was fitted on: the 37 vLLM
v0.19.0 H100 start-ups in ../shared/calibration (the logged ``torch peak memory increase`` and
``non-torch forward increase memory``). No constant is specific to a model.

Activation peak of one worker (GiB), for ``T = max_num_batched_tokens`` tokens and
``R = min(max_num_seqs, T)`` dummy requests:

* forward pass, every stage:   ``T * (FORWARD_HIDDEN_COPIES * H + FORWARD_MLP_COPIES * I/tp) * a``
* sampler pass, last stage:    ``R * V * (SAMPLER_BYTES_PER_LOGIT + a) + T * H * a``
  (logits of every dummy request over the whole vocabulary, gathered across tensor parallel ranks,
  while the final hidden states of all ``T`` tokens are still alive)
* the worker peak is the larger of the two, plus buffers that stay allocated through both: the
  fused-MoE workspace, pipeline-parallel receive buffers and the multimodal encoder cache.

``H`` hidden size, ``I`` dense MLP width, ``V`` vocabulary, ``a`` bytes per activation element.
"""

from __future__ import annotations

from dataclasses import dataclass

from capacity.errors import CapacityError

GIB = 2**30

# Scheduler defaults of the OpenAI API server (vLLM engine/arg_utils.py ``get_batch_defaults``):
# GPUs with >= 70 GiB that are not A100s get the larger budget.
LARGE_GPU_MIN_GIB = 70.0
LARGE_GPU_BATCHED_TOKENS, LARGE_GPU_MAX_SEQS = 8192, 1024
SMALL_GPU_BATCHED_TOKENS, SMALL_GPU_MAX_SEQS = 2048, 256

# Sampler pass. SAMPLER_BYTES_PER_LOGIT: bytes held per (request, vocabulary entry) by the sampler
# on top of the logits in the model dtype: float32 logits, probabilities and the sort keys of
# top-k/top-p, about three float32 copies. Least-squares fit (slope 13.04, intercept 0.0005 GiB, so
# no fixed term is kept) on the 34 sampler-dominated runs, i.e. all but the forward-dominated
# CodeLlama-7B and Granite-8B ones; the term spans 0.7 GiB (Granite, 49k vocabulary) to 3.7 GiB
# (Gemma, 256k vocabulary) at 1024 dummy requests.
SAMPLER_BYTES_PER_LOGIT = 13.0

# Forward pass. Copies of the hidden state (residual, normed input, attention output, MLP output)
# and of the per-GPU MLP width (gate+up output, activation output) alive at the peak. Fitted on the
# forward-dominated runs: CodeLlama-7B (0.77 GiB), Granite-8B (0.85 GiB) and the middle pipeline
# stages of Llama-3.1-8B at PP 4 (1.05 GiB, including the pipeline receive buffers below);
# least-squares slope 3.05 per MLP width and intercept 4.11 hidden widths.
FORWARD_HIDDEN_COPIES = 4.11
FORWARD_MLP_COPIES = 3.05

# Pipeline parallel: every stage but the first receives hidden states and residual of T tokens.
PP_RECEIVE_COPIES = 2
# Multimodal models keep the encoder outputs of one token budget (the encoder cache) in the text width.
ENCODER_CACHE_COPIES = 1

# Non-torch memory (NCCL, cuBLAS workspaces, custom all-reduce), measured from the init snapshot.
# Single GPU: 0.24-0.27 GiB in every TP1/PP1 run (0.46 for Granite); PP>1 at TP1: 0.07 GiB;
# TP>1: custom all-reduce buffers and NCCL channels growing slowly with the group size
# (2.07-2.11 GiB at TP 2, 2.13-2.21 GiB at TP 4): NON_TORCH_TP_BASE + NON_TORCH_PER_RANK * group.
NON_TORCH_SINGLE_GIB = 0.25
NON_TORCH_PIPELINE_GIB = 0.07
NON_TORCH_TP_BASE_GIB = 2.01
NON_TORCH_PER_RANK_GIB = 0.04

# CUDA graph pool, subtracted from the KV budget from vLLM 0.21 on (estimated but not subtracted in
# 0.19/0.20; the logs say so). Mean of the 37 logged estimates (0.49-1.92 GiB), rounded up.
CUDA_GRAPH_GIB = 1.0
CUDA_GRAPH_SUBTRACTED_FROM = (0, 21)
OLDEST_MODELLED_VERSION = (0, 10)


@dataclass(frozen=True)
class BatchDefaults:
    """The scheduler budget vLLM profiles with."""

    max_num_batched_tokens: int
    max_num_seqs: int


def batch_defaults(
    gpu_memory_gib: float, gpu_name: str | None, max_num_batched_tokens: int | None
) -> BatchDefaults:
    """vLLM's API-server defaults for this GPU; an explicit token budget caps the dummy requests too."""
    large = gpu_memory_gib >= LARGE_GPU_MIN_GIB and "a100" not in (gpu_name or "").lower()
    tokens = LARGE_GPU_BATCHED_TOKENS if large else SMALL_GPU_BATCHED_TOKENS
    seqs = LARGE_GPU_MAX_SEQS if large else SMALL_GPU_MAX_SEQS
    if max_num_batched_tokens is not None:
        if max_num_batched_tokens < 1:
            raise CapacityError(
                f"maxNumBatchedTokens {max_num_batched_tokens} must be a positive number of tokens"
            )
        tokens = max_num_batched_tokens
    return BatchDefaults(max_num_batched_tokens=tokens, max_num_seqs=min(seqs, tokens))


def parse_version(version: str) -> tuple[int, int]:
    """``0.19.0`` -> (0, 19); rejects versions before the V1 engine the planner models."""
    parts = version.strip().lstrip("v").split(".")
    try:
        parsed = (int(parts[0]), int(parts[1]))
    except (IndexError, ValueError):
        raise CapacityError(f"vllmVersion {version!r} is not a version such as 0.19.0") from None
    if parsed < OLDEST_MODELLED_VERSION:
        oldest = ".".join(map(str, OLDEST_MODELLED_VERSION))
        raise CapacityError(
            f"vllmVersion {version} predates the V1 engine the planner models; use {oldest} or later"
        )
    return parsed


def cuda_graph_gib(vllm_version: str) -> float:
    """CUDA graph memory taken from the KV budget by this vLLM version."""
    return CUDA_GRAPH_GIB if parse_version(vllm_version) >= CUDA_GRAPH_SUBTRACTED_FROM else 0.0


def non_torch_gib(
    tensor_parallel_size: int, pipeline_parallel_size: int, expert_parallel_size: int = 1
) -> float:
    """Non-torch memory growth of one worker during profiling."""
    group = max(tensor_parallel_size, expert_parallel_size)
    if group > 1:
        return NON_TORCH_TP_BASE_GIB + NON_TORCH_PER_RANK_GIB * group
    return NON_TORCH_PIPELINE_GIB if pipeline_parallel_size > 1 else NON_TORCH_SINGLE_GIB


@dataclass(frozen=True)
class ActivationInputs:
    """Shapes the activation peak depends on (per worker)."""

    hidden_size: int
    vocab_size: int
    mlp_width_per_gpu: int
    element_bytes: int
    moe_workspace_elements: int
    """Elements of the fused-MoE workspace per token (0 for dense stages)."""
    multimodal: bool


def activation_gib(
    inputs: ActivationInputs, batch: BatchDefaults, *, first_stage: bool, last_stage: bool
) -> float:
    """Predicted ``torch peak memory increase`` of one worker."""
    t, a, h = batch.max_num_batched_tokens, inputs.element_bytes, inputs.hidden_size
    forward = t * (FORWARD_HIDDEN_COPIES * h + FORWARD_MLP_COPIES * inputs.mlp_width_per_gpu) * a / GIB
    peak = forward
    if last_stage:
        logits = batch.max_num_seqs * inputs.vocab_size * (SAMPLER_BYTES_PER_LOGIT + a)
        peak = max(forward, (logits + t * h * a) / GIB)
    persistent = t * inputs.moe_workspace_elements * a
    if not first_stage:
        persistent += PP_RECEIVE_COPIES * t * h * a
    if first_stage and inputs.multimodal:
        persistent += ENCODER_CACHE_COPIES * t * h * a
    return peak + persistent / GIB
