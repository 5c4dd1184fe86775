"""Helpers for the AWS foundation tests: build settings, record component graphs, check with URNs.

Every graph is recorded fresh (a new mocked engine per call) from settings parsed out of the
shipped stack files or from hand-built args; nothing is shared between tests.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from offline.graph import RecordedResource, unwrap_secrets
from offline.recorder import Graph, record_program
from tests.helpers import ROOT, raw_settings

GOLDEN = Path(__file__).resolve().parent / "golden"
REGION_CONFIG = {"aws:region": "us-east-1"}

VPC = "aws:ec2/vpc:Vpc"
SUBNET = "aws:ec2/subnet:Subnet"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
VPC_ENDPOINT = "aws:ec2/vpcEndpoint:VpcEndpoint"
NAT_GATEWAY = "aws:ec2/natGateway:NatGateway"
ROUTE = "aws:ec2/route:Route"
FLOW_LOG = "aws:ec2/flowLog:FlowLog"
LOG_GROUP = "aws:cloudwatch/logGroup:LogGroup"
EKS_CLUSTER = "aws:eks/cluster:Cluster"
ADDON = "aws:eks/addon:Addon"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
OIDC = "aws:iam/openIdConnectProvider:OpenIdConnectProvider"
KMS_KEY = "aws:kms/key:Key"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
K8S_PROVIDER = "pulumi:providers:kubernetes"
STACK_REFERENCE = "pulumi:pulumi:StackReference"


def raw(stack: str, **overrides: Any) -> dict[str, Any]:
    """Raw settings of a shipped stack with top-level keys replaced (deep copies)."""
    data = raw_settings(stack)
    data.update(copy.deepcopy(overrides))
    return data


def settings_of(raw_config: Mapping[str, Any]) -> Any:
    """Parsed StackSettings (imported lazily: settings needs the capacity package)."""
    from settings import parse_settings

    return parse_settings(dict(raw_config))


def plan_of(settings: Any) -> Any:
    """The stack plan for parsed settings, resolving model facts from the repository root."""
    from planning import plan_stack

    return plan_stack(settings, ROOT)


def record(program: Callable[[], Any], **kwargs: Any) -> Graph:
    """Record `program` under mocks with aws:region us-east-1 unless config says otherwise."""
    kwargs.setdefault("config", REGION_CONFIG)
    return record_program(program, **kwargs)


def expect(resource: RecordedResource, condition: bool, rule: str) -> None:
    """Fail naming the resource's URN and the rule it breaks."""
    if not condition:
        pytest.fail(f"{resource.urn}: {rule}", pytrace=False)


def expect_equal(resource: RecordedResource, actual: Any, expected: Any, what: str) -> None:
    """Fail with the URN when `actual != expected`."""
    if actual != expected:
        pytest.fail(f"{resource.urn}: {what} is {actual!r}, expected {expected!r}", pytrace=False)


def by_name(graph: Graph, type_: str) -> dict[str, RecordedResource]:
    """Resources of one type keyed by their Pulumi name."""
    return {r.name: r for r in graph.by_type(type_)}


def plain(value: Any) -> Any:
    """Wire-form value with secret envelopes removed."""
    return unwrap_secrets(value)


def user_data_of(template: RecordedResource) -> str:
    """The decoded user data of a recorded launch template ("" when it has none)."""
    encoded = template.inputs.get("userData")
    return base64.b64decode(encoded).decode() if encoded else ""


def depends_on(graph: Graph, resource: RecordedResource, prop: str) -> list[RecordedResource]:
    """The resources a property of `resource` was computed from (recorded property dependencies)."""
    return [graph.get(urn) for urn in resource.property_dependencies.get(prop, [])]
