"""ModelStore: the shared model filesystem every replica reads its weights from, and its sync Jobs.

Builds, by `ModelStoreSettings.kind`: fsx-lustre (default on eks) - a KMS key, unless `s3Uri`
names one a private TLS-only SSE-KMS bucket, an FSx for Lustre PERSISTENT_2 file system sized by
the planner and its root linked to the S3 prefix; efs - a KMS key and an encrypted, elastic EFS
with a mount target per subnet; existing - a claim as it is, or volumes over an NFS export. Then
the CSI driver add-on (FSx / EFS) with a describe-only Pod Identity role, a read-only serving claim
and a writable sync claim on their own static volumes, and WeightSync with one Job per model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as kubernetes
from pydantic.alias_generators import to_camel

from components import model_store_plan as decide
from components import model_store_specs as specs
from components.iam_policies import pod_identity_trust_policy
from components.storage_naming import bucket_name, claim_name, efs_creation_token, kms_alias_name, volume_name
from components.weight_sync import WeightSync, WeightSyncArgs
from components.weight_sync_plan import APP_LABEL, PART_OF, PART_OF_LABEL, decide_sync_node_selector

if TYPE_CHECKING:
    from capacity import StoragePlan
    from planning import ServedModel
    from settings import ModelStoreSettings

ROLE_TAG = "vllm-serving/role"
ROLE_VALUE = "model-store"
APP_VALUE = "model-store"
OUTPUT_ATTRIBUTES = (
    "kind", "serving_claim_name", "sync_claim_name", "mount_path", "file_system_id", "dns_name", "mount_name",
    "bucket_name", "s3_uri", "kms_key_arn", "sync_job_names", "ready_markers",
)  # fmt: skip
"""Typed output attributes, registered as camelCase outputs (`serving_claim_name` -> servingClaimName)."""
BUCKET_RESOURCES: dict[str, type[pulumi.CustomResource]] = {
    "ownership": aws.s3.BucketOwnershipControls,
    "public-access": aws.s3.BucketPublicAccessBlock,
    "versioning": aws.s3.BucketVersioning,
    "encryption": aws.s3.BucketServerSideEncryptionConfiguration,
    "lifecycle": aws.s3.BucketLifecycleConfiguration,
}
"""The bucket's configuration resources by role (their inputs: model_store_specs.bucket_configuration)."""


@dataclass(frozen=True)
class ModelStoreArgs:
    """Inputs of ModelStore."""

    settings: ModelStoreSettings
    """The `modelStore` settings: kind, s3Uri, existing claim / NFS export, mountPath."""

    storage: StoragePlan
    """The planner's storage plan: `storage_capacity_gib` and `throughput_per_tib_mbps` (FSx
    PERSISTENT_2 size and tier meeting the cold-start target; also the volumes' nominal capacity),
    `total_weight_bytes` (nominal capacity of EFS / NFS volumes)."""

    namespace: pulumi.Input[str]
    """Serving namespace: both claims and the sync Jobs live here (it must exist)."""

    provider: kubernetes.Provider
    """Explicit Kubernetes provider for every in-cluster object."""

    cluster_name: pulumi.Input[str] | None = None
    """EKS cluster for the CSI driver add-on and its Pod Identity associations. Required for kinds
    fsx-lustre and efs (the cluster needs the eks-pod-identity-agent add-on); unused for existing."""

    subnet_id: pulumi.Input[str] | None = None
    """fsx-lustre: the one subnet of the file system, in the GPU pool's AZ (cross-AZ reads cost
    latency and transfer). Pass the first EFA pool's subnet, else the first private subnet."""

    subnet_ids: Sequence[pulumi.Input[str]] = ()
    """efs: every private subnet the nodes use; one mount target each."""

    security_group_ids: Sequence[pulumi.Input[str]] = ()
    """The model-store security group (PrivateNetwork). It must admit from the nodes' group TCP 988
    and 1018-1023 (FSx, also from itself) or TCP 2049 (EFS)."""

    models: Sequence[ServedModel] = ()
    """Served models whose weights the sync Jobs put on the store (none: no Jobs)."""

    hf_token: pulumi.Input[str] | None = None
    """Hugging Face token (Pulumi secret) for gated models; None for anonymous downloads."""

    sync_image: str | None = None
    """Image of the sync Jobs; defaults to the data file's pinned python slim image."""

    sync_node_selector: Mapping[str, str] | None = None
    """Where the sync Jobs run. Defaults to the system node group (`vllm-serving/pool: system`) when
    `cluster_name` is set (EKS), and to no selector otherwise (a cluster this stack did not build)."""

    tags: Mapping[str, str] = field(default_factory=dict)
    """Extra AWS tags; `vllm-serving/role: model-store` and `Name` are always set."""


