"""components/scripts/sync_weights.py: the code the weight-sync Job runs, on real files in tmp_path.

Checks: safetensors verification (complete, truncated, garbage header, index naming a missing
shard, no config.json); `sync` skipping when the marker exists, marking weights that are already
complete (imported from S3) without a download, downloading with the exact arguments and writing
the marker only after verification, refusing to mark a broken download and deleting the broken
shard with its download metadata; the marker written atomically; `prepare` handing the revision
directory to the sync group (setgid, group-writable) without capabilities.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import struct
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "components" / "scripts" / "sync_weights.py"
REVISION = "5ede1c97bbab6ce5cda5812749b4c0bdf79b18dd"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sync_weights_under_test", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def write_safetensors(path: Path, tensor_bytes: int, truncate_by: int = 0) -> None:
    """A minimal valid safetensors file with one uint8 tensor (optionally cut short)."""
    header = json.dumps(
        {"w": {"dtype": "U8", "shape": [tensor_bytes], "data_offsets": [0, tensor_bytes]}}
    ).encode()
    payload = struct.pack("<Q", len(header)) + header + b"\x01" * tensor_bytes
    path.write_bytes(payload[: len(payload) - truncate_by])


def write_snapshot(target: Path, shards: dict[str, int], *, index: bool = True) -> None:
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text('{"architectures": ["Qwen2ForCausalLM"]}')
    for name, size in shards.items():
        write_safetensors(target / name, size)
    if index:
        weight_map = {f"layer.{i}": name for i, name in enumerate(sorted(shards))}
        (target / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))


def sync_args(script: ModuleType, target: Path, *extra: str) -> Any:
    return script.parse_args(
        [
            "sync",
            "--model-id",
            "Qwen/Qwen2.5-32B-Instruct",
            "--revision",
            REVISION,
            "--target",
            str(target),
            "--allow-pattern",
            "*.safetensors",
            "--allow-pattern",
            "*.json",
            "--ignore-pattern",
            "original/*",
            "--max-workers",
            "4",
            *extra,
        ]
    )


class FakeHub:
    """Stands in for snapshot_download: records its call and writes the given snapshot."""

    def __init__(self, shards: dict[str, int], truncate: str | None = None) -> None:
        self.shards = shards
        self.truncate = truncate
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> str:
        target = Path(kwargs["local_dir"])
        assert not (target / ".ready").exists(), "the marker must not exist while downloading"
        self.calls.append(kwargs)
        write_snapshot(target, self.shards)
        metadata = target / ".cache" / "huggingface" / "download"
        metadata.mkdir(parents=True, exist_ok=True)
        for name in self.shards:
            (metadata / f"{name}.metadata").write_text("commit\netag\n0\n")
        if self.truncate:
            write_safetensors(target / self.truncate, self.shards[self.truncate], truncate_by=3)
        return str(target)


@pytest.fixture
def script() -> ModuleType:
    return load_script()


def test_complete_safetensors_pass(script: ModuleType, tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", 64)
    assert script.safetensors_problem(tmp_path / "a.safetensors") is None


def test_truncated_safetensors_fail(script: ModuleType, tmp_path: Path) -> None:
    write_safetensors(tmp_path / "a.safetensors", 64, truncate_by=1)
    problem = script.safetensors_problem(tmp_path / "a.safetensors")
    assert problem is not None and "incomplete download" in problem


def test_garbage_header_fails(script: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "a.safetensors").write_bytes(struct.pack("<Q", 10**12) + b"{}")
    assert "does not fit" in script.safetensors_problem(tmp_path / "a.safetensors")
    (tmp_path / "b.safetensors").write_bytes(b"\x00\x01")
    assert "shorter than the 8-byte header length" in script.safetensors_problem(tmp_path / "b.safetensors")


def test_index_naming_a_missing_shard_fails(script: ModuleType, tmp_path: Path) -> None:
    write_snapshot(tmp_path, {"model-00001-of-00002.safetensors": 16, "model-00002-of-00002.safetensors": 16})
    (tmp_path / "model-00002-of-00002.safetensors").unlink()
    problems, broken = script.verify_snapshot(tmp_path)
    assert problems == ["model-00002-of-00002.safetensors is missing"]
    assert broken == []


def test_snapshot_without_config_or_weights_fails(script: ModuleType, tmp_path: Path) -> None:
    problems, _ = script.verify_snapshot(tmp_path)
    assert problems == ["config.json is missing", "no *.safetensors file and no safetensors index"]


def test_single_file_model_without_index_passes(script: ModuleType, tmp_path: Path) -> None:
    write_snapshot(tmp_path, {"model.safetensors": 32}, index=False)
    assert script.verify_snapshot(tmp_path) == ([], [])


def test_existing_marker_means_nothing_to_do(script: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "qwen-32b" / REVISION
    target.mkdir(parents=True)
    (target / ".ready").write_text("{}")
    hub = FakeHub({"model.safetensors": 8})
    assert script.sync(sync_args(script, target), downloader=hub) == 0
    assert hub.calls == []


def test_weights_imported_from_s3_are_marked_without_download(script: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "qwen-32b" / REVISION
    write_snapshot(target, {"model-00001-of-00001.safetensors": 32})
    hub = FakeHub({})
    assert script.sync(sync_args(script, target), downloader=hub) == 0
    assert hub.calls == []
    marker = json.loads((target / ".ready").read_text())
    assert marker["revision"] == REVISION
    assert marker["source"].startswith("already present on the store")


def test_download_uses_pinned_revision_then_writes_marker(
    script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    target = tmp_path / "qwen-32b" / REVISION
    hub = FakeHub({"model-00001-of-00002.safetensors": 40, "model-00002-of-00002.safetensors": 24})
    assert script.sync(sync_args(script, target), downloader=hub) == 0
    assert hub.calls == [
        {
            "repo_id": "Qwen/Qwen2.5-32B-Instruct",
            "revision": REVISION,
            "local_dir": str(target),
            "allow_patterns": ["*.safetensors", "*.json"],
            "ignore_patterns": ["original/*"],
            "token": "hf_test_token",
            "max_workers": 4,
        }
    ]
    marker = json.loads((target / ".ready").read_text())
    assert (marker["modelId"], marker["revision"], marker["files"]) == (
        "Qwen/Qwen2.5-32B-Instruct",
        REVISION,
        4,
    )
    assert not (target / ".ready.tmp").exists()


def test_broken_download_is_not_marked_and_the_shard_is_discarded(script: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "qwen-32b" / REVISION
    hub = FakeHub({"a.safetensors": 16, "b.safetensors": 16}, truncate="b.safetensors")
    assert script.sync(sync_args(script, target), downloader=hub) == 1
    assert not (target / ".ready").exists()
    assert not (target / "b.safetensors").exists()
    assert not (target / ".cache" / "huggingface" / "download" / "b.safetensors.metadata").exists()
    assert (target / "a.safetensors").exists()


def test_anonymous_download_passes_no_token(
    script: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    hub = FakeHub({"model.safetensors": 8})
    assert script.sync(sync_args(script, tmp_path / "m" / "r"), downloader=hub) == 0
    assert hub.calls[0]["token"] is None


def test_prepare_hands_the_revision_directory_to_the_group(script: ModuleType, tmp_path: Path) -> None:
    target = tmp_path / "qwen-32b" / REVISION
    gid = os.getegid()
    assert script.main(["prepare", "--target", str(target), "--group", str(gid)]) == 0
    for path in (target.parent, target):
        mode = path.stat().st_mode
        assert mode & stat.S_ISGID, f"{path} lacks setgid"
        assert mode & stat.S_IWGRP, f"{path} is not group-writable"
        assert path.stat().st_gid == gid


def test_main_parses_the_job_command_line(script: ModuleType) -> None:
    args = script.parse_args(["sync", "--model-id", "a/b", "--revision", "r", "--target", "/models/b/r"])
    assert (args.marker, args.allow_pattern, args.max_workers, args.requirement) == (
        ".ready",
        [],
        8,
        "huggingface_hub",
    )
