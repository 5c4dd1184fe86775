"""The stack outputs: the versioned contract other projects read through StackReference.

Owns each output's key (defined once, used by the program, the contract test and
docs/outputs.md), its type, whether it is secret, and its one-line meaning. Removing or
renaming one is a breaking change: add new keys, deprecate old ones in docs/upgrading.md.
Every output exists on every platform; values that do not apply are empty ("" or []).
"""

from __future__ import annotations

from dataclasses import dataclass

CONTRACT_VERSION = "1"


@dataclass(frozen=True)
class OutputSpec:
    key: str
    type: str
    secret: bool
    description: str


OUTPUT_CONTRACT_VERSION = "contractVersion"
OUTPUT_VPC_ID = "vpcId"
OUTPUT_PRIVATE_SUBNET_IDS = "privateSubnetIds"
OUTPUT_AVAILABILITY_ZONES = "availabilityZones"
OUTPUT_CLUSTER_NAME = "clusterName"
OUTPUT_KUBECONFIG = "kubeconfig"
OUTPUT_NODE_SECURITY_GROUP_ID = "nodeSecurityGroupId"
OUTPUT_MODEL_STORE = "modelStore"
OUTPUT_ENDPOINTS = "endpoints"
OUTPUT_API_KEY_SECRET = "apiKeySecret"
OUTPUT_API_KEY = "apiKey"
OUTPUT_CLIENT_NAMESPACES = "clientNamespaces"
OUTPUT_PROMETHEUS_URL = "prometheusUrl"
OUTPUT_CAPACITY_PLAN = "capacityPlan"

OUTPUTS: tuple[OutputSpec, ...] = (
    OutputSpec(OUTPUT_CONTRACT_VERSION, "string", False, "Version of this output contract."),
    OutputSpec(OUTPUT_VPC_ID, "string", False, 'VPC of the GPU nodes ("" on platform existing).'),
    OutputSpec(
        OUTPUT_PRIVATE_SUBNET_IDS,
        "list[string]",
        False,
        "Private subnets, one per availability zone, in the order of availabilityZones ([] on existing).",
    ),
    OutputSpec(OUTPUT_AVAILABILITY_ZONES, "list[string]", False, "AZs of privateSubnetIds ([] on existing)."),
    OutputSpec(
        OUTPUT_CLUSTER_NAME, "string", False, "EKS cluster name (the kubeconfig context on existing)."
    ),
    OutputSpec(
        OUTPUT_KUBECONFIG,
        "string",
        True,
        'Exec-based kubeconfig for the EKS cluster (aws eks get-token); "" on existing.',
    ),
    OutputSpec(
        OUTPUT_NODE_SECURITY_GROUP_ID, "string", False, 'Security group of all nodes ("" on existing).'
    ),
    OutputSpec(
        OUTPUT_MODEL_STORE,
        "object",
        False,
        "Model filesystem: kind, fileSystemId, dnsName, mountName, s3Uri, claimName, mountPath.",
    ),
    OutputSpec(
        OUTPUT_ENDPOINTS,
        "map[string, object]",
        False,
        "Per model name: baseUrl (in-cluster OpenAI base URL), servedModelName, namespace, service.",
    ),
    OutputSpec(
        OUTPUT_API_KEY_SECRET, "object", False, "The API-key Kubernetes Secret: namespace, name, key."
    ),
    OutputSpec(OUTPUT_API_KEY, "string", True, "The API key clients send as `Authorization: Bearer`."),
    OutputSpec(
        OUTPUT_CLIENT_NAMESPACES,
        "list[string]",
        False,
        "Namespaces whose pods the NetworkPolicies admit to the API port (serving.clientNamespaces).",
    ),
    OutputSpec(
        OUTPUT_PROMETHEUS_URL, "string", False, 'In-cluster Prometheus URL ("" when monitoring is off).'
    ),
    OutputSpec(
        OUTPUT_CAPACITY_PLAN,
        "object",
        False,
        "The capacity plan: per model parallel sizes, replicas, KV cache and concurrency; pools; storage; $/h.",
    ),
)
