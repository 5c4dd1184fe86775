"""components/weight_sync.py: the recorded graph of WeightSync (fresh program run per test).

Checks, on wire-form inputs: one Job per model named by model id + revision, the pinned revision in
its command, bounded retries (backoffLimit 4, deadline sized to the weights, TTL), a non-GPU node
selector and no tolerations, the hardened pod (non-root, seccomp, no token, read-only root, no
capabilities, a capability-free prepare step), requests and limits, labels, pulumi.com/skipAwait;
the HF token only as a secret-wrapped Secret key; the egress NetworkPolicy; every child parented to
the component with the explicit provider; outputs; and the graph identical across runs.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes
import pytest

from components.storage_naming import sync_job_name
from components.weight_sync import WeightSync, WeightSyncArgs
from components.weight_sync_plan import deadline_seconds
from offline.graph import RecordedResource, is_secret
from offline.recorder import Graph, record_program

JOB = "kubernetes:batch/v1:Job"
SECRET = "kubernetes:core/v1:Secret"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
COMPONENT = "vllm-serving:weight_sync:WeightSync"
LLAMA_SHA = "be673f326cab4cd22ccfef76109faf68e41aa5f1"
QWEN_SHA = "5ede1c97bbab6ce5cda5812749b4c0bdf79b18dd"


def served(name: str, model_id: str, revision: str, weight_bytes: int) -> Any:
    """The two attributes WeightSync reads from planning.ServedModel."""
    return SimpleNamespace(
        settings=SimpleNamespace(name=name, model_id=model_id, revision=revision),
        plan=SimpleNamespace(model_weight_bytes=weight_bytes),
    )


MODELS = (
    served("qwen-32b", "Qwen/Qwen2.5-32B-Instruct", QWEN_SHA, 65_500_000_000),
    served("llama-405b", "meta-llama/Llama-3.1-405B-Instruct", LLAMA_SHA, 811_000_000_000),
)


def build(**overrides: Any) -> Callable[[], None]:
    def program() -> None:
        provider = kubernetes.Provider("cluster", kubeconfig="{}")
        args: dict[str, Any] = {
            "models": MODELS,
            "namespace": "vllm",
            "provider": provider,
            "claim_name": "model-store-sync",
            "hf_token": pulumi.Output.secret("hf_example_token"),
        }
        args.update(overrides)
        WeightSync("model-store-sync", WeightSyncArgs(**args))

    return program


def record(**overrides: Any) -> Graph:
    return record_program(build(**overrides), stack="test")


def job_of(graph: Graph, model: str) -> RecordedResource:
    return graph.one(JOB, f"model-store-sync-{model}")


def pod_spec(job: RecordedResource) -> dict[str, Any]:
    return job.inputs["spec"]["template"]["spec"]


def test_one_job_per_model_named_by_model_id_and_revision() -> None:
    graph = record()
    jobs = graph.by_type(JOB)
    assert sorted(j.inputs["metadata"]["name"] for j in jobs) == [
        sync_job_name("llama-405b", "meta-llama/Llama-3.1-405B-Instruct", LLAMA_SHA),
        sync_job_name("qwen-32b", "Qwen/Qwen2.5-32B-Instruct", QWEN_SHA),
    ]
    for job in jobs:
        assert job.inputs["metadata"]["namespace"] == "vllm", job.urn


def test_job_command_downloads_the_pinned_revision_into_the_model_directory() -> None:
    job = job_of(record(), "llama-405b")
    command = pod_spec(job)["containers"][0]["command"]
    assert command[command.index("--revision") + 1] == LLAMA_SHA, job.urn
    assert command[command.index("--model-id") + 1] == "meta-llama/Llama-3.1-405B-Instruct", job.urn
    assert command[command.index("--target") + 1] == f"/models/llama-405b/{LLAMA_SHA}", job.urn
    prepare = pod_spec(job)["initContainers"][0]["command"]
    assert prepare[2:] == ["prepare", "--target", f"/models/llama-405b/{LLAMA_SHA}", "--group", "1000"], (
        job.urn
    )


def test_job_retries_are_bounded_and_sized_to_the_weights() -> None:
    job = job_of(record(), "llama-405b")
    spec = job.inputs["spec"]
    assert spec["backoffLimit"] == 4, job.urn
    assert spec["activeDeadlineSeconds"] == deadline_seconds(811_000_000_000) == 18020, job.urn
    assert spec["ttlSecondsAfterFinished"] == 604800, job.urn
    assert pod_spec(job)["restartPolicy"] == "Never", job.urn
    assert job.inputs["metadata"]["annotations"] == {"pulumi.com/skipAwait": "true"}, job.urn


def test_job_runs_on_system_nodes_without_gpu_tolerations() -> None:
    for job in record().by_type(JOB):
        spec = pod_spec(job)
        assert spec["nodeSelector"] == {"vllm-serving/pool": "system"}, job.urn
        assert "tolerations" not in spec, job.urn
        resources = spec["containers"][0]["resources"]
        assert resources == {
            "requests": {"cpu": "2", "memory": "8Gi", "ephemeral-storage": "12Gi"},
            "limits": {"memory": "8Gi", "ephemeral-storage": "24Gi"},
        }, job.urn
        assert "nvidia.com/gpu" not in str(resources), job.urn


def test_node_selector_can_be_cleared_for_existing_clusters() -> None:
    job = job_of(record(node_selector={}), "qwen-32b")
    assert "nodeSelector" not in pod_spec(job), job.urn


def test_pod_is_hardened() -> None:
    job = job_of(record(), "qwen-32b")
    spec = pod_spec(job)
    assert spec["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "runAsGroup": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }, job.urn
    assert spec["automountServiceAccountToken"] is False, job.urn
    sync = spec["containers"][0]["securityContext"]
    assert sync == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }, job.urn
    prepare = spec["initContainers"][0]["securityContext"]
    assert prepare["capabilities"] == {"drop": ["ALL"]}, job.urn
    assert prepare["allowPrivilegeEscalation"] is False, job.urn


def test_pods_mount_the_sync_claim_script_and_tmp() -> None:
    job = job_of(record(), "qwen-32b")
    volumes = {v["name"]: v for v in pod_spec(job)["volumes"]}
    assert volumes["model-store"] == {
        "name": "model-store",
        "persistentVolumeClaim": {"claimName": "model-store-sync"},
    }
    assert volumes["script"]["configMap"] == {"name": "model-store-sync-script", "defaultMode": 0o555}, (
        job.urn
    )
    assert volumes["tmp"]["emptyDir"] == {"sizeLimit": "20Gi"}, job.urn
    mounts = {m["name"]: m["mountPath"] for m in pod_spec(job)["containers"][0]["volumeMounts"]}
    assert mounts == {"model-store": "/models", "script": "/opt/weight-sync", "tmp": "/tmp"}, job.urn


def test_pods_are_labelled_for_the_network_policy_and_the_model() -> None:
    job = job_of(record(), "qwen-32b")
    labels = job.inputs["spec"]["template"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "weight-sync", job.urn
    assert labels["vllm-serving/model"] == "qwen-32b", job.urn


def test_hf_token_is_a_secret_and_only_referenced() -> None:
    graph = record()
    secret = graph.one(SECRET)
    assert is_secret(secret.inputs["stringData"]), secret.urn
    assert secret.inputs["stringData"]["value"] == {"HF_TOKEN": "hf_example_token"}, secret.urn
    env = pod_spec(job_of(graph, "qwen-32b"))["containers"][0]["env"]
    token = [e for e in env if e["name"] == "HF_TOKEN"]
    assert token == [
        {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "model-store-sync-hf-token", "key": "HF_TOKEN"}},
        }
    ]
    assert "hf_example_token" not in str(job_of(graph, "qwen-32b").inputs)
    assert secret.urn in job_of(graph, "qwen-32b").dependencies


def test_without_token_no_secret_and_no_env() -> None:
    graph = record(hf_token=None)
    assert graph.by_type(SECRET) == []
    env = pod_spec(job_of(graph, "qwen-32b"))["containers"][0]["env"]
    assert all(e["name"] != "HF_TOKEN" for e in env)


def test_egress_network_policy_selects_sync_pods() -> None:
    policy = record().one(NETWORK_POLICY)
    spec = policy.inputs["spec"]
    assert spec["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "weight-sync"}}, policy.urn
    assert spec["policyTypes"] == ["Ingress", "Egress"], policy.urn
    assert [rule["ports"] for rule in spec["egress"]] == [
        [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        [{"protocol": "TCP", "port": 443}],
    ], policy.urn


def test_script_config_map_ships_the_sync_script() -> None:
    config_map = record().one(CONFIG_MAP)
    assert config_map.inputs["data"]["sync_weights.py"].startswith('"""Put one pinned model revision'), (
        config_map.urn
    )


