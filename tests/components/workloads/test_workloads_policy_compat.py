"""The in-cluster objects of each shipped stack pass the project's policy pack rules.

Records ClusterAddons, ApiKey and one VllmService per planned model (wired as the program wires
them) and runs the pack's validators on them directly, as the engine would pass them:
`pod-security`, `vllm-api-key-from-secret`, `k8s-service-internal` per resource, and the
`vllm-network-isolation` stack policy over everything. Any report fails with the URN it names.
"""

from __future__ import annotations

from typing import Any

import pulumi_kubernetes as kubernetes
import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.proxy import unknown_checking_proxy

from components.api_key import ApiKey, ApiKeyArgs
from components.cluster_addons import ClusterAddons
from components.vllm_service import VllmService
from offline.graph import RecordedResource, unwrap_secrets
from offline.recorder import Graph, record_program
from policies.isolation_rules import vllm_network_isolation
from policies.workload_rules import k8s_service_internal, pod_security, vllm_api_key_from_secret
from tests.components.workloads.workload_fixtures import addons_args, planned, service_args

RESOURCE_RULES = (pod_security, vllm_api_key_from_secret, k8s_service_internal)


def record_stack(stack: str) -> Graph:
    settings, plan = planned(stack)

    def program() -> None:
        provider = kubernetes.Provider("k8s", kubeconfig="{}")
        addons = ClusterAddons("addons", addons_args(settings, plan, provider))
        key = ApiKey("api-key", ApiKeyArgs(namespace=addons.serving_namespace, provider=provider))
        for served in plan.models:
            name = served.settings.name
            args = service_args(
                settings,
                plan,
                name,
                provider,
                namespace=addons.serving_namespace,
                api_key_secret_name=key.secret_name,
                depends_on=addons.workload_dependencies,
            )
            VllmService(name, args)

    return record_program(program, stack=stack)


def _options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [], None)


def _props(value: dict[str, Any]) -> Any:
    return unknown_checking_proxy(unwrap_secrets(value))


def resource_reports(resource: RecordedResource) -> list[str]:
    found: list[str] = []
    for rule in RESOURCE_RULES:
        args = ResourceValidationArgs(
            resource.type, _props(resource.inputs), resource.urn, resource.name, _options(), None, None
        )
        rule(args, lambda message, urn=None: found.append(f"{urn or resource.urn}: {message}"))
    return found


def stack_reports(graph: Graph) -> list[str]:
    resources = [
        PolicyResource(r.type, _props(r.outputs), r.urn, r.name, _options(), None, None, [], {})
        for r in graph.resources
        if r.custom
    ]
    found: list[str] = []
    vllm_network_isolation(
        StackValidationArgs(resources, None), lambda m, urn=None: found.append(f"{urn}: {m}")
    )
    return found


@pytest.mark.parametrize("stack", ["dev", "prod", "onprem"])
def test_stack_passes_the_workload_and_isolation_policies(stack: str) -> None:
    graph = record_stack(stack)
    workloads = [r for r in graph.resources if r.type.endswith((":Deployment", ":LeaderWorkerSet"))]
    assert len(workloads) == len(planned(stack)[1].models)
    problems = [p for r in graph.resources if r.custom for p in resource_reports(r)] + stack_reports(graph)
    assert problems == []


def test_the_harness_reports_a_missing_default_deny() -> None:
    graph = record_stack("dev")
    graph.resources = [r for r in graph.resources if not r.name.endswith("-default-deny")]
    problems = stack_reports(graph)
    assert len(problems) == 1
    assert "has no default-deny NetworkPolicy" in problems[0]


def test_the_harness_reports_a_privileged_container() -> None:
    graph = record_stack("dev")
    deployment = next(r for r in graph.resources if r.type.endswith(":Deployment"))
    deployment.inputs["spec"]["template"]["spec"]["containers"][0]["securityContext"]["privileged"] = True
    assert resource_reports(deployment) == [
        f"{deployment.urn}: spec.template: containers[vllm] sets securityContext.privileged: true."
    ]
