"""components/model_store.py: ModelStore variants and the bad inputs it (or the planner) rejects.

Checks: an existing bucket (s3Uri) linked without creating one; EFS encrypted with elastic
throughput, a TLS-only policy and a mount target per subnet; an existing claim used as it is (no
volumes, no AWS resources, no system-pool selector off EKS); an NFS export on static volumes; and,
through `parse_settings` + `plan_stack`, a file system smaller than the models, a throughput tier
that does not exist, an unreachable cold-start target (with the best figure), an S3 URI that is not
one, plus missing network inputs rejected by the component. Each test records the program afresh.
"""

from __future__ import annotations

import json
import re

import pulumi_kubernetes as kubernetes
import pytest

from components.model_store import ModelStore, ModelStoreArgs
from components.model_store_plan import ModelStoreError
from offline.graph import RecordedResource
from offline.recorder import record_program
from planning import plan_stack
from settings import SettingsError, parse_settings
from tests.components.model_store.support import (
    ADDON,
    ASSOCIATION,
    BUCKET,
    COMPONENT,
    EFS,
    JOB,
    KEY,
    LUSTRE,
    PV,
    PVC,
    record,
    stack_inputs,
)
from tests.helpers import ROOT, raw_settings


def names(resources: list[RecordedResource]) -> list[str]:
    return sorted(r.name for r in resources)


# --------------------------------------------------------------------------- variants


def test_existing_bucket_is_linked_and_no_bucket_is_created() -> None:
    graph, _ = record("prod", store={"s3Uri": "s3://shared-weights/hub"})
    assert graph.by_type(BUCKET) == []
    assert graph.by_type("aws:kms/keyPolicy:KeyPolicy") == []
    assert graph.one(ASSOCIATION).inputs["dataRepositoryPath"] == "s3://shared-weights/hub/"
    outputs = graph.one(COMPONENT).outputs
    assert (outputs["bucketName"], outputs["s3Uri"]) == ("shared-weights", "s3://shared-weights/hub/")
    assert "kmsKeyArn" in outputs


