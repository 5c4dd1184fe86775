"""components/model_store_plan.py: validation, S3 location, volumes and claims.

Checks: each invalid request rejected with a message naming its input (all problems reported
together), S3 URIs parsed or rejected, the linked location defaulting to the stack bucket's
`models/` prefix, the access modes of both volumes and claims (ReadWriteMany listed first on CSI
serving volumes, read-only mounts), CSI and NFS volume sources, static volume and claim specs,
mount options and nominal capacity.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from capacity.storage import fsx_capacity_sizes
from components import model_store_plan as plan
from components.model_store_plan import ModelStoreError, S3Location, StoreRequest

FSX = StoreRequest(
    kind="fsx-lustre",
    planned_kind="fsx-lustre",
    s3_uri=None,
    has_cluster_name=True,
    has_subnet_id=True,
    subnet_count=0,
    security_group_count=1,
    existing_claim_name=None,
    nfs_server=None,
    nfs_path=None,
    mount_path="/models",
    storage_capacity_gib=2400,
    throughput_per_tib_mbps=500,
)


def variant(**changes: object) -> StoreRequest:
    """FSX with changes; a changed kind is also the planned kind unless given."""
    if "kind" in changes:
        changes.setdefault("planned_kind", changes["kind"])
    return replace(FSX, **changes)  # type: ignore[arg-type]


def problems_of(request: StoreRequest) -> list[str]:
    with pytest.raises(ModelStoreError) as caught:
        plan.validate_request(request)
    return caught.value.problems


def test_valid_requests_pass() -> None:
    plan.validate_request(FSX)
    plan.validate_request(
        variant(
            kind="efs",
            has_subnet_id=False,
            subnet_count=3,
            storage_capacity_gib=None,
            throughput_per_tib_mbps=None,
        )
    )
    plan.validate_request(
        variant(kind="existing", has_cluster_name=False, security_group_count=0, existing_claim_name="models")
    )
    plan.validate_request(
        variant(kind="existing", has_cluster_name=False, nfs_server="10.0.0.5", nfs_path="/export/models")
    )


def test_fsx_without_network_and_cluster_lists_every_problem() -> None:
    problems = problems_of(
        variant(
            has_cluster_name=False,
            has_subnet_id=False,
            security_group_count=0,
            throughput_per_tib_mbps=None,
        )
    )
    assert problems == [
        "cluster_name: kind 'fsx-lustre' installs its CSI driver add-on; pass the EKS cluster",
        "security_group_ids: kind 'fsx-lustre' needs the model-store security group",
        "subnet_id: FSx for Lustre lives in one subnet; pass the GPU pool's subnet",
        "storage.throughput_per_tib_mbps: None is not a PERSISTENT_2 tier (125, 250, 500, 1000 MB/s/TiB)",
    ]


def test_efs_needs_mount_target_subnets() -> None:
    assert problems_of(variant(kind="efs", subnet_count=0)) == [
        "subnet_ids: EFS needs a mount target in every private subnet the nodes use"
    ]


def test_fsx_needs_a_persistent_2_size_and_tier() -> None:
    assert problems_of(variant(storage_capacity_gib=3000, throughput_per_tib_mbps=300)) == [
        "storage.storage_capacity_gib: 3000 is not an FSx PERSISTENT_2 size (1200, 2400, then steps of 2400 "
        f"up to {list(fsx_capacity_sizes())[-1]} GiB)",
        "storage.throughput_per_tib_mbps: 300 is not a PERSISTENT_2 tier (125, 250, 500, 1000 MB/s/TiB)",
    ]
    with pytest.raises(ModelStoreError, match=re.escape("storage.storage_capacity_gib: None is not an FSx")):
        plan.validate_request(variant(storage_capacity_gib=None))


def test_volume_capacity_is_the_fsx_size_or_the_weights() -> None:
    assert plan.volume_capacity_gib(4800, 10**12) == 4800
    assert plan.volume_capacity_gib(None, 65_500_000_000) == 62
    assert plan.volume_capacity_gib(None, 0) == 1


def test_plan_for_another_kind_rejected() -> None:
    assert problems_of(replace(FSX, planned_kind="efs")) == [
        "storage.kind: the plan was made for 'efs', the settings ask for 'fsx-lustre'"
    ]


def test_unknown_kind_rejected() -> None:
    with pytest.raises(ModelStoreError, match="kind: 'lustre' is not one of fsx-lustre, efs, existing"):
        plan.validate_request(variant(kind="lustre"))


def test_s3_uri_only_with_fsx_and_must_be_one() -> None:
    assert problems_of(variant(s3_uri="https://bucket/models")) == [
        "s3_uri: 'https://bucket/models' is not an S3 URI such as s3://my-bucket/models"
    ]
    assert problems_of(variant(kind="efs", subnet_count=2, s3_uri="s3://bucket/models")) == [
        "s3_uri: only FSx for Lustre links to S3; kind 'efs' cannot use it"
    ]


@pytest.mark.parametrize(
    ("claim", "server", "path", "message"),
    [
        (None, None, None, "kind existing needs exactly one of them"),
        ("models", "10.0.0.5", "/export", "kind existing needs exactly one of them"),
        (None, "10.0.0.5", None, "an NFS export needs both"),
    ],
)
def test_existing_needs_one_source(
    claim: str | None, server: str | None, path: str | None, message: str
) -> None:
    request = variant(
        kind="existing",
        existing_claim_name=claim,
        nfs_server=server,
        nfs_path=path,
        has_cluster_name=False,
    )
    with pytest.raises(ModelStoreError, match=message):
        plan.validate_request(request)


def test_relative_mount_path_rejected() -> None:
    with pytest.raises(ModelStoreError, match="mount_path: 'models' must be an absolute path"):
        plan.validate_request(variant(mount_path="models"))


@pytest.mark.parametrize(
    ("uri", "bucket", "prefix"),
    [
        ("s3://my-bucket", "my-bucket", ""),
        ("s3://my-bucket/", "my-bucket", ""),
        ("s3://my-bucket/models", "my-bucket", "models/"),
        ("s3://my-bucket/team/models/", "my-bucket", "team/models/"),
    ],
)
def test_parse_s3_uri(uri: str, bucket: str, prefix: str) -> None:
    location = plan.parse_s3_uri(uri)
    assert location == S3Location(bucket, prefix)
    assert location.uri == f"s3://{bucket}/{prefix}"


@pytest.mark.parametrize(
    "uri", ["https://my-bucket/models", "s3:/my-bucket", "s3://My-Bucket/x", "s3://a", "s3://a..b/x"]
)
def test_parse_s3_uri_rejects_non_s3(uri: str) -> None:
    with pytest.raises(ValueError, match="is not an S3 URI such as s3://my-bucket/models"):
        plan.parse_s3_uri(uri)


def test_linked_location_defaults_to_the_stack_bucket_models_prefix() -> None:
    assert plan.decide_s3_location(None, "stack-bucket").uri == "s3://stack-bucket/models/"
    assert (
        plan.decide_s3_location("s3://shared-weights/hub", "stack-bucket").uri == "s3://shared-weights/hub/"
    )


def test_csi_serving_volume_lists_read_write_many_first_and_mounts_read_only() -> None:
    serving, sync = plan.decide_claims("fsx-lustre")
    assert (serving.role, serving.volume_access_modes, serving.claim_access_modes, serving.read_only) == (
        "serving",
        ("ReadWriteMany", "ReadOnlyMany"),
        ("ReadOnlyMany",),
        True,
    )
    assert (sync.role, sync.volume_access_modes, sync.claim_access_modes, sync.read_only) == (
        "sync",
        ("ReadWriteMany",),
        ("ReadWriteMany",),
        False,
    )
    assert plan.decide_claims("efs") == plan.decide_claims("fsx-lustre")


def test_nfs_serving_volume_is_read_only_many() -> None:
    serving, sync = plan.decide_claims("existing")
    assert serving.volume_access_modes == ("ReadOnlyMany",)
    assert sync.volume_access_modes == ("ReadWriteMany",)


def test_csi_volume_sources() -> None:
    assert plan.csi_volume_source(
        "fsx-lustre", "fs-0123", True, dns_name="fs-0123.fsx.us-east-1.amazonaws.com", mount_name="abcdefgh"
    ) == {
        "driver": "fsx.csi.aws.com",
        "volumeHandle": "fs-0123",
        "readOnly": True,
        "volumeAttributes": {"dnsname": "fs-0123.fsx.us-east-1.amazonaws.com", "mountname": "abcdefgh"},
    }
    assert plan.csi_volume_source("efs", "fs-0456", False) == {
        "driver": "efs.csi.aws.com",
        "volumeHandle": "fs-0456",
        "readOnly": False,
        "volumeAttributes": {"encryptInTransit": "true"},
    }


def test_static_volume_is_prebound_retained_and_class_less() -> None:
    serving, _ = plan.decide_claims("fsx-lustre")
    assert plan.static_volume_spec(serving, "2400Gi", ["flock"], "vllm", "store-serving") == {
        "capacity": {"storage": "2400Gi"},
        "volumeMode": "Filesystem",
        "accessModes": ["ReadWriteMany", "ReadOnlyMany"],
        "persistentVolumeReclaimPolicy": "Retain",
        "storageClassName": "",
        "mountOptions": ["flock"],
        "claimRef": {"namespace": "vllm", "name": "store-serving"},
    }
    assert plan.claim_spec(serving, "2400Gi", "vllm-store-serving") == {
        "accessModes": ["ReadOnlyMany"],
        "storageClassName": "",
        "volumeName": "vllm-store-serving",
        "resources": {"requests": {"storage": "2400Gi"}},
    }
    assert plan.nfs_volume_source("10.0.0.5", "/export", True) == {
        "server": "10.0.0.5",
        "path": "/export",
        "readOnly": True,
    }


def test_mount_options() -> None:
    assert plan.mount_options("fsx-lustre") == ["flock"]
    assert plan.mount_options("efs") == []
    assert plan.mount_options("existing", is_nfs=True) == [
        "hard",
        "rsize=1048576",
        "wsize=1048576",
        "timeo=600",
        "retrans=2",
    ]
    assert plan.mount_options("existing") == []


def test_unknown_csi_kind_rejected() -> None:
    with pytest.raises(ModelStoreError, match="kind 'existing' uses no CSI driver"):
        plan.csi_driver_facts("existing")
