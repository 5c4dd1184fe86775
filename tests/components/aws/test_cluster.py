"""GpuCluster graphs (components/cluster.py): private API endpoint by default and public only with
the configured CIDRs; KMS envelope encryption (rotation on, protected); all control-plane logs;
API authentication with admin access entries; OIDC provider; pinned add-ons with vpc-cni on its
own IRSA role and CoreDNS after nodes; the system node group; the explicit kubernetes provider
(exec kubeconfig, secret) that in-cluster resources use; region fallback; bad input."""

from __future__ import annotations

import functools
import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest

from components.cluster import GpuCluster, GpuClusterArgs
from offline.recorder import Graph
from tests.components.aws.support import (
    ACCESS_ENTRY,
    ACCESS_POLICY,
    ADDON,
    ATTACHMENT,
    EKS_CLUSTER,
    K8S_PROVIDER,
    KMS_KEY,
    LAUNCH_TEMPLATE,
    LOG_GROUP,
    NODE_GROUP,
    OIDC,
    ROLE,
    by_name,
    depends_on,
    expect,
    expect_equal,
    plain,
    raw,
    record,
    settings_of,
)

NAME = "vllm-serving-prod"
ADMIN = "arn:aws:iam::123456789012:role/platform-admins"


def cluster_graph(
    cluster: dict[str, Any] | None = None, zones: tuple[str, ...] = ("us-east-1a",), **kwargs
) -> Graph:
    """A fresh graph of one GpuCluster on stand-in network ids, from the prod stack's settings."""
    overrides = {"cluster": cluster} if cluster is not None else {}
    settings = settings_of(raw("prod", **overrides))

    def program() -> None:
        gpu_cluster = GpuCluster(
            "eks",
            GpuClusterArgs(
                name=NAME,
                settings=settings.cluster,
                private_subnet_ids=["subnet-a", "subnet-b", "subnet-c"],
                cluster_security_group_id="sg-cluster",
                node_security_group_id="sg-node",
                availability_zones=list(zones),
            ),
        )
        # An in-cluster object built the way every component must build one.
        k8s.core.v1.Namespace(
            "vllm", metadata={"name": "vllm"}, opts=pulumi.ResourceOptions(provider=gpu_cluster.provider)
        )

    return record(program, **kwargs)


@functools.cache
def prod() -> Graph:
    """The prod cluster, recorded once per session and shared read-only."""
    return cluster_graph()


def test_endpoint_is_private_only_by_default() -> None:
    cluster = prod().one(EKS_CLUSTER)
    vpc = cluster.inputs["vpcConfig"]
    expect_equal(cluster, vpc["endpointPrivateAccess"], True, "endpointPrivateAccess")
    expect_equal(cluster, vpc["endpointPublicAccess"], False, "endpointPublicAccess")
    expect(cluster, "publicAccessCidrs" not in vpc, "no public CIDRs without a public endpoint")
    expect_equal(cluster, vpc["securityGroupIds"], ["sg-cluster"], "additional security group")
    expect_equal(cluster, vpc["subnetIds"], ["subnet-a", "subnet-b", "subnet-c"], "private subnets")


def test_public_endpoint_only_with_the_configured_cidrs() -> None:
    cluster_settings = {**raw("prod")["cluster"], "publicAccessCidrs": ["203.0.113.0/24", "198.51.100.7/32"]}
    cluster = cluster_graph(cluster_settings).one(EKS_CLUSTER)
    vpc = cluster.inputs["vpcConfig"]
    expect_equal(cluster, vpc["endpointPublicAccess"], True, "endpointPublicAccess")
    expect_equal(
        cluster, vpc["publicAccessCidrs"], ["198.51.100.7/32", "203.0.113.0/24"], "publicAccessCidrs"
    )
    expect_equal(cluster, vpc["endpointPrivateAccess"], True, "endpointPrivateAccess")


def test_secrets_are_envelope_encrypted_with_a_protected_rotating_key() -> None:
    graph = prod()
    key, cluster = graph.one(KMS_KEY), graph.one(EKS_CLUSTER)
    expect_equal(key, key.inputs["enableKeyRotation"], True, "key rotation")
    expect(key, key.protect, "the Secrets key is protected")
    expect_equal(cluster, cluster.inputs["encryptionConfig"]["resources"], ["secrets"], "encrypted resources")
    expect_equal(cluster, depends_on(graph, cluster, "encryptionConfig"), [key], "encryption key")
    role_kms = graph.one("aws:iam/rolePolicy:RolePolicy", "eks-cluster-role-kms")
    expect_equal(role_kms, depends_on(graph, role_kms, "policy"), [key], "cluster role may use the key")


