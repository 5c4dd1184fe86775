"""The vLLM memory model end to end: requested memory, weights, activation, non-torch, CUDA graphs.

Checks vLLM's scheduler defaults per GPU, the version switch for CUDA-graph memory, non-torch
memory by layout, the worst pipeline stage deciding, vLLM's own start-up error for a request that
does not fit, and input validation naming the setting.
"""

from __future__ import annotations

import pytest

from capacity import CapacityError, catalog_model_facts, estimate_memory
from capacity.profile import batch_defaults, cuda_graph_gib, non_torch_gib

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"


def _estimate(**overrides):
    settings = {
        "gpu_memory_gib": 79.19,
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "max_model_len": 8192,
        "gpu_memory_utilization": 0.90,
    }
    settings.update(overrides)
    return estimate_memory(catalog_model_facts(LLAMA_8B), **settings)


def test_one_h100_holds_llama_8b_with_vllm_defaults():
    estimate = _estimate(max_model_len=131072)
    assert round(estimate.requested_gib, 3) == round(79.19 * 0.90, 3)
    assert (estimate.max_num_batched_tokens, estimate.max_num_seqs) == (8192, 1024)
    assert round(estimate.weights_gib, 2) == 14.96
    assert estimate.non_torch_gib == 0.25 and estimate.cuda_graph_gib == 0.0
    assert (estimate.kv_cache_tokens, round(estimate.max_concurrency, 2), estimate.fits) == (
        443728,
        3.39,
        True,
    )
    assert estimate.bytes_per_token_per_gpu == 131072


def test_cuda_graph_memory_is_subtracted_from_vllm_0_21():
    assert cuda_graph_gib("0.19.0") == 0.0 and cuda_graph_gib("0.20.1") == 0.0
    assert cuda_graph_gib("0.21.0") == 1.0
    assert _estimate(vllm_version="0.21.0").kv_cache_tokens == 435536


@pytest.mark.parametrize(
    ("memory", "name", "tokens", "seqs"),
    [
        (79.19, "H100", 8192, 1024),
        (79.15, "A100-80GB", 2048, 256),
        (44.53, "L40S", 2048, 256),
        (139.81, None, 8192, 1024),
    ],
)
def test_scheduler_defaults_follow_vllm_per_gpu(memory, name, tokens, seqs):
    defaults = batch_defaults(memory, name, None)
    assert (defaults.max_num_batched_tokens, defaults.max_num_seqs) == (tokens, seqs)
    assert batch_defaults(memory, name, 512).max_num_seqs == min(seqs, 512)


def test_non_torch_memory_by_layout():
    assert non_torch_gib(1, 1) == 0.25
    assert non_torch_gib(1, 4) == 0.07
    assert non_torch_gib(2, 1) == pytest.approx(2.09)
    assert non_torch_gib(8, 2) == pytest.approx(2.33)


def test_last_pipeline_stage_decides():
    estimate = _estimate(pipeline_parallel_size=4)
    assert estimate.limiting_stage == 3  # LM head, sampler and receive buffers
    assert (estimate.kv_cache_tokens, round(estimate.max_concurrency, 2)) == (2128272, 259.8)


def test_a_request_that_does_not_fit_gives_vllms_error_with_the_longest_length():
    estimate = _estimate(gpu_memory_gib=22.05, gpu_name="L4", max_model_len=131072)
    assert not estimate.fits
    assert estimate.max_fitting_model_len == 34096
    assert estimate.message is not None
    assert estimate.message.startswith(
        "To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, "
        "which is larger than the available KV cache memory (4.16 GiB). Based on the available memory, the "
        "estimated maximum model length is 34096."
    )


def test_weights_larger_than_the_gpu_are_reported():
    estimate = estimate_memory(
        catalog_model_facts("meta-llama/Llama-3.1-70B-Instruct"),
        gpu_memory_gib=79.19,
        tensor_parallel_size=1,
        pipeline_parallel_size=1,
        max_model_len=8192,
        gpu_memory_utilization=0.9,
    )
    assert not estimate.fits
    assert estimate.message == (
        "model weights take 131.42 GiB per GPU, more than the 71.27 GiB vLLM may use "
        "(gpu_memory_utilization x total); use more GPUs or quantize the model"
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_model_len": 0}, r"maxModelLen 0 must be a positive number of tokens"),
        ({"max_model_len": 200000}, r"maxModelLen 200000 exceeds the 131072-token context of meta-llama/"),
        ({"gpu_memory_utilization": 1.2}, r"gpuMemoryUtilization 1.2 must be in \(0, 1\]"),
        ({"gpu_memory_gib": 0}, r"gpuMemoryGib 0 must be positive"),
        ({"tensor_parallel_size": 3}, r"tensorParallelSize 3 does not divide the 32 attention heads"),
        ({"pipeline_parallel_size": 33}, r"pipelineParallelSize 33 exceeds the 32 layers"),
        ({"kv_cache_dtype": "int8"}, r"kvCacheDtype 'int8' is not supported"),
        ({"vllm_version": "latest"}, r"vllmVersion 'latest' is not a version such as 0.19.0"),
        ({"vllm_version": "0.6.3"}, r"vllmVersion 0.6.3 predates the V1 engine"),
        ({"max_num_batched_tokens": 0}, r"maxNumBatchedTokens 0 must be a positive number of tokens"),
        ({"data_parallel_size": 0}, r"dataParallelSize 0 must be at least 1"),
    ],
)
def test_invalid_settings_name_the_setting(overrides, message):
    with pytest.raises(CapacityError, match=message):
        _estimate(**overrides)


def test_to_dict_uses_camel_case():
    data = _estimate().to_dict()
    assert {
        "kvCacheTokens",
        "maxConcurrency",
        "weightsGib",
        "activationGib",
        "nonTorchGib",
        "kvCacheGib",
    } <= set(data)
