"""Pinned facts of the in-cluster workloads, read from `components/data/workloads.json`.

Owns reading that file into typed values: the Helm charts ClusterAddons installs (repository,
chart, version, namespace, image), the regional registry of EKS add-on images, and the
instance-family facts that set libfabric/NCCL variables for EFA. Logic elsewhere reads these
and never restates a version or an image tag.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from components.helm_charts import ChartPin, read_pin

DATA_FILE = Path(__file__).resolve().parent / "data" / "workloads.json"


@dataclass(frozen=True)
class EfaFamilyFacts:
    """Which instance families get which libfabric/NCCL settings."""

    gpudirect_rdma_families: frozenset[str]
    shm_cuda_memcpy_families: frozenset[str]
    hugepages_2mi: str


@cache
def _facts() -> dict[str, Any]:
    return json.loads(DATA_FILE.read_text(encoding="utf-8"))


def chart(key: str) -> ChartPin:
    """The pinned chart `key` (`nvidia-device-plugin`, `aws-efa-k8s-device-plugin`, `lws`,
    `aws-load-balancer-controller`)."""
    return read_pin(_facts()["charts"], key, DATA_FILE.name)


def eks_addon_registry(region: str) -> str:
    """The ECR registry host serving EKS add-on images in `region` (its own region, never another)."""
    registries = _facts()["eks_addon_registries"]
    account = registries["accounts"].get(region, registries["default_account"])
    suffix = "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"
    return f"{account}.dkr.ecr.{region}.{suffix}"


def efa_family_facts() -> EfaFamilyFacts:
    """The instance-family facts behind the EFA environment."""
    entry = _facts()["efa"]
    return EfaFamilyFacts(
        gpudirect_rdma_families=frozenset(entry["gpudirect_rdma_families"]),
        shm_cuda_memcpy_families=frozenset(entry["shm_cuda_memcpy_families"]),
        hugepages_2mi=entry["hugepages_2mi"],
    )


def instance_family(instance_type: str) -> str:
    """`p5.48xlarge` -> `p5`, `p6-b200.48xlarge` -> `p6-b200`."""
    return instance_type.split(".", 1)[0]
