"""Subnet address plan for the private VPC segment.

Owns how the VPC CIDR is cut: one large private subnet per availability zone for nodes and pods
(the VPC CNI gives every pod a VPC address), and, only when NAT egress is chosen, one small public
subnet per NAT gateway zone that holds nothing but the NAT gateway. The layout never depends on
the egress mode: the public block has a fixed slot, so switching between `nat` and `endpoints`
never renumbers (and so never replaces) a private subnet. Pure: no Pulumi imports.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

PUBLIC_SUBNET_PREFIX = 26
"""Public subnets hold only NAT gateways: a /26 (59 usable addresses) is ample."""
MAX_PRIVATE_SUBNET_PREFIX = 24
"""Smallest private subnet we accept: a /24 holds ~250 pod and node addresses."""

Tier = Literal["private", "public"]


class SubnetPlanError(ValueError):
    """The VPC CIDR cannot hold the requested subnets."""


@dataclass(frozen=True)
class PlannedSubnet:
    """One subnet of the plan."""

    availability_zone: str
    tier: Tier
    cidr: ipaddress.IPv4Network


def _slots(zone_count: int) -> int:
    """Equal slots the VPC is cut into: one per zone plus one for the public block, rounded up."""
    return 2 ** math.ceil(math.log2(zone_count + 1))


def plan_subnets(
    vpc_cidr: ipaddress.IPv4Network, availability_zones: Sequence[str], *, public: bool
) -> tuple[PlannedSubnet, ...]:
    """Private subnets (slot i for zone i) and, when `public`, /26 public subnets in the last slot.

    Zones keep the order given (the settings' order), so adding a zone at the end never moves the
    existing private subnets as long as the slot count stays the same.
    """
    zones = list(availability_zones)
    if not zones:
        raise SubnetPlanError("at least one availability zone is needed")
    if len(set(zones)) != len(zones):
        raise SubnetPlanError(f"availability zones repeat: {', '.join(zones)}")
    slots = _slots(len(zones))
    slot_prefix = vpc_cidr.prefixlen + int(math.log2(slots))
    if slot_prefix > MAX_PRIVATE_SUBNET_PREFIX:
        raise SubnetPlanError(
            f"VPC {vpc_cidr} is too small for {len(zones)} zones: private subnets would be "
            f"/{slot_prefix}, smaller than /{MAX_PRIVATE_SUBNET_PREFIX}; use a larger CIDR or fewer zones"
        )
    blocks = list(vpc_cidr.subnets(new_prefix=slot_prefix))
    planned = [PlannedSubnet(az, "private", blocks[i]) for i, az in enumerate(zones)]
    if public:
        public_block = blocks[-1]
        if public_block.prefixlen > PUBLIC_SUBNET_PREFIX:
            raise SubnetPlanError(f"public block {public_block} cannot hold /{PUBLIC_SUBNET_PREFIX} subnets")
        pieces = list(public_block.subnets(new_prefix=PUBLIC_SUBNET_PREFIX))
        if len(pieces) < len(zones):
            raise SubnetPlanError(
                f"public block {public_block} holds {len(pieces)} /{PUBLIC_SUBNET_PREFIX} subnets, "
                f"{len(zones)} zones need one each"
            )
        planned += [PlannedSubnet(az, "public", pieces[i]) for i, az in enumerate(zones)]
    return tuple(planned)


def nat_gateway_zones(availability_zones: Sequence[str], nat_gateways: str) -> tuple[str, ...]:
    """Zones that get a NAT gateway: every zone for `per-az`, the first zone for `single`."""
    zones = tuple(availability_zones)
    if nat_gateways == "per-az":
        return zones
    if nat_gateways == "single":
        return zones[:1]
    raise SubnetPlanError(f"natGateways must be single or per-az, got {nat_gateways!r}")


def nat_zone_for(availability_zone: str, nat_zones: Sequence[str]) -> str:
    """The NAT gateway zone a private subnet routes through: its own zone when it has one."""
    if not nat_zones:
        raise SubnetPlanError("no NAT gateway zones")
    return availability_zone if availability_zone in nat_zones else nat_zones[0]


def pair_subnets(
    stack: str, subnets_key: str, zones_key: str, subnet_ids: object, zones: object
) -> list[tuple[str, str]]:
    """Pair an adopted network's subnet ids with their zones (two parallel stack outputs)."""
    if not isinstance(subnet_ids, list) or not isinstance(zones, list) or len(subnet_ids) != len(zones):
        raise SubnetPlanError(
            f"network stack {stack!r}: outputs {subnets_key!r} and {zones_key!r} must be lists of the "
            "same length (one availability zone per private subnet)"
        )
    return [(str(subnet), str(zone)) for subnet, zone in zip(subnet_ids, zones, strict=True)]


def subnet_in_zone(stack: str, availability_zone: str, pairs: Sequence[tuple[str, str]]) -> str:
    """The adopted network's private subnet in `availability_zone`, or an error naming both."""
    for subnet, zone in pairs:
        if zone == availability_zone:
            return subnet
    raise SubnetPlanError(
        f"network stack {stack!r} has no private subnet in {availability_zone} (its zones: "
        f"{', '.join(z for _, z in pairs)}); set vllm-serving:network.availabilityZones to zones it covers"
    )
