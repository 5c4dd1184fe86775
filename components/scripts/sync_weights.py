"""Put one pinned model revision on the shared model store, verify it, and mark it ready.

Runs inside the weight-sync Job (components/weight_sync.py ships it in a ConfigMap), standard
library only until a download is needed. Two steps, one per container:

  prepare  (init container, uid 0, no capabilities) creates `<target>` and hands it to the sync
           group: group-owned, group-writable, setgid, so the non-root sync step can write there.
           A root-owned file system (FSx, EFS, most NFS exports) lets its owner do that without
           CAP_CHOWN; entries someone else owns are left alone.
  sync     (main container, non-root) is idempotent:
             1. `<target>/.ready` exists            -> nothing to do.
             2. the files are already complete       -> mark ready (weights imported from the
                (e.g. imported from the linked S3       linked bucket need no download).
                prefix by FSx)
             3. otherwise download the revision from the Hugging Face Hub (huggingface_hub
                snapshot_download, installed into /tmp when the image lacks it), verify it, and
                write the marker last, atomically. A shard that fails verification is deleted
                with its download metadata, so the Job's next attempt fetches it again.

Verification reads only headers: config.json is present, every shard the safetensors index names
exists, and each shard's size equals its header length plus the largest tensor end offset.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

PIP_TARGET = "/tmp/pylib"
INDEX_SUFFIX = ".safetensors.index.json"
HF_METADATA_DIR = Path(".cache") / "huggingface" / "download"
HEADER_LENGTH_BYTES = 8
MAX_HEADER_BYTES = 100 * 1024 * 1024  # safetensors refuses headers above 100 MB

Downloader = Callable[..., Any]


def log(message: str) -> None:
    print(f"[weight-sync] {message}", flush=True)


# --------------------------------------------------------------------------- verification


def safetensors_problem(path: Path) -> str | None:
    """None when the file is a complete safetensors file, else what is wrong with it."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            prefix = handle.read(HEADER_LENGTH_BYTES)
            if len(prefix) < HEADER_LENGTH_BYTES:
                return f"{path.name}: {size} bytes, shorter than the 8-byte header length"
            (header_length,) = struct.unpack("<Q", prefix)
            if header_length > MAX_HEADER_BYTES or HEADER_LENGTH_BYTES + header_length > size:
                return f"{path.name}: header length {header_length} does not fit in {size} bytes"
            header = json.loads(handle.read(header_length))
    except (OSError, ValueError) as err:
        return f"{path.name}: unreadable ({err})"
    ends = [entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"]
    expected = HEADER_LENGTH_BYTES + header_length + max(ends, default=0)
    if expected != size:
        return f"{path.name}: {size} bytes, the header describes {expected} (incomplete download)"
    return None


def expected_shards(target: Path) -> tuple[list[str], list[str]]:
    """(shard file names the snapshot must hold, problems finding them)."""
    indexes = sorted(target.glob(f"*{INDEX_SUFFIX}"))
    if not indexes:
        shards = sorted(p.name for p in target.glob("*.safetensors"))
        return shards, [] if shards else ["no *.safetensors file and no safetensors index"]
    shards: set[str] = set()
    for index in indexes:
        try:
            shards.update(json.loads(index.read_text())["weight_map"].values())
        except (OSError, ValueError, KeyError) as err:
            return [], [f"{index.name}: unreadable index ({err})"]
    return sorted(shards), []


def verify_snapshot(target: Path) -> tuple[list[str], list[str]]:
    """(problems, names of shards that are present but broken). No problems: the snapshot is complete."""
    if not target.is_dir():
        return [f"{target} does not exist"], []
    problems: list[str] = []
    if not (target / "config.json").is_file():
        problems.append("config.json is missing")
    shards, found = expected_shards(target)
    problems += found
    broken: list[str] = []
    for shard in shards:
        path = target / shard
        if not path.is_file():
            problems.append(f"{shard} is missing")
        elif (problem := safetensors_problem(path)) is not None:
            problems.append(problem)
            broken.append(shard)
    return problems, broken


def discard_broken(target: Path, shards: Sequence[str]) -> None:
    """Delete broken shards and their download metadata so the next attempt fetches them again."""
    for shard in shards:
        for path in (target / shard, target / HF_METADATA_DIR / f"{shard}.metadata"):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                log(f"removed {path}")


def snapshot_stats(target: Path) -> tuple[int, int]:
    """(files, bytes) of the snapshot, without the download metadata."""
    files = [p for p in target.rglob("*") if p.is_file() and ".cache" not in p.relative_to(target).parts]
    return len(files), sum(p.stat().st_size for p in files)


def write_marker(target: Path, marker: str, content: dict[str, Any]) -> Path:
    """Write the marker atomically (temporary file, fsync, rename) so readers never see half of it."""
    final = target / marker
    temporary = target / f"{marker}.tmp"
    with temporary.open("w") as handle:
        json.dump(content, handle, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, final)
    directory = os.open(target, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return final


# --------------------------------------------------------------------------- download


def load_snapshot_download(requirement: str) -> Downloader:
    """huggingface_hub.snapshot_download, pip-installing the pinned requirement into /tmp if absent."""
    try:
        module = importlib.import_module("huggingface_hub")
    except ImportError:
        log(f"installing {requirement} into {PIP_TARGET}")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-cache-dir",
                "--disable-pip-version-check",
                "--only-binary=:all:",
                "--target",
                PIP_TARGET,
                requirement,
            ],
            check=True,
        )
        sys.path.insert(0, PIP_TARGET)
        importlib.invalidate_caches()
        module = importlib.import_module("huggingface_hub")
    return module.snapshot_download


