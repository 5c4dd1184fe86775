"""PrometheusStack as recorded by the offline recorder (wire-form inputs, parents, providers).

Checks: every child is parented to the component and uses the explicit Kubernetes provider;
the charts are pinned from the data file; nothing is reachable from outside (ClusterIP, no
Ingress); our PodMonitors and rules are selected; retention and volume come from settings and
the StorageClass choice follows the platform; the Grafana password only travels as a secret
through a Kubernetes Secret; the DCGM exporter runs on GPU nodes only; one PodMonitor and one
PrometheusRule per model, valid against the upstream CRD schemas; the dashboard ConfigMap;
the outputs; and that the prod stack's graph holds a monitor and rules for every model.
"""

from __future__ import annotations

from typing import Any

import pytest

from components.dashboard import DASHBOARD_FILE
from components.monitoring_rules import AlertThresholds, model_rule_groups, pod_monitor_spec
from components.prometheus_stack import chart_pin
from offline.graph import is_secret
from offline.recorder import Graph
from settings import MonitoringSettings
from tests.components.observability.observability_helpers import (
    ALPHA,
    BETA,
    MODELS,
    kubernetes_object,
    monitored_models,
    prometheus_stack,
    record,
    schema_errors,
)

RELEASE = "kubernetes:helm.sh/v3:Release"
PODMONITOR = "kubernetes:monitoring.coreos.com/v1:PodMonitor"
RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
COMPONENT = "vllm-serving:prometheus_stack:PrometheusStack"


def _values(graph: Graph, name: str = "monitoring-kube-prometheus-stack") -> dict[str, Any]:
    return graph.named(name).inputs["values"]


def test_children_are_parented_and_use_the_explicit_provider() -> None:
    graph = record(prometheus_stack)
    component = graph.one(COMPONENT)
    children = graph.children(component)
    assert {r.type for r in children} == {
        RELEASE,
        PODMONITOR,
        RULE,
        "kubernetes:core/v1:Secret",
        "kubernetes:core/v1:ConfigMap",
        "kubernetes:storage.k8s.io/v1:StorageClass",
    }
    for child in children:
        assert child.name.startswith("monitoring-"), f"{child.urn}: child name not derived from the component"
        assert child.provider_urn.endswith("pulumi:providers:kubernetes::k8s"), (
            f"{child.urn}: no explicit provider"
        )


def test_charts_are_pinned_from_the_data_file() -> None:
    graph = record(prometheus_stack)
    for resource, key in (
        ("monitoring-kube-prometheus-stack", "kube-prometheus-stack"),
        ("monitoring-dcgm-exporter", "dcgm-exporter"),
    ):
        inputs = graph.named(resource).inputs
        pin = chart_pin(key)
        assert (inputs["chart"], inputs["version"], inputs["repositoryOpts"]["repo"], inputs["name"]) == (
            pin.chart,
            pin.version,
            pin.repository,
            pin.release,
        ), graph.named(resource).urn
        assert inputs["namespace"] == "monitoring"
    assert chart_pin("kube-prometheus-stack").version == "93.9.0"
    assert chart_pin("dcgm-exporter").version == "4.8.2"


def test_nothing_is_reachable_from_outside_the_cluster() -> None:
    values = _values(record(prometheus_stack))
    for component in ("prometheus", "alertmanager", "grafana"):
        assert values[component]["service"]["type"] == "ClusterIP", component
        assert values[component]["ingress"] == {"enabled": False}, component
    assert values["grafana"]["grafana.ini"]["auth.anonymous"] == {"enabled": False}


def test_prometheus_selects_our_monitors_and_rules_and_ksm_exports_pod_labels() -> None:
    spec = _values(record(prometheus_stack))["prometheus"]["prometheusSpec"]
    for key in ("podMonitor", "serviceMonitor", "rule", "probe", "scrapeConfig"):
        assert spec[f"{key}SelectorNilUsesHelmValues"] is False, key
    values = _values(record(prometheus_stack))
    assert values["kube-state-metrics"]["metricLabelsAllowlist"] == [
        "pods=[app.kubernetes.io/name,vllm-serving/model,vllm-serving/role,"
        "leaderworkerset.sigs.k8s.io/name,leaderworkerset.sigs.k8s.io/group-index]"
    ]


