"""Compare two offline previews as a markdown summary for pull requests.

Owns the graph comparison (resources added, removed, changed with the input keys that changed,
and replaced where a changed key is known to force replacement), the capacity and $/hour delta,
and running the preview of another git ref in a temporary worktree.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPLACE_KEYS_FILE = Path(__file__).parent / "data" / "replace_keys.json"


def _replace_keys() -> dict[str, list[str]]:
    return json.loads(REPLACE_KEYS_FILE.read_text())["replaceOnChange"]


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths of the inputs that differ (objects recursed, lists compared whole)."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys: list[str] = []
        for key in sorted(set(old) | set(new)):
            path = f"{prefix}.{key}" if prefix else key
            if key not in old or key not in new:
                keys.append(path)
            else:
                keys += _changed_keys(old[key], new[key], path)
        return keys
    return [] if old == new else [prefix or "(value)"]


def _replaced(resource_type: str, changed: list[str]) -> bool:
    rules = _replace_keys().get(resource_type, [])
    return any(key == rule or key.startswith(rule + ".") for key in changed for rule in rules)


def compare(base: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    """Structured difference between two preview JSON documents."""
    old = {r["urn"]: r for r in base["resources"]}
    new = {r["urn"]: r for r in head["resources"]}
    changed = []
    for urn in sorted(set(old) & set(new)):
        keys = _changed_keys(old[urn]["inputs"], new[urn]["inputs"])
        if keys:
            changed.append(
                {
                    "urn": urn,
                    "type": new[urn]["type"],
                    "keys": keys,
                    "replace": _replaced(new[urn]["type"], keys),
                }
            )
    return {
        "added": sorted(set(new) - set(old)),
        "removed": sorted(set(old) - set(new)),
        "changed": changed,
        "costBefore": base.get("capacity", {}).get("hourlyCostUsd"),
        "costAfter": head.get("capacity", {}).get("hourlyCostUsd"),
        "capacityChanged": _changed_keys(base.get("capacity", {}), head.get("capacity", {})),
    }


def _short(urn: str) -> str:
    parts = urn.split("::")
    return f"`{parts[2].split('$')[-1]}` {parts[3]}" if len(parts) >= 4 else urn


def to_markdown(stack: str, difference: dict[str, Any]) -> str:
    replaced = [c for c in difference["changed"] if c["replace"]]
    lines = [
        f"### Offline preview diff: `{stack}`",
        "",
        f"{len(difference['added'])} to add, {len(difference['changed'])} to change "
        f"({len(replaced)} replaced), {len(difference['removed'])} to remove.",
        "",
    ]
    before, after = difference["costBefore"], difference["costAfter"]
    if before is not None and after is not None:
        lines += [
            f"GPU + storage cost at minimum size: ${before}/h -> ${after}/h ({after - before:+.2f}).",
            "",
        ]
    if replaced:
        lines += ["**Replaced (destroyed and recreated):**"]
        lines += [f"- {_short(c['urn'])}: {', '.join(c['keys'])}" for c in replaced] + [""]
    for title, urns in (("Added", difference["added"]), ("Removed", difference["removed"])):
        if urns:
            lines += [f"**{title}:**"] + [f"- {_short(u)}" for u in urns] + [""]
    updates = [c for c in difference["changed"] if not c["replace"]]
    if updates:
        lines += ["**Changed:**"] + [f"- {_short(c['urn'])}: {', '.join(c['keys'])}" for c in updates] + [""]
    if difference["capacityChanged"]:
        lines += [
            "**Capacity plan changed:** " + ", ".join(f"`{k}`" for k in difference["capacityChanged"]),
            "",
        ]
    return "\n".join(lines).rstrip() + "\n"


def preview_json_at_ref(ref: str, stack: str, repo: Path) -> dict[str, Any]:
    """Preview `stack` as of git `ref`, in a throwaway worktree beside the shared folder."""
    with tempfile.TemporaryDirectory(dir=repo.parent) as tmp:
        worktree = Path(tmp) / "base"
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "--detach", str(worktree), ref],
            check=True,
            capture_output=True,
        )
        try:
            result = subprocess.run(
                [sys.executable, "-m", "offline", "preview", "--stack", stack, "--json", "--no-policies"],
                cwd=worktree,
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode not in (0, 1):
                raise RuntimeError(f"preview of {ref} failed: {result.stderr.strip()}")
            return json.loads(result.stdout)
        finally:
            subprocess.run(
                ["git", "-C", str(repo), "worktree", "remove", "--force", str(worktree)],
                check=False,
                capture_output=True,
            )
