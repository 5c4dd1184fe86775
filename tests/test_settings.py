"""Settings: every shipped stack loads; each invalid config gives its exact one-line message
naming the key; wrong types and values from a fuzzer always end in a clean SettingsError."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from settings import ALLOWED_EXTRA_ARGS, SettingsError, StackSettings, key_path, parse_settings
from tests.helpers import STACKS, raw_settings


@pytest.mark.parametrize("stack", STACKS)
def test_every_shipped_stack_loads(stack: str) -> None:
    settings = parse_settings(raw_settings(stack))
    assert isinstance(settings, StackSettings)
    assert settings.models


def test_defaults_are_private_and_pinned() -> None:
    settings = parse_settings(raw_settings("dev"))
    assert settings.cluster.public_access_cidrs == []
    assert settings.serving.image == "vllm/vllm-openai:v0.19.0"
    assert settings.models[0].gpu_memory_utilization == 0.90
    assert settings.autoscaling.waiting_requests_threshold == 10
    assert settings.autoscaling.cooldown_seconds == 300


def test_key_path_formats_lists_and_fields() -> None:
    assert key_path("models", 1, "maxModelLen") == "vllm-serving:models[1].maxModelLen"
    assert key_path("network") == "vllm-serving:network"


def _mutate(stack: str, path: tuple, value: Any) -> dict[str, Any]:
    raw = raw_settings(stack)
    target = raw
    for part in path[:-1]:
        if isinstance(part, str) and part not in target:
            target[part] = {}
        target = target[part]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return raw


_DELETE = object()

INVALID = [
    (
        "dev",
        ("models", 0, "maxModelLen"),
        "abc",
        "vllm-serving:models[0].maxModelLen: Input should be a valid integer, unable to parse string as an integer "
        "(got 'abc')",
    ),
    (
        "dev",
        ("models", 0, "maxModelLen"),
        -5,
        "vllm-serving:models[0].maxModelLen: Input should be greater than 0 (got -5)",
    ),
    ("dev", ("platform",), "gke", "vllm-serving:platform: Input should be 'eks' or 'existing' (got 'gke')"),
    (
        "dev",
        ("models", 0, "name"),
        "Llama_8B",
        "vllm-serving:models[0].name: must be a DNS label: lowercase letters, digits and '-', starting with a letter, "
        "at most 40 characters (got 'Llama_8B')",
    ),
    (
        "dev",
        ("models", 0, "pool"),
        "h200",
        "vllm-serving:models[0].pool: 'h200' is not a GPU pool; defined pools: l40s",
    ),
    (
        "dev",
        ("models", 0, "minReplicas"),
        3,
        "vllm-serving:models[0]: minReplicas 3 is larger than maxReplicas 1 (got",
    ),
    (
        "dev",
        ("models", 0, "maxModelLen"),
        _DELETE,
        "vllm-serving:models[0].maxModelLen: required key is missing",
    ),
    (
        "dev",
        ("models", 0, "maxModelLength"),
        4096,
        "vllm-serving:models[0].maxModelLength: unknown key; check its spelling against Pulumi.yaml's config schema",
    ),
    (
        "dev",
        ("gpuPools", 0, "interconnect"),
        "efa",
        "vllm-serving:gpuPools[0].interconnect: g6e.xlarge has no EFA; use tcp or an EFA instance type",
    ),
    (
        "prod",
        ("gpuPools", 0, "availabilityZone"),
        _DELETE,
        "vllm-serving:gpuPools[0].availabilityZone: an EFA pool must sit in exactly one AZ; set one of "
        "us-east-1a, us-east-1b, us-east-1c",
    ),
    (
        "prod",
        ("gpuPools", 0, "availabilityZone"),
        "us-east-1f",
        "vllm-serving:gpuPools[0].availabilityZone: us-east-1f is not one of the network's AZs",
    ),
    (
        "prod",
        ("gpuPools", 0, "capacityType"),
        "capacity-block",
        "vllm-serving:gpuPools[0]: capacityType capacity-block needs capacityReservationId (cr-...)",
    ),
    (
        "prod",
        ("cluster", "publicAccessCidrs"),
        ["0.0.0.0/0"],
        "vllm-serving:cluster.publicAccessCidrs: 0.0.0.0/0 would expose the Kubernetes API to the internet",
    ),
    (
        "dev",
        ("cluster", "serviceCidr"),
        "10.40.128.0/17",
        "vllm-serving:cluster.serviceCidr: 10.40.128.0/17 overlaps the VPC CIDR 10.40.0.0/16",
    ),
    (
        "dev",
        ("modelStore", "s3Uri"),
        "https://bucket/models",
        "vllm-serving:modelStore.s3Uri: must be an S3 URI such as s3://my-bucket/models (got 'https://bucket/models')",
    ),
    (
        "dev",
        ("serving", "image"),
        "vllm/vllm-openai:latest",
        "vllm-serving:serving.image: must be pinned to a release tag",
    ),
    (
        "dev",
        ("models", 0, "extraArgs"),
        ["--tensor-parallel-size=2"],
        "vllm-serving:models[0].extraArgs: flag --tensor-parallel-size is not allowed",
    ),
    ("dev", ("gpuPools", 0, "instanceType"), "p9.mega", "vllm-serving:gpuPools[0].instanceType:"),
    (
        "onprem",
        ("cluster", "existing"),
        _DELETE,
        "vllm-serving:cluster.existing: platform existing needs a kubeconfig source",
    ),
    (
        "onprem",
        ("gpuPools", 0, "rdmaResource"),
        _DELETE,
        "vllm-serving:gpuPools[0]: interconnect infiniband needs rdmaResource",
    ),
    (
        "onprem",
        ("serving", "internalLoadBalancer"),
        True,
        "vllm-serving:serving.internalLoadBalancer: needs platform eks",
    ),
    (
        "onprem",
        ("modelStore", "kind"),
        "fsx-lustre",
        "vllm-serving:modelStore: existingClaimName / nfsServer / nfsPath only apply to kind existing",
    ),
]


@pytest.mark.parametrize(("stack", "path", "value", "message"), INVALID, ids=[m[:60] for *_, m in INVALID])
def test_invalid_config_names_the_key(stack: str, path: tuple, value: Any, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        parse_settings(_mutate(stack, path, value))
    assert any(problem.startswith(message) for problem in raised.value.problems), raised.value.problems


def test_all_problems_are_reported_together() -> None:
    raw = _mutate("dev", ("models", 0, "maxModelLen"), "abc")
    raw["platform"] = "gke"
    with pytest.raises(SettingsError) as raised:
        parse_settings(raw)
    assert len(raised.value.problems) == 2
    assert str(raised.value).count("\n") == 1


def test_duplicate_model_names_are_rejected() -> None:
    raw = raw_settings("prod")
    raw["models"][1]["name"] = raw["models"][0]["name"]
    with pytest.raises(
        SettingsError, match=re.escape("vllm-serving:models[1].name: duplicate model name 'llama-405b'")
    ):
        parse_settings(raw)


def test_allow_list_is_not_empty_and_excludes_planned_flags() -> None:
    assert "--enable-prefix-caching" in ALLOWED_EXTRA_ARGS
    for planned in ("--tensor-parallel-size", "--api-key", "--port", "--model", "--host"):
        assert planned not in ALLOWED_EXTRA_ARGS


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
FIELDS = [
    ("platform",),
    ("network", "cidr"),
    ("network", "availabilityZones"),
    ("cluster", "version"),
    ("gpuPools", 0, "instanceType"),
    ("gpuPools", 0, "name"),
    ("models", 0, "maxModelLen"),
    ("models", 0, "gpuMemoryUtilization"),
    ("models", 0, "name"),
    ("models", 0, "extraArgs"),
    ("modelStore", "kind"),
    ("autoscaling", "waitingRequestsThreshold"),
    ("serving", "image"),
    ("models", 0, "dtype"),
    ("models",),
    ("gpuPools",),
]


@hyp_settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), value=SCALARS)
def test_fuzzed_values_end_in_a_clean_error_or_valid_settings(field: tuple, value: Any) -> None:
    raw = _mutate("dev", field, value)
    try:
        parse_settings(raw)
    except SettingsError as err:
        assert err.problems
        for problem in err.problems:
            assert problem.startswith("vllm-serving:"), problem
            assert "\n" not in problem and "Traceback" not in problem


def test_max_model_len_beyond_the_models_limit_names_the_key() -> None:
    from planning import plan_stack
    from tests.helpers import ROOT

    raw = raw_settings("dev")
    raw["models"][0]["maxModelLen"] = 262144
    with pytest.raises(
        SettingsError, match=re.escape("vllm-serving:models[0].maxModelLen: 262144 exceeds the 131072 tokens")
    ):
        plan_stack(parse_settings(raw), ROOT)
