"""Write every Kubernetes object of a recorded graph as a kubectl-style YAML file.

Owns which recorded resources are Kubernetes objects (typed pulumi-kubernetes resources and
custom resources; Helm releases are opaque and listed instead) and the file layout:
`<dir>/<namespace or _cluster>/<kind>-<name>.yaml`, one object per file, sorted keys.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from offline.graph import RecordedResource
from offline.recorder import Graph
from offline.validate import manifest_from_recorded

HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


def is_kubernetes_object(resource: RecordedResource) -> bool:
    return (
        resource.custom
        and resource.type.startswith("kubernetes:")
        and not resource.type.startswith("kubernetes:helm.sh/")
        and "pulumi:providers:" not in resource.type
    )


def kubernetes_manifests(graph: Graph) -> list[dict]:
    return [manifest_from_recorded(r) for r in graph.resources if is_kubernetes_object(r)]


def write_manifests(graph: Graph, directory: Path) -> int:
    """Write one YAML file per object; returns how many were written."""
    count = 0
    for manifest in kubernetes_manifests(graph):
        metadata = manifest.get("metadata", {})
        folder = directory / (metadata.get("namespace") or "_cluster")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{manifest['kind'].lower()}-{metadata.get('name', 'unnamed')}.yaml"
        path.write_text(yaml.safe_dump(manifest, sort_keys=True))
        count += 1
    releases = [r for r in graph.resources if r.type == HELM_RELEASE_TYPE]
    if releases:
        directory.mkdir(parents=True, exist_ok=True)
        lines = [f"{r.inputs.get('chart')} {r.inputs.get('version')} ({r.name})" for r in releases]
        (directory / "helm-releases.txt").write_text("\n".join(sorted(lines)) + "\n")
    return count
