"""Security groups and their rules, normalised across the three ways AWS lets you write them.

Owns `SgRule` (one rule: direction, protocol, CIDRs, self, peer groups, prefix lists) built from
- inline `ingress`/`egress` blocks of `aws:ec2/securityGroup:SecurityGroup`,
- `aws:ec2/securityGroupRule:SecurityGroupRule` (`type` ingress/egress),
- `aws:vpc/securityGroupIngressRule` / `SecurityGroupEgressRule` (one CIDR or peer each),
and, at stack level, which group a rule resource belongs to and whether its peer is that group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import PolicyResource

from .props import as_list, as_map, is_true, known, of_type, refers_to, strings

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SECURITY_GROUP_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
VPC_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
VPC_EGRESS_RULE = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
RULE_TYPES = (SECURITY_GROUP_RULE, VPC_INGRESS_RULE, VPC_EGRESS_RULE)
ALL_TRAFFIC_PROTOCOLS = frozenset({"-1", "all"})


@dataclass(frozen=True)
class SgRule:
    """One security-group rule in a shape independent of how it was declared."""

    direction: str
    """"ingress" or "egress"."""
    where: str
    """Where the rule was declared, for messages: `ingress[0]`, or the rule resource's name."""
    protocol: str
    cidrs: tuple[str, ...] = ()
    self_ref: bool = False
    """`self: true`: the group itself is the peer."""
    peer_groups: tuple[str, ...] = ()
    """Other security groups named as peers (ids, as written)."""
    prefix_lists: tuple[str, ...] = ()
    peer_prop: str = ""
    """For rule resources: the property holding the peer group (checked against the owner)."""

    @property
    def all_traffic(self) -> bool:
        return self.protocol in ALL_TRAFFIC_PROTOCOLS

    @property
    def only_self(self) -> bool:
        """An inline rule whose only peer is the group itself."""
        return self.self_ref and not (self.cidrs or self.peer_groups or self.prefix_lists)

    def describe_peers(self) -> str:
        """The peers in words, for violation messages."""
        parts = [f"CIDR {c}" for c in self.cidrs]
        parts += [f"security group {g}" for g in self.peer_groups]
        parts += [f"prefix list {p}" for p in self.prefix_lists]
        if self.self_ref:
            parts.append("itself")
        return ", ".join(parts) or "no peer"


def _protocol(value: Any) -> str:
    return str(value).lower() if value is not None else ""


def inline_rules(props: Mapping[str, Any]) -> list[SgRule]:
    """The inline ingress and egress blocks of a SecurityGroup."""
    rules: list[SgRule] = []
    for direction in ("ingress", "egress"):
        for index, block in enumerate(as_list(props.get(direction))):
            block = as_map(block)
            rules.append(
                SgRule(
                    direction=direction,
                    where=f"{direction}[{index}]",
                    protocol=_protocol(block.get("protocol")),
                    cidrs=tuple(strings(block.get("cidrBlocks")) + strings(block.get("ipv6CidrBlocks"))),
                    self_ref=is_true(block.get("self")),
                    peer_groups=tuple(strings(block.get("securityGroups"))),
                    prefix_lists=tuple(strings(block.get("prefixListIds"))),
                )
            )
    return rules


def rule_of(resource_type: str, name: str, props: Mapping[str, Any]) -> SgRule | None:
    """The rule a rule resource declares, or None for other resource types."""
    if resource_type == SECURITY_GROUP_RULE:
        return SgRule(
            direction=str(props.get("type") or ""),
            where=name,
            protocol=_protocol(props.get("protocol")),
            cidrs=tuple(strings(props.get("cidrBlocks")) + strings(props.get("ipv6CidrBlocks"))),
            self_ref=is_true(props.get("self")),
            peer_groups=tuple(strings(known(lambda: props.get("sourceSecurityGroupId")))),
            prefix_lists=tuple(strings(props.get("prefixListIds"))),
            peer_prop="sourceSecurityGroupId",
        )
    if resource_type in (VPC_INGRESS_RULE, VPC_EGRESS_RULE):
        return SgRule(
            direction="ingress" if resource_type == VPC_INGRESS_RULE else "egress",
            where=name,
            protocol=_protocol(props.get("ipProtocol")),
            cidrs=tuple(strings(props.get("cidrIpv4")) + strings(props.get("cidrIpv6"))),
            peer_groups=tuple(strings(known(lambda: props.get("referencedSecurityGroupId")))),
            prefix_lists=tuple(strings(props.get("prefixListId"))),
            peer_prop="referencedSecurityGroupId",
        )
    return None


def has_peer(resource: PolicyResource, rule: SgRule) -> bool:
    """Whether a rule resource names a peer group at all (known or still unknown)."""
    return bool(rule.peer_groups) or bool(
        rule.peer_prop and resource.property_dependencies.get(rule.peer_prop)
    )


def is_self_rule(resource: PolicyResource, rule: SgRule, group: PolicyResource) -> bool:
    """Whether a rule resource of `group` allows traffic only to and from `group` itself."""
    if rule.cidrs or rule.prefix_lists:
        return False
    if rule.self_ref:
        return not has_peer(resource, rule)
    return bool(rule.peer_prop) and refers_to(resource, rule.peer_prop, group)


RuleResource = tuple[PolicyResource, SgRule]
"""A rule resource with the rule it declares."""


@dataclass(frozen=True)
class GroupRules:
    """A security group with the rule resources attached to it."""

    group: PolicyResource
    rules: tuple[RuleResource, ...]
    """The rule resources whose `securityGroupId` is this group."""


def rule_resources_by_group(
    resources: Sequence[PolicyResource],
) -> tuple[list[GroupRules], list[RuleResource]]:
    """Pair every rule resource with the security group of this stack it belongs to.

    Returns the groups with their rules, and the rule resources whose group is not in the stack
    (an existing group passed by id), as `(resource, rule)` pairs.
    """
    groups = of_type(resources, SECURITY_GROUP)
    attached: dict[int, list[RuleResource]] = {id(g): [] for g in groups}
    orphans: list[RuleResource] = []
    for resource in of_type(resources, *RULE_TYPES):
        rule = rule_of(resource.resource_type, resource.name, resource.props)
        if rule is None:
            continue
        owner = next((g for g in groups if refers_to(resource, "securityGroupId", g)), None)
        if owner is None:
            orphans.append((resource, rule))
        else:
            attached[id(owner)].append((resource, rule))
    return [GroupRules(g, tuple(attached[id(g)])) for g in groups], orphans


def group_names(resource_name: str, props: Mapping[str, Any]) -> set[str]:
    """The names a security group is known by: its Pulumi resource name and its AWS `name`."""
    names = {resource_name}
    aws_name = known(lambda: props.get("name"))
    if isinstance(aws_name, str) and aws_name:
        names.add(aws_name)
    return names
