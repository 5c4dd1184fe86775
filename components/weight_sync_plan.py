"""Decisions of the weight sync: one Job per model revision, its command, deadline and pod security.

Owns the pure part of components/weight_sync.py: which Jobs to create (sorted, named by model id
and revision), the exact commands of the prepare and sync containers, the deadline sized to the
weights, the pods' labels and security contexts, and the egress NetworkPolicy spec. Reads its
tunables from `components/data/model_store.json` ("weightSync"). No Pulumi imports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.model_paths import READY_MARKER, model_path
from components.model_store_plan import store_facts
from components.storage_naming import sync_job_name

APP_LABEL = "app.kubernetes.io/name"
APP_NAME = "weight-sync"
MODEL_LABEL = "vllm-serving/model"
PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF = "vllm-serving"
SKIP_AWAIT_ANNOTATION = "pulumi.com/skipAwait"

DEFAULT_NODE_SELECTOR: Mapping[str, str] = {"vllm-serving/pool": "system"}
"""The system node group's label (components/cluster.py): downloads never occupy a GPU node."""

SCRIPT_FILE = "sync_weights.py"
SCRIPT_MOUNT = "/opt/weight-sync"
TMP_MOUNT = "/tmp"
HF_TOKEN_KEY = "HF_TOKEN"
BYTES_PER_MB = 1_000_000
DNS_PORT = 53
HTTPS_PORT = 443


def sync_facts() -> Mapping[str, Any]:
    """The "weightSync" section of the data file."""
    return store_facts()["weightSync"]


@dataclass(frozen=True)
class SyncModel:
    """What the sync needs from one served model (ServedModel.settings + ServedModel.plan)."""

    name: str
    model_id: str
    revision: str
    weight_bytes: int


@dataclass(frozen=True)
class SyncJobPlan:
    """One weight-sync Job, decided."""

    model: SyncModel
    job_name: str
    target: str
    marker: str
    deadline_seconds: int
    prepare_command: tuple[str, ...]
    sync_command: tuple[str, ...]


def deadline_seconds(
    weight_bytes: int,
    rate_mbps: float | None = None,
    retry_factor: float | None = None,
    margin_seconds: int | None = None,
) -> int:
    """activeDeadlineSeconds for a Job moving `weight_bytes` at a conservative download rate.

    transfer = bytes / rate; deadline = transfer x retry factor + margin (defaults from the data file:
    100 MB/s, x2 because a retry resumes the download, +30 min for scheduling, pull and verification).
    """
    if weight_bytes < 0:
        raise ValueError(f"weight_bytes must not be negative, got {weight_bytes}")
    facts = sync_facts()
    rate = facts["downloadRateMBps"] if rate_mbps is None else rate_mbps
    factor = facts["deadlineRetryFactor"] if retry_factor is None else retry_factor
    margin = facts["deadlineMarginSeconds"] if margin_seconds is None else margin_seconds
    if rate <= 0:
        raise ValueError(f"download rate must be positive, got {rate} MB/s")
    transfer = weight_bytes / (rate * BYTES_PER_MB)
    return math.ceil(transfer * factor) + margin


def script_path() -> str:
    return f"{SCRIPT_MOUNT}/{SCRIPT_FILE}"


def build_prepare_command(target: str, group: int) -> tuple[str, ...]:
    return ("python3", script_path(), "prepare", "--target", target, "--group", str(group))


def build_sync_command(model: SyncModel, target: str) -> tuple[str, ...]:
    """The sync container's argv: the pinned revision, where to put it, and what to fetch."""
    facts = sync_facts()
    command = [
        "python3",
        script_path(),
        "sync",
        "--model-id",
        model.model_id,
        "--revision",
        model.revision,
        "--target",
        target,
        "--marker",
        READY_MARKER,
        "--max-workers",
        str(facts["maxWorkers"]),
        "--requirement",
        facts["requirement"],
    ]
    for pattern in facts["allowPatterns"]:
        command += ["--allow-pattern", pattern]
    for pattern in facts["ignorePatterns"]:
        command += ["--ignore-pattern", pattern]
    return tuple(command)


