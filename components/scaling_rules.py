"""How each model scales and how GPU nodes follow: pure decisions, no Pulumi.

Owns the ScaleTarget (what one ScaledObject scales), the KEDA trigger query on vLLM's waiting
requests, the ScaledObject spec (threshold, bounds, cooldown covering the cold start, fallback,
HPA scale-down behaviour), and the cluster autoscaler's side: its least-privilege IAM policy,
the EKS Pod Identity trust policy, the image matching the cluster's Kubernetes minor version and
the chart values tuned for GPU nodes. Every function takes plain values and returns plain data.

KEDA facts: facts doc section 5.3 and keda-docs content/docs/2.21/reference/scaledobject-spec.md.
Cluster autoscaler: kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md and FAQ.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from planning import ServedModel
    from settings import AutoscalingSettings

WorkloadKind = Literal["Deployment", "LeaderWorkerSet"]
API_VERSIONS: dict[str, str] = {"Deployment": "apps/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1"}

TRIGGER_NAME = "waiting-requests"
FALLBACK_FAILURE_THRESHOLD = 3
FALLBACK_BEHAVIOR = "currentReplicasIfHigher"  # a Prometheus outage never removes serving replicas
MAX_STABILIZATION_SECONDS = 3600  # KEDA's CRD patch config/crd/patches/scaledobject_patch.yaml
SCALE_DOWN_POLICY = {"type": "Pods", "value": 1, "periodSeconds": 300}  # one GPU replica per 5 minutes
SETTINGS_KEY = "vllm-serving:autoscaling"

KEDA_NAMESPACE = "keda"
CLUSTER_AUTOSCALER_NAMESPACE = "kube-system"
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"
CLUSTER_AUTOSCALER_IMAGE = "registry.k8s.io/autoscaling/cluster-autoscaler"
ASG_DISCOVERY_TAG = "k8s.io/cluster-autoscaler/enabled"


def cluster_tag(cluster_name: str) -> str:
    """The ASG tag EKS managed node groups carry (value `owned`) and auto-discovery matches."""
    return f"k8s.io/cluster-autoscaler/{cluster_name}"


@dataclass(frozen=True)
class ScaleTarget:
    """One workload KEDA scales: a model's Deployment, or its LeaderWorkerSet (whole groups)."""

    model: str
    """The model's `name` (metric label `model`, pod label `vllm-serving/model`)."""
    namespace: str
    """Namespace of the workload; the ScaledObject is created there."""
    kind: WorkloadKind
    """Deployment (fits one node) or LeaderWorkerSet (spans nodes; its scale subresource counts groups)."""
    workload_name: str
    """metadata.name of the Deployment / LeaderWorkerSet (also the ScaledObject's name)."""
    min_replicas: int
    """Lowest replica count (ServedModel.min_replicas; 0 = scale to zero)."""
    max_replicas: int
    """Highest replica count (ServedModel.max_replicas)."""
    cold_start_seconds: float
    """Pod start to ready (node, weights, warm-up); KEDA's cooldown is never shorter."""

    @property
    def api_version(self) -> str:
        return API_VERSIONS[self.kind]

    @classmethod
    def for_model(
        cls, model: ServedModel, *, namespace: str, workload_name: str, cold_start_seconds: float
    ) -> ScaleTarget:
        """From a planned model: LeaderWorkerSet when a replica spans nodes, else Deployment."""
        return cls(
            model=model.settings.name,
            namespace=namespace,
            kind="LeaderWorkerSet" if model.multi_node else "Deployment",
            workload_name=workload_name,
            min_replicas=model.min_replicas,
            max_replicas=model.max_replicas,
            cold_start_seconds=cold_start_seconds,
        )


def validate_targets(targets: Sequence[ScaleTarget], settings: AutoscalingSettings) -> list[str]:
    """Every problem with the targets and the scaling settings, each naming what to change."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for t in targets:
        if (t.namespace, t.workload_name) in seen:
            problems.append(
                f"{t.namespace}/{t.workload_name} is targeted twice; one ScaledObject per workload"
            )
        seen.add((t.namespace, t.workload_name))
        if t.kind not in API_VERSIONS:
            problems.append(
                f"model {t.model!r}: kind {t.kind!r} is not one of {', '.join(sorted(API_VERSIONS))}"
            )
        if t.max_replicas < 1:
            problems.append(f"model {t.model!r}: maxReplicas must be at least 1 (got {t.max_replicas})")
        if not 0 <= t.min_replicas <= t.max_replicas:
            problems.append(
                f"model {t.model!r}: minReplicas {t.min_replicas} must be between 0 and maxReplicas "
                f"{t.max_replicas}"
            )
        if settings.fallback_replicas is not None and settings.fallback_replicas > t.max_replicas:
            problems.append(
                f"{SETTINGS_KEY}.fallbackReplicas: {settings.fallback_replicas} exceeds maxReplicas "
                f"{t.max_replicas} of model {t.model!r}"
            )
    if settings.scale_down_stabilization_seconds > MAX_STABILIZATION_SECONDS:
        problems.append(
            f"{SETTINGS_KEY}.scaleDownStabilizationSeconds: {settings.scale_down_stabilization_seconds} "
            f"exceeds the {MAX_STABILIZATION_SECONDS} seconds KEDA accepts"
        )
    return problems


def waiting_requests_query(target: ScaleTarget) -> str:
    """Requests waiting in the model's queues, summed over its serving (leader) pods: one sample."""
    return f'sum(vllm:num_requests_waiting{{namespace="{target.namespace}",model="{target.model}"}})'


