"""What StackReferences read offline: recorded files, this project's own stacks run in a child
process (`python -m offline outputs`), secret outputs kept secret, cycles refused."""

from __future__ import annotations

import json

import pulumi
import pytest

from offline.engine import ReferencedStacks, local_stack_of
from offline.graph import SECRET_SIG_KEY, SECRET_SIG_VALUE, is_secret
from offline.recorder import record_program, stack_reference_state
from tests.helpers import preview, run_offline

ENVELOPE = {SECRET_SIG_KEY: SECRET_SIG_VALUE, "value": "s3cr3t"}


def test_secret_envelopes_become_secret_output_names() -> None:
    state = stack_reference_state("o/p/s", {"key": ENVELOPE, "url": "http://x", "nested": {"a": ENVELOPE}})
    assert state == {
        "name": "o/p/s",
        "outputs": {"key": "s3cr3t", "url": "http://x", "nested": {"a": "s3cr3t"}},
        "secretOutputNames": ["key"],
    }


def test_a_program_reads_secret_outputs_as_secrets() -> None:
    def program() -> None:
        ref = pulumi.StackReference("serving", stack_name="o/p/s")
        pulumi.export("key", ref.require_output("key"))
        pulumi.export("url", ref.require_output("url"))

    graph = record_program(program, stack_outputs={"o/p/s": {"key": ENVELOPE, "url": "http://x"}})
    assert is_secret(graph.outputs["key"]) and graph.outputs["key"]["value"] == "s3cr3t"
    assert graph.outputs["url"] == "http://x"


@pytest.mark.parametrize(
    ("reference", "stack"),
    [
        ("organization/vllm-serving/dev", "dev"),
        ("vllm-serving/prod", "prod"),
        ("acme/vllm-serving/staging", None),  # no Pulumi.staging.yaml here
        ("acme/network/prod", None),  # another project
        ("dev", None),
    ],
)
def test_which_references_name_a_stack_of_this_project(reference: str, stack: str | None) -> None:
    assert local_stack_of(reference) == stack


def test_files_win_and_unknown_stacks_read_nothing() -> None:
    references = ReferencedStacks({"organization/vllm-serving/dev": {"contractVersion": "0"}})
    assert references.get("organization/vllm-serving/dev") == {"contractVersion": "0"}
    assert references.get("acme/network/prod") is None
    assert references.errors == []


def test_a_stack_that_references_itself_is_a_cycle_not_a_hang() -> None:
    references = ReferencedStacks({}, resolving="prod,dev")
    assert references.get("organization/vllm-serving/dev") == {}
    assert references.errors == ["stack reference cycle: prod -> dev -> dev"]


def test_outputs_command_prints_the_stack_outputs_with_secrets_enveloped() -> None:
    done = run_offline("outputs", "--stack", "dev")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["stack"] == "organization/vllm-serving/dev"
    assert document["outputs"] == preview("dev").graph.outputs
    assert is_secret(document["outputs"]["apiKey"]) and is_secret(document["outputs"]["kubeconfig"])
    assert not is_secret(document["outputs"]["endpoints"])