def plan_sync_jobs(
    models: Sequence[SyncModel], mount_path: str, run_as_group: int
) -> tuple[SyncJobPlan, ...]:
    """One Job per model, sorted by model name; duplicate names are rejected."""
    names = [m.name for m in models]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(
            f"models: duplicate model names {', '.join(duplicates)}; each needs its own directory"
        )
    plans = []
    for model in sorted(models, key=lambda m: m.name):
        target = model_path(mount_path, model.name, model.revision)
        plans.append(
            SyncJobPlan(
                model=model,
                job_name=sync_job_name(model.name, model.model_id, model.revision),
                target=target,
                marker=f"{target}/{READY_MARKER}",
                deadline_seconds=deadline_seconds(model.weight_bytes),
                prepare_command=build_prepare_command(target, run_as_group),
                sync_command=build_sync_command(model, target),
            )
        )
    return tuple(plans)


def decide_sync_node_selector(requested: Mapping[str, str] | None, on_eks: bool) -> dict[str, str]:
    """The sync Jobs' node selector: as requested, else the system pool on EKS, else none (a
    cluster this stack did not build has no `vllm-serving/pool: system` nodes)."""
    if requested is not None:
        return dict(requested)
    return dict(DEFAULT_NODE_SELECTOR) if on_eks else {}


def pod_labels(model_name: str) -> dict[str, str]:
    """Labels of a sync Job and its pods (the NetworkPolicy selects on APP_LABEL)."""
    return {APP_LABEL: APP_NAME, PART_OF_LABEL: PART_OF, MODEL_LABEL: model_name}


def restricted_container_context(run_as_user: int | None = None) -> dict[str, Any]:
    """Container securityContext: no privilege escalation, no capabilities, read-only root."""
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": True,
    }
    if run_as_user is not None:
        context["runAsUser"] = run_as_user
    return context


def prepare_container_context(run_as_group: int) -> dict[str, Any]:
    """The prepare step runs as uid 0 *without any capability*: it can only do what the owner of a
    root-owned directory may do (create entries, hand them to a group it belongs to, set the mode),
    never override permissions or change owners. Its primary group is the sync group.
    """
    return {
        **restricted_container_context(),
        "runAsUser": 0,
        "runAsGroup": run_as_group,
        "runAsNonRoot": False,
    }


def pod_security_context(run_as_user: int) -> dict[str, Any]:
    """Pod securityContext: non-root uid/gid, RuntimeDefault seccomp. No fsGroup: for a
    ReadWriteMany CSI or NFS volume the kubelet does not apply it, and where it would, it walks the
    whole multi-TB volume on every mount. The prepare step hands one revision directory to the group.
    """
    return {
        "runAsNonRoot": True,
        "runAsUser": run_as_user,
        "runAsGroup": run_as_user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def sync_env(has_token: bool, secret_name: str | None) -> list[dict[str, Any]]:
    """Environment of the sync container; the token comes from a Secret, never a literal."""
    env: list[dict[str, Any]] = [
        {"name": "HOME", "value": TMP_MOUNT},
        {"name": "HF_HOME", "value": f"{TMP_MOUNT}/hf-home"},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
        {"name": "HF_HUB_DOWNLOAD_TIMEOUT", "value": "60"},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
    ]
    if has_token and secret_name is not None:
        env.append(
            {"name": HF_TOKEN_KEY, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": HF_TOKEN_KEY}}}
        )
    return env


def egress_policy_spec() -> dict[str, Any]:
    """NetworkPolicy spec for every sync pod: no ingress; egress only DNS (kube-dns) and HTTPS.

    HTTPS reaches the Hugging Face Hub and its CDN (and PyPI for the pinned huggingface_hub), whose
    addresses are not stable, hence 0.0.0.0/0 on 443 only. The file system needs no rule here: FSx
    (TCP 988, 1018-1023), EFS and NFS (2049) are mounted by the node's kernel client, outside the
    pod's network namespace, and are governed by the model-store security group instead.
    """
    return {
        "podSelector": {"matchLabels": {APP_LABEL: APP_NAME}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [],
        "egress": [
            {
                "to": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    }
                ],
                "ports": [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}],
            },
            {
                "to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}],
                "ports": [{"protocol": "TCP", "port": HTTPS_PORT}],
            },
        ],
    }
