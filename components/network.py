"""PrivateNetwork: the private VPC segment GPU nodes live in.

Builds (or adopts) the VPC and the security groups every other AWS component relies on:
- a VPC with one private subnet per availability zone (no public IP mapping, tagged
  `vllm-serving/tier: private` and for internal load balancers only);
- egress either through NAT gateways (`egress: nat`; public subnets exist only to hold them and
  carry no `kubernetes.io/role/elb` tag, so no public load balancer can land there) or through
  VPC endpoints only (`egress: endpoints`: S3 gateway plus interface endpoints with private DNS);
- VPC flow logs to a CloudWatch log group with the configured retention;
- security groups: cluster, node, EFA (all traffic to and from itself only), model filesystem
  (Lustre ports from nodes only), VPC endpoints (HTTPS from the VPC only), each rule a separate
  rule resource with a description (rules are data: `components/sg_rules.py`).
With `network.existing`, the VPC and subnets come from another stack's outputs instead and only
the security groups are created (node egress then follows the other stack's routing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws

from components.aws_component import AwsChildren
from components.aws_facts import aws_facts, check_log_retention, partition_of, region_of_az
from components.iam_policies import flow_log_delivery_policy, service_trust_policy
from components.sg_rules import (
    GROUP_DESCRIPTIONS,
    STORE_GROUP_DESCRIPTIONS,
    Group,
    RuleSpec,
    StoreKind,
    groups_for,
    plan_security_rules,
)
from components.subnets import (
    PlannedSubnet,
    nat_gateway_zones,
    nat_zone_for,
    pair_subnets,
    plan_subnets,
    subnet_in_zone,
)

if TYPE_CHECKING:
    from settings import ExistingNetworkSettings, NetworkSettings

TIER_TAG = "vllm-serving/tier"
ROLE_TAG = "vllm-serving/role"
OPEN_IPV4 = "0.0.0.0/0"


@dataclass(frozen=True)
class PrivateNetworkArgs:
    """Inputs of `PrivateNetwork`."""

    settings: NetworkSettings
    """The `network` settings: CIDR (/16-/20), availability zones (order kept), egress `nat` |
    `endpoints`, NAT gateways `single` | `per-az` (only with `nat`), flow-log retention in days
    (a CloudWatch Logs retention value), or `existing` to adopt another stack's VPC."""
    cluster_name: str
    """EKS cluster name the private subnets are tagged for (`kubernetes.io/cluster/<name>: shared`)."""
    model_store_kind: StoreKind = "fsx-lustre"
    """The model filesystem's kind: its security group admits Lustre (fsx-lustre), NFS (efs) or
    nothing (existing) from the nodes. Defaults to fsx-lustre."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra AWS tags on every taggable child. Defaults to none."""


