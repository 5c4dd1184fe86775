"""Model store sizing: FSx for Lustre size and tier for a cold-start target, EFS and existing estimates.

Pins the chosen FSx size/tier and cost for a 405B + 8B fleet, pinned sizes and tiers (valid values,
too small, target missed), the unreachable-target error with the best achievable time, the EFS
per-client limit and the existing store.
"""

from __future__ import annotations

import pytest

from capacity import PlanError, ServingRequest, catalog_model_facts, plan_model, plan_storage
from capacity.storage import fsx_capacity_sizes, fsx_throughput_tiers


@pytest.fixture(scope="module")
def fleet():
    plans = [
        plan_model(
            ServingRequest.for_instance_type(
                catalog_model_facts(model_id), "p5.48xlarge", max_model_len=8192, target_concurrency=100
            )
        )
        for model_id in ("meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Llama-3.1-8B-Instruct")
    ]
    return [(plans[0], 2), (plans[1], 2)]


def test_fsx_sizes_and_tiers():
    sizes = list(fsx_capacity_sizes())
    assert sizes[:4] == [1200, 2400, 4800, 7200] and sizes[-1] == 100800
    assert fsx_throughput_tiers() == [125, 250, 500, 1000]


def test_cheapest_fsx_size_and_tier_meeting_the_target(fleet):
    storage = plan_storage(fleet)  # 600 s default target
    assert (storage.kind, storage.storage_capacity_gib, storage.throughput_per_tib_mbps) == (
        "fsx-lustre",
        7200,
        500,
    )
    assert storage.throughput_mbps == 3600.0
    assert storage.total_weight_bytes == 827_767_300_096  # 405B and 8B checkpoints, stored once each
    assert (round(storage.all_replicas_cold_start_seconds, 1), storage.meets_target) == (459.9, True)
    assert round(storage.replica_cold_start_seconds, 1) == 225.5
    assert round(storage.hourly_cost_usd, 4) == 3.3534  # 7200 GB x $0.34 / 730 h


def test_a_tighter_target_buys_more_throughput(fleet):
    storage = plan_storage(fleet, cold_start_target_seconds=120)
    assert (storage.storage_capacity_gib, storage.throughput_per_tib_mbps, storage.throughput_mbps) == (
        14400,
        1000,
        14400.0,
    )


def test_unreachable_target_gives_the_best_achievable_time(fleet):
    with pytest.raises(
        PlanError,
        match=r"^no FSx for Lustre PERSISTENT_2 size meets the 10 s cold start: 1656 GB read at once; the best is 16 s "
        r"at 100800 GiB x 1000 MB/s/TiB",
    ):
        plan_storage(fleet, cold_start_target_seconds=10)


def test_pinned_capacity_and_tier(fleet):
    assert plan_storage(fleet, storage_capacity_gib=4800).throughput_per_tib_mbps == 1000
    slow = plan_storage(fleet, storage_capacity_gib=4800, throughput_per_tib_mbps=125)
    assert (slow.throughput_mbps, slow.meets_target) == (600.0, False)
    assert "pinned size/tier cannot meet the target" in slow.reasons[1]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"storage_capacity_gib": 3000},
            r"storageCapacityGib 3000 is not an FSx for Lustre PERSISTENT_2 size; use 1200, 2400",
        ),
        (
            {"throughput_per_tib_mbps": 300},
            r"throughputPerTib 300 is not a PERSISTENT_2 tier; use 125, 250, 500 or 1000",
        ),
        ({"cold_start_target_seconds": 0}, r"coldStartTargetSeconds 0 must be positive"),
        ({"kind": "s3"}, r"modelStore kind 's3' is not supported; use fsx-lustre, efs or existing"),
    ],
)
def test_invalid_storage_settings_name_the_setting(fleet, settings, message):
    with pytest.raises(PlanError, match=message):
        plan_storage(fleet, **settings)


def test_pinned_capacity_smaller_than_the_weights_is_refused(fleet):
    with pytest.raises(
        PlanError, match=r"^storageCapacityGib 1200 is smaller than the 1323 GiB the model weights need"
    ):
        plan_storage([(fleet[0][0], 1)], storage_capacity_gib=1200, capacity_headroom=1.75)


def test_efs_is_limited_per_client_node(fleet):
    storage = plan_storage(fleet, kind="efs")
    assert (storage.storage_capacity_gib, storage.throughput_per_tib_mbps) == (None, None)
    assert round(storage.throughput_mbps, 1) == 7864.3  # 5 nodes x 1500 MiB/s, below 20 GiB/s
    assert round(storage.replica_cold_start_seconds, 1) == 258.0  # one 2-node replica of 405B
    assert storage.all_replicas_cold_start_seconds == storage.replica_cold_start_seconds
    assert round(storage.hourly_cost_usd, 4) == 0.3402


def test_existing_store_is_estimated_not_sized(fleet):
    storage = plan_storage(fleet, kind="existing", existing_throughput_mbps=2000)
    assert (storage.storage_capacity_gib, storage.hourly_cost_usd, storage.meets_target) == (
        None,
        None,
        False,
    )
    assert round(storage.all_replicas_cold_start_seconds, 1) == 827.8


def test_storage_dict_uses_camel_case(fleet):
    data = plan_storage(fleet).to_dict()
    assert {
        "kind",
        "storageCapacityGib",
        "throughputMbps",
        "allReplicasColdStartSeconds",
        "meetsTarget",
    } <= set(data)


def test_storage_needs_models():
    with pytest.raises(PlanError, match=r"plan_storage needs at least one model plan"):
        plan_storage([])
