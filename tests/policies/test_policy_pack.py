"""The pack as a whole and its helpers: the ten policies (names, levels, metadata), explicit levels
in the initial config, config defaults, the two-phase policy's dispatch, the manifest, and the
wire-value helpers (unknowns, ids vs. dependencies, ports, label selectors)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

import policies
from policies.k8s import selector_matches
from policies.pack_config import (
    ALLOWED_CAPABILITIES,
    CONFIG_SCHEMAS,
    POD_SECURITY,
    initial_config,
    setting,
)
from policies.props import known_items, port_number, refers_to
from policies.two_phase import TwoPhasePolicy
from tests.policies.policy_fakes import UNKNOWN, Reports, policy_resource, resource_args

PACK_DIR = Path(policies.__file__).parent
EXPECTED = {
    "no-public-ingress",
    "efa-self-only",
    "gpu-nodes-private",
    "eks-endpoint-private",
    "k8s-service-internal",
    "pod-security",
    "vllm-network-isolation",
    "vllm-api-key-from-secret",
    "storage-encrypted",
    "private-gpu-subnets",
}


def test_the_pack_has_the_ten_policies_all_mandatory_with_metadata() -> None:
    assert {p.name for p in policies.POLICIES} == EXPECTED
    assert len(policies.POLICIES) == len(EXPECTED)
    for policy in policies.POLICIES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", policy.name)
        assert policy.enforcement_level == EnforcementLevel.MANDATORY, policy.name
        assert policy.description and policy.remediation_steps and policy.severity is not None, policy.name


def test_initial_config_states_mandatory_for_every_configurable_policy() -> None:
    config = initial_config()
    assert set(config) == {"no-public-ingress", "pod-security", "vllm-network-isolation"}
    for name, entry in config.items():
        assert entry["enforcementLevel"] == EnforcementLevel.MANDATORY
        defaults = {k: v["default"] for k, v in CONFIG_SCHEMAS[name].properties.items()}
        assert {k: v for k, v in entry.items() if k != "enforcementLevel"} == defaults


def test_setting_falls_back_to_the_schema_default() -> None:
    assert setting(resource_args("t", {}), POD_SECURITY, ALLOWED_CAPABILITIES) == ["IPC_LOCK"]
    configured = resource_args("t", {}, config={ALLOWED_CAPABILITIES: []})
    assert setting(configured, POD_SECURITY, ALLOWED_CAPABILITIES) == []


def test_two_phase_policy_is_both_kinds_and_dispatches_by_argument() -> None:
    seen: list[str] = []
    policy = TwoPhasePolicy(
        "probe",
        "probe",
        validate_resource=lambda args, report: seen.append(f"resource:{args.name}"),
        validate_stack=lambda args, report: seen.append(f"stack:{len(args.resources)}"),
    )
    assert isinstance(policy, ResourceValidationPolicy) and isinstance(policy, StackValidationPolicy)
    policy.validate(resource_args("t", {}, name="one"), Reports())
    policy.validate(StackValidationArgs([policy_resource("t", "a", {})]), Reports())
    assert seen == ["resource:one", "stack:1"]


def test_manifest() -> None:
    manifest = yaml.safe_load((PACK_DIR / "PulumiPolicy.yaml").read_text())
    assert manifest["runtime"] == "python"
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["description"]


def test_refers_to_by_dependency_or_by_id() -> None:
    group = policy_resource("sg", "g", {"id": "sg-1"})
    unknown_group = policy_resource("sg", "u", {"id": UNKNOWN})
    by_id = policy_resource("rule", "r1", {"securityGroupId": "sg-1"})
    by_dep = policy_resource(
        "rule", "r2", {"securityGroupId": UNKNOWN}, deps={"securityGroupId": [unknown_group]}
    )
    in_list = policy_resource("ng", "n", {"subnetIds": [UNKNOWN, "sg-1"]})
    assert refers_to(by_id, "securityGroupId", group) is True
    assert refers_to(by_dep, "securityGroupId", unknown_group) is True
    assert refers_to(by_dep, "securityGroupId", group) is False
    assert refers_to(in_list, "subnetIds", group) is True
    assert known_items(unknown_checking_proxy({"l": [UNKNOWN, "x"]})["l"]) == [None, "x"]


@pytest.mark.parametrize(
    ("value", "expected"), [(8000, 8000), (8000.0, 8000), ("53", 53), ("http", None), (True, None)]
)
def test_port_number(value: object, expected: int | None) -> None:
    assert port_number(value) == expected


@pytest.mark.parametrize(
    ("selector", "selected"),
    [
        ({}, True),
        ({"matchLabels": {"app": "vllm"}}, True),
        ({"matchLabels": {"app": "vllm", "tier": "x"}}, False),
        ({"matchExpressions": [{"key": "model", "operator": "In", "values": ["a", "b"]}]}, True),
        ({"matchExpressions": [{"key": "model", "operator": "NotIn", "values": ["a"]}]}, False),
        ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
        ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
    ],
)
def test_label_selectors(selector: dict[str, object], selected: bool) -> None:
    assert selector_matches(selector, {"app": "vllm", "model": "a"}) is selected