class ModelStore(pulumi.ComponentResource):
    """Weights on a shared filesystem next to the GPUs before any replica starts.

    Use fsx-lustre for large models and many replicas (throughput scales with capacity x tier; the
    planner picks the smallest tier that meets `coldStartTargetSeconds`), efs for small models
    across AZs, existing for a cluster you run. Secure defaults: customer-managed KMS key with
    rotation, TLS-only bucket and EFS, all public access blocked, no CIDR in the data path, the CSI
    driver with describe-only permissions (static provisioning: it never creates or deletes file
    systems), read-only volumes for serving. The file system, bucket and key are `protect=True`:
    deleting the stack leaves them until unprotected on purpose.
    """

    kind: pulumi.Output[str]
    """fsx-lustre | efs | existing."""
    serving_claim_name: pulumi.Output[str]
    """ReadOnlyMany claim serving pods mount (read-only) at mount_path."""
    sync_claim_name: pulumi.Output[str]
    """ReadWriteMany claim only the sync Jobs mount."""
    mount_path: pulumi.Output[str]
    """Mount path in every pod; weights at <mount_path>/<model name>/<revision>."""
    file_system_id: pulumi.Output[str | None]
    """FSx or EFS file system id (None for existing)."""
    dns_name: pulumi.Output[str | None]
    """File system DNS name (None for existing)."""
    mount_name: pulumi.Output[str | None]
    """FSx Lustre mount name (None otherwise)."""
    bucket_name: pulumi.Output[str | None]
    """Linked bucket: the stack's own or the one of s3Uri (None unless fsx-lustre)."""
    s3_uri: pulumi.Output[str | None]
    """Linked S3 prefix, `s3://bucket/prefix/` (None unless fsx-lustre)."""
    kms_key_arn: pulumi.Output[str | None]
    """The store's KMS key (None for existing)."""
    sync_job_names: pulumi.Output[dict[str, str]]
    """Model name -> weight-sync Job name."""
    ready_markers: pulumi.Output[dict[str, str]]
    """Model name -> `.ready` marker path serving pods wait for."""

    def __init__(self, name: str, args: ModelStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("vllm-serving:model_store:ModelStore", name, None, opts)
        settings, storage = args.settings, args.storage
        kind: decide.StoreKind = settings.kind

        # ---- validate
        decide.validate_request(
            decide.store_request(
                settings,
                storage,
                has_cluster_name=args.cluster_name is not None,
                has_subnet_id=args.subnet_id is not None,
                subnet_count=len(args.subnet_ids),
                security_group_count=len(args.security_group_ids),
            )
        )

        # ---- decide
        project, stack = pulumi.get_project(), pulumi.get_stack()
        on_eks = args.cluster_name is not None
        tags = {**dict(sorted(args.tags.items())), "Name": f"{stack}-{name}", ROLE_TAG: ROLE_VALUE}
        capacity = decide.quantity_gib(
            decide.volume_capacity_gib(storage.storage_capacity_gib, storage.total_weight_bytes)
        )
        self._child = pulumi.ResourceOptions(parent=self)
        self._protected = pulumi.ResourceOptions(parent=self, protect=True)
        self._k8s = pulumi.ResourceOptions(parent=self, provider=args.provider)

        # ---- children: the file system
        file_system_id: pulumi.Output[Any] = pulumi.Output.from_input(None)
        dns_name: pulumi.Output[Any] = pulumi.Output.from_input(None)
        mount_name: pulumi.Output[Any] = pulumi.Output.from_input(None)
        linked: decide.S3Location | None = None
        key: aws.kms.Key | None = None
        ready: list[pulumi.Resource] = []
        if kind in ("fsx-lustre", "efs"):
            key = self._key(name, kind, project, stack, tags)
        if kind == "fsx-lustre" and key is not None:
            physical = bucket_name(project, stack, name)
            own_bucket = self._bucket(name, physical, key, tags) if settings.s3_uri is None else None
            linked = decide.decide_s3_location(settings.s3_uri, physical)
            fsx = self._lustre(name, args, key, tags)
            association = aws.fsx.DataRepositoryAssociation(
                f"{name}-s3-link",
                file_system_id=fsx.id,
                **specs.association_args(linked.uri),
                tags=tags,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[own_bucket] if own_bucket else []),
            )
            if own_bucket is not None:
                aws.kms.KeyPolicy(
                    f"{name}-key-policy",
                    key_id=key.id,
                    policy=pulumi.Output.all(key.arn, fsx.id).apply(
                        lambda values: json.dumps(specs.key_policy(values[0], values[1], linked.bucket))
                    ),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[association]),
                )
            file_system_id, dns_name, mount_name = fsx.id, fsx.dns_name, fsx.mount_name
            ready.append(association)
        elif kind == "efs" and key is not None:
            efs, targets = self._efs(name, args, efs_creation_token(project, stack, name), key, tags)
            file_system_id, dns_name = efs.id, efs.dns_name
            ready += targets
        if kind != "existing":
            assert args.cluster_name is not None  # validated above
            ready.append(self._csi_driver(name, kind, args.cluster_name, tags))

        # ---- children: volumes and claims
        if kind == "existing" and settings.existing_claim_name is not None:
            serving_claim: pulumi.Output[str] = pulumi.Output.from_input(settings.existing_claim_name)
            sync_claim: pulumi.Output[str] = serving_claim
            sync_ready: list[pulumi.Resource] = []
        else:
            claims = {}
            for plan in decide.decide_claims(kind):
                source = self._source(kind, plan, settings, (file_system_id, dns_name, mount_name))
                claims[plan.role] = self._claim(name, plan, args, capacity, source, ready)
            serving_claim, sync_claim = claims["serving"].metadata.name, claims["sync"].metadata.name
            sync_ready = [claims["sync"]]

        # ---- children: weight sync
        sync = WeightSync(
            f"{name}-sync",
            WeightSyncArgs(
                models=args.models,
                namespace=args.namespace,
                provider=args.provider,
                claim_name=sync_claim,
                mount_path=settings.mount_path,
                hf_token=args.hf_token,
                image=args.sync_image,
                node_selector=decide_sync_node_selector(args.sync_node_selector, on_eks),
                depends_on=[*ready, *sync_ready],
            ),
            opts=self._child,
        )

        # ---- outputs
        self.kind = pulumi.Output.from_input(kind)
        self.serving_claim_name = serving_claim
        self.sync_claim_name = sync_claim
        self.mount_path = pulumi.Output.from_input(settings.mount_path)
        self.file_system_id = file_system_id
        self.dns_name = dns_name
        self.mount_name = mount_name
        self.bucket_name = pulumi.Output.from_input(linked.bucket if linked else None)
        self.s3_uri = pulumi.Output.from_input(linked.uri if linked else None)
        self.kms_key_arn = key.arn if key is not None else pulumi.Output.from_input(None)
        self.sync_job_names = sync.job_names
        self.ready_markers = sync.markers
        self.register_outputs({to_camel(attr): getattr(self, attr) for attr in OUTPUT_ATTRIBUTES})

    # ------------------------------------------------------------------ AWS children

    def _key(self, name: str, kind: str, project: str, stack: str, tags: dict[str, str]) -> aws.kms.Key:
        key = aws.kms.Key(f"{name}-key", **specs.key_args(stack, name, kind), tags=tags, opts=self._protected)
        alias = kms_alias_name(project, stack, name)
        aws.kms.Alias(f"{name}-key-alias", name=alias, target_key_id=key.key_id, opts=self._child)
        return key

    def _bucket(self, name: str, physical: str, key: aws.kms.Key, tags: dict[str, str]) -> aws.s3.Bucket:
        bucket = aws.s3.Bucket(
            f"{name}-bucket", bucket=physical, force_destroy=False, tags=tags, opts=self._protected
        )
        settings = {
            role: BUCKET_RESOURCES[role](
                f"{name}-bucket-{role}", bucket=bucket.id, **inputs, opts=self._child
            )
            for role, inputs in specs.bucket_configuration(key.arn).items()
        }
        aws.s3.BucketPolicy(
            f"{name}-bucket-policy",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(specs.bucket_tls_policy(arn))),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[settings["public-access"]]),
        )
        return bucket

    def _lustre(
        self, name: str, args: ModelStoreArgs, key: aws.kms.Key, tags: dict[str, str]
    ) -> aws.fsx.LustreFileSystem:
        storage = args.storage
        assert storage.storage_capacity_gib is not None and storage.throughput_per_tib_mbps is not None
        return aws.fsx.LustreFileSystem(
            f"{name}-lustre",
            **specs.lustre_args(storage.storage_capacity_gib, storage.throughput_per_tib_mbps),
            subnet_ids=args.subnet_id,  # one subnet: pulumi-aws 7 types it as a single id
            security_group_ids=list(args.security_group_ids),
            kms_key_id=key.arn,
            tags=tags,
            opts=self._protected,
        )

    def _efs(
        self, name: str, args: ModelStoreArgs, token: str, key: aws.kms.Key, tags: dict[str, str]
    ) -> tuple[aws.efs.FileSystem, list[pulumi.Resource]]:
        efs = aws.efs.FileSystem(
            f"{name}-efs", **specs.efs_args(token), kms_key_id=key.arn, tags=tags, opts=self._protected
        )
        aws.efs.FileSystemPolicy(
            f"{name}-efs-policy",
            file_system_id=efs.id,
            policy=efs.arn.apply(lambda arn: json.dumps(specs.efs_tls_policy(arn))),
            opts=self._child,
        )
        targets: list[pulumi.Resource] = [
            aws.efs.MountTarget(
                f"{name}-mount-{index}",
                file_system_id=efs.id,
                subnet_id=subnet,
                security_groups=list(args.security_group_ids),
                opts=self._child,
            )
            for index, subnet in enumerate(args.subnet_ids)
        ]
        return efs, targets

    def _csi_driver(
        self, name: str, kind: decide.StoreKind, cluster_name: pulumi.Input[str], tags: dict[str, str]
    ) -> aws.eks.Addon:
        facts = decide.csi_driver_facts(kind)
        role = aws.iam.Role(
            f"{name}-csi-role",
            description=f"{facts['addonName']} (static provisioning: describe only)",
            assume_role_policy=pod_identity_trust_policy(),
            tags=tags,
            opts=self._child,
        )
        aws.iam.RolePolicy(
            f"{name}-csi-policy",
            role=role.id,
            policy=json.dumps(specs.csi_driver_policy(kind)),
            opts=self._child,
        )
        associations = [
            aws.eks.PodIdentityAssociation(
                f"{name}-csi-{account}",
                cluster_name=cluster_name,
                namespace=facts["namespace"],
                service_account=account,
                role_arn=role.arn,
                tags=tags,
                opts=self._child,
            )
            for account in sorted(facts["serviceAccounts"])
        ]
        return aws.eks.Addon(
            f"{name}-csi-driver",
            cluster_name=cluster_name,
            **specs.addon_args(kind),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=associations),
        )

    # ------------------------------------------------------------------ Kubernetes children

    @staticmethod
    def _source(
        kind: decide.StoreKind, plan: decide.ClaimPlan, settings: ModelStoreSettings, fs: tuple[Any, Any, Any]
    ) -> tuple[str, Any]:
        """(`nfs` | `csi`, the volume source) of one static volume."""
        if kind == "existing":
            return "nfs", decide.nfs_volume_source(settings.nfs_server, settings.nfs_path, plan.read_only)
        source = pulumi.Output.all(*fs).apply(
            lambda v: decide.csi_volume_source(kind, v[0], plan.read_only, dns_name=v[1], mount_name=v[2])
        )
        return "csi", source

    def _claim(
        self,
        name: str,
        plan: decide.ClaimPlan,
        args: ModelStoreArgs,
        capacity: str,
        source: tuple[str, Any],
        ready: list[pulumi.Resource],
    ) -> kubernetes.core.v1.PersistentVolumeClaim:
        settings, kind = args.settings, args.settings.kind
        labels = {APP_LABEL: APP_VALUE, PART_OF_LABEL: PART_OF}
        claim = claim_name(name, plan.role)
        options = decide.mount_options(kind, is_nfs=settings.nfs_server is not None)
        spec = decide.static_volume_spec(plan, capacity, options, args.namespace, claim)
        spec[source[0]] = source[1]
        volume = kubernetes.core.v1.PersistentVolume(
            f"{name}-{plan.role}-volume",
            metadata={
                "name": pulumi.Output.from_input(args.namespace).apply(
                    lambda ns: volume_name(ns, name, plan.role)
                ),
                "labels": labels,
            },
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=ready),
        )
        return kubernetes.core.v1.PersistentVolumeClaim(
            f"{name}-{plan.role}-claim",
            metadata={"name": claim, "namespace": args.namespace, "labels": labels},
            spec=decide.claim_spec(plan, capacity, volume.metadata.name),
            opts=self._k8s,
        )
