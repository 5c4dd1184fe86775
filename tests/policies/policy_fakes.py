"""Test doubles for the policy pack: validator arguments as the SDK builds them, a collecting
`report`, and small recorded graphs for end-to-end runs through `offline.policy_host`.

Validator arguments wrap props in the SDK's unknown-checking proxies, exactly as the pack
receives them over gRPC, so direct calls see the same `Mapping`/`Sequence` types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import unknown_checking_proxy

from offline.graph import RESOURCE_REF_SIG_VALUE, SECRET_SIG_KEY, SECRET_SIG_VALUE, RecordedResource

PROJECT = "vllm-serving"
STACK = "test"
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{PROJECT}::{type_}::{name}"


@dataclass
class Reports:
    """A `report` callback that keeps every `(message, urn)` it is given."""

    calls: list[tuple[str, str | None]] = field(default_factory=list)

    def __call__(self, message: str, urn: str | None = None) -> None:
        self.calls.append((message, urn))

    @property
    def messages(self) -> list[str]:
        return [message for message, _ in self.calls]


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


def resource_args(
    type_: str,
    props: Mapping[str, Any],
    *,
    name: str = "subject",
    config: Mapping[str, Any] | None = None,
) -> ResourceValidationArgs:
    """What the SDK passes a resource validator for one registration."""
    return ResourceValidationArgs(
        type_, unknown_checking_proxy(dict(props)), urn(type_, name), name, _options(), None, config
    )


def check(validator: Any, type_: str, props: Mapping[str, Any], **kwargs: Any) -> list[str]:
    """Run a resource validator on one resource and return the messages it reported."""
    reports = Reports()
    validator(resource_args(type_, props, **kwargs), reports)
    return reports.messages


def policy_resource(
    type_: str,
    name: str,
    props: Mapping[str, Any],
    *,
    deps: Mapping[str, list[PolicyResource]] | None = None,
    provider_props: Mapping[str, Any] | None = None,
) -> PolicyResource:
    """One resource as a stack validator sees it (props = outputs, with an `id` for customs)."""
    provider = None
    if provider_props is not None:
        provider = PolicyProviderResource(
            "pulumi:providers:kubernetes", unknown_checking_proxy(dict(provider_props)), "k8s-urn", "k8s"
        )
    resource = PolicyResource(
        type_, unknown_checking_proxy(dict(props)), urn(type_, name), name, _options(), provider, None, [], {}
    )
    resource.property_dependencies.update({k: list(v) for k, v in (deps or {}).items()})
    return resource


def check_stack(
    validator: Any, resources: list[PolicyResource], config: Mapping[str, Any] | None = None
) -> list[tuple[str, str | None]]:
    """Run a stack validator and return the `(message, urn)` pairs it reported."""
    reports = Reports()
    validator(StackValidationArgs(resources, config), reports)
    return reports.calls


def recorded(
    type_: str,
    name: str,
    inputs: Mapping[str, Any],
    *,
    deps: Mapping[str, list[str]] | None = None,
    parent: str = "",
    provider: str = "",
    read: bool = False,
    outputs: Mapping[str, Any] | None = None,
) -> RecordedResource:
    """A registration as the offline engine records it; outputs echo the inputs (mocks do)."""
    return RecordedResource(
        urn=urn(type_, name),
        type=type_,
        name=name,
        parent=parent,
        custom=True,
        inputs=dict(inputs),
        outputs=dict(inputs if outputs is None else outputs),
        id=f"{name}-id",
        dependencies=sorted({u for urns in (deps or {}).values() for u in urns}),
        property_dependencies={k: list(v) for k, v in (deps or {}).items()},
        provider=provider,
        read=read,
    )


def ref(resource: RecordedResource) -> dict[str, Any]:
    """A resource reference in wire form (what the SDK sends when a resource object is an input)."""
    return {
        SECRET_SIG_KEY: RESOURCE_REF_SIG_VALUE,
        "urn": resource.urn,
        "id": resource.id,
        "packageVersion": "",
    }


def secret(value: Any) -> dict[str, Any]:
    """A secret value in wire form."""
    return {SECRET_SIG_KEY: SECRET_SIG_VALUE, "value": value}
