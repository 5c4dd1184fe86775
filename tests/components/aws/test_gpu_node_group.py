"""GpuNodeGroup graphs (components/gpu_node_group.py), from the prod stack file + plan_stack and from
hand-built args: the launch template's EFA interfaces (32 on p5, 4 on p4d, 1 on g6e.12xlarge, none
on a non-EFA type) with every security group on each interface and none at the top level; the
cluster placement group; one subnet per EFA pool; the NVIDIA AMI, labels, taint and autoscaler
tags; ignore_changes on the desired size; huge pages in the user data; capacity blocks, spot and
reservations; a least-privilege node role; and the errors for bad pools."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from offline.recorder import Graph
from tests.components.aws.support import (
    ATTACHMENT,
    GOLDEN,
    LAUNCH_TEMPLATE,
    NODE_GROUP,
    PLACEMENT_GROUP,
    ROLE,
    depends_on,
    expect,
    expect_equal,
    plan_of,
    raw,
    record,
    settings_of,
    user_data_of,
)

CLUSTER = "vllm-serving-prod"
SUBNETS = {"us-east-1a": "subnet-a", "us-east-1b": "subnet-b", "us-east-1c": "subnet-c"}
SECURITY_GROUPS = ["sg-eks-cluster", "sg-node"]
CA = "k8s.io/cluster-autoscaler"


def pool_args(pool: Any, plan: Any, **changes: Any) -> GpuNodeGroupArgs:
    from capacity import get_instance_type

    return GpuNodeGroupArgs(
        pool=pool,
        plan=plan,
        instance=get_instance_type(pool.instance_type),
        cluster_name=CLUSTER,
        kubernetes_version="1.33",
        cluster_security_group_id="sg-eks-cluster",
        node_security_group_id="sg-node",
        efa_security_group_id="sg-efa",
        private_subnet_id_by_az=SUBNETS,
        **changes,
    )


def hand_built(
    name: str, instance_type: str, interconnect: str, *, az: str | None = "us-east-1a", **pool: Any
):
    """A pool's settings and plan without a model behind them."""
    from planning import PoolPlan
    from settings import GpuPoolSettings

    settings = GpuPoolSettings(
        name=name, instance_type=instance_type, availability_zone=az, interconnect=interconnect, **pool
    )
    plan = PoolPlan(name, 8, "A100", instance_type, interconnect, 0, 2, None)
    return settings, plan


def graph_of(*args: GpuNodeGroupArgs) -> Graph:
    """A fresh graph with one GpuNodeGroup per args (named after its pool)."""

    def program() -> None:
        for each in args:
            GpuNodeGroup(each.pool.name, each)

    return record(program)


@functools.cache
def prod() -> Graph:
    """Both prod pools from Pulumi.prod.yaml and their plan; recorded once, shared read-only."""
    settings = settings_of(raw("prod"))
    plan = plan_of(settings)
    return graph_of(*(pool_args(pool, plan.pool(pool.name)) for pool in settings.gpu_pools))


def template(graph: Graph, pool: str):
    return graph.one(LAUNCH_TEMPLATE, f"{pool}-launch-template")


def node_group(graph: Graph, pool: str):
    return graph.one(NODE_GROUP, f"{pool}-node-group")


def test_p5_launch_template_has_32_efa_interfaces() -> None:
    lt = template(prod(), "h100")
    interfaces = lt.inputs["networkInterfaces"]
    expected = [
        {
            "networkCardIndex": card,
            "deviceIndex": 0 if card == 0 else 1,
            "interfaceType": "efa" if card == 0 else "efa-only",
            "securityGroups": [*SECURITY_GROUPS, "sg-efa"],
            "associatePublicIpAddress": "false",
            "deleteOnTermination": "true",
        }
        for card in range(32)
    ]
    expect_equal(lt, interfaces, expected, "networkInterfaces")
    expect(lt, "vpcSecurityGroupIds" not in lt.inputs, "no top-level security groups with interfaces")
    expect(lt, all("subnetId" not in i for i in interfaces), "EKS sets subnets, never the template")
    expect_equal(lt, lt.inputs["instanceType"], "p5.48xlarge", "instance type")


