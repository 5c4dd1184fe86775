"""ClusterAddons: what the cluster needs before vLLM workloads can run.

Builds, through the explicit Kubernetes provider:
- the serving namespace (Pod Security labels; see `pod_security_labels`) with its default-deny
  NetworkPolicy, and the monitoring namespace when monitoring is on;
- the NVIDIA device plugin (Helm, pinned) on the GPU pools, tolerating the `nvidia.com/gpu` taint
  (platform eks only: an existing cluster already runs a device plugin or the GPU Operator);
- the EFA device plugin (eks-charts `aws-efa-k8s-device-plugin`, pinned) on the EFA pools only,
  tolerating the GPU taint (platform eks only, when some pool uses EFA);
- the LeaderWorkerSet controller (Helm, pinned), on both platforms and always: it is one small
  Deployment on the system nodes, and having its CRD in place means a plan change that makes a
  model span nodes never has to install a controller and use its CRD in the same update.
Pinned versions live in `components/data/workloads.json`. Helm does not upgrade CRDs of an
installed release: when the LWS pin moves, apply the new CRDs first (see the LWS install docs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_kubernetes as kubernetes

from components import network_policies
from components.helm_charts import ChartPin, pinned_release
from components.pod_spec import GPU_TAINT_KEY, POOL_LABEL
from components.workload_facts import chart, eks_addon_registry
from planning import StackPlan

PSA_LABEL = "pod-security.kubernetes.io"
RDMA_INTERCONNECTS = ("efa", "infiniband")
GPU_TOLERATION = {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
DEFAULT_DENY_NAME = "default-deny"


def pod_security_labels(enforce: str, kubernetes_version: str) -> dict[str, str]:
    """Pod Security Admission labels: `enforce` at the given level, warn and audit at baseline,
    all pinned to the cluster's minor version so a control-plane upgrade does not change them."""
    labels: dict[str, str] = {}
    for mode, level in (("enforce", enforce), ("warn", "baseline"), ("audit", "baseline")):
        labels[f"{PSA_LABEL}/{mode}"] = level
        labels[f"{PSA_LABEL}/{mode}-version"] = f"v{kubernetes_version}"
    return labels


def serving_enforce_level(plan: StackPlan) -> Literal["baseline", "privileged"]:
    """`baseline` unless a multi-node model runs over EFA or InfiniBand.

    RDMA needs the IPC_LOCK capability, and Pod Security `baseline` allows adding only
    AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP,
    SETGID, SETPCAP, SETUID and SYS_CHROOT, so such pods would be rejected. The namespace then
    enforces `privileged` and keeps warning and auditing at `baseline`, which names every pod
    beyond baseline; the pod-security policy of this project still forbids everything but
    IPC_LOCK (no privileged containers, host namespaces or host paths).
    """
    interconnect = {pool.name: pool.interconnect for pool in plan.pools}
    rdma = any(m.multi_node and interconnect[m.pool.name] in RDMA_INTERCONNECTS for m in plan.models)
    return "privileged" if rdma else "baseline"


def efa_pool_names(plan: StackPlan) -> list[str]:
    """GPU pools whose nodes carry EFA interfaces, sorted."""
    return sorted(pool.name for pool in plan.pools if pool.interconnect == "efa")


def nvidia_device_plugin_values(pin: ChartPin) -> dict[str, Any]:
    """Run on every GPU pool node (they carry `vllm-serving/pool`; no NFD labels needed)."""
    return {
        "image": {"repository": pin.image_repository, "tag": pin.image_tag},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": POOL_LABEL, "operator": "Exists"}]}]
                }
            }
        },
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}, GPU_TOLERATION],
        "gfd": {"enabled": False},
    }


def efa_device_plugin_values(pin: ChartPin, *, region: str, efa_pools: Sequence[str]) -> dict[str, Any]:
    """Run only on EFA pools (elsewhere it logs "No devices found"), image from the cluster's region."""
    return {
        "image": {"repository": f"{eks_addon_registry(region)}/{pin.image_repository}", "tag": pin.image_tag},
        "supportedInstanceLabels": {"keys": [POOL_LABEL], "values": list(efa_pools)},
        "tolerations": [GPU_TOLERATION],
    }


def lws_values(pin: ChartPin) -> dict[str, Any]:
    """The controller image pinned to the chart's release (the chart's default tag may float)."""
    return {
        "image": {
            "manager": {
                "repository": pin.image_repository,
                "tag": pin.image_tag,
                "pullPolicy": "IfNotPresent",
            }
        }
    }


def addon_charts(platform: str, efa_pools: Sequence[str]) -> list[str]:
    """Which pinned charts to install: device plugins on eks only (the EFA one only with EFA
    pools), the LeaderWorkerSet controller everywhere."""
    keys = []
    if platform == "eks":
        keys.append("nvidia-device-plugin")
        if efa_pools:
            keys.append("aws-efa-k8s-device-plugin")
    keys.append("lws")
    return keys