class PrivateNetwork(AwsChildren, pulumi.ComponentResource):
    """The private network segment of a vllm-serving stack (`vllm-serving:network:PrivateNetwork`).

    Secure defaults: no public IPs on any subnet, no ingress from 0.0.0.0/0 anywhere, EFA traffic
    confined to its own security group, flow logs on. Use `network.existing` to run inside a VPC
    another stack owns; its private subnets must carry the tags EKS needs.
    """

    vpc_id: pulumi.Output[str]
    """VPC id."""
    vpc_cidr: pulumi.Output[str]
    """VPC CIDR (of an adopted VPC: its primary CIDR, looked up from its id)."""
    vpc_cidrs: pulumi.Output[list[str]]
    """Every CIDR block of the VPC (an adopted VPC may have secondary blocks its subnets sit in)."""
    private_subnet_ids: pulumi.Output[list[str]]
    """Private subnet ids, in the order of `availability_zones`."""
    private_subnet_id_by_az: dict[str, pulumi.Output[str]]
    """Availability zone -> private subnet id, for the settings' zones."""
    availability_zones: pulumi.Output[list[str]]
    """Availability zone of each private subnet (same order as `private_subnet_ids`)."""
    cluster_security_group_id: pulumi.Output[str]
    """Additional security group of the EKS control plane."""
    node_security_group_id: pulumi.Output[str]
    """Security group of every node."""
    efa_security_group_id: pulumi.Output[str]
    """EFA security group (all traffic to and from itself only)."""
    model_store_security_group_id: pulumi.Output[str]
    """Security group of the model filesystem: its ports from nodes only (Lustre for FSx, NFS for EFS)."""

    def __init__(
        self, name: str, args: PrivateNetworkArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vllm-serving:network:PrivateNetwork", name, None, opts)
        self._name = name
        self._args = args
        self._child_tags = args.tags
        settings = args.settings
        # Inputs.
        _validate(args)
        # Decisions.
        adopted = settings.existing is not None
        egress = "nat" if adopted else settings.egress
        rules = plan_security_rules(egress, args.model_store_kind)
        # Children.
        if settings.existing is not None:
            self._adopt(settings.existing, list(settings.availability_zones))
        else:
            self._create_vpc(settings)
        groups = self._create_groups(groups_for(egress))
        s3_prefix_list: pulumi.Output[str] | None = None
        if not adopted and egress == "endpoints":
            s3_prefix_list = self._create_endpoints(settings, groups["endpoints"])
        if not adopted:
            self._create_flow_logs(settings)
        for spec in rules:
            self._create_rule(spec, groups, s3_prefix_list)
        # Outputs.
        self.cluster_security_group_id = groups["cluster"].id
        self.node_security_group_id = groups["node"].id
        self.efa_security_group_id = groups["efa"].id
        self.model_store_security_group_id = groups["model-store"].id
        self.register_outputs(
            {
                "vpcId": self.vpc_id,
                "vpcCidr": self.vpc_cidr,
                "privateSubnetIds": self.private_subnet_ids,
                "availabilityZones": self.availability_zones,
                "clusterSecurityGroupId": self.cluster_security_group_id,
                "nodeSecurityGroupId": self.node_security_group_id,
                "efaSecurityGroupId": self.efa_security_group_id,
                "modelStoreSecurityGroupId": self.model_store_security_group_id,
            }
        )

    # ------------------------------------------------------------------ VPC

    def _subnet(
        self, vpc: aws.ec2.Vpc, planned: PlannedSubnet, table: aws.ec2.RouteTable, **tags: str
    ) -> aws.ec2.Subnet:
        """A subnet of the plan (never mapping public IPs) and its route-table association."""
        az, tier = planned.availability_zone, planned.tier
        subnet = aws.ec2.Subnet(
            f"{self._name}-{tier}-{az}",
            vpc_id=vpc.id,
            cidr_block=str(planned.cidr),
            availability_zone=az,
            map_public_ip_on_launch=False,
            tags=self._tags(f"{self._args.cluster_name}-{tier}-{az}", **{TIER_TAG: tier, **tags}),
            opts=self._opts(),
        )
        aws.ec2.RouteTableAssociation(
            f"{self._name}-{tier}-rta-{az}", subnet_id=subnet.id, route_table_id=table.id, opts=self._opts()
        )
        return subnet

    def _create_vpc(self, settings: NetworkSettings) -> None:
        name, cluster = self._name, self._args.cluster_name
        zones = list(settings.availability_zones)
        plan = plan_subnets(settings.cidr, zones, public=settings.egress == "nat")
        vpc = aws.ec2.Vpc(
            f"{name}-vpc",
            cidr_block=str(settings.cidr),
            enable_dns_hostnames=True,
            enable_dns_support=True,
            tags=self._tags(f"{cluster}-vpc"),
            opts=self._opts(),
        )
        eks_tags = {"kubernetes.io/role/internal-elb": "1", f"kubernetes.io/cluster/{cluster}": "shared"}
        subnets: dict[str, aws.ec2.Subnet] = {}
        self._route_tables: dict[str, aws.ec2.RouteTable] = {}
        for planned in (p for p in plan if p.tier == "private"):
            az = planned.availability_zone
            self._route_tables[az] = aws.ec2.RouteTable(
                f"{name}-private-rt-{az}",
                vpc_id=vpc.id,
                tags=self._tags(f"{cluster}-private-{az}"),
                opts=self._opts(),
            )
            subnets[az] = self._subnet(vpc, planned, self._route_tables[az], **eks_tags)
        if settings.egress == "nat":
            self._create_nat(vpc, [p for p in plan if p.tier == "public"], settings.nat_gateways, zones)
        self._private_subnets = [subnets[az] for az in zones]
        self.vpc_id = vpc.id
        self.vpc_cidr = vpc.cidr_block
        self.vpc_cidrs = vpc.cidr_block.apply(lambda cidr: [cidr])
        self.private_subnet_ids = pulumi.Output.all(*[s.id for s in self._private_subnets])
        self.private_subnet_id_by_az = {az: subnets[az].id for az in zones}
        self.availability_zones = pulumi.Output.from_input(zones)

    def _create_nat(
        self, vpc: aws.ec2.Vpc, public_plan: Sequence[PlannedSubnet], nat_gateways: str, zones: list[str]
    ) -> None:
        """Public subnets only where a NAT gateway goes, no load-balancer role tag on them."""
        name, cluster = self._name, self._args.cluster_name
        nat_zones = nat_gateway_zones(zones, nat_gateways)
        igw = aws.ec2.InternetGateway(
            f"{name}-igw", vpc_id=vpc.id, tags=self._tags(f"{cluster}-igw"), opts=self._opts()
        )
        public_rt = aws.ec2.RouteTable(
            f"{name}-public-rt", vpc_id=vpc.id, tags=self._tags(f"{cluster}-public"), opts=self._opts()
        )
        aws.ec2.Route(
            f"{name}-public-default",
            route_table_id=public_rt.id,
            destination_cidr_block=OPEN_IPV4,
            gateway_id=igw.id,
            opts=self._opts(),
        )
        nats: dict[str, aws.ec2.NatGateway] = {}
        for planned in (p for p in public_plan if p.availability_zone in nat_zones):
            az = planned.availability_zone
            subnet = self._subnet(vpc, planned, public_rt)
            eip = aws.ec2.Eip(
                f"{name}-nat-eip-{az}",
                domain="vpc",
                tags=self._tags(f"{cluster}-nat-{az}"),
                opts=self._opts(),
            )
            nats[az] = aws.ec2.NatGateway(
                f"{name}-nat-{az}",
                allocation_id=eip.id,
                subnet_id=subnet.id,
                connectivity_type="public",
                tags=self._tags(f"{cluster}-nat-{az}"),
                opts=self._opts(depends_on=[igw]),
            )
        for az in zones:
            aws.ec2.Route(
                f"{name}-private-default-{az}",
                route_table_id=self._route_tables[az].id,
                destination_cidr_block=OPEN_IPV4,
                nat_gateway_id=nats[nat_zone_for(az, nat_zones)].id,
                opts=self._opts(),
            )

    def _create_endpoints(
        self, settings: NetworkSettings, endpoint_group: aws.ec2.SecurityGroup
    ) -> pulumi.Output[str]:
        """S3 gateway endpoint on the private route tables plus interface endpoints; the S3 prefix list."""
        name, cluster = self._name, self._args.cluster_name
        region = region_of_az(settings.availability_zones[0])
        s3 = aws.ec2.VpcEndpoint(
            f"{name}-endpoint-s3",
            vpc_id=self.vpc_id,
            service_name=f"com.amazonaws.{region}.s3",
            vpc_endpoint_type="Gateway",
            route_table_ids=[self._route_tables[az].id for az in settings.availability_zones],
            tags=self._tags(f"{cluster}-s3"),
            opts=self._opts(),
        )
        for service in sorted(aws_facts()["network"]["interfaceEndpoints"]):
            aws.ec2.VpcEndpoint(
                f"{name}-endpoint-{service.replace('.', '-')}",
                vpc_id=self.vpc_id,
                service_name=f"com.amazonaws.{region}.{service}",
                vpc_endpoint_type="Interface",
                private_dns_enabled=True,
                subnet_ids=[s.id for s in self._private_subnets],
                security_group_ids=[endpoint_group.id],
                tags=self._tags(f"{cluster}-{service}"),
                opts=self._opts(),
            )
        return s3.prefix_list_id

    def _create_flow_logs(self, settings: NetworkSettings) -> None:
        name, cluster = self._name, self._args.cluster_name
        partition = partition_of(region_of_az(settings.availability_zones[0]))
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-flow-logs",
            name=f"/vllm-serving/{cluster}/vpc-flow-logs",
            retention_in_days=settings.flow_logs_retention_days,
            tags=self._tags(f"{cluster}-vpc-flow-logs"),
            opts=self._opts(),
        )
        role = aws.iam.Role(
            f"{name}-flow-logs-role",
            assume_role_policy=service_trust_policy("vpc-flow-logs", partition),
            tags=self._tags(f"{cluster}-vpc-flow-logs"),
            opts=self._opts(),
        )
        aws.iam.RolePolicy(
            f"{name}-flow-logs-policy",
            role=role.id,
            policy=log_group.arn.apply(flow_log_delivery_policy),
            opts=self._opts(),
        )
        aws.ec2.FlowLog(
            f"{name}-flow-log",
            vpc_id=self.vpc_id,
            traffic_type="ALL",
            log_destination_type="cloud-watch-logs",
            log_destination=log_group.arn,
            iam_role_arn=role.arn,
            max_aggregation_interval=aws_facts()["network"]["flowLogAggregationSeconds"],
            tags=self._tags(f"{cluster}-vpc-flow-log"),
            opts=self._opts(),
        )

    # ------------------------------------------------------------------ adopted network

    def _adopt(self, existing: ExistingNetworkSettings, zones: list[str]) -> None:
        ref = pulumi.StackReference(
            f"{self._name}-network-stack", stack_name=existing.stack, opts=self._opts()
        )
        stack = existing.stack
        self.vpc_id = _required(ref, stack, existing.vpc_id_output, "vpcIdOutput")
        # NetworkPolicies (model store egress, load balancer ingress) need the CIDR; the network
        # stack's contract only promises the id, so ask EC2.
        vpc = aws.ec2.get_vpc_output(id=self.vpc_id, opts=pulumi.InvokeOutputOptions(parent=self))
        self.vpc_cidr = vpc.cidr_block
        self.vpc_cidrs = vpc.cidr_block_associations.apply(associated_cidrs)
        subnet_ids = _required(ref, stack, existing.private_subnet_ids_output, "privateSubnetIdsOutput")
        stack_zones = _required(ref, stack, existing.availability_zones_output, "availabilityZonesOutput")
        pairs = pulumi.Output.all(subnet_ids, stack_zones).apply(
            lambda v: pair_subnets(
                stack, existing.private_subnet_ids_output, existing.availability_zones_output, v[0], v[1]
            )
        )
        self.private_subnet_ids = pairs.apply(lambda p: [subnet for subnet, _ in p])
        self.availability_zones = pairs.apply(lambda p: [az for _, az in p])
        self.private_subnet_id_by_az = {
            az: pairs.apply(lambda p, az=az: subnet_in_zone(stack, az, p)) for az in zones
        }

    # ------------------------------------------------------------------ security groups

    def _create_groups(self, groups: Sequence[Group]) -> dict[str, aws.ec2.SecurityGroup]:
        cluster = self._args.cluster_name
        return {
            group: aws.ec2.SecurityGroup(
                f"{self._name}-sg-{group}",
                vpc_id=self.vpc_id,
                description=(
                    STORE_GROUP_DESCRIPTIONS[self._args.model_store_kind]
                    if group == "model-store"
                    else GROUP_DESCRIPTIONS[group]
                ),
                revoke_rules_on_delete=True,
                tags=self._tags(f"{cluster}-{group}", **{ROLE_TAG: group}),
                opts=self._opts(),
            )
            for group in groups
        }

    def _create_rule(
        self, spec: RuleSpec, groups: Mapping[str, aws.ec2.SecurityGroup], s3_prefix_list: Any
    ) -> None:
        peers: dict[str, dict[str, Any]] = {
            "self": {"referenced_security_group_id": groups[spec.group].id},
            "vpc-cidr": {"cidr_ipv4": self.vpc_cidr},
            "s3": {"prefix_list_id": s3_prefix_list},
            "anywhere": {"cidr_ipv4": OPEN_IPV4},  # egress only: plan_security_rules rejects it for ingress
            **{group: {"referenced_security_group_id": sg.id} for group, sg in groups.items()},
        }
        rule_type = (
            aws.vpc.SecurityGroupIngressRule
            if spec.direction == "ingress"
            else aws.vpc.SecurityGroupEgressRule
        )
        rule_type(
            f"{self._name}-{spec.key}",
            security_group_id=groups[spec.group].id,
            ip_protocol=spec.protocol,
            from_port=spec.from_port,
            to_port=spec.to_port,
            description=spec.description,
            tags={**self._args.tags, "Name": f"{self._args.cluster_name}-{spec.key}"},
            opts=self._opts(),
            **peers[spec.peer],
        )


