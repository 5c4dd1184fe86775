"""ModelStore: the shared model filesystem every replica reads its weights from, and its sync Jobs.

Builds, by `ModelStoreSettings.kind`:
- fsx-lustre (default on eks): a KMS key (rotation on) and alias; unless `s3Uri` names an existing
  bucket, a versioned, SSE-KMS, fully private, TLS-only S3 bucket with a lifecycle; an FSx for
  Lustre PERSISTENT_2 file system (LZ4, the planned capacity and per-TiB throughput) in one subnet;
  a data repository association of the file system root with the S3 prefix (auto import and
  export of NEW/CHANGED/DELETED); the key policy letting the association use the key through S3.
- efs: a KMS key; an encrypted EFS file system with elastic throughput (never bursting) and a
  TLS-only file system policy; one mount target per private subnet.
- existing: a claim used as it is, or static volumes over an NFS export.
For fsx-lustre and efs also the CSI driver as an EKS managed add-on with a describe-only Pod
Identity role. Then two static PersistentVolumes over the same file system, each pre-bound to its
claim in the serving namespace (a ReadOnlyMany claim for serving pods, a ReadWriteMany claim for
the sync Jobs), and a WeightSync child with one Job per model. Stateful resources are protected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as kubernetes

from components import model_store_plan as decide
from components.storage_naming import bucket_name, claim_name, efs_creation_token, kms_alias_name, volume_name
from components.weight_sync import DEFAULT_NODE_SELECTOR, WeightSync, WeightSyncArgs
from components.weight_sync_plan import APP_LABEL, PART_OF, PART_OF_LABEL

if TYPE_CHECKING:
    from capacity import StoragePlan
    from planning import ServedModel
    from settings import ModelStoreSettings

ROLE_TAG = "vllm-serving/role"
ROLE_VALUE = "model-store"
APP_VALUE = "model-store"


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


def decide_sync_node_selector(requested: Mapping[str, str] | None, on_eks: bool) -> dict[str, str]:
    """The sync Jobs' node selector: as requested, else the system pool on EKS, else none."""
    if requested is not None:
        return dict(requested)
    return dict(DEFAULT_NODE_SELECTOR) if on_eks else {}


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
            decide.StoreRequest(
                kind=kind,
                s3_uri=settings.s3_uri,
                has_cluster_name=args.cluster_name is not None,
                has_subnet_id=args.subnet_id is not None,
                subnet_count=len(args.subnet_ids),
                security_group_count=len(args.security_group_ids),
                existing_claim_name=settings.existing_claim_name,
                nfs_server=settings.nfs_server,
                nfs_path=settings.nfs_path,
                mount_path=settings.mount_path,
                storage_capacity_gib=storage.storage_capacity_gib,
                throughput_per_tib_mbps=storage.throughput_per_tib_mbps,
            )
        )

        # ---- decide
        project, stack = pulumi.get_project(), pulumi.get_stack()
        tags = {**dict(sorted(args.tags.items())), "Name": f"{stack}-{name}", ROLE_TAG: ROLE_VALUE}
        capacity = decide.quantity_gib(
            decide.volume_capacity_gib(storage.storage_capacity_gib, storage.total_weight_bytes)
        )
        self._child = pulumi.ResourceOptions(parent=self)
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
            own_bucket = None
            if settings.s3_uri is None:
                own_bucket = self._bucket(name, bucket_name(project, stack, name), key, tags)
            linked = decide.decide_s3_location(settings.s3_uri, bucket_name(project, stack, name))
            fsx = self._lustre(name, args, storage, key, tags)
            association = self._association(name, fsx, linked, own_bucket, tags)
            if own_bucket is not None:
                aws.kms.KeyPolicy(
                    f"{name}-key-policy",
                    key_id=key.id,
                    policy=pulumi.Output.all(key.arn, fsx.id).apply(
                        lambda values: json.dumps(decide.key_policy(values[0], values[1], linked.bucket))
                    ),
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[association]),
                )
            file_system_id, dns_name, mount_name = fsx.id, fsx.dns_name, fsx.mount_name
            ready.append(association)
        elif kind == "efs" and key is not None:
            efs, targets = self._efs(name, args, project, stack, key, tags)
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
                claims[plan.role] = self._volume(
                    name, kind, plan, args, capacity, file_system_id, dns_name, mount_name, ready
                )
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
                node_selector=decide_sync_node_selector(
                    args.sync_node_selector, args.cluster_name is not None
                ),
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*ready, *sync_ready]),
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
        self.register_outputs(
            {
                "kind": self.kind,
                "servingClaimName": self.serving_claim_name,
                "syncClaimName": self.sync_claim_name,
                "mountPath": self.mount_path,
                "fileSystemId": self.file_system_id,
                "dnsName": self.dns_name,
                "mountName": self.mount_name,
                "bucketName": self.bucket_name,
                "s3Uri": self.s3_uri,
                "kmsKeyArn": self.kms_key_arn,
                "syncJobNames": self.sync_job_names,
                "readyMarkers": self.ready_markers,
            }
        )

    # ------------------------------------------------------------------ AWS children

    def _key(self, name: str, kind: str, project: str, stack: str, tags: dict[str, str]) -> aws.kms.Key:
        key = aws.kms.Key(
            f"{name}-key",
            description=f"vllm-serving {stack}: model weights ({kind} and its S3 bucket)",
            enable_key_rotation=True,
            deletion_window_in_days=decide.store_facts()["kms"]["deletionWindowInDays"],
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        aws.kms.Alias(
            f"{name}-key-alias",
            name=kms_alias_name(project, stack, name),
            target_key_id=key.key_id,
            opts=self._child,
        )
        return key

    def _bucket(self, name: str, physical: str, key: aws.kms.Key, tags: dict[str, str]) -> aws.s3.Bucket:
        facts = decide.store_facts()["bucket"]
        bucket = aws.s3.Bucket(
            f"{name}-bucket",
            bucket=physical,
            force_destroy=False,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        aws.s3.BucketOwnershipControls(
            f"{name}-bucket-ownership",
            bucket=bucket.id,
            rule={"object_ownership": "BucketOwnerEnforced"},
            opts=self._child,
        )
        block = aws.s3.BucketPublicAccessBlock(
            f"{name}-bucket-public-access",
            bucket=bucket.id,
            block_public_acls=True,
            block_public_policy=True,
            ignore_public_acls=True,
            restrict_public_buckets=True,
            opts=self._child,
        )
        aws.s3.BucketVersioning(
            f"{name}-bucket-versioning",
            bucket=bucket.id,
            versioning_configuration={"status": "Enabled"},
            opts=self._child,
        )
        aws.s3.BucketServerSideEncryptionConfiguration(
            f"{name}-bucket-encryption",
            bucket=bucket.id,
            rules=[
                {
                    "apply_server_side_encryption_by_default": {
                        "sse_algorithm": "aws:kms",
                        "kms_master_key_id": key.arn,
                    },
                    "bucket_key_enabled": True,
                }
            ],
            opts=self._child,
        )
        aws.s3.BucketLifecycleConfiguration(
            f"{name}-bucket-lifecycle",
            bucket=bucket.id,
            rules=[
                {
                    "id": "expire-noncurrent-weights",
                    "status": "Enabled",
                    "filter": {},
                    "noncurrent_version_expiration": {
                        "noncurrent_days": facts["noncurrentVersionExpirationDays"]
                    },
                    "abort_incomplete_multipart_upload": {
                        "days_after_initiation": facts["abortIncompleteMultipartUploadDays"]
                    },
                }
            ],
            opts=self._child,
        )
        aws.s3.BucketPolicy(
            f"{name}-bucket-policy",
            bucket=bucket.id,
            policy=bucket.arn.apply(lambda arn: json.dumps(decide.bucket_tls_policy(arn))),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[block]),
        )
        return bucket

    def _lustre(
        self, name: str, args: ModelStoreArgs, storage: StoragePlan, key: aws.kms.Key, tags: dict[str, str]
    ) -> aws.fsx.LustreFileSystem:
        facts = decide.store_facts()["fsxLustre"]
        return aws.fsx.LustreFileSystem(
            f"{name}-lustre",
            deployment_type=facts["deploymentType"],
            storage_type=facts["storageType"],
            file_system_type_version=facts["fileSystemTypeVersion"],
            storage_capacity=storage.storage_capacity_gib,
            per_unit_storage_throughput=storage.throughput_per_tib_mbps,
            data_compression_type=facts["dataCompressionType"],
            subnet_ids=args.subnet_id,  # one subnet: pulumi-aws 7 types it as a single id
            security_group_ids=list(args.security_group_ids),
            kms_key_id=key.arn,
            automatic_backup_retention_days=facts["automaticBackupRetentionDays"],
            weekly_maintenance_start_time=facts["weeklyMaintenanceStartTime"],
            log_configuration={"level": facts["logLevel"]},
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )

    def _association(
        self,
        name: str,
        fsx: aws.fsx.LustreFileSystem,
        linked: decide.S3Location,
        own_bucket: aws.s3.Bucket | None,
        tags: dict[str, str],
    ) -> aws.fsx.DataRepositoryAssociation:
        facts = decide.store_facts()["fsxLustre"]
        return aws.fsx.DataRepositoryAssociation(
            f"{name}-s3-link",
            file_system_id=fsx.id,
            file_system_path=facts["fileSystemPath"],
            data_repository_path=linked.uri,
            batch_import_meta_data_on_create=True,
            imported_file_chunk_size=facts["importedFileChunkSizeMib"],
            delete_data_in_filesystem=False,
            s3={
                "auto_import_policy": {"events": list(facts["autoImportEvents"])},
                "auto_export_policy": {"events": list(facts["autoExportEvents"])},
            },
            tags=tags,
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[own_bucket] if own_bucket is not None else []
            ),
        )

    def _efs(
        self,
        name: str,
        args: ModelStoreArgs,
        project: str,
        stack: str,
        key: aws.kms.Key,
        tags: dict[str, str],
    ) -> tuple[aws.efs.FileSystem, list[pulumi.Resource]]:
        facts = decide.store_facts()["efs"]
        efs = aws.efs.FileSystem(
            f"{name}-efs",
            creation_token=efs_creation_token(project, stack, name),
            encrypted=True,
            kms_key_id=key.arn,
            performance_mode=facts["performanceMode"],
            throughput_mode=facts["throughputMode"],
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, protect=True),
        )
        aws.efs.FileSystemPolicy(
            f"{name}-efs-policy",
            file_system_id=efs.id,
            policy=efs.arn.apply(lambda arn: json.dumps(decide.efs_tls_policy(arn))),
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
            assume_role_policy=json.dumps(decide.pod_identity_trust_policy()),
            tags=tags,
            opts=self._child,
        )
        aws.iam.RolePolicy(
            f"{name}-csi-policy",
            role=role.id,
            policy=json.dumps(decide.csi_driver_policy(kind)),
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
            addon_name=facts["addonName"],
            addon_version=facts["addonVersion"],
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=associations),
        )

    # ------------------------------------------------------------------ Kubernetes children

    def _volume(
        self,
        name: str,
        kind: decide.StoreKind,
        plan: decide.ClaimPlan,
        args: ModelStoreArgs,
        capacity: str,
        file_system_id: pulumi.Output[Any],
        dns_name: pulumi.Output[Any],
        mount_name: pulumi.Output[Any],
        ready: list[pulumi.Resource],
    ) -> kubernetes.core.v1.PersistentVolumeClaim:
        settings = args.settings
        labels = {APP_LABEL: APP_VALUE, PART_OF_LABEL: PART_OF}
        claim = claim_name(name, plan.role)
        pv_name = pulumi.Output.from_input(args.namespace).apply(lambda ns: volume_name(ns, name, plan.role))
        spec: dict[str, Any] = {
            "capacity": {"storage": capacity},
            "volumeMode": "Filesystem",
            "accessModes": list(plan.volume_access_modes),
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": decide.mount_options(kind, is_nfs=settings.nfs_server is not None),
            "claimRef": {"namespace": args.namespace, "name": claim},
        }
        if kind == "existing":
            spec["nfs"] = {
                "server": settings.nfs_server,
                "path": settings.nfs_path,
                "readOnly": plan.read_only,
            }
        else:
            spec["csi"] = pulumi.Output.all(file_system_id, dns_name, mount_name).apply(
                lambda v: decide.csi_volume_source(kind, v[0], plan.read_only, dns_name=v[1], mount_name=v[2])
            )
        volume = kubernetes.core.v1.PersistentVolume(
            f"{name}-{plan.role}-volume",
            metadata={"name": pv_name, "labels": labels},
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=ready),
        )
        return kubernetes.core.v1.PersistentVolumeClaim(
            f"{name}-{plan.role}-claim",
            metadata={"name": claim, "namespace": args.namespace, "labels": labels},
            spec={
                "accessModes": list(plan.claim_access_modes),
                "storageClassName": "",
                "volumeName": volume.metadata.name,
                "resources": {"requests": {"storage": capacity}},
            },
            opts=self._k8s,
        )
