"""The command line: ``python -m capacity estimate | plan | lock``.

Exit 0 with the documented JSON keys; exit 2 with exactly one line on stderr for usage errors
and planning errors; ``lock`` through an injected fetch function.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from capacity.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def _run(capsys, *argv: str, **kwargs) -> tuple[int, str, str]:
    code = main(list(argv), **kwargs)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_estimate_json_has_the_memory_breakdown(capsys, calibration_dir):
    code, out, err = _run(
        capsys,
        "estimate",
        "--model-facts", str(calibration_dir / "models" / "meta-llama__llama-3.1-8b-instruct.json"),
        "--gpu-memory-gib", "79.19",
        "--tensor-parallel-size", "1",
        "--pipeline-parallel-size", "1",
        "--max-model-len", "8192",
        "--gpu-memory-utilization", "0.95",
        "--max-num-batched-tokens", "8192",
        "--vllm-version", "0.19.0",
        "--json",
    )  # fmt: skip
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert {
        "kv_cache_tokens",
        "max_concurrency",
        "weights_gib",
        "activation_gib",
        "non_torch_gib",
        "kv_cache_gib",
    } <= set(data)
    assert (data["kv_cache_tokens"], data["max_concurrency"]) == (
        475888,
        58.0918,
    )  # logged: 476,016 and 58.11x


def test_estimate_text_prints_the_two_log_lines(capsys):
    code, out, _ = _run(
        capsys,
        "estimate",
        "--model",
        "Qwen/Qwen3-8B",
        "--gpu-memory-gib",
        "79.19",
        "--max-model-len",
        "40960",
    )
    assert code == 0
    assert "GPU KV cache size: " in out and "Maximum concurrency for 40,960 tokens per request: " in out


def test_plan_json_and_text(capsys):
    code, out, _ = _run(
        capsys, "plan", "meta-llama/Llama-3.1-405B-Instruct", "--instance-type", "p5.48xlarge",
        "--max-model-len", "8192", "--concurrency", "32", "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert (data["model"]["tensorParallelSize"], data["model"]["pipelineParallelSize"]) == (8, 2)
    assert data["storage"]["kind"] == "fsx-lustre"
    code, out, _ = _run(
        capsys, "plan", "Qwen/Qwen3-8B", "--gpu-model", "L40S", "--gpus-per-node", "4",
        "--max-model-len", "8192", "--concurrency", "4",
    )  # fmt: skip
    assert code == 0
    assert out.startswith(
        "Plan for Qwen/Qwen3-8B on existing L40S nodes (4x L40S)\n  max model len 8,192 tokens, target 4 concurrent "
        "requests\n\nLayout\n"
    )
    assert "Why" in out


def test_plan_accepts_a_facts_file(capsys, calibration_dir):
    facts = calibration_dir / "models" / "google__gemma-3-27b-it.json"
    code, out, _ = _run(
        capsys, "plan", str(facts), "--instance-type", "g6e.48xlarge", "--max-model-len", "8192", "--concurrency", "8",
        "--json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(out)["model"]["modelId"] == "google/gemma-3-27b-it"


def test_errors_are_one_line_with_exit_2(capsys):
    code, out, err = _run(
        capsys,
        "plan",
        "Qwen/Qwen3-8B",
        "--instance-type",
        "p9.xlarge",
        "--max-model-len",
        "8192",
        "--concurrency",
        "1",
    )
    assert (code, out) == (2, "")
    assert err.startswith("error: unknown instance type 'p9.xlarge'; known GPU instance types:")
    assert err.count("\n") == 1
    code, _, err = _run(
        capsys, "plan", "meta-llama/Llama-3.1-70B-Instruct", "--instance-type", "p5.48xlarge",
        "--max-model-len", "8192", "--concurrency", "1", "--tensor-parallel-size", "3",
    )  # fmt: skip
    assert code == 2
    assert err == (
        "error: tensorParallelSize 3 does not divide the 64 attention heads of meta-llama/Llama-3.1-70B-Instruct; "
        "use 1, 2, 4 or 8\n"
    )


def test_usage_errors_are_one_line_with_exit_2(capsys):
    try:
        main(["plan", "Qwen/Qwen3-8B", "--instance-type", "p5.48xlarge"])
    except SystemExit as exit_:
        assert exit_.code == 2
    err = capsys.readouterr().err
    assert err == "error: the following arguments are required: --concurrency, --max-model-len\n"


def test_lock_writes_a_facts_file_through_the_fetch_seam(capsys, tmp_path, monkeypatch, fake_hub):
    monkeypatch.setenv("MY_HUB_TOKEN", "hf_secret")
    out_file = tmp_path / "llama.json"
    hub = fake_hub
    code, out, err = _run(
        capsys, "lock", "meta-llama/Llama-3.1-8B-Instruct", "--token-env", "MY_HUB_TOKEN", "--out", str(out_file),
        fetch=hub,
    )  # fmt: skip
    assert (code, out) == (0, "")
    assert err == f"wrote {out_file} (meta-llama/Llama-3.1-8B-Instruct at {hub.commit})\n"
    assert json.loads(out_file.read_text())["revision"] == hub.commit
    assert hub.calls[0][1]["Authorization"] == "Bearer hf_secret"


def test_module_entry_point_runs_as_a_subprocess():
    result = subprocess.run(
        [sys.executable, "-m", "capacity", "plan", "acme/unknown", "--instance-type", "p5.48xlarge",
         "--max-model-len", "8192", "--concurrency", "1"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: model 'acme/unknown' is not in the built-in catalog")
    assert "Traceback" not in result.stderr
