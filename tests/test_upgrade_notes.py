"""Every changed default, new or removed setting and new or removed output since the last release
has a line in docs/upgrading.md (the release's contract: tests/data/released-contract.json)."""

from __future__ import annotations

import json
from typing import Any

import yaml

from outputs import OUTPUTS
from tests.helpers import ROOT

RELEASED = json.loads((ROOT / "tests" / "data" / "released-contract.json").read_text())
UPGRADING = (ROOT / "docs" / "upgrading.md").read_text()
# The notes of the coming release: the first `## ` section (older releases' sections follow it).
NOTES = UPGRADING.split("\n## ", 2)[1]


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}", item, out)
    else:
        out[prefix] = value


def current_defaults() -> dict[str, Any]:
    """Defaults of every non-secret setting, from Pulumi.yaml's generated config schema."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    defaults: dict[str, Any] = {}
    for key, spec in project["config"].items():
        if "default" in spec:
            _flatten(key.split(":", 1)[1], spec["default"], defaults)
    return defaults


def changed_keys(released: dict[str, Any], current: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(released) | set(current) if released.get(k, ...) != current.get(k, ...))


def test_changed_defaults_and_settings_have_an_upgrade_note() -> None:
    changed = changed_keys(RELEASED["defaults"], current_defaults())
    missing = [key for key in changed if f"`{key}`" not in NOTES]
    assert missing == [], f"add a line to docs/upgrading.md for {missing}"


def test_added_and_removed_outputs_have_an_upgrade_note() -> None:
    released, current = set(RELEASED["outputs"]), {o.key for o in OUTPUTS}
    missing = [key for key in sorted(released ^ current) if f"`{key}`" not in NOTES]
    assert missing == [], f"add a line to docs/upgrading.md for outputs {missing}"


def test_the_check_sees_a_changed_default() -> None:
    assert changed_keys({"a.b": 1, "a.c": 2}, {"a.b": 1, "a.c": 3, "a.d": None}) == ["a.c", "a.d"]
