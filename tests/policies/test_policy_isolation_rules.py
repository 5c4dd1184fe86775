"""`vllm-network-isolation` called directly: default-deny per vLLM namespace (Deployment and
LeaderWorkerSet, provider namespaces), internal ports only within the serving group (ingress and
egress, named ports, port ranges, rules without ports or peers), the API port never from the
internet, and the port lists from config."""

from __future__ import annotations

from typing import Any

from pulumi_policy import PolicyResource

from policies.isolation_rules import vllm_network_isolation
from policies.k8s import DEPLOYMENT, LEADER_WORKER_SET, NETWORK_POLICY
from policies.pack_config import API_PORTS, GROUP_LABEL, INTERNAL_PORT_RANGES, INTERNAL_PORTS
from tests.policies.policy_fakes import check_stack, policy_resource

LABELS = {"app.kubernetes.io/name": "vllm", GROUP_LABEL: "llama"}
SAME_GROUP = {"podSelector": {"matchLabels": {GROUP_LABEL: "llama"}}}
MONITORING = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
DENY_ALL = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def _template(labels: dict[str, str], ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container = {"name": "vllm", "image": "vllm/vllm-openai:v0.19.0", "ports": ports or []}
    return {"metadata": {"labels": labels}, "spec": {"containers": [container]}}


def _deployment(
    name: str = "llama", namespace: str = "serving", labels: dict[str, str] = LABELS
) -> PolicyResource:
    ports = [{"name": "http", "containerPort": 8000}, {"name": "ray", "containerPort": 6379}]
    props = {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"template": _template(labels, ports)},
    }
    return policy_resource(DEPLOYMENT, name, props)


def _policy(name: str, spec: dict[str, Any], namespace: str = "serving") -> PolicyResource:
    return policy_resource(NETWORK_POLICY, name, {"metadata": {"namespace": namespace}, "spec": spec})


def _allow(**rules: Any) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": LABELS}, "policyTypes": ["Ingress", "Egress"], **rules}


def test_default_deny_with_group_and_monitoring_allows_passes() -> None:
    allow = _allow(
        ingress=[{"from": [MONITORING], "ports": [{"port": 8000}]}, {"from": [SAME_GROUP]}],
        egress=[
            {"to": [SAME_GROUP]},
            {"ports": [{"port": 53, "protocol": "UDP"}]},
            {"ports": [{"port": 443}]},
        ],
    )
    resources = [_deployment(), _policy("deny", DENY_ALL), _policy("allow", allow)]
    assert check_stack(vllm_network_isolation, resources) == []


def test_namespace_without_default_deny() -> None:
    deployment = _deployment()
    not_deny = _policy("partial", {"podSelector": {}, "policyTypes": ["Ingress"]})
    other_namespace = _policy("deny", DENY_ALL, namespace="other")
    with_rules = _policy("group", {**DENY_ALL, "egress": [{"to": [SAME_GROUP]}]})
    assert check_stack(vllm_network_isolation, [deployment, not_deny, other_namespace, with_rules]) == [
        (
            "namespace 'serving' runs vLLM workload 'llama' but has no default-deny NetworkPolicy "
            "(podSelector {}, policyTypes [Ingress, Egress], no rules).",
            deployment.urn,
        )
    ]


def test_non_vllm_workloads_need_no_default_deny() -> None:
    other = _deployment(labels={"app.kubernetes.io/name": "grafana"})
    assert check_stack(vllm_network_isolation, [other]) == []


def test_leader_worker_set_namespace_comes_from_the_provider() -> None:
    spec = {
        "leaderWorkerTemplate": {"leaderTemplate": _template(LABELS), "workerTemplate": _template(LABELS)}
    }
    lws = policy_resource(
        LEADER_WORKER_SET,
        "big",
        {"metadata": {"name": "big"}, "spec": spec},
        provider_props={"namespace": "serving"},
    )
    assert check_stack(vllm_network_isolation, [lws, _policy("deny", DENY_ALL)]) == []
    assert check_stack(vllm_network_isolation, [lws]) == [
        (
            "namespace 'serving' runs vLLM workload 'big' but has no default-deny NetworkPolicy "
            "(podSelector {}, policyTypes [Ingress, Egress], no rules).",
            lws.urn,
        )
    ]


def _problems(*rules: dict[str, Any], config: dict[str, Any] | None = None, **kinds: Any) -> list[str]:
    allow = _policy("allow", _allow(**kinds))
    calls = check_stack(vllm_network_isolation, [_deployment(), _policy("deny", DENY_ALL), allow], config)
    assert all(urn == allow.urn for _, urn in calls)
    return [message for message, _ in calls]


