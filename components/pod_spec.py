"""Pod templates of vLLM workloads, as Kubernetes-native (camelCase) dictionaries.

Owns the pure decisions about one vLLM pod: its labels (the contract in docs/conventions.md),
CPU/memory/GPU/fabric resources sized from the node, the in-memory `/dev/shm`, the container
security context (no privilege, every capability dropped except IPC_LOCK for RDMA, seccomp
RuntimeDefault), the environment (API key from a Secret, pod IP, offline Hugging Face, fabric),
the read-only model volume with an init container that waits for the weights, probes, graceful
termination, scheduling (GPU taint, pool selector, one pod per node for multi-node groups).
Values that are Pulumi outputs (the API-key Secret and model claim names) are placed as given.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components import probes
from components.interconnect_env import FabricDevices
from components.launch_scripts import MOUNT_PATH, WAIT_FOR_MODEL, Role, script_command
from components.vllm_args import API_PORT, API_PORT_NAME

APP_NAME_LABEL = "app.kubernetes.io/name"
APP_NAME = "vllm"
MODEL_LABEL = "vllm-serving/model"
ROLE_LABEL = "vllm-serving/role"
POOL_LABEL = "vllm-serving/pool"
SCRIPTS_HASH_ANNOTATION = "vllm-serving/launch-scripts-sha256"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT_KEY = "nvidia.com/gpu"
HOSTNAME_TOPOLOGY = "kubernetes.io/hostname"

CPU_FRACTION = 0.9
"""Share of the node's vCPUs (times the pod's share of its GPUs) requested; the rest is left for
kubelet reservations and daemonsets (CNI, CSI, device plugins, DCGM and node exporters)."""
MEMORY_FRACTION = 0.85
"""Share of the node's memory (times the pod's share of its GPUs): EKS reserves ~255 MiB +
11 MiB per pod plus eviction headroom; daemonsets take a few GiB more."""
CPU_PER_GPU_UNKNOWN_NODE = 8
MEMORY_GIB_PER_GPU_UNKNOWN_NODE = 64
"""Requests when the node shape is unknown (existing clusters): common 8-GPU servers have
100+ cores and 1-2 TiB of memory, so this fits them and leaves room for the system."""
MIN_PROCESS_MEMORY_GIB = 8
SHM_GIB_PER_GPU = 2
MAX_GPU_SHM_GIB = 16
"""/dev/shm for NCCL/custom all-reduce buffers and vLLM's inter-process queues: 2 GiB per GPU,
at most 16 GiB (vLLM's LWS example uses 15 GiB; Docker guidance `--shm-size=16G`)."""
RAY_OBJECT_STORE_GIB = 4
"""Ray's object store lives in /dev/shm; vLLM passes only small control messages through it."""
INIT_CONTAINER_RESOURCES = {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "64Mi"}}
MODEL_VOLUME = "model-store"
SHM_VOLUME = "dshm"
SCRIPTS_VOLUME = "launch-scripts"
SCRIPTS_MODE = 0o555


@dataclass(frozen=True)
class NodeShape:
    """The GPU node a pod runs on. vcpus/memory_gib are None when unknown (existing clusters)."""

    gpus_per_node: int
    vcpus: int | None = None
    memory_gib: float | None = None


@dataclass(frozen=True)
class PodResources:
    """What one vLLM container asks for."""

    cpu: int
    memory_gib: int
    """Includes the in-memory /dev/shm, which counts against the container's memory limit."""
    shm_gib: int
    gpus: int
    fabric: FabricDevices = field(default_factory=FabricDevices)

    def to_k8s(self) -> dict[str, dict[str, str]]:
        """requests/limits: memory and devices limited at the request, CPU not limited (no CFS
        throttling of the tokenizer and scheduler threads)."""
        devices = {GPU_RESOURCE: str(self.gpus), **self.fabric.resources}
        memory = f"{self.memory_gib}Gi"
        return {
            "requests": {"cpu": str(self.cpu), "memory": memory, **devices},
            "limits": {"memory": memory, **devices},
        }


def shm_size_gib(gpus: int, *, ray: bool) -> int:
    """Size of the in-memory /dev/shm of a vLLM pod."""
    return min(MAX_GPU_SHM_GIB, SHM_GIB_PER_GPU * gpus) + (RAY_OBJECT_STORE_GIB if ray else 0)


