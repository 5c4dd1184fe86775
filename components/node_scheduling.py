"""How GPU nodes present themselves to the scheduler and to the cluster autoscaler.

Owns the Kubernetes labels and taints of a GPU node group (`vllm-serving/pool` is the contract
pods select on; `nvidia.com/gpu=true:NoSchedule` keeps everything else off GPUs), and the node
group tags the cluster autoscaler reads: auto-discovery (`k8s.io/cluster-autoscaler/enabled`,
`k8s.io/cluster-autoscaler/<cluster>`) and the node template (labels, taints, extended resources)
it needs to scale a group up from zero nodes, when there is no node to copy them from. The
autoscaler reads a managed node group's tags through `eks:DescribeNodegroup`
(kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws `managedNodegroupCache`), and EKS
itself puts the two discovery tags on the group's Auto Scaling group. Pure: no Pulumi imports.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from components.aws_facts import aws_facts

POOL_LABEL = "vllm-serving/pool"
GPU_MODEL_LABEL = "vllm-serving/gpu-model"
EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
GPU_RESOURCE = "nvidia.com/gpu"
HUGEPAGES_RESOURCE = "hugepages-2Mi"
AUTOSCALER_PREFIX = "k8s.io/cluster-autoscaler"
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


@dataclass(frozen=True)
class Taint:
    """A node taint (EKS spells effects NO_SCHEDULE; Kubernetes NoSchedule)."""

    key: str
    value: str
    effect: str

    def eks(self) -> dict[str, str]:
        """As the EKS node group's `taints` entry."""
        return {"key": self.key, "value": self.value, "effect": self.effect}

    def kubernetes_effect(self) -> str:
        """`NO_SCHEDULE` -> `NoSchedule`."""
        return "".join(part.capitalize() for part in self.effect.split("_"))


GPU_TAINT = Taint(GPU_RESOURCE, "true", "NO_SCHEDULE")


def gpu_node_labels(pool_name: str, gpu_model: str, *, efa: bool) -> dict[str, str]:
    """Labels of a GPU pool's nodes; `node.kubernetes.io/instance-type` comes from the kubelet."""
    labels = {POOL_LABEL: pool_name, GPU_MODEL_LABEL: gpu_model, GPU_PRESENT_LABEL: "true"}
    if efa:
        labels[EFA_PRESENT_LABEL] = "true"
    for key, value in labels.items():
        if not LABEL_VALUE.match(value):
            raise ValueError(f"label {key}={value!r} is not a valid Kubernetes label value")
    return dict(sorted(labels.items()))


def node_resources(gpu_count: int, efa_interfaces: int, hugepages_2mi: int) -> dict[str, str]:
    """Extended resources a node of the pool offers, in pod-spec units."""
    resources = {GPU_RESOURCE: str(gpu_count)}
    if efa_interfaces:
        resources[aws_facts()["efa"]["deviceResource"]] = str(efa_interfaces)
    if hugepages_2mi:
        resources[HUGEPAGES_RESOURCE] = f"{hugepages_2mi * 2}Mi"
    return dict(sorted(resources.items()))


def autoscaler_tags(
    cluster_name: str,
    labels: Mapping[str, str],
    taints: tuple[Taint, ...],
    resources: Mapping[str, str],
) -> dict[str, str]:
    """Node-group tags for cluster-autoscaler auto-discovery and scale-from-zero node templates."""
    template = f"{AUTOSCALER_PREFIX}/node-template"
    tags = {f"{AUTOSCALER_PREFIX}/enabled": "true", f"{AUTOSCALER_PREFIX}/{cluster_name}": "owned"}
    tags.update({f"{template}/label/{key}": value for key, value in labels.items()})
    tags.update({f"{template}/taint/{t.key}": f"{t.value}:{t.kubernetes_effect()}" for t in taints})
    tags.update({f"{template}/resources/{key}": value for key, value in resources.items()})
    return dict(sorted(tags.items()))
