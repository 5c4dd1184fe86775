"""Helpers of the ModelStore graph tests: settings and plan from a stack file, one recorded run.

Each call builds the program fresh (only the frozen settings and plan are cached); `record` passes the network
inputs the lead's wiring passes on EKS (one FSx subnet, three private subnets, the model-store group).
"""

from __future__ import annotations

import functools
from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes

from components.model_store import ModelStore, ModelStoreArgs
from offline.recorder import Graph, record_program
from planning import StackPlan, plan_stack
from settings import StackSettings, parse_settings
from tests.helpers import ROOT, raw_settings

COMPONENT = "vllm-serving:model_store:ModelStore"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
ASSOCIATION = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
BUCKET = "aws:s3/bucket:Bucket"
KEY = "aws:kms/key:Key"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
JOB = "kubernetes:batch/v1:Job"
ADDON = "aws:eks/addon:Addon"
EFS = "aws:efs/fileSystem:FileSystem"
KUBERNETES_VERSION = "1.33.0"


def stack_inputs(stack: str, **changes: Any) -> tuple[StackSettings, StackPlan]:
    """Settings and plan of a shipped stack with `modelStore` keys changed (planning errors propagate)."""
    return _planned(stack, tuple(sorted(changes.items())))


@functools.cache
def _planned(stack: str, changes: tuple[tuple[str, Any], ...]) -> tuple[StackSettings, StackPlan]:
    # Settings and plans are frozen data: sharing them between tests shares no Pulumi state.
    raw = raw_settings(stack)
    raw["modelStore"] = {**raw.get("modelStore", {}), **dict(changes)}
    settings = parse_settings(raw)
    return settings, plan_stack(settings, ROOT)


def record(
    stack: str = "prod", store: dict[str, Any] | None = None, **overrides: Any
) -> tuple[Graph, StackPlan]:
    settings, plan = stack_inputs(stack, **(store or {}))

    def program() -> None:
        provider = kubernetes.Provider("cluster", kubeconfig="{}")
        args: dict[str, Any] = {
            "settings": settings.model_store,
            "storage": plan.storage,
            "namespace": "vllm",
            "provider": provider,
            "models": plan.models,
            "hf_token": pulumi.Output.secret("hf_example_token"),
        }
        if settings.platform == "eks":
            args |= {
                "cluster_name": "prod-gpu",
                "subnet_id": "subnet-0aaa",
                "subnet_ids": ["subnet-0aaa", "subnet-0bbb", "subnet-0ccc"],
                "security_group_ids": ["sg-0store"],
            }
        args.update(overrides)
        ModelStore("model-store", ModelStoreArgs(**args))

    return record_program(program, stack=stack), plan


def as_manifest(value: Any) -> Any:
    """Wire form back to a manifest: protobuf Struct numbers are floats, Kubernetes wants integers."""
    if isinstance(value, dict):
        return {k: as_manifest(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_manifest(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value
