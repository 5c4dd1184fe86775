"""LoadBalancerController (components/load_balancer_controller.py, load_balancer_specs.py): the
controller a Service of type LoadBalancer needs on EKS, on a least-privilege Pod Identity role,
installed only when serving.internalLoadBalancer is set; vLLM's NLB Services wait for it."""

from __future__ import annotations

import json
from typing import Any

import yaml

from components.load_balancer_specs import load_balancer_controller_policy
from offline.engine import Preview, preview_stack
from tests.helpers import ROOT, write_stack

ROLE, POLICY = "aws:iam/role:Role", "aws:iam/rolePolicy:RolePolicy"
ASSOCIATION = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
RELEASE = "kubernetes:helm.sh/v3:Release"
COMPONENT = "vllm-serving:lb:LoadBalancerController"


def _statements(partition: str = "aws") -> dict[str, dict[str, Any]]:
    return {s["Sid"]: s for s in json.loads(load_balancer_controller_policy(partition))["Statement"]}


def test_creating_changing_and_deleting_need_the_ownership_tag() -> None:
    statements = _statements()
    owned = {"Null": {"aws:ResourceTag/elbv2.k8s.aws/cluster": "false"}}
    assert statements["ModifyOwnedLoadBalancers"]["Condition"] == owned
    assert "elasticloadbalancing:DeleteLoadBalancer" in statements["ModifyOwnedLoadBalancers"]["Action"]
    assert statements["DeleteOwnedSecurityGroups"]["Condition"] == owned
    assert statements["CreateOwnedLoadBalancers"]["Condition"] == {
        "Null": {"aws:RequestTag/elbv2.k8s.aws/cluster": "false"}
    }
    assert statements["ElbServiceLinkedRole"]["Condition"] == {
        "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}
    }


def test_no_alb_or_ingress_permissions() -> None:
    actions = [
        action
        for s in _statements().values()
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    services = {a.split(":")[0] for a in actions}
    assert services == {"iam", "ec2", "elasticloadbalancing"}, "no WAF, Shield, ACM or Cognito"
    assert not [a for a in actions if "Rule" in a or "Certificate" in a or "WebAcl" in a]
    resources = json.dumps([s["Resource"] for s in _statements().values()])
    assert "loadbalancer/app/" not in resources and "loadbalancer/net/*/*" in resources


def test_arns_follow_the_partition() -> None:
    assert (
        _statements("aws-cn")["Targets"]["Resource"] == "arn:aws-cn:elasticloadbalancing:*:*:targetgroup/*/*"
    )


def _prod_with_load_balancer(tmp_path) -> Preview:
    document = yaml.safe_load((ROOT / "Pulumi.prod.yaml").read_text())
    raw = {
        k.removeprefix("vllm-serving:"): v
        for k, v in document["config"].items()
        if k.startswith("vllm-serving:")
    }
    raw["serving"]["internalLoadBalancer"] = True
    extra = {k: v for k, v in document["config"].items() if not k.startswith("vllm-serving:")}
    return preview_stack(config_file=write_stack(tmp_path, raw, "prod", extra=extra))


def test_prod_with_an_internal_load_balancer_installs_the_controller_first(tmp_path) -> None:
    result = _prod_with_load_balancer(tmp_path)
    assert result.violations == [], "internal NLBs pass the isolation policy pack"
    graph = result.graph
    (component,) = graph.by_type(COMPONENT)
    children = [r for r in graph.resources if r.parent == component.urn]
    role = next(r for r in children if r.type == ROLE)
    assert json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"] == {
        "Service": "pods.eks.amazonaws.com"
    }
    association = next(r for r in children if r.type == ASSOCIATION)
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == (
        "kube-system",
        "aws-load-balancer-controller",
    )
    release = next(r for r in children if r.type == RELEASE)
    assert (release.inputs["chart"], release.inputs["version"]) == ("aws-load-balancer-controller", "1.17.1")
    values = release.inputs["values"]
    assert values["clusterName"] == "vllm-serving-prod"
    assert values["enableServiceMutatorWebhook"] is False and values["createIngressClassResource"] is False
    assert values["serviceAccount"] == {"create": True, "name": "aws-load-balancer-controller"}
    assert values["image"] == {
        "repository": "public.ecr.aws/eks/aws-load-balancer-controller",
        "tag": "v2.17.1",
    }
    assert association.urn in release.dependencies, "credentials exist before the controller starts"
    nlbs = [
        r for r in graph.by_type("kubernetes:core/v1:Service") if r.inputs["spec"]["type"] == "LoadBalancer"
    ]
    assert sorted(r.inputs["metadata"]["name"] for r in nlbs) == ["llama-405b-nlb", "qwen-32b-nlb"]
    for nlb in nlbs:
        assert release.urn in nlb.dependencies, f"{nlb.name}: created after and deleted before the controller"


def test_no_controller_without_an_internal_load_balancer() -> None:
    graph = preview_stack("prod", policies=False).graph
    assert graph.by_type(COMPONENT) == []
    assert not [r for r in graph.by_type(RELEASE) if r.inputs["chart"] == "aws-load-balancer-controller"]
