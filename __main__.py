"""The Pulumi program: settings -> capacity plan -> components -> stack outputs. Wiring only."""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s
import pulumi_random as random

import outputs as out
from capacity import get_instance_type
from components.api_key import ApiKey, ApiKeyArgs
from components.autoscaling import Autoscaling, AutoscalingArgs
from components.cluster import GpuCluster, GpuClusterArgs
from components.cluster_addons import ClusterAddons, ClusterAddonsArgs
from components.existing_cluster import existing_cluster_kubeconfig
from components.gpu_node_group import GpuNodeGroup, GpuNodeGroupArgs
from components.load_balancer_controller import LoadBalancerController, LoadBalancerControllerArgs
from components.model_paths import served_model_path
from components.model_store import ModelStore, ModelStoreArgs
from components.monitoring_rules import MonitoredModel
from components.network import PrivateNetwork, PrivateNetworkArgs
from components.prometheus_stack import PrometheusStack, PrometheusStackArgs
from components.scaling_rules import ScaleTarget
from components.vllm_service import VllmService, VllmServiceArgs
from planning import plan_stack
from settings import SettingsError, load_settings

ROOT = Path(__file__).resolve().parent
config = pulumi.Config()
try:
    settings = load_settings(config)
    plan = plan_stack(settings, ROOT)
except SettingsError as err:
    raise pulumi.RunError(f"invalid stack settings:\n{err}") from None

stack_name = f"{pulumi.get_project()}-{pulumi.get_stack()}"
tags = {"vllm-serving/stack": stack_name}
serving_ns, monitoring_ns = settings.serving.namespace, settings.monitoring.namespace
cold_start = plan.storage.all_replicas_cold_start_seconds

# --- AWS foundation (platform eks) or an existing cluster --------------------------------------
network = cluster = None
if settings.platform == "eks":
    network = PrivateNetwork(
        "net",
        PrivateNetworkArgs(
            settings=settings.network,
            cluster_name=stack_name,
            model_store_kind=settings.model_store.kind,
            tags=tags,
        ),
    )
    cluster = GpuCluster(
        "eks",
        GpuClusterArgs(
            name=stack_name,
            settings=settings.cluster,
            private_subnet_ids=network.private_subnet_ids,
            cluster_security_group_id=network.cluster_security_group_id,
            node_security_group_id=network.node_security_group_id,
            availability_zones=settings.network.availability_zones,
            tags=tags,
        ),
    )
    for pool_plan in plan.pools:
        pool = settings.pool(pool_plan.name)
        GpuNodeGroup(
            f"gpu-{pool.name}",
            GpuNodeGroupArgs(
                pool=pool,
                plan=pool_plan,
                instance=get_instance_type(pool.instance_type or ""),
                cluster_name=stack_name,
                kubernetes_version=cluster.kubernetes_version,
                cluster_security_group_id=cluster.cluster_security_group_id,
                node_security_group_id=network.node_security_group_id,
                efa_security_group_id=network.efa_security_group_id,
                private_subnet_id_by_az=network.private_subnet_id_by_az,
                partition=cluster.partition,
                node_dependencies=cluster.node_dependencies,
                tags=tags,
            ),
        )
    provider = cluster.provider
    kubeconfig = cluster.kubeconfig
else:
    existing = settings.cluster.existing
    assert existing is not None  # guaranteed by settings rules
    kubeconfig = existing_cluster_kubeconfig(existing, config.get_secret("kubeconfig"))
    provider = k8s.Provider("existing-cluster", kubeconfig=kubeconfig, context=existing.context)

# --- In-cluster ---------------------------------------------------------------------------------
addons = ClusterAddons(
    "addons",
    ClusterAddonsArgs(
        provider=provider,
        platform=settings.platform,
        plan=plan,
        serving_namespace=serving_ns,
        kubernetes_version=settings.cluster.version,
        monitoring_namespace=monitoring_ns if settings.monitoring.enabled else None,
        region=cluster.region if cluster else None,
        # Releases wait for their pods: on eks the system nodes and DNS must be there first.
        depends_on=cluster.controller_dependencies if cluster else (),
    ),
)
# Services of type LoadBalancer need the AWS Load Balancer Controller (settings allow them on eks only).
service_dependencies = list(addons.workload_dependencies)
if cluster is not None and network is not None and settings.serving.internal_load_balancer:
    lb_controller = LoadBalancerController(
        "lb-controller",
        LoadBalancerControllerArgs(
            provider=provider,
            cluster_name=cluster.cluster_name,
            region=cluster.region,
            partition=cluster.partition,
            vpc_id=network.vpc_id,
            depends_on=cluster.controller_dependencies,
        ),
    )
    service_dependencies.append(lb_controller.release)
