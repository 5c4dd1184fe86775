"""Decisions of the model store, made before any resource exists: pure functions over plain data.

Owns: reading `components/data/model_store.json`; validating a model store request (every problem
at once, each naming its input); where the weights sit in S3; which volumes and claims to create,
with which access modes, sources and capacity. Resource arguments and policy documents are in
components/model_store_specs.py. No Pulumi imports and no cloud calls.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from capacity.storage import fsx_capacity_sizes, fsx_throughput_tiers

DATA_FILE = Path(__file__).resolve().parent / "data" / "model_store.json"

StoreKind = Literal["fsx-lustre", "efs", "existing"]
STORE_KINDS: tuple[StoreKind, ...] = ("fsx-lustre", "efs", "existing")
ClaimRole = Literal["serving", "sync"]

_S3_URI = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:/(?P<prefix>[^\s]*))?$")
GIB = 2**30


class ModelStoreError(ValueError):
    """An invalid model store request; one line per problem, each naming the input to change."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


@functools.cache
def store_facts() -> dict[str, Any]:
    """The parsed data file (cached; treat as read-only)."""
    return json.loads(DATA_FILE.read_text())


def csi_driver_facts(kind: StoreKind) -> dict[str, Any]:
    """CSI driver facts (add-on name and version, driver, service accounts, IAM actions) of a kind."""
    drivers = store_facts()["csiDrivers"]
    if kind not in drivers:
        raise ModelStoreError(
            [f"kind {kind!r} uses no CSI driver; drivers exist for {', '.join(sorted(drivers))}"]
        )
    return drivers[kind]


# --------------------------------------------------------------------------- validation


@dataclass(frozen=True)
class StoreRequest:
    """What validation needs to know about a ModelStoreArgs (plain values, `None` when not given)."""

    kind: str
    planned_kind: str
    s3_uri: str | None
    has_cluster_name: bool
    has_subnet_id: bool
    subnet_count: int
    security_group_count: int
    existing_claim_name: str | None
    nfs_server: str | None
    nfs_path: str | None
    mount_path: str
    storage_capacity_gib: int | None
    throughput_per_tib_mbps: int | None


def store_request(
    settings: Any,
    storage: Any,
    *,
    has_cluster_name: bool,
    has_subnet_id: bool,
    subnet_count: int,
    security_group_count: int,
) -> StoreRequest:
    """The request of a ModelStore: ModelStoreSettings + StoragePlan + what the network passed."""
    return StoreRequest(
        kind=settings.kind,
        planned_kind=storage.kind,
        s3_uri=settings.s3_uri,
        has_cluster_name=has_cluster_name,
        has_subnet_id=has_subnet_id,
        subnet_count=subnet_count,
        security_group_count=security_group_count,
        existing_claim_name=settings.existing_claim_name,
        nfs_server=settings.nfs_server,
        nfs_path=settings.nfs_path,
        mount_path=settings.mount_path,
        storage_capacity_gib=storage.storage_capacity_gib,
        throughput_per_tib_mbps=storage.throughput_per_tib_mbps,
    )


def validate_request(request: StoreRequest) -> None:
    """Raise ModelStoreError listing every problem with the request (nothing when it is valid)."""
    problems: list[str] = []
    if request.kind not in STORE_KINDS:
        raise ModelStoreError([f"kind: {request.kind!r} is not one of {', '.join(STORE_KINDS)}"])
    if request.planned_kind != request.kind:
        problems.append(
            f"storage.kind: the plan was made for {request.planned_kind!r}, the settings ask for {request.kind!r}"
        )
    if not request.mount_path.startswith("/"):
        problems.append(f"mount_path: {request.mount_path!r} must be an absolute path such as /models")
    if request.s3_uri is not None:
        try:
            parse_s3_uri(request.s3_uri)
        except ValueError as err:
            problems.append(f"s3_uri: {err}")
        if request.kind != "fsx-lustre":
            problems.append(f"s3_uri: only FSx for Lustre links to S3; kind {request.kind!r} cannot use it")
    if request.kind in ("fsx-lustre", "efs"):
        if not request.has_cluster_name:
            problems.append(
                f"cluster_name: kind {request.kind!r} installs its CSI driver add-on; pass the EKS cluster"
            )
        if request.security_group_count == 0:
            problems.append(f"security_group_ids: kind {request.kind!r} needs the model-store security group")
    if request.kind == "fsx-lustre":
        if not request.has_subnet_id:
            problems.append("subnet_id: FSx for Lustre lives in one subnet; pass the GPU pool's subnet")
        problems += _fsx_size_problems(request.storage_capacity_gib, request.throughput_per_tib_mbps)
    if request.kind == "efs" and request.subnet_count == 0:
        problems.append("subnet_ids: EFS needs a mount target in every private subnet the nodes use")
    if request.kind == "existing":
        has_claim = request.existing_claim_name is not None
        has_nfs = request.nfs_server is not None or request.nfs_path is not None
        if has_claim == has_nfs:
            problems.append(
                "existing_claim_name / nfs_server + nfs_path: kind existing needs exactly one of them"
            )
        elif has_nfs and not (request.nfs_server and request.nfs_path):
            problems.append("nfs_server / nfs_path: an NFS export needs both")
    if problems:
        raise ModelStoreError(problems)


def _fsx_size_problems(capacity_gib: int | None, tier: int | None) -> list[str]:
    """The planner only emits valid PERSISTENT_2 sizes and tiers; a hand-made plan is checked here."""
    problems = []
    sizes = list(fsx_capacity_sizes())
    if capacity_gib not in sizes:
        problems.append(
            f"storage.storage_capacity_gib: {capacity_gib} is not an FSx PERSISTENT_2 size "
            f"(1200, 2400, then steps of 2400 up to {sizes[-1]} GiB)"
        )
    tiers = fsx_throughput_tiers()
    if tier not in tiers:
        problems.append(
            f"storage.throughput_per_tib_mbps: {tier} is not a PERSISTENT_2 tier ({', '.join(map(str, tiers))} MB/s/TiB)"
        )
    return problems


# --------------------------------------------------------------------------- S3


@dataclass(frozen=True)
class S3Location:
    """A bucket and a key prefix ("" or ending in '/')."""

    bucket: str
    prefix: str

    @property
    def uri(self) -> str:
        """`s3://bucket/prefix/`, the form FSx data repository associations take."""
        return f"s3://{self.bucket}/{self.prefix}"

    def bucket_arn(self, partition: str = "aws") -> str:
        return f"arn:{partition}:s3:::{self.bucket}"


def parse_s3_uri(uri: str) -> S3Location:
    """`s3://bucket/a/b` -> S3Location("bucket", "a/b/"); raises ValueError for anything else."""
    match = _S3_URI.match(uri)
    if not match or ".." in match["bucket"]:
        raise ValueError(f"{uri!r} is not an S3 URI such as s3://my-bucket/models")
    prefix = (match["prefix"] or "").strip("/")
    return S3Location(bucket=match["bucket"], prefix=f"{prefix}/" if prefix else "")


def decide_s3_location(s3_uri: str | None, stack_bucket: str) -> S3Location:
    """The linked S3 location: the user's URI, or the stack bucket's `models/` prefix."""
    if s3_uri is not None:
        return parse_s3_uri(s3_uri)
    return S3Location(bucket=stack_bucket, prefix=f"{store_facts()['bucket']['prefix']}/")


# --------------------------------------------------------------------------- volumes and claims


@dataclass(frozen=True)
class ClaimPlan:
    """One static PersistentVolume and the claim bound to it."""

    role: ClaimRole
    volume_access_modes: tuple[str, ...]
    claim_access_modes: tuple[str, ...]
    read_only: bool


def decide_claims(kind: StoreKind) -> tuple[ClaimPlan, ...]:
    """The read-only serving claim and the writable sync claim (none for an existing claim).

    A PersistentVolume binds to one claim, so each claim gets its own volume over the same file
    system. Serving pods get ReadOnlyMany. The kubelet hands a CSI driver the *first* access mode
    of the volume (pkg/volume/csi/csi_mounter.go), and the FSx and EFS node plugins accept only
    single-node-writer and multi-node-multi-writer, so a CSI serving volume lists ReadWriteMany
    first, ReadOnlyMany second, and is made read-only by `csi.readOnly` (the mount gets `ro`).
    """
    if kind == "existing":
        serving_volume_modes: tuple[str, ...] = ("ReadOnlyMany",)
    else:
        serving_volume_modes = ("ReadWriteMany", "ReadOnlyMany")
    return (
        ClaimPlan("serving", serving_volume_modes, ("ReadOnlyMany",), read_only=True),
        ClaimPlan("sync", ("ReadWriteMany",), ("ReadWriteMany",), read_only=False),
    )


def csi_volume_source(
    kind: StoreKind,
    file_system_id: str,
    read_only: bool,
    dns_name: str | None = None,
    mount_name: str | None = None,
) -> dict[str, Any]:
    """The `spec.csi` block of a static PersistentVolume over an FSx or EFS file system."""
    facts = csi_driver_facts(kind)
    source: dict[str, Any] = {
        "driver": facts["driver"],
        "volumeHandle": file_system_id,
        "readOnly": read_only,
    }
    if kind == "fsx-lustre":
        source["volumeAttributes"] = {"dnsname": dns_name, "mountname": mount_name}
    else:
        source["volumeAttributes"] = dict(facts["volumeAttributes"])
    return source


def static_volume_spec(
    plan: ClaimPlan, capacity: str, mount_options: list[str], namespace: Any, claim: str
) -> dict[str, Any]:
    """A static PersistentVolume spec (without its source) pre-bound to `namespace/claim`.

    storageClassName "" keeps dynamic provisioners away; Retain keeps the file system's data when
    the volume object goes; claimRef reserves the volume for its one claim.
    """
    return {
        "capacity": {"storage": capacity},
        "volumeMode": "Filesystem",
        "accessModes": list(plan.volume_access_modes),
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "mountOptions": mount_options,
        "claimRef": {"namespace": namespace, "name": claim},
    }


def claim_spec(plan: ClaimPlan, capacity: str, volume: Any) -> dict[str, Any]:
    """The claim bound by name to its static volume."""
    return {
        "accessModes": list(plan.claim_access_modes),
        "storageClassName": "",
        "volumeName": volume,
        "resources": {"requests": {"storage": capacity}},
    }


def nfs_volume_source(server: str | None, path: str | None, read_only: bool) -> dict[str, Any]:
    """The `spec.nfs` block of a static PersistentVolume over an existing export."""
    return {"server": server, "path": path, "readOnly": read_only}


def mount_options(kind: StoreKind, is_nfs: bool = False) -> list[str]:
    """Mount options of the store's volumes."""
    if kind == "existing":
        return list(store_facts()["nfs"]["mountOptions"]) if is_nfs else []
    return list(csi_driver_facts(kind)["mountOptions"])


def volume_capacity_gib(storage_capacity_gib: int | None, total_weight_bytes: int) -> int:
    """Nominal capacity of the volumes and claims: the FSx size, else the weights rounded up to GiB.

    Kubernetes never enforces it on FSx, EFS or NFS; it only has to match between volume and claim.
    """
    if storage_capacity_gib:
        return storage_capacity_gib
    return max(1, math.ceil(total_weight_bytes / GIB))


def quantity_gib(gib: int) -> str:
    """A Kubernetes quantity in GiB (`1200Gi`)."""
    return f"{gib}Gi"
