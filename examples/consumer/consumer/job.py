"""The client's Kubernetes objects as plain specs: namespace, NetworkPolicies, the list-models Job.

Owns the client's security posture (Pod Security `restricted`, default-deny with egress only to
DNS and the serving namespace's API port, no service-account token, read-only root filesystem)
and the Job that proves the endpoint answers with the key. Pure: no Pulumi resources here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consumer.serving import ServingEndpoint

API_PORT = 8000  # the vLLM API port of every vllm-serving Service
CURL_IMAGE = "curlimages/curl:8.16.0"
CURL_UID = 100  # curl_user in the curlimages image
SCRIPT = Path(__file__).with_name("list_models.sh")
API_KEY_SECRET = "vllm-api-key"
API_KEY_SECRET_KEY = "api-key"
LABELS = {"app.kubernetes.io/name": "vllm-client", "app.kubernetes.io/part-of": "vllm-serving-consumer"}
# Waits for a cold start: curl retries for RETRY_MAX_SECONDS, the Job gives up a little later.
RETRY_MAX_SECONDS = 900
ACTIVE_DEADLINE_SECONDS = 1200


def job_name(model: str) -> str:
    """`list-models-<model>`, shortened to a DNS label."""
    return f"list-models-{model}"[:63].rstrip("-")


def namespace_labels() -> dict[str, str]:
    """Pod Security `restricted` (the client needs nothing more), at the cluster's own version."""
    labels = dict(LABELS)
    for mode in ("enforce", "warn", "audit"):
        labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
        labels[f"pod-security.kubernetes.io/{mode}-version"] = "latest"
    return labels


def default_deny_spec() -> dict[str, Any]:
    """Nothing in or out of the client namespace unless another policy allows it."""
    return {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}


def client_egress_spec(endpoint: ServingEndpoint) -> dict[str, Any]:
    """The client pods may reach cluster DNS and the serving namespace's API port, nothing else."""
    return {
        "podSelector": {"matchLabels": dict(LABELS)},
        "policyTypes": ["Egress"],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    }
                ],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            },
            {
                "to": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": endpoint.namespace}
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": API_PORT}],
            },
        ],
    }


def job_spec(endpoint: ServingEndpoint) -> dict[str, Any]:
    """A Job that lists the served models with the key; it succeeds only if the model answers."""
    container = {
        "name": "list-models",
        "image": CURL_IMAGE,
        "command": ["/bin/sh", "-c", SCRIPT.read_text()],
        "env": [
            {"name": "BASE_URL", "value": endpoint.base_url},
            {"name": "SERVED_MODEL", "value": endpoint.served_model_name},
            {"name": "RETRY_MAX_SECONDS", "value": str(RETRY_MAX_SECONDS)},
            {"name": "TMPDIR", "value": "/tmp"},
            {
                "name": "VLLM_API_KEY",
                "valueFrom": {"secretKeyRef": {"name": API_KEY_SECRET, "key": API_KEY_SECRET_KEY}},
            },
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    return {
        "backoffLimit": 2,
        "activeDeadlineSeconds": ACTIVE_DEADLINE_SECONDS,
        "ttlSecondsAfterFinished": 86400,
        "template": {
            "metadata": {"labels": {**LABELS, "vllm-serving-consumer/model": endpoint.model}},
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": CURL_UID,
                    "runAsGroup": CURL_UID,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "containers": [container],
                "volumes": [{"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}],
            },
        },
    }
