"""Human-readable rendering of an offline preview: capacity summary, resource tree, policy result."""

from __future__ import annotations

from typing import Any

from offline.engine import Preview
from offline.recorder import Graph


def _capacity_lines(capacity: dict[str, Any]) -> list[str]:
    lines = ["Capacity plan"]
    header = f"  {'model':<14} {'pool':<10} {'TP':>3} {'PP':>3} {'DP':>3} {'nodes':>5} {'replicas':>9} "
    header += f"{'KV tokens':>11} {'max conc.':>9}"
    lines.append(header)
    for name, model in sorted(capacity.get("models", {}).items()):
        replicas = f"{model.get('minReplicas')}-{model.get('maxReplicas')}"
        lines.append(
            f"  {name:<14} {model.get('pool', ''):<10} {model.get('tensorParallelSize', ''):>3} "
            f"{model.get('pipelineParallelSize', ''):>3} {model.get('dataParallelSize', ''):>3} "
            f"{model.get('nodesPerReplica', ''):>5} {replicas:>9} {model.get('kvCacheTokens', ''):>11} "
            f"{model.get('maxConcurrency', ''):>9}"
        )
    for name, pool in sorted(capacity.get("pools", {}).items()):
        lines.append(
            f"  pool {name}: {pool.get('instanceType') or pool.get('gpuModel')} x {pool.get('minNodes')}"
            f"-{pool.get('maxNodes')} nodes, interconnect {pool.get('interconnect')}"
        )
    storage = capacity.get("storage", {})
    if storage:
        lines.append(
            f"  model store: {storage.get('kind')} {storage.get('storageCapacityGib') or ''} GiB "
            f"@ {storage.get('throughputMbps')} MB/s; cold start (all replicas) "
            f"{storage.get('allReplicasColdStartSeconds')} s"
        )
    cost = capacity.get("hourlyCostUsd")
    lines.append(f"  cost at minimum size: {'unknown' if cost is None else f'${cost}/hour'}")
    return lines


def _tree_lines(graph: Graph) -> list[str]:
    children: dict[str, list[Any]] = {}
    for resource in graph.resources:
        children.setdefault(resource.parent, []).append(resource)
    lines = [f"Resources ({len(graph.resources)})"]

    def walk(parent: str, depth: int) -> None:
        for resource in sorted(children.get(parent, []), key=lambda r: (r.type, r.name)):
            marks = " [protect]" if resource.protect else ""
            marks += " [read]" if resource.read else ""
            lines.append(f"  {'  ' * depth}{resource.type}  {resource.name}{marks}")
            walk(resource.urn, depth + 1)

    walk("", 0)
    return lines


def _policy_lines(preview: Preview) -> list[str]:
    if not preview.policies_run:
        return ["Policies: not run"]
    mandatory = preview.mandatory_violations
    lines = [
        f"Policies ({preview.policy_pack}): {len(mandatory)} mandatory, "
        f"{len(preview.violations) - len(mandatory)} advisory violation(s)"
    ]
    for violation in preview.violations:
        lines.append(f"  [{violation.level}] {violation.policy}: {violation.urn}")
        lines.extend(f"      {line}" for line in violation.message.splitlines() if line.strip())
    return lines


def render(preview: Preview) -> str:
    lines = [f"Offline preview of {preview.project}/{preview.stack}", ""]
    if preview.capacity:  # only this project plans capacity; a consumer project has none
        lines += [*_capacity_lines(preview.capacity), ""]
    lines += [*_tree_lines(preview.graph), ""]
    lines += [f"Outputs: {', '.join(sorted(preview.graph.outputs))}", ""]
    lines += _policy_lines(preview)
    return "\n".join(lines) + "\n"
