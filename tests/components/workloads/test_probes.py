"""probes: the start-up budget and the probes of serving pods.

Checks the budget arithmetic (cold start + init margin, + Ray join for Ray leaders), the failure
threshold it gives at 10 s per probe, the exact probe shapes, and that negative times are rejected.
"""

from __future__ import annotations

import pytest

from components import probes


def test_single_node_budget_is_cold_start_plus_five_minutes() -> None:
    assert probes.startup_budget_seconds(cold_start_seconds=120.2, multi_node=False) == 121 + 300


def test_multi_node_ray_budget_adds_the_join_wait() -> None:
    budget = probes.startup_budget_seconds(cold_start_seconds=400, multi_node=True, ray_join_seconds=600)
    assert budget == 400 + probes.MULTI_NODE_INIT_MARGIN_SECONDS + 600


@pytest.mark.parametrize(
    ("budget", "threshold"), [(0, 1), (1, 1), (10, 1), (11, 2), (1600, 160), (1605, 161)]
)
def test_failure_threshold_covers_the_whole_budget(budget: int, threshold: int) -> None:
    assert probes.startup_failure_threshold(budget) == threshold
    assert threshold * probes.STARTUP_PERIOD_SECONDS >= budget


def test_negative_times_are_rejected() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        probes.startup_budget_seconds(cold_start_seconds=-1, multi_node=False)


def test_startup_probe_polls_health_every_ten_seconds_for_the_budget() -> None:
    assert probes.startup_probe(1600) == {
        "httpGet": {"path": "/health", "port": "http", "scheme": "HTTP"},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 160,
    }


def test_liveness_is_lenient_and_readiness_quick() -> None:
    liveness, readiness = probes.liveness_probe(), probes.readiness_probe()
    assert liveness["periodSeconds"] * liveness["failureThreshold"] == 150
    assert liveness["timeoutSeconds"] == 10
    assert readiness["periodSeconds"] * readiness["failureThreshold"] == 30


def test_pre_stop_sleeps_for_the_drain() -> None:
    assert probes.pre_stop_drain() == {"exec": {"command": ["sleep", "15"]}}
