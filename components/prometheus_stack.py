"""PrometheusStack: metrics, alerts and dashboards for the served models, reachable in-cluster only.

Builds, in the monitoring namespace (created by ClusterAddons and passed in):
- kube-prometheus-stack (pinned Helm chart): Prometheus with retention and an encrypted gp3 volume
  sized from MonitoringSettings, Alertmanager, Grafana (admin password from a Kubernetes Secret
  holding the Pulumi secret), kube-state-metrics exporting the vLLM/LWS pod labels; every
  Service ClusterIP, no Ingress; Prometheus selects every PodMonitor/ServiceMonitor/rule;
- on platform eks, the gp3 encrypted StorageClass for those volumes (unless one is named);
- the NVIDIA DCGM exporter (pinned chart) on the GPU nodes, scraped through its ServiceMonitor;
- per served model a PodMonitor (leader pods, `/metrics` on port `http`, `model` label) and a
  PrometheusRule (recording rules + alerts, from components/monitoring_rules.py);
- a PrometheusRule with GPU (XID, row-remap) alerts, and the vLLM dashboard as a ConfigMap the
  Grafana sidecar loads.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

import pulumi
import pulumi_kubernetes as kubernetes

from components.dashboard import SIDECAR_LABEL, dashboard_config_map_data
from components.helm_charts import ChartPin, pinned_release, read_pin
from components.monitoring_rules import (
    DATA_FILE,
    POOL_LABEL,
    RUNBOOK_PATH,
    AlertThresholds,
    MonitoredModel,
    gpu_rule_groups,
    ksm_metric_labels_allowlist,
    model_rule_groups,
    pod_monitor_spec,
    validate_models,
)

if TYPE_CHECKING:
    from settings import MonitoringSettings

FULLNAME = "kube-prometheus-stack"  # fixes every Service name of the chart (fullnameOverride)
PROMETHEUS_PORT = 9090
ALERTMANAGER_PORT = 9093
GRAFANA_SECRET_NAME = "grafana-admin"
GRAFANA_USER_KEY = "admin-user"
GRAFANA_PASSWORD_KEY = "admin-password"
ALERTMANAGER_STORAGE_GIB = 10
RETENTION_SIZE_SHARE = 0.85  # leave head-room on the volume: Prometheus stops ingesting on a full disk
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
COMMON_LABELS = {"app.kubernetes.io/part-of": "vllm-serving", "app.kubernetes.io/managed-by": "pulumi"}
# Control-plane components EKS does not expose to in-cluster scrapes (they would alert TargetDown forever).
EKS_UNSCRAPABLE = ("kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy")


@cache
def _data() -> dict[str, Any]:
    return json.loads(DATA_FILE.read_text())


def chart_pin(key: str) -> ChartPin:
    """A pinned chart of `data/observability.json`."""
    return read_pin(_data()["charts"], key, DATA_FILE.name)


def observability_data() -> dict[str, Any]:
    """The parsed data file (read-only use)."""
    return _data()


@dataclass(frozen=True)
class PrometheusStackArgs:
    """Inputs of PrometheusStack."""

    settings: MonitoringSettings
    """Retention, volume size, TTFT SLO and KV-cache alert ratio (`vllm-serving:monitoring`)."""
    platform: Literal["eks", "existing"]
    """eks: create the gp3 encrypted StorageClass and skip control-plane scrapes EKS does not allow.
    existing: use the cluster's default StorageClass (unless `storage_class_name` is set)."""
    namespace: pulumi.Input[str]
    """Monitoring namespace; created by ClusterAddons (MonitoringSettings.namespace)."""
    provider: kubernetes.Provider
    """The cluster's explicit Kubernetes provider; every object here uses it."""
    models: Sequence[MonitoredModel]
    """One entry per served model (`MonitoredModel.from_served`); each gets a PodMonitor and rules."""
    grafana_admin_password: pulumi.Input[str]
    """Grafana admin password (Pulumi secret `grafanaAdminPassword`); stored in a Secret, never in values."""
    waiting_requests_alert_threshold: int = 10
    """Waiting requests above which a growing queue alerts. Defaults to 10. Pass
    AutoscalingSettings.waiting_requests_threshold so the alert and the autoscaler agree."""
    storage_class_name: str | None = None
    """Use this StorageClass for the Prometheus and Alertmanager volumes instead of creating one (eks) or
    the cluster default (existing). Defaults to None."""
    dcgm_exporter: bool = True
    """Install the DCGM exporter. Set False where the NVIDIA GPU Operator already runs one (its
    ServiceMonitor is picked up as well). Defaults to True."""
    runbook_url: str = RUNBOOK_PATH
    """Base URL of docs/runbook.md as your team reads it; alerts link `<runbook_url>#<alertname>`."""


def storage_class_for(args: PrometheusStackArgs, created_name: str) -> str | None:
    """The StorageClass of the volumes: explicit > created gp3 (eks) > cluster default (None)."""
    if args.storage_class_name is not None:
        return args.storage_class_name
    return created_name if args.platform == "eks" else None


