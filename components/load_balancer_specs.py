"""The AWS Load Balancer Controller's IAM policy and Helm values, for internal NLBs of Services.

The upstream policy (kubernetes-sigs/aws-load-balancer-controller docs/install/iam_policy.json)
also serves ALB Ingresses: Cognito, ACM, WAF, Shield, listener rules and `app/` load balancers.
This project only creates Services of type LoadBalancer (internal NLB, IP targets), so those are
left out. Everything the controller creates carries the `elbv2.k8s.aws/cluster` tag; creating,
changing and deleting are allowed only on resources with that tag, as upstream does. Pure data.
"""

from __future__ import annotations

import json
from typing import Any

CLUSTER_TAG = "elbv2.k8s.aws/cluster"
SERVICE_ACCOUNT = "aws-load-balancer-controller"

DESCRIBE_ACTIONS = (
    "ec2:DescribeAccountAttributes",
    "ec2:DescribeAddresses",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeCoipPools",
    "ec2:DescribeInstances",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeIpamPools",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeRouteTables",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeTags",
    "ec2:DescribeVpcPeeringConnections",
    "ec2:DescribeVpcs",
    "ec2:GetCoipPoolUsage",
    "ec2:GetSecurityGroupsForVpc",
    "elasticloadbalancing:DescribeCapacityReservation",
    "elasticloadbalancing:DescribeListenerAttributes",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTargetGroupAttributes",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetHealth",
)
MODIFY_TAGGED_ACTIONS = (
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:ModifyCapacityReservation",
    "elasticloadbalancing:ModifyListenerAttributes",
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
    "elasticloadbalancing:SetIpAddressType",
    "elasticloadbalancing:SetSecurityGroups",
    "elasticloadbalancing:SetSubnets",
)


def _tagged_on_request() -> dict[str, Any]:
    return {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "false"}}


def _tagged_resource() -> dict[str, Any]:
    return {"Null": {f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}


def _retag_tagged_resource() -> dict[str, Any]:
    """Changing tags of a controller-owned resource, without touching the ownership tag itself."""
    return {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true", f"aws:ResourceTag/{CLUSTER_TAG}": "false"}}


def load_balancer_controller_policy(partition: str) -> str:
    """The controller's inline policy for NLBs of Services (JSON)."""
    ec2_groups = f"arn:{partition}:ec2:*:*:security-group/*"
    elb = f"arn:{partition}:elasticloadbalancing:*:*"
    target_groups, network_lbs = f"{elb}:targetgroup/*/*", f"{elb}:loadbalancer/net/*/*"
    statements: list[dict[str, Any]] = [
        {
            "Sid": "ElbServiceLinkedRole",
            "Effect": "Allow",
            "Action": "iam:CreateServiceLinkedRole",
            "Resource": "*",
            "Condition": {"StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}},
        },
        {"Sid": "Describe", "Effect": "Allow", "Action": list(DESCRIBE_ACTIONS), "Resource": "*"},
        # The NLB's own security group: created in the VPC, tagged at creation, deleted only if owned.
        {
            "Sid": "CreateSecurityGroup",
            "Effect": "Allow",
            "Action": "ec2:CreateSecurityGroup",
            "Resource": "*",
        },
        {
            "Sid": "TagSecurityGroupOnCreate",
            "Effect": "Allow",
            "Action": "ec2:CreateTags",
            "Resource": ec2_groups,
            "Condition": {
                "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup"},
                **_tagged_on_request(),
            },
        },
        {
            "Sid": "RetagOwnedSecurityGroups",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags", "ec2:DeleteTags"],
            "Resource": ec2_groups,
            "Condition": _retag_tagged_resource(),
        },
        {
            "Sid": "DeleteOwnedSecurityGroups",
            "Effect": "Allow",
            "Action": "ec2:DeleteSecurityGroup",
            "Resource": "*",
            "Condition": _tagged_resource(),
        },
        # Target traffic rules go on the nodes' cluster security group, which the controller does
        # not own (upstream leaves these unconditioned for the same reason).
        {
            "Sid": "TargetTrafficRules",
            "Effect": "Allow",
            "Action": ["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            "Resource": "*",
        },
        {
            "Sid": "CreateOwnedLoadBalancers",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup"],
            "Resource": "*",
            "Condition": _tagged_on_request(),
        },
        {
            "Sid": "TagOnCreate",
            "Effect": "Allow",
            "Action": "elasticloadbalancing:AddTags",
            "Resource": [target_groups, network_lbs],
            "Condition": {
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": ["CreateTargetGroup", "CreateLoadBalancer"]
                },
                **_tagged_on_request(),
            },
        },
        {
            "Sid": "RetagOwnedLoadBalancers",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            "Resource": [target_groups, network_lbs],
            "Condition": _retag_tagged_resource(),
        },
        {
            "Sid": "ModifyOwnedLoadBalancers",
            "Effect": "Allow",
            "Action": list(MODIFY_TAGGED_ACTIONS),
            "Resource": "*",
            "Condition": _tagged_resource(),
        },
        # As upstream: listener calls are not conditioned on the ownership tag.
        {
            "Sid": "Listeners",
            "Effect": "Allow",
            "Action": [
                "elasticloadbalancing:CreateListener",
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:ModifyListener",
            ],
            "Resource": "*",
        },
        {
            "Sid": "TagListeners",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            "Resource": f"{elb}:listener/net/*/*/*",
        },
        {
            "Sid": "Targets",
            "Effect": "Allow",
            "Action": ["elasticloadbalancing:RegisterTargets", "elasticloadbalancing:DeregisterTargets"],
            "Resource": target_groups,
        },
    ]
    return json.dumps({"Version": "2012-10-17", "Statement": statements}, sort_keys=True)


def load_balancer_controller_values(
    *, cluster_name: str, region: str, vpc_id: str, image_repository: str, image_tag: str
) -> dict[str, Any]:
    """Helm values: Services only (no IngressClass, no Service mutating webhook, so the controller
    takes only Services annotated `aws-load-balancer-type: external`), two replicas, the pinned
    image. With no GPU toleration it runs on the system nodes."""
    return {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "replicaCount": 2,
        "image": {"repository": image_repository, "tag": image_tag},
        "serviceAccount": {"create": True, "name": SERVICE_ACCOUNT},
        "enableServiceMutatorWebhook": False,
        "createIngressClassResource": False,
        "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
        "podDisruptionBudget": {"maxUnavailable": 1},
    }
