"""Security-group rules of the private network, as data.

Owns which traffic each security group of `PrivateNetwork` admits: the EKS control plane
(`cluster`), every node (`node`), the EFA fabric (`efa`: all traffic to and from itself only),
the model filesystem (`model-store`: Lustre ports, or NFS for EFS, from nodes only) and the VPC interface
endpoints (`endpoints`: HTTPS from the VPC only). Peers are symbolic (another group, `self`,
the VPC CIDR, the S3 prefix list, or `anywhere` for egress); the component maps them to ids.
No rule admits ingress from anywhere. Pure: no Pulumi imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from components.aws_facts import aws_facts

Group = Literal["cluster", "node", "efa", "model-store", "endpoints"]
StoreKind = Literal["fsx-lustre", "efs", "existing"]
Peer = Literal["cluster", "node", "efa", "model-store", "endpoints", "self", "vpc-cidr", "s3", "anywhere"]
Direction = Literal["ingress", "egress"]
ALL_PROTOCOLS = "-1"
GROUP_DESCRIPTIONS: dict[Group, str] = {
    "cluster": "EKS control plane (additional security group)",
    "node": "All Kubernetes nodes",
    "efa": "EFA fabric: all traffic to and from this group only",
    "model-store": "Model filesystem: Lustre ports from nodes only",
    "endpoints": "VPC interface endpoints: HTTPS from the VPC only",
}
# Security-group descriptions cannot change in place (a new one replaces the group), so the Lustre
# text stays as first shipped and EFS gets its own.
STORE_GROUP_DESCRIPTIONS: dict[StoreKind, str] = {
    "fsx-lustre": GROUP_DESCRIPTIONS["model-store"],
    "efs": "Model filesystem: NFS from nodes only",
    "existing": "Model filesystem: unused (the store lives outside this network)",
}
EPHEMERAL_PORTS = (1025, 65535)
KUBELET_AND_WEBHOOKS = "kubelets and admission webhooks"


@dataclass(frozen=True)
class RuleSpec:
    """One security-group rule resource to create."""

    key: str
    """Role suffix of the rule resource's name (`{network}-{key}`); unique in the plan."""
    group: Group
    direction: Direction
    peer: Peer
    protocol: str
    from_port: int | None
    to_port: int | None
    description: str


def _tcp(
    key: str, group: Group, direction: Direction, peer: Peer, ports: tuple[int, int], what: str
) -> RuleSpec:
    return RuleSpec(key, group, direction, peer, "tcp", ports[0], ports[1], what)


def _all(key: str, group: Group, direction: Direction, peer: Peer, what: str) -> RuleSpec:
    return RuleSpec(key, group, direction, peer, ALL_PROTOCOLS, None, None, what)


def _port_label(ports: tuple[int, int]) -> str:
    return str(ports[0]) if ports[0] == ports[1] else f"{ports[0]}-{ports[1]}"


def _lustre_rules() -> list[RuleSpec]:
    rules: list[RuleSpec] = []
    for low, high in aws_facts()["network"]["fsxLustrePorts"]:
        ports = (int(low), int(high))
        label = _port_label(ports)
        rules += [
            _tcp(
                f"store-in-nodes-{label}",
                "model-store",
                "ingress",
                "node",
                ports,
                f"Lustre LNET {label} from nodes",
            ),
            _tcp(
                f"store-in-self-{label}",
                "model-store",
                "ingress",
                "self",
                ports,
                f"Lustre LNET {label} between file servers",
            ),
            _tcp(
                f"store-out-nodes-{label}",
                "model-store",
                "egress",
                "node",
                ports,
                f"Lustre LNET {label} to nodes",
            ),
            _tcp(
                f"store-out-self-{label}",
                "model-store",
                "egress",
                "self",
                ports,
                f"Lustre LNET {label} between file servers",
            ),
            _tcp(
                f"node-in-store-{label}",
                "node",
                "ingress",
                "model-store",
                ports,
                f"Lustre LNET {label} callbacks from the file system",
            ),
        ]
    return rules


