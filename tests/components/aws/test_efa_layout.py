"""EFA layout (components/efa_layout.py): the exact interfaces per instance type from the capacity
facts (p5.48xlarge 32, p5en.48xlarge 16, p4d.24xlarge 4, g6e.12xlarge 1, a non-EFA type none),
card 0 `efa` at device 0 and `efa-only` at device 1 elsewhere, the single-AZ rule for EFA pools,
and the errors for EFA on a non-EFA type, a card/EFA mismatch and a multi-AZ EFA pool."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from components.efa_layout import (
    EfaInterface,
    EfaLayoutError,
    assert_single_az,
    choose_subnet_azs,
    hugepages_2mi,
    plan_efa_interfaces,
)

# instance type -> interfaces (one per network card), from capacity/data/instance_types.json.
KNOWN_LAYOUTS = {
    "p5.48xlarge": 32,
    "p5e.48xlarge": 32,
    "p5en.48xlarge": 16,
    "p6-b200.48xlarge": 8,
    "p4d.24xlarge": 4,
    "p4de.24xlarge": 4,
    "g6e.48xlarge": 4,
    "g6e.24xlarge": 2,
    "g6e.12xlarge": 1,
    "g5.48xlarge": 1,
}
ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")


def instance(name: str):
    from capacity import get_instance_type

    return get_instance_type(name)


@dataclass(frozen=True)
class FakeInstance:
    name: str
    efa_supported: bool
    network_cards: int
    max_efa_interfaces: int


@pytest.mark.parametrize(("name", "count"), sorted(KNOWN_LAYOUTS.items()))
def test_one_efa_interface_per_network_card(name: str, count: int) -> None:
    layout = plan_efa_interfaces(instance(name), "efa")
    assert len(layout) == count
    assert [i.network_card_index for i in layout] == list(range(count))
    assert layout[0] == EfaInterface(network_card_index=0, device_index=0, interface_type="efa")
    assert all(i.device_index == 1 and i.interface_type == "efa-only" for i in layout[1:])


def test_p5_layout_exactly() -> None:
    layout = plan_efa_interfaces(instance("p5.48xlarge"), "efa")
    expected = (EfaInterface(0, 0, "efa"), *(EfaInterface(card, 1, "efa-only") for card in range(1, 32)))
    assert layout == expected


def test_p5en_and_p4d_layouts_exactly() -> None:
    p5en = (EfaInterface(0, 0, "efa"), *(EfaInterface(card, 1, "efa-only") for card in range(1, 16)))
    assert plan_efa_interfaces(instance("p5en.48xlarge"), "efa") == p5en
    assert plan_efa_interfaces(instance("p4d.24xlarge"), "efa") == (
        EfaInterface(0, 0, "efa"),
        EfaInterface(1, 1, "efa-only"),
        EfaInterface(2, 1, "efa-only"),
        EfaInterface(3, 1, "efa-only"),
    )


def test_single_card_efa_type_gets_one_efa_interface() -> None:
    assert plan_efa_interfaces(instance("g6e.12xlarge"), "efa") == (EfaInterface(0, 0, "efa"),)


@pytest.mark.parametrize("name", ["g6e.xlarge", "g6e.2xlarge", "g5.xlarge", "g6.xlarge"])
def test_non_efa_type_gets_no_interfaces_over_tcp(name: str) -> None:
    assert plan_efa_interfaces(instance(name), "tcp") == ()


@pytest.mark.parametrize("interconnect", ["tcp", "infiniband"])
def test_efa_type_without_efa_interconnect_gets_no_interfaces(interconnect: str) -> None:
    assert plan_efa_interfaces(instance("p5.48xlarge"), interconnect) == ()


def test_efa_on_a_non_efa_type_is_rejected() -> None:
    with pytest.raises(EfaLayoutError, match=r"^g6e\.xlarge has no EFA; use interconnect tcp"):
        plan_efa_interfaces(instance("g6e.xlarge"), "efa")


def test_fewer_efa_interfaces_than_cards_is_rejected() -> None:
    fake = FakeInstance("p6-b300.48xlarge", True, 17, 16)
    with pytest.raises(EfaLayoutError, match="17 network cards but only 16 EFA interfaces"):
        plan_efa_interfaces(fake, "efa")


def test_zero_cards_is_rejected() -> None:
    with pytest.raises(EfaLayoutError, match="reports 0 network cards"):
        plan_efa_interfaces(FakeInstance("x.large", True, 0, 1), "efa")


def test_efa_pool_uses_exactly_its_zone() -> None:
    assert choose_subnet_azs("h100", "us-east-1b", True, ZONES) == ("us-east-1b",)


def test_efa_pool_without_zone_would_span_zones_and_is_rejected() -> None:
    with pytest.raises(
        EfaLayoutError, match=r"EFA pool 'h100' would span us-east-1a, us-east-1b, us-east-1c"
    ):
        choose_subnet_azs("h100", None, True, ZONES)


def test_efa_pool_in_a_single_zone_network_needs_no_zone() -> None:
    assert choose_subnet_azs("h100", None, True, ("us-east-1a",)) == ("us-east-1a",)


def test_non_efa_pool_uses_all_zones_or_its_own() -> None:
    assert choose_subnet_azs("l4", None, False, ZONES) == ZONES
    assert choose_subnet_azs("l4", "us-east-1c", False, ZONES) == ("us-east-1c",)


def test_zone_outside_the_network_is_rejected() -> None:
    with pytest.raises(EfaLayoutError, match=r"asks for availability zone us-east-1d, but the network has"):
        choose_subnet_azs("h100", "us-east-1d", True, ZONES)


def test_network_without_subnets_is_rejected() -> None:
    with pytest.raises(EfaLayoutError, match="the network has no private subnets"):
        choose_subnet_azs("h100", "us-east-1a", True, ())


def test_single_az_guard() -> None:
    assert_single_az("h100", ["us-east-1a", "us-east-1a"])
    with pytest.raises(
        EfaLayoutError, match=r"must use exactly one availability zone, got us-east-1a, us-east-1b"
    ):
        assert_single_az("h100", ["us-east-1b", "us-east-1a"])
    with pytest.raises(EfaLayoutError, match="got none"):
        assert_single_az("h100", [])


def test_hugepages_only_on_efa_nodes() -> None:
    assert hugepages_2mi(32) == 5128
    assert hugepages_2mi(1) == 5128
    assert hugepages_2mi(0) == 0
