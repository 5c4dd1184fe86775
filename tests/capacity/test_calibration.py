"""Accuracy on every recorded vLLM v0.19.0 H100 start-up in ../shared/calibration.

Predictions use only the run settings and the model facts. Required: mean absolute error at most
3% on KV-cache tokens and on max concurrency, and no run worse than 10%. A few runs are pinned
exactly, one per attention layout.
"""

from __future__ import annotations

import pytest

from capacity.calibration import evaluate, format_table, load_runs, summarize

MAE_LIMIT_PCT = 3.0
ROW_LIMIT_PCT = 10.0


@pytest.fixture
def results(calibration_dir):
    return evaluate(calibration_dir)


def test_every_run_is_evaluated(results, calibration_dir):
    assert len(results) == len(load_runs(calibration_dir)) == 37


def test_mean_absolute_errors_are_within_three_percent(results):
    summary = summarize(results)
    assert summary.tokens_mae_pct <= MAE_LIMIT_PCT
    assert summary.concurrency_mae_pct <= MAE_LIMIT_PCT


def test_no_run_is_off_by_more_than_ten_percent(results):
    worst = {r.run.run_id: (round(r.tokens_error_pct, 2), round(r.concurrency_error_pct, 2)) for r in results}
    assert all(abs(t) <= ROW_LIMIT_PCT and abs(c) <= ROW_LIMIT_PCT for t, c in worst.values()), worst


@pytest.mark.parametrize(
    ("run_id", "tokens", "concurrency"),
    [
        ("llmd-00", 126256, 15.41),  # MHA, forward-dominated activation
        ("llmd-01", 1507440, 184.01),  # MLA
        ("llmd-05", 58480, 7.13),  # sliding window 1:1
        ("llmd-30", 366656, 44.76),  # chunked local, TP 4, MoE
        ("llmd-16", 951792, 116.19),  # fp8 KV cache
        ("llmd-24", 1075488, 131.29),  # PP 2
    ],
)
def test_pinned_predictions(results, run_id, tokens, concurrency):
    result = next(r for r in results if r.run.run_id == run_id)
    assert (result.estimate.kv_cache_tokens, round(result.estimate.max_concurrency, 2)) == (
        tokens,
        concurrency,
    )


def test_table_ends_with_the_mean_errors(results):
    table = format_table(results)
    assert table.startswith("| run | model | TP | PP |")
    assert "37 runs. Mean absolute error: KV-cache tokens 0.11%, max concurrency 0.11%." in table
