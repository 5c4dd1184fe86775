"""Helpers shared by the observability and autoscaling tests: graphs, CRD schemas, promtool.

Plain functions (no fixtures): each test records its own program, so state is never shared.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pulumi
import pulumi_kubernetes as kubernetes
import pytest
import yaml

from components.autoscaling import Autoscaling, AutoscalingArgs
from components.monitoring_rules import MonitoredModel
from components.prometheus_stack import PrometheusStack, PrometheusStackArgs
from components.scaling_rules import ScaleTarget
from offline.graph import RecordedResource, unwrap_secrets
from offline.recorder import Graph, record_program
from planning import StackPlan, plan_stack
from settings import AutoscalingSettings, MonitoringSettings, StackSettings, parse_settings
from tests.helpers import ROOT, SHARED, raw_settings

SCHEMAS = SHARED / "schemas"
SERVING_NAMESPACE = "vllm"
MONITORING_NAMESPACE = "monitoring"
PROMETHEUS_URL = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"

# Three models covering every rule variant: a multi-node group, a single-node model, scale to zero.
ALPHA = MonitoredModel("alpha", SERVING_NAMESPACE, group_size=2, min_replicas=1, cold_start_seconds=900)
BETA = MonitoredModel("beta", SERVING_NAMESPACE)
ZED = MonitoredModel("zed", SERVING_NAMESPACE, min_replicas=0, cold_start_seconds=300)
MODELS = (ALPHA, BETA, ZED)

ALPHA_TARGET = ScaleTarget("alpha", SERVING_NAMESPACE, "LeaderWorkerSet", "alpha-vllm", 1, 2, 900)
BETA_TARGET = ScaleTarget("beta", SERVING_NAMESPACE, "Deployment", "beta-vllm", 1, 3, 120)


def k8s_provider() -> kubernetes.Provider:
    return kubernetes.Provider("k8s", kubeconfig="{}")


def record(build: Callable[[kubernetes.Provider], Any], stack: str = "test") -> Graph:
    """Record a fresh program that builds components with an explicit Kubernetes provider."""
    return record_program(lambda: build(k8s_provider()), stack=stack)


def prometheus_stack(
    provider: kubernetes.Provider,
    models: Sequence[MonitoredModel] = MODELS,
    settings: MonitoringSettings | None = None,
    **overrides: Any,
) -> PrometheusStack:
    args: dict[str, Any] = {
        "settings": settings or MonitoringSettings(),
        "platform": "eks",
        "namespace": MONITORING_NAMESPACE,
        "provider": provider,
        "models": list(models),
        "grafana_admin_password": pulumi.Output.secret("correct-horse-battery-staple"),
    } | overrides
    return PrometheusStack("monitoring", PrometheusStackArgs(**args))


def autoscaling(
    provider: kubernetes.Provider,
    targets: Sequence[ScaleTarget] = (ALPHA_TARGET, BETA_TARGET),
    settings: AutoscalingSettings | None = None,
    **overrides: Any,
) -> Autoscaling:
    args: dict[str, Any] = {
        "settings": settings or AutoscalingSettings(enabled=True),
        "platform": "eks",
        "provider": provider,
        "prometheus_url": PROMETHEUS_URL,
        "targets": list(targets),
        "cluster_name": "gpu-cluster",
        "region": "us-east-1",
        "kubernetes_version": "1.33",
    } | overrides
    return Autoscaling("autoscaling", AutoscalingArgs(**args))


@cache
def stack_plan(stack: str) -> tuple[StackSettings, StackPlan]:
    """Settings and capacity plan of a shipped stack file (deterministic, so cached)."""
    settings = parse_settings(raw_settings(stack))
    return settings, plan_stack(settings, ROOT)


def monitored_models(stack: str) -> list[MonitoredModel]:
    settings, plan = stack_plan(stack)
    return [
        MonitoredModel.from_served(
            m,
            namespace=settings.serving.namespace,
            cold_start_seconds=plan.storage.replica_cold_start_seconds,
        )
        for m in plan.models
    ]


def scale_targets(stack: str) -> list[ScaleTarget]:
    settings, plan = stack_plan(stack)
    return [
        ScaleTarget.for_model(
            m,
            namespace=settings.serving.namespace,
            workload_name=f"{m.settings.name}-vllm",
            cold_start_seconds=plan.storage.replica_cold_start_seconds,
        )
        for m in plan.models
    ]


def kubernetes_object(resource: RecordedResource) -> dict[str, Any]:
    """A recorded custom resource as the object the API server would receive."""
    inputs = unwrap_secrets(resource.inputs)
    return {key: inputs[key] for key in ("apiVersion", "kind", "metadata", "spec")}


@cache
def _schema(relative: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / relative).read_text())


SCHEMA_FILES = {
    "ScaledObject": "keda.sh/v1alpha1/scaledobject.json",
    "PodMonitor": "monitoring.coreos.com/v1/podmonitor.json",
    "PrometheusRule": "monitoring.coreos.com/v1/prometheusrule.json",
}


def schema_errors(obj: dict[str, Any]) -> list[str]:
    """Violations of the upstream CRD schema (format checks off: Kubernetes formats differ)."""
    validator = jsonschema.Draft7Validator(_schema(SCHEMA_FILES[obj["kind"]]))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)]


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is not installed: run .ci/install-promtool (Debian's prometheus package)")
    return path


def run_promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *map(str, args)], capture_output=True, text=True, timeout=60, check=False
    )


def write_yaml(path: Path, document: Any) -> Path:
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path
