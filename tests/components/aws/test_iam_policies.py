"""IAM documents (components/iam_policies.py): service trust policies, the IRSA trust scoped to one
service account, least-privilege flow-log and KMS policies, node role policy sets (no CNI policy
unless asked, never admin), and stable access-entry name slugs."""

from __future__ import annotations

import json

import pytest

from components.iam_policies import (
    admin_role_slug,
    cluster_kms_policy,
    cluster_policy_arns,
    flow_log_delivery_policy,
    irsa_trust_policy,
    node_policy_arns,
    pod_identity_trust_policy,
    policy_slug,
    service_trust_policy,
)


def test_service_trust_policies() -> None:
    assert json.loads(service_trust_policy("ec2", "aws")) == {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": ["sts:AssumeRole"]}
        ],
    }
    eks = json.loads(service_trust_policy("eks", "aws-cn", tag_session=True))
    assert eks["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com.cn"}
    assert eks["Statement"][0]["Action"] == ["sts:AssumeRole", "sts:TagSession"]


def test_pod_identity_trust_lets_only_the_eks_pod_identity_agent_assume() -> None:
    assert json.loads(pod_identity_trust_policy()) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "pods.eks.amazonaws.com"},
                "Action": ["sts:AssumeRole", "sts:TagSession"],
            }
        ],
    }


def test_irsa_trust_is_scoped_to_one_service_account() -> None:
    document = json.loads(
        irsa_trust_policy(
            "arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/ABC",
            "https://oidc.eks.us-east-1.amazonaws.com/id/ABC",
            "kube-system",
            "aws-node",
        )
    )
    statement = document["Statement"][0]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    assert statement["Condition"] == {
        "StringEquals": {
            "oidc.eks.us-east-1.amazonaws.com/id/ABC:aud": "sts.amazonaws.com",
            "oidc.eks.us-east-1.amazonaws.com/id/ABC:sub": "system:serviceaccount:kube-system:aws-node",
        }
    }


def test_flow_log_and_kms_policies_name_one_resource() -> None:
    flow = json.loads(flow_log_delivery_policy("arn:aws:logs:us-east-1:1:log-group:g"))["Statement"][0]
    assert flow["Resource"] == [
        "arn:aws:logs:us-east-1:1:log-group:g",
        "arn:aws:logs:us-east-1:1:log-group:g:*",
    ]
    assert all(action.startswith("logs:") for action in flow["Action"])
    kms = json.loads(cluster_kms_policy("arn:aws:kms:us-east-1:1:key/k"))["Statement"][0]
    assert kms["Resource"] == "arn:aws:kms:us-east-1:1:key/k"
    assert "kms:*" not in kms["Action"]


def test_node_policies_are_least_privilege() -> None:
    assert node_policy_arns("aws", attach_cni_policy=False) == (
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    )
    with_cni = node_policy_arns("aws", attach_cni_policy=True)
    assert "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy" in with_cni
    assert not any("Admin" in arn or "FullAccess" in arn for arn in with_cni)
    assert cluster_policy_arns("aws") == ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)


def test_slugs() -> None:
    assert policy_slug("arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy") == "amazoneks-cni-policy"
    assert admin_role_slug("arn:aws:iam::123456789012:role/platform-admins") == "123456789012-platform-admins"
    assert admin_role_slug("arn:aws:iam::123456789012:role/team/Ops.Admin") == "123456789012-team-ops-admin"
    with pytest.raises(ValueError, match="is not an IAM role ARN"):
        admin_role_slug("arn:aws:iam::123456789012:user/alice")
