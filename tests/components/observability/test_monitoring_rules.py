"""components/monitoring_rules.py: PodMonitor spec, recording rules, alerts, durations, validation.

Checks exact expressions and labels, that every expression parses with a real PromQL parser,
that only current vLLM metric names are used, which alerts exist for which kind of model, that
the readiness alerts wait at least one cold start, and that the kube-state-metrics allow-list
holds every pod label the readiness rules read.
"""

from __future__ import annotations

import re

import promql_parser
import pytest

from components.monitoring_rules import (
    GROUP_READY_PODS,
    KSM_POD_LABELS,
    READY_REPLICAS,
    WAITING,
    AlertThresholds,
    MonitoredModel,
    alert_rules,
    alert_texts,
    expressions,
    ksm_label,
    ksm_metric_labels_allowlist,
    model_rule_groups,
    pod_monitor_spec,
    prom_duration,
    recording_rules,
    rule_file,
    validate_models,
)
from settings import MonitoringSettings
from tests.components.observability.observability_helpers import ALPHA, BETA, MODELS, ZED, monitored_models

RUNBOOK = "https://example.com/runbook.md"
DEPRECATED_METRICS = (
    "vllm:gpu_cache_usage_perc",
    "vllm:time_per_output_token_seconds",
    "vllm:gpu_prefix_cache",
)


def _alerts(model: MonitoredModel, thresholds: AlertThresholds | None = None) -> dict[str, dict]:
    return {r["alert"]: r for r in alert_rules(model, thresholds or AlertThresholds(), RUNBOOK)}


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(600, "10m"), (900, "15m"), (5400, "1h30m"), (3600, "1h"), (59, "59s"), (61.2, "1m2s"), (0.4, "1s")],
)
def test_prom_duration_rounds_up_to_whole_seconds(seconds: float, expected: str) -> None:
    assert prom_duration(seconds) == expected


@pytest.mark.parametrize("seconds", [0, -5])
def test_prom_duration_rejects_non_positive(seconds: float) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        prom_duration(seconds)


def test_pod_monitor_scrapes_leaders_of_one_model_on_port_http_and_adds_model_label() -> None:
    assert pod_monitor_spec(BETA) == {
        "selector": {
            "matchLabels": {
                "app.kubernetes.io/name": "vllm",
                "vllm-serving/model": "beta",
                "vllm-serving/role": "leader",
            }
        },
        "namespaceSelector": {"matchNames": ["vllm"]},
        "podMetricsEndpoints": [
            {
                "port": "http",
                "path": "/metrics",
                "interval": "15s",
                "scrapeTimeout": "10s",
                "relabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": ["__meta_kubernetes_pod_label_vllm_serving_model"],
                        "targetLabel": "model",
                    },
                    {
                        "action": "replace",
                        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                        "targetLabel": "node",
                    },
                ],
            }
        ],
    }


def test_ksm_allowlist_exports_every_pod_label_the_rules_read() -> None:
    assert ksm_metric_labels_allowlist() == [
        "pods=[app.kubernetes.io/name,vllm-serving/model,vllm-serving/role,"
        "leaderworkerset.sigs.k8s.io/name,leaderworkerset.sigs.k8s.io/group-index]"
    ]
    text = " ".join(expressions(rule_file(MODELS, AlertThresholds(), RUNBOOK)["groups"]))
    read = set(re.findall(r"\blabel_[a-z0-9_]+\b(?!\()", text))  # label names, not label_replace(
    exported = {ksm_label(label) for label in KSM_POD_LABELS}
    assert read <= exported, f"rules read pod labels kube-state-metrics does not export: {read - exported}"


