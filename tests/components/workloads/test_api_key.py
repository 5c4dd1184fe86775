"""ApiKey: the API-key Secret, from the user's secret or generated once per stack.

Checks the generated password (48 characters, no specials), that the Secret carries the key as a
secret in wire form under `api-key` in the given namespace through the explicit provider, the
outputs (the value stays secret), and that a user key is used as it is with nothing generated.
"""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as kubernetes

from components.api_key import ApiKey, ApiKeyArgs
from offline.graph import is_secret, unwrap_secrets
from offline.recorder import Graph, record_program
from offline.validate import manifest_from_recorded, validate_manifest

SECRET_TYPE = "kubernetes:core/v1:Secret"
RANDOM_TYPE = "random:index/randomPassword:RandomPassword"


def record(api_key: str | None) -> Graph:
    def program() -> None:
        provider = kubernetes.Provider("k8s", kubeconfig="{}")
        value = None if api_key is None else pulumi.Output.secret(api_key)
        ApiKey("api-key", ApiKeyArgs(namespace="vllm", provider=provider, api_key=value))

    return record_program(program)


def test_generated_key_is_48_alphanumerics() -> None:
    graph = record(None)
    password = graph.one(RANDOM_TYPE)
    assert password.inputs["length"] == 48, password.urn
    assert password.inputs["special"] is False, password.urn
    assert password.parent == graph.one("vllm-serving:api_key:ApiKey").urn, password.urn


def test_secret_holds_the_key_as_a_secret_through_the_provider() -> None:
    graph = record(None)
    secret = graph.one(SECRET_TYPE)
    assert secret.inputs["metadata"]["name"] == "vllm-api-key", secret.urn
    assert secret.inputs["metadata"]["namespace"] == "vllm", secret.urn
    assert secret.inputs["type"] == "Opaque", secret.urn
    assert is_secret(secret.inputs["stringData"]), secret.urn
    assert list(unwrap_secrets(secret.inputs["stringData"])) == ["api-key"], secret.urn
    assert secret.provider_urn == graph.one("pulumi:providers:kubernetes").urn, secret.urn
    assert validate_manifest(manifest_from_recorded(secret)) == []


def test_outputs_name_the_secret_and_keep_the_value_secret() -> None:
    graph = record(None)
    outputs = graph.one("vllm-serving:api_key:ApiKey").outputs
    assert outputs["secretName"] == "vllm-api-key"
    assert outputs["secretKey"] == "api-key"
    assert outputs["namespace"] == "vllm"
    assert is_secret(outputs["value"])


def test_user_key_is_used_and_nothing_is_generated() -> None:
    graph = record("k-123")
    assert graph.by_type(RANDOM_TYPE) == []
    secret = graph.one(SECRET_TYPE)
    assert unwrap_secrets(secret.inputs["stringData"]) == {"api-key": "k-123"}, secret.urn
    assert is_secret(secret.inputs["stringData"]), secret.urn
