"""The root of the settings tree: every `vllm-serving:*` key of one stack."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from capacity import get_instance_type
from settings.base import SettingsModel
from settings.infrastructure import ClusterSettings, GpuPoolSettings, Interconnect, NetworkSettings
from settings.workloads import (
    AutoscalingSettings,
    ModelSettings,
    ModelStoreSettings,
    MonitoringSettings,
    ServingSettings,
)

# --------------------------------------------------------------------------- the stack


class StackSettings(SettingsModel):
    """Every `vllm-serving:*` key of one stack."""

    platform: Literal["eks", "existing"] = Field(
        default="eks", description="eks: create VPC + EKS + node groups; existing: deploy into your cluster."
    )
    network: NetworkSettings = Field(
        default_factory=NetworkSettings, description="Private VPC segment (platform eks)."
    )
    cluster: ClusterSettings = Field(
        default_factory=ClusterSettings, description="EKS control plane, or how to reach an existing cluster."
    )
    gpu_pools: list[GpuPoolSettings] = Field(min_length=1, description="GPU node pools (at least one).")
    model_store: ModelStoreSettings = Field(
        default_factory=ModelStoreSettings, description="Shared model filesystem and cold-start target."
    )
    models: list[ModelSettings] = Field(min_length=1, description="Served models (at least one).")
    serving: ServingSettings = Field(
        default_factory=ServingSettings,
        description="vLLM image, namespace and API access shared by all models.",
    )
    monitoring: MonitoringSettings = Field(
        default_factory=MonitoringSettings, description="Prometheus stack, alerts, dashboard."
    )
    autoscaling: AutoscalingSettings = Field(
        default_factory=AutoscalingSettings, description="KEDA on the request queue + cluster autoscaler."
    )

    def pool(self, name: str) -> GpuPoolSettings:
        return next(p for p in self.gpu_pools if p.name == name)

    def interconnect_of(self, pool: GpuPoolSettings) -> Interconnect:
        """The pool's interconnect, defaulting to EFA where the instance type has it."""
        if pool.interconnect is not None:
            return pool.interconnect
        if self.platform == "eks" and pool.instance_type:
            return "efa" if get_instance_type(pool.instance_type).efa_supported else "tcp"
        return "tcp"
