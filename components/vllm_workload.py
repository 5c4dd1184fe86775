"""Every decision behind one VllmService, as plain data: no resources are created here.

Owns, for one planned model: validation of the inputs (with messages naming what to change),
the workload kind (a Deployment when a replica fits one node, a LeaderWorkerSet when it spans
nodes), the launch command per pod role and backend, environment, resources, start-up budget,
the pod templates, the workload/Service/PodDisruptionBudget/NetworkPolicy specs, and the labels
consumers select on. `components.vllm_service.VllmService` turns the result into resources.

Rollouts never need more GPUs than the pool has: maxSurge 0 and maxUnavailable 1 for both kinds
(one replica is replaced at a time; with one replica this is a stop-then-start, like Recreate,
but it stays correct at any replica count, e.g. when an autoscaler changes it).

Placement of a multi-node group: every pod takes all GPUs (and EFA devices) of its node, and a
required pod anti-affinity on `kubernetes.io/hostname` keeps two pods of the model off one node.
The LWS annotation `leaderworkerset.sigs.k8s.io/exclusive-topology` is deliberately not used with
`kubernetes.io/hostname`: it co-locates a whole group in ONE topology domain (pod affinity to the
group key, lws pkg/webhooks), which for 2 x 8-GPU pods can never schedule. Keeping a group inside
one placement group is the pool's job (one AZ, one cluster placement group per EFA node group).
Worker pods of a group run no HTTP server and get no probes: their main process is the Ray worker
or the headless vLLM node, so its exit restarts the container and LWS recreates the group.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from components import launch_scripts, network_policies, pod_spec, probes
from components.interconnect_env import fabric_devices, interconnect_env
from components.vllm_args import API_PORT, API_PORT_NAME, Backend, vllm_serve_args
from components.vllm_names import VllmNames, vllm_names

if TYPE_CHECKING:
    from components.vllm_service import VllmServiceArgs

WorkloadKind = Literal["Deployment", "LeaderWorkerSet"]
DEPLOYMENT_API_VERSION = "apps/v1"
LWS_API_VERSION = "leaderworkerset.x-k8s.io/v1"
RAY_PORT = 6379
MP_MASTER_PORT = 29501
DATA_PARALLEL_RPC_PORT = 29550
NODE_AND_IMAGE_SECONDS = 900
"""Worst case before a pod's init container runs: a GPU node from the autoscaler (a few
minutes) and the first pull of a 10-20 GB vLLM image (4-8 minutes, AWS DLC/SOCI measurements)."""
REVISION_HISTORY = 3
LB_ANNOTATIONS = {
    "service.beta.kubernetes.io/aws-load-balancer-type": "external",
    "service.beta.kubernetes.io/aws-load-balancer-scheme": "internal",
    "service.beta.kubernetes.io/aws-load-balancer-nlb-target-type": "ip",
    "service.beta.kubernetes.io/aws-load-balancer-healthcheck-protocol": "http",
    "service.beta.kubernetes.io/aws-load-balancer-healthcheck-path": probes.HEALTH_PATH,
    "service.beta.kubernetes.io/aws-load-balancer-healthcheck-port": "traffic-port",
}
"""An internal NLB through the AWS Load Balancer Controller, pod IPs as targets, health-checked
on /health; `internal` keeps it out of the internet (policy k8s-service-internal)."""


@dataclass(frozen=True)
class WorkloadPlan:
    """What a VllmService creates, decided."""

    names: VllmNames
    kind: WorkloadKind
    api_version: str
    spec: dict[str, Any]
    """Deployment or LeaderWorkerSet spec."""
    api_service_spec: dict[str, Any]
    load_balancer_spec: dict[str, Any] | None
    disruption_budget_spec: dict[str, Any]
    network_policies: dict[str, tuple[str, dict[str, Any]]]
    """Role (child-name suffix) -> (NetworkPolicy name, spec)."""
    scripts: dict[str, str]
    serving_labels: dict[str, str]
    group_labels: dict[str, str]
    api_model_name: str
    startup_budget_seconds: int
    rollout_deadline_seconds: int


def validate(args: VllmServiceArgs) -> None:
    """Raise ValueError naming the input to change when the args cannot make a working service."""
    served = args.model
    plan = served.plan
    problems: list[str] = []
    node_gpus = args.instance.gpu_count if args.instance is not None else served.pool.gpus_per_node
    if node_gpus is None:
        problems.append(f"pool {served.pool.name}: gpusPerNode is unknown and no instance type was given")
    elif plan.nodes_per_replica > 1 and plan.gpus_per_node_used != node_gpus:
        problems.append(
            f"model {served.settings.name}: a multi-node replica must take whole nodes "
            f"({plan.gpus_per_node_used} of {node_gpus} GPUs per node planned)"
        )
    # An output list is checked when it resolves (network_policies refuses an empty one).
    cidrs = args.load_balancer_source_cidrs
    if args.serving.internal_load_balancer and not network_policies.deferred(cidrs) and not cidrs:
        problems.append(
            "serving.internalLoadBalancer needs load_balancer_source_cidrs (the VPC CIDR its load balancer "
            "sends from), or the default-deny NetworkPolicy drops its traffic"
        )
    if args.interconnect == "efa" and args.instance is None:
        problems.append(f"pool {served.pool.name}: interconnect efa needs the instance type's facts")
    if plan.data_parallel_size > 1 and plan.nodes_per_replica > 1:
        ranks = plan.gpus_per_node_used // (plan.tensor_parallel_size * plan.pipeline_parallel_size)
        if ranks * plan.nodes_per_replica != plan.data_parallel_size:
            problems.append(
                f"model {served.settings.name}: data parallel size {plan.data_parallel_size} does not split "
                f"evenly over {plan.nodes_per_replica} nodes"
            )
    if problems:
        raise ValueError("; ".join(problems))


def _node_shape(args: VllmServiceArgs) -> pod_spec.NodeShape:
    if args.instance is not None:
        return pod_spec.NodeShape(args.instance.gpu_count, args.instance.vcpus, args.instance.memory_gib)
    gpus = args.model.pool.gpus_per_node
    if gpus is None:
        raise ValueError(
            f"pool {args.model.pool.name}: gpusPerNode is unknown and no instance type was given"
        )
    return pod_spec.NodeShape(gpus)


def image_reference(image: str, digest: str | None) -> str:
    """`repo:tag`, or `repo:tag@sha256:...` when a digest pins it further."""
    return f"{image}@{digest}" if digest else image


def _launch_env(args: VllmServiceArgs, backend: Backend | None) -> list[dict[str, str]]:
    plan = args.model.plan
    env: dict[str, str] = {}
    if backend == "ray":
        env = {
            "RAY_JOIN_TIMEOUT_SECONDS": str(args.serving.ray_join_timeout_seconds),
            "RAY_OBJECT_STORE_BYTES": str(pod_spec.RAY_OBJECT_STORE_GIB * 2**30),
            "RAY_PORT": str(RAY_PORT),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
    elif backend == "mp":
        env = {"MP_MASTER_PORT": str(MP_MASTER_PORT)}
        if plan.data_parallel_size > 1:
            env["DATA_PARALLEL_SIZE_LOCAL"] = str(plan.data_parallel_size // plan.nodes_per_replica)
            env["DATA_PARALLEL_RPC_PORT"] = str(DATA_PARALLEL_RPC_PORT)
    if backend is not None and args.interconnect == "efa":
        env["EFA_CHECK"] = args.serving.efa_check
    return [{"name": name, "value": env[name]} for name in sorted(env)]


def plan_workload(args: VllmServiceArgs) -> WorkloadPlan:
    """Decide everything one VllmService creates (validates first)."""
    validate(args)
    served, serving = args.model, args.serving
    plan, name = served.plan, served.settings.name
    names = vllm_names(name)
    multi_node = plan.nodes_per_replica > 1
    backend: Backend | None = served.settings.distributed_backend if multi_node else None
    budget = probes.startup_budget_seconds(
        cold_start_seconds=args.cold_start_seconds,
        multi_node=multi_node,
        ray_join_seconds=serving.ray_join_timeout_seconds if backend == "ray" else 0,
    )
    fabric = fabric_devices(
        args.interconnect,
        multi_node=multi_node,
        efa_interfaces=args.instance.max_efa_interfaces if args.instance else 0,
        rdma_resource=served.pool.rdma_resource,
    )
    resources = pod_spec.size_resources(
        gpus=plan.gpus_per_node_used,
        node=_node_shape(args),
        shm_gib=pod_spec.shm_size_gib(plan.gpus_per_node_used, ray=backend == "ray"),
        fabric=fabric,
    )
    env = interconnect_env(
        args.interconnect,
        instance_type=args.instance.name if args.instance else None,
        ib_hca=served.pool.ib_hca,
        nccl_debug=serving.nccl_debug,
    ) + _launch_env(args, backend)
    argv = vllm_serve_args(served.settings, plan, model_path=args.model_path, backend=backend)

    def template(role: launch_scripts.Role) -> dict[str, Any]:
        if backend is None:
            command, role_args = ["vllm", "serve"], argv
        else:
            script = launch_scripts.group_script(backend, role)
            command = launch_scripts.script_command(script)
            role_args = [] if script == launch_scripts.RAY_WORKER else argv
        return pod_spec.pod_template(
            pod_spec.PodInputs(
                model_name=name,
                role=role,
                serves_api=role == "leader",
                image=image_reference(serving.image, serving.image_digest),
                command=command,
                args=role_args,
                resources=resources,
                env=env,
                api_key_secret_name=args.api_key_secret_name,
                api_key_secret_key=args.api_key_secret_key,
                model_claim_name=args.model_claim_name,
                model_mount_path=args.model_mount_path,
                model_path=args.model_path,
                ready_marker=args.ready_marker,
                startup_budget_seconds=budget,
                termination_grace_seconds=serving.termination_grace_seconds,
                placement=pod_spec.node_placement(
                    platform=args.platform,
                    pool_name=served.pool.name,
                    pool_node_selector=served.pool.node_selector,
                ),
                scripts_config_map=names.scripts,
                scripts_hash=launch_scripts.scripts_hash(),
                spread_one_per_node=multi_node,
            )
        )

    group = pod_spec.group_selector(name)
    serving_labels = pod_spec.serving_selector(name)
    rollout_deadline = NODE_AND_IMAGE_SECONDS + 2 * budget  # init wait + start-up, each bounded by the budget
    if multi_node:
        kind: WorkloadKind = "LeaderWorkerSet"
        api_version = LWS_API_VERSION
        spec: dict[str, Any] = {
            "replicas": served.min_replicas,
            "startupPolicy": "LeaderCreated",
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 0},
            },
            "networkConfig": {"subdomainPolicy": "Shared"},
            "leaderWorkerTemplate": {
                "size": plan.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": template("leader"),
                "workerTemplate": template("worker"),
            },
        }
    else:
        kind = "Deployment"
        api_version = DEPLOYMENT_API_VERSION
        spec = {
            "replicas": served.min_replicas,
            "revisionHistoryLimit": REVISION_HISTORY,
            "progressDeadlineSeconds": rollout_deadline,
            "selector": {"matchLabels": group},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": template("leader"),
        }
    ports = [{"name": API_PORT_NAME, "port": API_PORT, "targetPort": API_PORT_NAME, "protocol": "TCP"}]
    policies = {
        "allow-api": network_policies.api_ingress(
            serving_labels,
            client_namespaces=serving.client_namespaces,
            monitoring_namespace=args.monitoring_namespace,
            load_balancer_cidrs=args.load_balancer_source_cidrs if serving.internal_load_balancer else (),
        ),
        "allow-egress": network_policies.egress(
            group, model_store_kind=args.model_store_kind, model_store_cidrs=args.model_store_egress_cidrs
        ),
    }
    if multi_node:
        policies["allow-group"] = network_policies.group_traffic(group)
    physical = {
        "allow-api": names.api_policy,
        "allow-egress": names.egress_policy,
        "allow-group": names.group_policy,
    }
    return WorkloadPlan(
        names=names,
        kind=kind,
        api_version=api_version,
        spec=spec,
        api_service_spec={"type": "ClusterIP", "selector": serving_labels, "ports": ports},
        load_balancer_spec=(
            {
                "type": "LoadBalancer",
                "selector": serving_labels,
                "ports": ports,
                # The NLB's own security group admits only these (the VPC), not 0.0.0.0/0.
                "loadBalancerSourceRanges": (
                    lb_cidrs
                    if network_policies.deferred(lb_cidrs := args.load_balancer_source_cidrs)
                    else list(lb_cidrs)
                ),
            }
            if serving.internal_load_balancer
            else None
        ),
        # One pod (and so one group) at a time, leaders and workers alike: evicting any pod of an
        # LWS group recreates the whole group. Unhealthy pods may always be evicted so a broken
        # replica never blocks a node drain.
        disruption_budget_spec={
            "maxUnavailable": 1,
            "selector": {"matchLabels": group},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
        network_policies={role: (physical[role], spec) for role, spec in sorted(policies.items())},
        scripts=launch_scripts.config_map_data(),
        serving_labels=serving_labels,
        group_labels=group,
        api_model_name=served.settings.api_model_name,
        startup_budget_seconds=budget,
        rollout_deadline_seconds=rollout_deadline,
    )


def timeout_minutes(seconds: int) -> str:
    """Pulumi custom timeout string, rounded up to whole minutes."""
    return f"{math.ceil(seconds / 60)}m"
