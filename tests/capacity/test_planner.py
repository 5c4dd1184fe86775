"""Serving plans: the layout vLLM's guidance leads to, replicas for the target, node pool and cost.

Pins the headline cases (Llama-3.1-405B on p5.48xlarge -> TP 8 x PP 2 over two nodes; a 32B model
on g6e.12xlarge without NVLink -> PP 4 x TP 1; an 8B model -> one H100), each decision rule,
pinned sizes, expert parallel, autoscaling bounds and every failure with its message.
"""

from __future__ import annotations

import copy

import pytest

from capacity import (
    CapacityError,
    ModelFacts,
    PlanError,
    ServingRequest,
    UnknownInstanceTypeError,
    catalog_model_facts,
    get_gpu_model,
    plan_model,
)
from capacity.planner import FIT_MARGIN, nodes_needed


def _plan(model_id: str, instance: str, **settings: object):
    return plan_model(ServingRequest.for_instance_type(catalog_model_facts(model_id), instance, **settings))


def test_405b_on_p5_is_tp8_by_pp2_over_two_nodes():
    plan = _plan(
        "meta-llama/Llama-3.1-405B-Instruct", "p5.48xlarge", max_model_len=8192, target_concurrency=100
    )
    assert (plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.data_parallel_size) == (8, 2, 1)
    assert (plan.gpus_per_replica, plan.nodes_per_replica, plan.gpus_per_node_used) == (16, 2, 8)
    assert (plan.kv_cache_tokens, round(plan.max_concurrency, 2), plan.replicas) == (636080, 77.65, 2)
    assert (plan.min_replicas, plan.max_replicas, plan.pool_min_nodes, plan.pool_max_nodes) == (1, 2, 2, 4)
    assert plan.gpu_hourly_cost_usd == pytest.approx(110.08)  # two p5.48xlarge at $55.04
    assert plan.hourly_cost_at_target_usd == pytest.approx(220.16)


def test_32b_on_g6e_without_nvlink_is_pipeline_parallel_over_four_gpus():
    plan = _plan("Qwen/Qwen2.5-32B-Instruct", "g6e.12xlarge", max_model_len=32768, target_concurrency=8)
    assert (plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.gpus_per_replica) == (1, 4, 4)
    assert (plan.nodes_per_replica, plan.replicas, round(plan.max_concurrency, 2)) == (1, 1, 11.71)
    assert (
        plan.reasons[0]
        == "L40S GPUs have no NVLink: pipeline parallel with tensor parallel 1 (vLLM guidance)"
    )


def test_a_smaller_replica_wins_when_it_reaches_the_target_on_as_few_nodes():
    plan = _plan("Qwen/Qwen2.5-32B-Instruct", "g6e.12xlarge", max_model_len=32768, target_concurrency=2)
    assert (plan.pipeline_parallel_size, plan.replicas, plan.pool_max_nodes) == (2, 1, 1)


def test_8b_model_fits_one_h100():
    plan = _plan(
        "meta-llama/Llama-3.1-8B-Instruct", "p5.48xlarge", max_model_len=32768, target_concurrency=10
    )
    assert (plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.gpus_per_replica, plan.replicas) == (
        1,
        1,
        1,
        1,
    )
    assert plan.gpu_hourly_cost_usd == pytest.approx(55.04 / 8)
    generic = plan_model(
        ServingRequest(
            facts=catalog_model_facts("meta-llama/Llama-3.1-8B-Instruct"),
            gpu=get_gpu_model("H100"),
            gpus_per_node=1,
            max_model_len=32768,
            target_concurrency=40,
        )
    )
    assert (
        generic.gpus_per_replica,
        generic.replicas,
        generic.pool_max_nodes,
        generic.gpu_hourly_cost_usd,
    ) == (1, 3, 3, None)


def test_tensor_parallel_within_a_node_reaches_the_target_on_fewest_nodes():
    plan = _plan(
        "meta-llama/Llama-3.1-70B-Instruct", "p5.48xlarge", max_model_len=32768, target_concurrency=64
    )
    assert (plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.replicas, plan.pool_max_nodes) == (
        8,
        1,
        2,
        2,
    )


def test_moe_with_expert_parallel_uses_data_parallel_attention():
    plan = _plan(
        "deepseek-ai/DeepSeek-V3",
        "p5en.48xlarge",
        max_model_len=32768,
        target_concurrency=64,
        enable_expert_parallel=True,
    )
    assert (
        plan.tensor_parallel_size,
        plan.data_parallel_size,
        plan.expert_parallel,
        plan.gpus_per_replica,
    ) == (1, 8, True, 8)
    assert plan.estimate.bytes_per_token_per_gpu == 61 * 1152  # MLA latent of every layer on every rank
    assert round(plan.max_concurrency, 2) == round(8 * plan.estimate.max_concurrency, 2)


def test_heads_that_do_not_divide_the_node_fall_back_to_pipeline_parallel():
    base = catalog_model_facts("meta-llama/Llama-3.1-70B-Instruct")
    config = copy.deepcopy(base.config)
    config.update(
        num_attention_heads=56, num_key_value_heads=8, head_dim=128
    )  # 56 heads: TP 8 divides, TP 16 not
    facts = ModelFacts(model_id="acme/56-heads", config=config)
    plan = plan_model(
        ServingRequest.for_instance_type(facts, "g5.48xlarge", max_model_len=4096, target_concurrency=1)
    )
    assert (plan.tensor_parallel_size, plan.pipeline_parallel_size) == (1, 8)


