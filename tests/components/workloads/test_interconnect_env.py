"""interconnect_env: NCCL/libfabric environment per interconnect and instance family, fabric devices.

Checks exact variables for EFA on p5 (GPUDirect RDMA) and g6e (no RDMA, SHM CUDA memcpy), InfiniBand
and TCP; that EFA devices, huge pages and IPC_LOCK go to every pod of a multi-node group and to no
single-node pod; and the errors for missing inputs.
"""

from __future__ import annotations

import pytest

from components.interconnect_env import (
    EFA_RESOURCE,
    HUGEPAGES_RESOURCE,
    IPC_LOCK,
    FabricDevices,
    fabric_devices,
    interconnect_env,
)


def as_dict(env: list[dict[str, str]]) -> dict[str, str]:
    return {entry["name"]: entry["value"] for entry in env}


def test_efa_on_p5_uses_gpudirect_rdma() -> None:
    env = interconnect_env("efa", instance_type="p5.48xlarge", ib_hca=None, nccl_debug="WARN")
    assert as_dict(env) == {
        "FI_EFA_FORK_SAFE": "1",
        "FI_EFA_USE_DEVICE_RDMA": "1",
        "FI_PROVIDER": "efa",
        "GLOO_SOCKET_IFNAME": "eth0",
        "NCCL_DEBUG": "WARN",
        "NCCL_SOCKET_IFNAME": "eth0",
    }


def test_efa_on_g6e_disables_device_rdma_and_copies_shm_with_cuda() -> None:
    env = as_dict(interconnect_env("efa", instance_type="g6e.12xlarge", ib_hca=None, nccl_debug="INFO"))
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "0"
    assert env["NCCL_SHM_USE_CUDA_MEMCPY"] == "1"
    assert env["NCCL_DEBUG"] == "INFO"


def test_env_is_sorted_by_name_for_a_stable_graph() -> None:
    env = interconnect_env("efa", instance_type="p5en.48xlarge", ib_hca=None, nccl_debug="WARN")
    names = [entry["name"] for entry in env]
    assert names == sorted(names)


def test_infiniband_names_the_hca_and_has_no_efa_variables() -> None:
    env = as_dict(interconnect_env("infiniband", instance_type=None, ib_hca="mlx5", nccl_debug="INFO"))
    assert env == {
        "GLOO_SOCKET_IFNAME": "eth0",
        "NCCL_DEBUG": "INFO",
        "NCCL_IB_HCA": "mlx5",
        "NCCL_SOCKET_IFNAME": "eth0",
    }


def test_tcp_disables_infiniband_and_sets_no_efa_variables() -> None:
    env = as_dict(interconnect_env("tcp", instance_type="g6e.xlarge", ib_hca=None, nccl_debug="WARN"))
    assert env == {
        "GLOO_SOCKET_IFNAME": "eth0",
        "NCCL_DEBUG": "WARN",
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": "eth0",
    }


def test_efa_needs_the_instance_type() -> None:
    with pytest.raises(ValueError, match="interconnect efa needs the pool's instance type"):
        interconnect_env("efa", instance_type=None, ib_hca=None, nccl_debug="WARN")


def test_multi_node_efa_pod_takes_every_interface_huge_pages_and_ipc_lock() -> None:
    devices = fabric_devices("efa", multi_node=True, efa_interfaces=32, rdma_resource=None)
    assert devices == FabricDevices(
        resources={EFA_RESOURCE: "32", HUGEPAGES_RESOURCE: "5120Mi"}, capabilities=(IPC_LOCK,)
    )


@pytest.mark.parametrize("interconnect", ["efa", "infiniband", "tcp"])
def test_single_node_pods_take_no_fabric_devices(interconnect: str) -> None:
    devices = fabric_devices(interconnect, multi_node=False, efa_interfaces=32, rdma_resource="rdma/ib")  # type: ignore[arg-type]
    assert devices == FabricDevices()


def test_multi_node_infiniband_pod_takes_one_rdma_device_and_ipc_lock() -> None:
    devices = fabric_devices("infiniband", multi_node=True, efa_interfaces=0, rdma_resource="rdma/ib")
    assert devices == FabricDevices(resources={"rdma/ib": "1"}, capabilities=(IPC_LOCK,))


def test_multi_node_tcp_pod_takes_nothing() -> None:
    assert fabric_devices("tcp", multi_node=True, efa_interfaces=0, rdma_resource=None) == FabricDevices()


def test_multi_node_efa_without_interfaces_is_an_error() -> None:
    with pytest.raises(ValueError, match="EFA interface count"):
        fabric_devices("efa", multi_node=True, efa_interfaces=0, rdma_resource=None)


def test_multi_node_infiniband_without_rdma_resource_is_an_error() -> None:
    with pytest.raises(ValueError, match="rdmaResource"):
        fabric_devices("infiniband", multi_node=True, efa_interfaces=0, rdma_resource=None)
