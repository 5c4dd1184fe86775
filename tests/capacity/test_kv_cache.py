"""vLLM's KV-cache arithmetic, checked against numbers vLLM logged.

Bytes per token (GQA split over TP, replication below one head, MLA not split, fp8 halving),
pipeline stage split, hybrid grouping with padding for sliding-window and chunked-local models
(Gemma 2/3, Llama 4 Scout: token counts and concurrency reproduce the v0.19.0 logs exactly from
the logged block counts), the uniform case, the sliding-window discount and the start-up check.
"""

from __future__ import annotations

import pytest

from capacity import CapacityError
from capacity.kv_cache import LayerKV, blocks_per_layer, kv_capacity, kv_dtype_bytes, layer_kv, pp_partition

BLOCK = 16


def _available(blocks: int, page: int, group_size: int) -> list[int]:
    return [blocks * page * group_size]


def test_gqa_bytes_per_token_split_over_tensor_parallel(calibration_facts):
    facts = calibration_facts("meta-llama__llama-3.1-8b-instruct")
    assert sum(s.bytes_per_token for s in layer_kv(facts, 1, 2)) == 131072  # 128 KiB, as logged
    assert layer_kv(facts, 2, 2)[0].bytes_per_token == 2048
    assert (
        layer_kv(facts, 16, 2)[0].bytes_per_token == 512
    )  # 8 KV heads over 16 ranks: one replicated head each
    assert layer_kv(facts, 1, kv_dtype_bytes("fp8", 2))[0].bytes_per_token == 2048  # fp8 KV halves


def test_mla_latent_is_not_split_over_tensor_parallel(calibration_facts):
    facts = calibration_facts("deepseek-ai__deepseek-v2-lite-chat")
    assert {s.bytes_per_token for s in layer_kv(facts, 1, 2)} == {1152}
    assert {s.bytes_per_token for s in layer_kv(facts, 8, 2)} == {1152}


def test_kv_dtype_auto_follows_the_model_and_unknown_is_refused():
    assert kv_dtype_bytes("auto", 4) == 4
    assert kv_dtype_bytes("fp8_e5m2", 2) == 1
    with pytest.raises(CapacityError, match=r"kvCacheDtype 'int4' is not supported; use auto, fp8"):
        kv_dtype_bytes("int4", 2)


@pytest.mark.parametrize(
    ("layers", "stages", "expected"),
    [
        (126, 2, [(0, 63), (63, 126)]),
        (80, 3, [(0, 27), (27, 54), (54, 80)]),
        (10, 4, [(0, 2), (2, 5), (5, 8), (8, 10)]),  # extra layers go to the middle stages
        (32, 4, [(0, 8), (8, 16), (16, 24), (24, 32)]),
    ],
)
def test_pipeline_partition_matches_get_pp_indices(layers, stages, expected):
    assert pp_partition(layers, stages) == expected


def test_uniform_model_tokens_and_concurrency_from_blocks(calibration_facts):
    specs = layer_kv(calibration_facts("meta-llama__llama-3.1-8b-instruct"), 1, 2)
    page = BLOCK * 4096
    result = kv_capacity(
        specs, [(0, 32)], _available(29751, page, 32), max_model_len=2048, max_num_batched_tokens=8192
    )
    assert (result.num_blocks, result.kv_cache_tokens, result.num_groups) == (29751, 476016, 1)
    assert round(result.max_concurrency, 2) == 232.43  # logged for max_model_len 2048


def test_gemma2_two_groups_with_sliding_window_discount(calibration_facts):
    specs = layer_kv(calibration_facts("google__gemma-2-27b-it"), 1, 2)
    page = BLOCK * specs[0].bytes_per_token
    result = kv_capacity(
        specs, [(0, 46)], _available(7335, page, 23), max_model_len=8192, max_num_batched_tokens=8192
    )
    assert (result.num_groups, result.kv_cache_tokens, result.blocks_per_request) == (2, 58672, 512 + 513)
    assert round(result.max_concurrency, 2) == 7.16


def test_gemma3_six_groups(calibration_facts):
    specs = layer_kv(calibration_facts("google__gemma-3-12b-it"), 1, 2)
    page = BLOCK * specs[0].bytes_per_token
    result = kv_capacity(
        specs, [(0, 48)], _available(48867, page, 8), max_model_len=8192, max_num_batched_tokens=8192
    )
    assert (result.num_groups, result.kv_cache_tokens) == (6, 130304)
    assert round(result.max_concurrency, 2) == 15.88


def test_gemma3_27b_pads_to_seven_groups(calibration_facts):
    specs = layer_kv(calibration_facts("google__gemma-3-27b-it"), 1, 2)
    page = BLOCK * specs[0].bytes_per_token
    result = kv_capacity(
        specs, [(0, 62)], _available(32000, page, 10), max_model_len=8192, max_num_batched_tokens=8192
    )
    assert result.num_groups == 7  # 10 full + 52 sliding -> 1 + 6 groups of 10 (8 padding layers)
    assert result.kv_cache_tokens == 32000 // 7 * BLOCK


def test_llama4_chunked_local_groups(calibration_facts):
    specs = layer_kv(calibration_facts("meta-llama__llama-4-scout-17b-16e-instruct"), 4, 2)
    page = BLOCK * specs[0].bytes_per_token
    result = kv_capacity(
        specs, [(0, 48)], _available(91495, page, 12), max_model_len=8192, max_num_batched_tokens=8192
    )
    assert (result.num_groups, result.kv_cache_tokens) == (4, 365968)
    assert round(result.max_concurrency, 2) == 44.68


def test_sliding_layers_hold_only_the_window_when_requests_are_long():
    assert blocks_per_layer("sliding", 1024, 131072, BLOCK, 2048) == 192 + 1
    assert blocks_per_layer("chunked", 8192, 131072, BLOCK, 8192) == 1024
    assert blocks_per_layer("full", None, 131072, BLOCK, 8192) == 8192


def test_pipeline_stages_take_the_minimum_blocks():
    specs = [LayerKV("full", None, 1000)] * 4
    page = BLOCK * 1000
    result = kv_capacity(
        specs,
        [(0, 2), (2, 4)],
        [100 * page * 2, 60 * page * 2],
        max_model_len=160,
        max_num_batched_tokens=8192,
    )
    assert (result.num_blocks, result.limiting_stage, result.kv_cache_tokens) == (60, 1, 960)
    assert result.max_concurrency == 6.0


def test_a_request_that_does_not_fit_reports_the_longest_that_does():
    specs = [LayerKV("full", None, 1000)] * 2
    page = BLOCK * 1000
    result = kv_capacity(specs, [(0, 2)], [10 * page * 2], max_model_len=8192, max_num_batched_tokens=8192)
    assert not result.fits
    assert result.max_fitting_model_len == 160
    assert result.needed_bytes == 512 * page * 2
    empty = kv_capacity(specs, [(0, 2)], [0], max_model_len=8192, max_num_batched_tokens=8192)
    assert (empty.fits, empty.max_fitting_model_len, empty.num_blocks) == (False, 0, 0)
