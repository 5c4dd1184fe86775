"""What the consumer needs from a vllm-serving stack's outputs (its contract, docs/outputs.md).

Owns picking one model's endpoint and checking that the client's namespace may call it. Pure:
takes the plain output values; a problem raises `ServingStackError` naming the stack and the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SUPPORTED_CONTRACT_VERSIONS = ("1",)


class ServingStackError(ValueError):
    """The serving stack's outputs do not give what the consumer needs."""


@dataclass(frozen=True)
class ServingEndpoint:
    model: str
    """Model name in the serving stack (a key of `endpoints`)."""
    base_url: str
    """In-cluster OpenAI base URL, ending in /v1."""
    served_model_name: str
    """The id /v1/models lists and requests name."""
    namespace: str
    """Namespace of the serving pods."""


def select_endpoint(
    stack: str,
    *,
    contract_version: Any,
    endpoints: Any,
    client_namespaces: Any,
    model: str,
    client_namespace: str,
) -> ServingEndpoint:
    """The endpoint of `model` (or of the only model when `model` is ""), for a client in
    `client_namespace`."""
    if contract_version is None or endpoints is None:
        missing = "contractVersion" if contract_version is None else "endpoints"
        raise ServingStackError(
            f"stack {stack} has no output {missing!r}: is it a vllm-serving stack, and has it been "
            "deployed (`pulumi up`)? Check vllm-serving-consumer:servingStack"
        )
    if str(contract_version) not in SUPPORTED_CONTRACT_VERSIONS:
        raise ServingStackError(
            f"stack {stack} exports output contract {contract_version!r}; this consumer reads "
            f"version {', '.join(SUPPORTED_CONTRACT_VERSIONS)} (see docs/outputs.md)"
        )
    endpoint = _endpoint_of(stack, endpoints, model)
    if client_namespaces is None:
        raise ServingStackError(
            f"stack {stack} has no output 'clientNamespaces' (it predates that output): run `pulumi up` "
            "there so the consumer can check that its namespace may call the API"
        )
    allowed = _namespaces(client_namespaces)
    if client_namespace not in allowed:
        raise ServingStackError(
            f"namespace {client_namespace!r} may not call stack {stack}: its NetworkPolicies admit "
            f"clientNamespaces {allowed or '[]'}; add it to vllm-serving:serving.clientNamespaces there "
            "or set vllm-serving-consumer:namespace to one of them"
        )
    return endpoint


def _endpoint_of(stack: str, endpoints: Mapping[str, Any], model: str) -> ServingEndpoint:
    names = sorted(endpoints)
    if not model:
        if len(names) != 1:
            raise ServingStackError(
                f"stack {stack} serves {len(names)} models ({', '.join(names) or 'none'}); "
                "set vllm-serving-consumer:model to one of them"
            )
        model = names[0]
    if model not in endpoints:
        raise ServingStackError(
            f"vllm-serving-consumer:model {model!r} is not served by stack {stack}; "
            f"its endpoints are: {', '.join(names) or 'none'}"
        )
    entry = endpoints[model]
    for key in ("baseUrl", "servedModelName", "namespace"):
        if not entry.get(key):
            raise ServingStackError(f"stack {stack}: endpoints.{model}.{key} is missing or empty")
    return ServingEndpoint(
        model=model,
        base_url=entry["baseUrl"],
        served_model_name=entry["servedModelName"],
        namespace=entry["namespace"],
    )


def _namespaces(value: Any) -> list[str]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return sorted(str(v) for v in value)
    return []


def require_kubeconfig(stack: str, kubeconfig: Any) -> str:
    """The serving stack's kubeconfig, or an error saying how to use one's own."""
    if not isinstance(kubeconfig, str) or not kubeconfig:
        raise ServingStackError(
            f"stack {stack} exports no kubeconfig (platform existing); set "
            "vllm-serving-consumer:useServingStackKubeconfig false to use your own kubeconfig"
        )
    return kubeconfig