def test_all_control_plane_logs_with_retention() -> None:
    graph = prod()
    cluster, logs = graph.one(EKS_CLUSTER), graph.one(LOG_GROUP)
    expect_equal(
        cluster,
        cluster.inputs["enabledClusterLogTypes"],
        ["api", "audit", "authenticator", "controllerManager", "scheduler"],
        "log types",
    )
    expect_equal(
        logs, (logs.inputs["name"], logs.inputs["retentionInDays"]), (f"/aws/eks/{NAME}/cluster", 90), "logs"
    )
    expect(cluster, logs.urn in cluster.dependencies, "the log group exists before EKS creates its own")


def test_api_authentication_with_admin_access_entries() -> None:
    graph = prod()
    cluster = graph.one(EKS_CLUSTER)
    expect_equal(cluster, cluster.inputs["accessConfig"]["authenticationMode"], "API", "authentication mode")
    entry = graph.one(ACCESS_ENTRY)
    expect_equal(
        entry,
        (entry.name, entry.inputs["principalArn"], entry.inputs["type"]),
        ("eks-admin-123456789012-platform-admins", ADMIN, "STANDARD"),
        "access entry",
    )
    association = graph.one(ACCESS_POLICY)
    expect_equal(
        association,
        association.inputs["policyArn"],
        "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
        "policy",
    )
    expect_equal(association, association.inputs["accessScope"], {"type": "cluster"}, "scope")
    expect(association, entry.urn in association.dependencies, "the policy waits for its entry")


def test_oidc_provider_for_irsa() -> None:
    graph = prod()
    oidc, cluster = graph.one(OIDC), graph.one(EKS_CLUSTER)
    expect_equal(oidc, oidc.inputs["clientIdLists"], ["sts.amazonaws.com"], "audience")
    expect_equal(oidc, oidc.inputs["url"], cluster.outputs["identities"][0]["oidcs"][0]["issuer"], "issuer")


def test_addons_are_pinned_and_ordered_around_nodes() -> None:
    graph = prod()
    addons = by_name(graph, ADDON)
    versions = {a.inputs["addonName"]: a.inputs["addonVersion"] for a in addons.values()}
    assert versions == {
        "aws-ebs-csi-driver": "v1.46.0-eksbuild.1",
        "coredns": "v1.12.4-eksbuild.18",
        "eks-pod-identity-agent": "v1.3.4-eksbuild.1",
        "kube-proxy": "v1.33.10-eksbuild.13",
        "vpc-cni": "v1.20.1-eksbuild.3",
    }
    system_nodes = graph.one(NODE_GROUP)
    coredns = addons["eks-addon-coredns"]
    expect(coredns, system_nodes.urn in coredns.dependencies, "CoreDNS needs nodes to become active")
    for name in ("eks-addon-vpc-cni", "eks-addon-kube-proxy", "eks-addon-eks-pod-identity-agent"):
        expect(
            addons[name], addons[name].urn in system_nodes.dependencies, "nodes wait for networking add-ons"
        )


def test_ebs_csi_driver_controller_gets_a_pod_identity_role_with_the_managed_policy() -> None:
    graph = prod()
    ebs = by_name(graph, ADDON)["eks-addon-aws-ebs-csi-driver"]
    role = graph.one(ROLE, "eks-ebs-csi-role")
    associations = ebs.inputs["podIdentityAssociations"]
    expect_equal(
        ebs, [a["serviceAccount"] for a in associations], ["ebs-csi-controller-sa"], "service account"
    )
    expect_equal(ebs, associations[0]["roleArn"], role.outputs["arn"], "association role")
    expect(ebs, "serviceAccountRoleArn" not in ebs.inputs, "Pod Identity, not IRSA")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert trust == [
        {
            "Effect": "Allow",
            "Principal": {"Service": "pods.eks.amazonaws.com"},
            "Action": ["sts:AssumeRole", "sts:TagSession"],
        }
    ]
    attachments = [a for a in graph.by_type(ATTACHMENT) if depends_on(graph, a, "role") == [role]]
    assert [a.inputs["policyArn"] for a in attachments] == [
        "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    ]
    system_nodes = graph.one(NODE_GROUP)
    agent = by_name(graph, ADDON)["eks-addon-eks-pod-identity-agent"]
    for needed, why in (
        (system_nodes, "the controller needs nodes"),
        (agent, "Pod Identity credentials need the agent"),
        (attachments[0], "the role has its policy before the controller starts"),
    ):
        expect(ebs, needed.urn in ebs.dependencies, why)


def test_vpc_cni_runs_on_its_own_irsa_role() -> None:
    graph = prod()
    cni = by_name(graph, ADDON)["eks-addon-vpc-cni"]
    role = graph.one(ROLE, "eks-vpc-cni-role")
    expect_equal(cni, depends_on(graph, cni, "serviceAccountRoleArn"), [role], "service account role")
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    expect(
        role,
        trust["Condition"]["StringEquals"].get(
            f"{graph.one(OIDC).inputs['url'].removeprefix('https://')}:sub"
        )
        == "system:serviceaccount:kube-system:aws-node",
        "trust is scoped to kube-system/aws-node",
    )
    policies = sorted(
        a.inputs["policyArn"] for a in graph.by_type(ATTACHMENT) if depends_on(graph, a, "role") == [role]
    )
    assert policies == ["arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"]
    node_role = graph.one(ROLE, "eks-system-node-role")
    node_policies = sorted(
        a.inputs["policyArn"]
        for a in graph.by_type(ATTACHMENT)
        if depends_on(graph, a, "role") == [node_role]
    )
    assert node_policies == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    ]


