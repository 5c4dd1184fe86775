"""Invariants of the planner over generated models, GPUs and settings (hypothesis).

For any plan: TP x PP x DP equals the GPUs of a replica and fits its nodes; weights, activation,
non-torch memory and the KV cache add up to the requested memory; the KV cache holds one
max-length request; replicas reach the target; plans are deterministic. Invalid settings raise a
CapacityError naming the setting. More memory never means fewer KV tokens.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capacity import (
    CapacityError,
    ModelFacts,
    PlanError,
    ServingRequest,
    estimate_memory,
    get_gpu_model,
    plan_model,
)
from capacity.hardware import gpu_model_names
from capacity.planner import FIT_MARGIN

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def models(draw) -> ModelFacts:
    heads = draw(st.sampled_from([8, 16, 32, 40, 64]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4, 8) if heads % k == 0]))
    head_dim = draw(st.sampled_from([64, 128]))
    hidden = heads * head_dim
    config = {
        "model_type": "llama",
        "num_hidden_layers": draw(st.integers(min_value=2, max_value=64)),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "hidden_size": hidden,
        "intermediate_size": hidden * draw(st.sampled_from([2, 3, 4])),
        "vocab_size": draw(st.sampled_from([32000, 128256, 151936])),
        "max_position_embeddings": 131072,
        "torch_dtype": "bfloat16",
    }
    return ModelFacts(model_id="generated/model", config=config)


@st.composite
def requests(draw) -> ServingRequest:
    return ServingRequest(
        facts=draw(models()),
        gpu=get_gpu_model(draw(st.sampled_from(gpu_model_names()))),
        gpus_per_node=draw(st.sampled_from([1, 2, 4, 8])),
        max_model_len=draw(st.sampled_from([1024, 4096, 32768])),
        target_concurrency=draw(st.integers(min_value=1, max_value=200)),
        gpu_memory_utilization=draw(st.floats(min_value=0.8, max_value=0.95)),
    )


@SETTINGS
@given(requests())
def test_plans_are_consistent(request):
    try:
        plan = plan_model(request)
    except PlanError as err:
        assert "does not fit" in str(err)
        return
    estimate = plan.estimate
    assert (
        plan.tensor_parallel_size * plan.pipeline_parallel_size * plan.data_parallel_size
        == plan.gpus_per_replica
    )
    assert plan.nodes_per_replica == math.ceil(plan.gpus_per_replica / request.gpus_per_node)
    assert plan.gpus_per_node_used <= request.gpus_per_node
    used = estimate.weights_gib + estimate.activation_gib + estimate.non_torch_gib + estimate.cuda_graph_gib
    assert used + estimate.kv_cache_gib == pytest.approx(estimate.requested_gib)
    assert used < estimate.requested_gib
    assert estimate.fits and estimate.max_concurrency >= FIT_MARGIN
    assert estimate.kv_cache_tokens >= request.max_model_len
    assert estimate.kv_cache_tokens * estimate.bytes_per_token_per_gpu <= estimate.kv_cache_gib * 2**30
    assert plan.replicas * plan.max_concurrency >= request.target_concurrency
    assert plan.max_replicas >= plan.replicas >= 1 and plan.pool_max_nodes >= plan.pool_min_nodes
    assert plan_model(request) == plan


@SETTINGS
@given(models(), st.floats(min_value=0.5, max_value=0.9), st.floats(min_value=0.01, max_value=0.08))
def test_more_memory_never_means_fewer_tokens(facts, utilization, extra):
    def tokens(fraction: float) -> int:
        return estimate_memory(
            facts,
            gpu_memory_gib=79.19,
            tensor_parallel_size=1,
            pipeline_parallel_size=1,
            max_model_len=1024,
            gpu_memory_utilization=fraction,
        ).kv_cache_tokens

    assert tokens(utilization + extra) >= tokens(utilization)


BAD_SETTINGS = st.one_of(
    st.builds(lambda v: ({"max_model_len": v}, "maxModelLen"), st.integers(max_value=0)),
    st.builds(
        lambda v: ({"gpu_memory_utilization": v}, "gpuMemoryUtilization"),
        st.floats(min_value=1.01, max_value=5),
    ),
    st.builds(
        lambda v: ({"gpu_memory_utilization": v}, "gpuMemoryUtilization"),
        st.floats(max_value=0, min_value=-5),
    ),
    st.builds(lambda v: ({"target_concurrency": v}, "targetConcurrency"), st.integers(max_value=0)),
    st.builds(lambda v: ({"tensor_parallel_size": v}, "tensorParallelSize"), st.sampled_from([3, 5, 6, 7])),
    st.builds(lambda v: ({"max_replicas": v}, "maxReplicas"), st.integers(max_value=0)),
)


@SETTINGS
@given(models(), BAD_SETTINGS)
def test_bad_settings_raise_errors_naming_the_setting(facts, bad):
    overrides, setting = bad
    if setting == "tensorParallelSize" and facts.num_attention_heads % overrides["tensor_parallel_size"] == 0:
        overrides = {"tensor_parallel_size": 9}  # divides none of the generated head counts
    values = {"max_model_len": 1024, "target_concurrency": 1, **overrides}
    request = ServingRequest(facts=facts, gpu=get_gpu_model("H100"), gpus_per_node=8, **values)
    with pytest.raises(CapacityError, match=setting):
        plan_model(request)