def size_resources(*, gpus: int, node: NodeShape, shm_gib: int, fabric: FabricDevices) -> PodResources:
    """CPU and memory in proportion to the GPUs the pod takes from its node."""
    if not 1 <= gpus <= node.gpus_per_node:
        raise ValueError(f"a pod cannot take {gpus} GPUs of a {node.gpus_per_node}-GPU node")
    if node.vcpus is None or node.memory_gib is None:
        cpu = CPU_PER_GPU_UNKNOWN_NODE * gpus
        memory = MEMORY_GIB_PER_GPU_UNKNOWN_NODE * gpus + shm_gib
    else:
        share = gpus / node.gpus_per_node
        cpu = max(1, math.floor(node.vcpus * CPU_FRACTION * share))
        memory = math.floor(node.memory_gib * MEMORY_FRACTION * share)
        if memory < shm_gib + MIN_PROCESS_MEMORY_GIB:
            raise ValueError(
                f"{memory} GiB of node memory for {gpus} GPU(s) cannot hold a {shm_gib} GiB /dev/shm plus "
                f"{MIN_PROCESS_MEMORY_GIB} GiB for vLLM; use an instance type with more memory"
            )
    return PodResources(cpu=cpu, memory_gib=memory, shm_gib=shm_gib, gpus=gpus, fabric=fabric)


def pod_labels(model_name: str, role: Role) -> dict[str, str]:
    """Labels of every vLLM pod (docs/conventions.md)."""
    return {APP_NAME_LABEL: APP_NAME, MODEL_LABEL: model_name, ROLE_LABEL: role}


def group_selector(model_name: str) -> dict[str, str]:
    """Selects every pod of one model (leaders and workers): its serving group."""
    return {APP_NAME_LABEL: APP_NAME, MODEL_LABEL: model_name}


def serving_selector(model_name: str) -> dict[str, str]:
    """Selects the pods of one model that serve the API (Deployment pods, LWS leaders)."""
    return pod_labels(model_name, "leader")


def security_context(capabilities: Sequence[str] = ()) -> dict[str, Any]:
    """Container security context: unprivileged, no escalation, all capabilities dropped but
    the ones given (IPC_LOCK for RDMA). vLLM images run as root, so runAsNonRoot stays unset."""
    caps: dict[str, list[str]] = {"drop": ["ALL"]}
    if capabilities:
        caps["add"] = sorted(capabilities)
    return {"allowPrivilegeEscalation": False, "privileged": False, "capabilities": caps}


