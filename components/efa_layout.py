"""EFA decisions for a GPU node group: network interfaces, AZ/subnet choice, huge pages.

Owns the pure rules that turn an instance type's facts (network cards, EFA support) and a pool's
interconnect into the launch template's interface layout, the single availability zone an EFA
pool lives in, and the 2 MiB huge pages EFA needs. No Pulumi imports: `GpuNodeGroup` calls these
before it creates anything, and tests call them directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from components.aws_facts import aws_facts

InterfaceType = Literal["efa", "efa-only"]


class EfaFacts(Protocol):
    """The instance-type facts the layout needs (`capacity.InstanceType` provides them)."""

    @property
    def name(self) -> str: ...

    @property
    def efa_supported(self) -> bool: ...

    @property
    def network_cards(self) -> int: ...

    @property
    def max_efa_interfaces(self) -> int: ...


class EfaLayoutError(ValueError):
    """A pool whose EFA request cannot be met as configured."""


@dataclass(frozen=True)
class EfaInterface:
    """One launch-template network interface on an EFA node."""

    network_card_index: int
    device_index: int
    interface_type: InterfaceType


def plan_efa_interfaces(instance: EfaFacts, interconnect: str) -> tuple[EfaInterface, ...]:
    """One EFA interface per network card, or none when the pool does not use EFA.

    Card 0 carries the primary interface: device index 0, type `efa` (EFA with ENA, so the node
    keeps its IP networking). Every other card gets an `efa-only` interface (no IP address, so
    32-card p5 nodes don't eat 31 extra VPC addresses) at device index 1: the EC2 guide's EFA
    layout "each additional interface: next network card index, device index 1"
    (docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html, revision quoted in
    reference/efa-eks-vllm-facts.md section 2.1), as terraform-aws-modules/eks
    (modules/eks-managed-node-group/main.tf `device_index = i == 0 ? 0 : 1`) and pulumi-eks
    (nodejs/eks/nodes/instances.ts) ship it. A newer revision of that page also allows device
    index 0 for `efa-only` on secondary cards; both are accepted by EC2.
    """
    if interconnect != "efa":
        return ()
    if not instance.efa_supported:
        raise EfaLayoutError(
            f"{instance.name} has no EFA; use interconnect tcp or an EFA instance type "
            "(p4d, p5, p5en, p6-b200, g6e.12xlarge and larger)"
        )
    cards = instance.network_cards
    if cards < 1:
        raise EfaLayoutError(f"{instance.name} reports {cards} network cards; expected at least 1")
    if instance.max_efa_interfaces < cards:
        raise EfaLayoutError(
            f"{instance.name} has {cards} network cards but only {instance.max_efa_interfaces} EFA "
            "interfaces; one EFA per network card cannot be laid out for it"
        )
    return tuple(
        EfaInterface(
            network_card_index=card,
            device_index=0 if card == 0 else 1,
            interface_type="efa" if card == 0 else "efa-only",
        )
        for card in range(cards)
    )


def choose_subnet_azs(
    pool_name: str, pool_az: str | None, efa: bool, network_azs: Sequence[str]
) -> tuple[str, ...]:
    """The availability zones whose private subnets a pool's node group launches into.

    EFA pools get exactly one: EFA traffic does not cross AZs and the cluster placement group
    pins one AZ, and a node group spread over several AZs fails on its next replacement
    (terraform-aws-modules/terraform-aws-eks#3044). Other pools use their AZ when set, or all.
    """
    known = list(network_azs)
    if not known:
        raise EfaLayoutError(f"pool {pool_name!r}: the network has no private subnets")
    if pool_az is None:
        if efa and len(known) > 1:
            raise EfaLayoutError(
                f"EFA pool {pool_name!r} would span {', '.join(known)}; EFA traffic does not cross "
                "availability zones and its cluster placement group pins one: set "
                f"gpuPools[].availabilityZone to one of {', '.join(known)}"
            )
        return tuple(known)
    if pool_az not in known:
        raise EfaLayoutError(
            f"pool {pool_name!r} asks for availability zone {pool_az}, but the network has private "
            f"subnets only in {', '.join(known)} (with an existing network, list the zone under "
            "network.availabilityZones)"
        )
    return (pool_az,)


def assert_single_az(pool_name: str, subnet_azs: Sequence[str]) -> None:
    """Guard: an EFA node group must launch into exactly one availability zone."""
    if len(set(subnet_azs)) != 1:
        raise EfaLayoutError(
            f"EFA pool {pool_name!r} must use exactly one availability zone, got "
            f"{', '.join(sorted(set(subnet_azs))) or 'none'}"
        )


def hugepages_2mi(efa_interface_count: int) -> int:
    """2 MiB huge pages to pre-allocate: the EFA driver's 5128 on EFA nodes, none otherwise."""
    return int(aws_facts()["efa"]["hugepages2MiCount"]) if efa_interface_count > 0 else 0
