"""Shared test helpers: paths, stack files as raw settings, and cached offline previews.

Previews are computed once per stack per test session (the program is deterministic, and the
determinism test checks that); tests that change inputs build their own.
"""

from __future__ import annotations

import copy
import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
STACKS = ("dev", "prod", "onprem")


def raw_settings(stack: str) -> dict[str, Any]:
    """The `vllm-serving:*` keys of a shipped stack file, namespace stripped (a fresh copy)."""
    document = yaml.safe_load((ROOT / f"Pulumi.{stack}.yaml").read_text())
    prefix = "vllm-serving:"
    return copy.deepcopy({k[len(prefix) :]: v for k, v in document["config"].items() if k.startswith(prefix)})


def run_offline(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m offline <args>` from the repository root, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "offline", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@functools.cache
def preview(stack: str) -> Any:
    """Offline preview (with the policy pack) of a shipped stack; shared, do not mutate."""
    from offline.engine import preview_stack

    return preview_stack(stack)


def write_stack(
    tmp_path: Path, raw: dict[str, Any], name: str = "variant", extra: dict | None = None
) -> Path:
    """Write raw settings back as a stack file under tmp_path."""
    config = {f"vllm-serving:{k}": v for k, v in raw.items()}
    config.update(extra or {"aws:region": "us-east-1"})
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=True))
    return path