# ---------------------------------------------------------------------- pure checks


def _validate(args: PrivateNetworkArgs) -> None:
    settings = args.settings
    if not args.cluster_name:
        raise ValueError(
            "PrivateNetworkArgs.cluster_name must be the EKS cluster name the subnets are tagged for"
        )
    if settings.existing is not None:
        return
    check_log_retention(settings.flow_logs_retention_days, "vllm-serving:network.flowLogsRetentionDays")
    region = region_of_az(settings.availability_zones[0])
    provider_region = aws.config.region
    if provider_region and provider_region != region:
        raise ValueError(
            f"vllm-serving:network.availabilityZones are in {region} but aws:region is {provider_region}; "
            "use zones of the provider's region"
        )


def associated_cidrs(associations: Sequence[Any]) -> list[str]:
    """The VPC's CIDR blocks in association (primary and secondary), sorted; others are leaving."""
    return sorted({a.cidr_block for a in associations if a.state in (None, "associated")})


def _required(ref: pulumi.StackReference, stack: str, key: str, setting: str) -> pulumi.Output[Any]:
    """A network-stack output that must exist; its absence fails with the stack and key named."""

    def check(value: Any) -> Any:
        if value is None:
            raise ValueError(
                f"network stack {stack!r} has no output {key!r} (vllm-serving:network.existing.{setting}); "
                f"export it there or point {setting} at the right key"
            )
        return value

    return ref.get_output(key).apply(check)
