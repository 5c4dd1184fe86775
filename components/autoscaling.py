"""Autoscaling: replicas follow the request queue, GPU nodes follow the replicas.

Builds:
- the `keda` namespace and KEDA (pinned Helm chart);
- one ScaledObject per served model, in the model's namespace, scaling its Deployment or its
  LeaderWorkerSet (whole multi-node groups, through the LWS scale subresource) on
  `sum(vllm:num_requests_waiting{namespace, model})` from the in-cluster Prometheus;
- on platform eks, the cluster autoscaler (pinned chart, image matching the cluster's Kubernetes
  minor version) in kube-system with an EKS Pod Identity role limited to the node groups tagged
  `k8s.io/cluster-autoscaler/<cluster>: owned`, discovering them by their ASG tags.

The workloads' `spec.replicas` belongs to KEDA once this exists: VllmService sets
`ignore_changes=["spec.replicas"]` when autoscaling is enabled (docs/autoscaling.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import pulumi
import pulumi_kubernetes as kubernetes

from components.pod_identity import pod_identity_role
from components.prometheus_stack import COMMON_LABELS, chart_pin, observability_data, observability_release
from components.scaling_rules import (
    CLUSTER_AUTOSCALER_NAMESPACE,
    CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
    KEDA_NAMESPACE,
    ScaleTarget,
    cluster_autoscaler_image_tag,
    cluster_autoscaler_policy,
    cluster_autoscaler_values,
    keda_values,
    scaled_object_spec,
    validate_targets,
)

if TYPE_CHECKING:
    from settings import AutoscalingSettings


@dataclass(frozen=True)
class AutoscalingArgs:
    """Inputs of Autoscaling."""

    settings: AutoscalingSettings
    """Threshold, activation, cooldown, polling, scale-down window, fallback (`vllm-serving:autoscaling`)."""
    platform: Literal["eks", "existing"]
    """eks: also install the cluster autoscaler. existing: your cluster's node autoscaling applies."""
    provider: kubernetes.Provider
    """The cluster's explicit Kubernetes provider; every in-cluster object uses it."""
    prometheus_url: pulumi.Input[str]
    """Prometheus API base URL KEDA queries (PrometheusStack.prometheus_url)."""
    targets: Sequence[ScaleTarget]
    """One per served model (`ScaleTarget.for_model`); each gets a ScaledObject."""
    cluster_name: pulumi.Input[str] | None = None
    """EKS cluster name (GpuCluster). Required on eks: auto-discovery tags and the IAM condition use it."""
    region: str | None = None
    """AWS region of the cluster (`aws:region`). Required on eks."""
    kubernetes_version: str | None = None
    """Cluster Kubernetes minor version (ClusterSettings.version, e.g. 1.33). Required on eks: the cluster
    autoscaler's minor version must match it."""


def validate_args(args: AutoscalingArgs) -> list[str]:
    """Every problem with the args (targets, settings, eks inputs)."""
    problems = validate_targets(args.targets, args.settings)
    if args.platform == "eks":
        missing = [f for f in ("cluster_name", "region", "kubernetes_version") if getattr(args, f) is None]
        if missing:
            problems.append(f"platform eks needs {', '.join(missing)} for the cluster autoscaler")
    return problems


