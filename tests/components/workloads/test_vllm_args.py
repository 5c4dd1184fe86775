"""vllm_args: the `vllm serve` argv, flag by flag.

Checks the full argv of a plain single-node model, each optional flag (quantization, KV-cache dtype,
token budget, chunked prefill off, data/expert parallel), the executor flags across nodes for Ray
and mp, multi-node data parallel through Ray, and that extra args come last, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.vllm_args import vllm_serve_args
from settings import ModelSettings

PATH = "/models/m/rev"


@dataclass(frozen=True)
class Plan:
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    expert_parallel: bool = False


def model(**changes: Any) -> ModelSettings:
    base = {
        "name": "m",
        "modelId": "meta-llama/Llama-3.1-8B-Instruct",
        "revision": "0e9e39f",
        "pool": "l40s",
        "maxModelLen": 8192,
    }
    return ModelSettings.model_validate({**base, **changes})


def test_single_node_argv_in_full() -> None:
    assert vllm_serve_args(model(), Plan(), model_path=PATH, backend=None) == [
        PATH,
        "--served-model-name",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--tensor-parallel-size",
        "1",
        "--pipeline-parallel-size",
        "1",
        "--max-model-len",
        "8192",
        "--gpu-memory-utilization",
        "0.9",
        "--dtype",
        "auto",
        "--kv-cache-dtype",
        "auto",
        "--enable-chunked-prefill",
    ]


def test_optional_flags() -> None:
    args = vllm_serve_args(
        model(
            servedModelName="llama",
            quantization="fp8",
            kvCacheDtype="fp8",
            maxNumBatchedTokens=4096,
            enableChunkedPrefill=False,
            gpuMemoryUtilization=0.92,
            dtype="bfloat16",
        ),
        Plan(),
        model_path=PATH,
        backend=None,
    )
    assert args[1:3] == ["--served-model-name", "llama"]
    assert args[args.index("--quantization") + 1] == "fp8"
    assert args[args.index("--kv-cache-dtype") + 1] == "fp8"
    assert args[args.index("--max-num-batched-tokens") + 1] == "4096"
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.92"
    assert args[args.index("--dtype") + 1] == "bfloat16"
    assert "--no-enable-chunked-prefill" in args and "--enable-chunked-prefill" not in args


def test_tensor_and_pipeline_parallel_across_nodes_names_the_executor() -> None:
    ray = vllm_serve_args(model(), Plan(8, 2), model_path=PATH, backend="ray")
    assert ray[ray.index("--tensor-parallel-size") + 1] == "8"
    assert ray[ray.index("--pipeline-parallel-size") + 1] == "2"
    assert ray[-2:] == ["--distributed-executor-backend", "ray"]
    mp = vllm_serve_args(model(), Plan(8, 2), model_path=PATH, backend="mp")
    assert mp[-2:] == ["--distributed-executor-backend", "mp"]


def test_expert_parallel_with_data_parallel_on_one_node() -> None:
    args = vllm_serve_args(model(), Plan(1, 1, 8, True), model_path=PATH, backend=None)
    assert args[args.index("--data-parallel-size") + 1] == "8"
    assert "--enable-expert-parallel" in args
    assert "--distributed-executor-backend" not in args


def test_data_parallel_across_nodes_launches_ranks_through_ray() -> None:
    args = vllm_serve_args(model(), Plan(1, 1, 16, True), model_path=PATH, backend="ray")
    assert args[-2:] == ["--data-parallel-backend", "ray"]
    assert "--distributed-executor-backend" not in args
    mp = vllm_serve_args(model(), Plan(1, 1, 16, True), model_path=PATH, backend="mp")
    assert "--data-parallel-backend" not in mp and "--distributed-executor-backend" not in mp


def test_extra_args_come_last_unchanged() -> None:
    args = vllm_serve_args(
        model(extraArgs=["--max-num-seqs", "64", "--enable-prefix-caching"]),
        Plan(),
        model_path=PATH,
        backend=None,
    )
    assert args[-3:] == ["--max-num-seqs", "64", "--enable-prefix-caching"]
