"""ClusterAddons per stack: namespaces with Pod Security labels, default deny, device plugins, LWS.

prod (eks, EFA pools, a multi-node EFA model): NVIDIA + EFA device plugins + LWS, the EFA plugin
only on the EFA pools with the image from the cluster's region, serving namespace enforcing
`privileged` (IPC_LOCK) with baseline warn/audit. dev (eks, TCP): no EFA plugin, `baseline`.
onprem (existing): only the LWS controller. Every object schema-valid, through the explicit
provider, with the component as parent; charts and images pinned from the data file.
"""

from __future__ import annotations

from typing import Any

import pulumi_kubernetes as kubernetes
import pytest

from components.cluster_addons import ClusterAddons, addon_charts, release_values
from components.workload_facts import chart
from offline.recorder import Graph, record_program
from offline.validate import is_manifest, manifest_from_recorded, validate_manifest
from tests.components.workloads.workload_fixtures import addons_args, planned

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
NAMESPACE_TYPE = "kubernetes:core/v1:Namespace"
POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"


def record(stack: str, patch: Any = None) -> Graph:
    settings, plan = planned(stack, patch)

    def program() -> None:
        provider = kubernetes.Provider("k8s", kubeconfig="{}")
        ClusterAddons("addons", addons_args(settings, plan, provider))

    return record_program(program, stack=stack)


def releases(graph: Graph) -> dict[str, Any]:
    return {r.inputs["name"]: r for r in graph.by_type(RELEASE_TYPE)}


def namespace(graph: Graph, name: str) -> Any:
    return next(r for r in graph.by_type(NAMESPACE_TYPE) if r.inputs["metadata"]["name"] == name)


def test_prod_installs_both_device_plugins_and_lws() -> None:
    graph = record("prod")
    found = releases(graph)
    assert sorted(found) == ["aws-efa-k8s-device-plugin", "lws", "nvidia-device-plugin"]
    for name, release in found.items():
        pin = chart(name)
        assert (release.inputs["chart"], release.inputs["version"]) == (pin.chart, pin.version), release.urn
        assert release.inputs["namespace"] == pin.namespace, release.urn
    lws = found["lws"]
    assert lws.inputs["chart"] == "oci://registry.k8s.io/lws/charts/lws" and lws.inputs["version"] == "0.10.0"
    assert "repositoryOpts" not in lws.inputs, lws.urn
    assert lws.inputs["createNamespace"] is True, lws.urn
    assert lws.inputs["values"]["image"]["manager"]["tag"] == "v0.10.0", lws.urn


def test_efa_plugin_runs_only_on_efa_pools_tolerating_the_gpu_taint() -> None:
    efa = releases(record("prod"))["aws-efa-k8s-device-plugin"]
    values = efa.inputs["values"]
    assert values["supportedInstanceLabels"] == {"keys": ["vllm-serving/pool"], "values": ["h100", "l40s"]}, (
        efa.urn
    )
    assert values["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert values["image"] == {
        "repository": "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-efa-k8s-device-plugin",
        "tag": "v0.5.20",
    }, efa.urn
    assert efa.inputs["repositoryOpts"] == {"repo": "https://aws.github.io/eks-charts"}, efa.urn


def test_nvidia_plugin_runs_on_the_gpu_pools_tolerating_the_gpu_taint() -> None:
    nvidia = releases(record("dev"))["nvidia-device-plugin"]
    values = nvidia.inputs["values"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in values["tolerations"]
    assert values["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "vllm-serving/pool", "operator": "Exists"}]}]
    }, nvidia.urn
    assert values["image"] == {"repository": "nvcr.io/nvidia/k8s-device-plugin", "tag": "v0.17.4"}, nvidia.urn


def test_dev_has_no_efa_plugin_and_a_baseline_namespace() -> None:
    graph = record("dev")
    assert sorted(releases(graph)) == ["lws", "nvidia-device-plugin"]
    labels = namespace(graph, "vllm").inputs["metadata"]["labels"]
    assert labels == {
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/enforce-version": "v1.33",
        "pod-security.kubernetes.io/warn": "baseline",
        "pod-security.kubernetes.io/warn-version": "v1.33",
        "pod-security.kubernetes.io/audit": "baseline",
        "pod-security.kubernetes.io/audit-version": "v1.33",
    }


def test_rdma_pods_make_the_serving_namespace_privileged_with_baseline_warnings() -> None:
    graph = record("prod")
    labels = namespace(graph, "vllm").inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["pod-security.kubernetes.io/warn"] == "baseline"
    assert labels["pod-security.kubernetes.io/audit"] == "baseline"


def test_existing_cluster_gets_only_the_lws_controller() -> None:
    graph = record("onprem")
    assert sorted(releases(graph)) == ["lws"]
    assert (
        namespace(graph, "vllm").inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        == "baseline"
    )


def test_serving_namespace_is_default_deny_and_monitoring_namespace_exists() -> None:
    graph = record("prod")
    deny = graph.one(POLICY_TYPE)
    assert deny.inputs["metadata"] == {"name": "default-deny", "namespace": "vllm"}, deny.urn
    assert deny.inputs["spec"] == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}, deny.urn
    monitoring = namespace(graph, "monitoring")
    assert monitoring.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    outputs = graph.one("vllm-serving:cluster_addons:ClusterAddons").outputs
    assert outputs["servingNamespace"] == "vllm" and outputs["monitoringNamespace"] == "monitoring"
    assert outputs["charts"] == {
        "nvidia-device-plugin": "0.17.4",
        "aws-efa-k8s-device-plugin": "v0.5.30",
        "lws": "0.10.0",
    }


def test_no_monitoring_namespace_when_monitoring_is_off() -> None:
    def off(raw: dict[str, Any]) -> None:
        raw.setdefault("monitoring", {})["enabled"] = False

    graph = record("dev", off)
    assert [n.inputs["metadata"]["name"] for n in graph.by_type(NAMESPACE_TYPE)] == ["vllm"]
    assert "monitoringNamespace" not in graph.one("vllm-serving:cluster_addons:ClusterAddons").outputs


@pytest.mark.parametrize("stack", ["dev", "prod", "onprem"])
def test_children_use_the_provider_and_objects_are_schema_valid(stack: str) -> None:
    graph = record(stack)
    parent = graph.one("vllm-serving:cluster_addons:ClusterAddons")
    provider = graph.one("pulumi:providers:kubernetes")
    for child in graph.children(parent):
        assert child.provider_urn == provider.urn, child.urn
        assert child.name.startswith("addons-"), child.urn
        if is_manifest(child):
            assert validate_manifest(manifest_from_recorded(child)) == [], child.urn


def test_efa_plugin_needs_the_region() -> None:
    with pytest.raises(ValueError, match="region is required with EFA pools"):
        release_values(chart("aws-efa-k8s-device-plugin"), region=None, efa_pools=["h100"])


def test_addon_charts_per_platform() -> None:
    assert addon_charts("eks", ["h100"]) == ["nvidia-device-plugin", "aws-efa-k8s-device-plugin", "lws"]
    assert addon_charts("eks", []) == ["nvidia-device-plugin", "lws"]
    assert addon_charts("existing", ["h100"]) == ["lws"]