def test_recording_rules_are_per_model_and_labelled_with_the_model() -> None:
    rules = {r["record"]: r for r in recording_rules(BETA)}
    assert rules[WAITING] == {
        "record": WAITING,
        "expr": 'sum by (namespace, model) (vllm:num_requests_waiting{namespace="vllm",model="beta"})',
        "labels": {"model": "beta"},
    }
    assert rules["model:vllm_time_to_first_token_seconds:p95_5m"]["expr"] == (
        "histogram_quantile(0.95, sum by (namespace, model, le) "
        '(rate(vllm:time_to_first_token_seconds_bucket{namespace="vllm",model="beta"}[5m])))'
    )
    assert rules["model:vllm_inter_token_latency_seconds:p50_5m"]["expr"].startswith(
        "histogram_quantile(0.5, sum by (namespace, model, le) (rate(vllm:inter_token_latency_seconds_bucket{"
    )
    assert rules["model:vllm_generation_tokens:rate5m"]["expr"] == (
        'sum by (namespace, model) (rate(vllm:generation_tokens_total{namespace="vllm",model="beta"}[5m]))'
    )
    assert rules[READY_REPLICAS]["expr"] == (
        'sum by (namespace) (kube_pod_status_ready{condition="true",namespace="vllm"} * on (namespace, pod, uid) '
        'kube_pod_labels{namespace="vllm",label_app_kubernetes_io_name="vllm",label_vllm_serving_model="beta",'
        'label_vllm_serving_role="leader"})'
    )
    assert all(r["labels"] == {"model": "beta"} for r in rules.values())
    assert GROUP_READY_PODS not in rules, "a single-node model has no LeaderWorkerSet groups"


def test_multi_node_model_records_ready_pods_per_group() -> None:
    rules = {r["record"]: r for r in recording_rules(ALPHA)}
    assert rules[GROUP_READY_PODS]["expr"] == (
        'sum by (namespace, group) (label_replace(kube_pod_status_ready{condition="true",namespace="vllm"} '
        "* on (namespace, pod, uid) group_left (label_leaderworkerset_sigs_k8s_io_group_index) "
        'kube_pod_labels{namespace="vllm",label_app_kubernetes_io_name="vllm",label_vllm_serving_model="alpha"}, '
        '"group", "$1", "label_leaderworkerset_sigs_k8s_io_group_index", "(.+)"))'
    )


def test_alert_expressions_use_the_thresholds() -> None:
    alerts = _alerts(BETA, AlertThresholds(kv_cache_ratio=0.85, ttft_slo_seconds=1.5, waiting_requests=12))
    sel = 'namespace="vllm",model="beta"'
    assert alerts["VllmKvCacheHigh"]["expr"] == f"model:vllm_kv_cache_usage_perc:max{{{sel}}} > 0.85"
    assert alerts["VllmKvCacheHigh"]["for"] == "10m"
    assert (
        alerts["VllmTtftSloBreached"]["expr"]
        == f"model:vllm_time_to_first_token_seconds:p95_5m{{{sel}}} > 1.5"
    )
    assert alerts["VllmTtftSloBreached"]["for"] == "10m"
    assert alerts["VllmQueueGrowing"]["expr"] == (
        f"deriv({WAITING}{{{sel}}}[10m]) > 0 and {WAITING}{{{sel}}} > 12"
    )
    assert alerts["VllmPreemptions"]["expr"] == f"model:vllm_num_preemptions:rate5m{{{sel}}} > 0"
    assert alerts["VllmNoReadyReplica"]["expr"] == (
        f"absent({READY_REPLICAS}{{{sel}}}) or {READY_REPLICAS}{{{sel}}} == 0"
    )


def test_which_alerts_each_kind_of_model_gets() -> None:
    common = {"VllmKvCacheHigh", "VllmQueueGrowing", "VllmTtftSloBreached", "VllmPreemptions"}
    assert set(_alerts(ALPHA)) == common | {"VllmNoReadyReplica", "VllmGroupPartlyReady"}
    assert set(_alerts(BETA)) == common | {"VllmNoReadyReplica"}
    assert set(_alerts(ZED)) == common, (
        "a scale-to-zero model has no replica most of the time: no readiness alert"
    )


