"""Run Pulumi code with no engine and record the whole resource graph.

Owns the mock monitor that captures every registration (type, name, parent, wire-form inputs,
options, dependencies, provider), component and stack outputs, and reads (StackReferences);
the engine-faithful URNs; and the echo mocks that answer provider calls deterministically.
Used by the offline engine (offline/engine.py) and by every graph test.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc

from offline.graph import STACK_REFERENCE_TYPE, STACK_TYPE, RecordedResource, is_secret, unwrap_secrets


def _stable_id(urn: str) -> str:
    """Deterministic fake physical id: same URN, same id, on every run."""
    return "id-" + hashlib.sha256(urn.encode()).hexdigest()[:16]


# Outputs a real provider computes that programs commonly read; echoed inputs cover the rest.
COMPUTED_OUTPUTS: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
    "aws:eks/cluster:Cluster": lambda rid, inputs: {
        "endpoint": f"https://{rid}.gr7.us-east-1.eks.amazonaws.com",
        "certificateAuthority": {"data": "LS0tLS1CRUdJTi1vZmZsaW5lLWNhLS0tLS0="},
        "identities": [{"oidcs": [{"issuer": f"https://oidc.eks.us-east-1.amazonaws.com/id/{rid}"}]}],
        "vpcConfig": {**inputs.get("vpcConfig", {}), "clusterSecurityGroupId": f"sg-{rid[3:11]}"},
        "arn": f"arn:aws:eks:us-east-1:123456789012:cluster/{inputs.get('name', rid)}",
    },
    "aws:ec2/vpcEndpoint:VpcEndpoint": lambda rid, inputs: {"prefixListId": f"pl-{rid[3:11]}"},
    "aws:eks/nodeGroup:NodeGroup": lambda rid, inputs: {
        "nodeGroupName": inputs.get("nodeGroupName")
        or f"{inputs.get('nodeGroupNamePrefix', 'ng-')}{rid[3:11]}"
    },
    # A stand-in of the requested length, so consumers of a generated password see a real value.
    "random:index/randomPassword:RandomPassword": lambda rid, inputs: {
        "result": (f"offline-{rid}-" * 8)[: int(inputs.get("length", 32))]
    },
    "aws:fsx/lustreFileSystem:LustreFileSystem": lambda rid, inputs: {
        "dnsName": f"fs-{rid[3:20]}.fsx.us-east-1.amazonaws.com",
        "mountName": rid[3:11],
    },
}


def stack_reference_state(stack_name: str, outputs: Mapping[str, Any]) -> dict[str, Any]:
    """What the engine returns for a StackReference: plain outputs plus the names of secret ones.

    `outputs` may hold wire-form secret envelopes (as a recorded graph's stack outputs do); the
    SDK marks `get_output(name)` secret from `secretOutputNames`, as with a real backend.
    """
    secret_names = sorted(name for name, value in outputs.items() if is_secret(value))
    return {"name": stack_name, "outputs": unwrap_secrets(dict(outputs)), "secretOutputNames": secret_names}


class EchoMocks(pulumi_mocks.Mocks):
    """Echo inputs as outputs, add an id, an ARN and a few well-known computed outputs."""

    def __init__(self, stack_outputs: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        # Kept as given (not copied): the engine passes a mapping that notes which stacks were asked for.
        self.stack_outputs: Mapping[str, Mapping[str, Any]] = {} if stack_outputs is None else stack_outputs

    def new_resource(self, args: pulumi_mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        if args.typ == STACK_REFERENCE_TYPE:
            stack_name = args.resource_id or args.inputs.get("name", args.name)
            outputs = self.stack_outputs.get(stack_name) or {}
            return stack_name, {**args.inputs, **stack_reference_state(stack_name, outputs)}
        rid = _stable_id(f"{args.typ}::{args.name}")
        outputs = dict(args.inputs)
        outputs.setdefault(
            "arn", f"arn:aws:mock:us-east-1:123456789012:{args.typ.split(':')[-1].lower()}/{args.name}"
        )
        outputs.setdefault("name", args.inputs.get("name", args.name))
        extra = COMPUTED_OUTPUTS.get(args.typ)
        if extra is not None:
            outputs.update(extra(rid, args.inputs))
        return rid, outputs

    def call(self, args: pulumi_mocks.MockCallArgs) -> dict[str, Any]:
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                "accountId": "123456789012",
                "arn": "arn:aws:iam::123456789012:user/offline",
                "userId": "offline",
            }
        if args.token == "aws:index/getRegion:getRegion":
            return {"name": "us-east-1", "region": "us-east-1", "id": "us-east-1"}
        if args.token == "aws:ec2/getVpc:getVpc":
            # An adopted VPC's primary CIDR (an offline stand-in).
            return {
                "id": args.args.get("id"),
                "cidrBlock": "10.50.0.0/16",
                "cidrBlockAssociations": [
                    {"associationId": "vpc-cidr-assoc-1", "cidrBlock": "10.50.0.0/16", "state": "associated"}
                ],
                "default": False,
            }
        if args.token == "aws:index/getPartition:getPartition":
            return {"partition": "aws", "dnsSuffix": "amazonaws.com"}
        return dict(args.args)


class RecordingMonitor(pulumi_mocks.MockMonitor):
    """A MockMonitor that keeps every request, with the URNs the real engine would make."""

    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.recorded: dict[str, RecordedResource] = {}
        self.component_outputs: dict[str, dict[str, Any]] = {}
        self.stack_outputs: dict[str, Any] = {}
        self.stack_urn = ""

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The engine skips the root stack and prefixes the parent's full type chain.
        qualified = type_
        if parent:
            parent_type = parent.split("::")[2]
            if parent_type != STACK_TYPE:
                qualified = f"{parent_type}${type_}"
        return f"urn:pulumi:{pulumi.get_stack()}::{pulumi.get_project()}::{qualified}::{name}"

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            self.stack_urn = response.urn
            return response
        self.recorded[response.urn] = RecordedResource(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent="" if request.parent == self.stack_urn else request.parent,
            custom=request.custom,
            inputs=json_format.MessageToDict(request.object),
            outputs=json_format.MessageToDict(response.object),
            id=response.id,
            protect=request.protect,
            retain_on_delete=request.retainOnDelete,
            ignore_changes=sorted(request.ignoreChanges),
            dependencies=sorted(set(request.dependencies)),
            property_dependencies={
                key: sorted(deps.urns) for key, deps in sorted(request.propertyDependencies.items())
            },
            provider=request.provider,
            delete_before_replace=request.deleteBeforeReplace,
            additional_secret_outputs=sorted(request.additionalSecretOutputs),
            custom_timeouts=json_format.MessageToDict(request.customTimeouts),
            aliases=[json_format.MessageToDict(a) for a in request.aliases],
            replace_on_changes=sorted(request.replaceOnChanges),
        )
        return response

    def ReadResource(self, request: Any) -> Any:
        response = super().ReadResource(request)
        self.recorded[response.urn] = RecordedResource(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent="" if request.parent == self.stack_urn else request.parent,
            custom=True,
            inputs=json_format.MessageToDict(request.properties),
            outputs=json_format.MessageToDict(response.properties),
            id=request.id,
            provider=request.provider,
            read=True,
        )
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        outputs = json_format.MessageToDict(request.outputs)
        if request.urn == self.stack_urn or request.urn.split("::")[2] == STACK_TYPE:
            self.stack_outputs = outputs
        else:
            self.component_outputs[request.urn] = outputs
        return super().RegisterResourceOutputs(request)


@dataclass
class Graph:
    """What one program run registered, sorted by URN, plus the stack outputs."""

    project: str
    stack: str
    resources: list[RecordedResource] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)

    def by_type(self, type_: str) -> list[RecordedResource]:
        return [r for r in self.resources if r.type == type_]

    def named(self, name: str) -> RecordedResource:
        matches = [r for r in self.resources if r.name == name]
        if len(matches) != 1:
            raise KeyError(f"expected one resource named {name!r}, found {len(matches)}")
        return matches[0]

    def one(self, type_: str, name: str | None = None) -> RecordedResource:
        matches = [r for r in self.by_type(type_) if name is None or r.name == name]
        if len(matches) != 1:
            raise KeyError(f"expected one {type_} named {name!r}, found {[r.name for r in matches]}")
        return matches[0]

    def children(self, parent: RecordedResource) -> list[RecordedResource]:
        return [r for r in self.resources if r.parent == parent.urn]

    def get(self, urn: str) -> RecordedResource:
        return next(r for r in self.resources if r.urn == urn)


def record_program(
    program: Callable[[], Any],
    *,
    project: str = "vllm-serving",
    stack: str = "test",
    config: Mapping[str, str] | None = None,
    secret_keys: list[str] | None = None,
    stack_outputs: Mapping[str, Mapping[str, Any]] | None = None,
    preview: bool = False,
) -> Graph:
    """Run `program` under mocks with `config` (fully qualified keys -> strings) and record it.

    `stack_outputs` maps a referenced stack name to the outputs its StackReference returns.
    """
    mocks = EchoMocks(stack_outputs)
    monitor = RecordingMonitor(mocks)
    # A fresh root stack per run: set_mocks reuses an existing one, which would carry the previous
    # run's stack name in parent URNs and its exports.
    pulumi.runtime.settings.ROOT.set(None)
    pulumi.runtime.set_mocks(mocks, project=project, stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(dict(config or {}), secret_keys=list(secret_keys or []))

    captured: dict[str, Any] = {}

    async def _serialize_exports() -> None:
        # Under mocks the root stack registers its outputs before the program runs, so the
        # exports are read from the stack object and serialized the way the engine would.
        root = pulumi.runtime.settings.get_root_resource()
        exports = dict(getattr(root, "outputs", {}) or {})
        captured.update(json_format.MessageToDict(await rpc.serialize_properties(exports, {})))

    @pulumi.runtime.test
    def _run() -> Any:
        program()
        return asyncio.ensure_future(_serialize_exports())

    _run()
    stack_outputs_recorded = captured
    resources = sorted(monitor.recorded.values(), key=lambda r: r.urn)
    for resource in resources:
        if resource.urn in monitor.component_outputs:
            resource.outputs = monitor.component_outputs[resource.urn]
    return Graph(project=project, stack=stack, resources=resources, outputs=stack_outputs_recorded)
