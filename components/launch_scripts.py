"""The launch scripts of vLLM pods: which script a pod runs, and the ConfigMap that carries them.

Owns the scripts under `components/scripts/` (kept as files so reviewers, shellcheck and the
policy pack see exactly what runs), the choice of script per pod role and backend, where they are
mounted, and a content hash that goes into the pod template so that changing a script rolls the
pods. Scripts are run with `bash <path>` and take `vllm serve` arguments as "$@".
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

SCRIPTS_DIR = Path(__file__).resolve().parent / "scripts"
MOUNT_PATH = "/opt/vllm-serving"
WAIT_FOR_MODEL = "wait-for-model.sh"
RAY_LEADER = "ray-leader.sh"
RAY_WORKER = "ray-worker.sh"
MP_NODE = "mp-node.sh"
CHECK_EFA = "check-efa.sh"
SCRIPT_NAMES = (MP_NODE, RAY_LEADER, RAY_WORKER, WAIT_FOR_MODEL, CHECK_EFA)

Role = Literal["leader", "worker"]


def script_text(name: str) -> str:
    """The text of one launch script."""
    if name not in SCRIPT_NAMES:
        raise KeyError(f"unknown launch script {name!r}; known: {', '.join(SCRIPT_NAMES)}")
    return (SCRIPTS_DIR / name).read_text(encoding="utf-8")


def config_map_data() -> dict[str, str]:
    """ConfigMap `data`: every script by file name, in a fixed order."""
    return {name: script_text(name) for name in SCRIPT_NAMES}


def scripts_hash() -> str:
    """sha256 over the scripts (names and texts), for a pod-template annotation."""
    digest = hashlib.sha256()
    for name, text in config_map_data().items():
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(text.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def script_command(name: str) -> list[str]:
    """The container command that runs script `name` from the mounted ConfigMap."""
    script_text(name)  # fail early on an unknown name
    return ["bash", f"{MOUNT_PATH}/{name}"]


def group_script(backend: Literal["ray", "mp"], role: Role) -> str:
    """Which script a pod of a multi-node group runs."""
    if backend == "mp":
        return MP_NODE
    return RAY_LEADER if role == "leader" else RAY_WORKER
