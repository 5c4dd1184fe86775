"""Hardware facts: instance types and generic GPU models read from capacity/data/instance_types.json.

Checks the recorded facts of representative types, EFA support, aliases, and that unknown names
raise errors listing what is known.
"""

from __future__ import annotations

import pytest

from capacity import (
    UnknownInstanceTypeError,
    get_gpu_model,
    get_instance_type,
    gpu_model_names,
    instance_type_names,
)
from capacity.errors import UnknownGpuModelError

REQUIRED_TYPES = [
    "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge",
    "g5.xlarge", "g5.2xlarge", "g5.12xlarge", "g5.48xlarge", "g6.xlarge", "g6.12xlarge", "g6.48xlarge",
    "g6e.xlarge", "g6e.2xlarge", "g6e.12xlarge", "g6e.24xlarge", "g6e.48xlarge",
]  # fmt: skip


def test_p5_facts_are_recorded_exactly():
    p5 = get_instance_type("p5.48xlarge")
    assert (p5.gpu_model, p5.gpu_count, p5.gpu_memory_gib, p5.nvlink) == ("H100", 8, 79.19, True)
    assert (p5.network_cards, p5.max_efa_interfaces, p5.network_bandwidth_gbps) == (32, 32, 3200.0)
    assert (p5.vcpus, p5.memory_gib, p5.price_per_hour_usd, p5.architecture) == (192, 2048.0, 55.04, "x86_64")
    assert p5.efa_supported


def test_every_supported_type_is_known_and_has_a_gpu():
    assert set(REQUIRED_TYPES) <= set(instance_type_names())
    for name in instance_type_names():
        instance = get_instance_type(name)
        assert instance.gpu.memory_gib == instance.gpu_memory_gib
        assert instance.gpu_count >= 1


@pytest.mark.parametrize(
    ("name", "gpu", "nvlink", "efa"),
    [
        ("g6e.12xlarge", "L40S", False, True),
        ("g6e.xlarge", "L40S", False, False),
        ("g5.48xlarge", "A10G", False, True),
        ("g6.xlarge", "L4", False, False),
        ("p4d.24xlarge", "A100-40GB", True, True),
        ("p6-b200.48xlarge", "B200", True, True),
    ],
)
def test_nvlink_and_efa_per_type(name, gpu, nvlink, efa):
    instance = get_instance_type(name)
    assert (instance.gpu_model, instance.nvlink, instance.efa_supported) == (gpu, nvlink, efa)


def test_p5e_has_no_on_demand_price():
    assert get_instance_type("p5e.48xlarge").price_per_hour_usd is None


def test_generic_gpu_memory_as_torch_reports_it():
    assert get_gpu_model("H100").memory_gib == 79.19
    assert get_gpu_model("A100-80GB").memory_gib == 79.15
    assert get_gpu_model("A100-40GB").memory_gib == 39.38
    assert get_gpu_model("L40S").memory_gib == 44.53
    assert {"H100", "H200", "A100-40GB", "A100-80GB", "L40S", "L4", "A10G", "B200"} <= set(gpu_model_names())


def test_gpu_aliases_and_case_are_accepted():
    assert get_gpu_model("h100-80gb").name == "H100"
    assert get_gpu_model("NVIDIA L40S").name == "L40S"


def test_unknown_instance_type_lists_the_known_ones():
    with pytest.raises(
        UnknownInstanceTypeError, match=r"unknown instance type 'p9\.xlarge'; known GPU instance types: g5"
    ):
        get_instance_type("p9.xlarge")


def test_unknown_gpu_model_lists_the_known_ones():
    with pytest.raises(
        UnknownGpuModelError, match=r"unknown GPU model 'V100'; known GPU models: A100-40GB, A100-80GB, A10G"
    ):
        get_gpu_model("V100")
