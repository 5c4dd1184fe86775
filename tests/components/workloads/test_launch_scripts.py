"""Launch scripts: shellcheck-clean, and the command lines they run, checked in dry-run mode.

Runs every script under components/scripts with bash: the Ray leader (start head, wait for the
group, serve) and its bounded timeout, the Ray worker join, the mp node flags for the leader and a
headless worker (tensor/pipeline and data-parallel layouts), and wait-for-model with and without
the ready marker. Also the ConfigMap data, the hash and the script choice per backend and role.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from components import launch_scripts

SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(launch_scripts.SCRIPTS_DIR / script), *args],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def seconds_masked(text: str) -> list[str]:
    """Output lines with elapsed times masked (bash SECONDS ticks on wall-clock second boundaries)."""
    return [re.sub(r"\b\d+s\b", "Ns", line) for line in text.splitlines()]


RAY_ENV = {
    "LAUNCH_DRY_RUN": "1",
    "LWS_GROUP_SIZE": "2",
    "LWS_LEADER_ADDRESS": "llama-405b-vllm-0.llama-405b-vllm.vllm",
    "VLLM_HOST_IP": "10.50.1.7",
    "RAY_PORT": "6379",
    "RAY_OBJECT_STORE_BYTES": "4294967296",
    "RAY_JOIN_TIMEOUT_SECONDS": "600",
}


def test_scripts_are_shellcheck_clean() -> None:
    paths = [str(launch_scripts.SCRIPTS_DIR / name) for name in launch_scripts.SCRIPT_NAMES]
    result = subprocess.run(
        [str(SHELLCHECK), "-o", "all", *paths], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ray_leader_starts_the_head_waits_for_the_group_then_serves() -> None:
    result = run("ray-leader.sh", RAY_ENV, "/models/llama-405b/rev", "--tensor-parallel-size", "8")
    assert result.returncode == 0, result.stderr
    assert seconds_masked(result.stdout) == [
        "+ ray start --head --port=6379 --node-ip-address=10.50.1.7 --object-store-memory=4294967296 "
        "--disable-usage-stats",
        "ray-leader: 2/2 Ray nodes alive after Ns",
        "+ exec vllm serve /models/llama-405b/rev --tensor-parallel-size 8",
    ]


def test_ray_leader_gives_up_after_the_join_timeout() -> None:
    env = {**RAY_ENV, "DRY_RUN_ALIVE_NODES": "1", "RAY_JOIN_TIMEOUT_SECONDS": "0"}
    result = run("ray-leader.sh", env, "/models/x")
    assert result.returncode == 1
    assert "only 1/2 Ray nodes joined within 0s" in result.stderr
    assert "vllm serve" not in result.stdout


def test_ray_worker_joins_the_leader_and_blocks() -> None:
    result = run("ray-worker.sh", RAY_ENV)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "+ ray start --address=llama-405b-vllm-0.llama-405b-vllm.vllm:6379 --node-ip-address=10.50.1.7 "
        "--object-store-memory=4294967296 --disable-usage-stats --block"
    ]


MP_ENV = {
    "LAUNCH_DRY_RUN": "1",
    "LWS_GROUP_SIZE": "2",
    "LWS_LEADER_ADDRESS": "llama-405b-vllm-0.llama-405b-vllm.vllm",
    "MP_MASTER_PORT": "29501",
}


def test_mp_leader_is_node_zero_and_serves() -> None:
    result = run("mp-node.sh", {**MP_ENV, "LWS_WORKER_INDEX": "0"}, "/m", "--pipeline-parallel-size", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == (
        "+ exec vllm serve /m --pipeline-parallel-size 2 --nnodes 2 --node-rank 0 "
        "--master-addr llama-405b-vllm-0.llama-405b-vllm.vllm --master-port 29501"
    )


def test_mp_worker_is_headless_with_its_rank() -> None:
    result = run("mp-node.sh", {**MP_ENV, "LWS_WORKER_INDEX": "1"}, "/m")
    assert result.stdout.splitlines()[-1] == (
        "+ exec vllm serve /m --nnodes 2 --node-rank 1 --master-addr llama-405b-vllm-0.llama-405b-vllm.vllm "
        "--master-port 29501 --headless"
    )


def test_mp_data_parallel_worker_starts_at_its_rank_offset() -> None:
    env = {
        **MP_ENV,
        "LWS_WORKER_INDEX": "1",
        "DATA_PARALLEL_SIZE_LOCAL": "8",
        "DATA_PARALLEL_RPC_PORT": "29550",
    }
    result = run("mp-node.sh", env, "/m", "--data-parallel-size", "16")
    assert result.stdout.splitlines()[-1] == (
        "+ exec vllm serve /m --data-parallel-size 16 --data-parallel-size-local 8 "
        "--data-parallel-start-rank 8 --data-parallel-address llama-405b-vllm-0.llama-405b-vllm.vllm "
        "--data-parallel-rpc-port 29550 --headless"
    )


def test_scripts_refuse_to_run_outside_a_leaderworkerset() -> None:
    result = run("mp-node.sh", {"LAUNCH_DRY_RUN": "1"})
    assert result.returncode != 0
    assert "LWS_GROUP_SIZE is not set" in result.stderr


def test_wait_for_model_returns_once_the_marker_exists(tmp_path: Path) -> None:
    (tmp_path / ".ready").write_text("")
    env = {"MODEL_PATH": str(tmp_path), "READY_MARKER": ".ready", "WAIT_TIMEOUT_SECONDS": "0"}
    result = run("wait-for-model.sh", env)
    assert result.returncode == 0
    assert seconds_masked(result.stdout) == [f"wait-for-model: {tmp_path}/.ready found after Ns"]


def test_wait_for_model_fails_with_a_message_after_the_timeout(tmp_path: Path) -> None:
    env = {"MODEL_PATH": str(tmp_path), "READY_MARKER": ".ready", "WAIT_TIMEOUT_SECONDS": "0"}
    result = run("wait-for-model.sh", env)
    assert result.returncode == 1
    assert "is still missing after" in result.stderr and "(timeout 0s)" in result.stderr


def test_config_map_carries_every_script_and_the_hash_follows_them() -> None:
    data = launch_scripts.config_map_data()
    assert list(data) == ["mp-node.sh", "ray-leader.sh", "ray-worker.sh", "wait-for-model.sh", "check-efa.sh"]
    assert all(text.startswith("#!/usr/bin/env bash\n") for text in data.values())
    assert len(launch_scripts.scripts_hash()) == 64
    assert launch_scripts.scripts_hash() == launch_scripts.scripts_hash()


@pytest.mark.parametrize(
    ("backend", "role", "script"),
    [
        ("ray", "leader", "ray-leader.sh"),
        ("ray", "worker", "ray-worker.sh"),
        ("mp", "leader", "mp-node.sh"),
        ("mp", "worker", "mp-node.sh"),
    ],
)
def test_group_script_per_backend_and_role(backend: str, role: str, script: str) -> None:
    assert launch_scripts.group_script(backend, role) == script  # type: ignore[arg-type]
    assert launch_scripts.script_command(script) == ["bash", f"/opt/vllm-serving/{script}"]


def test_unknown_script_is_an_error() -> None:
    with pytest.raises(KeyError, match="unknown launch script"):
        launch_scripts.script_command("start.sh")


def fake_tools(bin_dir: Path) -> None:
    """`ray`, `vllm` and a `python3` whose first Ray query fails and whose second finds 2 nodes."""
    bin_dir.mkdir()
    tools = {
        "ray": 'echo "ray $*"\n',
        "vllm": 'echo "vllm $*"\n',
        "python3": (
            f'if [[ -f "{bin_dir}/queried" ]]; then echo "INFO connecting to Ray"; echo 2; '
            f'else touch "{bin_dir}/queried"; echo "ConnectionError" >&2; exit 1; fi\n'
        ),
    }
    for name, body in tools.items():
        path = bin_dir / name
        path.write_text("#!/usr/bin/env bash\n" + body)
        path.chmod(0o755)


def test_ray_leader_retries_the_node_count_then_execs_vllm(tmp_path: Path) -> None:
    fake_tools(tmp_path / "bin")
    env = {**RAY_ENV, "LAUNCH_DRY_RUN": "0", "RAY_JOIN_INTERVAL_SECONDS": "0"}
    result = subprocess.run(
        ["bash", str(launch_scripts.SCRIPTS_DIR / "ray-leader.sh"), "/models/m", "--port", "8000"],
        env={**env, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert seconds_masked(result.stdout) == [
        "ray start --head --port=6379 --node-ip-address=10.50.1.7 --object-store-memory=4294967296 "
        "--disable-usage-stats",
        "ray-leader: 0/2 Ray nodes alive, waiting (Ns of Ns)",
        "ray-leader: 2/2 Ray nodes alive after Ns",
        "vllm serve /models/m --port 8000",
    ]
