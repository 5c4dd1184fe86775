"""examples/consumer: a project of its own that reads this project's outputs by StackReference.

Previewed through the offline engine against this project's own offline outputs of the dev
stack (the engine runs the referenced stack), so the example breaks when the outputs contract
does. Also: its objects validate against the Kubernetes schemas, the client is locked down, and
every misconfiguration ends with one line naming the key and the fix.
"""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
from typing import Any

import pytest
import yaml

from offline.engine import Preview, preview_stack
from offline.graph import is_secret, unwrap_secrets
from offline.manifests import kubernetes_manifests
from offline.recorder import Graph, RecordedResource
from offline.validate import validate_manifest
from tests.helpers import ROOT, SHARED, preview, run_offline

CONSUMER = ROOT / "examples" / "consumer"
SERVING = "organization/vllm-serving/dev"


@functools.cache
def consumer() -> Preview:
    return preview_stack("dev", root=CONSUMER)


def _one(graph: Graph, type_: str, name: str) -> RecordedResource:
    (resource,) = [r for r in graph.by_type(type_) if r.name == name]
    return resource


def _env(job: RecordedResource) -> dict[str, Any]:
    container = job.inputs["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_cli_preview_of_the_consumer_exits_0_with_no_policy_violation() -> None:
    done = run_offline("preview", "--project", str(CONSUMER), "--stack", "dev", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["project"] == "vllm-serving-consumer"
    assert document["policies"]["ran"] and document["policies"]["violations"] == []
    secret = next(r for r in document["resources"] if r["type"] == "kubernetes:core/v1:Secret")
    assert secret["inputs"]["stringData"] == "[secret]", "the key never shows in a preview"


def test_the_client_calls_the_dev_endpoint_the_serving_stack_exports() -> None:
    exported = preview("dev").graph.outputs
    endpoint = exported["endpoints"]["llama-8b"]
    graph = consumer().graph
    reference = _one(graph, "pulumi:pulumi:StackReference", "serving")
    assert reference.read and reference.id == SERVING
    env = _env(_one(graph, "kubernetes:batch/v1:Job", "list-models"))
    assert env["BASE_URL"] == endpoint["baseUrl"] == "http://llama-8b-api.vllm.svc.cluster.local:8000/v1"
    assert env["SERVED_MODEL"] == endpoint["servedModelName"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert env["VLLM_API_KEY"] == {"secretKeyRef": {"name": "vllm-api-key", "key": "api-key"}}
    assert graph.outputs["baseUrl"] == endpoint["baseUrl"]


def test_the_api_key_and_kubeconfig_stay_secret_and_match_the_serving_stack() -> None:
    exported = preview("dev").graph.outputs
    graph = consumer().graph
    string_data = _one(graph, "kubernetes:core/v1:Secret", "api-key").inputs["stringData"]
    assert is_secret(string_data)
    key = unwrap_secrets(string_data)["api-key"]
    assert key == unwrap_secrets(exported["apiKey"])
    assert len(key) == 48  # the serving stack's generated key, not an empty stand-in
    kubeconfig = _one(graph, "pulumi:providers:kubernetes", "serving-cluster").inputs["kubeconfig"]
    assert is_secret(kubeconfig)
    assert unwrap_secrets(kubeconfig) == unwrap_secrets(exported["kubeconfig"])
    assert yaml.safe_load(unwrap_secrets(kubeconfig))["users"][0]["user"]["exec"]["command"] == "aws"


def test_every_object_uses_the_serving_clusters_provider_and_validates() -> None:
    graph = consumer().graph
    provider = _one(graph, "pulumi:providers:kubernetes", "serving-cluster")
    objects = [r for r in graph.resources if r.type.startswith("kubernetes:") and r.custom]
    assert len(objects) == 5
    assert all(r.provider_urn == provider.urn for r in objects)
    manifests = kubernetes_manifests(graph)
    assert sorted(m["kind"] for m in manifests) == [
        "Job",
        "Namespace",
        "NetworkPolicy",
        "NetworkPolicy",
        "Secret",
    ]
    problems = {
        m["kind"]: e for m in manifests if (e := validate_manifest(m, schemas_dir=SHARED / "schemas"))
    }
    assert problems == {}


def test_the_client_namespace_is_restricted_and_may_only_reach_dns_and_the_api_port() -> None:
    graph = consumer().graph
    labels = _one(graph, "kubernetes:core/v1:Namespace", "clients").inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    deny = _one(graph, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "default-deny").inputs["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    egress = _one(graph, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "client-egress").inputs["spec"]
    assert egress["policyTypes"] == ["Egress"]
    dns, api = egress["egress"]
    assert {p["port"] for p in dns["ports"]} == {53}
    assert dns["to"][0]["namespaceSelector"]["matchLabels"] == {"kubernetes.io/metadata.name": "kube-system"}
    assert api["ports"] == [{"protocol": "TCP", "port": 8000}]
    assert api["to"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vllm"}}}]
    # The serving stack admits exactly this namespace to its API port.
    assert "vllm-clients" in preview("dev").graph.outputs["clientNamespaces"]


def test_the_job_runs_locked_down_and_waits_for_its_network_policy_and_key() -> None:
    graph = consumer().graph
    job = _one(graph, "kubernetes:batch/v1:Job", "list-models")
    spec = job.inputs["spec"]
    pod = spec["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    container = pod["containers"][0]
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert container["image"] == "curlimages/curl:8.16.0"
    assert spec["activeDeadlineSeconds"] > 900, "outlives curl's retries through a cold start"
    names = {graph.get(urn).name for urn in job.dependencies}
    assert {"client-egress", "api-key"} <= names
    assert job.delete_before_replace and job.inputs["metadata"]["name"] == "list-models-llama-8b"


def _run_consumer(tmp_path, outputs: dict[str, Any], **config: str) -> subprocess.CompletedProcess[str]:
    """The consumer previewed against hand-made outputs of the serving stack."""
    project = tmp_path / "consumer"
    shutil.copytree(CONSUMER, project)
    references = project / "offline" / "stack-references"
    references.mkdir(parents=True)
    (references / "serving.json").write_text(json.dumps({"stack": SERVING, "outputs": outputs}))
    settings = {"servingStack": SERVING, "namespace": "vllm-clients", **config}
    stack_file = project / "Pulumi.case.yaml"
    stack_file.write_text(
        yaml.safe_dump({"config": {f"vllm-serving-consumer:{k}": v for k, v in settings.items()}})
    )
    return run_offline("preview", "--project", str(project), "--stack", "case", "--no-policies")


def _outputs(**changes: Any) -> dict[str, Any]:
    outputs = json.loads(json.dumps(preview("dev").graph.outputs))
    outputs.update(changes)
    return {k: v for k, v in outputs.items() if v is not None}


@pytest.mark.parametrize(
    ("outputs", "config", "message"),
    [
        (
            {"endpoints": {}},
            {"model": "llama-8b"},
            "vllm-serving-consumer:model 'llama-8b' is not served by stack organization/vllm-serving/dev",
        ),
        (
            {"clientNamespaces": ["apps"]},
            {},
            "namespace 'vllm-clients' may not call stack organization/vllm-serving/dev: its NetworkPolicies "
            "admit clientNamespaces ['apps']; add it to vllm-serving:serving.clientNamespaces there",
        ),
        ({"contractVersion": "2"}, {}, "exports output contract '2'; this consumer reads version 1"),
        ({"contractVersion": None}, {}, "has no output 'contractVersion'"),
        ({"clientNamespaces": None}, {}, "has no output 'clientNamespaces' (it predates that output)"),
        (
            {"kubeconfig": ""},
            {},
            "exports no kubeconfig (platform existing); set vllm-serving-consumer:useServingStackKubeconfig false",
        ),
    ],
)
def test_a_serving_stack_that_cannot_serve_the_client_fails_with_one_line(
    tmp_path, outputs: dict[str, Any], config: dict[str, str], message: str
) -> None:
    done = _run_consumer(tmp_path, _outputs(**outputs), **config)
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert message in done.stderr


def test_an_existing_cluster_stack_works_with_the_ambient_kubeconfig(tmp_path) -> None:
    done = _run_consumer(tmp_path, _outputs(kubeconfig=""), useServingStackKubeconfig="false")
    assert done.returncode == 0, done.stderr
    assert "kubernetes:batch/v1:Job  list-models" in done.stdout