def node_placement(*, platform: str, pool_name: str, pool_node_selector: Mapping[str, str]) -> dict[str, Any]:
    """Node selector and GPU-taint toleration. On EKS the pool's nodes carry `vllm-serving/pool`
    (GpuNodeGroup); on an existing cluster the pool's own node selector applies."""
    selector = {POOL_LABEL: pool_name} if platform == "eks" else dict(sorted(pool_node_selector.items()))
    placement: dict[str, Any] = {
        "tolerations": [{"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    }
    if selector:
        placement["nodeSelector"] = selector
    return placement


def one_pod_per_node(model_name: str) -> dict[str, Any]:
    """Required anti-affinity: no two pods of the model on one node (each takes a whole node)."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": group_selector(model_name)},
                    "topologyKey": HOSTNAME_TOPOLOGY,
                }
            ]
        }
    }


@dataclass(frozen=True)
class PodInputs:
    """Everything one vLLM pod template is built from."""

    model_name: str
    role: Role
    serves_api: bool
    """Runs the OpenAI server: gets the port, probes and the preStop drain."""
    image: str
    command: list[str]
    args: list[str]
    resources: PodResources
    env: list[dict[str, Any]]
    """Fabric and launch environment, appended after the common variables."""
    api_key_secret_name: pulumi.Input[str]
    api_key_secret_key: str
    model_claim_name: pulumi.Input[str]
    model_mount_path: str
    model_path: str
    ready_marker: str
    startup_budget_seconds: int
    termination_grace_seconds: int
    placement: dict[str, Any]
    scripts_config_map: str
    scripts_hash: str
    spread_one_per_node: bool = False


def _env(inputs: PodInputs) -> list[dict[str, Any]]:
    common = [
        {
            "name": "VLLM_API_KEY",
            "valueFrom": {
                "secretKeyRef": {"name": inputs.api_key_secret_name, "key": inputs.api_key_secret_key}
            },
        },
        {"name": "VLLM_HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
        {"name": "DO_NOT_TRACK", "value": "1"},
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "VLLM_ENGINE_READY_TIMEOUT_S", "value": str(inputs.startup_budget_seconds)},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
    ]
    return common + list(inputs.env)


def _wait_for_model(inputs: PodInputs) -> dict[str, Any]:
    return {
        "name": "wait-for-model",
        "image": inputs.image,
        "imagePullPolicy": "IfNotPresent",
        "command": script_command(WAIT_FOR_MODEL),
        "env": [
            {"name": "MODEL_PATH", "value": inputs.model_path},
            {"name": "READY_MARKER", "value": inputs.ready_marker},
            {"name": "WAIT_TIMEOUT_SECONDS", "value": str(inputs.startup_budget_seconds)},
        ],
        "resources": INIT_CONTAINER_RESOURCES,
        "securityContext": security_context(),
        "volumeMounts": [
            {"name": MODEL_VOLUME, "mountPath": inputs.model_mount_path, "readOnly": True},
            {"name": SCRIPTS_VOLUME, "mountPath": MOUNT_PATH, "readOnly": True},
        ],
    }


def _vllm_container(inputs: PodInputs) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "vllm",
        "image": inputs.image,
        "imagePullPolicy": "IfNotPresent",
        "command": inputs.command,
        "args": inputs.args,
        "env": _env(inputs),
        "resources": inputs.resources.to_k8s(),
        "securityContext": security_context(inputs.resources.fabric.capabilities),
        "volumeMounts": [
            {"name": MODEL_VOLUME, "mountPath": inputs.model_mount_path, "readOnly": True},
            {"name": SHM_VOLUME, "mountPath": "/dev/shm"},
            {"name": SCRIPTS_VOLUME, "mountPath": MOUNT_PATH, "readOnly": True},
        ],
    }
    if inputs.serves_api:
        container["ports"] = [{"name": API_PORT_NAME, "containerPort": API_PORT, "protocol": "TCP"}]
        container["startupProbe"] = probes.startup_probe(inputs.startup_budget_seconds)
        container["readinessProbe"] = probes.readiness_probe()
        container["livenessProbe"] = probes.liveness_probe()
        container["lifecycle"] = {"preStop": probes.pre_stop_drain()}
    return container


def pod_template(inputs: PodInputs) -> dict[str, Any]:
    """The pod template (metadata + spec) of one vLLM pod role."""
    if inputs.termination_grace_seconds <= probes.PRE_STOP_DRAIN_SECONDS:
        raise ValueError(
            f"termination grace of {inputs.termination_grace_seconds}s leaves no time after the "
            f"{probes.PRE_STOP_DRAIN_SECONDS}s preStop drain; use more than {probes.PRE_STOP_DRAIN_SECONDS}s"
        )
    if not inputs.model_path.startswith(inputs.model_mount_path.rstrip("/") + "/"):
        raise ValueError(
            f"model path {inputs.model_path} is not under the mount path {inputs.model_mount_path}"
        )
    spec: dict[str, Any] = {
        # vLLM needs no Kubernetes API access.
        "automountServiceAccountToken": False,
        # Service links would inject e.g. VLLM_PORT=tcp://... for a Service named `vllm`, which
        # vLLM reads as its own setting and rejects.
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": inputs.termination_grace_seconds,
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        **inputs.placement,
        "initContainers": [_wait_for_model(inputs)],
        "containers": [_vllm_container(inputs)],
        "volumes": [
            {
                "name": MODEL_VOLUME,
                "persistentVolumeClaim": {"claimName": inputs.model_claim_name, "readOnly": True},
            },
            {
                "name": SHM_VOLUME,
                "emptyDir": {"medium": "Memory", "sizeLimit": f"{inputs.resources.shm_gib}Gi"},
            },
            {
                "name": SCRIPTS_VOLUME,
                "configMap": {"name": inputs.scripts_config_map, "defaultMode": SCRIPTS_MODE},
            },
        ],
    }
    if inputs.spread_one_per_node:
        spec["affinity"] = one_pod_per_node(inputs.model_name)
    return {
        "metadata": {
            "labels": pod_labels(inputs.model_name, inputs.role),
            "annotations": {SCRIPTS_HASH_ANNOTATION: inputs.scripts_hash},
        },
        "spec": spec,
    }
