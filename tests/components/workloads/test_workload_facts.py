"""workload_facts: the pinned charts and images, the EKS add-on registry per region, EFA family facts."""

from __future__ import annotations

import pytest

from components import workload_facts


def test_charts_are_pinned_exactly() -> None:
    lws = workload_facts.chart("lws")
    assert (lws.chart, lws.version, lws.image_tag) == (
        "oci://registry.k8s.io/lws/charts/lws",
        "0.10.0",
        "v0.10.0",
    )
    for key in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin", "lws"):
        pin = workload_facts.chart(key)
        assert pin.version and pin.version not in ("latest", "main")
        assert pin.image_tag and pin.image_tag not in ("latest", "main")


def test_unknown_chart_lists_the_pinned_ones() -> None:
    with pytest.raises(
        KeyError,
        match="pinned: aws-efa-k8s-device-plugin, aws-load-balancer-controller, lws, nvidia-device-plugin",
    ):
        workload_facts.chart("keda")


@pytest.mark.parametrize(
    ("region", "registry"),
    [
        ("us-east-1", "602401143452.dkr.ecr.us-east-1.amazonaws.com"),
        ("af-south-1", "877085696533.dkr.ecr.af-south-1.amazonaws.com"),
        ("cn-north-1", "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn"),
    ],
)
def test_eks_addon_registry_is_in_the_clusters_region(region: str, registry: str) -> None:
    assert workload_facts.eks_addon_registry(region) == registry


def test_instance_family() -> None:
    assert workload_facts.instance_family("p6-b200.48xlarge") == "p6-b200"
    assert workload_facts.instance_family("g6e.12xlarge") == "g6e"


def test_gpudirect_rdma_only_on_p_families() -> None:
    facts = workload_facts.efa_family_facts()
    assert all(f.startswith("p") for f in facts.gpudirect_rdma_families)
    assert not facts.gpudirect_rdma_families & facts.shm_cuda_memcpy_families
