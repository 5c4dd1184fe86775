"""Network-boundary validators called directly: `no-public-ingress` (inline blocks, rule resources,
the load-balancer allow-list), `efa-self-only` (inline rules, rule resources, the self rules both
ways), `gpu-nodes-private` (tagged and node-group subnets, launch templates) and
`eks-endpoint-private` (private access, public CIDRs)."""

from __future__ import annotations

import pytest

from policies.network_rules import (
    EKS_CLUSTER,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    SUBNET,
    efa_self_only,
    efa_self_only_stack,
    eks_endpoint_private,
    gpu_nodes_private,
    gpu_nodes_private_stack,
    no_public_ingress,
    no_public_ingress_stack,
)
from policies.pack_config import ALLOWED_PUBLIC_LB_GROUPS, EFA_ROLE, ROLE_TAG, TIER_TAG
from policies.security_groups import SECURITY_GROUP, SECURITY_GROUP_RULE, VPC_EGRESS_RULE, VPC_INGRESS_RULE
from tests.policies.policy_fakes import check, check_stack, policy_resource, urn

HTTPS_ANYWHERE = {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]}
EFA_TAGS = {"tags": {ROLE_TAG: EFA_ROLE}}
SELF_ALL = {"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}


def test_inline_ingress_from_anywhere_is_reported_with_its_block() -> None:
    messages = check(no_public_ingress, SECURITY_GROUP, {"ingress": [HTTPS_ANYWHERE]}, name="web")
    assert messages == [
        "ingress[0] admits 0.0.0.0/0: the group is not a public load balancer group listed in "
        "'allowedPublicLoadBalancerGroups'."
    ]


def test_ipv6_anywhere_and_private_cidrs() -> None:
    ipv6 = {"protocol": "tcp", "fromPort": 80, "toPort": 80, "ipv6CidrBlocks": ["::/0"]}
    private = {"protocol": "tcp", "fromPort": 80, "toPort": 80, "cidrBlocks": ["10.0.0.0/16"]}
    egress_anywhere = {"egress": [HTTPS_ANYWHERE]}
    assert len(check(no_public_ingress, SECURITY_GROUP, {"ingress": [private, ipv6]})) == 1
    assert (
        "ingress[1] admits ::/0" in check(no_public_ingress, SECURITY_GROUP, {"ingress": [private, ipv6]})[0]
    )
    assert check(no_public_ingress, SECURITY_GROUP, {"ingress": [private], **egress_anywhere}) == []


@pytest.mark.parametrize("listed", ["web", "web-lb-aws-name"])
def test_allow_listed_load_balancer_group_by_resource_or_aws_name(listed: str) -> None:
    props = {"name": "web-lb-aws-name", "ingress": [HTTPS_ANYWHERE]}
    config = {ALLOWED_PUBLIC_LB_GROUPS: [listed]}
    assert check(no_public_ingress, SECURITY_GROUP, props, name="web", config=config) == []


def test_rule_resources_are_judged_by_their_group() -> None:
    lb = policy_resource(SECURITY_GROUP, "lb", {"id": "sg-lb"})
    nodes = policy_resource(SECURITY_GROUP, "nodes", {"id": "sg-nodes"})
    lb_rule = policy_resource(
        SECURITY_GROUP_RULE,
        "lb-https",
        {"type": "ingress", "cidrBlocks": ["0.0.0.0/0"]},
        deps={"securityGroupId": [lb]},
    )
    node_rule = policy_resource(
        VPC_INGRESS_RULE,
        "nodes-https",
        {"securityGroupId": "sg-nodes", "cidrIpv6": "::/0", "ipProtocol": "tcp"},
    )
    egress = policy_resource(
        SECURITY_GROUP_RULE,
        "nodes-out",
        {"type": "egress", "securityGroupId": "sg-nodes", "cidrBlocks": ["0.0.0.0/0"]},
    )
    resources = [lb, nodes, lb_rule, node_rule, egress]
    assert check_stack(no_public_ingress_stack, resources, {ALLOWED_PUBLIC_LB_GROUPS: ["lb"]}) == [
        (
            "rule 'nodes-https' admits ::/0 into security group 'nodes', which is not listed in "
            "'allowedPublicLoadBalancerGroups'.",
            urn(VPC_INGRESS_RULE, "nodes-https"),
        )
    ]
    assert len(check_stack(no_public_ingress_stack, resources)) == 2


def test_rule_on_a_group_outside_the_stack_is_never_exempt() -> None:
    rule = policy_resource(
        SECURITY_GROUP_RULE, "r", {"type": "ingress", "securityGroupId": "sg-x", "cidrBlocks": ["0.0.0.0/0"]}
    )
    assert check_stack(no_public_ingress_stack, [rule]) == [
        (
            "rule 'r' admits 0.0.0.0/0 into a security group outside this stack, which is not listed in "
            "'allowedPublicLoadBalancerGroups'.",
            rule.urn,
        )
    ]


def test_efa_inline_rules_must_be_self_only() -> None:
    to_nodes = {"protocol": "-1", "fromPort": 0, "toPort": 0, "securityGroups": ["sg-nodes"]}
    anywhere = {"protocol": "-1", "fromPort": 0, "toPort": 0, "cidrBlocks": ["0.0.0.0/0"], "self": True}
    props = {**EFA_TAGS, "ingress": [SELF_ALL, to_nodes], "egress": [anywhere]}
    assert check(efa_self_only, SECURITY_GROUP, props) == [
        "ingress[1] allows security group sg-nodes; EFA traffic must stay within the group (use self: true "
        "and nothing else).",
        "egress[0] allows CIDR 0.0.0.0/0, itself; EFA traffic must stay within the group (use self: true "
        "and nothing else).",
    ]


def test_untagged_groups_are_not_efa_groups() -> None:
    assert check(efa_self_only, SECURITY_GROUP, {"ingress": [HTTPS_ANYWHERE]}) == []


def test_efa_group_with_self_rule_resources_both_ways_passes() -> None:
    efa = policy_resource(SECURITY_GROUP, "efa", {**EFA_TAGS, "id": "sg-efa"})
    ingress = policy_resource(
        VPC_INGRESS_RULE,
        "efa-in",
        {"securityGroupId": "sg-efa", "referencedSecurityGroupId": "sg-efa", "ipProtocol": "-1"},
    )
    egress = policy_resource(
        VPC_EGRESS_RULE,
        "efa-out",
        {"ipProtocol": "-1"},
        deps={"securityGroupId": [efa], "referencedSecurityGroupId": [efa]},
    )
    assert check_stack(efa_self_only_stack, [efa, ingress, egress]) == []


def test_efa_group_without_self_rules_and_with_a_foreign_peer() -> None:
    efa = policy_resource(SECURITY_GROUP, "efa", {**EFA_TAGS, "id": "sg-efa", "ingress": [SELF_ALL]})
    nodes = policy_resource(SECURITY_GROUP, "nodes", {"id": "sg-nodes"})
    foreign = policy_resource(
        SECURITY_GROUP_RULE,
        "efa-from-nodes",
        {
            "type": "egress",
            "protocol": "-1",
            "securityGroupId": "sg-efa",
            "sourceSecurityGroupId": "sg-nodes",
        },
    )
    assert check_stack(efa_self_only_stack, [efa, nodes, foreign]) == [
        (
            "rule 'efa-from-nodes' on EFA security group 'efa' allows security group sg-nodes; EFA traffic "
            "must stay within the group.",
            foreign.urn,
        ),
        (
            "EFA security group 'efa' has no egress rule for all traffic (protocol \"-1\") to and from "
            "itself; EFA OS-bypass needs both directions.",
            efa.urn,
        ),
    ]


def test_self_rule_limited_to_tcp_does_not_count_as_all_traffic() -> None:
    efa = policy_resource(SECURITY_GROUP, "efa", {**EFA_TAGS, "id": "sg-efa"})
    tcp_self = [
        policy_resource(
            SECURITY_GROUP_RULE,
            f"efa-{d}",
            {"type": d, "protocol": "tcp", "self": True, "securityGroupId": "sg-efa"},
        )
        for d in ("ingress", "egress")
    ]
    assert [m for m, _ in check_stack(efa_self_only_stack, [efa, *tcp_self])] == [
        f"EFA security group 'efa' has no {d} rule for all traffic (protocol \"-1\") to and from itself; "
        "EFA OS-bypass needs both directions."
        for d in ("ingress", "egress")
    ]


def test_private_tier_subnet_must_not_map_public_ips() -> None:
    tagged = {"mapPublicIpOnLaunch": True, "tags": {TIER_TAG: "private"}}
    assert check(gpu_nodes_private, SUBNET, tagged) == [
        "subnet is tagged vllm-serving/tier=private but sets mapPublicIpOnLaunch: true."
    ]
    assert check(gpu_nodes_private, SUBNET, {"mapPublicIpOnLaunch": True, "tags": {TIER_TAG: "public"}}) == []
    assert (
        check(gpu_nodes_private, SUBNET, {"mapPublicIpOnLaunch": False, "tags": {TIER_TAG: "private"}}) == []
    )


@pytest.mark.parametrize("value", [True, "true", "TRUE"])
def test_launch_template_public_ip_in_any_spelling(value: object) -> None:
    props = {"networkInterfaces": [{"deviceIndex": 0}, {"deviceIndex": 1, "associatePublicIpAddress": value}]}
    assert check(gpu_nodes_private, LAUNCH_TEMPLATE, props) == [
        "networkInterfaces[1] sets associatePublicIpAddress: true; GPU nodes must have private addresses only."
    ]


def test_launch_template_without_public_ip_passes() -> None:
    props = {
        "networkInterfaces": [{"deviceIndex": 0, "associatePublicIpAddress": "false", "interfaceType": "efa"}]
    }
    assert check(gpu_nodes_private, LAUNCH_TEMPLATE, props) == []


def test_untagged_public_mapping_subnet_used_by_a_node_group() -> None:
    used = policy_resource(SUBNET, "gpu-a", {"id": "subnet-a", "mapPublicIpOnLaunch": True})
    unused = policy_resource(SUBNET, "public-b", {"id": "subnet-b", "mapPublicIpOnLaunch": True})
    tagged = policy_resource(
        SUBNET, "gpu-c", {"id": "subnet-c", "mapPublicIpOnLaunch": True, "tags": {TIER_TAG: "private"}}
    )
    group = policy_resource(NODE_GROUP, "gpu", {"subnetIds": ["subnet-a", "subnet-c"]})
    assert check_stack(gpu_nodes_private_stack, [used, unused, tagged, group]) == [
        ("subnet 'gpu-a' sets mapPublicIpOnLaunch: true and node group(s) gpu launch into it.", used.urn)
    ]


def test_private_endpoint_only_passes() -> None:
    props = {"vpcConfig": {"endpointPrivateAccess": True, "endpointPublicAccess": False}}
    assert check(eks_endpoint_private, EKS_CLUSTER, props) == []


def test_public_endpoint_with_admin_cidrs_passes() -> None:
    config = {
        "endpointPrivateAccess": True,
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["203.0.113.0/24"],
    }
    assert check(eks_endpoint_private, EKS_CLUSTER, {"vpcConfig": config}) == []


def test_aws_defaults_are_public_and_not_private() -> None:
    assert check(eks_endpoint_private, EKS_CLUSTER, {"vpcConfig": {"subnetIds": ["s"]}}) == [
        "vpcConfig.endpointPrivateAccess must be true (nodes reach the API inside the VPC).",
        "vpcConfig.endpointPublicAccess is true (the AWS default when unset) without publicAccessCidrs, "
        "which opens the API endpoint to 0.0.0.0/0.",
    ]


def test_public_endpoint_open_to_the_internet() -> None:
    config = {"endpointPrivateAccess": True, "publicAccessCidrs": ["10.1.0.0/16", "0.0.0.0/0"]}
    assert check(eks_endpoint_private, EKS_CLUSTER, {"vpcConfig": config}) == [
        "vpcConfig.publicAccessCidrs contains 0.0.0.0/0; list your admin networks."
    ]
