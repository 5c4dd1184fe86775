"""Workload validators called directly: `k8s-service-internal` (NodePort, externalIPs, internal load
balancer annotations), `pod-security` (every pod-template kind incl. LeaderWorkerSet, init
containers, capability and hostPath allow-lists) and `vllm-api-key-from-secret` (env from a
Secret, literal values, literal `--api-key`, which containers count as vLLM)."""

from __future__ import annotations

from typing import Any

import pytest

from policies.k8s import CRON_JOB, DEPLOYMENT, JOB, LEADER_WORKER_SET, POD, SERVICE, STATEFUL_SET
from policies.pack_config import ALLOWED_CAPABILITIES, ALLOWED_HOST_PATHS
from policies.workload_rules import (
    LB_INTERNAL_ANNOTATION,
    LB_SCHEME_ANNOTATION,
    is_vllm_container,
    k8s_service_internal,
    pod_security,
    vllm_api_key_from_secret,
)
from tests.policies.policy_fakes import check

API_KEY_ENV = {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "key"}}}
VLLM = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "args": ["--port", "8000"], "env": [API_KEY_ENV]}


def _service(spec: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "api", "annotations": annotations or {}}, "spec": spec}


def _deployment(pod_spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec}}}


def test_cluster_ip_service_passes() -> None:
    assert check(k8s_service_internal, SERVICE, _service({"ports": [{"port": 8000}]})) == []


def test_node_port_and_external_ips() -> None:
    spec = {"type": "NodePort", "externalIPs": ["198.51.100.7"]}
    assert check(k8s_service_internal, SERVICE, _service(spec)) == [
        "spec.type is NodePort, which opens a port on every node; use ClusterIP.",
        "spec.externalIPs is set (198.51.100.7); remove it.",
    ]


@pytest.mark.parametrize(
    "annotations",
    [{LB_SCHEME_ANNOTATION: "internal"}, {LB_INTERNAL_ANNOTATION: "true"}, {LB_INTERNAL_ANNOTATION: "True"}],
)
def test_internal_load_balancer_passes(annotations: dict[str, str]) -> None:
    assert check(k8s_service_internal, SERVICE, _service({"type": "LoadBalancer"}, annotations)) == []


@pytest.mark.parametrize(
    "annotations",
    [
        {},
        {LB_SCHEME_ANNOTATION: "internet-facing"},
        {LB_SCHEME_ANNOTATION: "internet-facing", LB_INTERNAL_ANNOTATION: "true"},
    ],
)
def test_internet_facing_load_balancer(annotations: dict[str, str]) -> None:
    assert check(k8s_service_internal, SERVICE, _service({"type": "LoadBalancer"}, annotations)) == [
        "spec.type is LoadBalancer without 'service.beta.kubernetes.io/aws-load-balancer-scheme: internal' "
        "(or 'service.beta.kubernetes.io/aws-load-balancer-internal: \"true\"'), so AWS would make it "
        "internet-facing."
    ]


def test_restricted_pod_with_ipc_lock_passes() -> None:
    context = {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
    }
    pod = {
        "containers": [{**VLLM, "securityContext": context}],
        "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
    }
    assert check(pod_security, DEPLOYMENT, _deployment(pod)) == []


def test_every_pod_level_and_container_level_escape_is_reported() -> None:
    pod = {
        "hostNetwork": True,
        "hostPID": True,
        "hostIPC": True,
        "initContainers": [{"name": "setup", "securityContext": {"privileged": True}}],
        "containers": [
            {
                "name": "vllm",
                "securityContext": {
                    "allowPrivilegeEscalation": True,
                    "capabilities": {"add": ["SYS_ADMIN", "CAP_NET_RAW", "IPC_LOCK"]},
                },
            }
        ],
        "volumes": [{"name": "host", "hostPath": {"path": "/var/run"}}],
    }
    assert check(pod_security, STATEFUL_SET, _deployment(pod)) == [
        "spec.template: spec.hostNetwork is true; pods must not share the node's namespaces.",
        "spec.template: spec.hostPID is true; pods must not share the node's namespaces.",
        "spec.template: spec.hostIPC is true; pods must not share the node's namespaces.",
        "spec.template: initContainers[setup] sets securityContext.privileged: true.",
        "spec.template: containers[vllm] sets securityContext.allowPrivilegeEscalation: true.",
        "spec.template: containers[vllm] adds capabilities NET_RAW, SYS_ADMIN; allowed: IPC_LOCK (config "
        "'allowedCapabilities').",
        "spec.template: volume 'host' mounts hostPath /var/run, which is not in 'allowedHostPaths'.",
    ]