def sync(args: argparse.Namespace, downloader: Downloader | None = None) -> int:
    """Make `args.target` a verified snapshot of model_id@revision with the marker written last."""
    target = Path(args.target)
    marker = target / args.marker
    if marker.exists():
        log(f"{args.model_id}@{args.revision} is already synced ({marker} exists); nothing to do")
        return 0
    target.mkdir(parents=True, exist_ok=True)
    os.umask(0o022)  # files readable by every serving pod, whatever its uid
    problems, _ = verify_snapshot(target)
    source = "already present on the store (imported from the linked bucket)"
    if problems:
        started = time.monotonic()
        download = downloader or load_snapshot_download(args.requirement)
        log(f"downloading {args.model_id}@{args.revision} into {target}")
        download(
            repo_id=args.model_id,
            revision=args.revision,
            local_dir=str(target),
            allow_patterns=list(args.allow_pattern),
            ignore_patterns=list(args.ignore_pattern),
            token=os.environ.get("HF_TOKEN") or None,
            max_workers=args.max_workers,
        )
        source = f"downloaded from the Hugging Face Hub in {time.monotonic() - started:.0f}s"
        problems, broken = verify_snapshot(target)
        if problems:
            discard_broken(target, broken)
            for problem in problems:
                log(f"verification failed: {problem}")
            return 1
    files, size = snapshot_stats(target)
    write_marker(
        target,
        args.marker,
        {
            "modelId": args.model_id,
            "revision": args.revision,
            "files": files,
            "bytes": size,
            "source": source,
        },
    )
    log(f"{args.model_id}@{args.revision}: {files} files, {size / 1e9:.1f} GB, {source}; wrote {marker}")
    return 0


# --------------------------------------------------------------------------- prepare


def _hand_to_group(path: Path, gid: int) -> None:
    info = path.lstat()
    if info.st_uid != os.geteuid() or stat.S_ISLNK(info.st_mode):
        return  # only the owner may change group and mode without capabilities
    os.chown(path, -1, gid)
    extra = stat.S_ISGID | stat.S_IRWXG if stat.S_ISDIR(info.st_mode) else stat.S_IRGRP | stat.S_IWGRP
    os.chmod(path, stat.S_IMODE(info.st_mode) | extra)


def prepare(args: argparse.Namespace) -> int:
    """Create the revision directory and let the sync group write in it (and in the model directory)."""
    target = Path(args.target)
    try:
        target.mkdir(parents=True, exist_ok=True)
        for path in (target.parent, target, *sorted(target.rglob("*"))):
            _hand_to_group(path, args.group)
    except PermissionError as err:
        log(f"cannot hand {target} to group {args.group} ({err}); the sync step needs it writable already")
        return 0
    log(f"{target} is writable by group {args.group}")
    return 0


# --------------------------------------------------------------------------- entry point


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    prep = steps.add_parser("prepare", help="make the revision directory writable by the sync group")
    prep.add_argument("--target", required=True)
    prep.add_argument("--group", type=int, required=True)
    run = steps.add_parser("sync", help="download, verify and mark one model revision")
    run.add_argument("--model-id", required=True)
    run.add_argument("--revision", required=True)
    run.add_argument("--target", required=True)
    run.add_argument("--marker", default=".ready")
    run.add_argument("--allow-pattern", action="append", default=[])
    run.add_argument("--ignore-pattern", action="append", default=[])
    run.add_argument("--max-workers", type=int, default=8)
    run.add_argument("--requirement", default="huggingface_hub")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    return prepare(args) if args.step == "prepare" else sync(args)


if __name__ == "__main__":
    sys.exit(main())
