"""The consumer example's parts on their own: its settings and the client script (run with a
stand-in curl, and checked by shellcheck)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from consumer.config import ConsumerConfigError, ConsumerSettings, parse_settings
from consumer.job import SCRIPT, job_name

BODY = '{"object":"list","data":[{"id":"meta-llama/Llama-3.1-8B-Instruct","object":"model"}]}'


def test_settings_defaults() -> None:
    assert parse_settings({"servingStack": "organization/vllm-serving/dev"}) == ConsumerSettings(
        serving_stack="organization/vllm-serving/dev",
        model="",
        namespace="vllm-clients",
        use_serving_stack_kubeconfig=True,
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "vllm-serving-consumer:servingStack is required"),
        ({"servingStack": "dev stack"}, "vllm-serving-consumer:servingStack 'dev stack' is not a stack name"),
        (
            {"servingStack": "o/p/s", "namespace": "Apps"},
            "vllm-serving-consumer:namespace 'Apps' must be a DNS",
        ),
        ({"servingStack": "o/p/s", "model": "Llama_8B"}, "vllm-serving-consumer:model 'Llama_8B'"),
        ({"servingStack": "o/p/s", "useServingStackKubeconfig": "yes"}, "must be true or false, not 'yes'"),
    ],
)
def test_bad_settings_name_the_key(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ConsumerConfigError, match=message.replace("(", r"\(")):
        parse_settings(raw)


def test_job_names_are_dns_labels() -> None:
    assert job_name("llama-8b") == "list-models-llama-8b"
    long = job_name("m" * 60)
    assert len(long) == 63 and long.startswith("list-models-m")


def _fake_curl(bin_dir: Path, body: str, exit_code: int = 0) -> Path:
    """A curl that records its arguments and the header file's content, then answers `body`."""
    log = bin_dir / "curl.log"
    curl = bin_dir / "curl"
    curl.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$*" >> "{log}"\n'
        'for arg in "$@"; do case "$arg" in @*) cat "${arg#@}" >> "' + str(log) + '";; esac; done\n'
        f"printf '%s' '{body}'\n"
        f"exit {exit_code}\n"
    )
    curl.chmod(curl.stat().st_mode | stat.S_IEXEC)
    return log


def _run_script(tmp_path: Path, body: str, served_model: str, exit_code: int = 0) -> tuple[int, str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = _fake_curl(bin_dir, body, exit_code)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "BASE_URL": "http://llama-8b-api.vllm.svc.cluster.local:8000/v1",
        "SERVED_MODEL": served_model,
        "VLLM_API_KEY": "k3y-s3cr3t",
        "TMPDIR": str(tmp_path),
    }
    done = subprocess.run(["sh", str(SCRIPT)], env=env, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout + done.stderr, log.read_text()


def test_script_succeeds_when_the_model_is_listed_and_keeps_the_key_off_the_command_line(
    tmp_path: Path,
) -> None:
    code, output, calls = _run_script(tmp_path, BODY, "meta-llama/Llama-3.1-8B-Instruct")
    assert code == 0, output
    assert "ok: meta-llama/Llama-3.1-8B-Instruct is served" in output
    command_line = calls.splitlines()[0]
    assert command_line.endswith("http://llama-8b-api.vllm.svc.cluster.local:8000/v1/models")
    assert "k3y-s3cr3t" not in command_line, "the key must not be visible in the process list"
    assert "Authorization: Bearer k3y-s3cr3t" in calls
    assert "--retry 61 --retry-delay 15 --retry-max-time 900 --retry-connrefused" in command_line
    assert "--retry-all-errors" not in command_line, "a 401 (wrong key) must fail at once"
    assert "--fail" in command_line
    assert not (tmp_path / "authorization").exists(), "the header file is removed"


def test_script_fails_when_the_model_is_not_listed(tmp_path: Path) -> None:
    code, output, _ = _run_script(tmp_path, BODY, "qwen-32b")
    assert code == 1
    assert "error: qwen-32b is not among the models served" in output


def test_script_fails_with_curls_code_and_says_why(tmp_path: Path) -> None:
    code, output, _ = _run_script(tmp_path, "", "meta-llama/Llama-3.1-8B-Instruct", exit_code=22)
    assert code == 22
    assert "failed (curl exit 22; 22 is an HTTP error such as 401 for a wrong key)" in output
    assert not (tmp_path / "authorization").exists(), "the key's header file is removed on failure too"


def test_script_passes_shellcheck() -> None:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("shellcheck")), "--shell=sh", str(SCRIPT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout
