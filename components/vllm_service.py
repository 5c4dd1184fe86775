"""VllmService: one served model in the cluster.

Builds, in the serving namespace, through the explicit Kubernetes provider:
- a ConfigMap with the launch scripts (components/scripts/), mounted read-only into the pods;
- the workload: a `Deployment` when a replica fits one node, a `LeaderWorkerSet`
  (leaderworkerset.x-k8s.io/v1) when it spans nodes (leader = Ray head or mp rank 0);
- a ClusterIP Service on port 8000 (`http`) to the serving pods, and an internal NLB Service
  only when serving.internalLoadBalancer is set (never internet-facing);
- a PodDisruptionBudget (one pod, so one group, at a time);
- NetworkPolicies allowing the API from client and monitoring namespaces, intra-group traffic of
  multi-node groups, and DNS / model-store egress (the namespace's default deny comes from
  ClusterAddons).
Every decision is made in `components.vllm_workload`; this module only creates resources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_kubernetes as kubernetes

from capacity import InstanceType
from components.interconnect_env import Interconnect
from components.model_paths import DEFAULT_MOUNT_PATH, READY_MARKER
from components.network_policies import Cidrs, ModelStoreKind
from components.vllm_args import API_PORT
from components.vllm_workload import LB_ANNOTATIONS, WorkloadKind, plan_workload, timeout_minutes
from planning import ServedModel
from settings import ServingSettings

REPLICAS_FIELD = "spec.replicas"


@dataclass(frozen=True)
class VllmServiceArgs:
    """Inputs of one VllmService."""

    model: ServedModel
    """The planned model (settings, pool, parallel plan, min/max replicas); `planning.plan_stack`."""
    serving: ServingSettings
    """Image (+ digest), client namespaces, internal load balancer, NCCL debug, Ray join timeout,
    termination grace: shared by every model."""
    platform: Literal["eks", "existing"]
    """eks: pods select `vllm-serving/pool: <pool>`; existing: the pool's nodeSelector."""
    namespace: pulumi.Input[str]
    """Serving namespace (ClusterAddons.serving_namespace)."""
    provider: kubernetes.Provider
    """Every object goes through this provider, never the ambient kubeconfig."""
    api_key_secret_name: pulumi.Input[str]
    """Secret holding the API key (ApiKey.secret_name); exposed to vLLM as VLLM_API_KEY."""
    model_claim_name: pulumi.Input[str]
    """ReadWriteMany PVC of the model store, mounted read-only at `model_mount_path`."""
    model_path: str
    """Directory of this model's weights on the volume: `<mountPath>/<model name>/<revision>`."""
    cold_start_seconds: float
    """Seconds to read the weights (storage plan; use all_replicas_cold_start_seconds so a whole
    fleet restarting at once still fits). Sizes the startup probe and the weight wait."""
    interconnect: Interconnect
    """The pool's fabric: efa | infiniband | tcp (settings.interconnect_of(pool))."""
    instance: InstanceType | None = None
    """The pool's EC2 instance type (eks, or efa on existing): CPU/memory sizing, EFA interface
    count and family settings. None: requests per GPU from defaults (existing clusters)."""
    api_key_secret_key: str = "api-key"
    """Key inside the API-key Secret. Defaults to "api-key" (ApiKey.secret_key)."""
    model_mount_path: str = DEFAULT_MOUNT_PATH
    """Where the model volume is mounted; `model_path` must be below it. Defaults to /models."""
    ready_marker: str = READY_MARKER
    """File the weight-sync Job writes into `model_path` when the download is complete (".ready")."""
    monitoring_namespace: str | None = None
    """Namespace whose pods (Prometheus) may scrape /metrics on port 8000; None: none."""
    model_store_kind: ModelStoreKind = "fsx-lustre"
    """Selects the filesystem egress ports: Lustre 988, 1018-1023 for fsx-lustre; NFS 2049 else."""
    model_store_egress_cidrs: Cidrs = ()
    """CIDRs of the model filesystem for pod egress (only in-pod clients need it; CSI mounts are
    made by the node). Empty: no filesystem egress rule."""
    load_balancer_source_cidrs: Cidrs = ()
    """Required with serving.internalLoadBalancer: CIDRs the NLB sends from (the VPC CIDR), admitted
    to port 8000. Ignored otherwise."""
    autoscaled: bool = False
    """An autoscaler (KEDA) owns the replica count: Pulumi sets it at creation, then ignores it."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Resources the workload needs first: the LWS controller (its CRD), device plugins, the model
    volume (ClusterAddons.workload_dependencies plus the model store)."""


class VllmService(pulumi.ComponentResource):
    """One served model: workload, Service(s), PodDisruptionBudget, NetworkPolicies, scripts.

    Secure defaults: no privileged containers, all capabilities dropped except IPC_LOCK on RDMA
    pods, API key from a Secret, ClusterIP only (an NLB only when asked, always internal), traffic
    default-denied and allowed per purpose. Probes never kill a pod that is still loading weights.
    """

    service_name: pulumi.Output[str]
    """ClusterIP Service in front of the serving pods (the LWS leaders)."""
    endpoint: pulumi.Output[str]
    """In-cluster OpenAI base URL: http://<service>.<namespace>.svc.cluster.local:8000/v1."""
    namespace: pulumi.Output[str]
    """Namespace of every object of this service."""
    api_model_name: str
    """The `model` clients send (vLLM --served-model-name; metrics label model_name)."""
    workload_kind: WorkloadKind
    """"Deployment" or "LeaderWorkerSet" (scale target kind for KEDA)."""
    workload_name: str
    """Name of the Deployment / LeaderWorkerSet."""
    workload_api_version: str
    """apps/v1 or leaderworkerset.x-k8s.io/v1."""
    pod_labels: dict[str, str]
    """Labels of the serving pods (app.kubernetes.io/name, vllm-serving/model, vllm-serving/role=leader)."""
    startup_budget_seconds: int
    """Seconds a pod may take to answer /health after its container starts (probe budget)."""
    workload: pulumi.CustomResource
    """The Deployment / LeaderWorkerSet resource, for depends_on (e.g. a ScaledObject); not an output."""

    def __init__(self, name: str, args: VllmServiceArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:vllm_service:VllmService", name, None, opts)
        decided = plan_workload(args)
        names = decided.names

        def child(*, deps: Sequence[pulumi.Resource] = (), **extra: object) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(deps), **extra)

        def metadata(object_name: str, **extra: object) -> dict[str, object]:
            return {
                "name": object_name,
                "namespace": args.namespace,
                "labels": dict(decided.group_labels),
                **extra,
            }

        scripts = kubernetes.core.v1.ConfigMap(
            f"{name}-scripts", metadata=metadata(names.scripts), data=decided.scripts, opts=child()
        )
        workload_opts = child(
            deps=[scripts, *args.depends_on],
            ignore_changes=[REPLICAS_FIELD] if args.autoscaled else None,
            custom_timeouts=pulumi.CustomTimeouts(
                create=timeout_minutes(decided.rollout_deadline_seconds),
                update=timeout_minutes(decided.rollout_deadline_seconds),
            ),
        )
        if decided.kind == "Deployment":
            workload: pulumi.CustomResource = kubernetes.apps.v1.Deployment(
                f"{name}-workload", metadata=metadata(names.workload), spec=decided.spec, opts=workload_opts
            )
        else:
            workload = kubernetes.apiextensions.CustomResource(
                f"{name}-workload",
                api_version=decided.api_version,
                kind=decided.kind,
                metadata=metadata(names.workload),
                spec=decided.spec,
                opts=workload_opts,
            )
        service = kubernetes.core.v1.Service(
            f"{name}-api", metadata=metadata(names.api_service), spec=decided.api_service_spec, opts=child()
        )
        if decided.load_balancer_spec is not None:
            kubernetes.core.v1.Service(
                f"{name}-nlb",
                metadata=metadata(names.load_balancer, annotations=dict(LB_ANNOTATIONS)),
                spec=decided.load_balancer_spec,
                # The load balancer controller must exist first, and on destroy outlive the NLB.
                opts=child(deps=args.depends_on),
            )
        kubernetes.policy.v1.PodDisruptionBudget(
            f"{name}-disruption",
            metadata=metadata(names.disruption_budget),
            spec=decided.disruption_budget_spec,
            opts=child(),
        )
        for role, (policy_name, spec) in decided.network_policies.items():
            kubernetes.networking.v1.NetworkPolicy(
                f"{name}-{role}", metadata=metadata(policy_name), spec=spec, opts=child()
            )

        self.service_name = service.metadata.apply(lambda m: m.name)
        self.namespace = pulumi.Output.from_input(args.namespace)
        self.endpoint = pulumi.Output.concat(
            "http://", self.service_name, ".", self.namespace, f".svc.cluster.local:{API_PORT}/v1"
        )
        self.api_model_name = decided.api_model_name
        self.workload_kind = decided.kind
        self.workload_name = names.workload
        self.workload_api_version = decided.api_version
        self.pod_labels = dict(decided.serving_labels)
        self.startup_budget_seconds = decided.startup_budget_seconds
        self.workload = workload
        self.register_outputs(
            {
                "serviceName": self.service_name,
                "endpoint": self.endpoint,
                "namespace": self.namespace,
                "apiModelName": self.api_model_name,
                "workloadKind": self.workload_kind,
                "workloadName": self.workload_name,
                "workloadApiVersion": self.workload_api_version,
                "podLabels": self.pod_labels,
                "startupBudgetSeconds": self.startup_budget_seconds,
            }
        )
