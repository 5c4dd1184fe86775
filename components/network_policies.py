"""NetworkPolicy specs around vLLM pods: deny by default, then allow exactly what serving needs.

Owns the rules (as Kubernetes-native `spec` dictionaries):
- `default_deny`: one per namespace, selecting every pod, no rules (ClusterAddons creates it);
- `api_ingress`: the OpenAI port (8000, also /metrics) of serving pods from the client namespaces
  and the monitoring namespace, by namespace name, never from IP blocks except the source CIDRs of
  an internal load balancer when one is asked for;
- `group_traffic`: Ray (6379, 8265, 10001, worker ports), NCCL bootstrap/socket transports and the
  mp/DP ports (29500-29600) use ports that are partly ephemeral, so pods of one multi-node group
  may talk to each other on every port, and only to each other (same `vllm-serving/model`);
- `egress`: DNS to kube-dns, and the model filesystem's ports towards its CIDRs when given. The
  Kubernetes API and the internet are not reachable (weights are local, HF_HUB_OFFLINE=1).

The model filesystem itself is mounted by the node (CSI / kernel client) in the host network
namespace, which pod NetworkPolicies do not govern; the filesystem egress rule is for in-pod
clients (custom loaders) and costs nothing otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pulumi

from components.vllm_args import API_PORT

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DNS_NAMESPACE = "kube-system"
DNS_POD_LABELS = {"k8s-app": "kube-dns"}
DNS_PORT = 53
LUSTRE_PORTS = ((988, 988), (1018, 1023))
"""FSx for Lustre LNET ports (docs.aws.amazon.com/fsx/latest/LustreGuide/cannot-create-fs.html)."""
NFS_PORTS = ((2049, 2049),)

ModelStoreKind = Literal["fsx-lustre", "efs", "existing"]


def default_deny() -> dict[str, Any]:
    """Selects every pod of the namespace and allows nothing: other policies add allows."""
    return {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def _namespaces(names: Sequence[str]) -> dict[str, Any]:
    return {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": sorted(set(names))}
            ]
        }
    }


Cidrs = Sequence[pulumi.Input[str]] | pulumi.Output[list[str]]
"""CIDRs known now (a list, items may be outputs) or only at deploy time (an output list)."""


def deferred(cidrs: Cidrs) -> bool:
    """Whether the CIDRs are known only at deploy time."""
    return isinstance(cidrs, pulumi.Output)


def _ip_blocks(cidrs: Cidrs, what: str) -> list[dict[str, Any]] | pulumi.Output[list[dict[str, Any]]]:
    """`ipBlock` peers. An output list must not come out empty: an empty peer list in a
    NetworkPolicy rule admits everything, so that fails the deployment instead."""

    def blocks(values: Sequence[Any]) -> list[dict[str, Any]]:
        return [{"ipBlock": {"cidr": cidr}} for cidr in values]

    def checked(values: list[str]) -> list[dict[str, Any]]:
        if not values:
            raise ValueError(f"{what}: no CIDR to admit (an empty peer list would admit everything)")
        return blocks(values)

    if isinstance(cidrs, pulumi.Output):
        return cidrs.apply(checked)
    return blocks(cidrs)


def api_ingress(
    serving_labels: Mapping[str, str],
    *,
    client_namespaces: Sequence[str],
    monitoring_namespace: str | None,
    load_balancer_cidrs: Cidrs = (),
) -> dict[str, Any]:
    """Ingress to the API port of the serving pods.

    Clients and Prometheus are admitted by namespace name. `load_balancer_cidrs` (only with an
    internal load balancer, whose targets are pod IPs) admits the subnets its nodes send from;
    with IP targets the load balancer does not preserve client IPs, so these are its own addresses.
    """
    namespaces = [*client_namespaces, *([monitoring_namespace] if monitoring_namespace else [])]
    named = [_namespaces(namespaces)] if namespaces else []
    blocks = _ip_blocks(load_balancer_cidrs, "load balancer source CIDRs")
    spec: dict[str, Any] = {"podSelector": {"matchLabels": dict(serving_labels)}, "policyTypes": ["Ingress"]}
    ports = [{"protocol": "TCP", "port": API_PORT}]
    if isinstance(blocks, pulumi.Output):
        spec["ingress"] = [{"from": blocks.apply(lambda b: [*named, *b]), "ports": ports}]
    elif named or blocks:
        spec["ingress"] = [{"from": [*named, *blocks], "ports": ports}]
    return spec


def group_traffic(group_labels: Mapping[str, str]) -> dict[str, Any]:
    """Every port, both ways, between pods of one multi-node group and nothing else."""
    peer = [{"podSelector": {"matchLabels": dict(group_labels)}}]
    return {
        "podSelector": {"matchLabels": dict(group_labels)},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": peer}],
        "egress": [{"to": peer}],
    }


def _port_entries(spans: Sequence[tuple[int, int]]) -> list[dict[str, Any]]:
    entries = []
    for start, end in spans:
        entry: dict[str, Any] = {"protocol": "TCP", "port": start}
        if end != start:
            entry["endPort"] = end
        entries.append(entry)
    return entries


def model_store_ports(kind: ModelStoreKind) -> tuple[tuple[int, int], ...]:
    """TCP port spans of the model filesystem: Lustre for FSx, NFS for EFS and existing exports."""
    return LUSTRE_PORTS if kind == "fsx-lustre" else NFS_PORTS


def egress(
    group_labels: Mapping[str, str],
    *,
    model_store_kind: ModelStoreKind,
    model_store_cidrs: Cidrs = (),
) -> dict[str, Any]:
    """Egress of every pod of the model: DNS, and the model filesystem towards its CIDRs."""
    rules: list[dict[str, Any]] = [
        {
            "to": [
                {
                    "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: DNS_NAMESPACE}},
                    "podSelector": {"matchLabels": dict(DNS_POD_LABELS)},
                }
            ],
            "ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}],
        }
    ]
    if isinstance(model_store_cidrs, pulumi.Output) or model_store_cidrs:
        rules.append(
            {
                "to": _ip_blocks(model_store_cidrs, "model store CIDRs"),
                "ports": _port_entries(model_store_ports(model_store_kind)),
            }
        )
    return {"podSelector": {"matchLabels": dict(group_labels)}, "policyTypes": ["Egress"], "egress": rules}
