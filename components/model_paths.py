"""Where a model's weights live on the shared model store, and how a reader knows they are complete.

Owns the path layout every part of the stack agrees on:

    <mount_path>/<model name>/<revision>/         the Hugging Face snapshot (config, tokenizer, shards)
    <mount_path>/<model name>/<revision>/.ready   written last by the weight-sync Job, after verifying

The weight-sync Job (components/weight_sync.py) writes there; serving pods mount the same store
read-only and wait for the marker before starting vLLM. A new revision is a new directory, so a
rollout never reads a half-written snapshot and the old revision keeps serving until it is replaced.
Pure functions, no Pulumi imports.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from typing import Protocol

DEFAULT_MOUNT_PATH = "/models"
"""Mount path of the model store in every pod (ModelStoreSettings.mount_path's default)."""

READY_MARKER = ".ready"
"""File name of the completion marker inside a revision directory."""

# A revision is used as one directory name. Commit shas and ordinary tags ("v1.0", "main") are
# used as they are; anything else (e.g. "refs/pr/12", "..") becomes a stable hash, so a revision
# can never escape its model directory.
_SAFE_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
HASHED_SEGMENT_PREFIX = "rev-"


class ModelRef(Protocol):
    """Anything naming a model and its pinned revision (settings.ModelSettings satisfies it)."""

    @property
    def name(self) -> str: ...

    @property
    def revision(self) -> str: ...


def path_segment(value: str) -> str:
    """`value` as a single safe directory name: itself when safe, else `rev-<sha256 prefix>`."""
    if not value:
        raise ValueError("a model name or revision used as a directory name must not be empty")
    if _SAFE_SEGMENT.match(value) and ".." not in value:
        return value
    return HASHED_SEGMENT_PREFIX + hashlib.sha256(value.encode()).hexdigest()[:16]


def _mount_root(mount_path: str) -> str:
    if not mount_path.startswith("/"):
        raise ValueError(f"mount path must be absolute, got {mount_path!r}")
    return posixpath.normpath(mount_path)


def model_dir(name: str, revision: str) -> str:
    """`<name>/<revision>` relative to the store's root (also the S3 key prefix under the linked prefix)."""
    return f"{path_segment(name)}/{path_segment(revision)}"


def model_path(mount_path: str, name: str, revision: str) -> str:
    """Absolute directory holding one model revision, e.g. `/models/llama-8b/0e9e39f...`."""
    return posixpath.join(_mount_root(mount_path), model_dir(name, revision))


def marker_path(mount_path: str, name: str, revision: str) -> str:
    """Absolute path of the `.ready` marker of one model revision."""
    return posixpath.join(model_path(mount_path, name, revision), READY_MARKER)


def ready_marker_path(model: ModelRef, mount_path: str = DEFAULT_MOUNT_PATH) -> str:
    """The marker a serving pod waits for before it starts vLLM (pass `ServedModel.settings`)."""
    return marker_path(mount_path, model.name, model.revision)


def served_model_path(model: ModelRef, mount_path: str = DEFAULT_MOUNT_PATH) -> str:
    """The directory vLLM is started with (`vllm serve <this path>`)."""
    return model_path(mount_path, model.name, model.revision)
