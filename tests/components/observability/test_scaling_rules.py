"""components/scaling_rules.py: ScaledObject spec, trigger query, cluster autoscaler decisions.

Checks the ScaledObject spec field by field (target, query, threshold, bounds, cooldown,
fallback, HPA behaviour), that it validates against KEDA's CRD schema, that the query parses,
the cooldown/fallback/null-value rules, every validation message, the cluster autoscaler's
least-privilege policy, trust policy, image per Kubernetes version and GPU-tuned values.
"""

from __future__ import annotations

import json

import promql_parser
import pytest

from components.prometheus_stack import observability_data
from components.scaling_rules import (
    ScaleTarget,
    cluster_autoscaler_image_tag,
    cluster_autoscaler_policy,
    cluster_autoscaler_values,
    cooldown_seconds,
    fallback_replicas,
    scaled_object_spec,
    validate_targets,
    waiting_requests_query,
)
from settings import AutoscalingSettings
from tests.components.observability.observability_helpers import (
    ALPHA_TARGET,
    BETA_TARGET,
    PROMETHEUS_URL,
    scale_targets,
    schema_errors,
)

TAGS = observability_data()["clusterAutoscalerImageTags"]["tags"]


def _scaled_object(target: ScaleTarget, settings: AutoscalingSettings) -> dict:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": target.workload_name, "namespace": target.namespace},
        "spec": scaled_object_spec(target, settings, PROMETHEUS_URL),
    }


def test_scaled_object_for_a_leader_worker_set() -> None:
    settings = AutoscalingSettings(enabled=True, cooldown_seconds=600, waiting_requests_threshold=10)
    assert scaled_object_spec(ALPHA_TARGET, settings, PROMETHEUS_URL) == {
        "scaleTargetRef": {
            "apiVersion": "leaderworkerset.x-k8s.io/v1",
            "kind": "LeaderWorkerSet",
            "name": "alpha-vllm",
        },
        "pollingInterval": 15,
        "cooldownPeriod": 900,
        "initialCooldownPeriod": 900,
        "minReplicaCount": 1,
        "maxReplicaCount": 2,
        "fallback": {"failureThreshold": 3, "replicas": 1, "behavior": "currentReplicasIfHigher"},
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": 600,
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
                    }
                }
            }
        },
        "triggers": [
            {
                "type": "prometheus",
                "name": "waiting-requests",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": PROMETHEUS_URL,
                    "query": 'sum(vllm:num_requests_waiting{namespace="vllm",model="alpha"})',
                    "threshold": "10",
                    "activationThreshold": "0",
                    "ignoreNullValues": "false",
                },
            }
        ],
    }


def test_deployment_target_and_settings_flow_into_the_spec() -> None:
    settings = AutoscalingSettings(
        enabled=True,
        waiting_requests_threshold=4,
        activation_threshold=2,
        polling_interval_seconds=30,
        scale_down_stabilization_seconds=900,
        fallback_replicas=2,
    )
    spec = scaled_object_spec(BETA_TARGET, settings, PROMETHEUS_URL)
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "beta-vllm"}
    assert spec["pollingInterval"] == 30
    assert spec["cooldownPeriod"] == 300  # the setting: longer than the 120 s cold start
    assert spec["fallback"]["replicas"] == 2
    assert (
        spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"][
            "stabilizationWindowSeconds"
        ]
        == 900
    )
    metadata = spec["triggers"][0]["metadata"]
    assert (metadata["threshold"], metadata["activationThreshold"]) == ("4", "2")


def test_scale_to_zero_target_tolerates_empty_results() -> None:
    target = ScaleTarget("zed", "vllm", "Deployment", "zed-vllm", 0, 2, 300)
    spec = scaled_object_spec(target, AutoscalingSettings(enabled=True, scale_to_zero=True), PROMETHEUS_URL)
    assert spec["minReplicaCount"] == 0
    assert spec["triggers"][0]["metadata"]["ignoreNullValues"] == "true"
    assert spec["fallback"]["replicas"] == 1, "a Prometheus outage must not park a model at zero"


@pytest.mark.parametrize(
    ("cooldown", "cold_start", "expected"), [(300, 120, 300), (300, 900.2, 901), (600, 600, 600)]
)
def test_cooldown_is_never_shorter_than_the_cold_start(
    cooldown: int, cold_start: float, expected: int
) -> None:
    target = ScaleTarget("m", "vllm", "Deployment", "m-vllm", 1, 2, cold_start)
    assert cooldown_seconds(target, AutoscalingSettings(cooldown_seconds=cooldown)) == expected


def test_fallback_defaults_to_min_replicas() -> None:
    target = ScaleTarget("m", "vllm", "Deployment", "m-vllm", 2, 4, 60)
    assert fallback_replicas(target, AutoscalingSettings()) == 2
    assert fallback_replicas(target, AutoscalingSettings(fallback_replicas=3)) == 3


def test_query_parses_and_selects_one_model() -> None:
    query = waiting_requests_query(BETA_TARGET)
    assert query == 'sum(vllm:num_requests_waiting{namespace="vllm",model="beta"})'
    promql_parser.parse(query)


