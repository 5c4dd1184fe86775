"""IAM policy documents and names for the foundation components, as plain JSON strings.

Owns the trust policies (EKS control plane, EC2 nodes, VPC flow-log delivery, IRSA web identity,
EKS Pod Identity),
the least-privilege inline policies (flow-log delivery to one log group, the cluster role's use of
the secrets KMS key), the managed-policy set of a node role, and the resource-name slug of an
admin role's access entry. Pure: callers pass plain strings (inside an `apply` when they are
outputs) and get deterministic JSON back.
"""

from __future__ import annotations

import json
import re
from typing import Any

from components.aws_facts import aws_facts, dns_suffix_of, managed_policy_arn

ROLE_ARN = re.compile(
    r"^arn:(?P<partition>aws[a-z-]*):iam::(?P<account>\d{12}):role/(?P<path_name>[\w+=,.@/-]+)$"
)
# EKS Pod Identity's service principal; the EKS user guide uses this name in every partition.
POD_IDENTITY_PRINCIPAL = "pods.eks.amazonaws.com"


def _document(*statements: dict[str, Any]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)}, sort_keys=True)


def service_trust_policy(service: str, partition: str, *, tag_session: bool = False) -> str:
    """Trust policy letting an AWS service principal (e.g. `eks`, `ec2`) assume the role."""
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else ["sts:AssumeRole"]
    return _document(
        {
            "Effect": "Allow",
            "Principal": {"Service": f"{service}.{dns_suffix_of(partition)}"},
            "Action": actions,
        }
    )


def pod_identity_trust_policy() -> str:
    """Trust policy of a role handed to a service account through EKS Pod Identity.

    The agent assumes the role and tags the session with the pod's cluster, namespace and
    service account; which service account gets the role is decided by the association.
    """
    return _document(
        {
            "Effect": "Allow",
            "Principal": {"Service": POD_IDENTITY_PRINCIPAL},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    )


def irsa_trust_policy(provider_arn: str, issuer_url: str, namespace: str, service_account: str) -> str:
    """Trust policy for IAM roles for service accounts: one service account of one cluster only."""
    issuer = issuer_url.removeprefix("https://")
    return _document(
        {
            "Effect": "Allow",
            "Principal": {"Federated": provider_arn},
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {
                "StringEquals": {
                    f"{issuer}:aud": "sts.amazonaws.com",
                    f"{issuer}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                }
            },
        }
    )


def flow_log_delivery_policy(log_group_arn: str) -> str:
    """What VPC flow-log delivery needs, on one log group and its streams only."""
    return _document(
        {
            "Effect": "Allow",
            "Action": [
                "logs:CreateLogStream",
                "logs:DescribeLogGroups",
                "logs:DescribeLogStreams",
                "logs:PutLogEvents",
            ],
            "Resource": [log_group_arn, f"{log_group_arn}:*"],
        }
    )


def cluster_kms_policy(key_arn: str) -> str:
    """What the EKS cluster role needs for envelope encryption of Secrets with one KMS key."""
    return _document(
        {
            "Effect": "Allow",
            "Action": ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:ListGrants"],
            "Resource": key_arn,
        }
    )


def node_policy_arns(partition: str, *, attach_cni_policy: bool) -> tuple[str, ...]:
    """Managed policies of a node role: worker + ECR pull; the CNI policy only if vpc-cni has no own role."""
    iam = aws_facts()["iam"]
    names = list(iam["nodePolicies"])
    if attach_cni_policy:
        names.append(iam["cniPolicy"])
    return tuple(managed_policy_arn(partition, name) for name in sorted(names))


def cluster_policy_arns(partition: str) -> tuple[str, ...]:
    """Managed policies of the EKS cluster (control plane) role."""
    return tuple(
        managed_policy_arn(partition, name) for name in sorted(aws_facts()["iam"]["clusterPolicies"])
    )


def policy_slug(policy_arn: str) -> str:
    """`arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy` -> `amazoneksworkernodepolicy`."""
    return re.sub(r"[^a-z0-9]+", "-", policy_arn.rsplit("/", 1)[-1].lower()).strip("-")


def admin_role_slug(role_arn: str) -> str:
    """A stable, DNS-safe resource-name part for an admin role: `<account>-<role path and name>`."""
    match = ROLE_ARN.match(role_arn)
    if match is None:
        raise ValueError(f"{role_arn!r} is not an IAM role ARN such as arn:aws:iam::123456789012:role/admins")
    name = re.sub(r"[^a-z0-9]+", "-", match.group("path_name").lower()).strip("-")
    return f"{match.group('account')}-{name}"
