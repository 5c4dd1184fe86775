"""Cross-field rules: what one section of the settings requires of another. Each rule returns
(key path parts, message) problems; `parse_settings` collects them all.
"""

from __future__ import annotations

from collections.abc import Callable

from capacity import CapacityError, get_gpu_model, get_instance_type
from settings.infrastructure import GpuPoolSettings
from settings.stack import StackSettings

Problem = tuple[tuple[str | int, ...], str]


def _check_platform(s: StackSettings) -> list[Problem]:
    problems: list[Problem] = []
    if s.platform == "existing":
        if s.cluster.existing is None:
            problems.append(
                (
                    ("cluster", "existing"),
                    "platform existing needs a kubeconfig source "
                    "(cluster.existing.kubeconfigPath, .stack or .useSecretKubeconfig)",
                )
            )
        if s.model_store.kind != "existing":
            problems.append(
                (
                    ("modelStore", "kind"),
                    f"{s.model_store.kind!r} needs AWS; platform existing allows only 'existing'",
                )
            )
        if s.serving.internal_load_balancer:
            problems.append(
                (
                    ("serving", "internalLoadBalancer"),
                    "needs platform eks (the load balancer's source ranges and NetworkPolicy are the "
                    "VPC's CIDR, which only an eks stack knows); on an existing cluster expose the "
                    "<model>-api Service with your own ingress, or set it to false",
                )
            )
    else:
        if s.cluster.existing is not None:
            problems.append((("cluster", "existing"), "only applies to platform existing, not eks"))
        if s.model_store.kind == "existing" and s.model_store.existing_claim_name is None:
            problems.append(
                (("modelStore", "kind"), "platform eks with kind existing needs existingClaimName")
            )
    return problems


def _check_networks(s: StackSettings) -> list[Problem]:
    if s.platform != "eks":
        return []
    problems: list[Problem] = []
    if s.network.existing is None:
        if s.cluster.service_cidr.overlaps(s.network.cidr):
            problems.append(
                (
                    ("cluster", "serviceCidr"),
                    f"{s.cluster.service_cidr} overlaps the VPC CIDR {s.network.cidr}; "
                    "choose a range outside it (e.g. 172.20.0.0/16)",
                )
            )
        if len(s.network.availability_zones) < 2:
            problems.append(
                (("network", "availabilityZones"), "EKS needs subnets in at least 2 availability zones")
            )
    if s.network.egress == "endpoints" and s.network.nat_gateways == "per-az":
        problems.append((("network", "natGateways"), "per-az NAT gateways need egress nat, not endpoints"))
    return problems


def _check_pools(s: StackSettings) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, pool in enumerate(s.gpu_pools):
        if pool.name in seen:
            problems.append(
                (("gpuPools", i, "name"), f"duplicate pool name {pool.name!r}; names must be unique")
            )
        seen.add(pool.name)
        problems += _check_eks_pool(s, i, pool) if s.platform == "eks" else _check_existing_pool(i, pool)
    return problems


def _check_eks_pool(s: StackSettings, i: int, pool: GpuPoolSettings) -> list[Problem]:
    if pool.instance_type is None:
        return [
            (("gpuPools", i, "instanceType"), "platform eks needs an EC2 instance type, e.g. p5.48xlarge")
        ]
    try:
        instance = get_instance_type(pool.instance_type)
    except CapacityError as err:
        return [(("gpuPools", i, "instanceType"), str(err))]
    problems: list[Problem] = []
    interconnect = s.interconnect_of(pool)
    if interconnect == "efa" and not instance.efa_supported:
        problems.append(
            (
                ("gpuPools", i, "interconnect"),
                f"{pool.instance_type} has no EFA; use tcp or an EFA instance type "
                "(p4d, p5, p5en, p6-b200, g6e.12xlarge and larger, ...)",
            )
        )
    if interconnect == "infiniband":
        problems.append(
            (("gpuPools", i, "interconnect"), "infiniband is for platform existing; on eks use efa")
        )
    if interconnect == "efa":
        azs = s.network.availability_zones if s.network.existing is None else None
        if pool.availability_zone is None:
            problems.append(
                (
                    ("gpuPools", i, "availabilityZone"),
                    "an EFA pool must sit in exactly one AZ; set one"
                    + (f" of {', '.join(azs)}" if azs else ""),
                )
            )
        elif azs is not None and pool.availability_zone not in azs:
            problems.append(
                (
                    ("gpuPools", i, "availabilityZone"),
                    f"{pool.availability_zone} is not one of the network's AZs ({', '.join(azs)})",
                )
            )
    if pool.gpu_model is not None or pool.gpus_per_node is not None:
        problems.append(
            (("gpuPools", i, "gpuModel"), "gpuModel/gpusPerNode come from instanceType on eks; remove them")
        )
    return problems


def _check_existing_pool(i: int, pool: GpuPoolSettings) -> list[Problem]:
    problems: list[Problem] = []
    if pool.gpu_model is None:
        problems.append((("gpuPools", i, "gpuModel"), "platform existing needs the GPU model, e.g. H100"))
    else:
        try:
            get_gpu_model(pool.gpu_model)
        except CapacityError as err:
            problems.append((("gpuPools", i, "gpuModel"), str(err)))
    if pool.gpus_per_node is None:
        problems.append((("gpuPools", i, "gpusPerNode"), "platform existing needs the GPUs per node, e.g. 8"))
    if pool.interconnect == "efa" and pool.instance_type is None:
        problems.append(
            (("gpuPools", i, "interconnect"), "efa on an existing cluster needs the instance type")
        )
    if pool.capacity_type != "on-demand" or pool.capacity_reservation_id:
        problems.append((("gpuPools", i, "capacityType"), "capacity settings only apply to platform eks"))
    return problems


def _check_models(s: StackSettings) -> list[Problem]:
    problems: list[Problem] = []
    pools = {p.name for p in s.gpu_pools}
    seen: set[str] = set()
    for i, model in enumerate(s.models):
        if model.name in seen:
            problems.append(
                (("models", i, "name"), f"duplicate model name {model.name!r}; names must be unique")
            )
        seen.add(model.name)
        if model.pool not in pools:
            problems.append(
                (
                    ("models", i, "pool"),
                    f"{model.pool!r} is not a GPU pool; defined pools: {', '.join(sorted(pools))}",
                )
            )
    return problems


CROSS_FIELD_RULES: tuple[Callable[[StackSettings], list[Problem]], ...] = (
    _check_platform,
    _check_networks,
    _check_pools,
    _check_models,
)
