"""components/model_store.py: the recorded graph of ModelStore for the prod stack (FSx for Lustre).

Settings come from Pulumi.prod.yaml through `parse_settings` and the plan from `plan_stack`, so the
file system is checked against what the planner computed: a protected, KMS-encrypted PERSISTENT_2
file system with the planned capacity and per-TiB throughput, LZ4, in the given subnet and security
group; its root linked to the stack bucket's `models/` prefix with auto import/export; a protected,
versioned, SSE-KMS, TLS-only bucket with all public access blocked; a rotating, protected key whose
policy admits the file system's S3 link; the pinned CSI add-on with a describe-only Pod Identity
role; the serving (ReadOnlyMany, read-only mount) and sync (ReadWriteMany) claims on their own
pre-bound volumes; one sync Job per model with its pinned revision. Every Kubernetes object passes
the Kubernetes 1.33 schema, every child is parented to the component, outputs are complete, and the
graph is the same on every run. Each test records the program afresh.
"""

from __future__ import annotations

import json

import kubernetes_validate
import pytest

from components.storage_naming import bucket_name, sync_job_name
from offline.recorder import Graph
from planning import StackPlan
from tests.components.model_store.support import (
    ADDON,
    ASSOCIATION,
    BUCKET,
    COMPONENT,
    JOB,
    KEY,
    KUBERNETES_VERSION,
    LUSTRE,
    PV,
    PVC,
    as_manifest,
    record,
)


@pytest.fixture
def prod() -> tuple[Graph, StackPlan]:
    return record("prod")


# --------------------------------------------------------------------------- prod: FSx for Lustre


def test_prod_file_system_is_persistent_2_sized_by_the_planner(prod: tuple[Graph, StackPlan]) -> None:
    graph, plan = prod
    fsx = graph.one(LUSTRE)
    assert plan.storage.kind == "fsx-lustre"
    assert fsx.inputs["deploymentType"] == "PERSISTENT_2", fsx.urn
    assert fsx.inputs["storageCapacity"] == plan.storage.storage_capacity_gib == 2400, fsx.urn
    assert fsx.inputs["perUnitStorageThroughput"] == plan.storage.throughput_per_tib_mbps == 1000, fsx.urn
    assert fsx.inputs["dataCompressionType"] == "LZ4", fsx.urn
    assert fsx.inputs["storageType"] == "SSD", fsx.urn
    assert fsx.inputs["subnetIds"] == "subnet-0aaa", fsx.urn
    assert fsx.inputs["securityGroupIds"] == ["sg-0store"], fsx.urn
    assert fsx.inputs["kmsKeyId"] == graph.one(KEY).outputs["arn"], (
        f"{fsx.urn}: not encrypted with the store key"
    )
    assert fsx.protect, f"{fsx.urn}: the file system must be protect=True"


def test_prod_file_system_root_is_linked_to_the_stack_bucket(prod: tuple[Graph, StackPlan]) -> None:
    graph, _ = prod
    link = graph.one(ASSOCIATION)
    bucket = bucket_name("vllm-serving", "prod", "model-store")
    assert link.inputs["fileSystemId"] == graph.one(LUSTRE).id, link.urn
    assert link.inputs["fileSystemPath"] == "/", link.urn
    assert link.inputs["dataRepositoryPath"] == f"s3://{bucket}/models/", link.urn
    assert link.inputs["batchImportMetaDataOnCreate"] is True, link.urn
    assert link.inputs["deleteDataInFilesystem"] is False, link.urn
    events = ["NEW", "CHANGED", "DELETED"]
    assert link.inputs["s3"] == {
        "autoImportPolicy": {"events": events},
        "autoExportPolicy": {"events": events},
    }
    assert graph.one(BUCKET).urn in link.dependencies, f"{link.urn}: must wait for its bucket"


