"""The recorded resource graph: what the offline engine captured from one program run.

Owns the plain data shapes shared by the engine (offline/engine.py), the policy host
(offline/policy_host.py), the reports and the tests. No Pulumi imports: a graph is data.

Inputs and outputs are kept in *wire form*: camelCase property names as sent to providers,
secrets as the Pulumi secret envelope, unknowns as the engine's sentinel strings.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SECRET_SIG_KEY = "4dabf18193072939515e22adb298388d"
SECRET_SIG_VALUE = "1b47061264138c4ac30d75fd1eb44270"
RESOURCE_REF_SIG_VALUE = "5cf8f73096256a8f31e491e813e4eb8e"
UNKNOWN_STRING = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

STACK_TYPE = "pulumi:pulumi:Stack"
STACK_REFERENCE_TYPE = "pulumi:pulumi:StackReference"


@dataclass(frozen=True)
class Violation:
    """One policy diagnostic as reported by the pack over the analyzer protocol."""

    policy: str
    level: str  # "mandatory" | "advisory" | "remediate" | "disabled"
    urn: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class RecordedResource:
    """One registration (or read) exactly as the program sent it to the engine."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    inputs: dict[str, Any]
    outputs: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    protect: bool = False
    retain_on_delete: bool = False
    ignore_changes: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    property_dependencies: dict[str, list[str]] = field(default_factory=dict)
    provider: str = ""
    delete_before_replace: bool = False
    additional_secret_outputs: list[str] = field(default_factory=list)
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    aliases: list[Any] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    read: bool = False

    @property
    def provider_urn(self) -> str:
        """The provider reference without its `::<id>` suffix ("" for default providers)."""
        if not self.provider:
            return ""
        return self.provider.rsplit("::", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "id": self.id,
            "inputs": self.inputs,
            "outputs": self.outputs,
            "protect": self.protect,
            "retainOnDelete": self.retain_on_delete,
            "ignoreChanges": self.ignore_changes,
            "dependencies": self.dependencies,
            "propertyDependencies": self.property_dependencies,
            "provider": self.provider,
            "deleteBeforeReplace": self.delete_before_replace,
            "additionalSecretOutputs": self.additional_secret_outputs,
            "customTimeouts": self.custom_timeouts,
            "aliases": self.aliases,
            "replaceOnChanges": self.replace_on_changes,
            "read": self.read,
        }


def unwrap_secrets(value: Any) -> Any:
    """Replace every secret envelope by its plain value (for reports and manifests)."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG_KEY) == SECRET_SIG_VALUE:
            return unwrap_secrets(value.get("value"))
        return {k: unwrap_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unwrap_secrets(v) for v in value]
    return value


def is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(SECRET_SIG_KEY) == SECRET_SIG_VALUE