def test_retention_and_gp3_volume_from_settings_on_eks() -> None:
    settings = MonitoringSettings(retention_days=30, storage_gib=200)
    graph = record(lambda p: prometheus_stack(p, settings=settings))
    spec = _values(graph)["prometheus"]["prometheusSpec"]
    assert spec["retention"] == "30d"
    assert spec["retentionSize"] == "170GB"
    assert spec["storageSpec"]["volumeClaimTemplate"]["spec"] == {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": "200Gi"}},
        "storageClassName": "monitoring-gp3",
    }
    sc = graph.named("monitoring-gp3")
    assert sc.inputs["provisioner"] == "ebs.csi.aws.com", sc.urn
    assert sc.inputs["parameters"] == {
        "type": "gp3",
        "encrypted": "true",
        "csi.storage.k8s.io/fstype": "ext4",
    }
    assert sc.inputs["volumeBindingMode"] == "WaitForFirstConsumer"
    assert sc.inputs["metadata"]["name"] == "monitoring-gp3"
    release = graph.named("monitoring-kube-prometheus-stack")
    assert sc.urn in release.dependencies, f"{release.urn} must wait for the StorageClass"
    assert {"kubeControllerManager", "kubeScheduler", "kubeEtcd", "kubeProxy"} <= {
        k for k, v in _values(graph).items() if v == {"enabled": False}
    }


def test_existing_cluster_uses_its_default_storage_class() -> None:
    graph = record(lambda p: prometheus_stack(p, platform="existing"))
    claim = _values(graph)["prometheus"]["prometheusSpec"]["storageSpec"]["volumeClaimTemplate"]["spec"]
    assert "storageClassName" not in claim
    assert graph.by_type("kubernetes:storage.k8s.io/v1:StorageClass") == []
    assert "kubeEtcd" not in _values(graph)


def test_a_named_storage_class_is_used_and_none_created() -> None:
    graph = record(lambda p: prometheus_stack(p, storage_class_name="fast-encrypted"))
    claim = _values(graph)["alertmanager"]["alertmanagerSpec"]["storage"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == "fast-encrypted"
    assert graph.by_type("kubernetes:storage.k8s.io/v1:StorageClass") == []


def test_grafana_password_is_a_secret_in_a_kubernetes_secret_only() -> None:
    graph = record(prometheus_stack)
    secret = graph.named("monitoring-grafana-admin")
    assert secret.inputs["metadata"] == {
        "name": "grafana-admin",
        "namespace": "monitoring",
        "labels": {"app.kubernetes.io/part-of": "vllm-serving", "app.kubernetes.io/managed-by": "pulumi"},
    }
    assert is_secret(secret.inputs["stringData"]), (
        f"{secret.urn}: the Grafana password must stay a Pulumi secret"
    )
    assert secret.inputs["stringData"]["value"] == {
        "admin-user": "admin",
        "admin-password": "correct-horse-battery-staple",
    }
    grafana = _values(graph)["grafana"]
    assert grafana["admin"] == {
        "existingSecret": "grafana-admin",
        "userKey": "admin-user",
        "passwordKey": "admin-password",
    }
    assert "correct-horse-battery-staple" not in str(graph.named("monitoring-kube-prometheus-stack").inputs)
    assert secret.urn in graph.named("monitoring-kube-prometheus-stack").dependencies


def test_dashboards_sidecar_is_on_and_the_dashboard_config_map_carries_its_label() -> None:
    graph = record(prometheus_stack)
    assert _values(graph)["grafana"]["sidecar"]["dashboards"] == {
        "enabled": True,
        "label": "grafana_dashboard",
        "labelValue": "1",
    }
    config_map = graph.named("monitoring-dashboard")
    assert config_map.inputs["metadata"]["labels"]["grafana_dashboard"] == "1", config_map.urn
    assert config_map.inputs["metadata"]["namespace"] == "monitoring"
    assert list(config_map.inputs["data"]) == [DASHBOARD_FILE]


def test_dcgm_exporter_runs_on_gpu_nodes_only_and_is_scraped() -> None:
    graph = record(prometheus_stack)
    dcgm = graph.named("monitoring-dcgm-exporter")
    values = dcgm.inputs["values"]
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    terms = values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{"matchExpressions": [{"key": "vllm-serving/pool", "operator": "Exists"}]}], dcgm.urn
    assert values["serviceMonitor"]["enabled"] is True
    assert graph.named("monitoring-kube-prometheus-stack").urn in dcgm.dependencies, dcgm.urn


def test_dcgm_exporter_can_be_left_to_the_gpu_operator() -> None:
    graph = record(lambda p: prometheus_stack(p, dcgm_exporter=False))
    assert [r.name for r in graph.by_type(RELEASE)] == ["monitoring-kube-prometheus-stack"]