def test_children_use_the_explicit_provider_and_parent() -> None:
    graph = record()
    component = graph.one(COMPONENT)
    provider = graph.one("pulumi:providers:kubernetes", "cluster")
    children = graph.children(component)
    assert {c.type for c in children} == {JOB, SECRET, CONFIG_MAP, NETWORK_POLICY}
    for child in children:
        assert child.provider_urn == provider.urn, f"{child.urn}: not created through the explicit provider"


def test_outputs() -> None:
    outputs = record().one(COMPONENT).outputs
    assert outputs["jobNames"] == {
        "llama-405b": sync_job_name("llama-405b", "meta-llama/Llama-3.1-405B-Instruct", LLAMA_SHA),
        "qwen-32b": sync_job_name("qwen-32b", "Qwen/Qwen2.5-32B-Instruct", QWEN_SHA),
    }
    assert outputs["markers"] == {
        "llama-405b": f"/models/llama-405b/{LLAMA_SHA}/.ready",
        "qwen-32b": f"/models/qwen-32b/{QWEN_SHA}/.ready",
    }
    assert outputs["secretName"] == "model-store-sync-hf-token"


def test_same_inputs_same_graph() -> None:
    first = [r.to_dict() for r in record().resources]
    second = [r.to_dict() for r in record().resources]
    assert first == second


def test_root_uid_rejected() -> None:
    with pytest.raises(Exception, match="run_as_user must be a non-root uid"):
        record(run_as_user=0)
