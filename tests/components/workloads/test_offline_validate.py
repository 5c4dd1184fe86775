"""offline.validate: manifests from recorded resources, and schema validation of every kind we create.

Checks the shared CRD samples (each valid one passes, each invalid one fails on its one defect),
strict core schemas (unknown fields are errors), strict checking of pod templates embedded in a
LeaderWorkerSet, unknown kinds, and manifest_from_recorded on a real recording (secrets unwrapped,
integers restored, Helm releases refused).
"""

from __future__ import annotations

from pathlib import Path

import pulumi
import pulumi_kubernetes as kubernetes
import pytest
import yaml

from offline.recorder import record_program
from offline.validate import SCHEMAS_DIR, is_manifest, manifest_from_recorded, validate_manifest

SAMPLES = SCHEMAS_DIR / "samples"
SAMPLE_KINDS = (
    "leaderworkerset",
    "scaledobject",
    "triggerauthentication",
    "podmonitor",
    "servicemonitor",
    "prometheusrule",
)


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("kind", SAMPLE_KINDS)
def test_valid_crd_samples_pass(kind: str) -> None:
    assert validate_manifest(load(SAMPLES / f"{kind}-valid.yaml")) == []


@pytest.mark.parametrize(
    ("kind", "defect"),
    [
        ("leaderworkerset", "spec.leaderWorkerTemplate.size: '2' is not of type 'integer'"),
        ("scaledobject", "spec.triggers[0]: 'type' is a required property"),
        ("triggerauthentication", "spec.secretTargetRef[0]: 'key' is a required property"),
        ("podmonitor", "spec.podMetricsEndpoints[0].interval: '30 seconds' does not match"),
        ("servicemonitor", "spec: 'endpoints' is a required property"),
        ("prometheusrule", "spec.groups[0].rules[0]: 'expr' is a required property"),
    ],
)
def test_invalid_crd_samples_fail_on_their_defect(kind: str, defect: str) -> None:
    problems = validate_manifest(load(SAMPLES / f"{kind}-invalid.yaml"))
    assert len(problems) == 1
    assert defect in problems[0]


def test_core_kinds_are_strict() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "api", "namespace": "vllm"},
        "spec": {"ports": [{"port": 8000, "targetPrt": "http"}]},
    }
    assert validate_manifest(service) == [
        "Service vllm/api: spec.ports[0]: Additional properties are not allowed ('targetPrt' was unexpected)"
    ]


def test_pod_templates_inside_a_leaderworkerset_are_strict() -> None:
    lws = load(SAMPLES / "leaderworkerset-valid.yaml")
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["imagePullPolisy"] = (
        "Always"
    )
    problems = validate_manifest(lws)
    assert problems == [
        "LeaderWorkerSet default/vllm: spec.leaderWorkerTemplate.workerTemplate.spec.containers[0]: "
        "Additional properties are not allowed ('imagePullPolisy' was unexpected)"
    ]


def test_unknown_kinds_are_reported_not_passed() -> None:
    assert validate_manifest(
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    ) == ["Widget -/w: no schema for example.com/v1 Widget (Kubernetes 1.33 or shared CRDs)"]
    assert validate_manifest({"metadata": {"name": "w"}}) == [
        "<no kind> -/w: apiVersion and kind are required"
    ]


def test_manifest_from_recorded_resources() -> None:
    def program() -> None:
        provider = kubernetes.Provider("k8s", kubeconfig="{}")
        opts = pulumi.ResourceOptions(provider=provider)
        kubernetes.core.v1.Secret(
            "key",
            metadata={"name": "vllm-api-key", "namespace": "vllm"},
            string_data={"api-key": pulumi.Output.secret("s3cret")},
            opts=opts,
        )
        kubernetes.policy.v1.PodDisruptionBudget(
            "pdb",
            metadata={"name": "pdb", "namespace": "vllm"},
            spec={"maxUnavailable": 1, "selector": {"matchLabels": {"a": "b"}}},
            opts=opts,
        )
        kubernetes.helm.v3.Release(
            "lws", chart="oci://registry.k8s.io/lws/charts/lws", version="0.10.0", opts=opts
        )

    graph = record_program(program)
    secret = graph.one("kubernetes:core/v1:Secret")
    assert manifest_from_recorded(secret) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "vllm-api-key", "namespace": "vllm"},
        "stringData": {"api-key": "s3cret"},
    }
    pdb = manifest_from_recorded(graph.one("kubernetes:policy/v1:PodDisruptionBudget"))
    assert pdb["spec"]["maxUnavailable"] == 1 and isinstance(pdb["spec"]["maxUnavailable"], int)
    assert list(pdb) == ["apiVersion", "kind", "metadata", "spec"]
    assert validate_manifest(pdb) == []
    release = graph.one("kubernetes:helm.sh/v3:Release")
    assert not is_manifest(release)
    with pytest.raises(ValueError, match="is not a Kubernetes object manifest"):
        manifest_from_recorded(release)