@pytest.mark.parametrize("target", [ALPHA_TARGET, BETA_TARGET], ids=["lws", "deployment"])
def test_scaled_object_validates_against_keda_schema(target: ScaleTarget) -> None:
    obj = _scaled_object(target, AutoscalingSettings(enabled=True))
    assert schema_errors(obj) == []


def test_schema_check_can_fail() -> None:
    obj = _scaled_object(BETA_TARGET, AutoscalingSettings(enabled=True))
    del obj["spec"]["triggers"][0]["type"]
    assert any("'type' is a required property" in e for e in schema_errors(obj))


@pytest.mark.parametrize(
    ("targets", "settings", "message"),
    [
        ([BETA_TARGET, BETA_TARGET], AutoscalingSettings(), "vllm/beta-vllm is targeted twice"),
        (
            [ScaleTarget("m", "vllm", "Deployment", "m", 0, 0, 60)],
            AutoscalingSettings(),
            "maxReplicas must be at least 1",
        ),
        (
            [ScaleTarget("m", "vllm", "Deployment", "m", 3, 2, 60)],
            AutoscalingSettings(),
            "minReplicas 3 must be between",
        ),
        (
            [ScaleTarget("m", "vllm", "StatefulSet", "m", 1, 2, 60)],
            AutoscalingSettings(),
            "kind 'StatefulSet'",
        ),
        (
            [BETA_TARGET],
            AutoscalingSettings(fallback_replicas=5),
            "vllm-serving:autoscaling.fallbackReplicas: 5 exceeds maxReplicas 3 of model 'beta'",
        ),
        (
            [BETA_TARGET],
            AutoscalingSettings(scale_down_stabilization_seconds=4000),
            "vllm-serving:autoscaling.scaleDownStabilizationSeconds: 4000 exceeds the 3600 seconds KEDA accepts",
        ),
    ],
)
def test_validation_names_what_to_change(targets: list, settings: AutoscalingSettings, message: str) -> None:
    problems = validate_targets(targets, settings)
    assert any(message in p for p in problems), problems


def test_valid_targets_have_no_problems() -> None:
    assert validate_targets([ALPHA_TARGET, BETA_TARGET], AutoscalingSettings(enabled=True)) == []


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        ("dev", {"llama-8b": ("Deployment", 1, 1)}),
        ("prod", {"llama-405b": ("LeaderWorkerSet", 1, 2), "qwen-32b": ("Deployment", 1, 3)}),
        ("onprem", {"llama-70b": ("Deployment", 1, 1)}),
    ],
)
def test_targets_of_each_stack_follow_the_plan(stack: str, expected: dict) -> None:
    targets = {t.model: t for t in scale_targets(stack)}
    assert {name: (t.kind, t.min_replicas, t.max_replicas) for name, t in targets.items()} == expected


def test_cluster_autoscaler_image_follows_the_kubernetes_minor_version() -> None:
    assert cluster_autoscaler_image_tag("1.33", TAGS) == "v1.33.1"
    assert cluster_autoscaler_image_tag("1.30", TAGS) == "v1.30.6"
    with pytest.raises(
        ValueError, match=r"vllm-serving:cluster\.version: no cluster autoscaler release is pinned for"
    ):
        cluster_autoscaler_image_tag("1.39", TAGS)


def test_cluster_autoscaler_policy_scales_only_this_clusters_node_groups() -> None:
    policy = json.loads(cluster_autoscaler_policy("gpu-cluster"))
    scale, describe = policy["Statement"]
    assert scale["Action"] == [
        "autoscaling:SetDesiredCapacity",
        "autoscaling:TerminateInstanceInAutoScalingGroup",
    ]
    assert scale["Condition"] == {
        "StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/gpu-cluster": "owned"}
    }
    assert all(a.split(":")[1].startswith(("Describe", "Get")) for a in describe["Action"]), describe[
        "Action"
    ]
    assert "Condition" not in describe


def test_cluster_autoscaler_values_suit_gpu_nodes() -> None:
    values = cluster_autoscaler_values("gpu-cluster", "us-east-1", "v1.33.1")
    assert values["autoDiscovery"] == {
        "clusterName": "gpu-cluster",
        "tags": ["k8s.io/cluster-autoscaler/enabled", "k8s.io/cluster-autoscaler/gpu-cluster"],
    }
    assert values["image"] == {
        "repository": "registry.k8s.io/autoscaling/cluster-autoscaler",
        "tag": "v1.33.1",
    }
    assert values["awsRegion"] == "us-east-1"
    assert values["extraArgs"] == {
        "scale-down-unneeded-time": "15m",
        "scale-down-delay-after-add": "15m",
        "max-node-provision-time": "25m",
        "expander": "least-waste",
        "balance-similar-node-groups": True,
        "skip-nodes-with-local-storage": False,
        "ignore-daemonsets-utilization": True,
    }
    assert values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in values["tolerations"]