def cooldown_seconds(target: ScaleTarget, settings: AutoscalingSettings) -> int:
    """KEDA cooldown (idle time before scaling to zero): never shorter than one cold start."""
    return max(settings.cooldown_seconds, math.ceil(target.cold_start_seconds))


def fallback_replicas(target: ScaleTarget, settings: AutoscalingSettings) -> int:
    """Replicas to hold while Prometheus cannot be queried: the setting, else minReplicas (at least 1)."""
    if settings.fallback_replicas is not None:
        return settings.fallback_replicas
    return max(target.min_replicas, 1)


def scaled_object_spec(
    target: ScaleTarget, settings: AutoscalingSettings, server_address: Any
) -> dict[str, Any]:
    """ScaledObject spec (keda.sh/v1alpha1) for one target; `server_address` is the Prometheus URL.

    metricType AverageValue: the HPA wants ceil(waiting / threshold) replicas, i.e. `threshold` waiting
    requests per replica; KEDA's fallback also computes its replica count with that formula.
    """
    return {
        "scaleTargetRef": {
            "apiVersion": target.api_version,
            "kind": target.kind,
            "name": target.workload_name,
        },
        "pollingInterval": settings.polling_interval_seconds,
        "cooldownPeriod": cooldown_seconds(target, settings),
        "initialCooldownPeriod": math.ceil(target.cold_start_seconds),
        "minReplicaCount": target.min_replicas,
        "maxReplicaCount": target.max_replicas,
        "fallback": {
            "failureThreshold": FALLBACK_FAILURE_THRESHOLD,
            "replicas": fallback_replicas(target, settings),
            "behavior": FALLBACK_BEHAVIOR,
        },
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": settings.scale_down_stabilization_seconds,
                        "policies": [dict(SCALE_DOWN_POLICY)],
                    }
                }
            }
        },
        "triggers": [
            {
                "type": "prometheus",
                "name": TRIGGER_NAME,
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": server_address,
                    "query": waiting_requests_query(target),
                    "threshold": str(settings.waiting_requests_threshold),
                    "activationThreshold": str(settings.activation_threshold),
                    # With replicas running an empty result means scraping broke: report an error so the
                    # fallback holds replicas. At zero replicas there are no series, which is normal.
                    "ignoreNullValues": "true" if target.min_replicas == 0 else "false",
                },
            }
        ],
    }


def keda_values() -> dict[str, Any]:
    """KEDA chart values: CRDs from the chart, two operator replicas behind leader election."""
    return {"crds": {"install": True}, "operator": {"replicaCount": 2}}


def cluster_autoscaler_image_tag(kubernetes_version: str, tags: Mapping[str, str]) -> str:
    """The cluster autoscaler release for a Kubernetes minor version (they must match)."""
    known = {k: v for k, v in tags.items() if not k.startswith("_")}
    if kubernetes_version not in known:
        raise ValueError(
            f"vllm-serving:cluster.version: no cluster autoscaler release is pinned for Kubernetes "
            f"{kubernetes_version}; pinned: {', '.join(sorted(known))} (components/data/observability.json)"
        )
    return known[kubernetes_version]


def cluster_autoscaler_values(cluster_name: str, region: str, image_tag: str) -> dict[str, Any]:
    """Chart values for GPU node groups: slow scale-down, discovery by the node groups' ASG tags."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "fullnameOverride": "cluster-autoscaler",
        "autoDiscovery": {
            "clusterName": cluster_name,
            "tags": [ASG_DISCOVERY_TAG, cluster_tag(cluster_name)],
        },
        "image": {"repository": CLUSTER_AUTOSCALER_IMAGE, "tag": image_tag},
        "rbac": {"serviceAccount": {"create": True, "name": CLUSTER_AUTOSCALER_SERVICE_ACCOUNT}},
        "extraArgs": {
            # GPU nodes take minutes to join and replicas minutes to load: do not give them back early.
            "scale-down-unneeded-time": "15m",
            "scale-down-delay-after-add": "15m",
            "max-node-provision-time": "25m",
            "expander": "least-waste",
            "balance-similar-node-groups": True,
            # vLLM's /dev/shm is an emptyDir: without this, GPU nodes would never scale down.
            "skip-nodes-with-local-storage": False,
            # Device plugins and exporters run on every GPU node; they must not keep an idle node alive.
            "ignore-daemonsets-utilization": True,
        },
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "priorityClassName": "system-cluster-critical",
        "podAnnotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
        "resources": {"requests": {"cpu": "100m", "memory": "600Mi"}, "limits": {"memory": "600Mi"}},
    }


def _policy(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)}, sort_keys=True)


def cluster_autoscaler_policy(cluster_name: str) -> str:
    """Least privilege: change only this cluster's node groups (tag condition), describe the rest."""
    return _policy(
        {
            "Sid": "ScaleOwnedNodeGroups",
            "Effect": "Allow",
            "Action": ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"],
            "Resource": "*",
            "Condition": {"StringEquals": {f"aws:ResourceTag/{cluster_tag(cluster_name)}": "owned"}},
        },
        {
            "Sid": "DescribeNodeGroups",
            "Effect": "Allow",
            "Action": [
                "autoscaling:DescribeAutoScalingGroups",
                "autoscaling:DescribeAutoScalingInstances",
                "autoscaling:DescribeLaunchConfigurations",
                "autoscaling:DescribeScalingActivities",
                "autoscaling:DescribeTags",
                "ec2:DescribeImages",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplateVersions",
                "ec2:GetInstanceTypesFromInstanceRequirements",
                "eks:DescribeNodegroup",
            ],
            "Resource": "*",
        },
    )