def _nfs_rules() -> list[RuleSpec]:
    port = int(aws_facts()["network"]["nfsPort"])
    # Stateful: replies to the nodes need no egress rule on the mount targets' group.
    return [
        _tcp(f"store-in-nodes-{port}", "model-store", "ingress", "node", (port, port), "NFS (EFS) from nodes")
    ]


def _store_rules(kind: StoreKind) -> list[RuleSpec]:
    if kind == "fsx-lustre":
        return _lustre_rules()
    if kind == "efs":
        return _nfs_rules()
    if kind == "existing":
        return []
    raise ValueError(f"model store kind must be fsx-lustre, efs or existing, got {kind!r}")


def plan_security_rules(
    egress: Literal["nat", "endpoints"], model_store_kind: StoreKind = "fsx-lustre"
) -> tuple[RuleSpec, ...]:
    """Every rule of the network's security groups for the egress mode and the model store's
    kind (its group admits only that filesystem's ports), sorted by key."""
    if egress not in ("nat", "endpoints"):
        raise ValueError(f"egress must be nat or endpoints, got {egress!r}")
    https = (443, 443)
    rules = [
        _tcp(
            "cluster-in-nodes-https",
            "cluster",
            "ingress",
            "node",
            https,
            "Nodes to the Kubernetes API server",
        ),
        _tcp(
            "cluster-out-nodes-https", "cluster", "egress", "node", https, "Control plane to webhooks on 443"
        ),
        _tcp(
            "cluster-out-nodes-ephemeral",
            "cluster",
            "egress",
            "node",
            EPHEMERAL_PORTS,
            f"Control plane to {KUBELET_AND_WEBHOOKS}",
        ),
        _all(
            "node-in-self",
            "node",
            "ingress",
            "self",
            "Node to node and pod to pod (DNS, Ray, NCCL bootstrap)",
        ),
        _tcp(
            "node-in-cluster-https", "node", "ingress", "cluster", https, "Control plane to webhooks on 443"
        ),
        _tcp(
            "node-in-cluster-ephemeral",
            "node",
            "ingress",
            "cluster",
            EPHEMERAL_PORTS,
            f"Control plane to {KUBELET_AND_WEBHOOKS}",
        ),
        _all("efa-in-self", "efa", "ingress", "self", "EFA OS-bypass traffic within the group only"),
        _all("efa-out-self", "efa", "egress", "self", "EFA OS-bypass traffic within the group only"),
        *_store_rules(model_store_kind),
    ]
    if egress == "nat":
        rules.append(
            _all(
                "node-out-anywhere",
                "node",
                "egress",
                "anywhere",
                "Node egress through NAT (images, AWS APIs)",
            )
        )
    else:
        rules += [
            _all(
                "node-out-vpc",
                "node",
                "egress",
                "vpc-cidr",
                "Node egress inside the VPC (endpoints, control plane)",
            ),
            _tcp(
                "node-out-s3-https",
                "node",
                "egress",
                "s3",
                https,
                "Image layers and model weights via the S3 gateway endpoint",
            ),
            _tcp(
                "endpoints-in-vpc-https",
                "endpoints",
                "ingress",
                "vpc-cidr",
                https,
                "HTTPS to VPC endpoints from the VPC only",
            ),
        ]
    open_ingress = [r.key for r in rules if r.direction == "ingress" and r.peer == "anywhere"]
    if open_ingress:
        raise ValueError(f"rules {open_ingress} would admit ingress from anywhere")
    keys = [r.key for r in rules]
    if len(keys) != len(set(keys)):
        raise ValueError(f"duplicate rule keys: {sorted(k for k in keys if keys.count(k) > 1)}")
    return tuple(sorted(rules, key=lambda r: r.key))


def groups_for(egress: Literal["nat", "endpoints"]) -> tuple[Group, ...]:
    """The security groups the network creates for an egress mode."""
    base: tuple[Group, ...] = ("cluster", "node", "efa", "model-store")
    return (*base, "endpoints") if egress == "endpoints" else base
