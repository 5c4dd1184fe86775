"""GpuCluster: the EKS control plane and what every node group and in-cluster object needs.

Builds:
- an EKS cluster at the pinned Kubernetes version, private API endpoint always on, public
  endpoint only with an explicit CIDR allow-list, Secrets envelope-encrypted with a KMS key
  (rotation on, protected), all control-plane log types to a log group with a set retention;
- authentication mode API: admin roles get access entries with AmazonEKSClusterAdminPolicy;
- an IAM OIDC provider (IRSA) and the EKS Pod Identity agent;
- pinned managed add-ons: vpc-cni (own IRSA role, a version that handles `efa-only`
  interfaces), kube-proxy, eks-pod-identity-agent, and once nodes exist CoreDNS and the EBS CSI
  driver (its controller on a Pod Identity role with AmazonEBSCSIDriverPolicy: without it no
  gp3 PersistentVolumeClaim, such as Prometheus's, ever binds);
- a small on-demand system node group (AL2023 standard AMI, private subnets,
  `vllm-serving/pool: system`) for controllers;
- an explicit `kubernetes.Provider` from an exec-based kubeconfig (`aws eks get-token`), which
  every in-cluster resource must use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components import launch_templates as lt
from components.aws_component import AwsChildren
from components.aws_facts import (
    addon_versions,
    ami_type,
    aws_facts,
    check_log_retention,
    decide_region,
    eks_access_policy_arn,
    general_purpose_architecture,
    managed_policy_arn,
    partition_of,
)
from components.iam_policies import (
    admin_role_slug,
    cluster_kms_policy,
    cluster_policy_arns,
    irsa_trust_policy,
    node_policy_arns,
    pod_identity_trust_policy,
    policy_slug,
    service_trust_policy,
)
from components.kubeconfig import render_kubeconfig

if TYPE_CHECKING:
    from settings import ClusterSettings

EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
SYSTEM_POOL = "system"
POOL_LABEL = "vllm-serving/pool"
BEFORE_NODES = ("vpc-cni", "kube-proxy", "eks-pod-identity-agent")


@dataclass(frozen=True)
class GpuClusterArgs:
    """Inputs of `GpuCluster`."""

    name: str
    """EKS cluster name (`<project>-<stack>`); 1-100 letters, digits, `-`, `_`. Also names the log group."""
    settings: ClusterSettings
    """The `cluster` settings: Kubernetes version (must have pinned add-ons in data/aws.json),
    public endpoint CIDRs (empty: private only), admin role ARNs, service CIDR, system node group."""
    private_subnet_ids: pulumi.Input[Sequence[str]]
    """Private subnets for the control-plane ENIs and the system node group (`PrivateNetwork`)."""
    cluster_security_group_id: pulumi.Input[str]
    """Additional control-plane security group (`PrivateNetwork.cluster_security_group_id`)."""
    node_security_group_id: pulumi.Input[str]
    """Node security group, attached to system nodes (`PrivateNetwork.node_security_group_id`)."""
    availability_zones: Sequence[str]
    """The network's zones; their region is the fallback when neither `region` nor aws:region is set."""
    region: str | None = None
    """AWS region for the kubeconfig's `aws eks get-token`. Default: aws:region, else the zones' region."""
    log_retention_days: int = 90
    """Control-plane log retention in days (a CloudWatch Logs retention value). Defaults to 90."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra AWS tags on every taggable child. Defaults to none."""


