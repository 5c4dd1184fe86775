"""The rules and the KEDA trigger query, run by Prometheus itself (`promtool`).

The rule file is the one the PrometheusRule objects PrometheusStack registers hold (the first
test checks the graph's groups equal `rule_file`, then runs promtool on them), for three models: `alpha` (2-node LeaderWorkerSet groups, 15-minute
cold start), `beta` (single node) and `zed` (scale to zero). Then:
- `promtool check rules` accepts it;
- `promtool test rules` feeds synthetic series and shows every alert firing for the model that
  misbehaves, staying silent for the model that does not, and staying silent while pending;
- the exact query each recorded ScaledObject sends returns that model's waiting requests only.
promtool missing is a failure (run .ci/install-promtool), never a skip.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from components.monitoring_rules import RUNBOOK_PATH, AlertThresholds, rule_file
from offline.recorder import Graph
from tests.components.observability.observability_helpers import (
    MODELS,
    autoscaling,
    prometheus_stack,
    record,
    run_promtool,
    write_yaml,
)

NS = "vllm"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"


def _rule_groups(graph: Graph) -> list[dict[str, Any]]:
    # Per-model rules in model order, the GPU rules last (as rule_file orders them).
    rules = sorted(
        graph.by_type(RULE),
        key=lambda r: (
            r.inputs["metadata"].get("labels", {}).get("vllm-serving/model") is None,
            r.inputs["metadata"]["name"],
        ),
    )
    return [group for r in rules for group in r.inputs["spec"]["groups"]]


def _rule(groups: list[dict[str, Any]], alert: str, model: str | None = None) -> dict[str, Any]:
    return next(
        r
        for g in groups
        for r in g["rules"]
        if r.get("alert") == alert and (model is None or r["labels"].get("model") == model)
    )


def _expected(
    groups: list[dict[str, Any]], alert: str, model: str | None, labels: dict[str, str], value: str = ""
) -> dict[str, Any]:
    """An expected alert: rule labels + series labels, annotations rendered like Prometheus does."""
    rule = _rule(groups, alert, model)
    all_labels = {**labels, **rule["labels"]}

    def render(text: str) -> str:
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: all_labels[m.group(1)], text)
        return text.replace("{{ $value }}", value)

    return {
        "exp_labels": all_labels,
        "exp_annotations": {k: render(v) for k, v in rule["annotations"].items()},
    }


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def _vllm(model: str, pod: str) -> dict[str, str]:
    return {"namespace": NS, "model": model, "pod": pod, "model_name": f"org/{model}", "engine": "0"}


def _pod(model: str, pod: str, role: str, group: str, ready: str) -> list[dict[str, str]]:
    identity = {"namespace": NS, "pod": pod, "uid": f"uid-{pod}"}
    labels = identity | {
        "label_app_kubernetes_io_name": "vllm",
        "label_vllm_serving_model": model,
        "label_vllm_serving_role": role,
        "label_leaderworkerset_sigs_k8s_io_group_index": group,
    }
    return [
        _series("kube_pod_status_ready", identity | {"condition": "true"}, ready),
        _series("kube_pod_labels", labels, "1+0x40"),
    ]


def _alert_case(name: str, series: list[dict[str, str]], checks: list[tuple[str, str, list[dict]]]) -> dict:
    return {
        "name": name,
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [{"eval_time": t, "alertname": a, "exp_alerts": exp} for t, a, exp in checks],
    }


def _histogram(model: str, counts_per_minute: dict[str, int]) -> list[dict[str, str]]:
    return [
        _series(
            "vllm:time_to_first_token_seconds_bucket",
            _vllm(model, f"{model}-vllm-0") | {"le": le},
            f"0+{n}x40",
        )
        for le, n in counts_per_minute.items()
    ]


def _alert_cases(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ab = {"namespace": NS}

    def fired(alert: str, model: str, extra: dict[str, str] | None = None) -> list[dict]:
        return [_expected(groups, alert, model, ab | {"model": model} | (extra or {}))]

    def gpu(alert: str, value: str) -> list[dict]:
        labels = {"Hostname": "gpu-node-a", "gpu": "0", "UUID": "GPU-0a1b"}
        return [_expected(groups, alert, None, labels, value)]

    dcgm_a = {"Hostname": "gpu-node-a", "gpu": "0", "UUID": "GPU-0a1b", "modelName": "NVIDIA H100 80GB HBM3"}
    dcgm_b = dcgm_a | {"Hostname": "gpu-node-b", "UUID": "GPU-9f8e"}
    return [
        _alert_case(
            "KV cache above the ratio for 10 minutes: alpha fires, beta (50%) stays silent",
            [
                _series("vllm:kv_cache_usage_perc", _vllm("alpha", "alpha-vllm-0"), "0.95+0x40"),
                _series("vllm:kv_cache_usage_perc", _vllm("beta", "beta-vllm-x"), "0.5+0x40"),
            ],
            [("5m", "VllmKvCacheHigh", []), ("15m", "VllmKvCacheHigh", fired("VllmKvCacheHigh", "alpha"))],
        ),
        _alert_case(
            "queue above threshold and growing: alpha fires; beta's high but flat queue does not",
            [
                _series("vllm:num_requests_waiting", _vllm("alpha", "alpha-vllm-0"), "0+2x40"),
                _series("vllm:num_requests_waiting", _vllm("beta", "beta-vllm-x"), "50+0x40"),
            ],
            [("8m", "VllmQueueGrowing", []), ("15m", "VllmQueueGrowing", fired("VllmQueueGrowing", "alpha"))],
        ),
        _alert_case(
            "TTFT p95 above the SLO: alpha (2.5-5 s) fires, beta (< 0.5 s) stays silent",
            _histogram("alpha", {"0.5": 0, "1": 0, "2.5": 0, "5": 10, "+Inf": 10})
            + _histogram("beta", {"0.5": 10, "1": 10, "2.5": 10, "5": 10, "+Inf": 10}),
            [
                ("5m", "VllmTtftSloBreached", []),
                ("15m", "VllmTtftSloBreached", fired("VllmTtftSloBreached", "alpha")),
            ],
        ),
        _alert_case(
            "preemptions rising: alpha fires, beta's constant counter does not",
            [
                _series("vllm:num_preemptions_total", _vllm("alpha", "alpha-vllm-0"), "0+5x40"),
                _series("vllm:num_preemptions_total", _vllm("beta", "beta-vllm-x"), "3+0x40"),
            ],
            [("5m", "VllmPreemptions", []), ("15m", "VllmPreemptions", fired("VllmPreemptions", "alpha"))],
        ),
        _alert_case(
            "no ready leader: alpha fires after its 15-minute cold start, beta is ready, zed may be at zero",
            _pod("alpha", "alpha-vllm-0", "leader", "0", "0+0x40")
            + _pod("alpha", "alpha-vllm-0-1", "worker", "0", "1+0x40")
            + _pod("beta", "beta-vllm-x", "leader", "0", "1+0x40"),
            [
                ("14m", "VllmNoReadyReplica", []),
                ("16m", "VllmNoReadyReplica", fired("VllmNoReadyReplica", "alpha")),
            ],
        ),
        _alert_case(
            "no pod at all: alpha fires through absent(), zed (scale to zero) has no such alert",
            _pod("beta", "beta-vllm-x", "leader", "0", "1+0x40"),
            [("16m", "VllmNoReadyReplica", fired("VllmNoReadyReplica", "alpha"))],
        ),
        _alert_case(
            "group 0 of alpha has a worker not ready: that group fires, group 1 and the leaders do not",
            _pod("alpha", "alpha-vllm-0", "leader", "0", "1+0x40")
            + _pod("alpha", "alpha-vllm-0-1", "worker", "0", "0+0x40")
            + _pod("alpha", "alpha-vllm-1", "leader", "1", "1+0x40")
            + _pod("alpha", "alpha-vllm-1-1", "worker", "1", "1+0x40")
            + _pod("beta", "beta-vllm-x", "leader", "0", "1+0x40"),
            [
                ("14m", "VllmGroupPartlyReady", []),
                ("16m", "VllmGroupPartlyReady", fired("VllmGroupPartlyReady", "alpha", {"group": "0"})),
                ("16m", "VllmNoReadyReplica", []),
            ],
        ),
        _alert_case(
            "XID error on node a fires at once; node b has none",
            [
                _series("DCGM_FI_DEV_XID_ERRORS", dcgm_a, "0+0x5 79+0x10"),
                _series("DCGM_FI_DEV_XID_ERRORS", dcgm_b, "0+0x15"),
            ],
            [("3m", "GpuXidError", []), ("8m", "GpuXidError", gpu("GpuXidError", "79"))],
        ),
        _alert_case(
            "row remap failure on node a fires; node b is healthy",
            [
                _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", dcgm_a, "0+0x5 1+0x10"),
                _series("DCGM_FI_DEV_ROW_REMAP_FAILURE", dcgm_b, "0+0x15"),
            ],
            [("3m", "GpuRowRemapFailure", []), ("8m", "GpuRowRemapFailure", gpu("GpuRowRemapFailure", "1"))],
        ),
    ]


def _write_rules(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The rule file as PrometheusStack renders it for MODELS (equal to the graph's, see below)."""
    groups = rule_file(MODELS, AlertThresholds(), RUNBOOK_PATH)["groups"]
    return write_yaml(tmp_path / "rules.yaml", {"groups": groups}), groups


def _test_rules(tmp_path: Path, rules: Path, tests: list[dict[str, Any]]) -> None:
    test_file = write_yaml(
        tmp_path / "tests.yaml", {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": tests}
    )
    result = run_promtool("test", "rules", test_file)
    assert result.returncode == 0, f"promtool test rules failed:\n{result.stdout}\n{result.stderr}"


def test_promtool_accepts_the_rules_the_graph_holds(tmp_path: Path) -> None:
    groups = _rule_groups(record(prometheus_stack))
    assert groups == rule_file(MODELS, AlertThresholds(), RUNBOOK_PATH)["groups"]
    rules = write_yaml(tmp_path / "rules.yaml", {"groups": groups})
    result = run_promtool("check", "rules", rules)
    assert result.returncode == 0, f"promtool check rules failed:\n{result.stdout}\n{result.stderr}"
    count = sum(len(g["rules"]) for g in groups)
    assert f"SUCCESS: {count} rules found" in result.stdout


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    broken = write_yaml(
        tmp_path / "broken.yaml", {"groups": [{"name": "x", "rules": [{"alert": "X", "expr": "sum("}]}]}
    )
    assert run_promtool("check", "rules", broken).returncode != 0


@pytest.mark.parametrize("case", range(9))
def test_each_alert_fires_when_it_should_and_stays_silent_otherwise(tmp_path: Path, case: int) -> None:
    rules, groups = _write_rules(tmp_path)
    _test_rules(tmp_path, rules, [_alert_cases(groups)[case]])


def test_alert_test_can_fail(tmp_path: Path) -> None:
    rules, groups = _write_rules(tmp_path)
    wrong = _alert_cases(groups)[0]
    wrong["alert_rule_test"][1]["exp_alerts"] = []  # claim alpha's KV-cache alert stays silent
    test_file = write_yaml(tmp_path / "tests.yaml", {"rule_files": [rules.name], "tests": [wrong]})
    assert run_promtool("test", "rules", test_file).returncode != 0


def test_recording_rules_aggregate_per_model(tmp_path: Path) -> None:
    rules, _ = _write_rules(tmp_path)
    series = [
        _series("vllm:num_requests_waiting", _vllm("alpha", "alpha-vllm-0"), "3+0x10"),
        _series("vllm:num_requests_waiting", _vllm("alpha", "alpha-vllm-1"), "4+0x10"),
        _series("vllm:num_requests_waiting", _vllm("beta", "beta-vllm-x"), "5+0x10"),
        _series("vllm:generation_tokens_total", _vllm("beta", "beta-vllm-x"), "0+600x10"),
    ]
    test = {
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [
            {
                "expr": 'model:vllm_num_requests_waiting:sum{model="alpha"}',
                "eval_time": "5m",
                "exp_samples": [
                    {
                        "labels": 'model:vllm_num_requests_waiting:sum{model="alpha",namespace="vllm"}',
                        "value": 7,
                    }
                ],
            },
            {
                "expr": 'model:vllm_generation_tokens:rate5m{model="beta"}',
                "eval_time": "8m",
                "exp_samples": [
                    {
                        "labels": 'model:vllm_generation_tokens:rate5m{model="beta",namespace="vllm"}',
                        "value": 10,
                    }
                ],
            },
        ],
    }
    _test_rules(tmp_path, rules, [test])


def test_the_exact_keda_query_returns_each_models_waiting_requests(tmp_path: Path) -> None:
    graph = record(autoscaling)
    queries = {
        r.inputs["metadata"]["labels"]["vllm-serving/model"]: r.inputs["spec"]["triggers"][0]["metadata"][
            "query"
        ]
        for r in graph.by_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    }
    assert sorted(queries) == ["alpha", "beta"]
    series = [
        _series("vllm:num_requests_waiting", _vllm("alpha", "alpha-vllm-0"), "3+0x10"),
        _series("vllm:num_requests_waiting", _vllm("alpha", "alpha-vllm-1"), "4+0x10"),
        _series("vllm:num_requests_waiting", _vllm("beta", "beta-vllm-x"), "5+0x10"),
        # The same model name in another namespace belongs to someone else.
        _series(
            "vllm:num_requests_waiting", _vllm("alpha", "alpha-vllm-0") | {"namespace": "other"}, "100+0x10"
        ),
    ]
    expected = {"alpha": 7, "beta": 5}
    test = {
        "interval": "1m",
        "input_series": series,
        "promql_expr_test": [
            {"expr": query, "eval_time": "5m", "exp_samples": [{"labels": "{}", "value": expected[model]}]}
            for model, query in sorted(queries.items())
        ],
    }
    rules = write_yaml(tmp_path / "empty.yaml", {"groups": []})
    _test_rules(tmp_path, rules, [test])
