"""Weight sizes: parameter counts from configs and the bytes vLLM loads under dtype / quantization.

Parameter counts are checked against the published totals; bytes against vLLM's logged weight
memory (14.99 GiB bf16, 29.98 GiB float32, 8.49 GiB runtime fp8 for Llama-3.1-8B). Quantization
configs (GPTQ, compressed-tensors, MXFP4, fp8 blocks) and override errors are pinned.
"""

from __future__ import annotations

import copy

import pytest

from capacity import CapacityError, ModelFacts, catalog_model_facts
from capacity.weights import checkpoint_bytes, count_parameters, weight_bytes

GIB = 2**30


@pytest.mark.parametrize(
    ("model_id", "parameters"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248),
        ("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496),
        ("meta-llama/Llama-3.1-405B-Instruct", 405_853_388_800),
        ("Qwen/Qwen2.5-32B-Instruct", 32_763_876_352),
        ("Qwen/Qwen3-8B", 8_190_735_360),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46_702_792_704),
    ],
)
def test_parameter_count_matches_the_published_total(model_id, parameters):
    assert count_parameters(catalog_model_facts(model_id)).total == parameters


@pytest.mark.parametrize(
    ("stem", "parameters"),
    [
        ("codellama__codellama-7b-hf", 6_738_546_688),
        ("deepseek-ai__deepseek-v2-lite-chat", 15_706_484_224),
        ("google__gemma-2-27b-it", 27_227_128_320),
        ("qwen__qwen1.5-moe-a2.7b", 14_315_784_192),
        ("microsoft__phi-2", 2_779_683_840),
    ],
)
def test_parameter_count_of_calibration_models(calibration_facts, stem, parameters):
    assert count_parameters(calibration_facts(stem)).total == parameters


def test_dtype_and_runtime_fp8_as_vllm_loads_them(calibration_facts):
    facts = calibration_facts("meta-llama__llama-3.1-8b-instruct")  # size = vLLM's logged 14.99 GiB
    assert round(weight_bytes(facts).total / GIB, 2) == 14.99
    assert round(weight_bytes(facts, "float16").total / GIB, 2) == 14.99
    assert round(weight_bytes(facts, "float32").total / GIB, 2) == 29.98
    # fp8 quantizes the linear layers to one byte; embeddings and LM head stay 16-bit (vLLM: 8.49 GiB)
    assert round(weight_bytes(facts, quantization="fp8").total / GIB, 2) == 8.48


def test_prequantized_checkpoints_use_their_recorded_size(calibration_facts):
    w4a16 = calibration_facts("redhatai__meta-llama-3.1-8b-instruct-quantized.w4a16")
    assert round(weight_bytes(w4a16, "float16", "gptq_marlin").total / GIB, 2) == 5.38
    fp8 = calibration_facts(
        "redhatai__llama-3.3-70b-instruct-fp8-dynamic"
    )  # F8_E4M3 counts, no config section
    weights = weight_bytes(fp8, "bfloat16", "compressed-tensors")
    assert round(weights.total / GIB, 2) == 67.76
    assert round(weights.embedding / GIB, 3) == 1.957  # embeddings stay bf16


def test_catalog_weights_without_hub_sizes_come_from_the_config():
    facts = catalog_model_facts("meta-llama/Llama-3.1-8B-Instruct")
    assert weight_bytes(facts).total == 16_060_522_496 == checkpoint_bytes(facts)
    assert weight_bytes(facts, "float32").total == 32_121_044_992
    assert weight_bytes(facts, quantization="fp8").total == 9_081_200_640


def _with_quantization(quantization_config: dict) -> ModelFacts:
    base = catalog_model_facts("meta-llama/Llama-3.1-8B-Instruct")
    config = copy.deepcopy(base.config)
    config["quantization_config"] = quantization_config
    return ModelFacts(model_id="acme/quantized", config=config)


def test_quantization_config_sets_the_linear_width():
    gptq = _with_quantization({"quant_method": "gptq", "bits": 4, "group_size": 128})
    assert weight_bytes(gptq).total == weight_bytes(gptq, quantization="gptq_marlin").total == 5_727_854_592
    w8 = _with_quantization(
        {
            "quant_method": "compressed-tensors",
            "config_groups": {"g": {"weights": {"num_bits": 8, "strategy": "channel"}}},
        }
    )
    assert weight_bytes(w8).total == 9_081_200_640


def test_mxfp4_quantizes_only_the_experts():
    mixtral = catalog_model_facts("mistralai/Mixtral-8x7B-Instruct-v0.1")
    config = copy.deepcopy(mixtral.config)
    config["quantization_config"] = {"quant_method": "mxfp4"}
    weights = weight_bytes(ModelFacts(model_id="acme/mx", config=config))
    assert sum(weights.layer_experts) == 23_957_864_448  # 4.25 bits per expert weight
    assert sum(weights.layer_dense) == 2_686_976_000  # attention and norms stay bf16


def test_fp8_block_checkpoint_of_deepseek_v3():
    facts = catalog_model_facts("deepseek-ai/DeepSeek-V3")
    assert weight_bytes(facts).total == 672_987_199_488  # about 627 GiB: fp8 linear layers, bf16 embeddings


def test_quantization_that_does_not_match_the_checkpoint_is_refused():
    gptq = _with_quantization({"quant_method": "gptq", "bits": 4, "group_size": 128})
    with pytest.raises(
        CapacityError,
        match=r"quantization 'awq' does not match the checkpoint of acme/quantized, which is quantized with gptq",
    ):
        weight_bytes(gptq, quantization="awq")


def test_unknown_quantization_and_dtype_are_refused():
    facts = catalog_model_facts("Qwen/Qwen3-8B")
    with pytest.raises(
        CapacityError, match=r"quantization 'int3' is not supported by the planner; use one of"
    ):
        weight_bytes(facts, quantization="int3")
    with pytest.raises(
        CapacityError, match=r"dtype 'float8' is not supported; use auto, bfloat16, float16 or float32"
    ):
        weight_bytes(facts, dtype="float8")


def test_checkpoint_quantization_needs_a_quantized_checkpoint():
    facts = catalog_model_facts("Qwen/Qwen3-8B")
    with pytest.raises(CapacityError, match=r"quantization 'awq' needs a checkpoint quantized with it"):
        weight_bytes(ModelFacts(model_id=facts.model_id, config=facts.config), quantization="awq")


def test_model_facts_weight_bytes_is_the_total():
    facts = catalog_model_facts("meta-llama/Llama-3.1-8B-Instruct")
    assert facts.weight_bytes() == 16_060_522_496
    assert facts.weight_bytes("float32") == 32_121_044_992
    assert facts.weight_bytes(quantization="fp8") == 9_081_200_640
