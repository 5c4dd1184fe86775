"""components/model_store_specs.py: AWS resource arguments and policy documents of the model store.

Checks, exactly: the FSx PERSISTENT_2 arguments (planned size and tier, LZ4, SSD, Lustre 2.15, no
backups), the S3 link of the file system root with auto import/export and no data deletion, the
bucket configuration (owner-enforced, all public access blocked, versioned, SSE-KMS with bucket
keys, lifecycle), elastic encrypted EFS, the pinned add-ons, the rotating key; and the policy
documents: describe-only CSI driver role, Pod Identity trust, TLS-only bucket and EFS, and the key
policy admitting the FSx service-linked role through S3 on its bucket only.
"""

from __future__ import annotations

import pytest

from components import model_store_specs as specs

KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_lustre_arguments() -> None:
    assert specs.lustre_args(2400, 1000) == {
        "deployment_type": "PERSISTENT_2",
        "storage_type": "SSD",
        "file_system_type_version": "2.15",
        "storage_capacity": 2400,
        "per_unit_storage_throughput": 1000,
        "data_compression_type": "LZ4",
        "automatic_backup_retention_days": 0,
        "weekly_maintenance_start_time": "7:05:00",
        "log_configuration": {"level": "WARN_ERROR"},
    }


def test_association_links_the_root_both_ways_without_deleting_data() -> None:
    events = ["NEW", "CHANGED", "DELETED"]
    assert specs.association_args("s3://b/models/") == {
        "file_system_path": "/",
        "data_repository_path": "s3://b/models/",
        "batch_import_meta_data_on_create": True,
        "imported_file_chunk_size": 1024,
        "delete_data_in_filesystem": False,
        "s3": {"auto_import_policy": {"events": events}, "auto_export_policy": {"events": events}},
    }


def test_bucket_configuration() -> None:
    config = specs.bucket_configuration("arn:key")
    assert list(config) == ["ownership", "public-access", "versioning", "encryption", "lifecycle"]
    assert config["ownership"] == {"rule": {"object_ownership": "BucketOwnerEnforced"}}
    assert config["public-access"] == {
        "block_public_acls": True,
        "block_public_policy": True,
        "ignore_public_acls": True,
        "restrict_public_buckets": True,
    }
    assert config["versioning"] == {"versioning_configuration": {"status": "Enabled"}}
    assert config["encryption"] == {
        "rules": [
            {
                "apply_server_side_encryption_by_default": {
                    "sse_algorithm": "aws:kms",
                    "kms_master_key_id": "arn:key",
                },
                "bucket_key_enabled": True,
            }
        ]
    }
    (rule,) = config["lifecycle"]["rules"]
    assert rule["noncurrent_version_expiration"] == {"noncurrent_days": 30}
    assert rule["abort_incomplete_multipart_upload"] == {"days_after_initiation": 7}


def test_efs_is_encrypted_and_elastic() -> None:
    assert specs.efs_args("token") == {
        "creation_token": "token",
        "encrypted": True,
        "performance_mode": "generalPurpose",
        "throughput_mode": "elastic",
    }


def test_addons_are_pinned() -> None:
    assert specs.addon_args("fsx-lustre") == {
        "addon_name": "aws-fsx-csi-driver",
        "addon_version": "v1.9.0-eksbuild.1",
        "resolve_conflicts_on_create": "OVERWRITE",
        "resolve_conflicts_on_update": "OVERWRITE",
    }
    assert specs.addon_args("efs")["addon_name"] == "aws-efs-csi-driver"


def test_key_rotates_with_the_longest_deletion_window() -> None:
    args = specs.key_args("prod", "models", "fsx-lustre")
    assert (args["enable_key_rotation"], args["deletion_window_in_days"]) == (True, 30)


def test_csi_driver_role_is_describe_only() -> None:
    fsx = specs.csi_driver_policy("fsx-lustre")["Statement"]
    efs = specs.csi_driver_policy("efs")["Statement"]
    assert fsx == [
        {
            "Sid": "DescribeOnlyStaticProvisioning",
            "Effect": "Allow",
            "Action": ["fsx:DescribeFileSystems"],
            "Resource": "*",
        }
    ]
    assert efs[0]["Action"] == [
        "ec2:DescribeAvailabilityZones",
        "elasticfilesystem:DescribeFileSystems",
        "elasticfilesystem:DescribeMountTargets",
    ]
    for statement in fsx + efs:
        assert all(action.split(":")[1].startswith("Describe") for action in statement["Action"])


def test_bucket_denies_plain_http() -> None:
    assert specs.bucket_tls_policy("arn:aws:s3:::b")["Statement"] == [
        {
            "Sid": "DenyInsecureTransport",
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:*",
            "Resource": ["arn:aws:s3:::b", "arn:aws:s3:::b/*"],
            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
        }
    ]


def test_efs_policy_allows_mount_targets_and_denies_plain_nfs() -> None:
    allow, deny = specs.efs_tls_policy("arn:aws:elasticfilesystem:us-east-1:123456789012:file-system/fs-1")[
        "Statement"
    ]
    assert allow["Condition"] == {"Bool": {"elasticfilesystem:AccessedViaMountTarget": "true"}}
    assert (deny["Effect"], deny["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})


def test_key_policy_without_bucket_only_enables_iam() -> None:
    assert specs.key_policy(KEY_ARN)["Statement"] == [
        {
            "Sid": "EnableIamPolicies",
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
            "Action": "kms:*",
            "Resource": "*",
        }
    ]


def test_key_policy_lets_the_fsx_link_use_the_key_through_s3_on_its_bucket_only() -> None:
    statement = specs.key_policy(KEY_ARN, "fs-0abc", "weights-bucket")["Statement"][1]
    assert statement == {
        "Sid": "FsxDataRepositoryThroughS3",
        "Effect": "Allow",
        "Principal": {
            "AWS": "arn:aws:iam::123456789012:role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
            "AWSServiceRoleForFSxS3Access_fs-0abc"
        },
        "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey*", "kms:ReEncrypt*"],
        "Resource": "*",
        "Condition": {
            "StringEquals": {
                "kms:CallerAccount": "123456789012",
                "kms:ViaService": "s3.us-east-1.amazonaws.com",
            },
            "StringLike": {
                "kms:EncryptionContext:aws:s3:arn": [
                    "arn:aws:s3:::weights-bucket",
                    "arn:aws:s3:::weights-bucket/*",
                ]
            },
        },
    }


def test_arn_parts_rejects_non_arn() -> None:
    assert specs.arn_parts("arn:aws-cn:kms:cn-north-1:123456789012:key/x") == specs.ArnParts(
        "aws-cn", "cn-north-1", "123456789012"
    )
    with pytest.raises(ValueError, match="'key/x' is not an ARN"):
        specs.arn_parts("key/x")
