"""Security-group rules as data (components/sg_rules.py): nothing admits ingress from anywhere,
the EFA group allows all traffic to and from itself and nothing else, the model store admits only
Lustre ports from nodes (and its own servers), endpoints exist only in endpoints mode, node egress
follows the egress mode, keys are unique and sorted."""

from __future__ import annotations

import pytest

from components.sg_rules import ALL_PROTOCOLS, GROUP_DESCRIPTIONS, groups_for, plan_security_rules

MODES = ("nat", "endpoints")


@pytest.mark.parametrize("egress", MODES)
def test_no_ingress_from_anywhere(egress: str) -> None:
    assert [
        r.key for r in plan_security_rules(egress) if r.direction == "ingress" and r.peer in ("anywhere",)
    ] == []


@pytest.mark.parametrize("egress", MODES)
def test_efa_group_is_self_only_both_ways(egress: str) -> None:
    efa = [r for r in plan_security_rules(egress) if r.group == "efa" or r.peer == "efa"]
    assert [(r.key, r.direction, r.peer, r.protocol, r.from_port, r.to_port) for r in efa] == [
        ("efa-in-self", "ingress", "self", ALL_PROTOCOLS, None, None),
        ("efa-out-self", "egress", "self", ALL_PROTOCOLS, None, None),
    ]


def test_model_store_admits_lustre_from_nodes_only() -> None:
    store = [r for r in plan_security_rules("nat") if r.group == "model-store"]
    assert sorted((r.direction, r.peer, r.protocol, r.from_port, r.to_port) for r in store) == [
        ("egress", "node", "tcp", 988, 988),
        ("egress", "node", "tcp", 1018, 1023),
        ("egress", "self", "tcp", 988, 988),
        ("egress", "self", "tcp", 1018, 1023),
        ("ingress", "node", "tcp", 988, 988),
        ("ingress", "node", "tcp", 1018, 1023),
        ("ingress", "self", "tcp", 988, 988),
        ("ingress", "self", "tcp", 1018, 1023),
    ]


def test_efs_store_admits_nfs_from_nodes_only_and_existing_stores_nothing() -> None:
    efs = [
        r for r in plan_security_rules("nat", "efs") if r.group == "model-store" or r.peer == "model-store"
    ]
    assert [(r.direction, r.peer, r.protocol, r.from_port, r.to_port) for r in efs] == [
        ("ingress", "node", "tcp", 2049, 2049)
    ]
    existing = plan_security_rules("endpoints", "existing")
    assert [r for r in existing if r.group == "model-store" or r.peer == "model-store"] == []
    with pytest.raises(ValueError, match="model store kind must be fsx-lustre, efs or existing"):
        plan_security_rules("nat", "s3")  # type: ignore[arg-type]


def test_nat_mode_node_egress_and_no_endpoint_group() -> None:
    rules = plan_security_rules("nat")
    egress = [(r.key, r.peer, r.protocol) for r in rules if r.group == "node" and r.direction == "egress"]
    assert egress == [("node-out-anywhere", "anywhere", ALL_PROTOCOLS)]
    assert not [r for r in rules if r.group == "endpoints"]
    assert groups_for("nat") == ("cluster", "node", "efa", "model-store")


def test_endpoints_mode_keeps_node_egress_inside_the_vpc() -> None:
    rules = plan_security_rules("endpoints")
    egress = sorted(
        (r.peer, r.protocol, r.from_port) for r in rules if r.group == "node" and r.direction == "egress"
    )
    assert egress == [("s3", "tcp", 443), ("vpc-cidr", ALL_PROTOCOLS, None)]
    endpoint_rules = [
        (r.direction, r.peer, r.protocol, r.from_port, r.to_port) for r in rules if r.group == "endpoints"
    ]
    assert endpoint_rules == [("ingress", "vpc-cidr", "tcp", 443, 443)]
    assert groups_for("endpoints") == ("cluster", "node", "efa", "model-store", "endpoints")


def test_control_plane_and_node_rules() -> None:
    rules = {r.key: r for r in plan_security_rules("nat")}
    assert (rules["cluster-in-nodes-https"].peer, rules["cluster-in-nodes-https"].from_port) == ("node", 443)
    assert (rules["node-in-cluster-ephemeral"].from_port, rules["node-in-cluster-ephemeral"].to_port) == (
        1025,
        65535,
    )
    assert rules["node-in-self"].protocol == ALL_PROTOCOLS


@pytest.mark.parametrize("egress", MODES)
def test_keys_unique_sorted_described(egress: str) -> None:
    rules = plan_security_rules(egress)
    keys = [r.key for r in rules]
    assert keys == sorted(set(keys))
    assert all(r.description and len(r.description) <= 255 for r in rules)
    assert {r.group for r in rules} == set(groups_for(egress))
    assert set(GROUP_DESCRIPTIONS) >= set(groups_for(egress))


def test_unknown_egress_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="egress must be nat or endpoints, got 'internet'"):
        plan_security_rules("internet")  # type: ignore[arg-type]
