"""PrivateNetwork graphs (components/network.py) recorded from the shipped stack files and variants:
private subnets never map public IPs and carry the EKS/tier tags; public subnets exist only for NAT
and never carry the public-ELB role; NAT per zone or single; the egress-free endpoints mode; flow
logs; the EFA group's self-only rules; no ingress from 0.0.0.0/0; the model-store group; adopting
an existing network (and the errors for a missing output or a wrong region); the same graph twice."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest

from components.network import PrivateNetwork, PrivateNetworkArgs, associated_cidrs
from offline.recorder import Graph
from tests.components.aws.support import (
    EGRESS,
    FLOW_LOG,
    INGRESS,
    LOG_GROUP,
    NAT_GATEWAY,
    ROLE,
    ROUTE,
    SECURITY_GROUP,
    STACK_REFERENCE,
    SUBNET,
    VPC,
    VPC_ENDPOINT,
    by_name,
    depends_on,
    expect,
    expect_equal,
    raw,
    record,
    settings_of,
)

CLUSTER = "vllm-serving-prod"
EXISTING = {"stack": "acme/network/prod"}
NETWORK_OUTPUTS = {
    "vpcId": "vpc-0abc",
    "privateSubnetIds": ["subnet-a", "subnet-b", "subnet-c"],
    "availabilityZones": ["us-east-1a", "us-east-1b", "us-east-1c"],
}


def network_graph(
    stack: str = "prod", network: dict | None = None, model_store_kind: str = "fsx-lustre", **kwargs
) -> Graph:
    """Record a fresh network graph for a stack file, optionally with other network settings."""
    overrides = {"network": network} if network is not None else {}
    settings = settings_of(raw(stack, **overrides))

    def program() -> None:
        PrivateNetwork(
            "net",
            PrivateNetworkArgs(
                settings=settings.network,
                cluster_name=CLUSTER,
                model_store_kind=model_store_kind,  # type: ignore[arg-type]
            ),
        )

    return record(program, **kwargs)


def endpoints_network() -> dict:
    return {**raw("prod")["network"], "egress": "endpoints", "natGateways": "single"}


@functools.cache
def variant(name: str, preview: bool = False) -> Graph:
    """One recording per variant and session, shared read-only (test_same_settings_same_graph
    shows recordings are deterministic); tests that change inputs record their own."""
    if name == "endpoints":
        return network_graph(network=endpoints_network(), preview=preview)
    if name == "existing":
        network = {"existing": EXISTING, "availabilityZones": ["us-east-1a", "us-east-1b"]}
        return network_graph(network=network, stack_outputs={"acme/network/prod": NETWORK_OUTPUTS})
    return network_graph(name, preview=preview)


def test_private_subnets_are_private_and_tagged_for_eks() -> None:
    graph = variant("prod")
    private = [s for s in graph.by_type(SUBNET) if s.name.startswith("net-private-")]
    assert [s.inputs["availabilityZone"] for s in private] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    for subnet in private:
        expect_equal(subnet, subnet.inputs["mapPublicIpOnLaunch"], False, "mapPublicIpOnLaunch")
        tags = subnet.inputs["tags"]
        expect_equal(subnet, tags["vllm-serving/tier"], "private", "tier tag")
        expect_equal(subnet, tags["kubernetes.io/role/internal-elb"], "1", "internal-elb tag")
        expect_equal(subnet, tags[f"kubernetes.io/cluster/{CLUSTER}"], "shared", "cluster tag")
    assert [s.inputs["cidrBlock"] for s in private] == ["10.50.0.0/18", "10.50.64.0/18", "10.50.128.0/18"]


def test_public_subnets_only_hold_nat_and_never_public_load_balancers() -> None:
    graph = variant("prod")
    public = [s for s in graph.by_type(SUBNET) if s.name.startswith("net-public-")]
    assert len(public) == 3
    for subnet in public:
        expect(
            subnet,
            "kubernetes.io/role/elb" not in subnet.inputs["tags"],
            "public subnets never invite public LBs",
        )
        expect_equal(subnet, subnet.inputs["mapPublicIpOnLaunch"], False, "mapPublicIpOnLaunch")
        expect_equal(subnet, subnet.inputs["tags"]["vllm-serving/tier"], "public", "tier tag")


def test_nat_gateway_per_zone_routes_each_zone_to_its_own() -> None:
    graph = variant("prod")
    nats = by_name(graph, NAT_GATEWAY)
    assert sorted(nats) == ["net-nat-us-east-1a", "net-nat-us-east-1b", "net-nat-us-east-1c"]
    routes = by_name(graph, ROUTE)
    for az in ("us-east-1a", "us-east-1b", "us-east-1c"):
        route = routes[f"net-private-default-{az}"]
        expect_equal(
            route, [r.name for r in depends_on(graph, route, "natGatewayId")], [f"net-nat-{az}"], "NAT"
        )
        expect_equal(route, route.inputs["destinationCidrBlock"], "0.0.0.0/0", "destination")


def test_single_nat_gateway_for_dev() -> None:
    graph = variant("dev")
    assert sorted(by_name(graph, NAT_GATEWAY)) == ["net-nat-us-east-1a"]
    assert sorted(s.name for s in graph.by_type(SUBNET) if s.name.startswith("net-public-")) == [
        "net-public-us-east-1a"
    ]
    route = by_name(graph, ROUTE)["net-private-default-us-east-1b"]
    expect_equal(
        route, [r.name for r in depends_on(graph, route, "natGatewayId")], ["net-nat-us-east-1a"], "NAT"
    )


def test_endpoints_mode_has_no_internet_path() -> None:
    graph = variant("endpoints")
    assert graph.by_type(NAT_GATEWAY) == []
    assert graph.by_type("aws:ec2/internetGateway:InternetGateway") == []
    assert [s.name for s in graph.by_type(SUBNET) if "public" in s.name] == []
    assert [r.name for r in graph.by_type(ROUTE)] == []
    endpoints = by_name(graph, VPC_ENDPOINT)
    s3 = endpoints.pop("net-endpoint-s3")
    expect_equal(
        s3,
        (s3.inputs["vpcEndpointType"], s3.inputs["serviceName"]),
        ("Gateway", "com.amazonaws.us-east-1.s3"),
        "S3",
    )
    expect_equal(s3, len(s3.inputs["routeTableIds"]), 3, "route tables")
    services = sorted(
        e.inputs["serviceName"].removeprefix("com.amazonaws.us-east-1.") for e in endpoints.values()
    )
    assert {"ecr.api", "ecr.dkr", "sts", "ec2", "logs", "elasticloadbalancing"} <= set(services)
    group = by_name(graph, SECURITY_GROUP)["net-sg-endpoints"]
    for endpoint in endpoints.values():
        expect_equal(endpoint, endpoint.inputs["vpcEndpointType"], "Interface", "type")
        expect_equal(endpoint, endpoint.inputs["privateDnsEnabled"], True, "private DNS")
        expect_equal(endpoint, len(endpoint.inputs["subnetIds"]), 3, "private subnets")
        expect_equal(
            endpoint, depends_on(graph, endpoint, "securityGroupIds"), [group], "endpoint security group"
        )
    rules = [r for r in graph.by_type(INGRESS) if depends_on(graph, r, "securityGroupId") == [group]]
    assert [
        (r.inputs["ipProtocol"], r.inputs["fromPort"], r.inputs["toPort"], r.inputs["cidrIpv4"])
        for r in rules
    ] == [("tcp", 443, 443, "10.50.0.0/16")]


def test_endpoints_mode_node_egress_stays_in_the_vpc() -> None:
    graph = variant("endpoints")
    node = by_name(graph, SECURITY_GROUP)["net-sg-node"]
    egress = [r for r in graph.by_type(EGRESS) if depends_on(graph, r, "securityGroupId") == [node]]
    assert sorted(r.name for r in egress) == ["net-node-out-s3-https", "net-node-out-vpc"]
    for rule in egress:
        expect(
            rule, rule.inputs.get("cidrIpv4") != "0.0.0.0/0", "no egress to the internet in endpoints mode"
        )
    # AWS computes the endpoint's prefix list id: a preview shows the rule waiting on it.
    preview = variant("endpoints", preview=True)
    s3_rule = by_name(preview, EGRESS)["net-node-out-s3-https"]
    expect_equal(
        s3_rule, [d.name for d in depends_on(preview, s3_rule, "prefixListId")], ["net-endpoint-s3"], "peer"
    )
    expect_equal(
        s3_rule, (s3_rule.inputs["ipProtocol"], s3_rule.inputs["fromPort"]), ("tcp", 443), "HTTPS only"
    )


def test_flow_logs_with_retention_from_settings() -> None:
    graph = variant("prod")
    log_group = graph.one(LOG_GROUP)
    expect_equal(log_group, log_group.inputs["retentionInDays"], 90, "retention")
    flow = graph.one(FLOW_LOG)
    expect_equal(flow, flow.inputs["trafficType"], "ALL", "traffic type")
    expect_equal(flow, depends_on(graph, flow, "logDestination"), [log_group], "destination")
    role = graph.one(ROLE, "net-flow-logs-role")
    expect(
        role,
        "vpc-flow-logs.amazonaws.com" in role.inputs["assumeRolePolicy"],
        "delivery role trusts flow logs",
    )


def test_efa_group_allows_only_itself_both_ways() -> None:
    graph = variant("prod")
    efa = by_name(graph, SECURITY_GROUP)["net-sg-efa"]
    expect_equal(efa, efa.inputs["tags"]["vllm-serving/role"], "efa", "role tag")
    rules = [
        r
        for r in graph.by_type(INGRESS) + graph.by_type(EGRESS)
        if depends_on(graph, r, "securityGroupId") == [efa]
    ]
    assert sorted((r.type.rsplit(":", 1)[-1], r.inputs["ipProtocol"]) for r in rules) == [
        ("SecurityGroupEgressRule", "-1"),
        ("SecurityGroupIngressRule", "-1"),
    ]
    for rule in rules:
        expect_equal(
            rule, depends_on(graph, rule, "referencedSecurityGroupId"), [efa], "peer must be the EFA group"
        )
        expect(rule, "cidrIpv4" not in rule.inputs and "prefixListId" not in rule.inputs, "no CIDR peers")
        expect(rule, bool(rule.inputs.get("description")), "rules are described")


def test_efa_group_is_not_a_peer_of_any_other_group() -> None:
    graph = variant("prod")
    efa = by_name(graph, SECURITY_GROUP)["net-sg-efa"]
    for rule in graph.by_type(INGRESS) + graph.by_type(EGRESS):
        if depends_on(graph, rule, "securityGroupId") != [efa]:
            expect(
                rule, efa not in depends_on(graph, rule, "referencedSecurityGroupId"), "EFA stays self-only"
            )


@pytest.mark.parametrize("network", [None, "endpoints"])
def test_no_ingress_from_anywhere(network: str | None) -> None:
    graph = variant(network or "prod")
    for rule in graph.by_type(INGRESS):
        expect(rule, rule.inputs.get("cidrIpv4") not in ("0.0.0.0/0",), "ingress from 0.0.0.0/0")
        expect(rule, "cidrIpv6" not in rule.inputs, "no IPv6 CIDR ingress")
        expect(rule, bool(rule.inputs.get("description")), "rules are described")
    for group in graph.by_type(SECURITY_GROUP):
        expect(
            group,
            "ingress" not in group.inputs and "egress" not in group.inputs,
            "rules are separate resources",
        )


def test_model_store_group_admits_lustre_from_nodes_only() -> None:
    graph = variant("prod")
    groups = by_name(graph, SECURITY_GROUP)
    store, node = groups["net-sg-model-store"], groups["net-sg-node"]
    expect_equal(store, store.inputs["tags"]["vllm-serving/role"], "model-store", "role tag")
    ingress = [r for r in graph.by_type(INGRESS) if depends_on(graph, r, "securityGroupId") == [store]]
    assert sorted(
        (r.inputs["fromPort"], r.inputs["toPort"], depends_on(graph, r, "referencedSecurityGroupId")[0].name)
        for r in ingress
    ) == [
        (988, 988, "net-sg-model-store"),
        (988, 988, "net-sg-node"),
        (1018, 1023, "net-sg-model-store"),
        (1018, 1023, "net-sg-node"),
    ]
    for rule in ingress:
        expect(rule, "cidrIpv4" not in rule.inputs, "model store admits no CIDR")
    assert node in [depends_on(graph, r, "referencedSecurityGroupId")[0] for r in ingress]


def test_efs_model_store_group_admits_nfs_from_nodes_only() -> None:
    graph = network_graph(model_store_kind="efs")
    groups = by_name(graph, SECURITY_GROUP)
    store = groups["net-sg-model-store"]
    expect_equal(store, store.inputs["description"], "Model filesystem: NFS from nodes only", "description")
    ingress = [r for r in graph.by_type(INGRESS) if depends_on(graph, r, "securityGroupId") == [store]]
    assert [
        (r.inputs["ipProtocol"], r.inputs["fromPort"], r.inputs["toPort"])
        for r in ingress
        if depends_on(graph, r, "referencedSecurityGroupId") == [groups["net-sg-node"]]
    ] == [("tcp", 2049, 2049)]
    assert len(ingress) == 1
    lustre = variant("prod")
    assert by_name(lustre, SECURITY_GROUP)["net-sg-model-store"].inputs["description"] == (
        "Model filesystem: Lustre ports from nodes only"
    ), "the shipped description stays, or every FSx stack would replace its group"


def test_children_are_parented_and_named_after_the_component() -> None:
    graph = variant("prod")
    component = graph.one("vllm-serving:network:PrivateNetwork")
    children = graph.children(component)
    assert children and all(c.name.startswith("net-") for c in children)
    assert len(children) == len(graph.resources) - 1
    assert component.outputs["vpcId"] == graph.one(VPC).id


def test_an_adopted_vpc_has_its_cidr_looked_up_for_network_policies() -> None:
    component = variant("existing").one("vllm-serving:network:PrivateNetwork")
    # The offline EC2 lookup answers the example network's CIDR; None here would reach
    # NetworkPolicy ipBlocks and the NLB's loadBalancerSourceRanges.
    assert component.outputs["vpcCidr"] == "10.50.0.0/16"


def test_every_associated_cidr_block_of_an_adopted_vpc_counts() -> None:
    blocks = [
        SimpleNamespace(cidr_block="10.50.0.0/16", state="associated"),
        SimpleNamespace(cidr_block="100.64.0.0/16", state="associated"),
        SimpleNamespace(cidr_block="10.99.0.0/16", state="disassociating"),
    ]
    assert associated_cidrs(blocks) == ["10.50.0.0/16", "100.64.0.0/16"]


def test_existing_network_is_adopted_from_stack_outputs() -> None:
    graph = variant("existing")
    assert graph.by_type(VPC) == [] and graph.by_type(SUBNET) == [] and graph.by_type(NAT_GATEWAY) == []
    reference = graph.one(STACK_REFERENCE)
    expect_equal(reference, reference.inputs["name"], "acme/network/prod", "referenced stack")
    for group in graph.by_type(SECURITY_GROUP):
        expect_equal(group, group.inputs["vpcId"], "vpc-0abc", "groups live in the adopted VPC")
    outputs = graph.one("vllm-serving:network:PrivateNetwork").outputs
    assert outputs["privateSubnetIds"] == ["subnet-a", "subnet-b", "subnet-c"]
    assert outputs["availabilityZones"] == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_existing_network_subnet_by_zone() -> None:
    settings = settings_of(raw("prod", network={"existing": EXISTING, "availabilityZones": ["us-east-1b"]}))
    seen: dict[str, str] = {}

    def program() -> None:
        network = PrivateNetwork("net", PrivateNetworkArgs(settings=settings.network, cluster_name=CLUSTER))
        network.private_subnet_id_by_az["us-east-1b"].apply(lambda s: seen.update(b=s))

    record(program, stack_outputs={"acme/network/prod": NETWORK_OUTPUTS})
    assert seen == {"b": "subnet-b"}


def test_existing_network_missing_output_names_stack_and_key() -> None:
    outputs = {k: v for k, v in NETWORK_OUTPUTS.items() if k != "availabilityZones"}
    with pytest.raises(
        ValueError,
        match=r"network stack 'acme/network/prod' has no output 'availabilityZones' \(vllm-serving:network.existing.availabilityZonesOutput\)",
    ):
        network_graph(network={"existing": EXISTING}, stack_outputs={"acme/network/prod": outputs})


def test_existing_network_without_the_zone_is_rejected() -> None:
    network = {"existing": EXISTING, "availabilityZones": ["us-east-1d"]}
    with pytest.raises(
        ValueError, match=r"network stack 'acme/network/prod' has no private subnet in us-east-1d"
    ):
        network_graph(network=network, stack_outputs={"acme/network/prod": NETWORK_OUTPUTS})


def test_zones_outside_the_provider_region_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"availabilityZones are in us-east-1 but aws:region is eu-west-1"):
        network_graph(config={"aws:region": "eu-west-1"})


def test_unsupported_flow_log_retention_is_rejected() -> None:
    network = {**raw("prod")["network"], "flowLogsRetentionDays": 45}
    with pytest.raises(
        ValueError, match=r"flowLogsRetentionDays: CloudWatch Logs cannot keep logs for 45 days"
    ):
        network_graph(network=network)


def test_same_settings_same_graph() -> None:
    first, second = network_graph(), network_graph()
    assert [r.to_dict() for r in first.resources] == [r.to_dict() for r in second.resources]
