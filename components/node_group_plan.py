"""Decisions for one GPU pool's managed node group, made before anything is created.

Owns the validation of a pool against its plan and instance facts (matching names and types, node
bounds, no InfiniBand on EKS, a zone for reservations) and the decisions `GpuNodeGroup` turns into
resources: the EFA interface layout, the subnet zones (exactly one with EFA), whether a cluster
placement group is made, huge pages, the AMI type, labels, extended resources and capacity options.
Pure: no Pulumi imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from components import launch_templates as lt
from components.aws_facts import ami_type
from components.efa_layout import (
    EfaInterface,
    assert_single_az,
    choose_subnet_azs,
    hugepages_2mi,
    plan_efa_interfaces,
)
from components.node_scheduling import gpu_node_labels, node_resources

if TYPE_CHECKING:
    from capacity import InstanceType
    from planning import PoolPlan
    from settings import GpuPoolSettings


@dataclass(frozen=True)
class NodeGroupPlan:
    """Everything decided about a pool's node group before any resource exists."""

    interfaces: tuple[EfaInterface, ...]
    subnet_azs: tuple[str, ...]
    placement_group: bool
    hugepages: int
    ami_type: str
    labels: dict[str, str]
    resources: dict[str, str]
    capacity: dict[str, Any]


def plan_node_group(
    pool: GpuPoolSettings, plan: PoolPlan, instance: InstanceType, network_zones: Sequence[str]
) -> NodeGroupPlan:
    """Validate a pool against its plan and facts and decide its node group; errors name the pool.

    `network_zones` are the zones with a private subnet, in the network's order.
    """
    if pool.instance_type != instance.name or (plan.instance_type and plan.instance_type != instance.name):
        raise ValueError(
            f"pool {pool.name!r}: instance facts are for {instance.name}, the pool asks for "
            f"{pool.instance_type} and the plan for {plan.instance_type}"
        )
    if plan.name != pool.name:
        raise ValueError(f"pool {pool.name!r} was given the plan of pool {plan.name!r}")
    if plan.interconnect == "infiniband":
        raise ValueError(f"pool {pool.name!r}: infiniband is for existing clusters; EKS pools use efa or tcp")
    if plan.max_nodes < 1 or plan.min_nodes < 0 or plan.min_nodes > plan.max_nodes:
        raise ValueError(
            f"pool {pool.name!r}: node bounds min {plan.min_nodes} / max {plan.max_nodes} are invalid "
            "(need 0 <= min <= max and max >= 1)"
        )
    interfaces = plan_efa_interfaces(instance, plan.interconnect)
    efa = bool(interfaces)
    if pool.capacity_reservation_id and pool.availability_zone is None:
        raise ValueError(
            f"pool {pool.name!r}: capacity reservation {pool.capacity_reservation_id} lives in one "
            "availability zone; set gpuPools[].availabilityZone to it"
        )
    subnet_azs = choose_subnet_azs(pool.name, pool.availability_zone, efa, network_zones)
    if efa:
        assert_single_az(pool.name, subnet_azs)
    pages = hugepages_2mi(len(interfaces))
    return NodeGroupPlan(
        interfaces=interfaces,
        subnet_azs=subnet_azs,
        # A reservation (ODCR or capacity block) already fixes placement; a cluster placement
        # group on top of it fails with InsufficientInstanceCapacity (terraform-aws-eks PR #3730).
        placement_group=efa and pool.capacity_reservation_id is None,
        hugepages=pages,
        ami_type=ami_type(instance.architecture, accelerated=True),
        labels=gpu_node_labels(pool.name, plan.gpu_model, efa=efa),
        resources=node_resources(instance.gpu_count, len(interfaces), pages),
        capacity=lt.capacity_options(pool.capacity_type, pool.capacity_reservation_id),
    )
