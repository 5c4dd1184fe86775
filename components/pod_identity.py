"""An IAM role handed to one Kubernetes service account through EKS Pod Identity.

Owns the three resources every in-cluster AWS client of this project needs (the role with the
Pod Identity trust policy, its inline least-privilege policy, the association naming the
namespace and service account) and the rule that the workload starts only after all three exist:
credentials are injected when a pod starts, so a pod started earlier runs without them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.iam_policies import pod_identity_trust_policy


@dataclass(frozen=True)
class PodIdentityRole:
    role: aws.iam.Role
    policy: aws.iam.RolePolicy
    association: aws.eks.PodIdentityAssociation

    @property
    def ready(self) -> list[pulumi.Resource]:
        """What the workload using the role must depend on."""
        return [self.association, self.policy]


def pod_identity_role(
    prefix: str,
    *,
    cluster_name: pulumi.Input[str],
    namespace: pulumi.Input[str],
    service_account: pulumi.Input[str],
    policy: pulumi.Input[str],
    description: str,
    tags: Mapping[str, str],
    opts: pulumi.ResourceOptions,
) -> PodIdentityRole:
    """`<prefix>-role`, `<prefix>-policy` and `<prefix>-identity`, all with `opts` (parent, depends_on)."""
    role = aws.iam.Role(
        f"{prefix}-role",
        assume_role_policy=pod_identity_trust_policy(),
        description=description,
        tags=dict(tags),
        opts=opts,
    )
    inline = aws.iam.RolePolicy(f"{prefix}-policy", role=role.id, policy=policy, opts=opts)
    association = aws.eks.PodIdentityAssociation(
        f"{prefix}-identity",
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.arn,
        tags=dict(tags),
        opts=opts,
    )
    return PodIdentityRole(role=role, policy=inline, association=association)