def test_g6e_12xlarge_efa_pool_has_one_interface() -> None:
    lt = template(prod(), "l40s")
    expect_equal(
        lt,
        [
            (i["networkCardIndex"], i["deviceIndex"], i["interfaceType"])
            for i in lt.inputs["networkInterfaces"]
        ],
        [(0, 0, "efa")],
        "networkInterfaces",
    )


def test_efa_pools_get_a_cluster_placement_group() -> None:
    graph = prod()
    for pool in ("h100", "l40s"):
        group = graph.one(PLACEMENT_GROUP, f"{pool}-placement")
        expect_equal(group, group.inputs["strategy"], "cluster", "placement strategy")
        lt = template(graph, pool)
        expect_equal(lt, depends_on(graph, lt, "placement"), [group], "launch template placement")


def test_efa_pools_use_exactly_one_subnet() -> None:
    graph = prod()
    for pool in ("h100", "l40s"):
        group = node_group(graph, pool)
        expect_equal(group, group.inputs["subnetIds"], ["subnet-a"], "one subnet in the pool's zone")


def test_p5_node_group_scheduling_and_scaling() -> None:
    group = node_group(prod(), "h100")
    inputs = group.inputs
    expect_equal(group, inputs["amiType"], "AL2023_x86_64_NVIDIA", "AMI type")
    expect_equal(group, inputs["capacityType"], "ON_DEMAND", "capacity type")
    expect_equal(group, inputs["labels"]["vllm-serving/pool"], "h100", "pool label")
    expect_equal(group, inputs["labels"]["vllm-serving/gpu-model"], "H100", "GPU model label")
    expect_equal(
        group,
        inputs["taints"],
        [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}],
        "taint",
    )
    expect_equal(group, inputs["scalingConfig"], {"minSize": 2, "desiredSize": 2, "maxSize": 4}, "scaling")
    expect_equal(group, inputs["updateConfig"], {"maxUnavailable": 1}, "update config")
    expect_equal(
        group, group.ignore_changes, ["scalingConfig.desiredSize"], "the autoscaler owns the desired size"
    )
    expect_equal(group, inputs["nodeGroupNamePrefix"], "h100-", "name prefix")
    lt = template(prod(), "h100")
    expect_equal(group, inputs["launchTemplate"]["id"], lt.id, "launch template")
    expect_equal(
        group, inputs["launchTemplate"]["version"], str(lt.outputs.get("latestVersion")), "template version"
    )


def test_autoscaler_tags_allow_scale_from_zero() -> None:
    group = node_group(prod(), "h100")
    tags = group.inputs["tags"]
    expected = {
        f"{CA}/enabled": "true",
        f"{CA}/{CLUSTER}": "owned",
        f"{CA}/node-template/label/vllm-serving/pool": "h100",
        f"{CA}/node-template/taint/nvidia.com/gpu": "true:NoSchedule",
        f"{CA}/node-template/resources/vpc.amazonaws.com/efa": "32",
        f"{CA}/node-template/resources/nvidia.com/gpu": "8",
        f"{CA}/node-template/resources/hugepages-2Mi": "10256Mi",
    }
    for key, value in expected.items():
        expect_equal(group, tags.get(key), value, f"tag {key}")


def test_efa_user_data_reserves_huge_pages() -> None:
    lt = template(prod(), "h100")
    expect_equal(lt, user_data_of(lt), (GOLDEN / "user_data_efa.txt").read_text(), "user data")


