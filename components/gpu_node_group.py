"""GpuNodeGroup: one EKS managed node group per GPU pool.

Builds, for one pool:
- a node IAM role with AmazonEKSWorkerNodePolicy and AmazonEC2ContainerRegistryPullOnly only
  (AmazonEKS_CNI_Policy only when vpc-cni runs without its own role);
- on EFA pools, a cluster placement group (unless a capacity reservation already fixes placement);
- a launch template: the instance type, one EFA interface per network card (card 0 `efa`, the
  others `efa-only`, per the instance's facts; security groups on every interface, no subnet,
  no public IP), IMDSv2 with hop limit 2, an encrypted gp3 root volume, user data that RAID-0s
  local NVMe and reserves EFA huge pages, and the capacity reservation / capacity block target;
- the managed node group: AL2023 NVIDIA AMI (x86_64 or ARM), exactly one subnet (one AZ) for
  EFA pools, min/desired/max from the plan, `nvidia.com/gpu=true:NoSchedule`, the pool labels
  and the cluster-autoscaler tags that let it scale up from zero.
Decisions are pure functions: `node_group_plan` (which uses `efa_layout`, `launch_templates`,
`node_scheduling`), and `node_user_data`.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws

from components import launch_templates as lt
from components.aws_component import AwsChildren
from components.aws_facts import aws_facts
from components.iam_policies import node_policy_arns, policy_slug, service_trust_policy
from components.node_group_plan import plan_node_group
from components.node_scheduling import GPU_TAINT, autoscaler_tags
from components.node_user_data import render_user_data

if TYPE_CHECKING:
    from capacity import InstanceType
    from planning import PoolPlan
    from settings import GpuPoolSettings


@dataclass(frozen=True)
class GpuNodeGroupArgs:
    """Inputs of `GpuNodeGroup`."""

    pool: GpuPoolSettings
    """The pool's settings: name, instance type, availability zone (required with EFA or a
    reservation), capacity type `on-demand` | `spot` | `capacity-block`, capacity reservation id,
    root volume size in GiB."""
    plan: PoolPlan
    """The planner's node bounds (`min_nodes` = desired at creation, `max_nodes`), GPU model and
    interconnect (`efa` lays out EFA interfaces; `tcp` none; `infiniband` is rejected on EKS)."""
    instance: InstanceType
    """Facts of `pool.instance_type`: network cards, EFA interfaces, GPU count, architecture."""
    cluster_name: str
    """EKS cluster name (also the cluster-autoscaler tag `k8s.io/cluster-autoscaler/<name>`)."""
    kubernetes_version: pulumi.Input[str]
    """Control-plane version (`GpuCluster.kubernetes_version`); nodes follow it on upgrades."""
    cluster_security_group_id: pulumi.Input[str]
    """EKS-created cluster security group (`GpuCluster.cluster_security_group_id`). EKS doesn't add
    it when a launch template names security groups, so every interface carries it."""
    node_security_group_id: pulumi.Input[str]
    """Node security group (`PrivateNetwork.node_security_group_id`)."""
    efa_security_group_id: pulumi.Input[str]
    """EFA security group (`PrivateNetwork.efa_security_group_id`), added on EFA interfaces only."""
    private_subnet_id_by_az: Mapping[str, pulumi.Input[str]]
    """Zone -> private subnet (`PrivateNetwork.private_subnet_id_by_az`), in the network's zone order."""
    partition: str = "aws"
    """ARN partition for managed policies (`GpuCluster.partition`). Defaults to aws."""
    attach_cni_policy: bool = False
    """Attach AmazonEKS_CNI_Policy to the node role. Only for a vpc-cni without its own role;
    `GpuCluster` gives it one, so the default is False."""
    node_dependencies: Sequence[pulumi.Resource] = ()
    """Resources the node group waits for (`GpuCluster.node_dependencies`: vpc-cni and friends)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra AWS tags on every taggable child. Defaults to none."""


