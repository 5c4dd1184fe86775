"""Autoscaling as recorded by the offline recorder (wire-form inputs, parents, providers).

Checks: KEDA in its own `keda` namespace from the pinned chart; one ScaledObject per target in
the target's namespace, waiting for KEDA, valid against KEDA's CRD schema, with the target,
query, threshold, bounds, cooldown and fallback of each shipped stack; on eks the cluster
autoscaler with a Pod Identity role limited to the cluster's node groups, started only after
its association exists; none of that on an existing cluster; and the validation messages.
"""

from __future__ import annotations

import json

import pytest

from components.prometheus_stack import chart_pin
from components.scaling_rules import ScaleTarget
from settings import AutoscalingSettings
from tests.components.observability.observability_helpers import (
    PROMETHEUS_URL,
    autoscaling,
    kubernetes_object,
    record,
    scale_targets,
    schema_errors,
    stack_plan,
)

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
RELEASE = "kubernetes:helm.sh/v3:Release"
COMPONENT = "vllm-serving:autoscaling:Autoscaling"


def _scaled_objects(graph) -> dict:
    return {r.inputs["metadata"]["name"]: r for r in graph.by_type(SCALED_OBJECT)}


def test_keda_runs_in_its_own_namespace_from_the_pinned_chart() -> None:
    graph = record(autoscaling)
    namespace = graph.named("autoscaling-keda-namespace")
    assert namespace.inputs["metadata"]["name"] == "keda", namespace.urn
    assert namespace.inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    keda = graph.named("autoscaling-keda")
    pin = chart_pin("keda")
    assert (keda.inputs["chart"], keda.inputs["version"], keda.inputs["repositoryOpts"]["repo"]) == (
        "keda",
        "2.20.2",
        "https://kedacore.github.io/charts",
    ), keda.urn
    assert (keda.inputs["name"], keda.inputs["namespace"]) == (pin.release, "keda")
    assert namespace.urn in keda.dependencies, keda.urn


def test_children_are_parented_and_in_cluster_ones_use_the_explicit_provider() -> None:
    graph = record(autoscaling)
    children = graph.children(graph.one(COMPONENT))
    assert sorted(c.name for c in children) == [
        "autoscaling-alpha-scaledobject",
        "autoscaling-beta-scaledobject",
        "autoscaling-cluster-autoscaler",
        "autoscaling-cluster-autoscaler-identity",
        "autoscaling-cluster-autoscaler-policy",
        "autoscaling-cluster-autoscaler-role",
        "autoscaling-keda",
        "autoscaling-keda-namespace",
    ]
    for child in children:
        assert child.name.startswith("autoscaling-"), child.urn
        if child.type.startswith("kubernetes:"):
            assert child.provider_urn.endswith("pulumi:providers:kubernetes::k8s"), (
                f"{child.urn}: no explicit provider"
            )


def test_one_scaled_object_per_target_valid_against_keda_schema() -> None:
    graph = record(autoscaling)
    keda = graph.named("autoscaling-keda")
    objects = _scaled_objects(graph)
    assert sorted(objects) == ["alpha-vllm", "beta-vllm"]
    for resource in objects.values():
        assert resource.inputs["metadata"]["namespace"] == "vllm", resource.urn
        assert keda.urn in resource.dependencies, f"{resource.urn} must wait for KEDA's CRDs"
        assert schema_errors(kubernetes_object(resource)) == [], resource.urn
        trigger = resource.inputs["spec"]["triggers"][0]
        assert trigger["metadata"]["serverAddress"] == PROMETHEUS_URL, resource.urn
        assert trigger["metricType"] == "AverageValue", (
            f"{resource.urn}: KEDA's fallback formula needs AverageValue"
        )
    lws = objects["alpha-vllm"].inputs["spec"]
    assert lws["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "name": "alpha-vllm",
    }
    assert (lws["minReplicaCount"], lws["maxReplicaCount"], lws["cooldownPeriod"]) == (1, 2, 900)


