"""Network-boundary policies: public ingress, the EFA group, GPU node addressing, the EKS endpoint.

Owns `no-public-ingress`, `efa-self-only`, `gpu-nodes-private` and `eks-endpoint-private`.
Inline rules and single resources are checked per resource (so `pulumi up` stops before the
resource exists); what needs the graph (rule resources and their group, the subnets node groups
use) is checked at stack level under the same policy name (see `two_phase.py`).
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
)

from .pack_config import (
    ALLOWED_PUBLIC_LB_GROUPS,
    CONFIG_SCHEMAS,
    EFA_ROLE,
    EFA_SELF_ONLY,
    EKS_ENDPOINT_PRIVATE,
    GPU_NODES_PRIVATE,
    NO_PUBLIC_INGRESS,
    PRIVATE_TIER,
    PUBLIC_CIDRS,
    ROLE_TAG,
    TIER_TAG,
    setting,
)
from .props import as_list, as_map, dig, is_true, known, of_type, refers_to, tag
from .security_groups import (
    SECURITY_GROUP,
    SgRule,
    group_names,
    inline_rules,
    is_self_rule,
    rule_resources_by_group,
)
from .two_phase import TwoPhasePolicy

SUBNET = "aws:ec2/subnet:Subnet"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EKS_CLUSTER = "aws:eks/cluster:Cluster"


def _public_cidrs(rule: SgRule) -> list[str]:
    return [c for c in rule.cidrs if c in PUBLIC_CIDRS]


def _allowed_public(args: ResourceValidationArgs | StackValidationArgs, names: set[str]) -> bool:
    allowed = set(setting(args, NO_PUBLIC_INGRESS, ALLOWED_PUBLIC_LB_GROUPS))
    return bool(allowed & names)


def no_public_ingress(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Inline ingress blocks of a security group must not admit 0.0.0.0/0 or ::/0."""
    if args.resource_type != SECURITY_GROUP:
        return
    if _allowed_public(args, group_names(args.name, args.props)):
        return
    for rule in inline_rules(args.props):
        if rule.direction == "ingress" and _public_cidrs(rule):
            report(
                f"{rule.where} admits {', '.join(_public_cidrs(rule))}: the group is not a public load "
                f"balancer group listed in '{ALLOWED_PUBLIC_LB_GROUPS}'."
            )


def no_public_ingress_stack(args: StackValidationArgs, report: ReportViolation) -> None:
    """Ingress rule resources must not admit 0.0.0.0/0 or ::/0 (their group decides the exemption)."""
    groups, orphans = rule_resources_by_group(args.resources)
    pairs = [(g.group, r, rule) for g in groups for r, rule in g.rules] + [(None, r, rl) for r, rl in orphans]
    for group, resource, rule in pairs:
        if rule.direction != "ingress" or not _public_cidrs(rule):
            continue
        if group is not None and _allowed_public(args, group_names(group.name, group.props)):
            continue
        target = (
            f"security group '{group.name}'" if group is not None else "a security group outside this stack"
        )
        report(
            f"rule '{rule.where}' admits {', '.join(_public_cidrs(rule))} into {target}, which is not "
            f"listed in '{ALLOWED_PUBLIC_LB_GROUPS}'.",
            resource.urn,
        )


def efa_self_only(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Inline rules of the EFA group may only name the group itself (`self: true`)."""
    if args.resource_type != SECURITY_GROUP or tag(args.props, ROLE_TAG) != EFA_ROLE:
        return
    for rule in inline_rules(args.props):
        if not rule.only_self:
            report(
                f"{rule.where} allows {rule.describe_peers()}; EFA traffic must stay within the group "
                "(use self: true and nothing else)."
            )


def efa_self_only_stack(args: StackValidationArgs, report: ReportViolation) -> None:
    """Rule resources of the EFA group name only the group; it has all-traffic self rules both ways."""
    groups, _ = rule_resources_by_group(args.resources)
    for entry in groups:
        group = entry.group
        if tag(group.props, ROLE_TAG) != EFA_ROLE:
            continue
        inline = known(lambda g=group: inline_rules(g.props)) or []
        self_all_traffic = {rule.direction for rule in inline if rule.only_self and rule.all_traffic}
        for resource, rule in entry.rules:
            if not is_self_rule(resource, rule, group):
                report(
                    f"rule '{rule.where}' on EFA security group '{group.name}' allows "
                    f"{rule.describe_peers()}; EFA traffic must stay within the group.",
                    resource.urn,
                )
            elif rule.all_traffic:
                self_all_traffic.add(rule.direction)
        for direction in ("ingress", "egress"):
            if direction not in self_all_traffic:
                report(
                    f"EFA security group '{group.name}' has no {direction} rule for all traffic "
                    '(protocol "-1") to and from itself; EFA OS-bypass needs both directions.',
                    group.urn,
                )


def gpu_nodes_private(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Private-tier subnets don't map public IPs; launch templates never associate one."""
    if args.resource_type == SUBNET:
        if is_true(args.props.get("mapPublicIpOnLaunch")) and tag(args.props, TIER_TAG) == PRIVATE_TIER:
            report(f"subnet is tagged {TIER_TAG}={PRIVATE_TIER} but sets mapPublicIpOnLaunch: true.")
    elif args.resource_type == LAUNCH_TEMPLATE:
        for index, interface in enumerate(as_list(args.props.get("networkInterfaces"))):
            if is_true(as_map(interface).get("associatePublicIpAddress")):
                report(
                    f"networkInterfaces[{index}] sets associatePublicIpAddress: true; GPU nodes must "
                    "have private addresses only."
                )


def gpu_nodes_private_stack(args: StackValidationArgs, report: ReportViolation) -> None:
    """Subnets a node group launches into don't map public IPs (untagged ones included)."""
    node_groups = of_type(args.resources, NODE_GROUP)
    for subnet in of_type(args.resources, SUBNET):
        if tag(subnet.props, TIER_TAG) == PRIVATE_TIER:
            continue  # reported per resource
        if not is_true(known(lambda s=subnet: s.props.get("mapPublicIpOnLaunch"))):
            continue
        users = sorted(ng.name for ng in node_groups if refers_to(ng, "subnetIds", subnet))
        if users:
            report(
                f"subnet '{subnet.name}' sets mapPublicIpOnLaunch: true and node group(s) "
                f"{', '.join(users)} launch into it.",
                subnet.urn,
            )


def eks_endpoint_private(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """The EKS API endpoint is private; a public one needs an explicit, non-global CIDR allow-list."""
    if args.resource_type != EKS_CLUSTER:
        return
    vpc_config = as_map(args.props.get("vpcConfig"))
    if not is_true(vpc_config.get("endpointPrivateAccess")):
        report("vpcConfig.endpointPrivateAccess must be true (nodes reach the API inside the VPC).")
    public = vpc_config.get("endpointPublicAccess")
    if public is not None and not is_true(public):
        return
    cidrs = [str(c) for c in as_list(dig(vpc_config, "publicAccessCidrs"))]
    if not cidrs:
        report(
            "vpcConfig.endpointPublicAccess is true (the AWS default when unset) without "
            "publicAccessCidrs, which opens the API endpoint to 0.0.0.0/0."
        )
    elif open_cidrs := [c for c in cidrs if c in PUBLIC_CIDRS]:
        report(f"vpcConfig.publicAccessCidrs contains {', '.join(open_cidrs)}; list your admin networks.")


POLICIES = [
    TwoPhasePolicy(
        NO_PUBLIC_INGRESS,
        "No security group admits ingress from 0.0.0.0/0 or ::/0, except listed public load balancer groups.",
        validate_resource=no_public_ingress,
        validate_stack=no_public_ingress_stack,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_SCHEMAS[NO_PUBLIC_INGRESS],
        severity=Severity.CRITICAL,
        remediation_steps="Admit other security groups or private CIDRs instead. A deliberately public "
        f"load balancer group goes into the '{ALLOWED_PUBLIC_LB_GROUPS}' list of this policy's config.",
    ),
    TwoPhasePolicy(
        EFA_SELF_ONLY,
        f"The EFA security group (tag {ROLE_TAG}={EFA_ROLE}) allows all traffic to and from itself, "
        "and nothing else.",
        validate_resource=efa_self_only,
        validate_stack=efa_self_only_stack,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps='Give the EFA group exactly one ingress and one egress rule with protocol "-1" '
        "whose peer is the group itself (self: true, or referencedSecurityGroupId = the group's id); "
        "put every other rule on the node group's security group.",
    ),
    TwoPhasePolicy(
        GPU_NODES_PRIVATE,
        "GPU nodes get no public IP addresses: their subnets don't map public IPs on launch and "
        "launch templates don't associate one.",
        validate_resource=gpu_nodes_private,
        validate_stack=gpu_nodes_private_stack,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Set mapPublicIpOnLaunch: false on node subnets and drop "
        "associatePublicIpAddress from launch template network interfaces; reach the internet through "
        "NAT or VPC endpoints.",
    ),
    ResourceValidationPolicy(
        EKS_ENDPOINT_PRIVATE,
        "The EKS API endpoint is private; a public endpoint needs an explicit CIDR allow-list "
        "without 0.0.0.0/0 or ::/0.",
        validate=eks_endpoint_private,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Set vpcConfig.endpointPrivateAccess: true and endpointPublicAccess: false, "
        "or keep the public endpoint with publicAccessCidrs listing only your admin networks.",
    ),
]
