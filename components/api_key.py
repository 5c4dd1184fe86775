"""ApiKey: the Kubernetes Secret that holds the vLLM API key of the serving namespace.

Builds, through the explicit Kubernetes provider, one Opaque Secret with the key `api-key`, which
every vLLM container reads as VLLM_API_KEY (vLLM then requires `Authorization: Bearer <key>` on
/v1/*). The value is the user's Pulumi secret when given, otherwise a 48-character alphanumeric
password generated once per stack by `random.RandomPassword` and kept in the stack's state (so it
is stable across updates and differs between stacks). It stays a secret everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as kubernetes
import pulumi_random as random

SECRET_KEY = "api-key"
GENERATED_LENGTH = 48


@dataclass(frozen=True)
class ApiKeyArgs:
    """Inputs of the API-key Secret."""

    namespace: pulumi.Input[str]
    """Serving namespace (ClusterAddons.serving_namespace)."""
    provider: kubernetes.Provider
    """The cluster's provider; never the ambient kubeconfig."""
    api_key: pulumi.Input[str] | None = None
    """The key, from the secret config `vllm-serving:apiKey`. None: generate one per stack (48
    letters and digits, no special characters, so it is safe in headers and shells)."""
    secret_name: str = "vllm-api-key"
    """Name of the Secret. Defaults to vllm-api-key."""


class ApiKey(pulumi.ComponentResource):
    """The vLLM API key as a Kubernetes Secret (and as a Pulumi secret output).

    Use one per serving namespace; every VllmService of the namespace references it.
    """

    secret_name: pulumi.Output[str]
    """Name of the Secret."""
    secret_key: str
    """Key inside the Secret ("api-key")."""
    namespace: pulumi.Output[str]
    """Namespace of the Secret."""
    value: pulumi.Output[str]
    """The API key itself (secret)."""

    def __init__(self, name: str, args: ApiKeyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:api_key:ApiKey", name, None, opts)
        if args.api_key is None:
            generated = random.RandomPassword(
                f"{name}-generated",
                length=GENERATED_LENGTH,
                special=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            value = generated.result
        else:
            value = pulumi.Output.secret(args.api_key)
        secret = kubernetes.core.v1.Secret(
            f"{name}-secret",
            metadata={
                "name": args.secret_name,
                "namespace": args.namespace,
                "labels": {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/component": "api-key"},
            },
            type="Opaque",
            string_data={SECRET_KEY: value},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider),
        )
        self.secret_name = secret.metadata.apply(lambda m: m.name)
        self.secret_key = SECRET_KEY
        self.namespace = pulumi.Output.from_input(args.namespace)
        self.value = pulumi.Output.secret(value)
        self.register_outputs(
            {
                "secretName": self.secret_name,
                "secretKey": self.secret_key,
                "namespace": self.namespace,
                "value": self.value,
            }
        )
