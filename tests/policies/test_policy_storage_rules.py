"""`storage-encrypted` called directly: FSx for Lustre KMS key (PERSISTENT and SCRATCH), EFS
encryption, the model-store group's inline and separate CIDR ingress, and the S3 bucket pairing
with server-side encryption and a full public access block (by dependency or by id)."""

from __future__ import annotations

from policies.pack_config import MODEL_STORE_ROLE, ROLE_TAG
from policies.security_groups import SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_INGRESS_RULE
from policies.storage_rules import (
    BUCKETS,
    EFS,
    LUSTRE,
    PUBLIC_ACCESS_BLOCK,
    SSE_CONFIGS,
    storage_encrypted,
    storage_encrypted_stack,
)
from tests.policies.policy_fakes import check, check_stack, policy_resource

STORE_TAGS = {"tags": {ROLE_TAG: MODEL_STORE_ROLE}}
ALL_BLOCKED = dict.fromkeys(
    ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"), True
)


def test_persistent_lustre_with_kms_key_passes() -> None:
    props = {"deploymentType": "PERSISTENT_2", "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k"}
    assert check(storage_encrypted, LUSTRE, props) == []


def test_lustre_without_kms_key() -> None:
    assert check(storage_encrypted, LUSTRE, {"deploymentType": "PERSISTENT_2"}) == [
        "FSx for Lustre (PERSISTENT_2) has no kmsKeyId; name the KMS key explicitly."
    ]
    assert check(storage_encrypted, LUSTRE, {}) == [
        "FSx for Lustre (SCRATCH_1) has no kmsKeyId; name the KMS key explicitly; SCRATCH file systems "
        "cannot take one, use PERSISTENT_2."
    ]


def test_efs_must_be_encrypted() -> None:
    assert check(storage_encrypted, EFS, {"encrypted": True}) == []
    assert check(storage_encrypted, EFS, {"performanceMode": "maxIO"}) == [
        "EFS file system must set encrypted: true."
    ]


def test_model_store_group_admits_groups_not_cidrs() -> None:
    from_nodes = {"protocol": "tcp", "fromPort": 988, "toPort": 988, "securityGroups": ["sg-nodes"]}
    from_vpc = {"protocol": "tcp", "fromPort": 988, "toPort": 988, "cidrBlocks": ["10.0.0.0/16"]}
    egress_vpc = {"protocol": "tcp", "fromPort": 988, "toPort": 988, "cidrBlocks": ["10.0.0.0/16"]}
    assert (
        check(
            storage_encrypted, SECURITY_GROUP, {**STORE_TAGS, "ingress": [from_nodes], "egress": [egress_vpc]}
        )
        == []
    )
    assert check(storage_encrypted, SECURITY_GROUP, {**STORE_TAGS, "ingress": [from_nodes, from_vpc]}) == [
        "ingress[1] admits CIDR 10.0.0.0/16; the model filesystem admits only other security groups (the nodes')."
    ]
    assert check(storage_encrypted, SECURITY_GROUP, {"ingress": [from_vpc]}) == []


def test_model_store_rule_resources_with_cidrs() -> None:
    store = policy_resource(SECURITY_GROUP, "store", {**STORE_TAGS, "id": "sg-store"})
    nodes = policy_resource(SECURITY_GROUP, "nodes", {"id": "sg-nodes"})
    ok = policy_resource(
        VPC_INGRESS_RULE,
        "store-in-nodes",
        {"securityGroupId": "sg-store", "referencedSecurityGroupId": "sg-nodes"},
    )
    bad = policy_resource(
        SECURITY_GROUP_RULE,
        "store-in-vpc",
        {"type": "ingress", "cidrBlocks": ["10.0.0.0/16"]},
        deps={"securityGroupId": [store]},
    )
    assert check_stack(storage_encrypted_stack, [store, nodes, ok, bad]) == [
        (
            "rule 'store-in-vpc' admits CIDR 10.0.0.0/16 into model-store security group 'store'; admit the "
            "nodes' security group instead.",
            bad.urn,
        )
    ]


def test_bucket_with_encryption_and_full_block_passes() -> None:
    bucket = policy_resource(BUCKETS[0], "weights", {"id": "weights-bucket", "bucket": "weights-bucket"})
    sse = policy_resource(SSE_CONFIGS[0], "weights-sse", {"bucket": "weights-bucket"})
    block = policy_resource(PUBLIC_ACCESS_BLOCK, "weights-pab", ALL_BLOCKED, deps={"bucket": [bucket]})
    assert check_stack(storage_encrypted_stack, [bucket, sse, block]) == []


def test_bucket_without_encryption_or_block() -> None:
    bucket = policy_resource(BUCKETS[1], "weights", {"id": "b-1"})
    other = policy_resource(BUCKETS[0], "logs", {"id": "b-2", "bucket": "logs-bucket"})
    sse = policy_resource(SSE_CONFIGS[1], "logs-sse", {"bucket": "b-2"})
    partial = policy_resource(
        PUBLIC_ACCESS_BLOCK,
        "logs-pab",
        {**ALL_BLOCKED, "ignorePublicAcls": False, "restrictPublicBuckets": None},
        deps={"bucket": [other]},
    )
    assert check_stack(storage_encrypted_stack, [bucket, other, sse, partial]) == [
        ("bucket 'weights' has no BucketServerSideEncryptionConfiguration; add one (aws:kms).", bucket.urn),
        ("bucket 'weights' has no BucketPublicAccessBlock.", bucket.urn),
        (
            "public access block of bucket 'logs-bucket' does not set ignorePublicAcls, restrictPublicBuckets to true.",
            partial.urn,
        ),
    ]
