"""The `vllm serve` command line of one served model, built from its settings and capacity plan.

Owns every flag the program decides: the model path on the shared volume, the API name, the
parallel layout (tensor / pipeline / data parallel, expert parallel), the context length and
memory knobs, quantization, KV-cache dtype, chunked prefill, the scheduler token budget, the
executor backend across nodes, the listen address, and finally the user's allow-listed extra
flags (settings.ALLOWED_EXTRA_ARGS; none of them can override a flag decided here). Flags that
depend on the pod's place in a LeaderWorkerSet group (`--node-rank`, `--headless`) are added by
the launch scripts from the LWS environment. The API key is never a flag: vLLM reads
`VLLM_API_KEY` from the environment, which comes from a Secret.

Flag reference: vLLM `vllm/engine/arg_utils.py`, `vllm/config/parallel.py`,
`vllm/entrypoints/openai/cli_args.py`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Protocol

if TYPE_CHECKING:
    from settings import ModelSettings

API_PORT = 8000
API_PORT_NAME = "http"
LISTEN_HOST = "0.0.0.0"

Backend = Literal["ray", "mp"]


class ParallelPlan(Protocol):
    """The part of `capacity.ModelPlan` the command line needs."""

    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool


def vllm_serve_args(
    model: ModelSettings,
    plan: ParallelPlan,
    *,
    model_path: str,
    backend: Backend | None,
) -> list[str]:
    """Arguments after `vllm serve` (the first one is the model path).

    `backend` is how the nodes of a multi-node group cooperate (`ray` or `mp`); None for a model
    that fits one node, where vLLM uses its single-node multiprocessing executor. Tensor/pipeline
    parallel groups across nodes name the executor (`--distributed-executor-backend`); data
    parallel across nodes (MoE) instead launches its ranks through Ray (`--data-parallel-backend
    ray`, from the leader) or per node with mp (placement flags added by mp-node.sh).
    """
    args = [
        model_path,
        "--served-model-name",
        model.api_model_name,
        "--host",
        LISTEN_HOST,
        "--port",
        str(API_PORT),
        "--tensor-parallel-size",
        str(plan.tensor_parallel_size),
        "--pipeline-parallel-size",
        str(plan.pipeline_parallel_size),
    ]
    if plan.data_parallel_size > 1:
        args += ["--data-parallel-size", str(plan.data_parallel_size)]
    if plan.expert_parallel:
        args.append("--enable-expert-parallel")
    args += [
        "--max-model-len",
        str(model.max_model_len),
        "--gpu-memory-utilization",
        f"{model.gpu_memory_utilization:g}",
        "--dtype",
        model.dtype,
        "--kv-cache-dtype",
        model.kv_cache_dtype,
        "--enable-chunked-prefill" if model.enable_chunked_prefill else "--no-enable-chunked-prefill",
    ]
    if model.quantization is not None:
        args += ["--quantization", model.quantization]
    if model.max_num_batched_tokens is not None:
        args += ["--max-num-batched-tokens", str(model.max_num_batched_tokens)]
    if backend is not None and plan.data_parallel_size > 1:
        if backend == "ray":
            args += ["--data-parallel-backend", "ray"]
    elif backend is not None:
        args += ["--distributed-executor-backend", backend]
    args += list(model.extra_args)
    return args
