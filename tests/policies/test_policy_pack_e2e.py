"""The pack end to end, started as the CLI starts it and driven over gRPC by `offline.policy_host`:
a clean graph passes; for every policy a graph breaking it is reported under that policy's name,
as mandatory, on the right URN; config that only sets properties keeps policies mandatory, "all"
and level strings change levels, invalid config is refused; unknown values during preview and
secrets and resource references in inputs reach the pack as the engine would send them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import policies
from offline.graph import RecordedResource, Violation
from offline.policy_host import PolicyHost, PolicyHostError
from tests.policies.policy_fakes import PROJECT, STACK, UNKNOWN, ref, secret, urn
from tests.policies.policy_graphs import clean_graph, with_change

PACK_DIR = Path(policies.__file__).parent
DESCRIPTIONS = {p.name: p.description for p in policies.POLICIES}


@pytest.fixture(scope="module")
def host() -> Iterator[PolicyHost]:
    with PolicyHost(PACK_DIR, project=PROJECT, stack=STACK) as running:
        yield running


def violation(policy: str, resource_urn: str, detail: str, level: str = "mandatory") -> Violation:
    return Violation(policy, level, resource_urn, f"{DESCRIPTIONS[policy]}\n{detail}")


def in_host_order(violations: list[Violation]) -> list[Violation]:
    return sorted(violations, key=lambda v: (v.policy, v.urn, v.message, v.level))


def test_clean_graph_passes_with_every_policy_mandatory(host: PolicyHost) -> None:
    result = host.analyze(list(clean_graph().values()))
    assert result.violations == []
    assert result.pack == "vllm-serving-isolation"
    assert result.version == "0.1.0"
    assert {p["name"]: p["enforcementLevel"] for p in result.policies} == dict.fromkeys(
        DESCRIPTIONS, "mandatory"
    )


def _set(path: str, value: Any) -> Callable[[RecordedResource], None]:
    def change(resource: RecordedResource) -> None:
        target: Any = resource.inputs
        *parents, last = path.split(".")
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        target[int(last) if isinstance(target, list) else last] = value

    return change


def _peer_nodes(resource: RecordedResource) -> None:
    resource.inputs["referencedSecurityGroupId"] = "nodes-id"
    resource.property_dependencies["referencedSecurityGroupId"] = [
        urn("aws:ec2/securityGroup:SecurityGroup", "nodes")
    ]


CONTAINER = "spec.template.spec.containers.0"
FAILING = [
    (
        "nodes",
        _set("ingress", [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/0"]}]),
        [
            (
                "no-public-ingress",
                urn("aws:ec2/securityGroup:SecurityGroup", "nodes"),
                "ingress[0] admits 0.0.0.0/0: the group is not a public load balancer group listed in "
                "'allowedPublicLoadBalancerGroups'.",
            )
        ],
    ),
    (
        "efa-out",
        _peer_nodes,
        [
            (
                "efa-self-only",
                urn("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule", "efa-out-self"),
                "rule 'efa-out-self' on EFA security group 'efa' allows security group nodes-id; EFA traffic must "
                "stay within the group.",
            ),
            (
                "efa-self-only",
                urn("aws:ec2/securityGroup:SecurityGroup", "efa"),
                "EFA security group 'efa' has no egress rule for all traffic (protocol \"-1\") to and from itself; "
                "EFA OS-bypass needs both directions.",
            ),
        ],
    ),
    (
        "lt",
        _set("networkInterfaces.0.associatePublicIpAddress", "true"),
        [
            (
                "gpu-nodes-private",
                urn("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt"),
                "networkInterfaces[0] sets associatePublicIpAddress: true; GPU nodes must have private addresses only.",
            )
        ],
    ),
    (
        "cluster",
        _set("vpcConfig.endpointPublicAccess", True),
        [
            (
                "eks-endpoint-private",
                urn("aws:eks/cluster:Cluster", "cluster"),
                "vpcConfig.endpointPublicAccess is true (the AWS default when unset) without publicAccessCidrs, which "
                "opens the API endpoint to 0.0.0.0/0.",
            )
        ],
    ),
    (
        "service",
        _set("spec.type", "NodePort"),
        [
            (
                "k8s-service-internal",
                urn("kubernetes:core/v1:Service", "llama"),
                "spec.type is NodePort, which opens a port on every node; use ClusterIP.",
            )
        ],
    ),
    (
        "deployment",
        _set(f"{CONTAINER}.securityContext.privileged", True),
        [
            (
                "pod-security",
                urn("kubernetes:apps/v1:Deployment", "llama"),
                "spec.template: containers[vllm] sets securityContext.privileged: true.",
            )
        ],
    ),
    (
        "deny",
        None,
        [
            (
                "vllm-network-isolation",
                urn("kubernetes:apps/v1:Deployment", "llama"),
                "namespace 'serving' runs vLLM workload 'llama' but has no default-deny NetworkPolicy (podSelector "
                "{}, policyTypes [Ingress, Egress], no rules).",
            ),
            (
                "vllm-network-isolation",
                urn("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet", "big"),
                "namespace 'serving' runs vLLM workload 'big' but has no default-deny NetworkPolicy (podSelector "
                "{}, policyTypes [Ingress, Egress], no rules).",
            ),
        ],
    ),
    (
        "deployment",
        _set(f"{CONTAINER}.env", [{"name": "VLLM_API_KEY", "value": secret("sk-live-123")}]),
        [
            (
                "vllm-api-key-from-secret",
                urn("kubernetes:apps/v1:Deployment", "llama"),
                "spec.template: containers[vllm] sets VLLM_API_KEY as a literal env value.",
            )
        ],
    ),
    (
        "pab",
        None,
        [
            (
                "storage-encrypted",
                urn("aws:s3/bucket:Bucket", "weights"),
                "bucket 'weights' has no BucketPublicAccessBlock.",
            )
        ],
    ),
    (
        "monitoring",
        _set("values.grafana.service.type", "LoadBalancer"),
        [
            (
                "private-gpu-subnets",
                urn("kubernetes:helm.sh/v3:Release", "monitoring"),
                "Helm release 'monitoring' (kube-prometheus-stack) sets grafana.service.type is LoadBalancer, exposing "
                "monitoring outside the cluster.",
            )
        ],
    ),
]


@pytest.mark.parametrize(("key", "change", "expected"), FAILING, ids=[e[0][0] for _, _, e in FAILING])
def test_each_policy_reports_its_failing_graph_as_mandatory(
    host: PolicyHost,
    key: str,
    change: Callable[[RecordedResource], None] | None,
    expected: list[tuple[str, str, str]],
) -> None:
    result = host.analyze(with_change(key, change))
    assert result.violations == in_host_order([violation(*e) for e in expected])
    assert result.mandatory == result.violations


def test_failing_graphs_cover_every_policy() -> None:
    assert {e[0] for _, _, expected in FAILING for e in expected} == set(DESCRIPTIONS)


def test_config_that_only_sets_properties_keeps_the_policy_mandatory(host: PolicyHost) -> None:
    result = host.analyze(
        list(clean_graph().values()), policy_config={"pod-security": {"allowedCapabilities": []}}
    )
    expected = "spec.template: containers[vllm] adds capabilities IPC_LOCK; allowed: none (config 'allowedCapabilities')."
    deployment = urn("kubernetes:apps/v1:Deployment", "llama")
    assert [v for v in result.violations if v.urn == deployment] == [
        violation("pod-security", deployment, expected)
    ]
    pod_security = next(p for p in result.policies if p["name"] == "pod-security")
    assert pod_security["enforcementLevel"] == "mandatory"
    assert pod_security["config"] == {"allowedCapabilities": [], "allowedHostPaths": []}


def test_all_advisory_downgrades_and_a_level_string_overrides_it(host: PolicyHost) -> None:
    graph = with_change("service", _set("spec.type", "NodePort"))
    detail = "spec.type is NodePort, which opens a port on every node; use ClusterIP."
    service = urn("kubernetes:core/v1:Service", "llama")
    advisory = host.analyze(graph, policy_config={"all": "advisory"})
    assert advisory.violations == [violation("k8s-service-internal", service, detail, level="advisory")]
    assert advisory.mandatory == []
    escalated = host.analyze(graph, policy_config={"all": "advisory", "k8s-service-internal": "mandatory"})
    assert escalated.violations == [violation("k8s-service-internal", service, detail)]
    assert host.analyze(graph, policy_config={"k8s-service-internal": "disabled"}).violations == []


@pytest.mark.parametrize(
    ("policy_config", "error"),
    [
        (
            {"pod-security": {"allowedCapabilities": "IPC_LOCK"}},
            "pod-security: 'IPC_LOCK' is not of type 'array'",
        ),
        ({"no-public-ingress": "strict"}, "no-public-ingress: 'strict' is not a valid enforcement level"),
        (
            {"vllm-network-isolation": {"apiPorts": [0]}},
            "vllm-network-isolation: 0 is less than the minimum of 1",
        ),
    ],
)
def test_invalid_config_is_refused(host: PolicyHost, policy_config: dict[str, Any], error: str) -> None:
    with pytest.raises(PolicyHostError, match=f"invalid policy pack config:\n  {error}$"):
        host.analyze(list(clean_graph().values()), policy_config=policy_config)


def test_unknown_values_during_preview_are_advisory(host: PolicyHost) -> None:
    """A resource policy's diagnostic lands on the resource; a stack policy's (no URN) on the root stack."""
    result = host.analyze(with_change("service", _set("spec.type", UNKNOWN)))
    unknown = "string value at .spec.type can't be known during preview"
    assert result.violations == [
        Violation(
            policy,
            "advisory",
            resource_urn,
            f"can't run policy '{policy}' from policy pack 'vllm-serving-isolation@v0.0.1' during preview: {unknown}",
        )
        for policy, resource_urn in (
            ("k8s-service-internal", urn("kubernetes:core/v1:Service", "llama")),
            ("private-gpu-subnets", urn("pulumi:pulumi:Stack", f"{PROJECT}-{STACK}")),
        )
    ]


def test_resource_references_in_inputs_arrive_as_ids(host: PolicyHost) -> None:
    graph = clean_graph()
    graph["ng"].inputs["subnetIds"] = [ref(graph["subnet"])]
    graph["ng"].outputs["subnetIds"] = [ref(graph["subnet"])]
    graph["ng"].property_dependencies = {}
    assert host.analyze(list(graph.values())).violations == []
