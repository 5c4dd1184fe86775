"""Accuracy of the memory model against recorded vLLM start-ups.

Owns reading a calibration table (tab-separated: run settings, the facts file of the model, and what
vLLM logged), predicting every run from its settings and facts only, and the error summary. The
table's location is a parameter; the project's recorded runs live in ../shared/calibration.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from capacity.memory import MemoryEstimate, estimate_memory
from capacity.model_facts import load_model_facts

TABLE = "vllm-0.19.0-h100.tsv"


@dataclass(frozen=True)
class CalibrationRun:
    """One recorded start-up: the inputs and the two numbers vLLM logged."""

    run_id: str
    model_id: str
    facts_file: Path
    gpu: str
    gpu_memory_gib: float
    tensor_parallel_size: int
    pipeline_parallel_size: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_batched_tokens: int
    dtype: str
    quantization: str | None
    kv_cache_dtype: str
    vllm_version: str
    logged_kv_cache_tokens: int
    logged_max_concurrency: float


@dataclass(frozen=True)
class CalibrationResult:
    run: CalibrationRun
    estimate: MemoryEstimate

    @property
    def tokens_error_pct(self) -> float:
        logged = self.run.logged_kv_cache_tokens
        return (self.estimate.kv_cache_tokens - logged) / logged * 100

    @property
    def concurrency_error_pct(self) -> float:
        logged = self.run.logged_max_concurrency
        return (self.estimate.max_concurrency - logged) / logged * 100


@dataclass(frozen=True)
class Summary:
    runs: int
    tokens_mae_pct: float
    concurrency_mae_pct: float
    tokens_max_pct: float
    concurrency_max_pct: float


def load_runs(calibration_dir: Path, table: str = TABLE) -> list[CalibrationRun]:
    """The runs of ``calibration_dir/table``; facts paths are resolved against the directory."""
    with (calibration_dir / table).open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [
        CalibrationRun(
            run_id=row["id"],
            model_id=row["model_id"],
            facts_file=calibration_dir / row["facts_file"],
            gpu=row["gpu"],
            gpu_memory_gib=float(row["gpu_memory_gib"]),
            tensor_parallel_size=int(row["tensor_parallel_size"]),
            pipeline_parallel_size=int(row["pipeline_parallel_size"]),
            gpu_memory_utilization=float(row["gpu_memory_utilization"]),
            max_model_len=int(row["max_model_len"]),
            max_num_batched_tokens=int(row["max_num_batched_tokens"]),
            dtype=row["dtype"],
            quantization=None if row["quantization"] in ("", "None") else row["quantization"],
            kv_cache_dtype=row["kv_cache_dtype"],
            vllm_version=row["vllm_version"],
            logged_kv_cache_tokens=int(row["kv_cache_tokens"]),
            logged_max_concurrency=float(row["max_concurrency"]),
        )
        for row in rows
    ]


def predict(run: CalibrationRun) -> MemoryEstimate:
    """The planner's prediction for one run, from its settings and model facts only."""
    return estimate_memory(
        load_model_facts(run.facts_file),
        gpu_memory_gib=run.gpu_memory_gib,
        tensor_parallel_size=run.tensor_parallel_size,
        pipeline_parallel_size=run.pipeline_parallel_size,
        max_model_len=run.max_model_len,
        gpu_memory_utilization=run.gpu_memory_utilization,
        dtype=run.dtype,
        kv_cache_dtype=run.kv_cache_dtype,
        quantization=run.quantization,
        max_num_batched_tokens=run.max_num_batched_tokens,
        vllm_version=run.vllm_version,
        gpu_name=run.gpu,
    )


def evaluate(calibration_dir: Path, table: str = TABLE) -> list[CalibrationResult]:
    return [CalibrationResult(run, predict(run)) for run in load_runs(calibration_dir, table)]


def summarize(results: list[CalibrationResult]) -> Summary:
    tokens = [abs(r.tokens_error_pct) for r in results]
    concurrency = [abs(r.concurrency_error_pct) for r in results]
    return Summary(
        runs=len(results),
        tokens_mae_pct=sum(tokens) / len(tokens),
        concurrency_mae_pct=sum(concurrency) / len(concurrency),
        tokens_max_pct=max(tokens),
        concurrency_max_pct=max(concurrency),
    )


def format_table(results: list[CalibrationResult]) -> str:
    """Markdown table: per run, predicted vs logged tokens and concurrency with % error, then the means."""
    lines = [
        "| run | model | TP | PP | dtype / quant / KV | len | predicted tokens | logged tokens | err % "
        "| predicted conc. | logged conc. | err % |",
        "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        run = r.run
        settings = f"{run.dtype} / {run.quantization or '-'} / {run.kv_cache_dtype}"
        lines.append(
            f"| {run.run_id} | {run.model_id} | {run.tensor_parallel_size} | {run.pipeline_parallel_size} "
            f"| {settings} | {run.max_model_len} | {r.estimate.kv_cache_tokens:,} "
            f"| {run.logged_kv_cache_tokens:,} | {r.tokens_error_pct:+.2f} "
            f"| {r.estimate.max_concurrency:.2f} | {run.logged_max_concurrency:.2f} "
            f"| {r.concurrency_error_pct:+.2f} |"
        )
    s = summarize(results)
    lines += [
        "",
        f"{s.runs} runs. Mean absolute error: KV-cache tokens {s.tokens_mae_pct:.2f}%, max concurrency "
        f"{s.concurrency_mae_pct:.2f}%. Worst run: tokens {s.tokens_max_pct:.2f}%, "
        f"concurrency {s.concurrency_max_pct:.2f}%.",
    ]
    return "\n".join(lines)