def test_one_pod_monitor_and_one_rule_per_model_valid_against_the_crds() -> None:
    graph = record(prometheus_stack)
    release = graph.named("monitoring-kube-prometheus-stack")
    monitors = {r.inputs["metadata"]["name"]: r for r in graph.by_type(PODMONITOR)}
    rules = {r.inputs["metadata"]["name"]: r for r in graph.by_type(RULE)}
    assert sorted(monitors) == ["vllm-alpha", "vllm-beta", "vllm-zed"]
    assert sorted(rules) == ["vllm-alpha", "vllm-beta", "vllm-serving-gpu", "vllm-zed"]
    for model in MODELS:
        monitor, rule = monitors[f"vllm-{model.name}"], rules[f"vllm-{model.name}"]
        assert monitor.inputs["spec"] == pod_monitor_spec(model), monitor.urn
        expected_groups = model_rule_groups(model, AlertThresholds(), "docs/runbook.md")
        assert rule.inputs["spec"] == {"groups": expected_groups}, rule.urn
        for resource in (monitor, rule):
            assert resource.inputs["metadata"]["namespace"] == "monitoring", resource.urn
            assert resource.inputs["metadata"]["labels"]["vllm-serving/model"] == model.name, resource.urn
            assert release.urn in resource.dependencies, f"{resource.urn} must wait for the CRDs of the chart"
    for resource in [*monitors.values(), *rules.values()]:
        assert schema_errors(kubernetes_object(resource)) == [], resource.urn


def test_alert_thresholds_and_runbook_follow_args() -> None:
    settings = MonitoringSettings(ttft_slo_seconds=1.5, kv_cache_alert_ratio=0.8)
    graph = record(
        lambda p: prometheus_stack(
            p,
            [BETA],
            settings,
            waiting_requests_alert_threshold=25,
            runbook_url="https://runbooks.example.com/vllm",
        )
    )
    rule = next(r for r in graph.by_type(RULE) if r.inputs["metadata"]["name"] == "vllm-beta")
    alerts = {a["alert"]: a for a in rule.inputs["spec"]["groups"][1]["rules"]}
    assert alerts["VllmTtftSloBreached"]["expr"].endswith("> 1.5"), rule.urn
    assert alerts["VllmKvCacheHigh"]["expr"].endswith("> 0.8"), rule.urn
    assert alerts["VllmQueueGrowing"]["expr"].endswith("> 25"), rule.urn
    assert (
        alerts["VllmKvCacheHigh"]["annotations"]["runbook_url"]
        == "https://runbooks.example.com/vllm#vllmkvcachehigh"
    )


def test_outputs_point_at_in_cluster_services() -> None:
    component = record(prometheus_stack).one(COMPONENT)
    assert component.outputs == {
        "prometheusUrl": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
        "alertmanagerUrl": "http://kube-prometheus-stack-alertmanager.monitoring.svc:9093",
        "grafanaUrl": "http://kube-prometheus-stack-grafana.monitoring.svc:80",
        "grafanaAdminSecret": "monitoring/grafana-admin",
        "storageClassName": "monitoring-gp3",
        "monitoredModels": ["alpha", "beta", "zed"],
    }, component.urn


def test_duplicate_models_are_rejected_before_any_child() -> None:
    with pytest.raises(Exception, match="model 'alpha' is listed more than once"):
        record(lambda p: prometheus_stack(p, [ALPHA, ALPHA]))


def test_same_inputs_give_the_same_graph() -> None:
    first, second = record(prometheus_stack), record(prometheus_stack)
    assert [r.to_dict() for r in first.resources] == [r.to_dict() for r in second.resources]


def test_prod_graph_holds_a_monitor_and_rules_for_every_model() -> None:
    models = monitored_models("prod")
    graph = record(
        lambda p: prometheus_stack(
            p, models, MonitoringSettings(retention_days=30, storage_gib=200, ttft_slo_seconds=1.5)
        ),
        stack="prod",
    )
    names = sorted(m.name for m in models)
    assert names == ["llama-405b", "qwen-32b"]
    monitored = {
        r.inputs["spec"]["selector"]["matchLabels"]["vllm-serving/model"] for r in graph.by_type(PODMONITOR)
    }
    ruled = {r.inputs["metadata"]["labels"].get("vllm-serving/model") for r in graph.by_type(RULE)} - {None}
    assert monitored == ruled == set(names)
    group_alerts = [
        rule["alert"]
        for r in graph.by_type(RULE)
        for group in r.inputs["spec"]["groups"]
        for rule in group["rules"]
        if rule.get("alert") == "VllmGroupPartlyReady"
    ]
    assert group_alerts == ["VllmGroupPartlyReady"], "only the multi-node 405B model has LWS groups"
