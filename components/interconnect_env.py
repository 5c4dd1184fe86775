"""How a vLLM pod reaches its peers: NCCL/libfabric environment and fabric devices per interconnect.

Owns two pure decisions for one GPU pool's interconnect (`efa`, `infiniband` or `tcp`):
- the environment every vLLM container of the pool gets (so NCCL picks the right transport and
  interface, and Gloo/NCCL bootstrap use the pod interface);
- the fabric devices a pod of a multi-node group requests (EFA interfaces and huge pages, or the
  RDMA device), and whether it needs the IPC_LOCK capability to pin memory for RDMA.

Sources: awslabs/awsome-distributed-training `1.architectures/efa-cheatsheet.md` (EFA variables
per instance family), vLLM `docs/serving/parallelism_scaling.md` (GPUDirect RDMA needs IPC_LOCK;
`NCCL_SOCKET_IFNAME=eth0` for the pod interface), Amazon EKS user guide `node-efa` (EFA devices
and 2 MiB huge pages as pod resources). Instance-family facts live in `data/workloads.json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from components.workload_facts import efa_family_facts, instance_family

Interconnect = Literal["efa", "infiniband", "tcp"]

POD_INTERFACE = "eth0"
"""The pod's network interface under the VPC CNI and the usual on-prem CNIs (Calico, Cilium)."""
EFA_RESOURCE = "vpc.amazonaws.com/efa"
HUGEPAGES_RESOURCE = "hugepages-2Mi"
IPC_LOCK = "IPC_LOCK"


@dataclass(frozen=True)
class FabricDevices:
    """Extended resources (requested and limited alike) and capabilities of one pod."""

    resources: dict[str, str] = field(default_factory=dict)
    capabilities: tuple[str, ...] = ()


def interconnect_env(
    interconnect: Interconnect,
    *,
    instance_type: str | None,
    ib_hca: str | None,
    nccl_debug: str,
) -> list[dict[str, str]]:
    """Environment variables (Kubernetes `env` entries) for every vLLM container of a pool.

    `instance_type` (EKS only) selects the EFA family settings: GPUDirect RDMA on p4d/p5/p6
    (`FI_EFA_USE_DEVICE_RDMA=1`), none on g5/g6/g6e, where it must be 0, and
    `NCCL_SHM_USE_CUDA_MEMCPY=1` on g-families ("x2 performance" per the cheatsheet).
    """
    env: dict[str, str] = {
        "NCCL_DEBUG": nccl_debug,
        "NCCL_SOCKET_IFNAME": POD_INTERFACE,
        "GLOO_SOCKET_IFNAME": POD_INTERFACE,
    }
    if interconnect == "efa":
        if instance_type is None:
            raise ValueError(
                "interconnect efa needs the pool's instance type (EFA settings depend on its family)"
            )
        facts = efa_family_facts()
        family = instance_family(instance_type)
        env["FI_PROVIDER"] = "efa"
        env["FI_EFA_USE_DEVICE_RDMA"] = "1" if family in facts.gpudirect_rdma_families else "0"
        env["FI_EFA_FORK_SAFE"] = "1"
        if family in facts.shm_cuda_memcpy_families:
            env["NCCL_SHM_USE_CUDA_MEMCPY"] = "1"
    elif interconnect == "infiniband":
        if ib_hca:
            env["NCCL_IB_HCA"] = ib_hca
    else:
        env["NCCL_IB_DISABLE"] = "1"
    return [{"name": name, "value": env[name]} for name in sorted(env)]


def fabric_devices(
    interconnect: Interconnect,
    *,
    multi_node: bool,
    efa_interfaces: int,
    rdma_resource: str | None,
) -> FabricDevices:
    """Fabric devices for one pod of a model.

    Only pods of a multi-node group send NCCL traffic over the network, so only they take fabric
    devices. Every such pod, the leader included, takes all `efa_interfaces` of its node (it owns
    the node's GPUs), 2 MiB huge pages for libfabric, and IPC_LOCK to register pinned memory; an
    InfiniBand pod takes one `rdma_resource` and IPC_LOCK. Single-node pods take none, which
    also lets replicas that use part of a node's GPUs share the node.
    """
    if not multi_node or interconnect == "tcp":
        return FabricDevices()
    if interconnect == "efa":
        if efa_interfaces < 1:
            raise ValueError("a multi-node EFA group needs the node's EFA interface count (got 0)")
        return FabricDevices(
            resources={
                EFA_RESOURCE: str(efa_interfaces),
                HUGEPAGES_RESOURCE: efa_family_facts().hugepages_2mi,
            },
            capabilities=(IPC_LOCK,),
        )
    if not rdma_resource:
        raise ValueError("a multi-node InfiniBand group needs the pool's rdmaResource (e.g. rdma/ib)")
    return FabricDevices(resources={rdma_resource: "1"}, capabilities=(IPC_LOCK,))
