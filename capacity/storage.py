"""Model filesystem sizing: capacity and throughput so that a cold start meets its target, and its cost.

Owns ``StoragePlan`` and ``plan_storage``. A cold start is every replica of every model reading
its checkpoint at once at the filesystem's throughput (MB/s = 10^6 bytes per second). FSx for
Lustre PERSISTENT_2 is sized to the cheapest capacity step and per-TiB throughput tier that holds
the checkpoints with headroom and meets the target; EFS (Elastic throughput) and an existing store
are estimated, not sized. Facts (sizes, tiers, limits, us-east-1 prices) come from
``data/storage.json``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Literal

from capacity.errors import PlanError, one_of
from capacity.planner import ModelPlan

StorageKind = Literal["fsx-lustre", "efs", "existing"]
STORAGE_KINDS: tuple[StorageKind, ...] = ("fsx-lustre", "efs", "existing")
GIB = 2**30
MB = 10**6
DEFAULT_CAPACITY_HEADROOM = 1.25


@cache
def _facts() -> dict[str, Any]:
    return json.loads(
        resources.files("capacity").joinpath("data", "storage.json").read_text(encoding="utf-8")
    )


@dataclass(frozen=True)
class StoragePlan:
    """The shared model store and how long cold starts take on it."""

    kind: StorageKind
    storage_capacity_gib: int | None
    throughput_per_tib_mbps: int | None
    throughput_mbps: float
    total_weight_bytes: int
    replica_cold_start_seconds: float
    """One replica of the largest model reading its weights alone."""
    all_replicas_cold_start_seconds: float
    """Every replica of every model reading at once."""
    target_seconds: float
    meets_target: bool
    hourly_cost_usd: float | None
    reasons: tuple[str, ...]

    def to_dict(self) -> dict[str, object]:
        """JSON-able, camelCase keys (the ``storage`` part of the stack's ``capacityPlan``)."""
        return {
            "kind": self.kind,
            "storageCapacityGib": self.storage_capacity_gib,
            "throughputPerTibMbps": self.throughput_per_tib_mbps,
            "throughputMbps": round(self.throughput_mbps, 1),
            "totalWeightBytes": self.total_weight_bytes,
            "replicaColdStartSeconds": round(self.replica_cold_start_seconds, 1),
            "allReplicasColdStartSeconds": round(self.all_replicas_cold_start_seconds, 1),
            "targetSeconds": self.target_seconds,
            "meetsTarget": self.meets_target,
            "hourlyCostUsd": None if self.hourly_cost_usd is None else round(self.hourly_cost_usd, 4),
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class _Demand:
    total_bytes: int  # distinct checkpoints stored
    read_bytes: int  # bytes read when every replica starts at once
    largest_bytes: int
    largest_nodes: int  # nodes of one replica of the largest model
    nodes: int  # nodes of every replica


def _demand(models: Sequence[tuple[ModelPlan, int]]) -> _Demand:
    if not models:
        raise PlanError("plan_storage needs at least one model plan")
    stored: dict[str, int] = {}
    read = nodes = 0
    for plan, replicas in models:
        if replicas < 0:
            raise PlanError(f"replicas {replicas} of {plan.model_id} must be 0 or more")
        stored[plan.model_id.lower()] = plan.model_weight_bytes
        read += plan.model_weight_bytes * replicas
        nodes += plan.nodes_for(replicas) if replicas else 0
    largest = max((plan for plan, _ in models), key=lambda p: p.model_weight_bytes)
    return _Demand(sum(stored.values()), read, largest.model_weight_bytes, largest.nodes_per_replica, nodes)


def fsx_capacity_sizes() -> Iterator[int]:
    """Valid PERSISTENT_2 capacities in GiB, ascending: 1200, 2400, then steps of 2400 to the bound."""
    fsx = _facts()["fsx_lustre_persistent_2"]
    yield from fsx["capacity_gib_first_sizes"]
    size = fsx["capacity_gib_first_sizes"][-1] + fsx["capacity_gib_step"]
    while size <= fsx["capacity_gib_max"]:
        yield size
        size += fsx["capacity_gib_step"]


def fsx_throughput_tiers() -> list[int]:
    return list(_facts()["fsx_lustre_persistent_2"]["throughput_per_tib_mbps"])


def _fsx_option(capacity_gib: int, tier: int) -> tuple[float, float]:
    """(throughput MB/s, $/hour) of one FSx size and tier."""
    fsx = _facts()["fsx_lustre_persistent_2"]
    throughput = capacity_gib / fsx["gib_per_throughput_tib"] * tier
    cost = capacity_gib * fsx["price_per_gb_month_usd"][str(tier)] / _facts()["hours_per_month"]
    return throughput, cost


def _check_pins(capacity_gib: int | None, tier: int | None, needed_gib: int) -> None:
    sizes = list(fsx_capacity_sizes())
    if capacity_gib is not None and capacity_gib not in sizes:
        raise PlanError(
            f"storageCapacityGib {capacity_gib} is not an FSx for Lustre PERSISTENT_2 size; use 1200, 2400 "
            f"or a multiple of 2400 up to {sizes[-1]}"
        )
    if capacity_gib is not None and capacity_gib < needed_gib:
        raise PlanError(
            f"storageCapacityGib {capacity_gib} is smaller than the {needed_gib} GiB the model weights need "
            "(with headroom); use a larger size or leave it unset"
        )
    if tier is not None and tier not in fsx_throughput_tiers():
        raise PlanError(
            f"throughputPerTib {tier} is not a PERSISTENT_2 tier; use {one_of(fsx_throughput_tiers())} "
            "(MB/s per TiB)"
        )


def _seconds(data_bytes: int, throughput_mbps: float) -> float:
    return data_bytes / (throughput_mbps * MB) if throughput_mbps > 0 else math.inf


def plan_storage(
    models: Sequence[tuple[ModelPlan, int]],
    *,
    kind: StorageKind = "fsx-lustre",
    cold_start_target_seconds: float = 600.0,
    storage_capacity_gib: int | None = None,
    throughput_per_tib_mbps: int | None = None,
    existing_throughput_mbps: float = 1000.0,
    capacity_headroom: float = DEFAULT_CAPACITY_HEADROOM,
) -> StoragePlan:
    """Size the model store for ``models``: (plan, replicas starting at once) per served model."""
    if kind not in STORAGE_KINDS:
        raise PlanError(f"modelStore kind {kind!r} is not supported; use {one_of(list(STORAGE_KINDS))}")
    if cold_start_target_seconds <= 0:
        raise PlanError(f"coldStartTargetSeconds {cold_start_target_seconds} must be positive")
    if capacity_headroom < 1:
        raise PlanError(f"capacity headroom {capacity_headroom} must be at least 1")
    demand = _demand(models)
    if kind == "fsx-lustre":
        return _plan_fsx(
            demand,
            cold_start_target_seconds,
            storage_capacity_gib,
            throughput_per_tib_mbps,
            capacity_headroom,
        )
    if kind == "efs":
        return _plan_efs(demand, cold_start_target_seconds)
    if existing_throughput_mbps <= 0:
        raise PlanError(f"existingThroughputMbps {existing_throughput_mbps} must be positive")
    return _estimate(
        demand,
        "existing",
        None,
        None,
        existing_throughput_mbps,
        existing_throughput_mbps,
        cold_start_target_seconds,
        None,
        [f"existing store: {existing_throughput_mbps:g} MB/s assumed (existingThroughputMbps), not sized"],
    )


def _estimate(
    demand: _Demand,
    kind: StorageKind,
    capacity: int | None,
    tier: int | None,
    throughput: float,
    replica_throughput: float,
    target: float,
    cost: float | None,
    reasons: list[str],
) -> StoragePlan:
    replica_seconds = _seconds(demand.largest_bytes, replica_throughput)
    # Replicas share the store's throughput, and none finishes before its own per-client limit allows.
    all_seconds = max(_seconds(demand.read_bytes, throughput), replica_seconds)
    reasons.append(
        f"cold start: {demand.read_bytes / 1e9:.1f} GB read at {throughput:,.0f} MB/s = {all_seconds:.0f} s "
        f"(target {target:g} s)"
    )
    return StoragePlan(
        kind=kind,
        storage_capacity_gib=capacity,
        throughput_per_tib_mbps=tier,
        throughput_mbps=throughput,
        total_weight_bytes=demand.total_bytes,
        replica_cold_start_seconds=replica_seconds,
        all_replicas_cold_start_seconds=all_seconds,
        target_seconds=target,
        meets_target=all_seconds <= target,
        hourly_cost_usd=cost,
        reasons=tuple(reasons),
    )


def _plan_fsx(
    demand: _Demand, target: float, pinned_gib: int | None, pinned_tier: int | None, headroom: float
) -> StoragePlan:
    needed_gib = math.ceil(demand.total_bytes * headroom / GIB)
    _check_pins(pinned_gib, pinned_tier, needed_gib)
    sizes = [pinned_gib] if pinned_gib else [s for s in fsx_capacity_sizes() if s >= needed_gib]
    if not sizes:
        raise PlanError(
            f"the model weights need {needed_gib} GiB, more than the largest planned FSx for Lustre size "
            f"({list(fsx_capacity_sizes())[-1]} GiB); use kind existing or split the models"
        )
    tiers = [pinned_tier] if pinned_tier else fsx_throughput_tiers()
    options = []
    for size in sizes:
        for tier in tiers:
            throughput, cost = _fsx_option(size, tier)
            options.append((cost, size, tier, throughput))
    meeting = [o for o in options if _seconds(demand.read_bytes, o[3]) <= target]
    reasons = [
        f"checkpoints {demand.total_bytes / GIB:.1f} GiB x {headroom:g} headroom = {needed_gib} GiB needed"
    ]
    if meeting:
        cost, size, tier, throughput = min(meeting)
        reasons.append(
            f"cheapest PERSISTENT_2 size and tier meeting the cold-start target: {size} GiB x {tier} MB/s/TiB"
        )
    else:
        cost, size, tier, throughput = max(options, key=lambda o: (o[3], -o[0]))
        best = _seconds(demand.read_bytes, throughput)
        if pinned_gib is None and pinned_tier is None:
            raise PlanError(
                f"no FSx for Lustre PERSISTENT_2 size meets the {target:g} s cold start: "
                f"{demand.read_bytes / 1e9:.0f} GB read at once; the best is {best:.0f} s at {size} GiB x "
                f"{tier} MB/s/TiB; raise coldStartTargetSeconds or start fewer replicas at once"
            )
        reasons.append(
            f"pinned size/tier cannot meet the target; fastest pinned option {size} GiB x {tier} MB/s/TiB"
        )
    return _estimate(demand, "fsx-lustre", size, tier, throughput, throughput, target, cost, reasons)


def _plan_efs(demand: _Demand, target: float) -> StoragePlan:
    efs = _facts()["efs_elastic"]
    per_client = efs["per_client_read_mibps"] * 2**20 / MB
    ceiling = efs["read_gibps_max"] * GIB / MB
    throughput = min(ceiling, max(demand.nodes, 1) * per_client)
    replica = min(ceiling, demand.largest_nodes * per_client)
    cost = demand.total_bytes / 1e9 * efs["price_per_gb_month_usd"] / _facts()["hours_per_month"]
    reasons = [
        f"EFS Elastic throughput: min({efs['read_gibps_max']} GiBps per file system, {demand.nodes} node(s) "
        f"x {efs['per_client_read_mibps']} MiBps per client) = {throughput:,.0f} MB/s, not provisioned",
        f"each full cold start also pays ${demand.read_bytes / 1e9 * efs['read_price_per_gb_usd']:.2f} "
        "in Elastic reads",
    ]
    return _estimate(demand, "efs", None, None, throughput, replica, target, cost, reasons)
