"""Subnet plan (components/subnets.py): exact CIDRs for the shipped stacks, properties over any
VPC size and zone count (inside the VPC, no overlaps, private subnets independent of the egress
mode), NAT zone choice, and adopted-network subnet pairing with its error messages."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from components.subnets import (
    PUBLIC_SUBNET_PREFIX,
    PlannedSubnet,
    SubnetPlanError,
    nat_gateway_zones,
    nat_zone_for,
    pair_subnets,
    plan_subnets,
    subnet_in_zone,
)

NET = ipaddress.IPv4Network


def cidrs(plan: tuple[PlannedSubnet, ...], tier: str) -> list[str]:
    return [str(p.cidr) for p in plan if p.tier == tier]


def test_dev_plan_two_zones_with_nat() -> None:
    plan = plan_subnets(NET("10.40.0.0/16"), ["us-east-1a", "us-east-1b"], public=True)
    assert cidrs(plan, "private") == ["10.40.0.0/18", "10.40.64.0/18"]
    assert cidrs(plan, "public") == ["10.40.192.0/26", "10.40.192.64/26"]
    assert [p.availability_zone for p in plan] == ["us-east-1a", "us-east-1b"] * 2


def test_prod_plan_three_zones_with_nat() -> None:
    plan = plan_subnets(NET("10.50.0.0/16"), ["us-east-1a", "us-east-1b", "us-east-1c"], public=True)
    assert cidrs(plan, "private") == ["10.50.0.0/18", "10.50.64.0/18", "10.50.128.0/18"]
    assert cidrs(plan, "public") == ["10.50.192.0/26", "10.50.192.64/26", "10.50.192.128/26"]


def test_endpoints_mode_has_no_public_subnets() -> None:
    plan = plan_subnets(NET("10.40.0.0/16"), ["us-east-1a", "us-east-1b"], public=False)
    assert cidrs(plan, "public") == []
    assert cidrs(plan, "private") == ["10.40.0.0/18", "10.40.64.0/18"]


def test_four_zones_use_eighths() -> None:
    plan = plan_subnets(NET("10.0.0.0/20"), ["a1", "b1", "c1", "d1"], public=True)
    assert cidrs(plan, "private") == ["10.0.0.0/23", "10.0.2.0/23", "10.0.4.0/23", "10.0.6.0/23"]
    assert cidrs(plan, "public")[0] == "10.0.14.0/26"


def test_too_small_vpc_is_rejected() -> None:
    zones = [f"z{i}" for i in range(16)]
    with pytest.raises(
        SubnetPlanError, match=r"VPC 10\.0\.0\.0/20 is too small for 16 zones: private subnets would be /25"
    ):
        plan_subnets(NET("10.0.0.0/20"), zones, public=False)


def test_no_or_repeated_zones_are_rejected() -> None:
    with pytest.raises(SubnetPlanError, match="at least one availability zone"):
        plan_subnets(NET("10.0.0.0/16"), [], public=True)
    with pytest.raises(SubnetPlanError, match="availability zones repeat: a, a"):
        plan_subnets(NET("10.0.0.0/16"), ["a", "a"], public=True)


@given(prefix=st.integers(16, 20), zone_count=st.integers(1, 6), second_octet=st.integers(0, 255))
def test_plan_properties(prefix: int, zone_count: int, second_octet: int) -> None:
    vpc = NET(f"10.{second_octet}.0.0/{prefix}", strict=False)
    zones = [f"zone-{i}" for i in range(zone_count)]
    with_public = plan_subnets(vpc, zones, public=True)
    without = plan_subnets(vpc, zones, public=False)
    blocks = [p.cidr for p in with_public]
    assert all(b.subnet_of(vpc) for b in blocks)
    assert not any(a.overlaps(b) for i, a in enumerate(blocks) for b in blocks[i + 1 :])
    private = [p for p in with_public if p.tier == "private"]
    assert [p.availability_zone for p in private] == zones
    assert len({p.cidr.prefixlen for p in private}) == 1
    assert [p for p in with_public if p.tier == "private"] == list(without)
    assert all(p.cidr.prefixlen == PUBLIC_SUBNET_PREFIX for p in with_public if p.tier == "public")


def test_nat_zones() -> None:
    zones = ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert nat_gateway_zones(zones, "per-az") == tuple(zones)
    assert nat_gateway_zones(zones, "single") == ("us-east-1a",)
    with pytest.raises(SubnetPlanError, match="natGateways must be single or per-az, got 'two'"):
        nat_gateway_zones(zones, "two")
    assert nat_zone_for("us-east-1b", ("us-east-1a", "us-east-1b")) == "us-east-1b"
    assert nat_zone_for("us-east-1c", ("us-east-1a",)) == "us-east-1a"
    with pytest.raises(SubnetPlanError, match="no NAT gateway zones"):
        nat_zone_for("us-east-1a", ())


def test_adopted_subnets_pair_with_their_zones() -> None:
    pairs = pair_subnets(
        "acme/network/prod", "ids", "zones", ["subnet-1", "subnet-2"], ["eu-west-1a", "eu-west-1b"]
    )
    assert pairs == [("subnet-1", "eu-west-1a"), ("subnet-2", "eu-west-1b")]
    assert subnet_in_zone("acme/network/prod", "eu-west-1b", pairs) == "subnet-2"


def test_adopted_subnet_errors_name_the_stack() -> None:
    with pytest.raises(
        SubnetPlanError, match=r"network stack 'acme/network/prod': outputs 'ids' and 'zones' must be lists"
    ):
        pair_subnets("acme/network/prod", "ids", "zones", ["subnet-1"], ["a", "b"])
    with pytest.raises(
        SubnetPlanError,
        match=r"network stack 'acme/network/prod' has no private subnet in us-east-1a \(its zones: eu-west-1a\)",
    ):
        subnet_in_zone("acme/network/prod", "us-east-1a", [("subnet-1", "eu-west-1a")])
