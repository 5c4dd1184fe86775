"""AWS facts (components/aws_facts.py and data/aws.json): regions and partitions, AMI types, the
pinned add-on versions (and that the pinned vpc-cni handles `efa-only` interfaces), CloudWatch
retention values, managed-policy ARNs, and that every data entry carries its source."""

from __future__ import annotations

import pytest

from components.aws_facts import (
    AddonVersions,
    AwsFactsError,
    addon_versions,
    ami_type,
    aws_facts,
    check_log_retention,
    decide_region,
    eks_access_policy_arn,
    general_purpose_architecture,
    instance_family,
    managed_policy_arn,
    partition_of,
    region_of_az,
    supported_kubernetes_versions,
    version_key,
    vpc_cni_supports_efa_only,
)


def test_region_and_partition() -> None:
    assert region_of_az("us-east-1a") == "us-east-1"
    assert region_of_az("ap-southeast-2c") == "ap-southeast-2"
    assert region_of_az("us-gov-west-1b") == "us-gov-west-1"
    assert partition_of("us-east-1") == "aws"
    assert partition_of("cn-north-1") == "aws-cn"
    assert partition_of("us-gov-west-1") == "aws-us-gov"
    with pytest.raises(AwsFactsError, match="'us-east-1' is not an availability zone name"):
        region_of_az("us-east-1")


def test_region_precedence() -> None:
    assert decide_region("eu-west-1", "us-east-2", ["us-east-1a"]) == "eu-west-1"
    assert decide_region(None, "us-east-2", ["us-east-1a"]) == "us-east-2"
    assert decide_region(None, None, ["us-west-2b"]) == "us-west-2"
    with pytest.raises(AwsFactsError, match="no region"):
        decide_region(None, None, [])


def test_ami_types() -> None:
    assert ami_type("x86_64", accelerated=True) == "AL2023_x86_64_NVIDIA"
    assert ami_type("arm64", accelerated=True) == "AL2023_ARM_64_NVIDIA"
    assert ami_type("x86_64", accelerated=False) == "AL2023_x86_64_STANDARD"
    assert ami_type("arm64", accelerated=False) == "AL2023_ARM_64_STANDARD"
    with pytest.raises(AwsFactsError, match="no EKS AMI type for architecture 'ppc64'"):
        ami_type("ppc64", accelerated=True)


@pytest.mark.parametrize(
    ("instance_type", "arch"),
    [
        ("m7i.xlarge", "x86_64"),
        ("m7g.xlarge", "arm64"),
        ("c7gn.large", "arm64"),
        ("t4g.medium", "arm64"),
        ("g6e.xlarge", "x86_64"),
        ("m7i-flex.large", "x86_64"),
        ("r8g.2xlarge", "arm64"),
    ],
)
def test_general_purpose_architecture(instance_type: str, arch: str) -> None:
    assert general_purpose_architecture(instance_type) == arch


def test_instance_family_needs_a_size() -> None:
    assert instance_family("p6-b200.48xlarge") == "p6-b200"
    with pytest.raises(AwsFactsError, match="'p5' is not an EC2 instance type"):
        instance_family("p5")


def test_addon_versions_for_the_default_kubernetes_version() -> None:
    assert addon_versions("1.33") == AddonVersions(
        vpc_cni="v1.20.1-eksbuild.3",
        coredns="v1.12.4-eksbuild.18",
        kube_proxy="v1.33.10-eksbuild.13",
        pod_identity_agent="v1.3.4-eksbuild.1",
        ebs_csi_driver="v1.46.0-eksbuild.1",
    )
    assert sorted(addon_versions("1.33").as_dict()) == [
        "aws-ebs-csi-driver",
        "coredns",
        "eks-pod-identity-agent",
        "kube-proxy",
        "vpc-cni",
    ]


def test_every_supported_version_has_matching_kube_proxy() -> None:
    assert supported_kubernetes_versions() == ["1.31", "1.32", "1.33"]
    for version in supported_kubernetes_versions():
        assert addon_versions(version).kube_proxy.startswith(f"v{version}.")


def test_unpinned_kubernetes_version_is_rejected_with_the_pinned_list() -> None:
    with pytest.raises(
        AwsFactsError,
        match=r"no pinned EKS add-on versions for Kubernetes 1\.29 .*\(pinned: 1\.31, 1\.32, 1\.33\)",
    ):
        addon_versions("1.29")


def test_pinned_vpc_cni_handles_efa_only_interfaces() -> None:
    pinned = aws_facts()["eksAddons"]["vpcCni"]["version"]
    assert vpc_cni_supports_efa_only(pinned)
    assert version_key(pinned) >= (1, 19)
    assert vpc_cni_supports_efa_only("v1.18.5-eksbuild.1")
    assert not vpc_cni_supports_efa_only("v1.18.4-eksbuild.1")


def test_log_retention_values() -> None:
    assert check_log_retention(90, "k") == 90
    with pytest.raises(
        AwsFactsError,
        match=r"^vllm-serving:network.flowLogsRetentionDays: CloudWatch Logs cannot keep logs for 45 days",
    ):
        check_log_retention(45, "vllm-serving:network.flowLogsRetentionDays")


def test_policy_arns() -> None:
    assert (
        managed_policy_arn("aws", "AmazonEKSWorkerNodePolicy")
        == "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy"
    )
    assert (
        eks_access_policy_arn("aws-us-gov", "AmazonEKSClusterAdminPolicy")
        == "arn:aws-us-gov:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    )


def test_every_fact_group_names_its_source() -> None:
    facts = aws_facts()
    for group in ("eksAddons", "amiTypes", "efa", "rootVolume", "instanceMetadata", "iam", "cloudWatchLogs"):
        assert any("source" in key.lower() for key in facts[group]), group
    assert "interfaceEndpointsSource" in facts["network"]
    assert "fsxLustrePortsSource" in facts["network"]


def test_a_kubernetes_version_without_a_pinned_ebs_csi_driver_is_not_supported(monkeypatch) -> None:
    import copy

    from components import aws_facts as facts_module

    data = copy.deepcopy(facts_module.aws_facts())
    data["eksAddons"]["ebsCsiDriver"]["kubernetesVersions"] = ["1.33"]
    monkeypatch.setattr(facts_module, "aws_facts", lambda: data)
    assert facts_module.supported_kubernetes_versions() == ["1.33"]