def test_prod_bucket_is_protected_private_versioned_encrypted_and_tls_only(
    prod: tuple[Graph, StackPlan],
) -> None:
    graph, _ = prod
    bucket = graph.one(BUCKET)
    assert bucket.inputs["bucket"] == bucket_name("vllm-serving", "prod", "model-store"), bucket.urn
    assert bucket.protect, f"{bucket.urn}: the bucket must be protect=True"
    assert bucket.inputs["forceDestroy"] is False, bucket.urn
    block = graph.one("aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock")
    for flag in ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"):
        assert block.inputs[flag] is True, f"{block.urn}: {flag} must be true"
    assert block.inputs["bucket"] == bucket.id, block.urn
    sse = graph.one("aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration")
    assert sse.inputs["rules"] == [
        {
            "applyServerSideEncryptionByDefault": {
                "sseAlgorithm": "aws:kms",
                "kmsMasterKeyId": graph.one(KEY).outputs["arn"],
            },
            "bucketKeyEnabled": True,
        }
    ], sse.urn
    versioning = graph.one("aws:s3/bucketVersioning:BucketVersioning")
    assert versioning.inputs["versioningConfiguration"] == {"status": "Enabled"}, versioning.urn
    ownership = graph.one("aws:s3/bucketOwnershipControls:BucketOwnershipControls")
    assert ownership.inputs["rule"] == {"objectOwnership": "BucketOwnerEnforced"}, ownership.urn
    policy = graph.one("aws:s3/bucketPolicy:BucketPolicy")
    (statement,) = json.loads(policy.inputs["policy"])["Statement"]
    assert (statement["Effect"], statement["Condition"]) == (
        "Deny",
        {"Bool": {"aws:SecureTransport": "false"}},
    )
    assert block.urn in policy.dependencies, f"{policy.urn}: apply after the public access block"


def test_prod_key_rotates_is_protected_and_admits_the_s3_link(prod: tuple[Graph, StackPlan]) -> None:
    graph, _ = prod
    key = graph.one(KEY)
    assert key.inputs["enableKeyRotation"] is True, key.urn
    assert key.inputs["deletionWindowInDays"] == 30, key.urn
    assert key.protect, f"{key.urn}: the key must be protect=True"
    key_policy = graph.one("aws:kms/keyPolicy:KeyPolicy")
    statements = json.loads(key_policy.inputs["policy"])["Statement"]
    fs_id = graph.one(LUSTRE).id
    assert statements[1]["Principal"]["AWS"].endswith(f"/AWSServiceRoleForFSxS3Access_{fs_id}"), (
        key_policy.urn
    )
    assert graph.one(ASSOCIATION).urn in key_policy.dependencies, (
        f"{key_policy.urn}: the role exists after the link"
    )


def test_prod_csi_driver_is_a_pinned_add_on_with_a_describe_only_role(prod: tuple[Graph, StackPlan]) -> None:
    graph, _ = prod
    addon = graph.one(ADDON)
    assert (addon.inputs["addonName"], addon.inputs["addonVersion"]) == (
        "aws-fsx-csi-driver",
        "v1.9.0-eksbuild.1",
    )
    assert addon.inputs["clusterName"] == "prod-gpu", addon.urn
    (association,) = graph.by_type("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == (
        "kube-system",
        "fsx-csi-controller-sa",
    )
    assert association.urn in addon.dependencies, f"{addon.urn}: credentials before the driver starts"
    policy = json.loads(graph.one("aws:iam/rolePolicy:RolePolicy").inputs["policy"])
    assert [s["Action"] for s in policy["Statement"]] == [["fsx:DescribeFileSystems"]]


def test_prod_claims_have_their_own_prebound_volumes(prod: tuple[Graph, StackPlan]) -> None:
    graph, _ = prod
    fsx = graph.one(LUSTRE)
    volumes = {r.name: r for r in graph.by_type(PV)}
    claims = {r.name: r for r in graph.by_type(PVC)}
    serving_pv, sync_pv = volumes["model-store-serving-volume"], volumes["model-store-sync-volume"]
    serving_pvc, sync_pvc = claims["model-store-serving-claim"], claims["model-store-sync-claim"]
    assert serving_pvc.inputs["spec"]["accessModes"] == ["ReadOnlyMany"], serving_pvc.urn
    assert sync_pvc.inputs["spec"]["accessModes"] == ["ReadWriteMany"], sync_pvc.urn
    assert serving_pv.inputs["spec"]["accessModes"] == ["ReadWriteMany", "ReadOnlyMany"], serving_pv.urn
    assert sync_pv.inputs["spec"]["accessModes"] == ["ReadWriteMany"], sync_pv.urn
    assert serving_pv.inputs["spec"]["csi"]["readOnly"] is True, f"{serving_pv.urn}: serving mounts read-only"
    assert sync_pv.inputs["spec"]["csi"]["readOnly"] is False, sync_pv.urn
    for pv, pvc in ((serving_pv, serving_pvc), (sync_pv, sync_pvc)):
        spec = pv.inputs["spec"]
        assert spec["csi"]["driver"] == "fsx.csi.aws.com", pv.urn
        assert spec["csi"]["volumeHandle"] == fsx.id, pv.urn
        assert spec["csi"]["volumeAttributes"] == {
            "dnsname": fsx.outputs["dnsName"],
            "mountname": fsx.outputs["mountName"],
        }, pv.urn
        assert spec["mountOptions"] == ["flock"], pv.urn
        assert spec["persistentVolumeReclaimPolicy"] == "Retain", pv.urn
        assert spec["storageClassName"] == "" and pvc.inputs["spec"]["storageClassName"] == "", pv.urn
        assert spec["capacity"] == {"storage": "2400Gi"}, pv.urn
        assert spec["claimRef"] == {"namespace": "vllm", "name": pvc.inputs["metadata"]["name"]}, pv.urn
        assert pvc.inputs["spec"]["volumeName"] == pv.inputs["metadata"]["name"], pvc.urn
        assert pvc.inputs["metadata"]["namespace"] == "vllm", pvc.urn


