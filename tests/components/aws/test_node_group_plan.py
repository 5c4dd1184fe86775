"""Node group decisions (components/node_group_plan.py) without Pulumi: the prod pools from the stack
file and plan_stack decide to the exact layout, zone, placement, huge pages, AMI, labels and
resources; reservations drop the placement group; ARM instance facts pick the ARM NVIDIA AMI."""

from __future__ import annotations

from dataclasses import replace

from components.efa_layout import EfaInterface
from components.node_group_plan import plan_node_group
from tests.components.aws.support import plan_of, raw, settings_of

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]


def prod_pool(name: str):
    from capacity import get_instance_type

    settings = settings_of(raw("prod"))
    pool = settings.pool(name)
    return pool, plan_of(settings).pool(name), get_instance_type(pool.instance_type)


def test_prod_h100_pool_decisions() -> None:
    decided = plan_node_group(*prod_pool("h100"), ZONES)
    assert len(decided.interfaces) == 32
    assert decided.interfaces[0] == EfaInterface(0, 0, "efa")
    assert decided.subnet_azs == ("us-east-1a",)
    assert decided.placement_group is True
    assert decided.hugepages == 5128
    assert decided.ami_type == "AL2023_x86_64_NVIDIA"
    assert decided.labels["vllm-serving/pool"] == "h100"
    assert decided.resources == {
        "hugepages-2Mi": "10256Mi",
        "nvidia.com/gpu": "8",
        "vpc.amazonaws.com/efa": "32",
    }
    assert decided.capacity == {}


def test_prod_l40s_pool_decisions() -> None:
    decided = plan_node_group(*prod_pool("l40s"), ZONES)
    assert decided.interfaces == (EfaInterface(0, 0, "efa"),)
    assert decided.subnet_azs == ("us-east-1a",)
    assert decided.resources["nvidia.com/gpu"] == "4"


def test_reservation_replaces_the_placement_group() -> None:
    pool, plan, instance = prod_pool("h100")
    reserved = pool.model_copy(update={"capacity_reservation_id": "cr-0123456789abcdef0"})
    decided = plan_node_group(reserved, plan, instance, ZONES)
    assert decided.placement_group is False
    assert decided.capacity == {
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": "cr-0123456789abcdef0"}
        }
    }


def test_arm_instance_facts_pick_the_arm_nvidia_ami() -> None:
    pool, plan, instance = prod_pool("h100")
    decided = plan_node_group(pool, plan, replace(instance, architecture="arm64"), ZONES)
    assert decided.ami_type == "AL2023_ARM_64_NVIDIA"
