"""check-efa.sh: a multi-node pod on EFA refuses to start (or warns) when its image cannot use
EFA, instead of letting NCCL fall back to TCP sockets. Run against fake filesystem roots; also
how the launch scripts call it, which pods get it, and the image recipe it points to."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from components import launch_scripts
from tests.helpers import ROOT, preview

SCRIPT = launch_scripts.SCRIPTS_DIR / "check-efa.sh"
DOCKERFILE = ROOT / "images" / "vllm-efa" / "Dockerfile"


def _root(
    tmp_path: Path,
    *,
    device: bool = True,
    libfabric: bool = True,
    plugin: str | None = "libnccl-net-aws-ofi.so",
) -> Path:
    """A fake pod filesystem with what the EFA installer and the device plugin would put there."""
    if device:
        (tmp_path / "dev" / "infiniband").mkdir(parents=True)
        (tmp_path / "dev" / "infiniband" / "uverbs0").touch()
    if libfabric:
        (tmp_path / "opt" / "amazon" / "efa" / "lib").mkdir(parents=True)
        (tmp_path / "opt" / "amazon" / "efa" / "lib" / "libfabric.so.1").touch()
    if plugin:
        (tmp_path / "opt" / "amazon" / "ofi-nccl" / "lib").mkdir(parents=True)
        (tmp_path / "opt" / "amazon" / "ofi-nccl" / "lib" / plugin).touch()
    return tmp_path


def _check(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT)],
        env={"PATH": os.environ["PATH"], "FABRIC_ROOT": str(root), **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_an_image_with_libfabric_and_the_plugin_passes(tmp_path: Path) -> None:
    done = _check(_root(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "check-efa: ok: libfabric /opt/amazon/efa/lib/libfabric.so.1, "
        "NCCL net plugin /opt/amazon/ofi-nccl/lib/libnccl-net-aws-ofi.so, devices /dev/infiniband/uverbs0"
    )


def test_the_stock_image_is_refused_with_the_reason_and_the_fix(tmp_path: Path) -> None:
    done = _check(_root(tmp_path, libfabric=False, plugin=None))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "check-efa: libfabric (EFA provider) is not in the image",
        "check-efa: no NCCL net plugin (aws-ofi-nccl) in the image",
        "check-efa: NCCL would fall back to TCP sockets; set vllm-serving:serving.image to an EFA-enabled "
        "image (images/vllm-efa), or vllm-serving:serving.efaCheck to warn to start anyway",
    ]


def test_the_installers_plugin_name_alone_is_refused_unless_nccl_is_told_to_load_it(tmp_path: Path) -> None:
    root = _root(tmp_path, plugin="libnccl-net-ofi.so")
    refused = _check(root)
    assert refused.returncode == 1
    assert (
        "check-efa: /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so is there but NCCL does not load that name: "
        "link it as libnccl-net-aws-ofi.so (images/vllm-efa does) or set NCCL_NET_PLUGIN=ofi in the image"
    ) in refused.stderr.splitlines()
    assert _check(root, NCCL_NET_PLUGIN="ofi").returncode == 0
    missing = _check(root, NCCL_NET_PLUGIN="aws-ofi")
    assert "no NCCL net plugin (aws-ofi-nccl, NCCL_NET_PLUGIN=aws-ofi) in the image" in missing.stderr


def test_older_installer_layout_is_found(tmp_path: Path) -> None:
    root = _root(tmp_path, plugin=None)
    multiarch = root / "opt" / "amazon" / "ofi-nccl" / "lib" / "x86_64-linux-gnu"
    multiarch.mkdir(parents=True)
    (multiarch / "libnccl-net.so").touch()
    done = _check(root)
    assert done.returncode == 0, done.stderr
    assert "/opt/amazon/ofi-nccl/lib/x86_64-linux-gnu/libnccl-net.so" in done.stdout


def test_a_pod_without_efa_devices_is_refused(tmp_path: Path) -> None:
    done = _check(_root(tmp_path, device=False))
    assert done.returncode == 1
    assert "was vpc.amazonaws.com/efa allocated?" in done.stderr


def test_warn_mode_logs_and_starts(tmp_path: Path) -> None:
    done = _check(_root(tmp_path, plugin=None), EFA_CHECK="warn")
    assert done.returncode == 0
    assert "vllm-serving:serving.efaCheck is warn: starting anyway" in done.stderr


def test_libraries_on_the_library_path_count(tmp_path: Path) -> None:
    root = _root(tmp_path, libfabric=False, plugin=None)
    (root / "usr" / "local" / "lib").mkdir(parents=True)
    (root / "usr" / "local" / "lib" / "libfabric.so").touch()
    (root / "usr" / "local" / "lib" / "libnccl-net.so").touch()
    done = _check(root, LD_LIBRARY_PATH="/usr/local/lib")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("script", ["mp-node.sh", "ray-leader.sh", "ray-worker.sh"])
def test_group_scripts_stop_before_launching_when_the_check_fails(tmp_path: Path, script: str) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "LAUNCH_DRY_RUN": "1",
        "LWS_GROUP_SIZE": "2",
        "LWS_WORKER_INDEX": "1",
        "LWS_LEADER_ADDRESS": "leader",
        "MP_MASTER_PORT": "29501",
        "VLLM_HOST_IP": "10.0.0.2",
        "RAY_PORT": "6379",
        "RAY_OBJECT_STORE_BYTES": "1",
        "RAY_JOIN_TIMEOUT_SECONDS": "1",
        "EFA_CHECK": "enforce",
        "FABRIC_ROOT": str(tmp_path),  # nothing there
    }
    done = subprocess.run(
        ["bash", str(launch_scripts.SCRIPTS_DIR / script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 1
    assert "check-efa: NCCL would fall back to TCP sockets" in done.stderr
    assert "+ " not in done.stdout, "nothing is launched"


def _env_of(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_only_multi_node_pods_on_efa_run_the_check() -> None:
    graph = preview("prod").graph
    lws = next(r for r in graph.by_type("kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"))
    templates = lws.inputs["spec"]["leaderWorkerTemplate"]
    for template in (templates["leaderTemplate"], templates["workerTemplate"]):
        container = template["spec"]["containers"][0]
        assert _env_of(container)["EFA_CHECK"] == "enforce"
        assert container["image"] == "123456789012.dkr.ecr.us-east-1.amazonaws.com/vllm-efa:v0.19.0-efa1.50.0"
    single_node = [
        c
        for r in graph.by_type("kubernetes:apps/v1:Deployment")
        for c in r.inputs["spec"]["template"]["spec"]["containers"]
    ]
    assert single_node and all("EFA_CHECK" not in _env_of(c) for c in single_node)


def test_the_image_recipe_installs_what_the_check_looks_for_and_passes_hadolint() -> None:
    text = DOCKERFILE.read_text()
    base = re.search(r"^ARG VLLM_IMAGE=(\S+)$", text, re.M)
    assert base is not None and base.group(1) == "vllm/vllm-openai:v0.19.0", (
        "same vLLM as serving.image's default"
    )
    installer = re.search(r"^ARG EFA_INSTALLER_VERSION=(\d+\.\d+\.\d+)$", text, re.M)
    assert installer is not None
    assert "--skip-kmod" in text and "gpg --verify" in text
    library_path = re.search(r"^ENV LD_LIBRARY_PATH=(\S+)$", text, re.M)
    assert library_path is not None
    searched = re.findall(r"/opt/amazon/[\w-]+/lib[\w/-]*", SCRIPT.read_text())
    assert set(library_path.group(1).split(":")[:-1]) <= set(searched)
    hadolint = Path(sys.executable).with_name("hadolint")
    done = subprocess.run([str(hadolint), str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout
