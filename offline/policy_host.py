"""Run a Pulumi policy pack against a recorded graph, speaking the analyzer protocol as the engine does.

Owns the engine's side of `pulumi preview --policy-pack DIR`: start the pack like
pulumi-language-python and read its port; Handshake, ConfigureStack, GetAnalyzerInfo; Configure
with the config reconciled like ReconcilePolicyPackConfig; Analyze every registration (not reads)
with wire-form inputs, options and provider; one AnalyzeStack with every resource's outputs and
dependencies; diagnostics -> sorted `Violation`s. The pack process is terminated on every path.
"""

from __future__ import annotations

import json
import os
import re
import selectors
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import IO, Any

import grpc
import jsonschema
import yaml
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2 as pb
from pulumi.runtime.proto import analyzer_pb2_grpc

from .graph import RESOURCE_REF_SIG_VALUE, SECRET_SIG_KEY, STACK_TYPE, RecordedResource, Violation

ENGINE_ADDRESS = "127.0.0.1:0"  # handed to the pack; `pulumi.policy` never dials it (logs go to stderr)
START_TIMEOUT_SECONDS = 60.0
RPC_TIMEOUT_SECONDS = 120.0
LEVEL_NAMES = {number: name.lower() for name, number in pb.EnforcementLevel.items()}
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 400 * 1024 * 1024)]  # the pack's own limit
_DURATION_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

PolicyConfig = dict[str, tuple[str, dict[str, Any] | None]]  # policy -> (level, properties or None)


class PolicyHostError(RuntimeError):
    """The pack could not be started, its config is invalid, or it did not answer as required."""


@dataclass
class PolicyResult:
    """One analysis: the pack, its policies (effective level and config) and the violations."""

    pack: str
    version: str
    policies: list[dict[str, Any]]
    violations: list[Violation] = field(default_factory=list)

    @property
    def mandatory(self) -> list[Violation]:
        return [v for v in self.violations if v.level == "mandatory"]


def to_wire(value: Any) -> Any:
    """Properties as the engine marshals them for analyzers: a resource reference becomes the
    referenced id (its URN when it has none), `__` internal keys go, secrets and unknowns stay."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG_KEY) == RESOURCE_REF_SIG_VALUE:
            return value.get("id") or value.get("urn", "")
        return {k: to_wire(v) for k, v in value.items() if not k.startswith("__")}
    return [to_wire(v) for v in value] if isinstance(value, list) else value


def duration_seconds(text: str) -> float:
    """A Go duration ("5m", "1h30m", "90s", "0") in seconds, as the engine sends customTimeouts."""
    parts = list(_DURATION_PART.finditer(text))
    if text != "0" and "".join(p.group(0) for p in parts) != text:
        raise PolicyHostError(f"invalid custom timeout {text!r}: expected a Go duration such as '5m'")
    return sum(float(p.group(1)) * _UNIT_SECONDS[p.group(2)] for p in parts)


def alias_urns(resource: RecordedResource, project: str, stack: str) -> list[str]:
    """The alias URNs the engine derives from recorded aliases (URNs, or Alias specs)."""
    urns = []
    for alias in resource.aliases:
        if isinstance(alias, str) or alias.get("urn"):
            urns.append(alias if isinstance(alias, str) else alias["urn"])
            continue
        spec = alias.get("spec", alias)
        parent = "" if spec.get("noParent") else spec.get("parentUrn") or resource.parent
        parent_type = parent.split("::", 3)[2] if parent else STACK_TYPE
        type_ = spec.get("type") or resource.type
        qualified = type_ if parent_type == STACK_TYPE else f"{parent_type}${type_}"
        where = f"urn:pulumi:{spec.get('stack') or stack}::{spec.get('project') or project}"
        urns.append(f"{where}::{qualified}::{spec.get('name') or resource.name}")
    return urns


def _plain(message: Any) -> Any:
    """A protobuf Struct as JSON values; its numbers are doubles, integral ones come back as ints."""
    number = lambda text: int(float(text)) if float(text).is_integer() else float(text)  # noqa: E731
    return json.loads(json_format.MessageToJson(message), parse_float=number)


def reconcile_policy_config(info: pb.AnalyzerInfo, user: Mapping[str, Any] | None) -> PolicyConfig:
    """Declared levels + schema defaults, then the pack's initialConfig, then the user's config
    (level strings or objects with an optional `enforcementLevel`; "all" sets every level); as in
    the engine an entry without a level keeps its level, and each policy's schema must hold."""
    errors: list[str] = []
    result: PolicyConfig = {}
    for policy in info.policies:
        schema = _plain(policy.configSchema.properties)
        defaults = {k: v["default"] for k, v in schema.items() if "default" in v}
        result[policy.name] = (LEVEL_NAMES[policy.enforcementLevel], defaults or None)
    initial = {
        name: (LEVEL_NAMES[entry.enforcementLevel], _plain(entry.properties))
        for name, entry in info.initialConfig.items()
    }
    given: dict[str, tuple[str, dict[str, Any]]] = {}
    for name, value in (user or {}).items():
        if not isinstance(value, str | Mapping):
            errors.append(f"{name}: {value!r} is not a valid value; must be a string or object")
            continue
        entry = {"enforcementLevel": value} if isinstance(value, str) else dict(value)
        level = entry.pop("enforcementLevel", "")
        if level and level not in LEVEL_NAMES.values():
            errors.append(f"{name}: {level!r} is not a valid enforcement level")
        given[name] = (level if level in LEVEL_NAMES.values() else "", entry)
    for layer in (initial, given):
        if layer.get("all", ("",))[0]:
            result = {name: (layer["all"][0], props) for name, (_, props) in result.items()}
        for name, (level, properties) in layer.items():
            old_level, old_properties = result.get(name, ("", None))
            merged = {**(old_properties or {}), **properties} if properties or old_properties else None
            result[name] = (level or old_level, merged)
    for policy in info.policies:
        schema = {"type": "object", **_plain(policy.configSchema)}
        for error in jsonschema.Draft7Validator(schema).iter_errors(result[policy.name][1] or {}):
            errors.append(f"{policy.name}: {error.message}")
    if errors:
        raise PolicyHostError("invalid policy pack config:\n  " + "\n  ".join(sorted(errors)))
    return result


class PolicyHost:
    """One running pack configured for one stack; `analyze` may be called many times."""

    def __init__(
        self,
        pack_dir: Path,
        *,
        project: str,
        stack: str,
        config: Mapping[str, str] | None = None,
        dry_run: bool = True,
        python: str = sys.executable,
        organization: str = "organization",
        start_timeout: float = START_TIMEOUT_SECONDS,
        rpc_timeout: float = RPC_TIMEOUT_SECONDS,
    ) -> None:
        self.pack_dir = Path(pack_dir).resolve()
        self.project, self.stack, self.organization = project, stack, organization
        self.config, self.dry_run, self.python = dict(config or {}), dry_run, python
        self.start_timeout, self.rpc_timeout = start_timeout, rpc_timeout
        self.what = f"policy pack {self.pack_dir}"
        self.info: pb.AnalyzerInfo | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._channel: grpc.Channel | None = None
        self._stub: analyzer_pb2_grpc.AnalyzerStub | None = None
        self._by_urn: dict[str, RecordedResource] = {}  # the graph being analyzed

    def __enter__(self) -> PolicyHost:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Start the pack, connect, and run Handshake, ConfigureStack and GetAnalyzerInfo."""
        env = {**os.environ, "PULUMI_PROJECT": self.project, "PULUMI_STACK": self.stack}
        env["PULUMI_ORGANIZATION"], env["PULUMI_DRY_RUN"] = self.organization, str(self.dry_run).lower()
        env["PULUMI_CONFIG"] = json.dumps(self.config, sort_keys=True)
        command = [self.python, "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, str(self.pack_dir)]
        try:
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
            self._process = subprocess.Popen(
                command, cwd=self.pack_dir, env=env, stdout=subprocess.PIPE, stderr=self._stderr
            )
            port = self._read_port(self._process)
            self._channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=_CHANNEL_OPTIONS)
            try:
                grpc.channel_ready_future(self._channel).result(timeout=self.start_timeout)
            except grpc.FutureTimeoutError:
                raise PolicyHostError(f"{self.what} did not accept connections on port {port}") from None
            self._stub = analyzer_pb2_grpc.AnalyzerStub(self._channel)
            here = str(self.pack_dir)
            handshake = pb.AnalyzerHandshakeRequest(engine_address=ENGINE_ADDRESS, root_directory=here)
            handshake.program_directory = here
            self._call("Handshake", handshake, tolerate_unimplemented=True)
            fields = {"stack": self.stack, "project": self.project, "organization": self.organization}
            stack = pb.AnalyzerStackConfigureRequest(**fields, dry_run=self.dry_run, config=self.config)
            self._call("ConfigureStack", stack, tolerate_unimplemented=True)
            self.info = self._call("GetAnalyzerInfo", empty_pb2.Empty())
        except BaseException:
            self.close()
            raise

    def _read_port(self, process: subprocess.Popen[bytes]) -> int:
        """The pack's first stdout line, read byte by byte as the engine does, as a port number."""
        assert process.stdout is not None
        line = b""
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                byte = os.read(process.stdout.fileno(), 1) if selector.select(self.start_timeout) else None
                if not byte:
                    what = f"printed no port within {self.start_timeout:g}s" if byte is None else "exited"
                    raise PolicyHostError(f"{self.what} {what}{self._stderr_tail()}")
                line += byte
        text = line.decode(errors="replace").strip()
        if not text.isdigit() or not 0 < int(text) < 65536:
            raise PolicyHostError(
                f"{self.what} wrote an invalid port to stdout: {text!r}{self._stderr_tail()}"
            )
        return int(text)

    def _stderr_tail(self) -> str:
        assert self._stderr is not None
        self._stderr.seek(0)
        tail = self._stderr.read()[-4000:].decode(errors="replace").strip()
        return f"\n--- policy pack stderr ---\n{tail}" if tail else ""

    def _call(self, method: str, request: Any, *, tolerate_unimplemented: bool = False) -> Any:
        if self._stub is None:
            raise PolicyHostError(f"{self.what} is not running; use PolicyHost as a context manager")
        try:
            return getattr(self._stub, method)(request, timeout=self.rpc_timeout)
        except grpc.RpcError as error:
            code = error.code()  # type: ignore[attr-defined]
            if tolerate_unimplemented and code == grpc.StatusCode.UNIMPLEMENTED:
                return None
            reason = f"failed ({code.name}): {error.details()}"  # type: ignore[attr-defined]
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                reason = f"timed out after {self.rpc_timeout:g}s"
            raise PolicyHostError(f"{self.what}: {method} {reason}{self._stderr_tail()}") from None

    def close(self) -> None:
        """Close the channel, then terminate and reap the pack process."""
        if self._channel is not None:
            self._channel.close()
            self._channel, self._stub = None, None
        if self._process is not None:
            process, self._process = self._process, None
            with process:  # closes stdout and reaps the process on exit
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def analyze(
        self, resources: Sequence[RecordedResource], *, policy_config: Mapping[str, Any] | None = None
    ) -> PolicyResult:
        """Configure the pack with `policy_config` (as --policy-pack-config) and analyze the graph."""
        if self.info is None:
            raise PolicyHostError(f"{self.what} is not running; use PolicyHost as a context manager")
        reconciled = reconcile_policy_config(self.info, policy_config)
        configs = {
            name: pb.PolicyConfig(enforcementLevel=pb.EnforcementLevel.Value(level.upper()))
            for name, (level, _) in reconciled.items()
        }
        for name, (_, properties) in reconciled.items():
            configs[name].properties.update(properties or {})
        self._call("Configure", pb.ConfigureAnalyzerRequest(policyConfig=configs))
        graph = self._as_engine_state(resources)
        self._by_urn = {r.urn: r for r in graph}
        violations: set[Violation] = set()
        for resource in graph:
            if not resource.read:  # reads (StackReference, .get) only appear in AnalyzeStack
                request = pb.AnalyzeRequest(**self._fields(resource, resource.inputs))
                violations.update(self._violations(self._call("Analyze", request), resource.urn))
        stack_request = pb.AnalyzeStackRequest()
        for r in graph:
            message = stack_request.resources.add(**self._fields(r, r.outputs), parent=r.parent)
            message.dependencies.extend(r.dependencies)
            for key, urns in r.property_dependencies.items():
                message.propertyDependencies[key].urns.extend(urns)
        violations.update(self._violations(self._call("AnalyzeStack", stack_request), None))
        manifest = yaml.safe_load((self.pack_dir / "PulumiPolicy.yaml").read_text())
        return PolicyResult(
            pack=self.info.name,
            version=str(manifest.get("version", "")),  # the CLI reports the manifest's version
            policies=[_describe(policy, reconciled) for policy in self.info.policies],
            violations=sorted(violations, key=lambda v: (v.policy, v.urn, v.message, v.level)),
        )

    def _as_engine_state(self, resources: Sequence[RecordedResource]) -> list[RecordedResource]:
        """The graph as the engine holds it: a root stack parents top-level resources; outputs carry ids."""
        graph: list[RecordedResource] = []
        root = next((r.urn for r in resources if r.type == STACK_TYPE), "")
        if not root:
            name = f"{self.project}-{self.stack}"
            root = f"urn:pulumi:{self.stack}::{self.project}::{STACK_TYPE}::{name}"
            graph.append(RecordedResource(root, STACK_TYPE, name, parent="", custom=False, inputs={}))
        for r in resources:
            outputs = {"id": r.id, **r.outputs} if r.custom and r.id and "id" not in r.outputs else r.outputs
            graph.append(replace(r, parent=r.parent or ("" if r.urn == root else root), outputs=outputs))
        return graph

    def _fields(self, resource: RecordedResource, properties: Mapping[str, Any]) -> dict[str, Any]:
        """What AnalyzeRequest and AnalyzerResource share: identity, properties, options, provider.
        The recording keeps deleteBeforeReplace as a bool, so only True is known to be defined."""
        options = pb.AnalyzerResourceOptions(
            protect=resource.protect,
            ignoreChanges=resource.ignore_changes,
            deleteBeforeReplace=resource.delete_before_replace,
            deleteBeforeReplaceDefined=resource.delete_before_replace,
            additionalSecretOutputs=resource.additional_secret_outputs,
            aliases=alias_urns(resource, self.project, self.stack),
            parent=resource.parent,
        )
        if timeouts := {k: duration_seconds(v) for k, v in resource.custom_timeouts.items() if v}:
            options.customTimeouts.CopyFrom(pb.AnalyzerResourceOptions.CustomTimeouts(**timeouts))
        return {
            "type": resource.type,
            "properties": json_format.ParseDict(to_wire(dict(properties)), struct_pb2.Struct()),
            "urn": resource.urn,
            "name": resource.name,
            "options": options,
            "provider": self._provider(resource),
        }

    def _provider(self, resource: RecordedResource) -> pb.AnalyzerProviderResource | None:
        """The explicit provider as recorded, or the default provider the engine would create."""
        if not resource.custom or resource.type.startswith("pulumi:providers:"):
            return None
        if urn := resource.provider_urn:
            recorded = self._by_urn.get(urn)
            _, _, qualified, name = urn.split("::", 3)
            provider = pb.AnalyzerProviderResource(type=qualified.split("$")[-1], urn=urn, name=name)
            provider.properties.update(to_wire(recorded.inputs) if recorded else {})
            return provider
        package = resource.type.split(":", 1)[0]
        try:  # default providers are named after the SDK version; the builtin `pulumi` one is `default`
            version = "" if package == "pulumi" else metadata.version(f"pulumi-{package}")
        except metadata.PackageNotFoundError:
            version = ""
        name = "default_" + re.sub(r"[.\-+]", "_", version) if version else "default"
        urn = f"urn:pulumi:{self.stack}::{self.project}::pulumi:providers:{package}::{name}"
        provider = pb.AnalyzerProviderResource(type=f"pulumi:providers:{package}", urn=urn, name=name)
        settings = {k.split(":", 1)[1]: v for k, v in self.config.items() if k.startswith(package + ":")}
        provider.properties.update(settings | ({"version": version} if version else {}))
        return provider

    def _violations(self, response: pb.AnalyzeResponse, urn: str | None) -> list[Violation]:
        """Diagnostics on the engine's URNs: the analyzed resource, else the named one, else the root stack."""
        root = next(r.urn for r in self._by_urn.values() if r.type == STACK_TYPE)
        levels = {**LEVEL_NAMES, pb.REMEDIATE: "mandatory"}  # a violation left after remediation blocks
        found = []
        for d in response.diagnostics:
            target = urn or (d.urn if d.urn in self._by_urn else root)
            found.append(Violation(d.policyName, levels[d.enforcementLevel], target, d.message))
        return found


def _describe(policy: pb.PolicyInfo, reconciled: PolicyConfig) -> dict[str, Any]:
    """A policy as reported: its effective level and config after reconciliation."""
    level, properties = reconciled[policy.name]
    return {
        "name": policy.name,
        "description": policy.description,
        "type": "stack" if policy.policy_type == pb.POLICY_TYPE_STACK else "resource",
        "enforcementLevel": level,
        "severity": pb.PolicySeverity.Name(policy.severity).removeprefix("POLICY_SEVERITY_").lower(),
        "remediationSteps": policy.remediation_steps,
        "config": properties or {},
    }


def analyze_graph(
    resources: Sequence[RecordedResource],
    *,
    pack_dir: Path,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    policy_config: Mapping[str, Any] | None = None,
    dry_run: bool = True,
    python: str = sys.executable,
    organization: str = "organization",
) -> PolicyResult:
    """Start the pack, analyze `resources` once (Analyze per registration, then AnalyzeStack), stop it."""
    options = {"config": config, "dry_run": dry_run, "python": python, "organization": organization}
    with PolicyHost(pack_dir, project=project, stack=stack, **options) as host:
        return host.analyze(resources, policy_config=policy_config)
