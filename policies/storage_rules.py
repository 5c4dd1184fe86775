"""Storage policy: model weights are encrypted at rest and reachable only from inside.

Owns `storage-encrypted`. Per resource: FSx for Lustre names its KMS key, EFS is encrypted, the
model-store security group (tag `vllm-serving/role: model-store`) admits no CIDR. At stack level
(it needs the graph): every S3 bucket has a server-side-encryption configuration and a public
access block with all four flags, and no ingress rule resource adds a CIDR to the model-store group.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    Severity,
    StackValidationArgs,
)

from .pack_config import MODEL_STORE_ROLE, ROLE_TAG, STORAGE_ENCRYPTED
from .props import is_true, known, of_type, refers_to, tag
from .security_groups import SECURITY_GROUP, SgRule, inline_rules, rule_resources_by_group
from .two_phase import TwoPhasePolicy

LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
EFS = "aws:efs/fileSystem:FileSystem"
BUCKETS = ("aws:s3/bucket:Bucket", "aws:s3/bucketV2:BucketV2")
SSE_CONFIGS = (
    "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    "aws:s3/bucketServerSideEncryptionConfigurationV2:BucketServerSideEncryptionConfigurationV2",
)
PUBLIC_ACCESS_BLOCK = "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock"
PUBLIC_ACCESS_FLAGS = ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets")


def _cidr_ingress(rule: SgRule) -> bool:
    return rule.direction == "ingress" and bool(rule.cidrs or rule.prefix_lists)


def storage_encrypted(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Lustre names a KMS key, EFS is encrypted, the model-store group admits only other groups."""
    props = args.props
    if args.resource_type == LUSTRE and not props.get("kmsKeyId"):
        deployment = props.get("deploymentType") or "SCRATCH_1"
        hint = (
            "; SCRATCH file systems cannot take one, use PERSISTENT_2"
            if str(deployment).startswith("SCRATCH")
            else ""
        )
        report(f"FSx for Lustre ({deployment}) has no kmsKeyId; name the KMS key explicitly{hint}.")
    elif args.resource_type == EFS and not is_true(props.get("encrypted")):
        report("EFS file system must set encrypted: true.")
    elif args.resource_type == SECURITY_GROUP and tag(props, ROLE_TAG) == MODEL_STORE_ROLE:
        for rule in inline_rules(props):
            if _cidr_ingress(rule):
                report(
                    f"{rule.where} admits {rule.describe_peers()}; the model filesystem admits only "
                    "other security groups (the nodes')."
                )


def _paired(resources: list[PolicyResource], bucket: PolicyResource) -> list[PolicyResource]:
    return [r for r in resources if refers_to(r, "bucket", bucket)]


def _bucket_name(bucket: PolicyResource) -> str:
    name = known(lambda: bucket.props.get("bucket"))
    return str(name) if name else bucket.name


def storage_encrypted_stack(args: StackValidationArgs, report: ReportViolation) -> None:
    """Buckets carry SSE + a full public access block; rule resources add no CIDR to the model store."""
    sse_configs = of_type(args.resources, *SSE_CONFIGS)
    blocks = of_type(args.resources, PUBLIC_ACCESS_BLOCK)
    for bucket in of_type(args.resources, *BUCKETS):
        name = _bucket_name(bucket)
        if not _paired(sse_configs, bucket):
            report(
                f"bucket '{name}' has no BucketServerSideEncryptionConfiguration; add one (aws:kms).",
                bucket.urn,
            )
        paired_blocks = _paired(blocks, bucket)
        if not paired_blocks:
            report(f"bucket '{name}' has no BucketPublicAccessBlock.", bucket.urn)
        for block in paired_blocks:
            off = [f for f in PUBLIC_ACCESS_FLAGS if not is_true(block.props.get(f))]
            if off:
                report(
                    f"public access block of bucket '{name}' does not set {', '.join(off)} to true.",
                    block.urn,
                )
    groups, _ = rule_resources_by_group(args.resources)
    for entry in groups:
        if tag(entry.group.props, ROLE_TAG) != MODEL_STORE_ROLE:
            continue
        for resource, rule in entry.rules:
            if _cidr_ingress(rule):
                report(
                    f"rule '{rule.where}' admits {rule.describe_peers()} into model-store security group "
                    f"'{entry.group.name}'; admit the nodes' security group instead.",
                    resource.urn,
                )


POLICIES = [
    TwoPhasePolicy(
        STORAGE_ENCRYPTED,
        "Model storage is encrypted at rest and private: FSx for Lustre with a KMS key, encrypted EFS, "
        "S3 buckets with SSE and a full public access block, a model-store security group without CIDRs.",
        validate_resource=storage_encrypted,
        validate_stack=storage_encrypted_stack,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Set kmsKeyId on the Lustre file system (PERSISTENT_2), encrypted: true on EFS; "
        "give each bucket a BucketServerSideEncryptionConfiguration and a BucketPublicAccessBlock with "
        "blockPublicAcls, blockPublicPolicy, ignorePublicAcls and restrictPublicBuckets true; admit the "
        f"node security group (not CIDRs) into the {ROLE_TAG}={MODEL_STORE_ROLE} group.",
    ),
]
