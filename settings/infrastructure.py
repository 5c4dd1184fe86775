"""Settings of what the stack runs on: the private network, the EKS control plane (or how to
reach an existing cluster) and the GPU node pools.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import (
    Field,
    PositiveInt,
    field_validator,
    model_validator,
)

from settings.base import AWS_AZ, DNS_LABEL, EKS_VERSION, ROLE_ARN, SettingsModel

# --------------------------------------------------------------------------- network


class ExistingNetworkSettings(SettingsModel):
    """Adopt the VPC of another stack instead of creating one."""

    stack: str = Field(min_length=3, description="Fully qualified network stack, e.g. acme/network/prod.")
    vpc_id_output: str = Field(default="vpcId", description="Output key holding the VPC id.")
    private_subnet_ids_output: str = Field(
        default="privateSubnetIds",
        description="Output key holding the private subnet ids (list, one per AZ). They need the tags EKS "
        "reads: kubernetes.io/cluster/{cluster name}: shared, and kubernetes.io/role/internal-elb: 1 for "
        "serving.internalLoadBalancer.",
    )
    availability_zones_output: str = Field(
        default="availabilityZones",
        description="Output key holding the AZ of each private subnet, in the same order.",
    )


class NetworkSettings(SettingsModel):
    """The private VPC segment the GPU nodes live in."""

    cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("10.40.0.0/16"), description="VPC CIDR (a /16 to /20)."
    )
    availability_zones: list[Annotated[str, Field(pattern=AWS_AZ.pattern)]] = Field(
        default_factory=lambda: ["us-east-1a", "us-east-1b"],
        description="AZs for private subnets; EKS needs at least two.",
    )
    egress: Literal["nat", "endpoints"] = Field(
        default="nat", description="nat: NAT gateways; endpoints: no internet egress, VPC endpoints only."
    )
    nat_gateways: Literal["single", "per-az"] = Field(
        default="single", description="One NAT gateway (dev) or one per AZ (prod). Only with egress nat."
    )
    flow_logs_retention_days: PositiveInt = Field(default=30, description="VPC flow log retention in days.")
    existing: ExistingNetworkSettings | None = Field(
        default=None, description="Adopt an existing VPC from a network stack's outputs."
    )

    @field_validator("cidr")
    @classmethod
    def _cidr_size(cls, value: ipaddress.IPv4Network) -> ipaddress.IPv4Network:
        if not 16 <= value.prefixlen <= 20:
            raise ValueError(f"VPC CIDR must be a /16 to /20 (got /{value.prefixlen})")
        return value

    @field_validator("availability_zones")
    @classmethod
    def _unique_azs(cls, value: list[str]) -> list[str]:
        if len(value) != len(set(value)):
            raise ValueError("availability zones must be unique")
        if len({az[:-1] for az in value}) > 1:
            raise ValueError("availability zones must all be in one region")
        return value


# --------------------------------------------------------------------------- cluster


class ExistingClusterSettings(SettingsModel):
    """How to reach a cluster this stack does not create (platform `existing`)."""

    kubeconfig_path: str | None = Field(default=None, description="Path to a kubeconfig file.")
    context: str | None = Field(default=None, description="Context inside the kubeconfig.")
    stack: str | None = Field(default=None, description="A cluster stack whose output holds the kubeconfig.")
    kubeconfig_output: str = Field(default="kubeconfig", description="Output key of that stack.")
    use_secret_kubeconfig: bool = Field(
        default=False, description="Read the kubeconfig from the secret config key `kubeconfig`."
    )

    @model_validator(mode="after")
    def _one_source(self) -> ExistingClusterSettings:
        sources = [self.kubeconfig_path is not None, self.stack is not None, self.use_secret_kubeconfig]
        if sum(sources) != 1:
            raise ValueError(
                "set exactly one kubeconfig source: kubeconfigPath, stack, or useSecretKubeconfig"
            )
        return self


class SystemNodeGroupSettings(SettingsModel):
    """Small on-demand node group for controllers (CoreDNS, KEDA, Prometheus, LWS, sync jobs)."""

    instance_type: str = Field(default="m7i.xlarge", description="Non-GPU instance type.")
    min_size: PositiveInt = 2
    max_size: PositiveInt = 4

    @model_validator(mode="after")
    def _min_le_max(self) -> SystemNodeGroupSettings:
        if self.min_size > self.max_size:
            raise ValueError(f"minSize {self.min_size} is larger than maxSize {self.max_size}")
        return self


class ClusterSettings(SettingsModel):
    """The EKS control plane (platform `eks`) or how to reach an existing cluster."""

    version: str = Field(default="1.33", description="Kubernetes minor version, pinned (e.g. 1.33).")
    public_access_cidrs: list[ipaddress.IPv4Network] = Field(
        default_factory=list,
        description="CIDRs allowed to reach the public API endpoint. Empty: private endpoint only.",
    )
    admin_role_arns: list[Annotated[str, Field(pattern=ROLE_ARN.pattern)]] = Field(
        default_factory=list, description="IAM roles granted cluster-admin access entries."
    )
    service_cidr: ipaddress.IPv4Network = Field(
        default=ipaddress.IPv4Network("172.20.0.0/16"), description="Kubernetes service CIDR."
    )
    system_node_group: SystemNodeGroupSettings = Field(default_factory=SystemNodeGroupSettings)
    existing: ExistingClusterSettings | None = Field(
        default=None, description="Platform existing: where the kubeconfig comes from."
    )

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        if not EKS_VERSION.match(value):
            raise ValueError("must be a Kubernetes minor version such as 1.33 (1.28 to 1.39)")
        return value

    @field_validator("public_access_cidrs")
    @classmethod
    def _no_open_cidr(cls, value: list[ipaddress.IPv4Network]) -> list[ipaddress.IPv4Network]:
        for cidr in value:
            if cidr.prefixlen == 0:
                raise ValueError(
                    "0.0.0.0/0 would expose the Kubernetes API to the internet; list your office/VPN CIDRs"
                )
        return value


# --------------------------------------------------------------------------- GPU pools


Interconnect = Literal["efa", "infiniband", "tcp"]
CapacityType = Literal["on-demand", "spot", "capacity-block"]


class GpuPoolSettings(SettingsModel):
    """One pool of identical GPU nodes (a managed node group on EKS, a node selector elsewhere)."""

    name: str = Field(description="DNS label naming the pool.")
    instance_type: str | None = Field(default=None, description="EC2 instance type (platform eks).")
    gpu_model: str | None = Field(
        default=None, description="Generic GPU name (platform existing), e.g. H100."
    )
    gpus_per_node: PositiveInt | None = Field(default=None, description="GPUs per node (platform existing).")
    availability_zone: str | None = Field(
        default=None, description="The single AZ of an EFA pool (required with EFA; one of network AZs)."
    )
    interconnect: Interconnect | None = Field(
        default=None, description="efa | infiniband | tcp. Default: efa when the instance supports it."
    )
    capacity_type: CapacityType = Field(default="on-demand", description="on-demand | spot | capacity-block.")
    capacity_reservation_id: str | None = Field(
        default=None, description="Capacity reservation / capacity block id (cr-...)."
    )
    root_volume_gib: PositiveInt = Field(default=512, description="Encrypted gp3 root volume size in GiB.")
    max_nodes: PositiveInt | None = Field(
        default=None, description="Upper bound on nodes; default from the plan (max replicas x nodes)."
    )
    node_selector: dict[str, str] = Field(
        default_factory=dict, description="Extra node labels the pods select (platform existing)."
    )
    rdma_resource: str | None = Field(
        default=None, description="InfiniBand: extended resource name of the RDMA device, e.g. rdma/ib."
    )
    ib_hca: str | None = Field(default=None, description="InfiniBand: NCCL_IB_HCA value, e.g. mlx5.")

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not DNS_LABEL.match(value) or len(value) > 30:
            raise ValueError("must be a DNS label: lowercase letters, digits and '-', at most 30 characters")
        return value

    @field_validator("capacity_reservation_id")
    @classmethod
    def _reservation(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^cr-[0-9a-f]{8,17}$", value):
            raise ValueError("must be a capacity reservation id such as cr-0123456789abcdef0")
        return value

    @model_validator(mode="after")
    def _capacity_block_needs_reservation(self) -> GpuPoolSettings:
        if self.capacity_type == "capacity-block" and not self.capacity_reservation_id:
            raise ValueError("capacityType capacity-block needs capacityReservationId (cr-...)")
        return self

    @model_validator(mode="after")
    def _infiniband_needs_device(self) -> GpuPoolSettings:
        if self.interconnect == "infiniband" and not self.rdma_resource:
            raise ValueError("interconnect infiniband needs rdmaResource (the RDMA device plugin resource)")
        return self