@pytest.mark.parametrize("stack", ["dev", "prod", "onprem"])
def test_scaled_objects_of_each_stack(stack: str) -> None:
    settings, plan = stack_plan(stack)
    policy = settings.autoscaling.model_copy(update={"enabled": True})
    graph = record(
        lambda p: autoscaling(
            p,
            scale_targets(stack),
            policy,
            platform=settings.platform,
            kubernetes_version=settings.cluster.version,
        ),
        stack=stack,
    )
    objects = _scaled_objects(graph)
    assert sorted(objects) == sorted(f"{m.settings.name}-vllm" for m in plan.models)
    cold_start = plan.storage.replica_cold_start_seconds
    for model in plan.models:
        resource = objects[f"{model.settings.name}-vllm"]
        spec = resource.inputs["spec"]
        kind = "LeaderWorkerSet" if model.multi_node else "Deployment"
        assert spec["scaleTargetRef"]["kind"] == kind, resource.urn
        assert spec["scaleTargetRef"]["name"] == f"{model.settings.name}-vllm", resource.urn
        assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (model.min_replicas, model.max_replicas)
        assert spec["cooldownPeriod"] == max(policy.cooldown_seconds, -(-cold_start // 1)), resource.urn
        assert spec["fallback"] == {
            "failureThreshold": 3,
            "replicas": max(model.min_replicas, 1),
            "behavior": "currentReplicasIfHigher",
        }, resource.urn
        metadata = spec["triggers"][0]["metadata"]
        assert metadata["query"] == (
            f'sum(vllm:num_requests_waiting{{namespace="{settings.serving.namespace}",model="{model.settings.name}"}})'
        ), resource.urn
        assert metadata["threshold"] == str(policy.waiting_requests_threshold), resource.urn
        assert schema_errors(kubernetes_object(resource)) == [], resource.urn


def test_prod_scales_the_405b_groups_and_the_32b_deployment() -> None:
    objects = {t.model: t for t in scale_targets("prod")}
    assert (objects["llama-405b"].kind, objects["llama-405b"].max_replicas) == ("LeaderWorkerSet", 2)
    assert (objects["qwen-32b"].kind, objects["qwen-32b"].max_replicas) == ("Deployment", 3)
    settings, _ = stack_plan("prod")
    assert settings.autoscaling.enabled and settings.autoscaling.cooldown_seconds == 600


def test_cluster_autoscaler_on_eks_with_a_least_privilege_pod_identity_role() -> None:
    graph = record(autoscaling)
    role = graph.one("aws:iam/role:Role")
    trust = json.loads(role.inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}, role.urn
    policy = json.loads(graph.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    assert policy["Statement"][0]["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/gpu-cluster": "owned"}
    }
    association = graph.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert {k: association.inputs[k] for k in ("clusterName", "namespace", "serviceAccount")} == {
        "clusterName": "gpu-cluster",
        "namespace": "kube-system",
        "serviceAccount": "cluster-autoscaler",
    }, association.urn
    helm = graph.named("autoscaling-cluster-autoscaler")
    assert helm.inputs["namespace"] == "kube-system" and helm.inputs["version"] == "9.59.0", helm.urn
    values = helm.inputs["values"]
    assert values["autoDiscovery"]["clusterName"] == "gpu-cluster"
    assert values["image"]["tag"] == "v1.33.1"
    assert values["rbac"]["serviceAccount"]["name"] == association.inputs["serviceAccount"]
    assert association.urn in helm.dependencies, f"{helm.urn} must start after its Pod Identity association"


def test_existing_cluster_gets_keda_but_no_cluster_autoscaler() -> None:
    graph = record(
        lambda p: autoscaling(p, platform="existing", cluster_name=None, region=None, kubernetes_version=None)
    )
    assert [r for r in graph.resources if r.type.startswith("aws:")] == []
    assert [r.name for r in graph.by_type(RELEASE)] == ["autoscaling-keda"]
    assert len(graph.by_type(SCALED_OBJECT)) == 2
    assert graph.one(COMPONENT).outputs["scaledObjects"] == ["vllm/alpha-vllm", "vllm/beta-vllm"]


def test_outputs() -> None:
    component = record(autoscaling).one(COMPONENT)
    assert component.outputs["kedaNamespace"] == "keda", component.urn
    assert component.outputs["scaledObjects"] == ["vllm/alpha-vllm", "vllm/beta-vllm"], component.urn
    assert component.outputs["clusterAutoscalerRoleArn"].startswith("arn:"), component.urn


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"cluster_name": None, "kubernetes_version": None},
            "platform eks needs cluster_name, kubernetes_version",
        ),
        (
            {"settings": AutoscalingSettings(scale_down_stabilization_seconds=7200)},
            "exceeds the 3600 seconds",
        ),
        (
            {"targets": [ScaleTarget("m", "vllm", "Deployment", "m", 0, 0, 60)]},
            "maxReplicas must be at least 1",
        ),
    ],
)
def test_invalid_args_are_rejected_with_a_message(overrides: dict, message: str) -> None:
    with pytest.raises(Exception, match=message):
        record(lambda p: autoscaling(p, **overrides))


def test_unpinned_kubernetes_version_is_rejected() -> None:
    with pytest.raises(Exception, match=r"no cluster autoscaler release is pinned for Kubernetes 1\.39"):
        record(lambda p: autoscaling(p, kubernetes_version="1.39"))
