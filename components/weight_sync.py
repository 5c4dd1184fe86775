"""WeightSync: one Kubernetes Job per served model that puts its pinned revision on the model store.

Builds, in the serving namespace and through the explicit Kubernetes provider:
- `<name>-hf-token`: a Secret holding `HF_TOKEN` (only when a token is given; gated models need one),
- `<name>-script`: a ConfigMap shipping components/scripts/sync_weights.py,
- `<name>-egress`: a NetworkPolicy for every sync pod: no ingress, egress DNS + HTTPS only,
- `<name>-<model>`: a batch/v1 Job per model, named `<model>-sync-<hash of model id and revision>`.

Serving pods never download: they mount the store read-only and wait for the revision's `.ready`
marker (components/model_paths.py), which the Job writes last, after verifying every shard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_kubernetes as kubernetes

from components.model_paths import DEFAULT_MOUNT_PATH
from components.weight_sync_plan import (
    APP_LABEL,
    APP_NAME,
    DEFAULT_NODE_SELECTOR,
    HF_TOKEN_KEY,
    PART_OF,
    PART_OF_LABEL,
    SCRIPT_FILE,
    SCRIPT_MOUNT,
    SKIP_AWAIT_ANNOTATION,
    TMP_MOUNT,
    SyncJobPlan,
    SyncModel,
    egress_policy_spec,
    plan_sync_jobs,
    pod_labels,
    pod_security_context,
    prepare_container_context,
    restricted_container_context,
    sync_env,
    sync_facts,
)

if TYPE_CHECKING:
    from planning import ServedModel

SCRIPT_SOURCE = Path(__file__).resolve().parent / "scripts" / SCRIPT_FILE
STORE_VOLUME = "model-store"
SCRIPT_VOLUME = "script"
TMP_VOLUME = "tmp"
SCRIPT_MODE = 0o555


@dataclass(frozen=True)
class WeightSyncArgs:
    """Inputs of WeightSync."""

    models: Sequence[ServedModel]
    """The served models (planning.StackPlan.models); one Job each, sorted by name. Each Job fetches
    `settings.model_id` at `settings.revision`; its deadline is sized from `plan.model_weight_bytes`."""

    namespace: pulumi.Input[str]
    """Serving namespace: the Jobs, Secret, ConfigMap and NetworkPolicy go here, next to the claim."""

    provider: kubernetes.Provider
    """Explicit Kubernetes provider for every object (never the ambient kubeconfig)."""

    claim_name: pulumi.Input[str]
    """Writable (ReadWriteMany) claim on the model store: ModelStore.sync_claim_name."""

    mount_path: str = DEFAULT_MOUNT_PATH
    """Where the claim is mounted; must equal the serving pods' mount path (ModelStoreSettings.mount_path).
    Defaults to /models."""

    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token (a Pulumi secret, config key `hfToken`), stored as Secret key HF_TOKEN.
    None: anonymous downloads, enough for ungated models or weights already in the linked bucket."""

    image: str | None = None
    """Image of the sync pods, pinned by tag or digest. Defaults to the data file's python slim image
    (model_store.json weightSync.image); it must provide python3 (and pip unless it ships huggingface_hub)."""

    node_selector: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_NODE_SELECTOR))
    """Nodes the sync pods run on. Defaults to the system node group (`vllm-serving/pool: system`):
    downloads never occupy a GPU node, and the pods carry no GPU toleration. Use {} on clusters
    without that label (platform existing)."""

    depends_on: Sequence[pulumi.Resource] = ()
    """Resources every Job waits for (ModelStore passes its claim, S3 link and CSI driver). A
    component's own depends_on does not reach its children's registrations, hence this input."""

    run_as_user: int | None = None
    """Non-root uid (and gid) the download runs as. Defaults to 1000. On an existing NFS export with
    root squash, the revision directories must already be writable by this uid."""


