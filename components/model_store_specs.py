"""Arguments of the model store's AWS resources and its policy documents, as plain data.

Owns what each AWS child of components/model_store.py is created with (KMS key, bucket public
access block, encryption and lifecycle, FSx for Lustre file system and its S3 link, EFS, the CSI
driver add-on) and the IAM, KMS, S3 and EFS policy documents. Values come from
`components/data/model_store.json`; the component adds only the Pulumi Outputs (ids, ARNs) and
options. Pure functions: `None`/strings in, dicts out; no Pulumi imports, no cloud calls.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from components.model_store_plan import StoreKind, csi_driver_facts, store_facts

_ARN = re.compile(r"^arn:(?P<partition>[^:]+):[^:]+:(?P<region>[^:]*):(?P<account>\d{12}):.+$")

BUCKET_PUBLIC_ACCESS_BLOCK: dict[str, bool] = {
    "block_public_acls": True,
    "block_public_policy": True,
    "ignore_public_acls": True,
    "restrict_public_buckets": True,
}
"""All four S3 Block Public Access settings on."""


# --------------------------------------------------------------------------- resource arguments


def key_args(stack: str, name: str, kind: str) -> dict[str, Any]:
    """The store's customer managed key: yearly rotation, the longest deletion window."""
    return {
        "description": f"vllm-serving {stack}/{name}: model weights at rest ({kind}, linked bucket)",
        "enable_key_rotation": True,
        "deletion_window_in_days": store_facts()["kms"]["deletionWindowInDays"],
    }


def bucket_configuration(key_arn: Any) -> dict[str, dict[str, Any]]:
    """Inputs of each bucket configuration resource, by role: ACLs off (owner enforced), all public
    access blocked, versioning, SSE-KMS with the store key, lifecycle."""
    return {
        "ownership": {"rule": {"object_ownership": "BucketOwnerEnforced"}},
        "public-access": dict(BUCKET_PUBLIC_ACCESS_BLOCK),
        "versioning": {"versioning_configuration": {"status": "Enabled"}},
        "encryption": {"rules": bucket_encryption_rules(key_arn)},
        "lifecycle": {"rules": bucket_lifecycle_rules()},
    }


def bucket_encryption_rules(key_arn: Any) -> list[dict[str, Any]]:
    """SSE-KMS with the store key; S3 Bucket Keys cut KMS requests for multi-GB objects."""
    return [
        {
            "apply_server_side_encryption_by_default": {
                "sse_algorithm": "aws:kms",
                "kms_master_key_id": key_arn,
            },
            "bucket_key_enabled": True,
        }
    ]


def bucket_lifecycle_rules() -> list[dict[str, Any]]:
    """Expire weight versions the FSx export replaced, and abandoned multipart uploads."""
    facts = store_facts()["bucket"]
    return [
        {
            "id": "expire-noncurrent-weights",
            "status": "Enabled",
            "filter": {},
            "noncurrent_version_expiration": {"noncurrent_days": facts["noncurrentVersionExpirationDays"]},
            "abort_incomplete_multipart_upload": {
                "days_after_initiation": facts["abortIncompleteMultipartUploadDays"]
            },
        }
    ]


def lustre_args(storage_capacity_gib: int, throughput_per_tib_mbps: int) -> dict[str, Any]:
    """FSx for Lustre PERSISTENT_2 SSD with the planned size and tier, LZ4, no backups (the linked
    bucket holds every file), WARN_ERROR logs (import/export failures) and a fixed maintenance window."""
    facts = store_facts()["fsxLustre"]
    return {
        "deployment_type": facts["deploymentType"],
        "storage_type": facts["storageType"],
        "file_system_type_version": facts["fileSystemTypeVersion"],
        "storage_capacity": storage_capacity_gib,
        "per_unit_storage_throughput": throughput_per_tib_mbps,
        "data_compression_type": facts["dataCompressionType"],
        "automatic_backup_retention_days": facts["automaticBackupRetentionDays"],
        "weekly_maintenance_start_time": facts["weeklyMaintenanceStartTime"],
        "log_configuration": {"level": facts["logLevel"]},
    }


