"""A small recorded graph that satisfies every policy of the pack, for end-to-end runs.

`clean_graph()` returns the resources by short name so a test can swap one for a failing variant
(`with_change`). The shapes follow what the components register: an EFA group with self rules both
ways, private subnets behind NAT, a private EKS endpoint, a Lustre model store reachable from the
nodes' group only, a default-deny namespace with group-only Ray/NCCL traffic, the API key from a
Secret, and kube-prometheus-stack kept inside the cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from offline.graph import RecordedResource
from policies.pack_config import APP_NAME_LABEL, EFA_ROLE, GROUP_LABEL, MODEL_STORE_ROLE, ROLE_TAG, TIER_TAG
from tests.policies.policy_fakes import recorded, secret

SG = "aws:ec2/securityGroup:SecurityGroup"
SG_IN = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_OUT = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
NP = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
LWS = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"


def _self_rule(type_: str, name: str, group: RecordedResource) -> RecordedResource:
    inputs = {"securityGroupId": group.id, "referencedSecurityGroupId": group.id, "ipProtocol": "-1"}
    return recorded(
        type_, name, inputs, deps={"securityGroupId": [group.urn], "referencedSecurityGroupId": [group.urn]}
    )


def vllm_container(model: str) -> dict[str, Any]:
    """A vLLM server container as VllmService builds it."""
    return {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.19.0",
        "args": ["--model", f"/models/{model}", "--port", "8000"],
        "ports": [{"name": "http", "containerPort": 8000}],
        "env": [
            {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "key"}}}
        ],
        "securityContext": {
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"], "add": ["IPC_LOCK"]},
        },
    }


def _template(model: str) -> dict[str, Any]:
    labels = {APP_NAME_LABEL: "vllm", GROUP_LABEL: model}
    return {"metadata": {"labels": labels}, "spec": {"containers": [vllm_container(model)]}}


def clean_graph() -> dict[str, RecordedResource]:
    """Resources by short name; every policy passes on them."""
    r: dict[str, RecordedResource] = {}
    r["vpc"] = recorded("aws:ec2/vpc:Vpc", "vpc", {"cidrBlock": "10.0.0.0/16"})
    vpc_dep = {"vpcId": [r["vpc"].urn]}
    r["subnet"] = recorded(
        "aws:ec2/subnet:Subnet",
        "private-a",
        {"vpcId": r["vpc"].id, "mapPublicIpOnLaunch": False, "tags": {TIER_TAG: "private"}},
        deps=vpc_dep,
    )
    nat = [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-0a1"}]
    r["rt"] = recorded(
        "aws:ec2/routeTable:RouteTable", "private-rt", {"vpcId": r["vpc"].id, "routes": nat}, deps=vpc_dep
    )
    r["assoc"] = recorded(
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "private-a-rt",
        {"subnetId": r["subnet"].id, "routeTableId": r["rt"].id},
        deps={"subnetId": [r["subnet"].urn], "routeTableId": [r["rt"].urn]},
    )
    egress_https = {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]}
    r["nodes"] = recorded(SG, "nodes", {"vpcId": r["vpc"].id, "egress": [egress_https]}, deps=vpc_dep)
    r["efa"] = recorded(SG, "efa", {"vpcId": r["vpc"].id, "tags": {ROLE_TAG: EFA_ROLE}}, deps=vpc_dep)
    r["efa-in"] = _self_rule(SG_IN, "efa-in-self", r["efa"])
    r["efa-out"] = _self_rule(SG_OUT, "efa-out-self", r["efa"])
    r["store"] = recorded(
        SG, "model-store", {"vpcId": r["vpc"].id, "tags": {ROLE_TAG: MODEL_STORE_ROLE}}, deps=vpc_dep
    )
    r["store-in"] = recorded(
        SG_IN,
        "store-in-nodes",
        {
            "securityGroupId": r["store"].id,
            "referencedSecurityGroupId": r["nodes"].id,
            "ipProtocol": "tcp",
            "fromPort": 988,
            "toPort": 988,
        },
        deps={"securityGroupId": [r["store"].urn], "referencedSecurityGroupId": [r["nodes"].urn]},
    )
    vpc_config = {"endpointPrivateAccess": True, "endpointPublicAccess": False, "subnetIds": [r["subnet"].id]}
    r["cluster"] = recorded("aws:eks/cluster:Cluster", "cluster", {"vpcConfig": vpc_config})
    interfaces = [
        {"deviceIndex": 0, "networkCardIndex": 0, "interfaceType": "efa", "associatePublicIpAddress": "false"}
    ]
    r["lt"] = recorded("aws:ec2/launchTemplate:LaunchTemplate", "gpu-lt", {"networkInterfaces": interfaces})
    r["ng"] = recorded(
        "aws:eks/nodeGroup:NodeGroup",
        "gpu",
        {"subnetIds": [r["subnet"].id]},
        deps={"subnetIds": [r["subnet"].urn]},
    )
    lustre = {
        "deploymentType": "PERSISTENT_2",
        "kmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/k",
        "securityGroupIds": [r["store"].id],
    }
    r["fsx"] = recorded("aws:fsx/lustreFileSystem:LustreFileSystem", "model-fs", lustre)
    r["bucket"] = recorded("aws:s3/bucket:Bucket", "weights", {"forceDestroy": False})
    on_bucket = {"bucket": [r["bucket"].urn]}
    sse_rule = [{"applyServerSideEncryptionByDefault": {"sseAlgorithm": "aws:kms"}}]
    r["sse"] = recorded(
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "weights-sse",
        {"bucket": r["bucket"].id, "rules": sse_rule},
        deps=on_bucket,
    )
    flags = dict.fromkeys(
        ("blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls", "restrictPublicBuckets"), True
    )
    r["pab"] = recorded(
        "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
        "weights-pab",
        {"bucket": r["bucket"].id, **flags},
        deps=on_bucket,
    )
    r["k8s"] = recorded("pulumi:providers:kubernetes", "k8s", {"kubeconfig": secret("apiVersion: v1")})
    k8s = f"{r['k8s'].urn}::{r['k8s'].id}"
    meta = {"namespace": "serving"}
    r["ns"] = recorded(
        "kubernetes:core/v1:Namespace", "serving", {"metadata": {"name": "serving"}}, provider=k8s
    )
    deny = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    r["deny"] = recorded(NP, "serving-deny", {"metadata": meta, "spec": deny}, provider=k8s)
    group = [{"podSelector": {"matchLabels": {GROUP_LABEL: "llama"}}}]
    monitoring = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    allow = {
        "podSelector": {"matchLabels": {APP_NAME_LABEL: "vllm", GROUP_LABEL: "llama"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": monitoring, "ports": [{"port": 8000, "protocol": "TCP"}]}, {"from": group}],
        "egress": [{"to": group}, {"ports": [{"port": 53, "protocol": "UDP"}]}],
    }
    r["allow"] = recorded(NP, "llama-allow", {"metadata": meta, "spec": allow}, provider=k8s)
    r["deployment"] = recorded(
        DEPLOYMENT, "llama", {"metadata": meta, "spec": {"template": _template("llama")}}, provider=k8s
    )
    lws_spec = {
        "leaderWorkerTemplate": {"leaderTemplate": _template("big"), "workerTemplate": _template("big")}
    }
    r["lws"] = recorded(LWS, "big", {"metadata": meta, "spec": lws_spec}, provider=k8s)
    service = {
        "selector": {APP_NAME_LABEL: "vllm", GROUP_LABEL: "llama"},
        "ports": [{"name": "http", "port": 8000}],
    }
    r["service"] = recorded(
        "kubernetes:core/v1:Service", "llama", {"metadata": meta, "spec": service}, provider=k8s
    )
    values = {"grafana": {"service": {"type": "ClusterIP"}, "ingress": {"enabled": False}}}
    r["monitoring"] = recorded(
        "kubernetes:helm.sh/v3:Release",
        "monitoring",
        {"chart": "kube-prometheus-stack", "values": values},
        provider=k8s,
    )
    r["network"] = recorded(
        "pulumi:pulumi:StackReference",
        "network",
        {"name": "organization/network/test"},
        outputs={"outputs": {"privateSubnetIds": ["subnet-0shared"]}},
        read=True,
    )
    return r


def with_change(key: str, change: Callable[[RecordedResource], None] | None) -> list[RecordedResource]:
    """The clean graph with `change` applied to a copy of one resource (None removes it)."""
    graph = clean_graph()
    resource = copy.deepcopy(graph.pop(key))
    if change is not None:
        change(resource)
        resource.outputs = copy.deepcopy(resource.inputs) if not resource.read else resource.outputs
        graph[key] = resource
    return list(graph.values())
