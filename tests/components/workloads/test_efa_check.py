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


PLUGIN_DIR = "/opt/amazon/ofi-nccl/lib"
IMAGE_ENV = {"LD_LIBRARY_PATH": f"{PLUGIN_DIR}:/opt/amazon/efa/lib", "NCCL_NET_PLUGIN": "ofi"}
"""What images/vllm-efa sets."""


def _root(
    tmp_path: Path, *, device: bool = True, libfabric: bool = True, plugin: str | None = "libnccl-net-ofi.so"
) -> Path:
    """A fake pod filesystem with what the EFA installer and the device plugin put there."""
    if device:
        (tmp_path / "dev" / "infiniband").mkdir(parents=True)
        (tmp_path / "dev" / "infiniband" / "uverbs0").touch()
    if libfabric:
        (tmp_path / "opt" / "amazon" / "efa" / "lib").mkdir(parents=True)
        (tmp_path / "opt" / "amazon" / "efa" / "lib" / "libfabric.so.1").touch()
    if plugin:
        (tmp_path / PLUGIN_DIR.lstrip("/")).mkdir(parents=True)
        (tmp_path / PLUGIN_DIR.lstrip("/") / plugin).touch()
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


def test_the_image_recipes_layout_passes(tmp_path: Path) -> None:
    done = _check(_root(tmp_path), **IMAGE_ENV)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "check-efa: ok: libfabric /opt/amazon/efa/lib/libfabric.so.1, "
        "NCCL net plugin /opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so, devices /dev/infiniband/uverbs0"
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


@pytest.mark.parametrize(
    ("plugin", "env"),
    [
        # NCCL_NET_PLUGIN unset: NCCL opens libnccl-net.so only.
        ("libnccl-net-ofi.so", {"LD_LIBRARY_PATH": PLUGIN_DIR}),
        ("libnccl-net-aws-ofi.so", {"LD_LIBRARY_PATH": PLUGIN_DIR}),
        # Named, but not where the loader looks.
        ("libnccl-net-ofi.so", {"NCCL_NET_PLUGIN": "ofi"}),
    ],
)
def test_a_plugin_nccl_would_not_load_is_refused(tmp_path: Path, plugin: str, env: dict[str, str]) -> None:
    done = _check(_root(tmp_path, plugin=plugin), **env)
    assert done.returncode == 1
    assert f"check-efa: NCCL will not load {PLUGIN_DIR}/{plugin}: it looks for " in done.stderr


@pytest.mark.parametrize(
    ("plugin", "env"),
    [
        ("libnccl-net.so", {"LD_LIBRARY_PATH": PLUGIN_DIR}),
        ("libnccl-net-ofi.so", {"LD_LIBRARY_PATH": PLUGIN_DIR, "NCCL_NET_PLUGIN": "libnccl-net-ofi.so"}),
        ("libnccl-net-ofi.so", {"LD_LIBRARY_PATH": PLUGIN_DIR, "NCCL_NET_PLUGIN": "aws-ofi,ofi"}),
        ("libnccl-net-ofi.so", {"NCCL_NET_PLUGIN": f"{PLUGIN_DIR}/libnccl-net-ofi.so"}),
    ],
)
def test_every_way_nccl_loads_a_plugin_passes(tmp_path: Path, plugin: str, env: dict[str, str]) -> None:
    done = _check(_root(tmp_path, plugin=plugin), **env)
    assert done.returncode == 0, done.stderr
    assert f"NCCL net plugin {PLUGIN_DIR}/{plugin}," in done.stdout


def test_the_loader_configuration_counts_as_library_path(tmp_path: Path) -> None:
    root = _root(tmp_path, plugin="libnccl-net.so")
    (root / "etc" / "ld.so.conf.d").mkdir(parents=True)
    (root / "etc" / "ld.so.conf.d" / "ofi-nccl.conf").write_text(f"# aws-ofi-nccl\n{PLUGIN_DIR}\n")
    done = _check(root)
    assert done.returncode == 0, done.stderr


def test_plugins_turned_off_are_refused(tmp_path: Path) -> None:
    done = _check(_root(tmp_path), LD_LIBRARY_PATH=PLUGIN_DIR, NCCL_NET_PLUGIN="none")
    assert done.returncode == 1
    assert "check-efa: NCCL_NET_PLUGIN=none turns NCCL's net plugins off" in done.stderr


def test_a_pod_without_efa_devices_is_refused(tmp_path: Path) -> None:
    done = _check(_root(tmp_path, device=False), **IMAGE_ENV)
    assert done.returncode == 1
    assert "was vpc.amazonaws.com/efa allocated?" in done.stderr


def test_warn_mode_logs_and_starts(tmp_path: Path) -> None:
    done = _check(_root(tmp_path, plugin=None), EFA_CHECK="warn")
    assert done.returncode == 0
    assert "vllm-serving:serving.efaCheck is warn: starting anyway" in done.stderr


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


def test_the_image_recipe_sets_what_the_check_requires_and_passes_hadolint() -> None:
    text = DOCKERFILE.read_text()
    base = re.search(r"^ARG VLLM_IMAGE=(\S+)$", text, re.M)
    assert base is not None and base.group(1) == "vllm/vllm-openai:v0.19.0", (
        "same vLLM as serving.image's default"
    )
    assert re.search(r"^ARG EFA_INSTALLER_VERSION=\d+\.\d+\.\d+$", text, re.M)
    assert "--skip-kmod" in text and "gpg --verify" in text
    assert re.search(r"^ENV NCCL_NET_PLUGIN=ofi$", text, re.M), "NCCL opens libnccl-net-ofi.so only when told"
    library_path = re.search(r"^ENV LD_LIBRARY_PATH=(\S+)$", text, re.M)
    assert library_path is not None and PLUGIN_DIR in library_path.group(1).split(":")
    assert "compgen -G '/opt/amazon/ofi-nccl/lib*/libnccl-net-ofi.so'" in text, "no plugin, no image"
    hadolint = Path(sys.executable).with_name("hadolint")
    done = subprocess.run([str(hadolint), str(DOCKERFILE)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout
