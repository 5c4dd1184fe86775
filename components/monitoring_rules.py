"""What Prometheus scrapes from vLLM and which rules it evaluates: pure generation, no Pulumi.

Owns the PodMonitor spec of one served model (leader pods only, `model` label added by
relabeling), the per-model recording rules (queue, KV cache, TTFT / inter-token latency
percentiles, token throughput, preemptions, ready replicas, ready pods per multi-node group),
the per-model alerts, the GPU (DCGM) alerts, and the kube-state-metrics pod-label allow-list the
readiness rules depend on. Alert severities and texts are data (components/data/observability.json,
`alerts`). The output is plain data in Prometheus rule-file shape, so the same
groups go into a PrometheusRule and into `promtool check rules` / `promtool test rules`.

Metric names are vLLM's current ones (facts doc section 5.1): `vllm:kv_cache_usage_perc` and
`vllm:inter_token_latency_seconds`, not the deprecated `vllm:gpu_cache_usage_perc` /
`vllm:time_per_output_token_seconds`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from planning import ServedModel
    from settings import MonitoringSettings

# Labels every vLLM pod carries (docs/conventions.md, "Labels and tags other parts rely on").
APP_LABEL = "app.kubernetes.io/name"
APP_VALUE = "vllm"
MODEL_LABEL = "vllm-serving/model"
ROLE_LABEL = "vllm-serving/role"
LEADER_ROLE = "leader"
POOL_LABEL = "vllm-serving/pool"
LWS_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"

METRICS_PORT_NAME = "http"  # vLLM's API port (8000); /metrics is not behind the API key
METRICS_PATH = "/metrics"
SCRAPE_INTERVAL = "15s"
SCRAPE_TIMEOUT = "10s"

# Pod labels kube-state-metrics must export as `kube_pod_labels{label_...}` for the readiness rules.
KSM_POD_LABELS = (APP_LABEL, MODEL_LABEL, ROLE_LABEL, LWS_NAME_LABEL, LWS_GROUP_INDEX_LABEL)

# Recorded series (level:metric:operations, https://prometheus.io/docs/practices/rules/).
WAITING = "model:vllm_num_requests_waiting:sum"
RUNNING = "model:vllm_num_requests_running:sum"
KV_CACHE = "model:vllm_kv_cache_usage_perc:max"
TTFT_P50 = "model:vllm_time_to_first_token_seconds:p50_5m"
TTFT_P95 = "model:vllm_time_to_first_token_seconds:p95_5m"
ITL_P50 = "model:vllm_inter_token_latency_seconds:p50_5m"
ITL_P95 = "model:vllm_inter_token_latency_seconds:p95_5m"
GENERATION_TPS = "model:vllm_generation_tokens:rate5m"
PROMPT_TPS = "model:vllm_prompt_tokens:rate5m"
PREEMPTIONS = "model:vllm_num_preemptions:rate5m"
READY_REPLICAS = "model:vllm_ready_replicas:sum"
GROUP_READY_PODS = "model_group:vllm_ready_pods:sum"

KV_CACHE_FOR_SECONDS = 600
TTFT_FOR_SECONDS = 600
QUEUE_DERIV_WINDOW = "10m"
QUEUE_FOR_SECONDS = 300
PREEMPTIONS_FOR_SECONDS = 600
MIN_READINESS_FOR_SECONDS = 600  # readiness alerts wait at least this, and at least one cold start

RUNBOOK_PATH = "docs/runbook.md"
DATA_FILE = Path(__file__).parent / "data" / "observability.json"


def prometheus_label_name(kubernetes_label: str) -> str:
    """`vllm-serving/model` -> `vllm_serving_model` (how Prometheus and kube-state-metrics sanitise)."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", kubernetes_label)


def ksm_label(kubernetes_label: str) -> str:
    """The kube_pod_labels label holding a pod label, e.g. `label_vllm_serving_model`."""
    return f"label_{prometheus_label_name(kubernetes_label)}"


def ksm_metric_labels_allowlist() -> list[str]:
    """kube-state-metrics `--metric-labels-allowlist` entries (chart value `metricLabelsAllowlist`)."""
    return [f"pods=[{','.join(KSM_POD_LABELS)}]"]


