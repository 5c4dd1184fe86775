"""pod_spec: resources, security context, placement and the assembled pod template of vLLM pods.

Checks CPU/memory sized from the node (p5.48xlarge, g6e.xlarge, unknown node), /dev/shm sizes and
that memory accounts for them, the security context (no privilege, only IPC_LOCK added), placement
per platform, and a full template: read-only model volume, the wait-for-model init container,
probes only on serving pods, one pod per node for groups, and schema validity (strict).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from components import pod_spec
from components.interconnect_env import FabricDevices
from offline.validate import validate_manifest


def test_whole_p5_node_leaves_headroom_for_daemonsets() -> None:
    resources = pod_spec.size_resources(
        gpus=8, node=pod_spec.NodeShape(8, 192, 2048), shm_gib=16, fabric=FabricDevices()
    )
    assert (resources.cpu, resources.memory_gib) == (172, 1740)


def test_one_gpu_of_a_small_node() -> None:
    resources = pod_spec.size_resources(
        gpus=1, node=pod_spec.NodeShape(1, 4, 32), shm_gib=2, fabric=FabricDevices()
    )
    assert (resources.cpu, resources.memory_gib) == (3, 27)


def test_unknown_node_requests_per_gpu_and_adds_the_shm() -> None:
    resources = pod_spec.size_resources(
        gpus=8, node=pod_spec.NodeShape(8), shm_gib=16, fabric=FabricDevices()
    )
    assert (resources.cpu, resources.memory_gib) == (64, 64 * 8 + 16)


def test_node_too_small_for_shm_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot hold a 16 GiB /dev/shm"):
        pod_spec.size_resources(
            gpus=1, node=pod_spec.NodeShape(8, 32, 64), shm_gib=16, fabric=FabricDevices()
        )


def test_more_gpus_than_the_node_is_an_error() -> None:
    with pytest.raises(ValueError, match="cannot take 9 GPUs of a 8-GPU node"):
        pod_spec.size_resources(gpus=9, node=pod_spec.NodeShape(8), shm_gib=2, fabric=FabricDevices())


@pytest.mark.parametrize(
    ("gpus", "ray", "shm"), [(1, False, 2), (4, False, 8), (8, False, 16), (8, True, 20)]
)
def test_shm_size(gpus: int, ray: bool, shm: int) -> None:
    assert pod_spec.shm_size_gib(gpus, ray=ray) == shm


def test_resources_limit_memory_and_devices_but_not_cpu() -> None:
    resources = pod_spec.PodResources(
        cpu=172,
        memory_gib=1740,
        shm_gib=20,
        gpus=8,
        fabric=FabricDevices({"vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "5120Mi"}, ("IPC_LOCK",)),
    )
    assert resources.to_k8s() == {
        "requests": {
            "cpu": "172",
            "memory": "1740Gi",
            "nvidia.com/gpu": "8",
            "vpc.amazonaws.com/efa": "32",
            "hugepages-2Mi": "5120Mi",
        },
        "limits": {
            "memory": "1740Gi",
            "nvidia.com/gpu": "8",
            "vpc.amazonaws.com/efa": "32",
            "hugepages-2Mi": "5120Mi",
        },
    }


def test_security_context_drops_everything_but_what_is_asked() -> None:
    assert pod_spec.security_context(("IPC_LOCK",)) == {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
    }
    assert "add" not in pod_spec.security_context()["capabilities"]


def test_placement_on_eks_selects_the_pool_label() -> None:
    placement = pod_spec.node_placement(platform="eks", pool_name="h100", pool_node_selector={"x": "y"})
    assert placement == {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"vllm-serving/pool": "h100"},
    }


def test_placement_on_existing_uses_the_pools_selector() -> None:
    placement = pod_spec.node_placement(
        platform="existing", pool_name="h100-ib", pool_node_selector={"nvidia.com/gpu.product": "H100"}
    )
    assert placement["nodeSelector"] == {"nvidia.com/gpu.product": "H100"}
    empty = pod_spec.node_placement(platform="existing", pool_name="p", pool_node_selector={})
    assert "nodeSelector" not in empty


def pod_inputs(**changes: Any) -> pod_spec.PodInputs:
    inputs = pod_spec.PodInputs(
        model_name="llama-8b",
        role="leader",
        serves_api=True,
        image="vllm/vllm-openai:v0.19.0",
        command=["vllm", "serve"],
        args=["/models/llama-8b/abc", "--port", "8000"],
        resources=pod_spec.PodResources(cpu=3, memory_gib=27, shm_gib=2, gpus=1),
        env=[{"name": "NCCL_DEBUG", "value": "WARN"}],
        api_key_secret_name="vllm-api-key",
        api_key_secret_key="api-key",
        model_claim_name="models",
        model_mount_path="/models",
        model_path="/models/llama-8b/abc",
        ready_marker=".ready",
        startup_budget_seconds=900,
        termination_grace_seconds=120,
        placement=pod_spec.node_placement(platform="eks", pool_name="l40s", pool_node_selector={}),
        scripts_config_map="llama-8b-launch",
        scripts_hash="0" * 64,
    )
    return replace(inputs, **changes)


def test_serving_pod_template() -> None:
    template = pod_spec.pod_template(pod_inputs())
    spec = template["spec"]
    assert template["metadata"]["labels"] == {
        "app.kubernetes.io/name": "vllm",
        "vllm-serving/model": "llama-8b",
        "vllm-serving/role": "leader",
    }
    assert spec["volumes"][0] == {
        "name": "model-store",
        "persistentVolumeClaim": {"claimName": "models", "readOnly": True},
    }
    assert spec["volumes"][1] == {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["automountServiceAccountToken"] is False
    assert spec["enableServiceLinks"] is False
    assert spec["terminationGracePeriodSeconds"] == 120
    init = spec["initContainers"][0]
    assert init["command"] == ["bash", "/opt/vllm-serving/wait-for-model.sh"]
    assert init["env"] == [
        {"name": "MODEL_PATH", "value": "/models/llama-8b/abc"},
        {"name": "READY_MARKER", "value": ".ready"},
        {"name": "WAIT_TIMEOUT_SECONDS", "value": "900"},
    ]
    vllm = spec["containers"][0]
    assert vllm["env"][0] == {
        "name": "VLLM_API_KEY",
        "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "api-key"}},
    }
    assert vllm["env"][1] == {
        "name": "VLLM_HOST_IP",
        "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
    }
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in vllm["env"]
    assert vllm["env"][-1] == {"name": "NCCL_DEBUG", "value": "WARN"}
    assert vllm["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
    assert vllm["startupProbe"]["failureThreshold"] == 90
    assert vllm["lifecycle"] == {"preStop": {"exec": {"command": ["sleep", "15"]}}}
    assert {"name": "model-store", "mountPath": "/models", "readOnly": True} in vllm["volumeMounts"]
    assert "affinity" not in spec


def test_worker_pod_has_no_port_probes_or_drain_but_spreads_one_per_node() -> None:
    template = pod_spec.pod_template(pod_inputs(role="worker", serves_api=False, spread_one_per_node=True))
    vllm = template["spec"]["containers"][0]
    assert not {"ports", "startupProbe", "readinessProbe", "livenessProbe", "lifecycle"} & set(vllm)
    assert template["spec"]["affinity"] == {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchLabels": {"app.kubernetes.io/name": "vllm", "vllm-serving/model": "llama-8b"}
                    },
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }


def test_template_is_a_valid_pod_template_in_strict_schema() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llama-8b-vllm", "namespace": "vllm"},
        "spec": {
            "selector": {"matchLabels": pod_spec.group_selector("llama-8b")},
            "template": pod_spec.pod_template(pod_inputs(spread_one_per_node=True)),
        },
    }
    assert validate_manifest(deployment) == []


def test_grace_period_must_outlast_the_drain() -> None:
    with pytest.raises(ValueError, match="termination grace of 15s"):
        pod_spec.pod_template(pod_inputs(termination_grace_seconds=15))


def test_model_path_must_be_on_the_volume() -> None:
    with pytest.raises(ValueError, match="is not under the mount path /models"):
        pod_spec.pod_template(pod_inputs(model_path="/data/llama"))
