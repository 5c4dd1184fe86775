"""components/model_paths.py: the weight layout shared by the sync Jobs and the serving pods.

Checks: `<mount>/<name>/<revision>` with the `.ready` marker inside, the default mount path,
revisions that are not safe directory names (slashes, dots, empty) mapped to a stable hash that
cannot escape the model directory, and a relative mount path rejected.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pytest

from components.model_paths import (
    DEFAULT_MOUNT_PATH,
    HASHED_SEGMENT_PREFIX,
    READY_MARKER,
    marker_path,
    model_dir,
    model_path,
    path_segment,
    ready_marker_path,
    served_model_path,
)

SHA = "0e9e39f249a16976918f6564b8830bc894c89659"


@dataclass(frozen=True)
class Model:
    name: str
    revision: str


def test_model_path_is_mount_name_revision() -> None:
    assert model_path("/models", "llama-8b", SHA) == f"/models/llama-8b/{SHA}"


def test_marker_sits_inside_the_revision_directory() -> None:
    assert READY_MARKER == ".ready"
    assert marker_path("/models", "llama-8b", SHA) == f"/models/llama-8b/{SHA}/.ready"


def test_ready_marker_path_takes_model_settings_and_defaults_to_models_mount() -> None:
    assert DEFAULT_MOUNT_PATH == "/models"
    assert ready_marker_path(Model("qwen-32b", "main")) == "/models/qwen-32b/main/.ready"
    assert (
        ready_marker_path(Model("qwen-32b", "v1.0"), "/mnt/weights/") == "/mnt/weights/qwen-32b/v1.0/.ready"
    )
    assert served_model_path(Model("qwen-32b", "v1.0"), "/mnt/weights") == "/mnt/weights/qwen-32b/v1.0"


def test_model_dir_is_relative_layout() -> None:
    assert model_dir("llama-405b", SHA) == f"llama-405b/{SHA}"


@pytest.mark.parametrize("revision", ["refs/pr/12", "..", "../../etc", "v1 beta", ".hidden", "a" * 200])
def test_unsafe_revisions_become_a_stable_hash(revision: str) -> None:
    segment = path_segment(revision)
    assert segment.startswith(HASHED_SEGMENT_PREFIX)
    assert "/" not in segment and ".." not in segment
    assert path_segment(revision) == segment
    assert model_path("/models", "m", revision) == f"/models/m/{segment}"


def test_hash_of_unsafe_revision_is_pinned() -> None:
    assert path_segment("refs/pr/12") == "rev-" + hashlib.sha256(b"refs/pr/12").hexdigest()[:16]


def test_different_unsafe_revisions_do_not_collide() -> None:
    assert path_segment("refs/pr/1") != path_segment("refs/pr/2")


def test_empty_segment_rejected() -> None:
    with pytest.raises(ValueError, match="must not be empty"):
        model_path("/models", "m", "")


def test_relative_mount_path_rejected() -> None:
    with pytest.raises(ValueError, match="mount path must be absolute, got 'models'"):
        model_path("models", "m", SHA)