def test_launch_template_node_defaults() -> None:
    lt = template(prod(), "h100")
    expect_equal(
        lt,
        lt.inputs["metadataOptions"],
        {
            "httpEndpoint": "enabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 2,
            "instanceMetadataTags": "disabled",
        },
        "metadata options",
    )
    ebs = lt.inputs["blockDeviceMappings"][0]["ebs"]
    expect_equal(
        lt, (ebs["volumeSize"], ebs["volumeType"], ebs["encrypted"]), (1024, "gp3", "true"), "root volume"
    )


def test_node_role_is_least_privilege() -> None:
    graph = prod()
    role = graph.one(ROLE, "h100-node-role")
    expect(role, "ec2.amazonaws.com" in role.inputs["assumeRolePolicy"], "EC2 trust")
    policies = sorted(
        a.inputs["policyArn"] for a in graph.by_type(ATTACHMENT) if depends_on(graph, a, "role") == [role]
    )
    assert policies == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    ]
    group = node_group(graph, "h100")
    expect_equal(group, depends_on(graph, group, "nodeRoleArn"), [role], "node role")


def test_component_outputs() -> None:
    graph = prod()
    outputs = graph.one("vllm-serving:gpu_node_group:GpuNodeGroup", "h100").outputs
    assert outputs["efaInterfaceCount"] == 32
    assert outputs["placementGroupName"] == "h100-placement"
    assert outputs["availabilityZones"] == ["us-east-1a"]
    assert outputs["launchTemplateId"] == template(graph, "h100").id


def test_p4d_hand_built_has_four_interfaces() -> None:
    pool, plan = hand_built("a100", "p4d.24xlarge", "efa")
    graph = graph_of(pool_args(pool, plan))
    interfaces = template(graph, "a100").inputs["networkInterfaces"]
    assert [(i["networkCardIndex"], i["deviceIndex"], i["interfaceType"]) for i in interfaces] == [
        (0, 0, "efa"),
        (1, 1, "efa-only"),
        (2, 1, "efa-only"),
        (3, 1, "efa-only"),
    ]


def test_tcp_pool_has_no_efa_anything() -> None:
    pool, plan = hand_built("l40s", "g6e.xlarge", "tcp", az=None)
    graph = graph_of(pool_args(pool, plan))
    lt, group = template(graph, "l40s"), node_group(graph, "l40s")
    expect(lt, "networkInterfaces" not in lt.inputs, "no EFA interfaces")
    expect_equal(lt, lt.inputs["vpcSecurityGroupIds"], SECURITY_GROUPS, "cluster + node groups, never EFA")
    expect(lt, "placement" not in lt.inputs, "no placement group")
    assert graph.by_type(PLACEMENT_GROUP) == []
    expect_equal(
        group, group.inputs["subnetIds"], ["subnet-a", "subnet-b", "subnet-c"], "all private subnets"
    )
    expect(group, "vpc.amazonaws.com/efa.present" not in group.inputs["labels"], "no EFA label")
    expect(
        group, f"{CA}/node-template/resources/vpc.amazonaws.com/efa" not in group.inputs["tags"], "no EFA tag"
    )
    expect_equal(
        lt, user_data_of(lt), (GOLDEN / "user_data_tcp.txt").read_text(), "user data without huge pages"
    )
    outputs = graph.one("vllm-serving:gpu_node_group:GpuNodeGroup").outputs
    assert outputs["efaInterfaceCount"] == 0 and outputs.get("placementGroupName") is None


