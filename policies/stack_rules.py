"""`private-gpu-subnets`: GPU node groups live in private subnets; monitoring stays in the cluster.

A stack policy, because both halves need the graph:
- every `aws:eks/nodeGroup:NodeGroup` subnet is a private subnet of this stack (mapPublicIpOnLaunch
  false, and its route table - explicit association, else the VPC's main table - has no route to
  an internet gateway), or an id a StackReference exports as `privateSubnetIds`;
- nothing exposes Prometheus, Grafana, Alertmanager or the Ray dashboard outside the cluster:
  no LoadBalancer/NodePort Service selecting them (or publishing the dashboard port 8265), and no
  kube-prometheus-stack Helm values that make their Services LoadBalancer/NodePort or enable an
  Ingress.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from .k8s import SERVICE
from .network_rules import NODE_GROUP, SUBNET
from .pack_config import PRIVATE_GPU_SUBNETS
from .props import as_list, as_map, dig, is_true, known, known_items, of_type, refers_to, resource_id, strings

STACK_REFERENCE = "pulumi:pulumi:StackReference"
INTERNET_GATEWAY = "aws:ec2/internetGateway:InternetGateway"
ROUTE_TABLE = "aws:ec2/routeTable:RouteTable"
DEFAULT_ROUTE_TABLE = "aws:ec2/defaultRouteTable:DefaultRouteTable"
ROUTE = "aws:ec2/route:Route"
ROUTE_TABLE_ASSOCIATION = "aws:ec2/routeTableAssociation:RouteTableAssociation"
MAIN_ROUTE_TABLE_ASSOCIATION = "aws:ec2/mainRouteTableAssociation:MainRouteTableAssociation"
VPC = "aws:ec2/vpc:Vpc"
HELM_TYPES = ("kubernetes:helm.sh/v3:Release", "kubernetes:helm.sh/v4:Chart")
PROMETHEUS_STACK_CHART = "kube-prometheus-stack"
MONITORING_APPS = ("prometheus", "grafana", "alertmanager")
RAY_DASHBOARD_PORT = 8265
EXPOSED_SERVICE_TYPES = ("LoadBalancer", "NodePort")


def _is_igw_id(gateway: Any, igw_ids: set[Any]) -> bool:
    return isinstance(gateway, str) and (gateway.startswith("igw-") or gateway in igw_ids)


def _table_routes_to_igw(table: PolicyResource, igws: list[PolicyResource]) -> bool:
    """Whether a route table's inline routes target an internet gateway of this stack (or any `igw-`)."""
    if any(dep in igws for dep in table.property_dependencies.get("routes", [])):
        return True
    igw_ids = {resource_id(igw) for igw in igws}
    routes = as_list(known(lambda: table.props.get("routes")))
    return any(_is_igw_id(known(lambda r=r: as_map(r).get("gatewayId")), igw_ids) for r in routes)


def _public_tables(resources: list[PolicyResource]) -> list[PolicyResource]:
    """Route tables with a route to an internet gateway (inline routes or Route resources)."""
    igws = of_type(resources, INTERNET_GATEWAY)
    tables = of_type(resources, ROUTE_TABLE, DEFAULT_ROUTE_TABLE)
    public = [t for t in tables if _table_routes_to_igw(t, igws)]
    for route in of_type(resources, ROUTE):
        gateway = known(lambda r=route: r.props.get("gatewayId"))
        if any(refers_to(route, "gatewayId", igw) for igw in igws) or _is_igw_id(gateway, set()):
            public += [t for t in tables if refers_to(route, "routeTableId", t) and t not in public]
    return public


def _table_of(subnet: PolicyResource, resources: list[PolicyResource]) -> PolicyResource | None:
    """The route table a subnet uses: its explicit association, else its VPC's main table."""
    tables = of_type(resources, ROUTE_TABLE, DEFAULT_ROUTE_TABLE)
    for assoc in of_type(resources, ROUTE_TABLE_ASSOCIATION):
        if refers_to(assoc, "subnetId", subnet):
            return next((t for t in tables if refers_to(assoc, "routeTableId", t)), None)
    vpcs = [v for v in of_type(resources, VPC) if refers_to(subnet, "vpcId", v)]
    for vpc in vpcs:
        for main in of_type(resources, MAIN_ROUTE_TABLE_ASSOCIATION):
            if refers_to(main, "vpcId", vpc):
                return next((t for t in tables if refers_to(main, "routeTableId", t)), None)
        for table in of_type(resources, DEFAULT_ROUTE_TABLE):
            if refers_to(table, "defaultRouteTableId", vpc):
                return table
    return None