class GpuNodeGroup(AwsChildren, pulumi.ComponentResource):
    """A managed node group of identical GPU nodes (`vllm-serving:gpu_node_group:GpuNodeGroup`).

    Secure defaults: private subnets only, no public IPs, IMDSv2, encrypted root volume, a
    least-privilege node role, GPU taint. Use one per GPU pool; pools of different instance
    types need separate groups (EFA layouts differ per type).
    """

    node_group_name: pulumi.Output[str]
    """EKS node group name (generated from the `<pool>-` prefix)."""
    node_role_arn: pulumi.Output[str]
    """IAM role of the nodes."""
    launch_template_id: pulumi.Output[str]
    """Launch template id."""
    placement_group_name: pulumi.Output[str] | None
    """Cluster placement group of an EFA pool; None without EFA or with a capacity reservation."""
    efa_interface_count: int
    """EFA interfaces per node (0 without EFA); pods request up to this many `vpc.amazonaws.com/efa`."""
    availability_zones: tuple[str, ...]
    """Zones the node group launches into (exactly one with EFA)."""

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:gpu_node_group:GpuNodeGroup", name, None, opts)
        pool, plan = args.pool, args.plan
        # Inputs and decisions.
        decided = plan_node_group(pool, plan, args.instance, list(args.private_subnet_id_by_az))
        self._child_tags = args.tags
        node_tags = self._tags(f"{args.cluster_name}-{pool.name}")
        # Children.
        role = aws.iam.Role(
            f"{name}-node-role",
            assume_role_policy=service_trust_policy("ec2", args.partition),
            tags=node_tags,
            opts=self._opts(),
        )
        attachments = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-role-{policy_slug(arn)}", role=role.name, policy_arn=arn, opts=self._opts()
            )
            for arn in node_policy_arns(args.partition, attach_cni_policy=args.attach_cni_policy)
        ]
        placement = None
        if decided.placement_group:
            placement = aws.ec2.PlacementGroup(
                f"{name}-placement",
                strategy=aws_facts()["efa"]["placementStrategy"],
                tags=node_tags,
                opts=self._opts(),
            )
        base_groups = [args.cluster_security_group_id, args.node_security_group_id]
        user_data = render_user_data(hugepages=decided.hugepages)
        template = aws.ec2.LaunchTemplate(
            f"{name}-launch-template",
            description=f"GPU pool {pool.name} ({args.instance.name}) of EKS cluster {args.cluster_name}",
            instance_type=args.instance.name,
            metadata_options=lt.metadata_options(),
            block_device_mappings=lt.root_volume(pool.root_volume_gib),
            # With interfaces, security groups go on each interface: EKS rejects both forms together.
            network_interfaces=lt.network_interfaces(
                decided.interfaces, [*base_groups, args.efa_security_group_id]
            )
            if decided.interfaces
            else None,
            vpc_security_group_ids=None if decided.interfaces else base_groups,
            placement={"group_name": placement.name} if placement is not None else None,
            user_data=base64.b64encode(user_data.encode()).decode() if user_data else None,
            tag_specifications=lt.tag_specifications(node_tags),
            tags=node_tags,
            opts=self._opts(),
            **decided.capacity,
        )
        node_group = aws.eks.NodeGroup(
            f"{name}-node-group",
            cluster_name=args.cluster_name,
            node_group_name_prefix=f"{pool.name}-",
            node_role_arn=role.arn,
            subnet_ids=[args.private_subnet_id_by_az[az] for az in decided.subnet_azs],
            ami_type=decided.ami_type,
            capacity_type=lt.eks_capacity_type(pool.capacity_type),
            version=args.kubernetes_version,
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            scaling_config={
                "min_size": plan.min_nodes,
                "desired_size": plan.min_nodes,
                "max_size": plan.max_nodes,
            },
            update_config={"max_unavailable": 1},
            labels=decided.labels,
            taints=[GPU_TAINT.eks()],
            tags={
                **node_tags,
                **autoscaler_tags(args.cluster_name, decided.labels, (GPU_TAINT,), decided.resources),
            },
            # The cluster autoscaler owns the desired size once the group exists; re-applying the
            # plan's value on every `pulumi up` would undo its scaling (and drain busy GPU nodes).
            opts=self._opts(
                depends_on=[*attachments, *args.node_dependencies],
                ignore_changes=["scalingConfig.desiredSize"],
            ),
        )
        # Outputs.
        self.node_group_name = node_group.node_group_name
        self.node_role_arn = role.arn
        self.launch_template_id = template.id
        self.placement_group_name = placement.name if placement is not None else None
        self.efa_interface_count = len(decided.interfaces)
        self.availability_zones = decided.subnet_azs
        self.register_outputs(
            {
                "nodeGroupName": self.node_group_name,
                "nodeRoleArn": self.node_role_arn,
                "launchTemplateId": self.launch_template_id,
                "placementGroupName": self.placement_group_name,
                "efaInterfaceCount": self.efa_interface_count,
                "availabilityZones": list(self.availability_zones),
            }
        )
