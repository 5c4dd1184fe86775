"""`private-gpu-subnets` called directly: node-group subnets (public IP mapping, internet-gateway
routes via inline routes, Route resources, explicit and main route tables, StackReference
`privateSubnetIds`, unknown subnets) and monitoring exposure (Services selecting Prometheus,
Grafana or Alertmanager, the Ray dashboard port, kube-prometheus-stack Helm values)."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_policy import PolicyResource

from policies.k8s import SERVICE
from policies.stack_rules import (
    INTERNET_GATEWAY,
    MAIN_ROUTE_TABLE_ASSOCIATION,
    NODE_GROUP,
    ROUTE,
    ROUTE_TABLE,
    ROUTE_TABLE_ASSOCIATION,
    STACK_REFERENCE,
    SUBNET,
    VPC,
    private_gpu_subnets,
)
from tests.policies.policy_fakes import check_stack, policy_resource

RELEASE = "kubernetes:helm.sh/v3:Release"


def _subnet(name: str, public_ip: bool = False) -> PolicyResource:
    return policy_resource(
        SUBNET, name, {"id": f"subnet-{name}", "mapPublicIpOnLaunch": public_ip, "vpcId": "vpc-1"}
    )


def _group(*subnet_ids: str, deps: dict[str, list[PolicyResource]] | None = None) -> PolicyResource:
    return policy_resource(NODE_GROUP, "gpu", {"subnetIds": list(subnet_ids)}, deps=deps)


def _messages(resources: list[PolicyResource]) -> list[str]:
    return [message for message, _ in check_stack(private_gpu_subnets, resources)]


def test_private_subnet_behind_nat_passes() -> None:
    subnet = _subnet("a")
    table = policy_resource(
        ROUTE_TABLE,
        "private",
        {"id": "rtb-1", "routes": [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "nat-1"}]},
    )
    assoc = policy_resource(ROUTE_TABLE_ASSOCIATION, "a", {"subnetId": "subnet-a", "routeTableId": "rtb-1"})
    assert _messages([subnet, table, assoc, _group("subnet-a")]) == []


def test_subnet_mapping_public_ips() -> None:
    assert _messages([_subnet("a", public_ip=True), _group("subnet-a")]) == [
        "node group 'gpu': subnet 'a' sets mapPublicIpOnLaunch: true; GPU nodes need private subnets."
    ]


def test_inline_route_to_an_internet_gateway_by_dependency() -> None:
    igw = policy_resource(INTERNET_GATEWAY, "igw", {})
    table = policy_resource(
        ROUTE_TABLE, "public", {"id": "rtb-1", "routes": [{"cidrBlock": "0.0.0.0/0"}]}, deps={"routes": [igw]}
    )
    subnet = _subnet("a")
    assoc = policy_resource(
        ROUTE_TABLE_ASSOCIATION, "a", {}, deps={"subnetId": [subnet], "routeTableId": [table]}
    )
    assert _messages([igw, table, subnet, assoc, _group(deps={"subnetIds": [subnet]})]) == [
        "node group 'gpu': subnet 'a' uses route table 'public', which routes to an internet gateway; GPU "
        "nodes need private subnets."
    ]


def test_route_resource_on_the_vpc_main_table() -> None:
    subnet, vpc = _subnet("a"), policy_resource(VPC, "vpc", {"id": "vpc-1"})
    table = policy_resource(ROUTE_TABLE, "main", {"id": "rtb-main"})
    main = policy_resource(
        MAIN_ROUTE_TABLE_ASSOCIATION, "main", {"vpcId": "vpc-1", "routeTableId": "rtb-main"}
    )
    route = policy_resource(ROUTE, "default", {"routeTableId": "rtb-main", "gatewayId": "igw-0abc"})
    assert _messages([subnet, vpc, table, main, route, _group("subnet-a")]) == [
        "node group 'gpu': subnet 'a' uses route table 'main', which routes to an internet gateway; GPU "
        "nodes need private subnets."
    ]


def test_subnets_from_a_stack_reference() -> None:
    network = policy_resource(
        STACK_REFERENCE, "network", {"outputs": {"privateSubnetIds": ["subnet-x", "subnet-y"]}}
    )
    assert _messages([network, _group("subnet-x", "subnet-y")]) == []
    assert _messages([network, _group("subnet-x", "subnet-public")]) == [
        "node group 'gpu' uses subnet subnet-public, which is neither a subnet of this stack nor listed in a "
        "StackReference's privateSubnetIds."
    ]


def _service(spec: dict[str, Any]) -> PolicyResource:
    return policy_resource(SERVICE, "svc", {"metadata": {"name": "svc"}, "spec": spec})


@pytest.mark.parametrize(
    ("selector", "app"),
    [
        ({"app.kubernetes.io/name": "grafana"}, "Grafana"),
        ({"app": "kube-prometheus-stack-prometheus"}, "Prometheus"),
        ({"alertmanager": "main"}, "Alertmanager"),
    ],
)
def test_monitoring_behind_a_load_balancer(selector: dict[str, str], app: str) -> None:
    assert _messages([_service({"type": "LoadBalancer", "selector": selector})]) == [
        f"Service 'svc' of type LoadBalancer exposes {app} outside the cluster."
    ]


def test_ray_dashboard_node_port_and_cluster_ip_monitoring() -> None:
    dashboard = _service(
        {"type": "NodePort", "selector": {"ray.io/node-type": "head"}, "ports": [{"port": 8265}]}
    )
    assert _messages([dashboard]) == [
        "Service 'svc' of type NodePort exposes the Ray dashboard outside the cluster."
    ]
    assert (
        _messages([_service({"selector": {"app.kubernetes.io/name": "grafana"}, "ports": [{"port": 80}]})])
        == []
    )
    api = _service(
        {"type": "LoadBalancer", "selector": {"app.kubernetes.io/name": "vllm"}, "ports": [{"port": 8000}]}
    )
    assert _messages([api]) == []


def test_prometheus_stack_values_exposing_uis() -> None:
    values = {
        "grafana": {"service": {"type": "LoadBalancer"}, "ingress": {"enabled": True}},
        "prometheus": {"service": {"type": "ClusterIP"}},
        "alertmanager": {"service": {"type": "NodePort"}},
        "thanosRuler": {"ingress": {"enabled": "true"}},
    }
    release = policy_resource(
        RELEASE,
        "monitoring",
        {"chart": "oci://ghcr.io/prometheus-community/charts/kube-prometheus-stack", "values": values},
    )
    assert _messages([release]) == [
        f"Helm release 'monitoring' (kube-prometheus-stack) sets {what}, exposing monitoring outside the cluster."
        for what in (
            "alertmanager.service.type is NodePort",
            "grafana.service.type is LoadBalancer",
            "grafana.ingress.enabled is true",
            "thanosRuler.ingress.enabled is true",
        )
    ]
    other_chart = policy_resource(RELEASE, "keda", {"chart": "keda", "values": values})
    assert _messages([other_chart]) == []
