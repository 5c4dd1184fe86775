"""The program's wiring (__main__.py) as the offline engine records it for the shipped stacks:
orderings between components that no single component test can see."""

from __future__ import annotations

from offline.recorder import Graph
from tests.helpers import preview

PROMETHEUS_STACK = "vllm-serving:prometheus_stack:PrometheusStack"
ADDON = "aws:eks/addon:Addon"


def _dependency_names(graph: Graph, urns: list[str]) -> set[str]:
    return {graph.get(urn).name for urn in urns}


def test_monitoring_waits_for_the_ebs_csi_driver_on_eks() -> None:
    graph = preview("prod").graph
    (monitoring,) = graph.by_type(PROMETHEUS_STACK)
    ebs = next(r for r in graph.by_type(ADDON) if r.inputs["addonName"] == "aws-ebs-csi-driver")
    assert ebs.name in _dependency_names(graph, monitoring.dependencies), (
        "Prometheus and Alertmanager PVCs stay Pending until the EBS CSI driver runs"
    )


def test_existing_clusters_get_no_aws_add_ons() -> None:
    graph = preview("onprem").graph
    assert graph.by_type(ADDON) == []
    (monitoring,) = graph.by_type(PROMETHEUS_STACK)
    assert all(not name.startswith("eks-") for name in _dependency_names(graph, monitoring.dependencies))
