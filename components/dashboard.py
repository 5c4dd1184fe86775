"""The vLLM Grafana dashboard of this project, generated as data: pure, no Pulumi.

Owns the dashboard JSON (per-model throughput, latency percentiles, queue and ready replicas,
KV cache and preemptions, GPU utilisation and memory from the DCGM exporter), its template
variables (`datasource`, `model`) and the ConfigMap payload the Grafana sidecar loads (label
`grafana_dashboard: "1"`). Panel queries use vLLM's current metric names (facts doc section 5.1)
and Grafana's `$__rate_interval`; the `model` label is the one the PodMonitor adds.
"""

from __future__ import annotations

import json
from typing import Any

from components.monitoring_rules import READY_REPLICAS

DASHBOARD_UID = "vllm-serving-overview"
DASHBOARD_FILE = "vllm-serving.json"
SIDECAR_LABEL = {"grafana_dashboard": "1"}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
MODEL = 'model=~"$model"'
RATE = "[$__rate_interval]"
SCHEMA_VERSION = 39  # Grafana 10.4+ (the vLLM dashboards' minimum, facts doc section 5.2)

PREFIX_HITS = "vllm:prefix_cache_hits_total"
PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
FB_USED_SHARE = "DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)"

PANEL_WIDTH = 12
PANEL_HEIGHT = 8


def _quantile(q: float, histogram: str) -> str:
    return f"histogram_quantile({q}, sum by (model, le) (rate({histogram}_bucket{{{MODEL}}}{RATE})))"


def _quantiles(histogram: str, *quantiles: float) -> list[tuple[str, str]]:
    """One target per quantile of a latency histogram, legend `p95 <model>`."""
    return [(_quantile(q, histogram), f"p{round(q * 100)} {{{{model}}}}") for q in quantiles]


def _rate(counter: str, by: str = "model") -> str:
    return f"sum by ({by}) (rate({counter}{{{MODEL}}}{RATE}))"


def _panel(
    title: str,
    description: str,
    targets: list[tuple[str, str]],
    unit: str,
    *,
    max_value: float | None = None,
    threshold: float | None = None,
) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit, "min": 0}
    if max_value is not None:
        defaults["max"] = max_value
    if threshold is not None:
        defaults["thresholds"] = {
            "mode": "absolute",
            "steps": [{"color": "green", "value": None}, {"color": "red", "value": threshold}],
        }
        defaults["custom"] = {"thresholdsStyle": {"mode": "line"}}
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}, "tooltip": {"mode": "multi"}},
        "targets": [
            {"refId": chr(ord("A") + i), "datasource": DATASOURCE, "expr": expr, "legendFormat": legend}
            for i, (expr, legend) in enumerate(targets)
        ],
    }


