"""components/storage_naming.py: physical names of the model store and weight-sync resources.

Checks: the bucket name for a known stack (pinned), S3 naming rules for any project/stack/name
(property-based: length, characters, no forbidden prefix/suffix, no '--'), uniqueness where slugs
collide, Job names that change with the revision and the model id and stay DNS labels within 63
characters, claim/volume names validated, and the EFS token and KMS alias within their limits.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from components.storage_naming import (
    BUCKET_NAME_MAX,
    DNS_LABEL_MAX,
    EFS_TOKEN_MAX,
    bucket_name,
    claim_name,
    efs_creation_token,
    is_valid_bucket_name,
    kms_alias_name,
    short_hash,
    sync_job_name,
    volume_name,
)

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
REVISION = "be673f326cab4cd22ccfef76109faf68e41aa5f1"
MODEL_ID = "meta-llama/Llama-3.1-405B-Instruct"


def test_bucket_name_of_a_stack_is_pinned() -> None:
    expected_hash = hashlib.sha256(b"vllm-serving/prod/model-store").hexdigest()[:8]
    assert (
        bucket_name("vllm-serving", "prod", "model-store") == f"vllm-serving-prod-model-store-{expected_hash}"
    )


def test_bucket_name_is_deterministic() -> None:
    assert bucket_name("p", "dev", "store") == bucket_name("p", "dev", "store")


def test_bucket_names_differ_when_slugs_collide() -> None:
    assert bucket_name("vllm", "Prod", "store") != bucket_name("vllm", "prod", "store")
    assert bucket_name("vllm", "a_b", "store") != bucket_name("vllm", "a-b", "store")


def test_long_bucket_name_is_cut_but_keeps_its_hash() -> None:
    name = bucket_name("a-very-long-project-name-for-serving", "production-us-east-1-blue", "model-store")
    assert len(name) == BUCKET_NAME_MAX
    assert name.endswith(
        "-" + short_hash("a-very-long-project-name-for-serving", "production-us-east-1-blue", "model-store")
    )
    assert is_valid_bucket_name(name)


def test_forbidden_bucket_prefix_is_avoided() -> None:
    assert bucket_name("xn--project", "dev", "store").startswith("xn-project-dev-store-")
    name = bucket_name("sthree", "dev", "store")
    assert name == f"models-sthree-dev-store-{short_hash('sthree', 'dev', 'store')}"


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("ab", False),
        ("abc", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("-abc", False),
        ("abc-", False),
        ("a--b", False),
        ("Abc", False),
        ("a.b", False),
        ("xn--abc", False),
        ("sthree-abc", False),
        ("abc-s3alias", False),
    ],
)
def test_bucket_name_rules(name: str, valid: bool) -> None:
    assert is_valid_bucket_name(name) is valid


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=0, max_size=80), st.text(min_size=0, max_size=80), st.text(min_size=0, max_size=80))
def test_any_stack_gets_a_valid_bucket_name(project: str, stack: str, name: str) -> None:
    bucket = bucket_name(project, stack, name)
    assert is_valid_bucket_name(bucket), bucket
    assert len(bucket) <= BUCKET_NAME_MAX


def test_sync_job_name_hashes_model_id_and_revision() -> None:
    expected = hashlib.sha256(f"{MODEL_ID}/{REVISION}".encode()).hexdigest()[:8]
    assert sync_job_name("llama-405b", MODEL_ID, REVISION) == f"llama-405b-sync-{expected}"


def test_new_revision_or_model_id_makes_a_new_job() -> None:
    base = sync_job_name("llama-405b", MODEL_ID, REVISION)
    assert sync_job_name("llama-405b", MODEL_ID, "main") != base
    assert sync_job_name("llama-405b", "meta-llama/Llama-3.1-405B-Instruct-FP8", REVISION) != base


@settings(max_examples=100, deadline=None)
@given(st.from_regex(r"[a-z]([-a-z0-9]{0,61}[a-z0-9])?", fullmatch=True), st.text(min_size=1, max_size=60))
def test_sync_job_names_are_dns_labels(model_name: str, revision: str) -> None:
    job = sync_job_name(model_name, MODEL_ID, revision)
    assert len(job) <= DNS_LABEL_MAX
    assert DNS_LABEL.match(job), job


def test_sync_job_name_rejects_a_non_dns_model_name() -> None:
    with pytest.raises(ValueError, match="model name 'Llama_8B' is not a DNS label"):
        sync_job_name("Llama_8B", MODEL_ID, REVISION)


def test_claim_and_volume_names() -> None:
    assert claim_name("model-store", "serving") == "model-store-serving"
    assert volume_name("vllm", "model-store", "sync") == "vllm-model-store-sync"
    with pytest.raises(ValueError, match="claim name 'Store-serving' is not a DNS label"):
        claim_name("Store", "serving")
    with pytest.raises(
        ValueError, match="volume name 'vllm-store_x-sync' is not a valid Kubernetes object name"
    ):
        volume_name("vllm", "store_x", "sync")


def test_efs_token_and_kms_alias_within_limits() -> None:
    token = efs_creation_token("p" * 50, "s" * 50, "model-store")
    assert len(token) <= EFS_TOKEN_MAX
    assert efs_creation_token("vllm-serving", "prod", "model-store").startswith(
        "vllm-serving-prod-model-store-"
    )
    assert kms_alias_name("vllm-serving", "prod", "model-store") == "alias/vllm-serving-prod-model-store"
    assert len(kms_alias_name("p" * 300, "s", "n")) <= 256