def test_efs_is_encrypted_elastic_and_mounted_in_every_subnet() -> None:
    graph, plan = record("prod", store={"kind": "efs"})
    efs = graph.one(EFS)
    assert plan.storage.kind == "efs"
    assert efs.inputs["encrypted"] is True, efs.urn
    assert efs.inputs["throughputMode"] == "elastic", (
        f"{efs.urn}: bursting throughput collapses on cold starts"
    )
    assert efs.inputs["performanceMode"] == "generalPurpose", efs.urn
    assert efs.inputs["kmsKeyId"] == graph.one(KEY).outputs["arn"], efs.urn
    assert efs.protect, f"{efs.urn}: the file system must be protect=True"
    targets = graph.by_type("aws:efs/mountTarget:MountTarget")
    assert sorted(t.inputs["subnetId"] for t in targets) == ["subnet-0aaa", "subnet-0bbb", "subnet-0ccc"]
    assert all(t.inputs["securityGroups"] == ["sg-0store"] for t in targets)
    policy = json.loads(graph.one("aws:efs/fileSystemPolicy:FileSystemPolicy").inputs["policy"])
    assert policy["Statement"][1]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    assert graph.by_type(LUSTRE) == [] and graph.by_type(BUCKET) == []
    assert graph.one(ADDON).inputs["addonName"] == "aws-efs-csi-driver"
    accounts = names(graph.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation"))
    assert accounts == ["model-store-csi-efs-csi-controller-sa", "model-store-csi-efs-csi-node-sa"]
    serving = graph.named("model-store-serving-volume")
    assert serving.inputs["spec"]["csi"]["driver"] == "efs.csi.aws.com", serving.urn
    assert serving.inputs["spec"]["capacity"] == {
        "storage": f"{-(-plan.storage.total_weight_bytes // 2**30)}Gi"
    }
    outputs = graph.one(COMPONENT).outputs
    assert (outputs["fileSystemId"], outputs.get("bucketName"), outputs.get("s3Uri")) == (efs.id, None, None)


def test_existing_claim_is_used_as_it_is() -> None:
    graph, plan = record("onprem")
    assert plan.storage.kind == "existing"
    assert graph.by_type(PV) == [] and graph.by_type(PVC) == []
    assert [r for r in graph.resources if r.type.startswith("aws:")] == []
    outputs = graph.one(COMPONENT).outputs
    assert (outputs["servingClaimName"], outputs["syncClaimName"]) == ("models", "models")
    assert [outputs.get(k) for k in ("fileSystemId", "dnsName", "bucketName", "kmsKeyArn")] == [None] * 4
    (job,) = graph.by_type(JOB)
    assert "nodeSelector" not in job.inputs["spec"]["template"]["spec"], f"{job.urn}: no system pool off EKS"
    claim = job.inputs["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]
    assert claim == {"claimName": "models"}, job.urn


def test_nfs_export_gets_static_volumes() -> None:
    store = {"existingClaimName": None, "nfsServer": "10.8.0.5", "nfsPath": "/export/models"}
    raw = raw_settings("onprem")
    raw["modelStore"] = {k: v for k, v in {**raw["modelStore"], **store}.items() if v is not None}
    settings = parse_settings(raw)
    plan = plan_stack(settings, ROOT)

    def program() -> None:
        provider = kubernetes.Provider("cluster", kubeconfig="{}")
        ModelStore(
            "model-store",
            ModelStoreArgs(
                settings=settings.model_store, storage=plan.storage, namespace="vllm", provider=provider,
                models=plan.models,
            ),
        )  # fmt: skip

    graph = record_program(program, stack="onprem")
    serving, sync = graph.named("model-store-serving-volume"), graph.named("model-store-sync-volume")
    assert serving.inputs["spec"]["nfs"] == {"server": "10.8.0.5", "path": "/export/models", "readOnly": True}
    assert serving.inputs["spec"]["accessModes"] == ["ReadOnlyMany"], serving.urn
    assert sync.inputs["spec"]["nfs"]["readOnly"] is False, sync.urn
    assert "hard" in sync.inputs["spec"]["mountOptions"], sync.urn
    assert graph.named("model-store-serving-claim").inputs["spec"]["accessModes"] == ["ReadOnlyMany"]


# --------------------------------------------------------------------------- bad input


def test_fsx_without_subnet_and_security_group_is_rejected() -> None:
    with pytest.raises(ModelStoreError) as caught:
        record("prod", subnet_id=None, security_group_ids=[])
    assert caught.value.problems == [
        "security_group_ids: kind 'fsx-lustre' needs the model-store security group",
        "subnet_id: FSx for Lustre lives in one subnet; pass the GPU pool's subnet",
    ]


def test_file_system_smaller_than_the_models_is_rejected() -> None:
    raw = raw_settings("prod")
    raw["models"].append(
        {
            "name": "deepseek-v3",
            "modelId": "deepseek-ai/DeepSeek-V3",
            "revision": "86518964eaef84e3fdd98e9861759a1384f9c29d",
            "pool": "h100",
            "maxModelLen": 8192,
        }
    )
    raw["modelStore"]["storageCapacityGib"] = 1200
    with pytest.raises(
        SettingsError, match=r"vllm-serving:modelStore: storageCapacityGib 1200 is smaller than the \d+ GiB"
    ):
        plan_stack(parse_settings(raw), ROOT)


def test_throughput_tier_that_does_not_exist_is_rejected() -> None:
    with pytest.raises(
        SettingsError,
        match=re.escape("vllm-serving:modelStore: throughputPerTib 300 is not a PERSISTENT_2 tier"),
    ):
        stack_inputs("prod", throughputPerTib=300)


def test_unreachable_cold_start_target_is_rejected_with_the_best_figure() -> None:
    with pytest.raises(
        SettingsError,
        match=r"no FSx for Lustre PERSISTENT_2 size meets the 5 s cold start: .*; the best is \d+ s at \d+ GiB x 1000 MB/s/TiB",
    ):
        stack_inputs("prod", coldStartTargetSeconds=5)


def test_s3_uri_that_is_not_one_is_rejected() -> None:
    with pytest.raises(
        SettingsError,
        match=re.escape("vllm-serving:modelStore.s3Uri: must be an S3 URI such as s3://my-bucket/models"),
    ):
        stack_inputs("prod", s3Uri="https://my-bucket.s3.amazonaws.com/models")


def test_tuned_tier_and_size_reach_the_file_system() -> None:
    graph, plan = record("prod", store={"storageCapacityGib": 4800, "throughputPerTib": 500})
    fsx = graph.one(LUSTRE)
    assert (fsx.inputs["storageCapacity"], fsx.inputs["perUnitStorageThroughput"]) == (4800, 500), fsx.urn
    assert (plan.storage.storage_capacity_gib, plan.storage.throughput_per_tib_mbps) == (4800, 500)
