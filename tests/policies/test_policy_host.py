"""The policy host against the engine's contract, using a probe pack that reports what it receives:
the PULUMI_* environment and ConfigureStack, Analyze for registrations only (not reads) with
wire-form inputs, options (aliases as URNs, custom timeouts in seconds) and explicit or default
providers, AnalyzeStack with outputs (ids added), parents (the root stack for top-level resources)
and property dependencies; plus the pure pieces (Go durations, alias URNs, resource references,
config reconciliation) and start-up failures (no port, a bad port, a crash) that leave no process."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from pulumi.runtime.proto import analyzer_pb2 as pb

from offline.graph import RecordedResource
from offline.policy_host import (
    PolicyHost,
    PolicyHostError,
    alias_urns,
    duration_seconds,
    reconcile_policy_config,
    to_wire,
)
from tests.policies.policy_fakes import PROJECT, STACK, recorded, ref, secret, urn

PROBE = """
import json, os
from collections.abc import Mapping, Sequence
import pulumi
from pulumi_policy import EnforcementLevel, PolicyPack, ResourceValidationPolicy, StackValidationPolicy

def plain(value):
    if isinstance(value, Mapping):
        return {k: plain(value[k]) for k in value}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return value

def echo(args, report):
    t = args.opts.custom_timeouts
    provider = args.provider and {"type": args.provider.resource_type, "urn": args.provider.urn,
                                  "name": args.provider.name, "props": plain(args.provider.props)}
    report(json.dumps({"name": args.name, "props": plain(args.props), "protect": args.opts.protect,
                       "ignore": list(args.opts.ignore_changes), "dbr": args.opts.delete_before_replace,
                       "aliases": list(args.opts.aliases), "timeouts": [t.create_seconds, t.delete_seconds],
                       "parent": args.opts.parent, "provider": provider, "config": args.get_config()}))

def echo_stack(args, report):
    for r in args.resources:
        report(json.dumps({"props": plain(r.props), "parent": r.parent and r.parent.urn,
                           "deps": {k: [d.urn for d in v] for k, v in r.property_dependencies.items()}}), r.urn)
    report(json.dumps({"project": pulumi.get_project(), "stack": pulumi.get_stack(),
                       "org": pulumi.get_organization(), "dry_run": pulumi.runtime.is_dry_run(),
                       "region": pulumi.runtime.get_config("aws:region"), "cwd": os.getcwd()}))

PolicyPack("probe", [ResourceValidationPolicy("echo", "echo", validate=echo),
                     StackValidationPolicy("echo-stack", "echo", validate=echo_stack)],
           enforcement_level=EnforcementLevel.ADVISORY, initial_config={"echo": {"enforcementLevel": EnforcementLevel.MANDATORY, "k": 1}})