class Autoscaling(pulumi.ComponentResource):
    """KEDA with one ScaledObject per model, and (on EKS) the cluster autoscaler for GPU nodes.

    Secure defaults: the cluster autoscaler's role can only change Auto Scaling groups tagged as
    owned by this cluster, and is bound to its one service account through EKS Pod Identity (the
    cluster needs the eks-pod-identity-agent add-on). KEDA reads the in-cluster Prometheus, which is
    not authenticated and not reachable from outside. Use Karpenter instead of the cluster
    autoscaler by creating this component with platform `existing`.
    """

    keda_namespace: pulumi.Output[str]
    """Namespace KEDA runs in."""
    scaled_objects: pulumi.Output[list[str]]
    """`namespace/name` of every ScaledObject (named after its workload)."""
    cluster_autoscaler_role_arn: pulumi.Output[str | None]
    """IAM role of the cluster autoscaler (None on platform existing)."""

    def __init__(self, name: str, args: AutoscalingArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:autoscaling:Autoscaling", name, None, opts)
        # Validate.
        problems = validate_args(args)
        if problems:
            raise ValueError(f"Autoscaling {name!r}: " + "; ".join(problems))
        # Decide.
        targets = sorted(args.targets, key=lambda t: (t.namespace, t.workload_name))

        def k8s(*depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(depends_on))

        # Children: KEDA.
        namespace = kubernetes.core.v1.Namespace(
            f"{name}-keda-namespace",
            metadata={
                "name": KEDA_NAMESPACE,
                "labels": COMMON_LABELS
                | {
                    "pod-security.kubernetes.io/enforce": "baseline",
                    "pod-security.kubernetes.io/warn": "restricted",
                    "pod-security.kubernetes.io/audit": "restricted",
                },
            },
            opts=k8s(),
        )
        keda = observability_release(
            f"{name}-keda", chart_pin("keda"), namespace.metadata.name, keda_values(), k8s(namespace)
        )
        for target in targets:
            kubernetes.apiextensions.CustomResource(
                f"{name}-{target.model}-scaledobject",
                api_version="keda.sh/v1alpha1",
                kind="ScaledObject",
                metadata={
                    "name": target.workload_name,
                    "namespace": target.namespace,
                    "labels": COMMON_LABELS | {"vllm-serving/model": target.model},
                },
                spec=scaled_object_spec(target, args.settings, args.prometheus_url),
                opts=k8s(keda),
            )

        # Children: cluster autoscaler (eks).
        role_arn: pulumi.Output[str | None] = pulumi.Output.from_input(None)
        if args.platform == "eks":
            role_arn = self._cluster_autoscaler(name, args, k8s)

        # Outputs.
        self.keda_namespace = namespace.metadata.name
        self.scaled_objects = pulumi.Output.from_input([f"{t.namespace}/{t.workload_name}" for t in targets])
        self.cluster_autoscaler_role_arn = role_arn
        self.register_outputs(
            {
                "kedaNamespace": self.keda_namespace,
                "scaledObjects": self.scaled_objects,
                "clusterAutoscalerRoleArn": self.cluster_autoscaler_role_arn,
            }
        )

    def _cluster_autoscaler(
        self, name: str, args: AutoscalingArgs, k8s: Callable[..., pulumi.ResourceOptions]
    ) -> pulumi.Output[str | None]:
        """IAM role + Pod Identity association + the chart; returns the role ARN."""
        # validate_args guarantees these on eks.
        assert (
            args.cluster_name is not None and args.region is not None and args.kubernetes_version is not None
        )
        region = args.region
        image_tag = cluster_autoscaler_image_tag(
            args.kubernetes_version, observability_data()["clusterAutoscalerImageTags"]["tags"]
        )
        cluster_name = pulumi.Output.from_input(args.cluster_name)
        identity = pod_identity_role(
            f"{name}-cluster-autoscaler",
            cluster_name=cluster_name,
            namespace=CLUSTER_AUTOSCALER_NAMESPACE,
            service_account=CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
            policy=cluster_name.apply(cluster_autoscaler_policy),
            description="Cluster autoscaler (EKS Pod Identity): scales this cluster's GPU node groups",
            tags={"vllm-serving/role": "cluster-autoscaler"},
            opts=pulumi.ResourceOptions(parent=self),
        )
        observability_release(
            f"{name}-cluster-autoscaler",
            chart_pin("cluster-autoscaler"),
            CLUSTER_AUTOSCALER_NAMESPACE,
            cluster_name.apply(lambda n: cluster_autoscaler_values(n, region, image_tag)),
            k8s(*identity.ready),
        )
        return identity.role.arn
