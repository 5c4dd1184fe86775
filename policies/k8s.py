"""Kubernetes object shapes the workload and isolation rules share.

Owns where each workload kind keeps its pod template(s) (including the LeaderWorkerSet leader and
worker templates), how to enumerate a pod spec's containers, label-selector matching
(`matchLabels` + `matchExpressions`), and which namespace an object lands in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource

from .pack_config import APP_NAME_LABEL, VLLM_APP
from .props import as_list, as_map, dig, strings

POD = "kubernetes:core/v1:Pod"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
STATEFUL_SET = "kubernetes:apps/v1:StatefulSet"
DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
REPLICA_SET = "kubernetes:apps/v1:ReplicaSet"
JOB = "kubernetes:batch/v1:Job"
CRON_JOB = "kubernetes:batch/v1:CronJob"
LEADER_WORKER_SET = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
SERVICE = "kubernetes:core/v1:Service"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"

TEMPLATE_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    POD: ((),),
    DEPLOYMENT: (("spec", "template"),),
    STATEFUL_SET: (("spec", "template"),),
    DAEMON_SET: (("spec", "template"),),
    REPLICA_SET: (("spec", "template"),),
    JOB: (("spec", "template"),),
    CRON_JOB: (("spec", "jobTemplate", "spec", "template"),),
    LEADER_WORKER_SET: (
        ("spec", "leaderWorkerTemplate", "leaderTemplate"),
        ("spec", "leaderWorkerTemplate", "workerTemplate"),
    ),
}
"""Where each workload kind keeps its pod templates (`()` = the object itself is the pod)."""

VLLM_WORKLOAD_TYPES = (DEPLOYMENT, LEADER_WORKER_SET)
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")


@dataclass(frozen=True)
class PodTemplate:
    """One pod template of a workload."""

    path: str
    """Where it sits in the object, for messages (`spec.template`; `pod` for a bare Pod)."""
    labels: Mapping[str, Any]
    spec: Mapping[str, Any]


def pod_templates(resource_type: str, props: Mapping[str, Any]) -> list[PodTemplate]:
    """The pod templates of a workload object; [] for other kinds or absent optional templates."""
    templates = []
    for path in TEMPLATE_PATHS.get(resource_type, ()):
        template = dig(props, *path) if path else props
        if template is None:
            continue  # e.g. an LWS without a leaderTemplate runs the worker template for the leader
        templates.append(
            PodTemplate(
                path=".".join(path) or "pod",
                labels=as_map(dig(template, "metadata", "labels")),
                spec=as_map(dig(template, "spec")),
            )
        )
    return templates


def containers(spec: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """`(label, container)` for every container of a pod spec, init and ephemeral ones included."""
    found = []
    for field in CONTAINER_LISTS:
        for index, container in enumerate(as_list(spec.get(field))):
            container = as_map(container)
            found.append((f"{field}[{container.get('name') or index}]", container))
    return found


def is_vllm_template(template: PodTemplate) -> bool:
    """Whether the template runs vLLM server pods (label `app.kubernetes.io/name: vllm`)."""
    return template.labels.get(APP_NAME_LABEL) == VLLM_APP


def selector_matches(selector: Any, labels: Mapping[str, Any]) -> bool:
    """Whether a LabelSelector selects pods with `labels` (an empty selector selects all)."""
    selector = as_map(selector)
    for key, value in as_map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for expression in as_list(selector.get("matchExpressions")):
        expression = as_map(expression)
        key, operator = expression.get("key"), expression.get("operator")
        values = strings(expression.get("values"))
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def is_empty_selector(selector: Any) -> bool:
    """Whether a LabelSelector is `{}` (selects every pod of the namespace)."""
    selector = as_map(selector)
    return not as_map(selector.get("matchLabels")) and not as_list(selector.get("matchExpressions"))


def namespace_of(resource: PolicyResource) -> str:
    """The namespace an object lands in: its own, else its provider's default, else `default`."""
    namespace = dig(resource.props, "metadata", "namespace")
    if not namespace and resource.provider is not None:
        namespace = as_map(resource.provider.props).get("namespace")
    return str(namespace or "default")