def association_args(data_repository_uri: str) -> dict[str, Any]:
    """The file system root linked to the S3 prefix: objects already there appear at creation,
    later S3 changes are imported and files written on FSx (the sync Jobs') are exported."""
    facts = store_facts()["fsxLustre"]
    return {
        "file_system_path": facts["fileSystemPath"],
        "data_repository_path": data_repository_uri,
        "batch_import_meta_data_on_create": True,
        "imported_file_chunk_size": facts["importedFileChunkSizeMib"],
        "delete_data_in_filesystem": False,
        "s3": {
            "auto_import_policy": {"events": list(facts["autoImportEvents"])},
            "auto_export_policy": {"events": list(facts["autoExportEvents"])},
        },
    }


def efs_args(creation_token: str) -> dict[str, Any]:
    """Encrypted EFS with elastic throughput (never bursting) and general purpose performance."""
    facts = store_facts()["efs"]
    return {
        "creation_token": creation_token,
        "encrypted": True,
        "performance_mode": facts["performanceMode"],
        "throughput_mode": facts["throughputMode"],
    }


def addon_args(kind: StoreKind) -> dict[str, Any]:
    """The pinned CSI driver add-on; this stack owns its configuration (conflicts overwrite)."""
    facts = csi_driver_facts(kind)
    return {
        "addon_name": facts["addonName"],
        "addon_version": facts["addonVersion"],
        "resolve_conflicts_on_create": "OVERWRITE",
        "resolve_conflicts_on_update": "OVERWRITE",
    }


# --------------------------------------------------------------------------- policy documents


@dataclass(frozen=True)
class ArnParts:
    partition: str
    region: str
    account: str


def arn_parts(arn: str) -> ArnParts:
    """Partition, region and account of an ARN (the stack's own key ARN: no account lookup needed)."""
    match = _ARN.match(arn)
    if not match:
        raise ValueError(f"{arn!r} is not an ARN with a region and a 12-digit account")
    return ArnParts(partition=match["partition"], region=match["region"], account=match["account"])


def csi_driver_policy(kind: StoreKind) -> dict[str, Any]:
    """Least privilege for a statically provisioned driver: read-only describe calls, nothing else."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DescribeOnlyStaticProvisioning",
                "Effect": "Allow",
                "Action": sorted(csi_driver_facts(kind)["actions"]),
                "Resource": "*",
            }
        ],
    }


def bucket_tls_policy(bucket_arn: str) -> dict[str, Any]:
    """Deny every request to the bucket that does not use TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "s3:*",
                "Resource": [bucket_arn, f"{bucket_arn}/*"],
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            }
        ],
    }


def efs_tls_policy(file_system_arn: str) -> dict[str, Any]:
    """Mount through a mount target only, and only over TLS (the policy the EFS console writes)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "MountThroughMountTargets",
                "Effect": "Allow",
                "Principal": {"AWS": "*"},
                "Action": [
                    "elasticfilesystem:ClientMount",
                    "elasticfilesystem:ClientWrite",
                    "elasticfilesystem:ClientRootAccess",
                ],
                "Resource": file_system_arn,
                "Condition": {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}},
            },
            {
                "Sid": "DenyInsecureTransport",
                "Effect": "Deny",
                "Principal": {"AWS": "*"},
                "Action": "*",
                "Resource": file_system_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def key_policy(key_arn: str, file_system_id: str | None = None, bucket: str | None = None) -> dict[str, Any]:
    """The model store key's policy: IAM governs the account, and (with an S3-linked FSx over a
    bucket this key encrypts) the file system's service-linked role may use the key through S3 on
    that bucket only. Account, region and partition come from the key's own ARN.
    """
    parts = arn_parts(key_arn)
    statements: list[dict[str, Any]] = [
        {
            "Sid": "EnableIamPolicies",
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:{parts.partition}:iam::{parts.account}:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ]
    if file_system_id is not None and bucket is not None:
        bucket_arn = f"arn:{parts.partition}:s3:::{bucket}"
        role = store_facts()["fsxLustre"]["slrPrincipalPath"] + file_system_id
        statements.append(
            {
                "Sid": "FsxDataRepositoryThroughS3",
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{parts.partition}:iam::{parts.account}:{role}"},
                "Action": [
                    "kms:Decrypt",
                    "kms:DescribeKey",
                    "kms:Encrypt",
                    "kms:GenerateDataKey*",
                    "kms:ReEncrypt*",
                ],
                "Resource": "*",
                "Condition": {
                    "StringEquals": {
                        "kms:CallerAccount": parts.account,
                        "kms:ViaService": f"s3.{parts.region}.amazonaws.com",
                    },
                    "StringLike": {"kms:EncryptionContext:aws:s3:arn": [bucket_arn, f"{bucket_arn}/*"]},
                },
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}
