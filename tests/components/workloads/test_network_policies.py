"""network_policies: the default deny and the allows around vLLM pods, exact ports and selectors.

Checks the default deny shape the `vllm-network-isolation` policy looks for, API ingress by
namespace name (clients + monitoring) on 8000 only, intra-group traffic limited to the model's
pods, DNS egress to kube-dns, Lustre vs NFS model-store ports, and the load balancer CIDR allow.
"""

from __future__ import annotations

from components import network_policies as np
from offline.validate import validate_manifest

GROUP = {"app.kubernetes.io/name": "vllm", "vllm-serving/model": "llama-405b"}
SERVING = {**GROUP, "vllm-serving/role": "leader"}


def policy(name: str, spec: dict) -> dict:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "vllm"},
        "spec": spec,
    }


def test_default_deny_selects_every_pod_and_allows_nothing() -> None:
    assert np.default_deny() == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def test_api_ingress_from_clients_and_monitoring_on_port_8000_only() -> None:
    spec = np.api_ingress(SERVING, client_namespaces=["research", "apps"], monitoring_namespace="monitoring")
    assert spec == {
        "podSelector": {"matchLabels": SERVING},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/metadata.name",
                                    "operator": "In",
                                    "values": ["apps", "monitoring", "research"],
                                }
                            ]
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 8000}],
            }
        ],
    }


def test_api_ingress_without_any_peer_admits_nobody() -> None:
    spec = np.api_ingress(SERVING, client_namespaces=[], monitoring_namespace=None)
    assert "ingress" not in spec
    assert spec["policyTypes"] == ["Ingress"]


def test_internal_load_balancer_cidrs_are_admitted_to_the_api_port() -> None:
    spec = np.api_ingress(
        SERVING, client_namespaces=[], monitoring_namespace=None, load_balancer_cidrs=["10.50.0.0/16"]
    )
    assert spec["ingress"] == [
        {"from": [{"ipBlock": {"cidr": "10.50.0.0/16"}}], "ports": [{"protocol": "TCP", "port": 8000}]}
    ]


def test_group_traffic_is_every_port_but_only_between_the_models_pods() -> None:
    assert np.group_traffic(GROUP) == {
        "podSelector": {"matchLabels": GROUP},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [{"podSelector": {"matchLabels": GROUP}}]}],
        "egress": [{"to": [{"podSelector": {"matchLabels": GROUP}}]}],
    }


def test_egress_reaches_kube_dns_only_without_store_cidrs() -> None:
    spec = np.egress(GROUP, model_store_kind="fsx-lustre")
    assert spec == {
        "podSelector": {"matchLabels": GROUP},
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    }
                ],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            }
        ],
    }


def test_lustre_store_egress_opens_988_and_1018_to_1023() -> None:
    spec = np.egress(GROUP, model_store_kind="fsx-lustre", model_store_cidrs=["10.50.0.0/16"])
    assert spec["egress"][1] == {
        "to": [{"ipBlock": {"cidr": "10.50.0.0/16"}}],
        "ports": [{"protocol": "TCP", "port": 988}, {"protocol": "TCP", "port": 1018, "endPort": 1023}],
    }


def test_nfs_store_egress_opens_2049() -> None:
    for kind in ("efs", "existing"):
        spec = np.egress(GROUP, model_store_kind=kind, model_store_cidrs=["192.168.0.0/24"])  # type: ignore[arg-type]
        assert spec["egress"][1]["ports"] == [{"protocol": "TCP", "port": 2049}]


def test_every_policy_is_schema_valid() -> None:
    specs = {
        "deny": np.default_deny(),
        "api": np.api_ingress(SERVING, client_namespaces=["apps"], monitoring_namespace="monitoring"),
        "group": np.group_traffic(GROUP),
        "egress": np.egress(GROUP, model_store_kind="fsx-lustre", model_store_cidrs=["10.0.0.0/16"]),
    }
    for name, spec in specs.items():
        assert validate_manifest(policy(name, spec)) == [], name
