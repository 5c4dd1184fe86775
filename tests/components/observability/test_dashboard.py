"""components/dashboard.py: the generated vLLM Grafana dashboard.

Checks that every panel query parses as PromQL once Grafana has interpolated its variables,
that the dashboard covers throughput, latency percentiles, queue, KV cache and GPU utilisation
and memory, that the `model` variable filters every vLLM query, that panels do not overlap and
have unique ids, that the thresholds drawn come from settings, and that the ConfigMap payload
is byte-for-byte deterministic.
"""

from __future__ import annotations

import json

import promql_parser

from components.dashboard import (
    DASHBOARD_FILE,
    DASHBOARD_UID,
    build_dashboard,
    dashboard_config_map_data,
    panel_expressions,
)

# What Grafana substitutes before it sends a query (an "All" selection of `model` is `.*`).
GRAFANA_INTERPOLATION = {"$__rate_interval": "1m", "$model": ".*"}


def _interpolate(expr: str) -> str:
    for variable, value in GRAFANA_INTERPOLATION.items():
        expr = expr.replace(variable, value)
    return expr


def test_every_panel_query_parses_after_interpolation() -> None:
    exprs = panel_expressions(build_dashboard(2.0, 0.9))
    assert len(exprs) == 20
    for expr in exprs:
        assert "$" not in _interpolate(expr), f"unknown Grafana variable in {expr}"
        promql_parser.parse(_interpolate(expr))


def test_dashboard_covers_throughput_latency_queue_kv_cache_and_gpus() -> None:
    text = " ".join(panel_expressions(build_dashboard(2.0, 0.9)))
    for metric in (
        "vllm:generation_tokens_total",
        "vllm:prompt_tokens_total",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
        "vllm:num_requests_waiting",
        "vllm:num_requests_running",
        "vllm:kv_cache_usage_perc",
        "vllm:num_preemptions_total",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
    ):
        assert metric in text, f"dashboard has no panel on {metric}"
    for deprecated in ("vllm:gpu_cache_usage_perc", "vllm:time_per_output_token_seconds"):
        assert deprecated not in text


def test_model_variable_filters_every_vllm_query() -> None:
    dashboard = build_dashboard(2.0, 0.9)
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["model"]["query"]["query"] == "label_values(vllm:num_requests_running, model)"
    assert variables["model"]["includeAll"] and variables["model"]["multi"]
    assert variables["datasource"]["query"] == "prometheus"
    for expr in panel_expressions(dashboard):
        if "vllm" in expr:
            assert 'model=~"$model"' in expr, f"query ignores the model variable: {expr}"


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    panels = build_dashboard(2.0, 0.9)["panels"]
    assert [p["id"] for p in panels] == list(range(1, len(panels) + 1))
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                assert (x, y) not in cells, f"panel {panel['title']!r} overlaps another"
                cells.add((x, y))
    assert [p["title"] for p in panels if p["type"] == "row"] == [
        "Throughput",
        "Latency",
        "Queue and replicas",
        "KV cache",
        "GPUs",
    ]


def test_thresholds_drawn_come_from_settings() -> None:
    panels = {p["title"]: p for p in build_dashboard(1.5, 0.8)["panels"]}
    ttft = panels["Time to first token"]["fieldConfig"]["defaults"]["thresholds"]["steps"]
    kv = panels["KV-cache usage"]["fieldConfig"]["defaults"]["thresholds"]["steps"]
    assert ttft[1] == {"color": "red", "value": 1.5}
    assert kv[1] == {"color": "red", "value": 0.8}


def test_config_map_payload_is_deterministic_json() -> None:
    first = dashboard_config_map_data(2.0, 0.9)
    assert first == dashboard_config_map_data(2.0, 0.9)
    assert list(first) == [DASHBOARD_FILE]
    dashboard = json.loads(first[DASHBOARD_FILE])
    assert dashboard["uid"] == DASHBOARD_UID
    assert dashboard["panels"][1]["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
