"""Every Kubernetes object the program produces, for every shipped stack, validates against the
Kubernetes schemas of the target version and (LeaderWorkerSet, ScaledObject, PodMonitor,
PrometheusRule, ...) against the upstream CRD schemas in ../shared/schemas."""

from __future__ import annotations

import pytest

from offline.manifests import kubernetes_manifests
from offline.validate import validate_manifest
from tests.helpers import SHARED, STACKS, preview


@pytest.mark.parametrize("stack", STACKS)
def test_every_object_of_the_stack_validates(stack: str) -> None:
    manifests = kubernetes_manifests(preview(stack).graph)
    assert len(manifests) >= 10
    problems = {
        f"{m['kind']}/{m['metadata'].get('name')}": errors
        for m in manifests
        if (errors := validate_manifest(m, schemas_dir=SHARED / "schemas"))
    }
    assert problems == {}


def test_prod_has_the_multi_node_crds_validated() -> None:
    kinds = {m["kind"] for m in kubernetes_manifests(preview("prod").graph)}
    assert {"LeaderWorkerSet", "ScaledObject", "PodMonitor", "PrometheusRule", "NetworkPolicy"} <= kinds