api_key = ApiKey(
    "api-key",
    ApiKeyArgs(namespace=addons.serving_namespace, provider=provider, api_key=config.get_secret("apiKey")),
)
# FSx sits in the AZ of the first EFA pool (next to the GPUs), else in the first AZ.
store_zone = (
    next((p.availability_zone for p in settings.gpu_pools if p.availability_zone), None)
    or (settings.network.availability_zones[0])
)
store = ModelStore(
    "models",
    ModelStoreArgs(
        settings=settings.model_store,
        storage=plan.storage,
        namespace=addons.serving_namespace,
        provider=provider,
        cluster_name=cluster.cluster_name if cluster else None,
        subnet_id=network.private_subnet_id_by_az[store_zone] if network else None,
        subnet_ids=list(network.private_subnet_id_by_az.values()) if network else (),
        security_group_ids=[network.model_store_security_group_id] if network else (),
        models=plan.models,
        hf_token=config.get_secret("hfToken"),
        tags=tags,
    ),
    opts=pulumi.ResourceOptions(depends_on=addons.workload_dependencies),
)
autoscaled = settings.autoscaling.enabled
services = {
    model.settings.name: VllmService(
        model.settings.name,
        VllmServiceArgs(
            model=model,
            serving=settings.serving,
            platform=settings.platform,
            namespace=addons.serving_namespace,
            provider=provider,
            api_key_secret_name=api_key.secret_name,
            api_key_secret_key=api_key.secret_key,
            model_claim_name=store.serving_claim_name,
            model_mount_path=settings.model_store.mount_path,
            model_path=served_model_path(model.settings, settings.model_store.mount_path),
            cold_start_seconds=cold_start,
            interconnect=settings.interconnect_of(model.pool),
            instance=get_instance_type(model.pool.instance_type) if model.pool.instance_type else None,
            monitoring_namespace=monitoring_ns if settings.monitoring.enabled else None,
            model_store_kind=settings.model_store.kind,
            model_store_egress_cidrs=network.vpc_cidrs if network else (),
            load_balancer_source_cidrs=network.vpc_cidrs if network else (),
            autoscaled=autoscaled,
            depends_on=service_dependencies,
        ),
    )
    for model in plan.models
}

prometheus_url: pulumi.Input[str] = ""
if settings.monitoring.enabled:
    prometheus = PrometheusStack(
        "monitoring",
        PrometheusStackArgs(
            settings=settings.monitoring,
            platform=settings.platform,
            namespace=addons.monitoring_namespace,
            provider=provider,
            models=[
                MonitoredModel(
                    name=m.settings.name,
                    namespace=serving_ns,
                    group_size=m.plan.nodes_per_replica,
                    min_replicas=m.min_replicas,
                    cold_start_seconds=cold_start,
                )
                for m in plan.models
            ],
            grafana_admin_password=config.get_secret("grafanaAdminPassword")
            or random.RandomPassword("grafana-admin", length=32, special=False).result,
            waiting_requests_alert_threshold=settings.autoscaling.waiting_requests_threshold,
        ),
        # Prometheus and Alertmanager volumes bind only once the EBS CSI driver runs (eks).
        opts=pulumi.ResourceOptions(
            depends_on=[*addons.workload_dependencies, *(cluster.storage_dependencies if cluster else ())]
        ),
    )
    prometheus_url = prometheus.prometheus_url

if autoscaled:
    Autoscaling(
        "autoscaling",
        AutoscalingArgs(
            settings=settings.autoscaling,
            platform=settings.platform,
            provider=provider,
            prometheus_url=prometheus_url,
            targets=[
                ScaleTarget(
                    model=m.settings.name,
                    namespace=serving_ns,
                    kind=services[m.settings.name].workload_kind,
                    workload_name=services[m.settings.name].workload_name,
                    min_replicas=m.min_replicas,
                    max_replicas=m.max_replicas,
                    cold_start_seconds=cold_start,
                )
                for m in plan.models
            ],
            cluster_name=cluster.cluster_name if cluster else None,
            region=cluster.region if cluster else None,
            kubernetes_version=settings.cluster.version,
        ),
        opts=pulumi.ResourceOptions(depends_on=[*addons.workload_dependencies, *services.values()]),
    )

# --- Outputs (the contract: outputs.py, docs/outputs.md) -----------------------------------------
pulumi.export(out.OUTPUT_CONTRACT_VERSION, out.CONTRACT_VERSION)
pulumi.export(out.OUTPUT_VPC_ID, network.vpc_id if network else "")
pulumi.export(out.OUTPUT_PRIVATE_SUBNET_IDS, network.private_subnet_ids if network else [])
pulumi.export(out.OUTPUT_AVAILABILITY_ZONES, network.availability_zones if network else [])
pulumi.export(
    out.OUTPUT_CLUSTER_NAME, cluster.cluster_name if cluster else (settings.cluster.existing.context or "")
)
pulumi.export(out.OUTPUT_KUBECONFIG, pulumi.Output.secret(kubeconfig if cluster else ""))
pulumi.export(out.OUTPUT_NODE_SECURITY_GROUP_ID, network.node_security_group_id if network else "")
pulumi.export(
    out.OUTPUT_MODEL_STORE,
    {
        "kind": settings.model_store.kind,
        "fileSystemId": store.file_system_id,
        "dnsName": store.dns_name,
        "mountName": store.mount_name,
        "s3Uri": store.s3_uri,
        "claimName": store.serving_claim_name,
        "mountPath": settings.model_store.mount_path,
    },
)
pulumi.export(
    out.OUTPUT_ENDPOINTS,
    {
        name: {
            "baseUrl": svc.endpoint,
            "servedModelName": svc.api_model_name,
            "namespace": serving_ns,
            "service": svc.service_name,
        }
        for name, svc in services.items()
    },
)
pulumi.export(
    out.OUTPUT_API_KEY_SECRET,
    {"namespace": serving_ns, "name": api_key.secret_name, "key": api_key.secret_key},
)
pulumi.export(out.OUTPUT_API_KEY, api_key.value)
pulumi.export(out.OUTPUT_CLIENT_NAMESPACES, sorted(settings.serving.client_namespaces))
pulumi.export(out.OUTPUT_PROMETHEUS_URL, prometheus_url)
pulumi.export(out.OUTPUT_CAPACITY_PLAN, plan.to_dict())