class GpuCluster(AwsChildren, pulumi.ComponentResource):
    """An EKS control plane for GPU serving (`vllm-serving:cluster:GpuCluster`).

    Secure defaults: private API endpoint, envelope-encrypted Secrets, audit logs on, no static
    credentials in the kubeconfig, no admin but the listed roles (and the identity that runs
    `pulumi up`, which EKS grants admin at creation so the program can manage in-cluster
    objects; don't list that identity in adminRoleArns too, EKS rejects the duplicate entry).
    """

    cluster_name: pulumi.Output[str]
    """EKS cluster name."""
    endpoint: pulumi.Output[str]
    """Kubernetes API endpoint (private unless public CIDRs are configured)."""
    kubeconfig: pulumi.Output[str]
    """Kubeconfig with exec credentials (secret)."""
    provider: k8s.Provider
    """The Kubernetes provider every in-cluster resource must use."""
    oidc_provider_arn: pulumi.Output[str]
    """IAM OIDC provider ARN (IRSA)."""
    oidc_issuer_url: pulumi.Output[str]
    """OIDC issuer URL of the cluster."""
    cluster_security_group_id: pulumi.Output[str]
    """Security group EKS creates for the control plane and managed nodes; node launch templates add it."""
    kubernetes_version: pulumi.Output[str]
    """Kubernetes minor version of the control plane (node groups follow it)."""
    system_node_group_name: pulumi.Output[str]
    """Name of the system node group."""
    system_node_role_arn: pulumi.Output[str]
    """IAM role of the system nodes."""
    vpc_cni_role_arn: pulumi.Output[str]
    """IRSA role of vpc-cni (so node roles don't need AmazonEKS_CNI_Policy)."""
    kms_key_arn: pulumi.Output[str]
    """KMS key encrypting Kubernetes Secrets."""
    region: str
    """AWS region of the cluster."""
    partition: str
    """ARN partition of that region (aws, aws-cn, aws-us-gov)."""
    node_dependencies: tuple[pulumi.Resource, ...]
    """Add-ons nodes need before they join (vpc-cni, kube-proxy, pod identity); node groups wait for them."""
    ebs_csi_role_arn: pulumi.Output[str]
    """Pod Identity role of the EBS CSI controller."""
    storage_dependencies: tuple[pulumi.Resource, ...]
    """What dynamic EBS volumes need (the EBS CSI add-on); releases with PersistentVolumeClaims wait for it."""
    controller_dependencies: tuple[pulumi.Resource, ...]
    """What in-cluster controllers need to become ready: system nodes and cluster DNS."""

    def __init__(self, name: str, args: GpuClusterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:cluster:GpuCluster", name, None, opts)
        self._name, self._args = name, args
        self._child_tags = args.tags
        settings = args.settings
        # Inputs.
        _validate(args)
        # Decisions.
        versions = addon_versions(settings.version).as_dict()
        self.region = decide_region(args.region, aws.config.region, list(args.availability_zones))
        self.partition = partition_of(self.region)
        public_cidrs = sorted(str(c) for c in settings.public_access_cidrs)
        # Children.
        key = aws.kms.Key(
            f"{name}-secrets-key",
            description=f"Envelope encryption of Kubernetes Secrets in EKS cluster {args.name}",
            enable_key_rotation=True,
            deletion_window_in_days=30,
            tags=self._tags(f"{args.name}-secrets"),
            opts=self._opts(protect=True),
        )
        aws.kms.Alias(
            f"{name}-secrets-key-alias",
            name=f"alias/eks/{args.name}",
            target_key_id=key.key_id,
            opts=self._opts(),
        )
        role = self._role("cluster-role", service_trust_policy("eks", self.partition, tag_session=True))
        attachments = self._attach(role, "cluster-role", cluster_policy_arns(self.partition))
        aws.iam.RolePolicy(
            f"{name}-cluster-role-kms",
            role=role.id,
            policy=key.arn.apply(cluster_kms_policy),
            opts=self._opts(),
        )
        log_group = aws.cloudwatch.LogGroup(
            f"{name}-control-plane-logs",
            name=f"/aws/eks/{args.name}/cluster",
            retention_in_days=args.log_retention_days,
            tags=self._tags(f"{args.name}-control-plane"),
            opts=self._opts(),
        )
        cluster = aws.eks.Cluster(
            f"{name}-eks",
            name=args.name,
            version=settings.version,
            role_arn=role.arn,
            vpc_config={
                "subnet_ids": args.private_subnet_ids,
                "security_group_ids": [args.cluster_security_group_id],
                "endpoint_private_access": True,
                # Public only with an explicit allow-list (settings reject 0.0.0.0/0).
                "endpoint_public_access": bool(public_cidrs),
                **({"public_access_cidrs": public_cidrs} if public_cidrs else {}),
            },
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            encryption_config={"provider": {"key_arn": key.arn}, "resources": ["secrets"]},
            enabled_cluster_log_types=list(aws_facts()["controlPlaneLogTypes"]),
            kubernetes_network_config={"ip_family": "ipv4", "service_ipv4_cidr": str(settings.service_cidr)},
            # Core add-ons are installed below as pinned managed add-ons, not as EKS's self-managed defaults.
            bootstrap_self_managed_addons=False,
            tags=self._tags(args.name),
            opts=self._opts(depends_on=[*attachments, log_group]),
        )
        self.cluster_name = cluster.name
        self.endpoint = cluster.endpoint
        self.kubernetes_version = cluster.version
        self.cluster_security_group_id = cluster.vpc_config.apply(lambda v: v.cluster_security_group_id)
        self.oidc_issuer_url = cluster.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        self.kms_key_arn = key.arn
        oidc = aws.iam.OpenIdConnectProvider(
            f"{name}-oidc",
            url=self.oidc_issuer_url,
            client_id_lists=["sts.amazonaws.com"],
            tags=self._tags(f"{args.name}-oidc"),
            opts=self._opts(),
        )
        self.oidc_provider_arn = oidc.arn
        # vpc-cni gets its own IRSA role (not the node role) so node roles stay least-privilege.
        cni_role = self._role(
            "vpc-cni-role",
            pulumi.Output.all(oidc.arn, self.oidc_issuer_url).apply(
                lambda v: irsa_trust_policy(v[0], v[1], "kube-system", "aws-node")
            ),
        )
        cni_attachments = self._attach(
            cni_role, "vpc-cni-role", (managed_policy_arn(self.partition, aws_facts()["iam"]["cniPolicy"]),)
        )
        self.vpc_cni_role_arn = cni_role.arn
        before_nodes = tuple(
            self._addon(cluster, addon, versions[addon], cni_role.arn, cni_attachments)
            if addon == "vpc-cni"
            else self._addon(cluster, addon, versions[addon], None, [])
            for addon in BEFORE_NODES
        )
        self.node_dependencies = before_nodes
        self._access_entries(cluster)
        node_group = self._system_nodes(cluster, settings, before_nodes)
        coredns = self._addon(cluster, "coredns", versions["coredns"], None, [node_group])
        self.controller_dependencies = (node_group, coredns)
        ebs_csi = self._ebs_csi_driver(cluster, versions["aws-ebs-csi-driver"], [node_group, *before_nodes])
        self.storage_dependencies = (ebs_csi,)
        ca_data = cluster.certificate_authority.apply(lambda ca: ca.data)
        kubeconfig = pulumi.Output.all(cluster.name, cluster.endpoint, ca_data).apply(
            lambda v: render_kubeconfig(
                cluster_name=v[0], endpoint=v[1], certificate_authority_data=v[2], region=self.region
            )
        )
        self.kubeconfig = pulumi.Output.secret(kubeconfig)
        self.provider = k8s.Provider(f"{name}-k8s", kubeconfig=self.kubeconfig, opts=self._opts())
        # Outputs.
        self.register_outputs(
            {
                "clusterName": self.cluster_name,
                "endpoint": self.endpoint,
                "kubeconfig": self.kubeconfig,
                "oidcProviderArn": self.oidc_provider_arn,
                "oidcIssuerUrl": self.oidc_issuer_url,
                "clusterSecurityGroupId": self.cluster_security_group_id,
                "kubernetesVersion": self.kubernetes_version,
                "systemNodeGroupName": self.system_node_group_name,
                "systemNodeRoleArn": self.system_node_role_arn,
                "vpcCniRoleArn": self.vpc_cni_role_arn,
                "ebsCsiRoleArn": self.ebs_csi_role_arn,
                "kmsKeyArn": self.kms_key_arn,
                "region": self.region,
            }
        )

    # ------------------------------------------------------------------ helpers

    def _role(self, role: str, trust_policy: pulumi.Input[str]) -> aws.iam.Role:
        return aws.iam.Role(
            f"{self._name}-{role}",
            assume_role_policy=trust_policy,
            tags=self._tags(f"{self._args.name}-{role}"),
            opts=self._opts(),
        )

    def _attach(
        self, role: aws.iam.Role, prefix: str, policy_arns: Sequence[str]
    ) -> list[aws.iam.RolePolicyAttachment]:
        return [
            aws.iam.RolePolicyAttachment(
                f"{self._name}-{prefix}-{policy_slug(arn)}", role=role.name, policy_arn=arn, opts=self._opts()
            )
            for arn in policy_arns
        ]

    def _addon(
        self,
        cluster: aws.eks.Cluster,
        addon: str,
        version: str,
        role_arn: pulumi.Input[str] | None,
        depends_on: Sequence[pulumi.Resource],
        pod_identity: Sequence[aws.eks.AddonPodIdentityAssociationArgsDict] | None = None,
    ) -> aws.eks.Addon:
        return aws.eks.Addon(
            f"{self._name}-addon-{addon}",
            cluster_name=cluster.name,
            addon_name=addon,
            addon_version=version,
            service_account_role_arn=role_arn,
            pod_identity_associations=pod_identity,
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=self._tags(f"{self._args.name}-{addon}"),
            opts=self._opts(depends_on=list(depends_on)),
        )

    def _ebs_csi_driver(
        self, cluster: aws.eks.Cluster, version: str, depends_on: Sequence[pulumi.Resource]
    ) -> aws.eks.Addon:
        """The EBS CSI add-on; only its controller's service account gets the AWS role.

        Pod Identity rather than IRSA: the add-on creates the association itself, and the agent
        (installed before nodes) must run before the controller starts, hence the dependency.
        """
        facts = aws_facts()["eksAddons"]["ebsCsiDriver"]
        role = self._role("ebs-csi-role", pod_identity_trust_policy())
        attachments = self._attach(
            role, "ebs-csi-role", (managed_policy_arn(self.partition, facts["policy"]),)
        )
        self.ebs_csi_role_arn = role.arn
        return self._addon(
            cluster,
            "aws-ebs-csi-driver",
            version,
            None,
            [*depends_on, *attachments],
            pod_identity=[{"role_arn": role.arn, "service_account": facts["serviceAccount"]}],
        )

    def _access_entries(self, cluster: aws.eks.Cluster) -> None:
        policy = eks_access_policy_arn(self.partition, aws_facts()["iam"]["clusterAdminAccessPolicy"])
        for role_arn in sorted(set(self._args.settings.admin_role_arns)):
            slug = admin_role_slug(role_arn)
            entry = aws.eks.AccessEntry(
                f"{self._name}-admin-{slug}",
                cluster_name=cluster.name,
                principal_arn=role_arn,
                type="STANDARD",
                tags=self._tags(f"{self._args.name}-admin"),
                opts=self._opts(),
            )
            aws.eks.AccessPolicyAssociation(
                f"{self._name}-admin-{slug}-policy",
                cluster_name=cluster.name,
                principal_arn=role_arn,
                policy_arn=policy,
                access_scope={"type": "cluster"},
                opts=self._opts(depends_on=[entry]),
            )

    def _system_nodes(
        self, cluster: aws.eks.Cluster, settings: ClusterSettings, before_nodes: Sequence[pulumi.Resource]
    ) -> aws.eks.NodeGroup:
        name, system = self._name, settings.system_node_group
        role = self._role("system-node-role", service_trust_policy("ec2", self.partition))
        attachments = self._attach(
            role, "system-node-role", node_policy_arns(self.partition, attach_cni_policy=False)
        )
        node_tags = self._tags(f"{self._args.name}-{SYSTEM_POOL}")
        template = aws.ec2.LaunchTemplate(
            f"{name}-system-launch-template",
            description=f"System nodes of EKS cluster {self._args.name}",
            instance_type=system.instance_type,
            metadata_options=lt.metadata_options(),
            block_device_mappings=lt.root_volume(int(aws_facts()["rootVolume"]["systemNodeGib"])),
            vpc_security_group_ids=[self.cluster_security_group_id, self._args.node_security_group_id],
            tag_specifications=lt.tag_specifications(node_tags),
            tags=node_tags,
            opts=self._opts(),
        )
        node_group = aws.eks.NodeGroup(
            f"{name}-system-nodes",
            cluster_name=cluster.name,
            node_role_arn=role.arn,
            subnet_ids=self._args.private_subnet_ids,
            ami_type=ami_type(general_purpose_architecture(system.instance_type), accelerated=False),
            capacity_type="ON_DEMAND",
            version=cluster.version,
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            scaling_config={
                "min_size": system.min_size,
                "desired_size": system.min_size,
                "max_size": system.max_size,
            },
            update_config={"max_unavailable": 1},
            labels={POOL_LABEL: SYSTEM_POOL},
            tags=node_tags,
            # The cluster autoscaler discovers every managed node group and owns its desired size.
            opts=self._opts(
                depends_on=[*attachments, *before_nodes], ignore_changes=["scalingConfig.desiredSize"]
            ),
        )
        self.system_node_group_name = node_group.node_group_name
        self.system_node_role_arn = role.arn
        return node_group


def _validate(args: GpuClusterArgs) -> None:
    if not EKS_NAME.match(args.name):
        raise ValueError(
            f"EKS cluster name {args.name!r} must be 1-100 letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    for cidr in args.settings.public_access_cidrs:
        if cidr.prefixlen == 0:
            raise ValueError(
                "vllm-serving:cluster.publicAccessCidrs: 0.0.0.0/0 would expose the Kubernetes API"
            )
    addon_versions(args.settings.version)
    check_log_retention(args.log_retention_days, "GpuClusterArgs.log_retention_days")