@pytest.mark.parametrize(
    ("type_", "props", "path"),
    [
        (POD, {"spec": {"hostNetwork": True}}, "pod"),
        (JOB, {"spec": {"template": {"spec": {"hostNetwork": True}}}}, "spec.template"),
        (
            CRON_JOB,
            {"spec": {"jobTemplate": {"spec": {"template": {"spec": {"hostNetwork": True}}}}}},
            "spec.jobTemplate.spec.template",
        ),
        (
            LEADER_WORKER_SET,
            {"spec": {"leaderWorkerTemplate": {"workerTemplate": {"spec": {"hostNetwork": True}}}}},
            "spec.leaderWorkerTemplate.workerTemplate",
        ),
    ],
)
def test_every_workload_kind_is_inspected(type_: str, props: dict[str, Any], path: str) -> None:
    assert check(pod_security, type_, props) == [
        f"{path}: spec.hostNetwork is true; pods must not share the node's namespaces."
    ]


def test_leader_worker_set_checks_both_templates() -> None:
    privileged = {"containers": [{"name": "c", "securityContext": {"privileged": True}}]}
    spec = {
        "leaderWorkerTemplate": {
            "leaderTemplate": {"spec": privileged},
            "workerTemplate": {"spec": privileged},
        }
    }
    assert check(pod_security, LEADER_WORKER_SET, {"spec": spec}) == [
        "spec.leaderWorkerTemplate.leaderTemplate: containers[c] sets securityContext.privileged: true.",
        "spec.leaderWorkerTemplate.workerTemplate: containers[c] sets securityContext.privileged: true.",
    ]


def test_allow_lists_come_from_config() -> None:
    pod = {
        "containers": [{"name": "ib", "securityContext": {"capabilities": {"add": ["SYS_RESOURCE"]}}}],
        "volumes": [
            {"name": "ib", "hostPath": {"path": "/dev/infiniband/uverbs0"}},
            {"name": "x", "hostPath": {"path": "/dev/infinibandX"}},
        ],
    }
    config = {ALLOWED_CAPABILITIES: ["CAP_SYS_RESOURCE"], ALLOWED_HOST_PATHS: ["/dev/infiniband/"]}
    assert check(pod_security, DEPLOYMENT, _deployment(pod), config=config) == [
        "spec.template: volume 'x' mounts hostPath /dev/infinibandX, which is not in 'allowedHostPaths'."
    ]


def test_api_key_from_secret_passes() -> None:
    assert check(vllm_api_key_from_secret, DEPLOYMENT, _deployment({"containers": [VLLM]})) == []


def test_missing_literal_and_non_secret_api_keys() -> None:
    containers = [
        {"name": "a", "image": "vllm/vllm-openai:v0.19.0"},
        {
            "name": "b",
            "image": "vllm/vllm-openai:v0.19.0",
            "env": [{"name": "VLLM_API_KEY", "value": "sk-1"}],
        },
        {
            "name": "c",
            "image": "vllm/vllm-openai:v0.19.0",
            "env": [{"name": "VLLM_API_KEY", "valueFrom": {"configMapKeyRef": {"name": "k", "key": "k"}}}],
        },
    ]
    assert check(vllm_api_key_from_secret, DEPLOYMENT, _deployment({"containers": containers})) == [
        "spec.template: containers[a] has no VLLM_API_KEY env; without it the OpenAI API accepts requests "
        "without a key.",
        "spec.template: containers[b] sets VLLM_API_KEY as a literal env value.",
        "spec.template: containers[c] takes VLLM_API_KEY from something other than a Secret.",
    ]


@pytest.mark.parametrize(
    "command",
    [
        ["vllm", "serve", "m", "--api-key", "sk-live"],
        ["vllm", "serve", "m", "--api-key=sk-live"],
        ["sh", "-c", "vllm serve m --port 8000 --api-key sk-live"],
    ],
)
def test_literal_api_key_on_the_command_line(command: list[str]) -> None:
    container = {"name": "srv", "image": "python:3.12", "command": command, "env": [API_KEY_ENV]}
    assert check(vllm_api_key_from_secret, POD, {"spec": {"containers": [container]}}) == [
        "pod: containers[srv] passes a literal --api-key on its command line; take VLLM_API_KEY from a "
        "Secret instead."
    ]


@pytest.mark.parametrize("value", ["$(VLLM_API_KEY)", "${VLLM_API_KEY}", '"$VLLM_API_KEY"'])
def test_api_key_flag_may_reference_the_env(value: str) -> None:
    container = {**VLLM, "args": ["--api-key", value]}
    assert check(vllm_api_key_from_secret, DEPLOYMENT, _deployment({"containers": [container]})) == []


def test_which_containers_are_vllm() -> None:
    assert is_vllm_container({"image": "docker.io/VLLM/vllm-openai:v0.19.0"}) is True
    assert (
        is_vllm_container({"image": "python:3.12", "args": ["sh", "-c", "exec vllm serve /models/m"]}) is True
    )
    assert (
        is_vllm_container({"image": "python:3.12", "command": ["huggingface-cli", "download", "vllm-like"]})
        is False
    )
    sidecar = {
        "containers": [VLLM],
        "initContainers": [{"name": "sync", "image": "vllm/vllm-openai:v0.19.0"}],
    }
    assert check(vllm_api_key_from_secret, DEPLOYMENT, _deployment(sidecar)) == []