def prom_duration(seconds: float) -> str:
    """Seconds -> a Prometheus duration, rounded up to whole seconds: 600 -> `10m`, 5400 -> `1h30m`."""
    total = math.ceil(seconds)
    if total <= 0:
        raise ValueError(f"a rule duration must be positive, got {seconds} seconds")
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{value}{unit}" for value, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if value)


def _number(value: float) -> str:
    return format(value, "g")


@dataclass(frozen=True)
class MonitoredModel:
    """One served model as monitoring sees it."""

    name: str
    """The model's `name` (value of the pod label `vllm-serving/model` and of the metric label `model`)."""
    namespace: str
    """Namespace of the model's pods (ServingSettings.namespace)."""
    group_size: int = 1
    """Pods per replica: 1 for a Deployment, nodes per replica for a LeaderWorkerSet group."""
    min_replicas: int = 1
    """Planned minimum replicas. 0 (scale to zero) turns the no-ready-replica alert off."""
    cold_start_seconds: float = 600.0
    """Time from pod start to ready (weights + warm-up); readiness alerts wait at least this long."""

    @property
    def multi_node(self) -> bool:
        return self.group_size > 1

    @property
    def selector(self) -> str:
        """PromQL label matchers of this model's vLLM series."""
        return f'namespace="{self.namespace}",model="{self.name}"'

    @property
    def readiness_for_seconds(self) -> int:
        """`for` of the readiness alerts: at least 10 minutes and one cold start, in whole minutes."""
        return 60 * math.ceil(max(MIN_READINESS_FOR_SECONDS, self.cold_start_seconds) / 60)

    @property
    def readiness_for(self) -> str:
        return prom_duration(self.readiness_for_seconds)

    @classmethod
    def from_served(cls, model: ServedModel, *, namespace: str, cold_start_seconds: float) -> MonitoredModel:
        """From a planned model: group size and minimum replicas come from the plan."""
        return cls(
            name=model.settings.name,
            namespace=namespace,
            group_size=model.plan.nodes_per_replica,
            min_replicas=model.min_replicas,
            cold_start_seconds=cold_start_seconds,
        )


@dataclass(frozen=True)
class AlertThresholds:
    """Alert thresholds shared by every model."""

    kv_cache_ratio: float = 0.9
    """KV-cache usage (0..1) above which VllmKvCacheHigh fires after 10 minutes."""
    ttft_slo_seconds: float = 2.0
    """TTFT p95 (seconds) above which VllmTtftSloBreached fires after 10 minutes."""
    waiting_requests: int = 10
    """Waiting requests above which a growing queue alerts (the autoscaler's per-replica target)."""

    @classmethod
    def from_settings(cls, monitoring: MonitoringSettings, waiting_requests: int) -> AlertThresholds:
        return cls(
            kv_cache_ratio=monitoring.kv_cache_alert_ratio,
            ttft_slo_seconds=monitoring.ttft_slo_seconds,
            waiting_requests=waiting_requests,
        )


def validate_models(models: Sequence[MonitoredModel]) -> None:
    """Raise ValueError listing every problem (duplicate names, bad group sizes or replicas)."""
    problems = []
    names = [m.name for m in models]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"model {dup!r} is listed more than once; model names must be unique")
    for m in models:
        if m.group_size < 1:
            problems.append(f"model {m.name!r}: group_size must be at least 1 (got {m.group_size})")
        if m.min_replicas < 0:
            problems.append(f"model {m.name!r}: min_replicas must be 0 or more (got {m.min_replicas})")
        if m.cold_start_seconds <= 0:
            problems.append(
                f"model {m.name!r}: cold_start_seconds must be positive (got {m.cold_start_seconds})"
            )
    if problems:
        raise ValueError("; ".join(problems))