def _referenced_private_ids(resources: list[PolicyResource]) -> set[str]:
    """Every id a StackReference of this stack exports as `privateSubnetIds`."""
    ids: set[str] = set()
    for ref in of_type(resources, STACK_REFERENCE):
        ids.update(strings(known(lambda r=ref: dig(r.props, "outputs", "privateSubnetIds"))))
    return ids


def _subnet_problem(
    subnet: PolicyResource, resources: list[PolicyResource], public: list[PolicyResource]
) -> str | None:
    """Why a subnet of this stack is not private, or None."""
    if is_true(known(lambda: subnet.props.get("mapPublicIpOnLaunch"))):
        return f"subnet '{subnet.name}' sets mapPublicIpOnLaunch: true"
    table = _table_of(subnet, resources)
    if table is not None and table in public:
        return f"subnet '{subnet.name}' uses route table '{table.name}', which routes to an internet gateway"
    return None


def _node_group_problems(resources: list[PolicyResource]) -> list[tuple[PolicyResource, str]]:
    subnets = of_type(resources, SUBNET)
    public = _public_tables(resources)
    referenced = _referenced_private_ids(resources)
    problems = []
    for group in of_type(resources, NODE_GROUP):
        used = [s for s in subnets if refers_to(group, "subnetIds", s)]
        for subnet in used:
            if reason := _subnet_problem(subnet, resources, public):
                problems.append(
                    (group, f"node group '{group.name}': {reason}; GPU nodes need private subnets.")
                )
        used_ids = {resource_id(s) for s in used}
        for value in known_items(known(lambda g=group: g.props.get("subnetIds"))):
            if value is None or value in used_ids or value in referenced:
                continue
            problems.append(
                (
                    group,
                    f"node group '{group.name}' uses subnet {value}, which is neither a subnet of this stack "
                    "nor listed in a StackReference's privateSubnetIds.",
                )
            )
    return problems


def _selects_monitoring(selector: Mapping[str, Any]) -> str | None:
    """The monitoring app a Service selector names (by label value, or by the operator's label keys
    such as `alertmanager: main`), or None."""
    for key, value in selector.items():
        for app in MONITORING_APPS:
            if app in f"{key}={value}".lower():
                return app.capitalize()
    return None


def _service_problem(service: PolicyResource) -> str | None:
    spec = as_map(service.props.get("spec"))
    service_type = spec.get("type")
    if service_type not in EXPOSED_SERVICE_TYPES:
        return None
    if app := _selects_monitoring(as_map(spec.get("selector"))):
        return f"Service '{service.name}' of type {service_type} exposes {app} outside the cluster."
    for port in map(as_map, as_list(spec.get("ports"))):
        if (
            RAY_DASHBOARD_PORT in (port.get("port"), port.get("targetPort"))
            or port.get("name") == "dashboard"
        ):
            return f"Service '{service.name}' of type {service_type} exposes the Ray dashboard outside the cluster."
    return None


def _helm_problems(release: PolicyResource) -> list[str]:
    if PROMETHEUS_STACK_CHART not in str(known(lambda: release.props.get("chart")) or ""):
        return []
    values = as_map(release.props.get("values"))
    problems = []
    for component in sorted(values):
        settings = as_map(values[component])
        service_type = dig(settings, "service", "type")
        if component in MONITORING_APPS and service_type in EXPOSED_SERVICE_TYPES:
            problems.append(f"{component}.service.type is {service_type}")
        if is_true(dig(settings, "ingress", "enabled")):
            problems.append(f"{component}.ingress.enabled is true")
    return [
        f"Helm release '{release.name}' ({PROMETHEUS_STACK_CHART}) sets {p}, exposing monitoring outside the cluster."
        for p in problems
    ]


def private_gpu_subnets(args: StackValidationArgs, report: ReportViolation) -> None:
    """Node groups in private subnets only; no monitoring UI or Ray dashboard outside the cluster."""
    resources = list(args.resources)
    for group, message in _node_group_problems(resources):
        report(message, group.urn)
    for service in of_type(resources, SERVICE):
        if problem := _service_problem(service):
            report(problem, service.urn)
    for release in of_type(resources, *HELM_TYPES):
        for problem in _helm_problems(release):
            report(problem, release.urn)


POLICIES = [
    StackValidationPolicy(
        PRIVATE_GPU_SUBNETS,
        "GPU node groups run in private subnets (no public IPs, no internet-gateway route); Prometheus, "
        "Grafana, Alertmanager and the Ray dashboard are not exposed outside the cluster.",
        validate=private_gpu_subnets,
        enforcement_level=EnforcementLevel.MANDATORY,
        severity=Severity.HIGH,
        remediation_steps="Give node groups the private subnets of PrivateNetwork (or a network stack's "
        "privateSubnetIds output); keep monitoring Services ClusterIP, disable chart ingresses, and "
        "reach the UIs with kubectl port-forward.",
    ),
]