def test_system_node_group() -> None:
    graph = prod()
    nodes = graph.one(NODE_GROUP)
    inputs = nodes.inputs
    expect_equal(nodes, inputs["labels"], {"vllm-serving/pool": "system"}, "labels")
    expect_equal(
        nodes, (inputs["amiType"], inputs["capacityType"]), ("AL2023_x86_64_STANDARD", "ON_DEMAND"), "AMI"
    )
    expect_equal(nodes, inputs["subnetIds"], ["subnet-a", "subnet-b", "subnet-c"], "private subnets")
    expect_equal(nodes, inputs["scalingConfig"], {"minSize": 3, "desiredSize": 3, "maxSize": 6}, "scaling")
    expect_equal(nodes, nodes.ignore_changes, ["scalingConfig.desiredSize"], "autoscaler owns desired size")
    expect(nodes, "taints" not in inputs, "system nodes take any controller")
    template = graph.one(LAUNCH_TEMPLATE)
    expect_equal(template, template.inputs["instanceType"], "m7i.2xlarge", "instance type")
    expect_equal(template, template.inputs["metadataOptions"]["httpTokens"], "required", "IMDSv2")
    expect_equal(template, template.inputs["metadataOptions"]["httpPutResponseHopLimit"], 2, "hop limit")
    expect_equal(
        template, template.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"], "true", "encrypted root"
    )
    cluster = graph.one(EKS_CLUSTER)
    expect_equal(
        template,
        template.inputs["vpcSecurityGroupIds"],
        [cluster.outputs["vpcConfig"]["clusterSecurityGroupId"], "sg-node"],
        "EKS cluster group + node group",
    )


def test_in_cluster_resources_use_the_explicit_provider() -> None:
    graph = prod()
    provider = graph.one(K8S_PROVIDER)
    expect_equal(provider, provider.parent, graph.one("vllm-serving:cluster:GpuCluster").urn, "parent")
    namespace = graph.one("kubernetes:core/v1:Namespace")
    expect_equal(namespace, namespace.provider_urn, provider.urn, "provider of in-cluster objects")


def test_kubeconfig_is_secret_and_uses_aws_eks_get_token() -> None:
    graph = prod()
    provider = graph.one(K8S_PROVIDER)
    raw_kubeconfig = provider.inputs["kubeconfig"]
    expect(provider, isinstance(raw_kubeconfig, dict), "kubeconfig is passed as a secret")
    document = json.loads(plain(raw_kubeconfig))
    user = document["users"][0]["user"]
    expect_equal(provider, list(user), ["exec"], "no static credentials")
    expect_equal(
        provider,
        user["exec"]["args"],
        ["eks", "get-token", "--cluster-name", NAME, "--region", "us-east-1", "--output", "json"],
        "exec args",
    )
    expect(provider, document["clusters"][0]["cluster"]["server"].startswith("https://"), "https endpoint")
    assert graph.one("vllm-serving:cluster:GpuCluster").outputs["kubeconfig"] == raw_kubeconfig


def test_region_falls_back_to_the_zones_without_provider_region() -> None:
    graph = cluster_graph(zones=("eu-west-1a",), config={})
    document = json.loads(plain(graph.one(K8S_PROVIDER).inputs["kubeconfig"]))
    assert document["users"][0]["user"]["exec"]["args"][5] == "eu-west-1"


def test_unpinned_kubernetes_version_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"no pinned EKS add-on versions for Kubernetes 1\.30"):
        cluster_graph({**raw("prod")["cluster"], "version": "1.30"})


def test_bad_cluster_name_is_rejected() -> None:
    settings = settings_of(raw("prod"))
    args = GpuClusterArgs(
        name="-bad",
        settings=settings.cluster,
        private_subnet_ids=[],
        cluster_security_group_id="sg",
        node_security_group_id="sg",
        availability_zones=["us-east-1a"],
    )
    with pytest.raises(ValueError, match="EKS cluster name '-bad' must be"):
        record(lambda: GpuCluster("eks", args))
