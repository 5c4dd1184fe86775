"""Offline engine: every stack previews with exit 0, the JSON has the documented shape, URNs are
the engine's, the same input gives byte-identical JSON, bad settings exit 2 with one line per
problem and no traceback, manifests are written, and the diff summarises changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from offline.__main__ import main
from offline.engine import preview_stack
from tests.helpers import STACKS, preview, raw_settings, run_offline, write_stack


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_previews_clean_with_the_documented_json_shape(stack: str) -> None:
    result = preview(stack)
    document = json.loads(result.to_json())
    assert {"stack", "project", "resources", "outputs", "capacity", "policies"} <= set(document)
    assert document["stack"] == stack and document["project"] == "vllm-serving"
    assert document["policies"]["ran"] is True
    assert [v for v in document["policies"]["violations"] if v["level"] == "mandatory"] == []
    first = document["resources"][0]
    assert {
        "urn",
        "type",
        "name",
        "parent",
        "custom",
        "inputs",
        "protect",
        "ignoreChanges",
        "dependencies",
        "provider",
    } <= set(first)
    assert len(document["resources"]) > 10


def test_child_urns_carry_the_parents_type_chain() -> None:
    graph = preview("prod").graph
    children = [r for r in graph.resources if r.parent]
    assert children
    for child in children:
        parent = graph.get(child.parent)
        parent_chain = parent.urn.split("::")[2]
        assert child.urn.split("::")[2] == f"{parent_chain}${child.type}", child.urn
        assert "pulumi:pulumi:Stack" not in child.urn


def test_same_input_gives_byte_identical_json() -> None:
    first = preview_stack("dev", policies=False).to_json()
    second = preview_stack("dev", policies=False).to_json()
    assert first == second


def test_secrets_are_masked_in_json() -> None:
    text = preview("dev").to_json()
    document = json.loads(text)
    assert document["outputs"]["apiKey"] == "[secret]"
    assert "1b47061264138c4ac30d75fd1eb44270" not in text


def test_invalid_stack_file_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    raw = raw_settings("dev")
    raw["models"][0]["maxModelLen"] = "lots"
    path = write_stack(tmp_path, raw)
    result = run_offline("preview", "--config", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: vllm-serving:models[0].maxModelLen: Input should be a valid integer")


def test_missing_stack_file_exits_2() -> None:
    assert main(["preview", "--stack", "does-not-exist", "--no-policies"]) == 2


def test_cli_preview_exit_0_and_json_lists_registrations() -> None:
    result = run_offline("preview", "--stack", "dev", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    types = {r["type"] for r in document["resources"]}
    assert "aws:eks/cluster:Cluster" in types
    assert "kubernetes:apps/v1:Deployment" in types


def test_manifests_are_written_as_kubectl_yaml(tmp_path: Path) -> None:
    assert main(["preview", "--stack", "dev", "--manifests", str(tmp_path), "--no-policies", "--json"]) == 0
    files = sorted(tmp_path.rglob("*.yaml"))
    assert files
    kinds = set()
    for path in files:
        manifest = yaml.safe_load(path.read_text())
        assert set(manifest) >= {"apiVersion", "kind", "metadata"}, path
        kinds.add(manifest["kind"])
    assert {"Deployment", "Service", "NetworkPolicy", "Namespace"} <= kinds


def test_diff_reports_changed_keys_and_cost(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = write_stack(tmp_path, raw_settings("dev"), name="base")
    raw = raw_settings("dev")
    raw["models"][0]["maxModelLen"] = 4096
    head = write_stack(tmp_path, raw, name="head")
    assert main(["diff", "--stack", "dev", "--base-config", str(base), "--config", str(head)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### Offline preview diff: `dev`")
    assert "to change" in out
    assert "maxModelLen" in out or "--max-model-len" in out or "spec.template" in out