def _volume_claim(storage_gib: int, storage_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": f"{storage_gib}Gi"}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"volumeClaimTemplate": {"spec": spec}}


def kube_prometheus_stack_values(
    settings: MonitoringSettings, platform: str, storage_class: str | None
) -> dict[str, Any]:
    """Chart values: in-cluster only, our monitors and rules selected, sized from settings."""
    values: dict[str, Any] = {
        "fullnameOverride": FULLNAME,
        "crds": {"enabled": True},
        "prometheus": {
            "service": {"type": "ClusterIP"},
            "ingress": {"enabled": False},
            "prometheusSpec": {
                "retention": f"{settings.retention_days}d",
                # Prometheus sizes are powers of two: GB here is GiB, like the volume.
                "retentionSize": f"{math.floor(settings.storage_gib * RETENTION_SIZE_SHARE)}GB",
                "podMonitorSelectorNilUsesHelmValues": False,
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "probeSelectorNilUsesHelmValues": False,
                "scrapeConfigSelectorNilUsesHelmValues": False,
                "storageSpec": _volume_claim(settings.storage_gib, storage_class),
                "resources": {"requests": {"cpu": "500m", "memory": "2Gi"}},
            },
        },
        "alertmanager": {
            "service": {"type": "ClusterIP"},
            "ingress": {"enabled": False},
            "alertmanagerSpec": {"storage": _volume_claim(ALERTMANAGER_STORAGE_GIB, storage_class)},
        },
        "grafana": {
            "service": {"type": "ClusterIP"},
            "ingress": {"enabled": False},
            "admin": {
                "existingSecret": GRAFANA_SECRET_NAME,
                "userKey": GRAFANA_USER_KEY,
                "passwordKey": GRAFANA_PASSWORD_KEY,
            },
            "sidecar": {"dashboards": {"enabled": True, "label": "grafana_dashboard", "labelValue": "1"}},
            "grafana.ini": {
                "analytics": {"check_for_updates": False, "reporting_enabled": False},
                "auth.anonymous": {"enabled": False},
                "users": {"allow_sign_up": False},
            },
        },
        "kube-state-metrics": {"metricLabelsAllowlist": ksm_metric_labels_allowlist()},
    }
    if platform == "eks":
        values.update({component: {"enabled": False} for component in EKS_UNSCRAPABLE})
    return values


def dcgm_exporter_values() -> dict[str, Any]:
    """DCGM exporter on GPU pool nodes only (tolerating their taint), scraped through its ServiceMonitor."""
    return {
        "tolerations": [GPU_TOLERATION],
        # Every GPU pool node carries `vllm-serving/pool` (docs/conventions.md), on eks and existing alike.
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]}]
                }
            }
        },
        "serviceMonitor": {"enabled": True, "interval": "15s", "honorLabels": False},
        "service": {"type": "ClusterIP"},
        "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    }


def observability_release(
    name: str,
    pin: ChartPin,
    namespace: pulumi.Input[str],
    values: pulumi.Input[Mapping[str, Any]],
    opts: pulumi.ResourceOptions,
    timeout_seconds: int = 600,
) -> kubernetes.helm.v3.Release:
    """The monitoring and scaling releases: a 10-minute install timeout and ten kept revisions."""
    return pinned_release(
        name,
        pin,
        namespace=namespace,
        values=values,
        opts=opts,
        timeout_seconds=timeout_seconds,
        max_history=10,
    )


