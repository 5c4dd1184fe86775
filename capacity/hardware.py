"""Hardware facts: the GPU instance types we support and generic GPU models for existing clusters.

Owns reading ``data/instance_types.json`` (facts with their sources, region and price date) into
frozen dataclasses. The logic elsewhere reads these facts and never restates them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from capacity.errors import UnknownGpuModelError, UnknownInstanceTypeError

DATA_FILE = "instance_types.json"


@dataclass(frozen=True)
class GpuModel:
    """One GPU model as vLLM sees it."""

    name: str
    memory_gib: float
    """Total memory as ``torch.cuda.mem_get_info()`` reports it (what vLLM multiplies by the utilization)."""
    nvlink: bool
    """Whether GPUs of a node talk over NVLink; without it vLLM recommends pipeline over tensor parallel."""


@dataclass(frozen=True)
class InstanceType:
    """One EC2 GPU instance type (us-east-1 on-demand price, see the data file for its date)."""

    name: str
    gpu_model: str
    gpu_count: int
    gpu_memory_gib: float
    nvlink: bool
    network_cards: int
    max_efa_interfaces: int
    network_bandwidth_gbps: float
    vcpus: int
    memory_gib: float
    price_per_hour_usd: float | None
    architecture: str

    @property
    def efa_supported(self) -> bool:
        """True when the type can attach at least one EFA interface."""
        return self.max_efa_interfaces > 0

    @property
    def gpu(self) -> GpuModel:
        """The generic GPU model of this instance type."""
        return get_gpu_model(self.gpu_model)


@cache
def _facts() -> dict[str, Any]:
    text = resources.files("capacity").joinpath("data", DATA_FILE).read_text(encoding="utf-8")
    return json.loads(text)


def _gpu_key(name: str) -> str | None:
    wanted = name.strip().lower()
    for key, entry in _facts()["gpu_models"].items():
        if wanted == key.lower() or wanted in (alias.lower() for alias in entry.get("aliases", [])):
            return key
    return None


def gpu_model_names() -> list[str]:
    """Generic GPU model names, sorted."""
    return sorted(_facts()["gpu_models"])


def instance_type_names() -> list[str]:
    """Supported instance type names, sorted."""
    return sorted(_facts()["instance_types"])


def get_gpu_model(name: str) -> GpuModel:
    """The generic GPU model ``name`` (case-insensitive; aliases such as ``H100-80GB`` accepted)."""
    key = _gpu_key(name)
    if key is None:
        raise UnknownGpuModelError(
            f"unknown GPU model {name!r}; known GPU models: {', '.join(gpu_model_names())}"
        )
    entry = _facts()["gpu_models"][key]
    return GpuModel(name=key, memory_gib=float(entry["memory_gib"]), nvlink=bool(entry["nvlink"]))


def get_instance_type(name: str) -> InstanceType:
    """The instance type ``name``; raises UnknownInstanceTypeError listing the known types."""
    entry = _facts()["instance_types"].get(name.strip().lower())
    if entry is None:
        raise UnknownInstanceTypeError(
            f"unknown instance type {name!r}; known GPU instance types: {', '.join(instance_type_names())}"
        )
    gpu = get_gpu_model(entry["gpu_model"])
    price = entry["price_per_hour_usd"]
    return InstanceType(
        name=name.strip().lower(),
        gpu_model=gpu.name,
        gpu_count=int(entry["gpu_count"]),
        gpu_memory_gib=gpu.memory_gib,
        nvlink=gpu.nvlink,
        network_cards=int(entry["network_cards"]),
        max_efa_interfaces=int(entry["max_efa_interfaces"]),
        network_bandwidth_gbps=float(entry["network_bandwidth_gbps"]),
        vcpus=int(entry["vcpus"]),
        memory_gib=float(entry["memory_gib"]),
        price_per_hour_usd=None if price is None else float(price),
        architecture=str(entry["architecture"]),
    )


def pricing_note() -> str:
    """Where the prices come from: ``us-east-1 on-demand as of 2026-07-20``."""
    return f"{_facts()['region']} on-demand as of {_facts()['prices_as_of']}"