def test_ray_port_from_another_group_or_namespace() -> None:
    other_group = {"podSelector": {"matchLabels": {GROUP_LABEL: "mistral"}}}
    assert _problems(
        ingress=[{"from": [other_group, MONITORING, SAME_GROUP], "ports": [{"port": 6379}]}]
    ) == [
        "ingress[0] opens internal port(s) 6379 of vLLM workload 'llama' to pods not limited to "
        "vllm-serving/model=llama; Ray/NCCL/mp ports are only for podSelector vllm-serving/model=llama in the "
        "same namespace.",
        "ingress[0] opens internal port(s) 6379 of vLLM workload 'llama' to a namespaceSelector; Ray/NCCL/mp "
        "ports are only for podSelector vllm-serving/model=llama in the same namespace.",
    ]


def test_rule_without_ports_or_peers_opens_everything() -> None:
    assert _problems(ingress=[{}]) == [
        "ingress[0] admits everywhere to the vLLM API/metrics port(s) all ports; admit clients and "
        "Prometheus by namespaceSelector/podSelector.",
        "ingress[0] opens internal port(s) all ports of vLLM workload 'llama' to everywhere; Ray/NCCL/mp "
        "ports are only for podSelector vllm-serving/model=llama in the same namespace.",
    ]


def test_api_port_from_the_internet_but_private_cidrs_allowed() -> None:
    peers = [{"ipBlock": {"cidr": "0.0.0.0/0"}}, {"ipBlock": {"cidr": "10.0.32.0/20"}}]
    assert _problems(ingress=[{"from": peers, "ports": [{"port": "http"}]}]) == [
        "ingress[0] admits ipBlock 0.0.0.0/0 to the vLLM API/metrics port(s) 8000; admit clients and "
        "Prometheus by namespaceSelector/podSelector."
    ]


def test_named_and_ranged_internal_ports() -> None:
    assert _problems(
        ingress=[
            {
                "from": [MONITORING],
                "ports": [{"port": "ray"}, {"port": "nccl"}, {"port": 7990, "endPort": 8000}],
            }
        ]
    ) == [
        "ingress[0] opens internal port(s) 6379, 7990-8000, 'nccl' of vLLM workload 'llama' to a "
        "namespaceSelector; Ray/NCCL/mp ports are only for podSelector vllm-serving/model=llama in the same "
        "namespace."
    ]


def test_egress_to_internal_ports_outside_the_group() -> None:
    assert _problems(
        egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": [{"port": 29000, "endPort": 29600}]}]
    ) == [
        "egress[0] opens internal port(s) 29000-29600 of vLLM workload 'llama' to ipBlock 10.0.0.0/8; "
        "Ray/NCCL/mp ports are only for podSelector vllm-serving/model=llama in the same namespace."
    ]


def test_port_lists_come_from_config() -> None:
    config = {API_PORTS: [8080], INTERNAL_PORTS: [7000], INTERNAL_PORT_RANGES: []}
    rules = {
        "ingress": [
            {"from": [MONITORING], "ports": [{"port": 8080}]},
            {"from": [MONITORING], "ports": [{"port": 8000}]},
        ],
        "egress": [
            {"to": [MONITORING], "ports": [{"port": 6379}]},
            {"to": [MONITORING], "ports": [{"port": 7000}]},
        ],
    }
    assert _problems(config=config, **rules) == [
        "ingress[1] opens internal port(s) 8000 of vLLM workload 'llama' to a namespaceSelector; Ray/NCCL/mp "
        "ports are only for podSelector vllm-serving/model=llama in the same namespace.",
        "egress[1] opens internal port(s) 7000 of vLLM workload 'llama' to a namespaceSelector; Ray/NCCL/mp "
        "ports are only for podSelector vllm-serving/model=llama in the same namespace.",
    ]


def test_policies_selecting_other_pods_are_not_judged() -> None:
    grafana = _policy("grafana", {"podSelector": {"matchLabels": {"app": "grafana"}}, "ingress": [{}]})
    expression = {"matchExpressions": [{"key": GROUP_LABEL, "operator": "NotIn", "values": ["llama"]}]}
    others = _policy("others", {"podSelector": expression, "ingress": [{}]})
    resources = [_deployment(), _policy("deny", DENY_ALL), grafana, others]
    assert check_stack(vllm_network_isolation, resources) == []
