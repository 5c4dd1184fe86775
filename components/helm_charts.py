"""Pinned Helm charts and their releases: one way for every component.

Owns `ChartPin`, read from the `charts` map of a data file (`data/workloads.json` for the cluster
add-ons, `data/observability.json` for monitoring and scaling), and `pinned_release`: a release
with a fixed name (no random suffix, so `helm list` and runbooks name it), the exact chart
version, and cleanup of what a failed install left behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as kubernetes


@dataclass(frozen=True)
class ChartPin:
    """One Helm chart pinned to an exact version (and, where the chart's default floats, its image)."""

    key: str
    """The chart's key in its data file."""
    repository: str
    """Helm repository URL; "" when `chart` is an `oci://` reference."""
    chart: str
    version: str
    release: str
    """Helm release name (the data file's `release`, else the key)."""
    namespace: str | None = None
    """Namespace the chart is installed into, where the data file fixes it."""
    image_repository: str | None = None
    image_tag: str | None = None


def read_pin(charts: Mapping[str, Any], key: str, source: str) -> ChartPin:
    """The pin `key` of a data file's `charts` map; an unknown key names the pinned ones."""
    entry = charts.get(key)
    if entry is None:
        raise KeyError(f"no pinned chart {key!r} in {source}; pinned: {', '.join(sorted(charts))}")
    image = entry.get("image") or {}
    return ChartPin(
        key=key,
        repository=entry["repository"],
        chart=entry["chart"],
        version=entry["version"],
        release=entry.get("release", key),
        namespace=entry.get("namespace"),
        image_repository=image.get("repository"),
        image_tag=image.get("tag"),
    )


def pinned_release(
    name: str,
    pin: ChartPin,
    *,
    namespace: pulumi.Input[str],
    values: pulumi.Input[Mapping[str, Any]],
    opts: pulumi.ResourceOptions,
    atomic: bool | None = None,
    create_namespace: bool | None = None,
    timeout_seconds: int | None = None,
    max_history: int | None = None,
) -> kubernetes.helm.v3.Release:
    """A Helm release of a pinned chart. Options left None are not sent (the provider's defaults)."""
    return kubernetes.helm.v3.Release(
        name,
        kubernetes.helm.v3.ReleaseArgs(
            name=pin.release,
            chart=pin.chart,
            version=pin.version,
            repository_opts=kubernetes.helm.v3.RepositoryOptsArgs(repo=pin.repository)
            if pin.repository
            else None,
            namespace=namespace,
            create_namespace=create_namespace,
            values=values,
            atomic=atomic,
            cleanup_on_fail=True,
            timeout=timeout_seconds,
            max_history=max_history,
        ),
        opts=opts,
    )
