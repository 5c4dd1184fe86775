"""AWS facts for the foundation components, read from `components/data/aws.json`.

Owns the loading of that data file and the small pure decisions made from it: the region of an
availability zone, the partition of a region, the AMI type of an instance type, the pinned EKS
add-on versions for a Kubernetes version, ARNs of AWS-managed IAM policies, and version ordering.
No Pulumi imports and no cloud calls: same inputs, same answers.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

DATA_FILE = Path(__file__).resolve().parent / "data" / "aws.json"

Architecture = Literal["x86_64", "arm64"]


class AwsFactsError(ValueError):
    """A request the data file cannot answer (unknown version, malformed zone name, ...)."""


@functools.cache
def aws_facts() -> dict[str, Any]:
    """The parsed data file (cached; treat as read-only)."""
    return json.loads(DATA_FILE.read_text())


AZ_PATTERN = re.compile(r"^(?P<region>[a-z]{2}(-[a-z]+)+-\d)[a-z]$")


def region_of_az(availability_zone: str) -> str:
    """`us-east-1a` -> `us-east-1` (the zone name minus its letter)."""
    match = AZ_PATTERN.match(availability_zone)
    if match is None:
        raise AwsFactsError(f"{availability_zone!r} is not an availability zone name such as us-east-1a")
    return match.group("region")


def decide_region(explicit: str | None, provider_region: str | None, availability_zones: list[str]) -> str:
    """The region to use: an explicit one, else the provider's `aws:region`, else the zones' region.

    The last fallback keeps offline runs deterministic when no provider region is configured.
    """
    if explicit:
        return explicit
    if provider_region:
        return provider_region
    if not availability_zones:
        raise AwsFactsError("no region: pass one, set aws:region, or list availability zones")
    return region_of_az(availability_zones[0])


def partition_of(region: str) -> str:
    """The ARN partition of a region: aws-cn for China, aws-us-gov for GovCloud, else aws."""
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def dns_suffix_of(partition: str) -> str:
    """Service DNS suffix of a partition (service principals use it)."""
    return "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"


def instance_family(instance_type: str) -> str:
    """`p5.48xlarge` -> `p5`; `p6e-gb200.36xlarge` -> `p6e-gb200`."""
    family, dot, size = instance_type.partition(".")
    if not dot or not family or not size:
        raise AwsFactsError(f"{instance_type!r} is not an EC2 instance type such as p5.48xlarge")
    return family


def general_purpose_architecture(instance_type: str) -> Architecture:
    """CPU architecture of a general-purpose (non-GPU) instance type, from Graviton naming.

    GPU instance types take their architecture from the capacity catalog instead.
    """
    family = instance_family(instance_type)
    return "arm64" if re.match(aws_facts()["amiTypes"]["gravitonFamilyPattern"], family) else "x86_64"


def ami_type(architecture: str, *, accelerated: bool) -> str:
    """EKS AMI type: AL2023 NVIDIA for GPU nodes, AL2023 standard otherwise, per architecture."""
    amis = aws_facts()["amiTypes"]["gpu" if accelerated else "standard"]
    if architecture not in amis:
        raise AwsFactsError(
            f"no EKS AMI type for architecture {architecture!r}; known: {', '.join(sorted(amis))}"
        )
    return amis[architecture]


def version_key(version: str) -> tuple[int, ...]:
    """`v1.20.1-eksbuild.3` -> (1, 20, 1, 3): orders add-on versions numerically."""
    numbers = re.findall(r"\d+", version)
    if not numbers:
        raise AwsFactsError(f"{version!r} has no version numbers")
    return tuple(int(n) for n in numbers)


@dataclass(frozen=True)
class AddonVersions:
    """The pinned managed add-on versions for one Kubernetes minor version."""

    vpc_cni: str
    coredns: str
    kube_proxy: str
    pod_identity_agent: str
    ebs_csi_driver: str

    def as_dict(self) -> dict[str, str]:
        """Add-on name (as EKS spells it) -> version."""
        return {
            "aws-ebs-csi-driver": self.ebs_csi_driver,
            "coredns": self.coredns,
            "eks-pod-identity-agent": self.pod_identity_agent,
            "kube-proxy": self.kube_proxy,
            "vpc-cni": self.vpc_cni,
        }


def supported_kubernetes_versions() -> list[str]:
    """Kubernetes versions for which every add-on has a pinned version."""
    addons = aws_facts()["eksAddons"]
    pinned = (
        set(addons["coredns"])
        & set(addons["kubeProxy"])
        & set(addons["vpcCni"]["kubernetesVersions"])
        & set(addons["ebsCsiDriver"]["kubernetesVersions"])
    )
    return sorted(pinned, key=version_key)


def addon_versions(kubernetes_version: str) -> AddonVersions:
    """Pinned add-on versions for `kubernetes_version`, or an error listing the supported ones."""
    supported = supported_kubernetes_versions()
    if kubernetes_version not in supported:
        raise AwsFactsError(
            f"no pinned EKS add-on versions for Kubernetes {kubernetes_version} in {DATA_FILE.name} "
            f"(pinned: {', '.join(supported)}); set vllm-serving:cluster.version to one of them "
            "or add the versions from the EKS user guide's add-on tables"
        )
    addons = aws_facts()["eksAddons"]
    return AddonVersions(
        vpc_cni=addons["vpcCni"]["version"],
        coredns=addons["coredns"][kubernetes_version],
        kube_proxy=addons["kubeProxy"][kubernetes_version],
        pod_identity_agent=addons["podIdentityAgent"]["version"],
        ebs_csi_driver=addons["ebsCsiDriver"]["version"],
    )


def vpc_cni_supports_efa_only(version: str) -> bool:
    """Whether a vpc-cni version ignores `efa-only` interfaces correctly (>= the documented minimum)."""
    minimum = aws_facts()["eksAddons"]["vpcCni"]["minimumForEfaOnly"]
    return version_key(version)[:3] >= version_key(minimum)[:3]


def check_log_retention(days: int, key: str) -> int:
    """`days` if CloudWatch Logs accepts it as a retention period; else an error naming `key`."""
    allowed = aws_facts()["cloudWatchLogs"]["retentionDays"]
    if days not in allowed:
        raise AwsFactsError(
            f"{key}: CloudWatch Logs cannot keep logs for {days} days; "
            f"use one of {', '.join(map(str, allowed))}"
        )
    return days


def managed_policy_arn(partition: str, policy_name: str) -> str:
    """ARN of an AWS-managed IAM policy."""
    return f"arn:{partition}:iam::aws:policy/{policy_name}"


def eks_access_policy_arn(partition: str, policy_name: str) -> str:
    """ARN of an EKS cluster access policy (used by access entries)."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{policy_name}"