def _rows(ttft_slo_seconds: float, kv_cache_alert_ratio: float) -> list[tuple[str, list[dict[str, Any]]]]:
    return [
        (
            "Throughput",
            [
                _panel(
                    "Generated tokens / s",
                    "Output tokens per second, summed over the model's replicas.",
                    [(_rate("vllm:generation_tokens_total"), "{{model}}")],
                    "short",
                ),
                _panel(
                    "Prompt tokens / s",
                    "Prefill (input) tokens per second.",
                    [(_rate("vllm:prompt_tokens_total"), "{{model}}")],
                    "short",
                ),
                _panel(
                    "Finished requests / s",
                    "Requests finished per second, by finish reason (stop, length, abort).",
                    [
                        (
                            _rate("vllm:request_success_total", "model, finished_reason"),
                            "{{model}} {{finished_reason}}",
                        )
                    ],
                    "reqps",
                ),
            ],
        ),
        (
            "Latency",
            [
                _panel(
                    "Time to first token",
                    "TTFT percentiles; the red line is the alerting SLO (monitoring.ttftSloSeconds) on p95.",
                    _quantiles("vllm:time_to_first_token_seconds", 0.5, 0.95, 0.99),
                    "s",
                    threshold=ttft_slo_seconds,
                ),
                _panel(
                    "Inter-token latency",
                    "Time between two output tokens of one request.",
                    _quantiles("vllm:inter_token_latency_seconds", 0.5, 0.95),
                    "s",
                ),
                _panel(
                    "End-to-end request latency",
                    "Whole request, queue included.",
                    _quantiles("vllm:e2e_request_latency_seconds", 0.5, 0.95),
                    "s",
                ),
                _panel(
                    "Queue time",
                    "Time requests spend waiting before they are scheduled.",
                    _quantiles("vllm:request_queue_time_seconds", 0.95),
                    "s",
                ),
            ],
        ),
        (
            "Queue and replicas",
            [
                _panel(
                    "Requests waiting and running",
                    "Waiting requests drive the autoscaler (KEDA scales on their sum per model).",
                    [
                        (f"sum by (model) (vllm:num_requests_waiting{{{MODEL}}})", "waiting {{model}}"),
                        (f"sum by (model) (vllm:num_requests_running{{{MODEL}}})", "running {{model}}"),
                    ],
                    "short",
                ),
                _panel(
                    "Ready replicas",
                    "Ready serving pods (Deployment pods or LeaderWorkerSet leaders).",
                    [(f"sum by (model) ({READY_REPLICAS}{{{MODEL}}})", "{{model}}")],
                    "short",
                ),
            ],
        ),
        (
            "KV cache",
            [
                _panel(
                    "KV-cache usage",
                    "Per replica; the red line is the alert threshold (monitoring.kvCacheAlertRatio).",
                    [(f"max by (model, pod) (vllm:kv_cache_usage_perc{{{MODEL}}})", "{{model}} {{pod}}")],
                    "percentunit",
                    max_value=1,
                    threshold=kv_cache_alert_ratio,
                ),
                _panel(
                    "Preemptions / s",
                    "Requests preempted because the KV cache ran out (they are recomputed).",
                    [(_rate("vllm:num_preemptions_total"), "{{model}}")],
                    "short",
                ),
                _panel(
                    "Prefix-cache hit ratio",
                    "Share of prompt tokens served from the prefix cache.",
                    [(f"{_rate(PREFIX_HITS)} / {_rate(PREFIX_QUERIES)}", "{{model}}")],
                    "percentunit",
                    max_value=1,
                ),
            ],
        ),
        (
            "GPUs",
            [
                _panel(
                    "GPU utilisation",
                    "DCGM exporter, every GPU node.",
                    [("avg by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL)", "{{Hostname}} GPU {{gpu}}")],
                    "percent",
                    max_value=100,
                ),
                _panel(
                    "GPU memory used",
                    "Framebuffer memory in use (vLLM pre-allocates gpu-memory-utilization).",
                    [("max by (Hostname, gpu) (DCGM_FI_DEV_FB_USED)", "{{Hostname}} GPU {{gpu}}")],
                    "mbytes",
                ),
                _panel(
                    "GPU memory used (share)",
                    "Used / (used + free) framebuffer memory.",
                    [(f"max by (Hostname, gpu) ({FB_USED_SHARE})", "{{Hostname}} GPU {{gpu}}")],
                    "percentunit",
                    max_value=1,
                ),
            ],
        ),
    ]


def _templating() -> dict[str, Any]:
    model_query = "label_values(vllm:num_requests_running, model)"
    return {
        "list": [
            {
                "type": "datasource",
                "name": "datasource",
                "label": "Data source",
                "query": "prometheus",
                "hide": 0,
            },
            {
                "type": "query",
                "name": "model",
                "label": "Model",
                "datasource": DATASOURCE,
                "definition": model_query,
                "query": {"query": model_query, "refId": "model"},
                "multi": True,
                "includeAll": True,
                "allValue": ".*",
                "refresh": 2,
                "sort": 1,
                "hide": 0,
            },
        ]
    }


def build_dashboard(ttft_slo_seconds: float, kv_cache_alert_ratio: float) -> dict[str, Any]:
    """The dashboard as a dict; thresholds drawn on the TTFT and KV-cache panels come from settings."""
    panels: list[dict[str, Any]] = []
    y = 0
    for title, row_panels in _rows(ttft_slo_seconds, kv_cache_alert_ratio):
        panels.append(
            {"type": "row", "title": title, "collapsed": False, "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}}
        )
        y += 1
        for i, panel in enumerate(row_panels):
            x = (i % 2) * PANEL_WIDTH
            panel["gridPos"] = {"h": PANEL_HEIGHT, "w": PANEL_WIDTH, "x": x, "y": y + (i // 2) * PANEL_HEIGHT}
            panels.append(panel)
        y += PANEL_HEIGHT * ((len(row_panels) + 1) // 2)
    for panel_id, panel in enumerate(panels, start=1):
        panel["id"] = panel_id
    return {
        "uid": DASHBOARD_UID,
        "title": "vLLM serving",
        "description": "Per-model throughput, latency, queue, KV cache and GPUs of the vllm-serving stack.",
        "tags": ["vllm", "vllm-serving"],
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION,
        "time": {"from": "now-6h", "to": "now"},
        "timezone": "utc",
        "version": 1,
        "annotations": {"list": []},
        "templating": _templating(),
        "panels": panels,
    }


def dashboard_config_map_data(ttft_slo_seconds: float, kv_cache_alert_ratio: float) -> dict[str, str]:
    """ConfigMap `data` the Grafana sidecar loads: one file, stable key order (same input, same bytes)."""
    dashboard = build_dashboard(ttft_slo_seconds, kv_cache_alert_ratio)
    return {DASHBOARD_FILE: json.dumps(dashboard, indent=2, sort_keys=True)}


def panel_expressions(dashboard: dict[str, Any]) -> list[str]:
    """Every PromQL expression of the dashboard's panels."""
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