class PrometheusStack(pulumi.ComponentResource):
    """Prometheus, Alertmanager, Grafana, DCGM exporter, vLLM monitors, rules and dashboard.

    Secure defaults: every Service is ClusterIP and no Ingress is created (reach Grafana with
    `kubectl port-forward`); the Grafana admin password lives only in a Kubernetes Secret; the
    volumes are encrypted gp3 on EKS. Use something else (Amazon Managed Prometheus, an existing
    Prometheus Operator) by not creating this component and applying the PodMonitors and rules
    from components/monitoring_rules.py there.
    """

    prometheus_url: pulumi.Output[str]
    """In-cluster Prometheus API base URL (KEDA's serverAddress), e.g. http://kube-prometheus-stack-prometheus.monitoring.svc:9090."""
    alertmanager_url: pulumi.Output[str]
    """In-cluster Alertmanager URL."""
    grafana_url: pulumi.Output[str]
    """In-cluster Grafana URL (ClusterIP; port-forward to reach it)."""
    grafana_admin_secret: pulumi.Output[str]
    """`namespace/name` of the Secret holding the Grafana admin user and password."""
    storage_class_name: pulumi.Output[str]
    """StorageClass of the Prometheus volume ("" = the cluster default)."""
    monitored_models: pulumi.Output[list[str]]
    """Names of the models that have a PodMonitor and a PrometheusRule."""

    def __init__(
        self, name: str, args: PrometheusStackArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vllm-serving:prometheus_stack:PrometheusStack", name, None, opts)
        # Validate.
        validate_models(args.models)
        models = sorted(args.models, key=lambda m: m.name)
        # Decide.
        thresholds = AlertThresholds.from_settings(args.settings, args.waiting_requests_alert_threshold)
        storage_class = storage_class_for(args, f"{name}-gp3")
        values = kube_prometheus_stack_values(args.settings, args.platform, storage_class)

        def child(*depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(depends_on))

        # Children.
        before_release: list[pulumi.Resource] = []
        if args.platform == "eks" and args.storage_class_name is None:
            before_release.append(
                kubernetes.storage.v1.StorageClass(
                    f"{name}-gp3",
                    metadata={"name": storage_class, "labels": COMMON_LABELS},
                    provisioner="ebs.csi.aws.com",
                    parameters={"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
                    # Retain: deleting the release or the PVC must not destroy the metrics history.
                    reclaim_policy="Retain",
                    volume_binding_mode="WaitForFirstConsumer",
                    allow_volume_expansion=True,
                    opts=child(),
                )
            )
        grafana_secret = kubernetes.core.v1.Secret(
            f"{name}-grafana-admin",
            metadata={"name": GRAFANA_SECRET_NAME, "namespace": args.namespace, "labels": COMMON_LABELS},
            type="Opaque",
            string_data={
                GRAFANA_USER_KEY: "admin",
                GRAFANA_PASSWORD_KEY: pulumi.Output.secret(args.grafana_admin_password),
            },
            opts=child(),
        )
        release = observability_release(
            f"{name}-kube-prometheus-stack",
            chart_pin("kube-prometheus-stack"),
            args.namespace,
            values,
            child(grafana_secret, *before_release),
            timeout_seconds=900,
        )
        if args.dcgm_exporter:
            observability_release(
                f"{name}-dcgm-exporter",
                chart_pin("dcgm-exporter"),
                args.namespace,
                dcgm_exporter_values(),
                child(release),
            )
        for model in models:
            labels = COMMON_LABELS | {"vllm-serving/model": model.name}
            kubernetes.apiextensions.CustomResource(
                f"{name}-{model.name}-podmonitor",
                api_version="monitoring.coreos.com/v1",
                kind="PodMonitor",
                metadata={"name": f"vllm-{model.name}", "namespace": args.namespace, "labels": labels},
                spec=pod_monitor_spec(model),
                opts=child(release),
            )
            kubernetes.apiextensions.CustomResource(
                f"{name}-{model.name}-rules",
                api_version="monitoring.coreos.com/v1",
                kind="PrometheusRule",
                metadata={"name": f"vllm-{model.name}", "namespace": args.namespace, "labels": labels},
                spec={"groups": model_rule_groups(model, thresholds, args.runbook_url)},
                opts=child(release),
            )
        kubernetes.apiextensions.CustomResource(
            f"{name}-gpu-rules",
            api_version="monitoring.coreos.com/v1",
            kind="PrometheusRule",
            metadata={"name": "vllm-serving-gpu", "namespace": args.namespace, "labels": COMMON_LABELS},
            spec={"groups": gpu_rule_groups(args.runbook_url)},
            opts=child(release),
        )
        kubernetes.core.v1.ConfigMap(
            f"{name}-dashboard",
            metadata={
                "name": "vllm-serving-dashboard",
                "namespace": args.namespace,
                "labels": COMMON_LABELS | SIDECAR_LABEL,
            },
            data=dashboard_config_map_data(
                args.settings.ttft_slo_seconds, args.settings.kv_cache_alert_ratio
            ),
            opts=child(),
        )

        # Outputs: the URLs depend on the release, so consumers (KEDA) wait for Prometheus.
        def url(service: str, port: int) -> pulumi.Output[str]:
            return pulumi.Output.all(args.namespace, release.id).apply(
                lambda parts: f"http://{FULLNAME}-{service}.{parts[0]}.svc:{port}"
            )

        self.prometheus_url = url("prometheus", PROMETHEUS_PORT)
        self.alertmanager_url = url("alertmanager", ALERTMANAGER_PORT)
        self.grafana_url = url("grafana", 80)
        self.grafana_admin_secret = pulumi.Output.concat(args.namespace, "/", GRAFANA_SECRET_NAME)
        self.storage_class_name = pulumi.Output.from_input(storage_class or "")
        self.monitored_models = pulumi.Output.from_input([m.name for m in models])
        self.register_outputs(
            {
                "prometheusUrl": self.prometheus_url,
                "alertmanagerUrl": self.alertmanager_url,
                "grafanaUrl": self.grafana_url,
                "grafanaAdminSecret": self.grafana_admin_secret,
                "storageClassName": self.storage_class_name,
                "monitoredModels": self.monitored_models,
            }
        )
