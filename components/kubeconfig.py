"""Kubeconfig for an EKS cluster, with exec-based credentials (no static token).

Owns the document the `kubernetes.Provider` and human operators use: one cluster, one user whose
credentials come from `aws eks get-token --cluster-name <name> --region <region>` at each use, so
nothing long-lived is stored in the stack. Rendered as JSON (valid YAML), keys sorted, so the same
inputs always give the same text. Pure: no Pulumi imports.
"""

from __future__ import annotations

import json

EXEC_API_VERSION = "client.authentication.k8s.io/v1beta1"


def get_token_args(cluster_name: str, region: str) -> list[str]:
    """Arguments of the AWS CLI call that mints a short-lived cluster token."""
    return ["eks", "get-token", "--cluster-name", cluster_name, "--region", region, "--output", "json"]


def render_kubeconfig(
    *, cluster_name: str, endpoint: str, certificate_authority_data: str, region: str
) -> str:
    """A kubeconfig for one EKS cluster; the user's token comes from the AWS CLI at each call."""
    if not endpoint.startswith("https://"):
        raise ValueError(f"EKS endpoint must be an https URL, got {endpoint!r}")
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster_name,
                "cluster": {"server": endpoint, "certificate-authority-data": certificate_authority_data},
            }
        ],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
        "preferences": {},
        "users": [
            {
                "name": cluster_name,
                "user": {
                    "exec": {
                        "apiVersion": EXEC_API_VERSION,
                        "command": "aws",
                        "args": get_token_args(cluster_name, region),
                        "interactiveMode": "Never",
                    }
                },
            }
        ],
    }
    return json.dumps(document, indent=2, sort_keys=True)
