"""Pack identity, the tag and label contracts the components follow, and the pack's configuration.

Owns:
- the pack name and every policy name (kebab-case, one constant each);
- the contracts between the components and this pack (which tag marks the EFA and model-store
  security groups, which labels mark vLLM pods and their serving group);
- each configurable policy's `PolicyConfigSchema`, whose `default`s are the only place a default
  lives (validators read them through `setting`, so a direct call sees the same defaults);
- `initial_config()`, which states every policy's enforcement level explicitly so that a config
  entry carrying only properties never downgrades a policy (level 0 on the wire is ADVISORY).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from pulumi_policy import EnforcementLevel, PolicyConfigSchema

PACK_NAME = "vllm-serving-isolation"

# Policy names.
NO_PUBLIC_INGRESS = "no-public-ingress"
EFA_SELF_ONLY = "efa-self-only"
GPU_NODES_PRIVATE = "gpu-nodes-private"
EKS_ENDPOINT_PRIVATE = "eks-endpoint-private"
K8S_SERVICE_INTERNAL = "k8s-service-internal"
POD_SECURITY = "pod-security"
VLLM_NETWORK_ISOLATION = "vllm-network-isolation"
VLLM_API_KEY_FROM_SECRET = "vllm-api-key-from-secret"
STORAGE_ENCRYPTED = "storage-encrypted"
PRIVATE_GPU_SUBNETS = "private-gpu-subnets"

# Contracts with the components (documented in policies/README.md).
ROLE_TAG = "vllm-serving/role"
"""AWS tag naming what a security group is for."""
EFA_ROLE = "efa"
"""`vllm-serving/role` value of the EFA security group (all traffic to and from itself only)."""
MODEL_STORE_ROLE = "model-store"
"""`vllm-serving/role` value of the model filesystem's security group (other groups only, no CIDRs)."""
TIER_TAG = "vllm-serving/tier"
"""AWS subnet tag; `private` marks subnets that must never map public IPs."""
PRIVATE_TIER = "private"
APP_NAME_LABEL = "app.kubernetes.io/name"
"""Pod label naming the application; `vllm` marks vLLM server pods."""
VLLM_APP = "vllm"
GROUP_LABEL = "vllm-serving/model"
"""Pod label naming the served model; pods with the same value form one group (Ray/NCCL peers)."""

PUBLIC_CIDRS = frozenset({"0.0.0.0/0", "::/0"})
DNS_PORT = 53

# Configuration keys.
ALLOWED_PUBLIC_LB_GROUPS = "allowedPublicLoadBalancerGroups"
ALLOWED_CAPABILITIES = "allowedCapabilities"
ALLOWED_HOST_PATHS = "allowedHostPaths"
API_PORTS = "apiPorts"
INTERNAL_PORTS = "internalPorts"
INTERNAL_PORT_RANGES = "internalPortRanges"

_STRING_LIST = {"type": "array", "items": {"type": "string"}}
_PORT = {"type": "integer", "minimum": 1, "maximum": 65535}

CONFIG_SCHEMAS: dict[str, PolicyConfigSchema] = {
    NO_PUBLIC_INGRESS: PolicyConfigSchema(
        properties={
            ALLOWED_PUBLIC_LB_GROUPS: {
                **_STRING_LIST,
                "default": [],
                "description": "Security groups (Pulumi resource name or AWS `name`) of public load "
                "balancers that may admit 0.0.0.0/0 or ::/0.",
            },
        }
    ),
    POD_SECURITY: PolicyConfigSchema(
        properties={
            ALLOWED_CAPABILITIES: {
                **_STRING_LIST,
                "default": ["IPC_LOCK"],
                "description": "Linux capabilities containers may add (IPC_LOCK pins memory for "
                "EFA/InfiniBand RDMA).",
            },
            ALLOWED_HOST_PATHS: {
                **_STRING_LIST,
                "default": [],
                "description": "hostPath volume paths pods may mount (the path itself or anything below it).",
            },
        }
    ),
    VLLM_NETWORK_ISOLATION: PolicyConfigSchema(
        properties={
            API_PORTS: {
                "type": "array",
                "items": _PORT,
                "default": [8000],
                "description": "Ports of the vLLM OpenAI server (API and /metrics). Clients and "
                "Prometheus may reach them through namespace/pod selectors, never ipBlocks. Every "
                "other port opened to vLLM pods (except DNS 53) is internal to the serving group.",
            },
            INTERNAL_PORTS: {
                "type": "array",
                "items": _PORT,
                "default": [6379, 8265, 10001, 29500, 29501, 29550],
                "description": "Ports an egress rule of vLLM pods may open only towards the same "
                "group: Ray GCS 6379, dashboard 8265, client 10001, vLLM DP master 29500, mp master "
                "29501, DP RPC 29550.",
            },
            INTERNAL_PORT_RANGES: {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"start": _PORT, "end": _PORT},
                    "required": ["start", "end"],
                },
                "default": [{"start": 10002, "end": 19999}, {"start": 32768, "end": 60999}],
                "description": "Port ranges treated like internalPorts: Ray worker ports and the "
                "Linux ephemeral range NCCL bootstrap and socket transports use.",
            },
        }
    ),
}


def initial_config() -> dict[str, dict[str, Any]]:
    """Every configurable policy's explicit level plus its schema defaults.

    The level is stated on purpose: the wire form of a config entry without one is level 0,
    which is ADVISORY, so an entry that only sets properties would silently downgrade the policy.
    """
    return {
        name: {
            "enforcementLevel": EnforcementLevel.MANDATORY,
            **{key: prop["default"] for key, prop in schema.properties.items()},
        }
        for name, schema in CONFIG_SCHEMAS.items()
    }


class _HasConfig(Protocol):
    def get_config(self) -> Mapping[str, Any]: ...


def setting(args: _HasConfig, policy: str, key: str) -> Any:
    """The configured value of `key` for `policy`, or the schema default when it is not set."""
    config = args.get_config() or {}
    if key in config:
        return config[key]
    return CONFIG_SCHEMAS[policy].properties[key]["default"]