def test_pinned_sizes_are_used_as_given():
    plan = _plan(
        "meta-llama/Llama-3.1-70B-Instruct",
        "p5.48xlarge",
        max_model_len=8192,
        target_concurrency=64,
        tensor_parallel_size=8,
        pipeline_parallel_size=2,
    )
    assert (plan.tensor_parallel_size, plan.pipeline_parallel_size, plan.nodes_per_replica) == (8, 2, 2)


def test_pinned_tensor_parallel_that_does_not_divide_the_heads_is_explained():
    with pytest.raises(
        PlanError,
        match=r"^tensorParallelSize 3 does not divide the 64 attention heads of meta-llama/Llama-3.1-70B-Instruct; "
        r"use 1, 2, 4 or 8$",
    ):
        _plan(
            "meta-llama/Llama-3.1-70B-Instruct",
            "p5.48xlarge",
            max_model_len=8192,
            target_concurrency=1,
            tensor_parallel_size=3,
        )


def test_pinned_layout_that_does_not_fit_reports_vllms_error():
    with pytest.raises(
        PlanError,
        match=r"does not fit the pinned layouts tried on p5.48xlarge \(closest: TP 2 x PP 1\): To serve at least one "
        r"request with the models's max seq len \(131072\), \(20.00 GiB KV cache is needed, .* the estimated maximum "
        r"model length is 9904\.",
    ):
        _plan(
            "meta-llama/Llama-3.1-70B-Instruct",
            "p5.48xlarge",
            max_model_len=131072,
            target_concurrency=1,
            tensor_parallel_size=2,
            pipeline_parallel_size=1,
        )


def test_model_that_fits_no_layout_is_refused():
    with pytest.raises(
        PlanError,
        match=r"^meta-llama/Llama-3.1-405B-Instruct at maxModelLen 8192 does not fit the layouts tried on g5.xlarge "
        r"\(closest: TP 1 x PP 16\): model weights take 47.50 GiB per GPU",
    ):
        _plan("meta-llama/Llama-3.1-405B-Instruct", "g5.xlarge", max_model_len=8192, target_concurrency=1)


def test_unknown_instance_type_is_refused():
    with pytest.raises(UnknownInstanceTypeError, match=r"unknown instance type 'p9.48xlarge'"):
        _plan("Qwen/Qwen3-8B", "p9.48xlarge", max_model_len=8192, target_concurrency=1)


def test_autoscaling_bounds():
    plan = _plan(
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "g6e.12xlarge",
        max_model_len=32768,
        target_concurrency=20,
        min_replicas=0,
        max_replicas=4,
    )
    assert (
        plan.replicas,
        plan.min_replicas,
        plan.max_replicas,
        plan.pool_min_nodes,
        plan.pool_max_nodes,
    ) == (2, 0, 4, 0, 4)
    with pytest.raises(
        PlanError,
        match=r"^maxReplicas 1 holds 17.6 concurrent requests of 32768 tokens; targetConcurrency 20 needs 2 replicas of TP 1 x PP 4$",
    ):
        _plan(
            "mistralai/Mixtral-8x7B-Instruct-v0.1",
            "g6e.12xlarge",
            max_model_len=32768,
            target_concurrency=20,
            max_replicas=1,
        )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"target_concurrency": 0}, r"targetConcurrency 0 must be at least 1"),
        ({"min_replicas": 3, "max_replicas": 2}, r"minReplicas 3 exceeds maxReplicas 2"),
        ({"max_replicas": 0}, r"maxReplicas 0 must be at least 1"),
        ({"max_model_len": 50000}, r"maxModelLen 50000 exceeds the 40960-token context of Qwen/Qwen3-8B"),
    ],
)
def test_invalid_requests_name_the_setting(settings, message):
    values = {"max_model_len": 8192, "target_concurrency": 1, **settings}
    with pytest.raises(CapacityError, match=message):
        _plan("Qwen/Qwen3-8B", "p5.48xlarge", **values)


def test_packing_replicas_into_nodes():
    assert nodes_needed(5, 2, 8) == 2
    assert nodes_needed(3, 16, 8) == 6
    assert nodes_needed(0, 4, 4) == 0
    assert FIT_MARGIN > 1


def test_plan_dict_uses_camel_case_keys():
    data = _plan("Qwen/Qwen3-8B", "p5.48xlarge", max_model_len=8192, target_concurrency=1).to_dict()
    assert {
        "tensorParallelSize", "pipelineParallelSize", "dataParallelSize", "nodesPerReplica", "minReplicas",
        "maxReplicas", "kvCacheTokens", "maxConcurrency", "modelWeightBytes", "memory", "reasons",
    } <= set(data)  # fmt: skip
    assert data["memory"]["kvCacheTokens"] == data["kvCacheTokens"]


def test_pinned_pipeline_size_without_a_whole_node_layout_is_explained():
    with pytest.raises(
        PlanError,
        match=r"^no layout of whole nodes of p5.48xlarge has pipelineParallelSize 17; leave it unset or use a smaller value$",
    ):
        _plan(
            "meta-llama/Llama-3.1-70B-Instruct",
            "p5.48xlarge",
            max_model_len=8192,
            target_concurrency=1,
            pipeline_parallel_size=17,
        )
