"""Launch-template pieces shared by the system and GPU node groups, as plain input dicts.

Owns the secure node defaults both node groups use: IMDSv2 required with a hop limit of 2,
an encrypted gp3 root volume, tags propagated to instances, volumes and interfaces, the EFA
network interfaces (security groups on every interface, never a subnet or a public IP: EKS
sets subnets on the node group), and the capacity-reservation / capacity-block options.
Pure: values are plain data or pass-through Pulumi inputs; nothing is created here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.aws_facts import aws_facts
from components.efa_layout import EfaInterface

TAGGED_RESOURCE_TYPES = ("instance", "network-interface", "volume")


def metadata_options() -> dict[str, Any]:
    """IMDSv2 only; hop limit 2 so pods one hop behind the node can still reach IMDS."""
    imds = aws_facts()["instanceMetadata"]
    return {
        "http_endpoint": "enabled",
        "http_tokens": imds["httpTokens"],
        "http_put_response_hop_limit": int(imds["hopLimit"]),
        "instance_metadata_tags": "disabled",
    }


def root_volume(size_gib: int) -> list[dict[str, Any]]:
    """An encrypted gp3 root volume of `size_gib`, deleted with the instance."""
    if size_gib < 20:
        raise ValueError(f"root volume must be at least 20 GiB for the AL2023 NVIDIA AMI, got {size_gib}")
    volume = aws_facts()["rootVolume"]
    return [
        {
            "device_name": volume["deviceName"],
            "ebs": {
                "volume_size": size_gib,
                "volume_type": volume["volumeType"],
                "iops": int(volume["iops"]),
                "throughput": int(volume["throughputMibps"]),
                "encrypted": "true",
                "delete_on_termination": "true",
            },
        }
    ]


def tag_specifications(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    """Propagate `tags` to the instances, volumes and network interfaces the template launches."""
    return [{"resource_type": kind, "tags": dict(tags)} for kind in TAGGED_RESOURCE_TYPES]


def network_interfaces(
    layout: Sequence[EfaInterface], security_group_ids: Sequence[Any]
) -> list[dict[str, Any]]:
    """Launch-template interfaces for an EFA layout: every interface carries every security group.

    No `subnet_id` (EKS rejects it; the node group sets subnets) and never a public IP.
    """
    return [
        {
            "network_card_index": interface.network_card_index,
            "device_index": interface.device_index,
            "interface_type": interface.interface_type,
            "security_groups": list(security_group_ids),
            "associate_public_ip_address": "false",
            "delete_on_termination": "true",
        }
        for interface in layout
    ]


def capacity_options(capacity_type: str, reservation_id: str | None) -> dict[str, Any]:
    """Launch-template arguments for the pool's capacity: capacity blocks, reservations, or none.

    Capacity blocks need `instance_market_options.market_type = capacity-block` plus the
    reservation target (EKS capacity-blocks-mng.adoc); an on-demand pool with a reservation id
    targets that On-Demand Capacity Reservation. Spot and plain on-demand need nothing here.
    """
    if capacity_type == "capacity-block" and not reservation_id:
        raise ValueError("capacityType capacity-block needs capacityReservationId (cr-...)")
    if capacity_type == "spot" and reservation_id:
        raise ValueError("capacityReservationId cannot be combined with capacityType spot")
    if reservation_id is None:
        return {}
    options: dict[str, Any] = {
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": reservation_id},
        }
    }
    if capacity_type == "capacity-block":
        options["instance_market_options"] = {"market_type": "capacity-block"}
    return options


EKS_CAPACITY_TYPES = {"on-demand": "ON_DEMAND", "spot": "SPOT", "capacity-block": "CAPACITY_BLOCK"}


def eks_capacity_type(capacity_type: str) -> str:
    """Settings' capacity type -> the EKS node group's `capacityType`."""
    if capacity_type not in EKS_CAPACITY_TYPES:
        raise ValueError(
            f"capacity type must be one of {', '.join(EKS_CAPACITY_TYPES)}, got {capacity_type!r}"
        )
    return EKS_CAPACITY_TYPES[capacity_type]