"""


def _pack(directory: Path, main: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "PulumiPolicy.yaml").write_text("runtime: python\nversion: 1.2.3\n")
    (directory / "__main__.py").write_text(textwrap.dedent(main))
    return directory


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PolicyHost]:
    pack = _pack(tmp_path_factory.mktemp("probe"), PROBE)
    with PolicyHost(
        pack, project=PROJECT, stack=STACK, config={"aws:region": "eu-west-1"}, dry_run=False
    ) as host:
        yield host


def _graph() -> list[RecordedResource]:
    provider = recorded("pulumi:providers:kubernetes", "k8s", {"kubeconfig": secret("cfg")})
    component = RecordedResource(
        urn(PROJECT + ":store:Store", "store"), PROJECT + ":store:Store", "store", "", False, {"size": 1}
    )
    bucket = recorded("aws:s3/bucket:Bucket", "b", {"tags": {"a": "b"}}, parent=component.urn)
    bucket.urn = f"urn:pulumi:{STACK}::{PROJECT}::{PROJECT}:store:Store$aws:s3/bucket:Bucket::b"
    bucket.protect, bucket.ignore_changes, bucket.delete_before_replace = True, ["tags"], True
    bucket.custom_timeouts = {"create": "5m", "delete": "1h30m"}
    bucket.aliases = [{"spec": {"name": "old-b"}}, {"urn": "urn:pulumi:test::p::t::x"}]
    ns = recorded(
        "kubernetes:core/v1:Namespace", "ns", {"owner": ref(bucket)}, provider=f"{provider.urn}::k8s-id"
    )
    ns.property_dependencies = {"owner": [bucket.urn]}
    reference = recorded(
        "pulumi:pulumi:StackReference", "net", {"name": "n"}, outputs={"outputs": {"a": 1}}, read=True
    )
    return [provider, component, bucket, ns, reference]


def _echoes(host: PolicyHost, policy: str) -> dict[str, list[dict]]:
    """What the probe reported, by the URN the host attributed it to."""
    echoes: dict[str, list[dict]] = {}
    for v in host.analyze(_graph()).violations:
        if v.policy == policy:
            echoes.setdefault(v.urn, []).append(json.loads(v.message.split("\n", 1)[1]))
    return echoes


def test_analyze_gets_registrations_with_options_and_providers(probe: PolicyHost) -> None:
    echoes = _echoes(probe, "echo")
    component, bucket, ns, k8s = (
        urn(PROJECT + ":store:Store", "store"),
        f"urn:pulumi:{STACK}::{PROJECT}::{PROJECT}:store:Store$aws:s3/bucket:Bucket::b",
        urn("kubernetes:core/v1:Namespace", "ns"),
        urn("pulumi:providers:kubernetes", "k8s"),
    )
    root = urn("pulumi:pulumi:Stack", f"{PROJECT}-{STACK}")
    assert set(echoes) == {root, k8s, component, bucket, ns}  # no read
    assert echoes[bucket] == [
        {
            "name": "b",
            "props": {"tags": {"a": "b"}},
            "protect": True,
            "ignore": ["tags"],
            "dbr": True,
            "aliases": [
                f"urn:pulumi:{STACK}::{PROJECT}::{PROJECT}:store:Store$aws:s3/bucket:Bucket::old-b",
                "urn:pulumi:test::p::t::x",
            ],
            "timeouts": [300.0, 5400.0],
            "parent": component,
            "provider": {
                "type": "pulumi:providers:aws",
                "urn": f"urn:pulumi:{STACK}::{PROJECT}::pulumi:providers:aws::default_7_51_1",
                "name": "default_7_51_1",
                "props": {"region": "eu-west-1", "version": "7.51.1"},
            },
            "config": {"k": 1.0},
        }
    ]
    [namespace], [component_echo], [provider_echo] = echoes[ns], echoes[component], echoes[k8s]
    assert namespace["props"] == {"owner": "b-id"}
    assert namespace["provider"] == {
        "type": "pulumi:providers:kubernetes",
        "urn": k8s,
        "name": "k8s",
        "props": {"kubeconfig": "cfg"},
    }
    assert component_echo["provider"] is None and provider_echo["provider"] is None
    assert component_echo["parent"] == root


def test_analyze_stack_gets_outputs_parents_dependencies_and_the_environment(probe: PolicyHost) -> None:
    echoes = _echoes(probe, "echo-stack")
    root = urn("pulumi:pulumi:Stack", f"{PROJECT}-{STACK}")
    bucket = f"urn:pulumi:{STACK}::{PROJECT}::{PROJECT}:store:Store$aws:s3/bucket:Bucket::b"
    reference = urn("pulumi:pulumi:StackReference", "net")
    assert echoes[bucket] == [
        {
            "props": {"tags": {"a": "b"}, "id": "b-id"},
            "parent": urn(PROJECT + ":store:Store", "store"),
            "deps": {},
        }
    ]
    assert echoes[reference] == [
        {"props": {"outputs": {"a": 1.0}, "id": "net-id"}, "parent": root, "deps": {}}
    ]
    assert echoes[urn("kubernetes:core/v1:Namespace", "ns")][0]["deps"] == {"owner": [bucket]}
    environment = {
        "project": PROJECT,
        "stack": STACK,
        "org": "organization",
        "dry_run": False,
        "region": "eu-west-1",
        "cwd": str(probe.pack_dir),
    }
    assert echoes[root] == [environment, {"props": {}, "parent": None, "deps": {}}]  # sorted by message


def test_levels_come_from_the_pack_its_initial_config_and_the_user(probe: PolicyHost) -> None:
    result = probe.analyze([], policy_config={"echo-stack": {"extra": True}})
    assert (result.pack, result.version) == ("probe", "1.2.3")
    assert [(p["name"], p["enforcementLevel"], p["config"]) for p in result.policies] == [
        ("echo", "mandatory", {"k": 1}),
        ("echo-stack", "advisory", {"extra": True}),
    ]


def test_go_durations() -> None:
    assert [duration_seconds(t) for t in ("5m", "1h30m", "1.5s", "250ms", "0")] == [
        300.0,
        5400.0,
        1.5,
        0.25,
        0.0,
    ]
    with pytest.raises(PolicyHostError, match="invalid custom timeout '5 minutes'"):
        duration_seconds("5 minutes")


def test_alias_specs_become_urns() -> None:
    parent = urn("vllm-serving:net:Net", "n")
    child = RecordedResource(f"{parent}$x", "aws:ec2/vpc:Vpc", "vpc", parent, True, {})
    child.aliases = [{"spec": {"noParent": True}}, {"spec": {"name": "v", "project": "other"}}]
    assert alias_urns(child, PROJECT, STACK) == [
        urn("aws:ec2/vpc:Vpc", "vpc"),
        "urn:pulumi:test::other::vllm-serving:net:Net$aws:ec2/vpc:Vpc::v",
    ]


def test_wire_form_strips_references_and_internal_keys_but_keeps_secrets() -> None:
    component = RecordedResource(urn("t:m:C", "c"), "t:m:C", "c", "", False, {})
    value = {"a": [ref(component)], "__defaults": [], "s": secret("x")}
    assert to_wire(value) == {"a": [component.urn], "s": secret("x")}


def _info(*policies: pb.PolicyInfo, initial: dict[str, pb.PolicyConfig] | None = None) -> pb.AnalyzerInfo:
    return pb.AnalyzerInfo(name="p", policies=list(policies), initialConfig=initial or {})


def test_reconcile_like_the_engine() -> None:
    schema = pb.PolicyConfigSchema()
    schema.properties.update({"n": {"type": "integer", "default": 2}})
    info = _info(
        pb.PolicyInfo(name="a", enforcementLevel=pb.MANDATORY, configSchema=schema),
        pb.PolicyInfo(name="b", enforcementLevel=pb.MANDATORY),
        initial={"b": pb.PolicyConfig()},  # no level on the wire is 0: the engine reads advisory
    )
    assert reconcile_policy_config(info, None) == {"a": ("mandatory", {"n": 2}), "b": ("advisory", None)}
    assert reconcile_policy_config(info, {"a": {"n": 3}, "all": "disabled", "b": "remediate"}) == {
        "a": ("disabled", {"n": 3}),
        "b": ("remediate", None),
        "all": ("disabled", None),
    }
    with pytest.raises(
        PolicyHostError, match=r"a: 'x' is not of type 'integer'\n  b: 5 is not a valid value"
    ):
        reconcile_policy_config(info, {"a": {"n": "x"}, "b": 5})


@pytest.mark.parametrize(
    ("script", "error"),
    [
        ("exec sleep 60", "printed no port within 1s"),
        ("echo hello; exec sleep 60", "wrote an invalid port to stdout: 'hello'"),
        ("echo broken pack >&2; exit 3", "exited\n--- policy pack stderr ---\nbroken pack"),
    ],
)
def test_start_failures_are_clear_and_leave_no_process(tmp_path: Path, script: str, error: str) -> None:
    """A stand-in interpreter records its pid in the pack dir (the cwd), then misbehaves."""
    pack = _pack(tmp_path / "bad", "")
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho $$ > pid\n{script}\n")
    python.chmod(0o755)
    host = PolicyHost(pack, project=PROJECT, stack=STACK, python=str(python), start_timeout=1)
    with pytest.raises(PolicyHostError) as raised:
        host.start()
    assert str(raised.value) == f"policy pack {pack} {error}"
    with pytest.raises(ProcessLookupError):
        os.kill(int((pack / "pid").read_text()), 0)
    with pytest.raises(PolicyHostError, match="is not running"):
        host.analyze([])