def test_capacity_block_pool() -> None:
    pool, plan = hand_built(
        "b200",
        "p6-b200.48xlarge",
        "efa",
        capacity_type="capacity-block",
        capacity_reservation_id="cr-0123456789abcdef0",
    )
    graph = graph_of(pool_args(pool, plan))
    lt, group = template(graph, "b200"), node_group(graph, "b200")
    expect_equal(group, group.inputs["capacityType"], "CAPACITY_BLOCK", "capacity type")
    expect_equal(lt, lt.inputs["instanceMarketOptions"], {"marketType": "capacity-block"}, "market type")
    expect_equal(
        lt,
        lt.inputs["capacityReservationSpecification"],
        {"capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}},
        "reservation",
    )
    expect_equal(
        lt, lt.inputs["instanceType"], "p6-b200.48xlarge", "capacity blocks need the type in the template"
    )
    expect(lt, "placement" not in lt.inputs, "the reservation fixes placement; no placement group on top")
    expect_equal(lt, len(lt.inputs["networkInterfaces"]), 8, "EFA interfaces")


def test_spot_pool_and_cni_policy_when_asked() -> None:
    pool, plan = hand_built("spot", "g6e.12xlarge", "efa", capacity_type="spot")
    graph = graph_of(pool_args(pool, plan, attach_cni_policy=True))
    expect_equal(
        node_group(graph, "spot"), node_group(graph, "spot").inputs["capacityType"], "SPOT", "capacity type"
    )
    policies = sorted(a.inputs["policyArn"].rsplit("/", 1)[-1] for a in graph.by_type(ATTACHMENT))
    assert policies == [
        "AmazonEC2ContainerRegistryPullOnly",
        "AmazonEKSWorkerNodePolicy",
        "AmazonEKS_CNI_Policy",
    ]


def test_same_inputs_same_graph() -> None:
    pool, plan = hand_built("a100", "p4d.24xlarge", "efa")
    first, second = graph_of(pool_args(pool, plan)), graph_of(pool_args(pool, plan))
    assert [r.to_dict() for r in first.resources] == [r.to_dict() for r in second.resources]


@pytest.mark.parametrize(
    ("name", "instance_type", "interconnect", "az", "extra", "message"),
    [
        ("bad", "g6e.xlarge", "efa", "us-east-1a", {}, r"g6e\.xlarge has no EFA"),
        (
            "bad",
            "p5.48xlarge",
            "efa",
            None,
            {},
            r"EFA pool 'bad' would span us-east-1a, us-east-1b, us-east-1c",
        ),
        ("bad", "p5.48xlarge", "efa", "us-west-2a", {}, r"asks for availability zone us-west-2a"),
        (
            "bad",
            "p5.48xlarge",
            "infiniband",
            "us-east-1a",
            {"rdma_resource": "rdma/ib"},
            r"infiniband is for existing clusters",
        ),
        (
            "bad",
            "g6e.xlarge",
            "tcp",
            None,
            {"capacity_reservation_id": "cr-0123456789abcdef0"},
            r"capacity reservation cr-0123456789abcdef0 lives in one availability zone",
        ),
        (
            "bad",
            "p5.48xlarge",
            "efa",
            "us-east-1a",
            {"capacity_type": "spot", "capacity_reservation_id": "cr-0123456789abcdef0"},
            r"cannot be combined with capacityType spot",
        ),
    ],
)
def test_bad_pools_are_rejected(name, instance_type, interconnect, az, extra, message) -> None:
    pool, plan = hand_built(name, instance_type, interconnect, az=az, **extra)
    with pytest.raises(ValueError, match=message):
        graph_of(pool_args(pool, plan))


def test_mismatched_plan_or_bounds_are_rejected() -> None:
    from dataclasses import replace

    pool, plan = hand_built("a100", "p4d.24xlarge", "efa")
    with pytest.raises(ValueError, match=r"pool 'a100' was given the plan of pool 'other'"):
        graph_of(pool_args(pool, replace(plan, name="other")))
    with pytest.raises(ValueError, match=r"node bounds min 3 / max 2 are invalid"):
        graph_of(pool_args(pool, replace(plan, min_nodes=3)))
    with pytest.raises(
        ValueError,
        match=r"instance facts are for p4d\.24xlarge, the pool asks for p4d\.24xlarge and the plan for p5\.48xlarge",
    ):
        graph_of(pool_args(pool, replace(plan, instance_type="p5.48xlarge")))
