"""VllmService graphs for the shipped stacks, asserted on recorded wire-form inputs.

prod: Llama-3.1-405B as one LeaderWorkerSet of 2 pods, each with 8 GPUs and 32 EFA devices
(leader included), Ray backend, TP 8 x PP 2; Qwen2.5-32B on the no-NVLink L40S pool as a
Deployment with PP 4 x TP 1. dev: a one-GPU Deployment over TCP. onprem: InfiniBand environment and
no EFA; forced across nodes with mp: rdma device, IPC_LOCK, mp launch script. Also: every object
is schema-valid (Kubernetes 1.33, LWS CRD), children have the component as parent and the explicit
provider, Services, PDB and NetworkPolicies are exact, an internal NLB only when asked, replicas
left to the autoscaler, and the graph is deterministic. Failure messages name the URN.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes
import pytest

from components.vllm_service import VllmService
from offline.recorder import record_program
from tests.components.workloads.workload_fixtures import (
    DEPLOYMENT_TYPE,
    LWS_TYPE,
    PDB_TYPE,
    POLICY_TYPE,
    PROVIDER_NAME,
    SERVICE_TYPE,
    component,
    env_of,
    flag_value,
    manifests,
    planned,
    record_service,
    schema_problems,
    service_args,
)

COMPONENT_TYPE = "vllm-serving:vllm_service:VllmService"
GROUP = {"app.kubernetes.io/name": "vllm", "vllm-serving/model": "llama-405b"}


def templates(lws: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    spec = lws["spec"]["leaderWorkerTemplate"]
    return spec["leaderTemplate"], spec["workerTemplate"]


def vllm_container(template: dict[str, Any]) -> dict[str, Any]:
    return template["spec"]["containers"][0]


@pytest.fixture
def prod_405b() -> Any:
    return record_service("prod", "llama-405b")


def test_405b_is_one_leaderworkerset_group_of_two_whole_nodes(prod_405b: Any) -> None:
    lws = component(prod_405b, LWS_TYPE)
    spec = lws.inputs["spec"]
    assert lws.inputs["apiVersion"] == "leaderworkerset.x-k8s.io/v1", lws.urn
    assert lws.inputs["metadata"]["name"] == "llama-405b-vllm", lws.urn
    assert spec["replicas"] == 1, lws.urn
    assert spec["startupPolicy"] == "LeaderCreated", lws.urn
    assert spec["rolloutStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
    }, lws.urn
    group = spec["leaderWorkerTemplate"]
    assert group["size"] == 2, lws.urn
    assert group["restartPolicy"] == "RecreateGroupOnPodRestart", lws.urn
    assert not prod_405b.by_type(DEPLOYMENT_TYPE)


def test_every_405b_pod_takes_8_gpus_32_efa_devices_and_huge_pages(prod_405b: Any) -> None:
    lws = component(prod_405b, LWS_TYPE)
    for template in templates(lws.inputs):
        container = vllm_container(template)
        role = template["metadata"]["labels"]["vllm-serving/role"]
        for kind in ("requests", "limits"):
            resources = container["resources"][kind]
            assert resources["nvidia.com/gpu"] == "8", f"{lws.urn} {role} {kind}"
            assert resources["vpc.amazonaws.com/efa"] == "32", f"{lws.urn} {role} {kind}"
            assert resources["hugepages-2Mi"] == "5120Mi", f"{lws.urn} {role} {kind}"
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}, lws.urn
        env = env_of(container)
        assert env["FI_PROVIDER"] == "efa" and env["FI_EFA_USE_DEVICE_RDMA"] == "1", f"{lws.urn} {role}"
        assert env["NCCL_SOCKET_IFNAME"] == "eth0", f"{lws.urn} {role}"
        assert env["VLLM_API_KEY"] == {"secretKeyRef": {"name": "vllm-api-key", "key": "api-key"}}, lws.urn
        assert template["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ] == [{"labelSelector": {"matchLabels": GROUP}, "topologyKey": "kubernetes.io/hostname"}], (
            f"{lws.urn} {role}"
        )
        assert template["spec"]["nodeSelector"] == {"vllm-serving/pool": "h100"}, lws.urn


def test_405b_leader_runs_ray_head_then_tp8_pp2_and_worker_joins(prod_405b: Any) -> None:
    lws = component(prod_405b, LWS_TYPE)
    leader, worker = (vllm_container(t) for t in templates(lws.inputs))
    assert leader["command"] == ["bash", "/opt/vllm-serving/ray-leader.sh"], lws.urn
    args = leader["args"]
    assert args[0] == "/models/llama-405b/be673f326cab4cd22ccfef76109faf68e41aa5f1", lws.urn
    assert flag_value(args, "--tensor-parallel-size") == "8", lws.urn
    assert flag_value(args, "--pipeline-parallel-size") == "2", lws.urn
    assert flag_value(args, "--distributed-executor-backend") == "ray", lws.urn
    assert flag_value(args, "--served-model-name") == "meta-llama/Llama-3.1-405B-Instruct", lws.urn
    assert flag_value(args, "--max-model-len") == "16384", lws.urn
    assert flag_value(args, "--port") == "8000" and flag_value(args, "--host") == "0.0.0.0", lws.urn
    assert "--api-key" not in args, lws.urn
    assert worker["command"] == ["bash", "/opt/vllm-serving/ray-worker.sh"], lws.urn
    assert worker["args"] == [], lws.urn
    assert env_of(leader)["RAY_JOIN_TIMEOUT_SECONDS"] == "600", lws.urn


def test_only_the_leader_serves_http_and_is_probed(prod_405b: Any) -> None:
    lws = component(prod_405b, LWS_TYPE)
    leader, worker = (vllm_container(t) for t in templates(lws.inputs))
    assert leader["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}], lws.urn
    # 759 s to read every replica's weights + 600 s multi-node init + 600 s Ray join = 1959 s
    assert leader["startupProbe"]["failureThreshold"] == 196, lws.urn
    assert leader["startupProbe"]["httpGet"] == {"path": "/health", "port": "http", "scheme": "HTTP"}, lws.urn
    assert {"ports", "startupProbe", "livenessProbe", "readinessProbe"}.isdisjoint(worker), lws.urn


def test_405b_service_selects_the_leaders_on_port_8000(prod_405b: Any) -> None:
    service = component(prod_405b, SERVICE_TYPE)
    assert service.inputs["metadata"]["name"] == "llama-405b-api", service.urn
    assert service.inputs["spec"] == {
        "type": "ClusterIP",
        "selector": {**GROUP, "vllm-serving/role": "leader"},
        "ports": [{"name": "http", "port": 8000, "targetPort": "http", "protocol": "TCP"}],
    }, service.urn


def test_405b_disruption_budget_covers_the_whole_group(prod_405b: Any) -> None:
    pdb = component(prod_405b, PDB_TYPE)
    assert pdb.inputs["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": GROUP},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }, pdb.urn


def test_405b_network_policies(prod_405b: Any) -> None:
    policies = {r.inputs["metadata"]["name"]: r for r in prod_405b.by_type(POLICY_TYPE)}
    assert sorted(policies) == ["llama-405b-allow-api", "llama-405b-allow-egress", "llama-405b-allow-group"]
    api = policies["llama-405b-allow-api"]
    assert api.inputs["spec"]["ingress"] == [
        {
            "from": [
                {
                    "namespaceSelector": {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/metadata.name",
                                "operator": "In",
                                "values": ["apps", "monitoring"],
                            }
                        ]
                    }
                }
            ],
            "ports": [{"protocol": "TCP", "port": 8000}],
        }
    ], api.urn
    group = policies["llama-405b-allow-group"]
    assert group.inputs["spec"]["ingress"] == [{"from": [{"podSelector": {"matchLabels": GROUP}}]}], group.urn
    assert group.inputs["spec"]["egress"] == [{"to": [{"podSelector": {"matchLabels": GROUP}}]}], group.urn
    egress = policies["llama-405b-allow-egress"]
    assert egress.inputs["spec"]["egress"][0]["ports"] == [
        {"protocol": "UDP", "port": 53},
        {"protocol": "TCP", "port": 53},
    ], egress.urn


def test_405b_children_have_the_component_as_parent_and_the_explicit_provider(prod_405b: Any) -> None:
    parent = component(prod_405b, COMPONENT_TYPE)
    provider = component(prod_405b, "pulumi:providers:kubernetes")
    children = prod_405b.children(parent)
    assert sorted(c.type.rsplit(":", 1)[1] for c in children) == [
        "ConfigMap",
        "LeaderWorkerSet",
        "NetworkPolicy",
        "NetworkPolicy",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Service",
    ]
    for child in children:
        assert child.provider_urn == provider.urn, child.urn
        assert child.inputs["metadata"]["namespace"] == "vllm", child.urn
        assert child.name.startswith("llama-405b-"), child.urn


def test_405b_outputs(prod_405b: Any) -> None:
    outputs = component(prod_405b, COMPONENT_TYPE).outputs
    assert outputs == {
        "serviceName": "llama-405b-api",
        "endpoint": "http://llama-405b-api.vllm.svc.cluster.local:8000/v1",
        "namespace": "vllm",
        "apiModelName": "meta-llama/Llama-3.1-405B-Instruct",
        "workloadKind": "LeaderWorkerSet",
        "workloadName": "llama-405b-vllm",
        "workloadApiVersion": "leaderworkerset.x-k8s.io/v1",
        "podLabels": {**GROUP, "vllm-serving/role": "leader"},
        "startupBudgetSeconds": 1959,
    }


def test_405b_objects_are_schema_valid(prod_405b: Any) -> None:
    assert schema_problems(prod_405b) == []


def test_405b_with_mp_backend_uses_the_mp_script_on_every_node() -> None:
    def mp(raw: dict[str, Any]) -> None:
        raw["models"][0]["distributedBackend"] = "mp"

    graph = record_service("prod", "llama-405b", mp)
    lws = component(graph, LWS_TYPE)
    leader, worker = (vllm_container(t) for t in templates(lws.inputs))
    for container in (leader, worker):
        assert container["command"] == ["bash", "/opt/vllm-serving/mp-node.sh"], lws.urn
        assert flag_value(container["args"], "--distributed-executor-backend") == "mp", lws.urn
        assert env_of(container)["MP_MASTER_PORT"] == "29501", lws.urn
        assert "RAY_PORT" not in env_of(container), lws.urn
    # no Ray join wait in the budget: 759 + 600 = 1359 s
    assert leader["startupProbe"]["failureThreshold"] == 136, lws.urn
    assert schema_problems(graph) == []


def test_qwen_on_the_no_nvlink_pool_is_a_pipeline_parallel_deployment() -> None:
    graph = record_service("prod", "qwen-32b")
    deployment = component(graph, DEPLOYMENT_TYPE)
    spec = deployment.inputs["spec"]
    container = vllm_container(spec["template"])
    assert container["command"] == ["vllm", "serve"], deployment.urn
    assert flag_value(container["args"], "--pipeline-parallel-size") == "4", deployment.urn
    assert flag_value(container["args"], "--tensor-parallel-size") == "1", deployment.urn
    assert "--distributed-executor-backend" not in container["args"], deployment.urn
    assert container["resources"]["limits"] == {"memory": "326Gi", "nvidia.com/gpu": "4"}, deployment.urn
    env = env_of(container)
    assert env["FI_EFA_USE_DEVICE_RDMA"] == "0" and env["NCCL_SHM_USE_CUDA_MEMCPY"] == "1", deployment.urn
    assert "IPC_LOCK" not in str(container["securityContext"]), deployment.urn
    assert not graph.by_type(LWS_TYPE)
    assert schema_problems(graph) == []


def test_dev_is_a_one_gpu_deployment_that_never_surges() -> None:
    graph = record_service("dev", "llama-8b")
    deployment = component(graph, DEPLOYMENT_TYPE)
    spec = deployment.inputs["spec"]
    assert spec["replicas"] == 1, deployment.urn
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    assert spec["selector"] == {
        "matchLabels": {"app.kubernetes.io/name": "vllm", "vllm-serving/model": "llama-8b"}
    }
    container = vllm_container(spec["template"])
    assert container["resources"] == {
        "requests": {"cpu": "3", "memory": "27Gi", "nvidia.com/gpu": "1"},
        "limits": {"memory": "27Gi", "nvidia.com/gpu": "1"},
    }, deployment.urn
    assert env_of(container)["NCCL_IB_DISABLE"] == "1", deployment.urn
    assert "FI_PROVIDER" not in env_of(container), deployment.urn
    assert spec["template"]["spec"]["volumes"][1]["emptyDir"] == {"medium": "Memory", "sizeLimit": "2Gi"}
    # 107 s cold start + 300 s single-node init
    assert container["startupProbe"]["failureThreshold"] == 41, deployment.urn
    assert spec["progressDeadlineSeconds"] == 900 + 2 * 408, deployment.urn
    assert deployment.custom_timeouts == {"create": "29m", "update": "29m"}, deployment.urn
    assert sorted(r.inputs["metadata"]["name"] for r in graph.by_type(POLICY_TYPE)) == [
        "llama-8b-allow-api",
        "llama-8b-allow-egress",
    ]
    assert schema_problems(graph) == []


def test_onprem_uses_infiniband_and_the_pools_node_selector_without_efa() -> None:
    graph = record_service("onprem", "llama-70b")
    deployment = component(graph, DEPLOYMENT_TYPE)
    pod = deployment.inputs["spec"]["template"]["spec"]
    container = vllm_container(deployment.inputs["spec"]["template"])
    env = env_of(container)
    assert env["NCCL_IB_HCA"] == "mlx5" and env["NCCL_DEBUG"] == "INFO", deployment.urn
    assert not any(name.startswith("FI_") for name in env), deployment.urn
    assert "vpc.amazonaws.com/efa" not in container["resources"]["limits"], deployment.urn
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, deployment.urn
    assert container["resources"]["requests"]["cpu"] == "64", deployment.urn
    api = next(r for r in graph.by_type(POLICY_TYPE) if r.name.endswith("allow-api"))
    values = api.inputs["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchExpressions"][0]["values"]
    assert values == ["apps", "monitoring", "research"], api.urn
    assert schema_problems(graph) == []


def test_onprem_across_nodes_with_mp_takes_the_rdma_device_and_ipc_lock() -> None:
    def two_nodes(raw: dict[str, Any]) -> None:
        raw["models"][0].update({"tensorParallelSize": 8, "pipelineParallelSize": 2})

    graph = record_service("onprem", "llama-70b", two_nodes)
    lws = component(graph, LWS_TYPE)
    assert lws.inputs["spec"]["leaderWorkerTemplate"]["size"] == 2, lws.urn
    for template in templates(lws.inputs):
        container = vllm_container(template)
        assert container["resources"]["limits"]["rdma/ib"] == "1", lws.urn
        assert container["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"], lws.urn
        assert container["command"] == ["bash", "/opt/vllm-serving/mp-node.sh"], lws.urn
        assert env_of(container)["NCCL_IB_HCA"] == "mlx5", lws.urn
    assert schema_problems(graph) == []


def test_internal_load_balancer_is_internal_nlb_with_ip_targets() -> None:
    def with_lb(raw: dict[str, Any]) -> None:
        raw.setdefault("serving", {})["internalLoadBalancer"] = True

    graph = record_service("dev", "llama-8b", with_lb, load_balancer_source_cidrs=["10.40.0.0/16"])
    nlb = next(s for s in graph.by_type(SERVICE_TYPE) if s.inputs["spec"]["type"] == "LoadBalancer")
    annotations = nlb.inputs["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal", nlb.urn
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-type"] == "external", nlb.urn
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-nlb-target-type"] == "ip", nlb.urn
    assert nlb.inputs["metadata"]["name"] == "llama-8b-nlb", nlb.urn
    assert nlb.inputs["spec"]["loadBalancerSourceRanges"] == ["10.40.0.0/16"], "NLB security group: VPC only"
    api = next(r for r in graph.by_type(POLICY_TYPE) if r.name.endswith("allow-api"))
    assert {"ipBlock": {"cidr": "10.40.0.0/16"}} in api.inputs["spec"]["ingress"][0]["from"], api.urn
    assert schema_problems(graph) == []


def test_no_load_balancer_unless_asked() -> None:
    graph = record_service("dev", "llama-8b")
    assert [s.inputs["spec"]["type"] for s in graph.by_type(SERVICE_TYPE)] == ["ClusterIP"]


def test_internal_load_balancer_without_source_cidrs_is_refused() -> None:
    def with_lb(raw: dict[str, Any]) -> None:
        raw.setdefault("serving", {})["internalLoadBalancer"] = True

    with pytest.raises(ValueError, match="internalLoadBalancer needs load_balancer_source_cidrs"):
        record_service("dev", "llama-8b", with_lb)


def test_autoscaled_workload_leaves_replicas_to_the_autoscaler() -> None:
    graph = record_service("prod", "llama-405b", autoscaled=True)
    lws = component(graph, LWS_TYPE)
    assert lws.ignore_changes == ["spec.replicas"], lws.urn
    fixed = component(record_service("dev", "llama-8b"), DEPLOYMENT_TYPE)
    assert fixed.ignore_changes == [], fixed.urn


def test_image_digest_pins_the_image_of_every_container() -> None:
    digest = "sha256:" + "a" * 64

    def pinned(raw: dict[str, Any]) -> None:
        raw.setdefault("serving", {})["imageDigest"] = digest

    graph = record_service("dev", "llama-8b", pinned)
    pod = component(graph, DEPLOYMENT_TYPE).inputs["spec"]["template"]["spec"]
    images = {c["image"] for c in pod["containers"] + pod["initContainers"]}
    assert images == {f"vllm/vllm-openai:v0.19.0@{digest}"}


def test_same_inputs_give_the_same_graph() -> None:
    first, second = record_service("prod", "llama-405b"), record_service("prod", "llama-405b")
    assert [r.to_dict() for r in first.resources] == [r.to_dict() for r in second.resources]
    assert list(manifests(first)) == list(manifests(second))


def _with_deferred_cidrs(cidrs: list[str]) -> Any:
    """dev with an internal NLB, the VPC's CIDR blocks known only at deploy time (an adopted VPC)."""

    def with_lb(raw: dict[str, Any]) -> None:
        raw.setdefault("serving", {})["internalLoadBalancer"] = True

    settings, plan = planned("dev", with_lb)

    def program() -> None:
        provider = kubernetes.Provider(PROVIDER_NAME, kubeconfig="{}")
        blocks = pulumi.Output.from_input(cidrs)
        args = service_args(
            settings,
            plan,
            "llama-8b",
            provider,
            load_balancer_source_cidrs=blocks,
            model_store_egress_cidrs=blocks,
        )
        VllmService("llama-8b", args)

    return record_program(program, stack="dev")


def test_every_cidr_block_of_an_adopted_vpc_is_admitted() -> None:
    graph = _with_deferred_cidrs(["10.50.0.0/16", "100.64.0.0/16"])
    blocks = [{"ipBlock": {"cidr": "10.50.0.0/16"}}, {"ipBlock": {"cidr": "100.64.0.0/16"}}]
    nlb = next(s for s in graph.by_type(SERVICE_TYPE) if s.inputs["spec"]["type"] == "LoadBalancer")
    assert nlb.inputs["spec"]["loadBalancerSourceRanges"] == ["10.50.0.0/16", "100.64.0.0/16"]
    api = next(r for r in graph.by_type(POLICY_TYPE) if r.name.endswith("allow-api"))
    assert api.inputs["spec"]["ingress"][0]["from"][-2:] == blocks
    egress = next(r for r in graph.by_type(POLICY_TYPE) if r.name.endswith("allow-egress"))
    assert egress.inputs["spec"]["egress"][1]["to"] == blocks
    assert schema_problems(graph) == []


def test_an_empty_cidr_list_fails_instead_of_admitting_everything() -> None:
    with pytest.raises(ValueError, match="no CIDR to admit"):
        _with_deferred_cidrs([])