def test_readiness_alerts_wait_at_least_ten_minutes_and_one_cold_start() -> None:
    assert _alerts(ALPHA)["VllmNoReadyReplica"]["for"] == "15m"  # cold start 900 s
    assert _alerts(ALPHA)["VllmGroupPartlyReady"]["for"] == "15m"
    assert _alerts(BETA)["VllmNoReadyReplica"]["for"] == "10m"  # cold start 600 s
    slow = MonitoredModel("slow", "vllm", cold_start_seconds=1250)
    assert _alerts(slow)["VllmNoReadyReplica"]["for"] == "21m"  # rounded up to whole minutes


def test_every_alert_has_severity_model_and_runbook_annotations() -> None:
    for name, rule in _alerts(ALPHA).items():
        assert rule["labels"]["model"] == "alpha", name
        assert rule["labels"]["severity"] in ("warning", "critical"), name
        assert set(rule["annotations"]) == {"summary", "description", "runbook_url"}, name
        assert rule["annotations"]["runbook_url"] == f"{RUNBOOK}#{name.lower()}"
        assert "{" not in rule["annotations"]["description"], f"{name}: unformatted placeholder"
    assert set(alert_texts()) == set(_alerts(ALPHA)) | {"GpuXidError", "GpuRowRemapFailure"}


def test_every_expression_parses_and_uses_current_vllm_metric_names() -> None:
    groups = rule_file(MODELS, AlertThresholds(), RUNBOOK)["groups"]
    exprs = expressions(groups)
    assert len(exprs) == 12 + 6 + 11 + 5 + 11 + 4 + 2
    for expr in exprs:
        promql_parser.parse(expr)
        for old in DEPRECATED_METRICS:
            assert old not in expr, f"deprecated metric {old} in {expr}"
    text = " ".join(exprs)
    assert "vllm:kv_cache_usage_perc" in text and "vllm:inter_token_latency_seconds_bucket" in text


def test_rule_groups_are_sorted_by_model_and_end_with_gpu_alerts() -> None:
    names = [g["name"] for g in rule_file([ZED, ALPHA, BETA], AlertThresholds(), RUNBOOK)["groups"]]
    assert names == [
        "vllm-alpha.rules",
        "vllm-alpha.alerts",
        "vllm-beta.rules",
        "vllm-beta.alerts",
        "vllm-zed.rules",
        "vllm-zed.alerts",
        "vllm-serving-gpu.alerts",
    ]
    assert model_rule_groups(BETA, AlertThresholds(), RUNBOOK)[0]["rules"] == recording_rules(BETA)


def test_thresholds_come_from_monitoring_settings() -> None:
    settings = MonitoringSettings(ttft_slo_seconds=1.5, kv_cache_alert_ratio=0.8)
    assert AlertThresholds.from_settings(settings, 7) == AlertThresholds(0.8, 1.5, 7)


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ([BETA, BETA], "model 'beta' is listed more than once"),
        ([MonitoredModel("x", "vllm", group_size=0)], "model 'x': group_size must be at least 1 \\(got 0\\)"),
        ([MonitoredModel("x", "vllm", min_replicas=-1)], "model 'x': min_replicas must be 0 or more"),
        (
            [MonitoredModel("x", "vllm", cold_start_seconds=0)],
            "model 'x': cold_start_seconds must be positive",
        ),
    ],
)
def test_validate_models_names_the_problem(models: list[MonitoredModel], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_models(models)


def test_from_served_takes_group_size_and_min_replicas_from_the_plan() -> None:
    prod = {m.name: m for m in monitored_models("prod")}
    assert (prod["llama-405b"].group_size, prod["llama-405b"].min_replicas) == (2, 1)
    assert prod["llama-405b"].multi_node and not prod["qwen-32b"].multi_node
    assert prod["llama-405b"].selector == 'namespace="vllm",model="llama-405b"'
    assert [m.group_size for m in monitored_models("onprem")] == [1]
