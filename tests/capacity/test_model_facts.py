"""Model facts: the architecture derived from a config.json, the facts file format and the catalog.

Covers layers / heads / KV heads / head size, multimodal ``text_config``, the attention kind of
every layer (Gemma 2 alternation, Gemma 3 5:1 pattern, Llama 4 chunked local, Qwen sliding
switch), MLA, mixture-of-experts layouts, loading errors, the catalog and its protection against
mutation.
"""

from __future__ import annotations

import json

import pytest

from capacity import (
    CapacityError,
    UnknownModelError,
    catalog_model_facts,
    load_model_facts,
    resolve_model_facts,
)
from capacity.model_facts import AttentionLayer, ModelFacts, catalog_model_ids

CATALOG = [
    "meta-llama/Llama-3.1-8B-Instruct",
    "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/Llama-3.1-405B-Instruct",
    "Qwen/Qwen2.5-32B-Instruct",
    "Qwen/Qwen3-32B",
    "Qwen/Qwen3-8B",
    "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "deepseek-ai/DeepSeek-V3",
]


def test_llama_shape(calibration_facts):
    facts = calibration_facts("meta-llama__llama-3.1-8b-instruct")
    assert (facts.num_layers, facts.num_attention_heads, facts.num_kv_heads, facts.head_dim) == (
        32,
        32,
        8,
        128,
    )
    assert (facts.vocab_size, facts.max_position_embeddings, facts.is_moe, facts.is_mla) == (
        128256,
        131072,
        False,
        False,
    )
    assert facts.attention_layers == (AttentionLayer("full"),) * 32


def test_multimodal_config_is_read_through_text_config(calibration_facts):
    facts = calibration_facts("google__gemma-3-12b-it")
    assert (facts.num_layers, facts.hidden_size, facts.head_dim, facts.vocab_size) == (48, 3840, 256, 262208)
    assert facts.is_multimodal
    assert facts.tie_word_embeddings  # Gemma ties its LM head to the embeddings when the key is absent


def test_gemma3_has_five_sliding_layers_per_full_layer(calibration_facts):
    layers = calibration_facts("google__gemma-3-27b-it").attention_layers
    assert [layer.kind for layer in layers[:6]] == ["sliding"] * 5 + ["full"]
    assert sum(layer.kind == "full" for layer in layers) == 10
    assert {layer.window for layer in layers if layer.kind == "sliding"} == {1024}


def test_gemma2_alternates_sliding_and_full(calibration_facts):
    layers = calibration_facts("google__gemma-2-27b-it").attention_layers
    assert layers[:2] == (AttentionLayer("sliding", 4096), AttentionLayer("full"))
    assert sum(layer.kind == "sliding" for layer in layers) == 23


def test_llama4_chunked_local_with_a_global_layer_every_fourth(calibration_facts):
    layers = calibration_facts("meta-llama__llama-4-scout-17b-16e-instruct").attention_layers
    assert layers[:4] == (AttentionLayer("chunked", 8192),) * 3 + (AttentionLayer("full"),)
    assert sum(layer.kind == "chunked" for layer in layers) == 36


def test_qwen_sliding_window_is_off_unless_enabled(calibration_facts):
    assert {layer.kind for layer in calibration_facts("qwen__qwen1.5-moe-a2.7b").attention_layers} == {"full"}


def test_mla_latent_width(calibration_facts):
    facts = calibration_facts("deepseek-ai__deepseek-v2-lite-chat")
    assert facts.is_mla and facts.mla_cache_dim == 576
    assert [facts.is_moe_layer(i) for i in range(3)] == [False, True, True]  # first_k_dense_replace 1


def test_moe_layout_of_catalog_models():
    v3 = catalog_model_facts("deepseek-ai/DeepSeek-V3")
    assert (v3.num_experts, v3.experts_per_token, v3.moe_intermediate_size) == (256, 8, 2048)
    assert v3.shared_expert_intermediate_size == 2048
    assert sum(v3.is_moe_layer(i) for i in range(v3.num_layers)) == 58
    mixtral = catalog_model_facts("mistralai/Mixtral-8x7B-Instruct-v0.1")
    assert (mixtral.num_experts, mixtral.moe_intermediate_size, mixtral.shared_expert_intermediate_size) == (
        8,
        14336,
        0,
    )


def test_catalog_holds_the_popular_models():
    assert set(CATALOG) <= set(catalog_model_ids())
    for model_id in CATALOG:
        facts = catalog_model_facts(model_id)
        assert facts.model_id == model_id and facts.sources


def test_catalog_lookup_is_case_insensitive_and_returns_fresh_copies():
    first = catalog_model_facts("qwen/qwen3-8b")
    first.config["num_hidden_layers"] = 1
    assert catalog_model_facts("Qwen/Qwen3-8B").num_layers == 36


def test_unknown_catalog_model_names_the_lock_command():
    with pytest.raises(
        UnknownModelError,
        match=r"'acme/unknown' is not in the built-in catalog .*python -m capacity lock acme/unknown",
    ):
        catalog_model_facts("acme/unknown")


def test_facts_file_errors_name_the_file(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(CapacityError, match=r"model facts file .*missing\.json does not exist"):
        load_model_facts(missing)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"model_id": "a/b"}))
    with pytest.raises(CapacityError, match=r"broken\.json: missing 'config'"):
        load_model_facts(broken)
    bad_size = tmp_path / "size.json"
    bad_size.write_text(json.dumps({"model_id": "a/b", "config": {}, "safetensors_total_size_bytes": -1}))
    with pytest.raises(
        CapacityError, match=r"'safetensors_total_size_bytes' must be a positive integer or null"
    ):
        load_model_facts(bad_size)


def test_resolve_prefers_the_facts_file_relative_to_the_base_dir(calibration_dir):
    facts = resolve_model_facts("Qwen/Qwen3-8B", "models/qwen__qwen3-8b.json", base_dir=calibration_dir)
    assert facts.safetensors_total_size_bytes == 16396037652
    with pytest.raises(CapacityError, match=r"describes Qwen/Qwen3-8B, not meta-llama/Llama-3.1-8B-Instruct"):
        resolve_model_facts(
            "meta-llama/Llama-3.1-8B-Instruct", "models/qwen__qwen3-8b.json", base_dir=calibration_dir
        )
    assert resolve_model_facts("Qwen/Qwen3-8B").safetensors_total_params == 8190735360


def test_missing_fields_raise_capacity_errors():
    facts = ModelFacts(model_id="a/b", config={"hidden_size": 64})
    with pytest.raises(CapacityError, match=r"model facts of a/b: config has no num_hidden_layers"):
        _ = facts.num_layers
    with pytest.raises(CapacityError, match=r"config has no max_position_embeddings"):
        _ = facts.max_position_embeddings