def test_prod_one_sync_job_per_model_with_its_pinned_revision(prod: tuple[Graph, StackPlan]) -> None:
    graph, plan = prod
    jobs = {j.inputs["metadata"]["name"]: j for j in graph.by_type(JOB)}
    expected = {
        sync_job_name(m.settings.name, m.settings.model_id, m.settings.revision): m.settings
        for m in plan.models
    }
    assert sorted(jobs) == sorted(expected) and len(jobs) == 2
    for job_name, model in expected.items():
        job = jobs[job_name]
        spec = job.inputs["spec"]["template"]["spec"]
        command = spec["containers"][0]["command"]
        assert command[command.index("--revision") + 1] == model.revision, job.urn
        assert command[command.index("--target") + 1] == f"/models/{model.name}/{model.revision}", job.urn
        assert spec["volumes"][0]["persistentVolumeClaim"] == {"claimName": "model-store-sync"}, job.urn


def test_prod_sync_waits_for_the_claim_the_link_and_the_driver(prod: tuple[Graph, StackPlan]) -> None:
    graph, _ = prod
    for job in graph.by_type(JOB):
        for needed in (graph.one(ASSOCIATION), graph.one(ADDON), graph.named("model-store-sync-claim")):
            assert needed.urn in job.dependencies, f"{job.urn}: must wait for {needed.urn}"


def test_prod_kubernetes_objects_pass_the_schema(prod: tuple[Graph, StackPlan]) -> None:
    graph, _ = prod
    objects = [r for r in graph.resources if r.type.startswith("kubernetes:") and r.custom]
    assert len(objects) == 9
    for resource in objects:
        manifest = as_manifest(resource.inputs)
        if resource.type == "kubernetes:core/v1:Secret":
            manifest["stringData"] = {"HF_TOKEN": "redacted"}
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)


def test_prod_children_are_parented_and_in_cluster_objects_use_the_provider(
    prod: tuple[Graph, StackPlan],
) -> None:
    graph, _ = prod
    component = graph.one(COMPONENT)
    provider = graph.one("pulumi:providers:kubernetes", "cluster")
    for child in graph.children(component):
        assert child.name.startswith("model-store-"), f"{child.urn}: child names derive from the component"
        if child.type.startswith("kubernetes:"):
            assert child.provider_urn == provider.urn, (
                f"{child.urn}: not created through the explicit provider"
            )


def test_prod_outputs(prod: tuple[Graph, StackPlan]) -> None:
    graph, plan = prod
    outputs = graph.one(COMPONENT).outputs
    fsx = graph.one(LUSTRE)
    bucket = bucket_name("vllm-serving", "prod", "model-store")
    assert outputs == {
        "kind": "fsx-lustre",
        "servingClaimName": "model-store-serving",
        "syncClaimName": "model-store-sync",
        "mountPath": "/models",
        "fileSystemId": fsx.id,
        "dnsName": fsx.outputs["dnsName"],
        "mountName": fsx.outputs["mountName"],
        "bucketName": bucket,
        "s3Uri": f"s3://{bucket}/models/",
        "kmsKeyArn": graph.one(KEY).outputs["arn"],
        "syncJobNames": {
            m.settings.name: sync_job_name(m.settings.name, m.settings.model_id, m.settings.revision)
            for m in plan.models
        },
        "readyMarkers": {
            m.settings.name: f"/models/{m.settings.name}/{m.settings.revision}/.ready" for m in plan.models
        },
    }


def test_same_settings_same_graph() -> None:
    first, _ = record("dev")
    second, _ = record("dev")
    assert [r.to_dict() for r in first.resources] == [r.to_dict() for r in second.resources]