def pod_monitor_spec(model: MonitoredModel) -> dict[str, Any]:
    """PodMonitor spec: leader pods of one model, `/metrics` on port `http`, `model` label added."""
    return {
        "selector": {"matchLabels": {APP_LABEL: APP_VALUE, MODEL_LABEL: model.name, ROLE_LABEL: LEADER_ROLE}},
        "namespaceSelector": {"matchNames": [model.namespace]},
        "podMetricsEndpoints": [
            {
                "port": METRICS_PORT_NAME,
                "path": METRICS_PATH,
                "interval": SCRAPE_INTERVAL,
                "scrapeTimeout": SCRAPE_TIMEOUT,
                "relabelings": [
                    {
                        "action": "replace",
                        "sourceLabels": [f"__meta_kubernetes_pod_label_{prometheus_label_name(MODEL_LABEL)}"],
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


def _ready_pods(model: MonitoredModel, *, leaders_only: bool, keep: str | None = None) -> str:
    """Ready pods of a model: kube_pod_status_ready joined with kube_pod_labels on the pod's uid."""
    matchers = [f'namespace="{model.namespace}"', f'{ksm_label(APP_LABEL)}="{APP_VALUE}"']
    matchers.append(f'{ksm_label(MODEL_LABEL)}="{model.name}"')
    if leaders_only:
        matchers.append(f'{ksm_label(ROLE_LABEL)}="{LEADER_ROLE}"')
    group_left = f" group_left ({keep})" if keep else ""
    return (
        f'kube_pod_status_ready{{condition="true",namespace="{model.namespace}"}}'
        f" * on (namespace, pod, uid){group_left} kube_pod_labels{{{','.join(matchers)}}}"
    )


def recording_rules(model: MonitoredModel) -> list[dict[str, Any]]:
    """Per-model series, each labelled `namespace` and `model`."""
    sel = model.selector

    def quantile(q: float, histogram: str) -> str:
        return (
            f"histogram_quantile({q}, sum by (namespace, model, le) (rate({histogram}_bucket{{{sel}}}[5m])))"
        )

    rules: list[dict[str, Any]] = [
        {"record": WAITING, "expr": f"sum by (namespace, model) (vllm:num_requests_waiting{{{sel}}})"},
        {"record": RUNNING, "expr": f"sum by (namespace, model) (vllm:num_requests_running{{{sel}}})"},
        {"record": KV_CACHE, "expr": f"max by (namespace, model) (vllm:kv_cache_usage_perc{{{sel}}})"},
        {"record": TTFT_P50, "expr": quantile(0.5, "vllm:time_to_first_token_seconds")},
        {"record": TTFT_P95, "expr": quantile(0.95, "vllm:time_to_first_token_seconds")},
        {"record": ITL_P50, "expr": quantile(0.5, "vllm:inter_token_latency_seconds")},
        {"record": ITL_P95, "expr": quantile(0.95, "vllm:inter_token_latency_seconds")},
        {
            "record": GENERATION_TPS,
            "expr": f"sum by (namespace, model) (rate(vllm:generation_tokens_total{{{sel}}}[5m]))",
        },
        {
            "record": PROMPT_TPS,
            "expr": f"sum by (namespace, model) (rate(vllm:prompt_tokens_total{{{sel}}}[5m]))",
        },
        {
            "record": PREEMPTIONS,
            "expr": f"sum by (namespace, model) (rate(vllm:num_preemptions_total{{{sel}}}[5m]))",
        },
        {"record": READY_REPLICAS, "expr": f"sum by (namespace) ({_ready_pods(model, leaders_only=True)})"},
    ]
    if model.multi_node:
        group_index = ksm_label(LWS_GROUP_INDEX_LABEL)
        joined = _ready_pods(model, leaders_only=False, keep=group_index)
        rules.append(
            {
                "record": GROUP_READY_PODS,
                "expr": f'sum by (namespace, group) (label_replace({joined}, "group", "$1", "{group_index}", "(.+)"))',
            }
        )
    # The static `model` label keeps each model's series apart (and promtool's duplicate-rule lint quiet).
    return [rule | {"labels": {"model": model.name}} for rule in rules]


@cache
def alert_texts() -> dict[str, dict[str, str]]:
    """Severity, summary and description template of every alert (components/data/observability.json)."""
    alerts = json.loads(DATA_FILE.read_text())["alerts"]
    return {name: text for name, text in alerts.items() if not name.startswith("_")}


GPU_TEMPLATE = "{{ $labels.Hostname }} GPU {{ $labels.gpu }} ({{ $labels.UUID }})"


def _alert(
    alert: str, expr: str, for_seconds: float | None, runbook_url: str, model: str | None = None, **facts: Any
) -> dict[str, Any]:
    text = alert_texts()[alert]
    rule: dict[str, Any] = {"alert": alert, "expr": expr}
    if for_seconds:
        rule["for"] = prom_duration(for_seconds)
    rule["labels"] = {"severity": text["severity"]} | ({"model": model} if model else {})
    rule["annotations"] = {
        "summary": text["summary"].format(**facts),
        "description": text["description"].format(**facts),
        "runbook_url": f"{runbook_url}#{alert.lower()}",
    }
    return rule


def alert_rules(model: MonitoredModel, thresholds: AlertThresholds, runbook_url: str) -> list[dict[str, Any]]:
    """Per-model alerts, labelled `severity` and `model`, with summary/description/runbook_url."""
    sel, name = model.selector, model.name
    facts = {
        "name": name,
        "where": f"{name} (namespace {model.namespace})",
        "kv": thresholds.kv_cache_ratio,
        "waiting": thresholds.waiting_requests,
        "slo": _number(thresholds.ttft_slo_seconds),
        "size": model.group_size,
        "wait": model.readiness_for,
    }
    waiting, ready = f"{WAITING}{{{sel}}}", f"{READY_REPLICAS}{{{sel}}}"
    readiness = model.readiness_for_seconds
    specs: list[tuple[str, str, float]] = [
        (
            "VllmKvCacheHigh",
            f"{KV_CACHE}{{{sel}}} > {_number(thresholds.kv_cache_ratio)}",
            KV_CACHE_FOR_SECONDS,
        ),
        (
            "VllmQueueGrowing",
            f"deriv({waiting}[{QUEUE_DERIV_WINDOW}]) > 0 and {waiting} > {thresholds.waiting_requests}",
            QUEUE_FOR_SECONDS,
        ),
        ("VllmTtftSloBreached", f"{TTFT_P95}{{{sel}}} > {facts['slo']}", TTFT_FOR_SECONDS),
        ("VllmPreemptions", f"{PREEMPTIONS}{{{sel}}} > 0", PREEMPTIONS_FOR_SECONDS),
    ]
    if model.min_replicas > 0:
        specs.append(("VllmNoReadyReplica", f"absent({ready}) or {ready} == 0", readiness))
    if model.multi_node:
        specs.append(("VllmGroupPartlyReady", f"{GROUP_READY_PODS}{{{sel}}} < {model.group_size}", readiness))
    return [
        _alert(alert, expr, for_seconds, runbook_url, name, **facts) for alert, expr, for_seconds in specs
    ]


def model_rule_groups(
    model: MonitoredModel, thresholds: AlertThresholds, runbook_url: str
) -> list[dict[str, Any]]:
    """The two rule groups of one model: recording rules, then alerts (which read them)."""
    return [
        {"name": f"vllm-{model.name}.rules", "rules": recording_rules(model)},
        {"name": f"vllm-{model.name}.alerts", "rules": alert_rules(model, thresholds, runbook_url)},
    ]


def gpu_rule_groups(runbook_url: str) -> list[dict[str, Any]]:
    """GPU health alerts on DCGM exporter series (one per GPU, not per model)."""
    by_gpu = "max by (Hostname, gpu, UUID)"
    specs = [
        ("GpuXidError", "DCGM_FI_DEV_XID_ERRORS"),
        ("GpuRowRemapFailure", "DCGM_FI_DEV_ROW_REMAP_FAILURE"),
    ]
    rules = [
        _alert(alert, f"{by_gpu} ({metric}) > 0", None, runbook_url, gpu=GPU_TEMPLATE)
        for alert, metric in specs
    ]
    return [{"name": "vllm-serving-gpu.alerts", "rules": rules}]


def rule_file(
    models: Sequence[MonitoredModel], thresholds: AlertThresholds, runbook_url: str
) -> dict[str, Any]:
    """Every rule group in Prometheus rule-file shape (what `promtool check rules` reads)."""
    groups = [
        g for m in sorted(models, key=lambda m: m.name) for g in model_rule_groups(m, thresholds, runbook_url)
    ]
    return {"groups": groups + gpu_rule_groups(runbook_url)}


def expressions(groups: Sequence[Mapping[str, Any]]) -> list[str]:
    """Every PromQL expression of some rule groups."""
    return [rule["expr"] for group in groups for rule in group["rules"]]
