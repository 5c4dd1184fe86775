"""LoadBalancerController: the AWS Load Balancer Controller, for `serving.internalLoadBalancer` on EKS.

Builds an IAM role handed to the controller's service account through EKS Pod Identity, with the
NLB-only policy of `load_balancer_specs`, and the pinned eks-charts Helm release. Without it a
Service annotated `aws-load-balancer-type: external` would stay without a load balancer forever:
EKS's own cloud controller leaves such Services to this controller. vLLM Services depend on it,
so on destroy they (and their NLBs) go first and nothing is left behind.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as kubernetes

from components.helm_charts import pinned_release
from components.load_balancer_specs import (
    SERVICE_ACCOUNT,
    load_balancer_controller_policy,
    load_balancer_controller_values,
)
from components.pod_identity import pod_identity_role
from components.workload_facts import chart

CHART_KEY = "aws-load-balancer-controller"


@dataclass(frozen=True)
class LoadBalancerControllerArgs:
    """Inputs of LoadBalancerController."""

    provider: kubernetes.Provider
    """The EKS cluster's provider."""
    cluster_name: pulumi.Input[str]
    """EKS cluster name (the controller tags what it creates with it)."""
    region: str
    """AWS region of the cluster."""
    partition: str
    """ARN partition of that region."""
    vpc_id: pulumi.Input[str]
    """VPC of the cluster (saves the controller an instance-metadata lookup)."""
    depends_on: tuple[pulumi.Resource, ...] = ()
    """What the controller needs first (the cluster's nodes and add-ons)."""


class LoadBalancerController(pulumi.ComponentResource):
    """The AWS Load Balancer Controller on a Pod Identity role (`vllm-serving:lb:LoadBalancerController`).

    Secure defaults: the role may create load balancers only with the cluster's ownership tag and
    change or delete only tagged ones; no Ingress support (no IngressClass, no ALB permissions);
    Services are taken only when annotated for it.
    """

    role_arn: pulumi.Output[str]
    """The controller's IAM role."""
    release: kubernetes.helm.v3.Release
    """The Helm release; Services of type LoadBalancer must depend on it."""

    def __init__(
        self, name: str, args: LoadBalancerControllerArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("vllm-serving:lb:LoadBalancerController", name, None, opts)
        pin = chart(CHART_KEY)
        identity = pod_identity_role(
            name,
            cluster_name=args.cluster_name,
            namespace=pin.namespace,
            service_account=SERVICE_ACCOUNT,
            policy=load_balancer_controller_policy(args.partition),
            description="AWS Load Balancer Controller (EKS Pod Identity): internal NLBs of vLLM Services",
            tags={"vllm-serving/role": CHART_KEY},
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )
        values = pulumi.Output.all(args.cluster_name, args.vpc_id).apply(
            lambda v: load_balancer_controller_values(
                cluster_name=v[0],
                region=args.region,
                vpc_id=v[1],
                image_repository=pin.image_repository,
                image_tag=pin.image_tag,
            )
        )
        assert pin.namespace is not None
        self.release = pinned_release(
            f"{name}-release",
            pin,
            namespace=pin.namespace,
            values=values,
            atomic=True,
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=[*args.depends_on, *identity.ready]
            ),
        )
        self.role_arn = identity.role.arn
        self.register_outputs({"roleArn": self.role_arn, "chartVersion": pin.version})
