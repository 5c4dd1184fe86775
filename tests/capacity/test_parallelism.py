"""vLLM's divisibility rules and the candidate layouts of the planner.

Pins each rule's message (heads, KV heads, layers, whole nodes, TP beyond a node, expert parallel
on a dense model) and the candidates per interconnect: tensor parallel over NVLink, pipeline
parallel without it, pipeline parallel where the heads do not divide, TP = GPUs per node and
PP = nodes beyond one node, data-parallel attention with expert parallel for MoE.
"""

from __future__ import annotations

import copy

import pytest

from capacity import ModelFacts, PlanError, catalog_model_facts
from capacity.parallelism import (
    Layout,
    candidate_layouts,
    check_layout,
    check_pipeline_parallel,
    check_tensor_parallel,
    valid_tensor_parallel_sizes,
)

LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


def _with(model_id: str, **changes: object) -> ModelFacts:
    base = catalog_model_facts(model_id)
    config = copy.deepcopy(base.config)
    config.update(changes)
    return ModelFacts(model_id="acme/variant", config=config)


def test_tensor_parallel_must_divide_the_attention_heads():
    with pytest.raises(
        PlanError,
        match=r"^tensorParallelSize 3 does not divide the 64 attention heads of meta-llama/Llama-3.1-70B-Instruct; "
        r"use 1, 2, 4 or 8$",
    ):
        check_tensor_parallel(catalog_model_facts(LLAMA_70B), 3)


def test_kv_heads_must_split_evenly_or_replicate():
    facts = _with(LLAMA_70B, num_key_value_heads=6, num_attention_heads=48)
    assert valid_tensor_parallel_sizes(facts, 8) == [1, 2, 3, 6]
    with pytest.raises(
        PlanError, match=r"tensorParallelSize 4 neither divides nor is a multiple of the 6 KV heads"
    ):
        check_tensor_parallel(facts, 4)
    check_tensor_parallel(facts, 6)


def test_pipeline_parallel_cannot_exceed_the_layers():
    with pytest.raises(
        PlanError, match=r"pipelineParallelSize 81 exceeds the 80 layers of .*; use at most 80"
    ):
        check_pipeline_parallel(catalog_model_facts(LLAMA_70B), 81)
    with pytest.raises(PlanError, match=r"pipelineParallelSize 0 must be at least 1"):
        check_pipeline_parallel(catalog_model_facts(LLAMA_70B), 0)


def test_pinned_layouts_must_fill_whole_nodes_and_keep_tp_in_a_node():
    facts = catalog_model_facts(LLAMA_70B)
    with pytest.raises(
        PlanError, match=r"4 x pipelineParallelSize 3 = 12 GPUs does not fill whole nodes of 8 GPUs"
    ):
        check_layout(facts, Layout(4, 3), 8, "p5.48xlarge")
    with pytest.raises(
        PlanError, match=r"tensorParallelSize 16 exceeds the 8 GPUs per node of p5.48xlarge; keep"
    ):
        check_layout(facts, Layout(16, 1), 8, "p5.48xlarge")
    check_layout(facts, Layout(8, 2), 8, "p5.48xlarge")


def test_nvlink_candidates_grow_tensor_parallel_then_nodes():
    layouts = candidate_layouts(catalog_model_facts(LLAMA_70B), 8, nvlink=True)
    assert layouts[:6] == [Layout(1, 1), Layout(2, 1), Layout(4, 1), Layout(8, 1), Layout(8, 2), Layout(8, 3)]


def test_without_nvlink_candidates_are_pipeline_parallel():
    layouts = candidate_layouts(catalog_model_facts("Qwen/Qwen2.5-32B-Instruct"), 4, nvlink=False)
    assert layouts[:4] == [Layout(1, 1), Layout(1, 2), Layout(1, 4), Layout(1, 8)]


def test_heads_that_do_not_divide_fall_back_to_pipeline_parallel():
    facts = _with(LLAMA_70B, num_attention_heads=28, num_key_value_heads=4)  # Qwen2.5-7B-like heads
    assert candidate_layouts(facts, 8, nvlink=True)[3] == Layout(4, 2)


def test_pinned_sizes_filter_the_candidates():
    facts = catalog_model_facts(LLAMA_70B)
    assert candidate_layouts(facts, 8, nvlink=True, tensor_parallel_size=2)[:3] == [
        Layout(2, 1),
        Layout(2, 2),
        Layout(2, 4),
    ]
    assert candidate_layouts(facts, 8, nvlink=True, pipeline_parallel_size=2)[:2] == [
        Layout(1, 2),
        Layout(2, 2),
    ]


def test_expert_parallel_needs_a_moe_model_and_no_pipeline():
    with pytest.raises(
        PlanError, match=r"enableExpertParallel needs a mixture-of-experts model; .* is dense"
    ):
        candidate_layouts(catalog_model_facts(LLAMA_70B), 8, nvlink=True, expert_parallel=True)
    v3 = catalog_model_facts("deepseek-ai/DeepSeek-V3")
    with pytest.raises(PlanError, match=r"pipelineParallelSize must be 1 with enableExpertParallel"):
        candidate_layouts(v3, 8, nvlink=True, expert_parallel=True, pipeline_parallel_size=2)
    layouts = candidate_layouts(v3, 8, nvlink=True, expert_parallel=True)
    assert layouts[3] == Layout(1, 1, 8, True) and layouts[3].gpus == 8