class WeightSync(pulumi.ComponentResource):
    """One-shot, idempotent weight downloads onto the shared model store, one Job per model revision.

    Secure defaults: non-root download with no capabilities, read-only root filesystem, seccomp
    RuntimeDefault, no service account token, egress limited to DNS and HTTPS, the token only in a
    Secret. `pulumi up` does not wait for the download (`pulumi.com/skipAwait`): a 400B model takes
    longer than any sensible update, and serving pods wait for the `.ready` marker instead. Check
    progress with `kubectl -n <namespace> get jobs -l app.kubernetes.io/name=weight-sync`.

    A new revision makes a new Job (the name hashes model id and revision); the old revision's
    directory stays until removed by hand, so a rollback needs no download.
    """

    job_names: pulumi.Output[dict[str, str]]
    """Model name -> Job name."""

    markers: pulumi.Output[dict[str, str]]
    """Model name -> absolute path of the `.ready` marker its serving pods wait for."""

    secret_name: pulumi.Output[str | None]
    """Name of the Secret holding HF_TOKEN (None without a token)."""

    def __init__(self, name: str, args: WeightSyncArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:weight_sync:WeightSync", name, None, opts)

        # ---- validate + decide
        facts = sync_facts()
        run_as = facts["runAsUser"] if args.run_as_user is None else args.run_as_user
        if run_as <= 0:
            raise ValueError(f"{name}: run_as_user must be a non-root uid (> 0), got {run_as}")
        models = [
            SyncModel(
                name=m.settings.name,
                model_id=m.settings.model_id,
                revision=m.settings.revision,
                weight_bytes=int(m.plan.model_weight_bytes),
            )
            for m in args.models
        ]
        plans = plan_sync_jobs(models, args.mount_path, run_as)
        image = args.image or facts["image"]

        # ---- children
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        secret_name: str | None = None
        prerequisites: list[pulumi.Resource] = list(args.depends_on)
        if args.hf_token is not None:
            secret_name = f"{name}-hf-token"
            secret = kubernetes.core.v1.Secret(
                f"{name}-hf-token",
                metadata={"name": secret_name, "namespace": args.namespace, "labels": self._labels()},
                type="Opaque",
                string_data={HF_TOKEN_KEY: pulumi.Output.secret(args.hf_token)},
                opts=child,
            )
            prerequisites.append(secret)
        script = kubernetes.core.v1.ConfigMap(
            f"{name}-script",
            metadata={"name": f"{name}-script", "namespace": args.namespace, "labels": self._labels()},
            data={SCRIPT_FILE: SCRIPT_SOURCE.read_text()},
            opts=child,
        )
        prerequisites.append(script)
        kubernetes.networking.v1.NetworkPolicy(
            f"{name}-egress",
            metadata={"name": f"{name}-egress", "namespace": args.namespace, "labels": self._labels()},
            spec=egress_policy_spec(),
            opts=child,
        )
        for plan in plans:
            self._job(name, plan, args, image, run_as, secret_name, script, prerequisites)

        # ---- outputs
        self.job_names = pulumi.Output.from_input({p.model.name: p.job_name for p in plans})
        self.markers = pulumi.Output.from_input({p.model.name: p.marker for p in plans})
        self.secret_name = pulumi.Output.from_input(secret_name)
        self.register_outputs(
            {"jobNames": self.job_names, "markers": self.markers, "secretName": self.secret_name}
        )

    @staticmethod
    def _labels() -> dict[str, str]:
        return {APP_LABEL: APP_NAME, PART_OF_LABEL: PART_OF}

    def _job(
        self,
        name: str,
        plan: SyncJobPlan,
        args: WeightSyncArgs,
        image: str,
        run_as: int,
        secret_name: str | None,
        script: kubernetes.core.v1.ConfigMap,
        prerequisites: list[pulumi.Resource],
    ) -> kubernetes.batch.v1.Job:
        facts = sync_facts()
        labels = pod_labels(plan.model.name)
        mounts = [
            {"name": STORE_VOLUME, "mountPath": args.mount_path},
            {"name": SCRIPT_VOLUME, "mountPath": SCRIPT_MOUNT, "readOnly": True},
            {"name": TMP_VOLUME, "mountPath": TMP_MOUNT},
        ]
        pod_spec: dict[str, Any] = {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "securityContext": pod_security_context(run_as),
            "initContainers": [
                {
                    "name": "prepare",
                    "image": image,
                    "command": list(plan.prepare_command),
                    "securityContext": prepare_container_context(run_as),
                    "resources": {
                        "requests": {"cpu": "100m", "memory": "128Mi"},
                        "limits": {"memory": "256Mi"},
                    },
                    "volumeMounts": mounts,
                }
            ],
            "containers": [
                {
                    "name": "sync",
                    "image": image,
                    "command": list(plan.sync_command),
                    "env": sync_env(secret_name is not None, secret_name),
                    "securityContext": restricted_container_context(),
                    "resources": {
                        "requests": {
                            "cpu": facts["cpu"],
                            "memory": facts["memory"],
                            "ephemeral-storage": facts["ephemeralStorageRequest"],
                        },
                        "limits": {
                            "memory": facts["memory"],
                            "ephemeral-storage": facts["ephemeralStorageLimit"],
                        },
                    },
                    "volumeMounts": mounts,
                }
            ],
            "volumes": [
                {"name": STORE_VOLUME, "persistentVolumeClaim": {"claimName": args.claim_name}},
                {
                    "name": SCRIPT_VOLUME,
                    "configMap": {"name": script.metadata.name, "defaultMode": SCRIPT_MODE},
                },
                {"name": TMP_VOLUME, "emptyDir": {"sizeLimit": facts["tmpSizeLimit"]}},
            ],
        }
        if args.node_selector:
            pod_spec["nodeSelector"] = dict(sorted(args.node_selector.items()))
        return kubernetes.batch.v1.Job(
            f"{name}-{plan.model.name}",
            metadata={
                "name": plan.job_name,
                "namespace": args.namespace,
                "labels": labels,
                "annotations": {SKIP_AWAIT_ANNOTATION: "true"},
            },
            spec={
                "backoffLimit": facts["backoffLimit"],
                "activeDeadlineSeconds": plan.deadline_seconds,
                "ttlSecondsAfterFinished": facts["ttlSecondsAfterFinished"],
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=prerequisites),
        )
