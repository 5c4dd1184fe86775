"""Physical names of the model store's resources: S3 bucket, KMS alias, EFS token, PVs, PVCs, sync Jobs.

Owns every name the model store and the weight sync give to things outside Pulumi's logical
namespace, built from the project, the stack and the component name only: the same inputs give
the same names on every run, and no name has a random or time-based part. Each builder keeps
within the target's length limit and character set, and a short SHA-256 of the full identity
keeps truncated names unique. Pure functions, no Pulumi imports.
"""

from __future__ import annotations

import hashlib
import re

# S3 general purpose bucket naming rules:
# https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html
BUCKET_NAME_MAX = 63
BUCKET_NAME_MIN = 3
BUCKET_FORBIDDEN_PREFIXES = ("xn--", "sthree-", "amzn-s3-demo-")
BUCKET_FORBIDDEN_SUFFIXES = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")
# No dots: a dotted name breaks virtual-hosted-style TLS (*.s3.amazonaws.com matches one label).
_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*[a-z0-9]$")

# Kubernetes object names: DNS-1123 labels (Jobs, whose name becomes a pod label) and subdomains.
DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

# EFS CreationToken: 1 to 64 characters (EFS API CreateFileSystem).
EFS_TOKEN_MAX = 64
# KMS alias names: alias/ + [A-Za-z0-9/_-], at most 256 characters, not under alias/aws/.
KMS_ALIAS_MAX = 256

HASH_LENGTH = 8
SYNC_JOB_ROLE = "sync"


def short_hash(*parts: str) -> str:
    """First HASH_LENGTH hex digits of SHA-256 over the parts joined by '/'."""
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:HASH_LENGTH]


def _slug(text: str) -> str:
    """Lowercase, every run of characters outside [a-z0-9] as one '-', no leading/trailing '-'."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _join_within(base: str, suffix: str, limit: int) -> str:
    """`base-suffix`, cutting base (never the suffix) so the whole fits in limit characters."""
    room = limit - len(suffix) - 1
    trimmed = base[:room].rstrip("-")
    return f"{trimmed}-{suffix}" if trimmed else suffix


def is_valid_bucket_name(name: str) -> bool:
    """True when `name` follows the S3 general purpose bucket rules (without dots, by choice)."""
    return (
        BUCKET_NAME_MIN <= len(name) <= BUCKET_NAME_MAX
        and bool(_BUCKET_NAME.match(name))
        and "--" not in name
        and not name.startswith(BUCKET_FORBIDDEN_PREFIXES)
        and not name.endswith(BUCKET_FORBIDDEN_SUFFIXES)
    )


def bucket_name(project: str, stack: str, name: str) -> str:
    """S3 bucket for the model weights: `<project>-<stack>-<name>-<hash>`, at most 63 characters.

    The hash covers the exact project/stack/name, so two stacks whose names slug alike ("Prod" and
    "prod") still get different buckets, and a cut name stays unique.
    """
    base = re.sub(r"-{2,}", "-", _slug(f"{project}-{stack}-{name}"))
    if not base or base.startswith(BUCKET_FORBIDDEN_PREFIXES):
        base = f"models-{base}".rstrip("-")
    result = _join_within(base, short_hash(project, stack, name), BUCKET_NAME_MAX)
    if not is_valid_bucket_name(result):  # guards the rules above; unreachable for slugged input
        raise ValueError(f"derived bucket name {result!r} breaks the S3 naming rules")
    return result


def kms_alias_name(project: str, stack: str, name: str) -> str:
    """`alias/<project>-<stack>-<name>` for the model store's KMS key."""
    alias = f"alias/{_slug(f'{project}-{stack}-{name}')}"
    if len(alias) > KMS_ALIAS_MAX:
        alias = "alias/" + _join_within(
            _slug(f"{project}-{stack}-{name}"), short_hash(project, stack, name), 200
        )
    return alias


def efs_creation_token(project: str, stack: str, name: str) -> str:
    """Idempotency token of the EFS file system (at most 64 characters, unique per stack)."""
    return _join_within(_slug(f"{project}-{stack}-{name}"), short_hash(project, stack, name), EFS_TOKEN_MAX)


def _check_dns_label(value: str, what: str) -> str:
    if len(value) > DNS_LABEL_MAX or not _DNS_LABEL.match(value):
        raise ValueError(
            f"{what} {value!r} is not a DNS label: lowercase letters, digits and '-', at most {DNS_LABEL_MAX}"
        )
    return value


def claim_name(component: str, role: str) -> str:
    """PersistentVolumeClaim in the serving namespace: `<component>-<role>` (role: serving, sync)."""
    return _check_dns_label(f"{component}-{role}", "claim name")


def volume_name(namespace: str, component: str, role: str) -> str:
    """Cluster-scoped PersistentVolume: `<namespace>-<component>-<role>`, unique per namespace."""
    name = f"{namespace}-{component}-{role}"
    if len(name) > DNS_SUBDOMAIN_MAX or not _DNS_LABEL.match(name):
        raise ValueError(f"volume name {name!r} is not a valid Kubernetes object name")
    return name


def sync_job_name(model_name: str, model_id: str, revision: str) -> str:
    """Weight-sync Job of one model revision: `<model>-sync-<hash of model id and revision>`.

    Jobs are immutable, so a new revision (or model id) must be a new Job: the hash changes with
    either, and the Job name with it. At most 63 characters (the name becomes the pods' job-name label).
    """
    _check_dns_label(model_name, "model name")
    suffix = f"{SYNC_JOB_ROLE}-{short_hash(model_id, revision)}"
    return _check_dns_label(_join_within(model_name, suffix, DNS_LABEL_MAX), "job name")
