"""A project that consumes a vllm-serving stack: reads its endpoint and API key by StackReference
and runs a client Job that calls `/v1/models` with the key. Wiring only; see consumer/."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from consumer.config import NAMESPACE, ConsumerConfigError, parse_settings
from consumer.job import (
    API_KEY_SECRET,
    API_KEY_SECRET_KEY,
    LABELS,
    client_egress_spec,
    default_deny_spec,
    job_name,
    job_spec,
    namespace_labels,
)
from consumer.serving import ServingEndpoint, ServingStackError, require_kubeconfig, select_endpoint

config = pulumi.Config(NAMESPACE)
keys = ("servingStack", "model", "namespace", "useServingStackKubeconfig")
try:
    settings = parse_settings({key: config.get(key) for key in keys})
except ConsumerConfigError as err:
    raise pulumi.RunError(str(err)) from None

stack = settings.serving_stack
serving = pulumi.StackReference("serving", stack_name=stack)


def _checked(check: Any) -> Any:
    """Run a check of the serving stack's outputs; its error ends the run with its message only."""
    try:
        return check()
    except ServingStackError as err:
        raise pulumi.RunError(str(err)) from None


endpoint: pulumi.Output[ServingEndpoint] = pulumi.Output.all(
    serving.get_output("contractVersion"),
    serving.get_output("endpoints"),
    serving.get_output("clientNamespaces"),
).apply(
    lambda v: _checked(
        lambda: select_endpoint(
            stack,
            contract_version=v[0],
            endpoints=v[1],
            client_namespaces=v[2],
            model=settings.model,
            client_namespace=settings.namespace,
        )
    )
)

kubeconfig = (
    serving.get_output("kubeconfig").apply(lambda k: _checked(lambda: require_kubeconfig(stack, k)))
    if settings.use_serving_stack_kubeconfig
    else None
)
provider = k8s.Provider("serving-cluster", kubeconfig=kubeconfig)
in_cluster = pulumi.ResourceOptions(provider=provider)

namespace = k8s.core.v1.Namespace(
    "clients",
    metadata={"name": settings.namespace, "labels": namespace_labels()},
    opts=in_cluster,
)
ns_name = namespace.metadata.name
k8s.networking.v1.NetworkPolicy(
    "default-deny",
    metadata={"name": "default-deny", "namespace": ns_name, "labels": LABELS},
    spec=default_deny_spec(),
    opts=in_cluster,
)
egress = k8s.networking.v1.NetworkPolicy(
    "client-egress",
    metadata={"name": "vllm-client-egress", "namespace": ns_name, "labels": LABELS},
    spec=endpoint.apply(client_egress_spec),
    opts=in_cluster,
)
# A Secret is read only in its own namespace: the client gets its own copy of the key.
api_key = k8s.core.v1.Secret(
    "api-key",
    metadata={"name": API_KEY_SECRET, "namespace": ns_name, "labels": LABELS},
    type="Opaque",
    string_data={API_KEY_SECRET_KEY: pulumi.Output.secret(serving.require_output("apiKey"))},
    opts=in_cluster,
)
job = k8s.batch.v1.Job(
    "list-models",
    metadata={"name": endpoint.apply(lambda e: job_name(e.model)), "namespace": ns_name, "labels": LABELS},
    spec=endpoint.apply(job_spec),
    # The provider waits for the Job to complete: `pulumi up` fails if the endpoint does not answer.
    # A changed spec replaces the Job (its template is immutable); the fixed name needs delete first.
    opts=pulumi.ResourceOptions(
        provider=provider,
        depends_on=[egress, api_key],
        delete_before_replace=True,
        custom_timeouts=pulumi.CustomTimeouts(create="25m", update="25m"),
    ),
)

pulumi.export("namespace", ns_name)
pulumi.export("jobName", job.metadata.name)
pulumi.export("model", endpoint.apply(lambda e: e.model))
pulumi.export("baseUrl", endpoint.apply(lambda e: e.base_url))
pulumi.export("servedModelName", endpoint.apply(lambda e: e.served_model_name))
