"""Shared builders for the workload graph tests: planned stacks, component args, recordings.

Plain functions (no pytest fixtures): each test records its own fresh graph. Stack files are the
shipped Pulumi.<stack>.yaml; `changes` patch their raw settings before planning.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulumi_kubernetes as kubernetes

from capacity import get_instance_type
from components.cluster_addons import ClusterAddonsArgs
from components.model_paths import served_model_path
from components.vllm_service import VllmService, VllmServiceArgs
from offline.graph import RecordedResource
from offline.recorder import Graph, record_program
from offline.validate import is_manifest, manifest_from_recorded, validate_manifest
from planning import StackPlan, plan_stack
from settings import StackSettings, parse_settings
from tests.helpers import ROOT, raw_settings

PROVIDER_NAME = "k8s"
NAMESPACE = "vllm"
LWS_TYPE = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
DEPLOYMENT_TYPE = "kubernetes:apps/v1:Deployment"
SERVICE_TYPE = "kubernetes:core/v1:Service"
POLICY_TYPE = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
PDB_TYPE = "kubernetes:policy/v1:PodDisruptionBudget"


def planned(
    stack: str, patch: Callable[[dict[str, Any]], None] | None = None
) -> tuple[StackSettings, StackPlan]:
    """Settings and capacity plan of a shipped stack, optionally patched first."""
    raw = copy.deepcopy(raw_settings(stack))
    if patch is not None:
        patch(raw)
    settings = parse_settings(raw)
    return settings, plan_stack(settings, Path(ROOT))


def addons_args(settings: StackSettings, plan: StackPlan, provider: kubernetes.Provider) -> ClusterAddonsArgs:
    """ClusterAddons' arguments as the program builds them for a stack."""
    return ClusterAddonsArgs(
        provider=provider,
        platform=settings.platform,
        plan=plan,
        serving_namespace=settings.serving.namespace,
        kubernetes_version=settings.cluster.version,
        monitoring_namespace=settings.monitoring.namespace if settings.monitoring.enabled else None,
        region="us-east-1" if settings.platform == "eks" else None,
    )


def service_args(
    settings: StackSettings, plan: StackPlan, model: str, provider: kubernetes.Provider, **changes: Any
) -> VllmServiceArgs:
    """VllmServiceArgs for one model, wired the way the program wires it."""
    served = plan.model(model)
    pool = served.pool
    args: dict[str, Any] = {
        "model": served,
        "serving": settings.serving,
        "platform": settings.platform,
        "namespace": NAMESPACE,
        "provider": provider,
        "api_key_secret_name": "vllm-api-key",
        "model_claim_name": "models",
        "model_path": served_model_path(served.settings, settings.model_store.mount_path),
        "model_mount_path": settings.model_store.mount_path,
        "cold_start_seconds": plan.storage.all_replicas_cold_start_seconds,
        "interconnect": settings.interconnect_of(pool),
        "instance": get_instance_type(pool.instance_type) if pool.instance_type else None,
        "monitoring_namespace": settings.monitoring.namespace if settings.monitoring.enabled else None,
        "model_store_kind": settings.model_store.kind,
    }
    args.update(changes)
    return VllmServiceArgs(**args)


def record_service(
    stack: str,
    model: str,
    patch: Callable[[dict[str, Any]], None] | None = None,
    **changes: Any,
) -> Graph:
    """Record one VllmService (and its provider) for a model of a shipped stack."""
    settings, plan = planned(stack, patch)

    def program() -> None:
        provider = kubernetes.Provider(PROVIDER_NAME, kubeconfig="{}")
        VllmService(model, service_args(settings, plan, model, provider, **changes))

    return record_program(program, stack=stack)


def component(graph: Graph, type_: str) -> RecordedResource:
    matches = [r for r in graph.resources if r.type == type_]
    assert len(matches) == 1, f"expected one {type_}, found {[r.urn for r in matches]}"
    return matches[0]


def manifests(graph: Graph) -> dict[str, dict[str, Any]]:
    """URN -> kubectl-style manifest of every Kubernetes object in the graph."""
    return {r.urn: manifest_from_recorded(r) for r in graph.resources if is_manifest(r)}


def schema_problems(graph: Graph) -> list[str]:
    """Schema problems of every Kubernetes object, each prefixed with its URN."""
    return [f"{urn}: {p}" for urn, m in manifests(graph).items() for p in validate_manifest(m)]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    """name -> value (or valueFrom) of a container's env."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def flag_value(args: list[str], flag: str) -> str:
    """The value following `flag` in an argv (exactly one occurrence)."""
    assert args.count(flag) == 1, f"{flag} appears {args.count(flag)} times in {args}"
    return args[args.index(flag) + 1]
