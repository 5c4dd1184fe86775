"""What a node boots with: launch-template pieces (components/launch_templates.py), the MIME user
data as golden files with a shellchecked script (components/node_user_data.py), the kubeconfig's
exec credentials (components/kubeconfig.py), and the scheduler/autoscaler view of a GPU node
(components/node_scheduling.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from components import launch_templates as lt
from components.efa_layout import EfaInterface
from components.kubeconfig import render_kubeconfig
from components.node_scheduling import GPU_TAINT, autoscaler_tags, gpu_node_labels, node_resources
from components.node_user_data import BOUNDARY, hugepages_script, render_user_data
from tests.components.aws.support import GOLDEN


def test_imdsv2_with_hop_limit_two() -> None:
    assert lt.metadata_options() == {
        "http_endpoint": "enabled",
        "http_tokens": "required",
        "http_put_response_hop_limit": 2,
        "instance_metadata_tags": "disabled",
    }


def test_root_volume_is_encrypted_gp3() -> None:
    assert lt.root_volume(1024) == [
        {
            "device_name": "/dev/xvda",
            "ebs": {
                "volume_size": 1024,
                "volume_type": "gp3",
                "iops": 6000,
                "throughput": 500,
                "encrypted": "true",
                "delete_on_termination": "true",
            },
        }
    ]
    with pytest.raises(ValueError, match="at least 20 GiB"):
        lt.root_volume(8)


def test_interfaces_carry_every_group_and_no_subnet_or_public_ip() -> None:
    interfaces = lt.network_interfaces(
        (EfaInterface(0, 0, "efa"), EfaInterface(1, 1, "efa-only")), ["sg-a", "sg-b"]
    )
    assert interfaces[1] == {
        "network_card_index": 1,
        "device_index": 1,
        "interface_type": "efa-only",
        "security_groups": ["sg-a", "sg-b"],
        "associate_public_ip_address": "false",
        "delete_on_termination": "true",
    }
    assert all("subnet_id" not in i for i in interfaces)


def test_capacity_options() -> None:
    assert lt.capacity_options("on-demand", None) == {}
    assert lt.capacity_options("spot", None) == {}
    assert lt.capacity_options("on-demand", "cr-0123456789abcdef0") == {
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": "cr-0123456789abcdef0"}
        }
    }
    block = lt.capacity_options("capacity-block", "cr-0123456789abcdef0")
    assert block["instance_market_options"] == {"market_type": "capacity-block"}
    assert block["capacity_reservation_specification"]["capacity_reservation_target"] == {
        "capacity_reservation_id": "cr-0123456789abcdef0"
    }
    with pytest.raises(ValueError, match="capacity-block needs capacityReservationId"):
        lt.capacity_options("capacity-block", None)
    with pytest.raises(ValueError, match="cannot be combined with capacityType spot"):
        lt.capacity_options("spot", "cr-0123456789abcdef0")
    assert [lt.eks_capacity_type(c) for c in ("on-demand", "spot", "capacity-block")] == [
        "ON_DEMAND",
        "SPOT",
        "CAPACITY_BLOCK",
    ]


@pytest.mark.parametrize(("pages", "golden"), [(5128, "user_data_efa.txt"), (0, "user_data_tcp.txt")])
def test_user_data_matches_golden(pages: int, golden: str) -> None:
    assert render_user_data(hugepages=pages) == (GOLDEN / golden).read_text()


def test_user_data_parts() -> None:
    text = render_user_data(hugepages=5128)
    assert text.count(f"--{BOUNDARY}\n") == 2 and text.endswith(f"--{BOUNDARY}--\n")
    assert "Content-Type: application/node.eks.aws" in text
    assert "strategy: RAID0" in text
    assert "vm.nr_hugepages = 5128" in text
    assert render_user_data(hugepages=0, raid0_local_storage=False) == ""


def test_hugepages_script_passes_shellcheck() -> None:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("shellcheck")), "--shell=bash", "-"],
        input=hugepages_script(5128),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    with pytest.raises(ValueError, match="must be positive"):
        hugepages_script(0)


def test_kubeconfig_uses_exec_credentials_only() -> None:
    text = render_kubeconfig(
        cluster_name="vllm-serving-prod",
        endpoint="https://ABC.gr7.us-east-1.eks.amazonaws.com",
        certificate_authority_data="Q0E=",
        region="us-east-1",
    )
    document = json.loads(text)
    user = document["users"][0]["user"]
    assert list(user) == ["exec"]
    assert user["exec"]["command"] == "aws"
    assert user["exec"]["args"] == [
        "eks",
        "get-token",
        "--cluster-name",
        "vllm-serving-prod",
        "--region",
        "us-east-1",
        "--output",
        "json",
    ]
    assert document["clusters"][0]["cluster"] == {
        "server": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificate-authority-data": "Q0E=",
    }
    assert '"token"' not in text and "client-certificate" not in text
    with pytest.raises(ValueError, match="must be an https URL"):
        render_kubeconfig(
            cluster_name="c", endpoint="http://x", certificate_authority_data="", region="us-east-1"
        )


def test_gpu_labels_taint_and_autoscaler_tags_for_p5() -> None:
    labels = gpu_node_labels("h100", "H100", efa=True)
    assert labels == {
        "nvidia.com/gpu.present": "true",
        "vllm-serving/gpu-model": "H100",
        "vllm-serving/pool": "h100",
        "vpc.amazonaws.com/efa.present": "true",
    }
    resources = node_resources(8, 32, 5128)
    assert resources == {"hugepages-2Mi": "10256Mi", "nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    tags = autoscaler_tags("vllm-serving-prod", labels, (GPU_TAINT,), resources)
    prefix = "k8s.io/cluster-autoscaler"
    assert tags[f"{prefix}/enabled"] == "true"
    assert tags[f"{prefix}/vllm-serving-prod"] == "owned"
    assert tags[f"{prefix}/node-template/label/vllm-serving/pool"] == "h100"
    assert tags[f"{prefix}/node-template/taint/nvidia.com/gpu"] == "true:NoSchedule"
    assert tags[f"{prefix}/node-template/resources/vpc.amazonaws.com/efa"] == "32"
    assert tags[f"{prefix}/node-template/resources/hugepages-2Mi"] == "10256Mi"
    assert all(len(key) <= 128 for key in tags)


def test_tcp_pool_has_no_efa_label_or_resource() -> None:
    assert "vpc.amazonaws.com/efa.present" not in gpu_node_labels("l40s", "L40S", efa=False)
    assert node_resources(1, 0, 0) == {"nvidia.com/gpu": "1"}
    with pytest.raises(ValueError, match="is not a valid Kubernetes label value"):
        gpu_node_labels("h100", "H100 80GB", efa=False)
    assert GPU_TAINT.eks() == {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}