def release_values(pin: ChartPin, *, region: str | None, efa_pools: Sequence[str]) -> dict[str, Any]:
    """Helm values of one pinned chart."""
    if pin.key == "nvidia-device-plugin":
        return nvidia_device_plugin_values(pin)
    if pin.key == "aws-efa-k8s-device-plugin":
        if not region:
            raise ValueError(
                "ClusterAddonsArgs.region is required with EFA pools (the EFA plugin image registry)"
            )
        return efa_device_plugin_values(pin, region=region, efa_pools=efa_pools)
    if pin.key == "lws":
        return lws_values(pin)
    raise KeyError(f"no Helm values for chart {pin.key!r}")


@dataclass(frozen=True)
class ClusterAddonsArgs:
    """Inputs of ClusterAddons."""

    provider: kubernetes.Provider
    """The cluster's provider; every object and release goes through it."""
    platform: Literal["eks", "existing"]
    """eks installs the device plugins; existing assumes the cluster has them."""
    plan: StackPlan
    """The capacity plan: which pools use EFA, which models span nodes over RDMA."""
    serving_namespace: str
    """Namespace of the vLLM workloads (settings.serving.namespace)."""
    kubernetes_version: str
    """Cluster minor version, e.g. "1.33" (settings.cluster.version); pins Pod Security levels."""
    monitoring_namespace: str | None = None
    """Monitoring namespace to create (settings.monitoring.namespace when monitoring is enabled)."""
    region: str | None = None
    """AWS region of the cluster (eks): the EFA device plugin image comes from its registry there."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Resources the add-ons need first (e.g. the node groups, so DaemonSets have nodes)."""


class ClusterAddons(pulumi.ComponentResource):
    """Namespaces, device plugins and the LeaderWorkerSet controller for vLLM serving.

    Secure defaults: default-deny NetworkPolicy in the serving namespace, Pod Security enforced at
    baseline (privileged only where RDMA pods need IPC_LOCK, with baseline warnings), device
    plugins scheduled only onto the GPU pools that need them, every chart and image pinned.
    """

    serving_namespace: pulumi.Output[str]
    """Name of the serving namespace."""
    monitoring_namespace: pulumi.Output[str] | None
    """Name of the monitoring namespace, None when monitoring is off."""
    charts: dict[str, str]
    """Installed Helm charts: chart key -> pinned version."""
    workload_dependencies: list[pulumi.Resource]
    """Resources VllmServices depend on (namespace, default deny, releases); not an output."""

    def __init__(
        self, name: str, args: ClusterAddonsArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vllm-serving:cluster_addons:ClusterAddons", name, None, opts)
        efa_pools = efa_pool_names(args.plan)

        def child(*extra_deps: pulumi.Resource) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[*args.depends_on, *extra_deps]
            )

        serving = kubernetes.core.v1.Namespace(
            f"{name}-serving-namespace",
            metadata={
                "name": args.serving_namespace,
                "labels": pod_security_labels(serving_enforce_level(args.plan), args.kubernetes_version),
            },
            opts=child(),
        )
        default_deny = kubernetes.networking.v1.NetworkPolicy(
            f"{name}-default-deny",
            metadata={"name": DEFAULT_DENY_NAME, "namespace": serving.metadata.apply(lambda m: m.name)},
            spec=network_policies.default_deny(),
            opts=child(),
        )
        monitoring = None
        if args.monitoring_namespace is not None:
            # Node and GPU exporters need host namespaces and host paths: privileged, with baseline warnings.
            monitoring = kubernetes.core.v1.Namespace(
                f"{name}-monitoring-namespace",
                metadata={
                    "name": args.monitoring_namespace,
                    "labels": pod_security_labels("privileged", args.kubernetes_version),
                },
                opts=child(),
            )
        releases: list[pulumi.Resource] = []
        pins = [chart(key) for key in addon_charts(args.platform, efa_pools)]
        for pin in pins:
            assert pin.namespace is not None  # every add-on pin names its namespace
            releases.append(
                pinned_release(
                    f"{name}-{pin.key}",
                    pin,
                    namespace=pin.namespace,
                    create_namespace=pin.namespace != "kube-system",
                    values=release_values(pin, region=args.region, efa_pools=efa_pools),
                    atomic=True,
                    opts=child(),
                )
            )

        self.serving_namespace = serving.metadata.apply(lambda m: m.name)
        self.monitoring_namespace = monitoring.metadata.apply(lambda m: m.name) if monitoring else None
        self.charts = {pin.key: pin.version for pin in pins}
        self.workload_dependencies = [serving, default_deny, *releases]
        self.register_outputs(
            {
                "servingNamespace": self.serving_namespace,
                "monitoringNamespace": self.monitoring_namespace,
                "charts": self.charts,
            }
        )
