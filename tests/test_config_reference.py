"""The configuration reference (docs/configuration.md) and Pulumi.yaml's config schema are what
`python -m config_reference` generates from settings/, so they cannot drift from the code."""

from __future__ import annotations

import yaml

from config_reference import render_markdown, render_project_file
from settings import StackSettings
from tests.helpers import ROOT


def test_configuration_reference_is_up_to_date() -> None:
    assert (ROOT / "docs" / "configuration.md").read_text() == render_markdown(), (
        "run: python -m config_reference"
    )


def test_project_file_schema_is_up_to_date() -> None:
    assert (ROOT / "Pulumi.yaml").read_text() == render_project_file(), "run: python -m config_reference"


def test_every_settings_key_is_declared_with_a_description_and_its_default() -> None:
    config = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["config"]
    for name, field in StackSettings.model_fields.items():
        entry = config[f"vllm-serving:{field.alias}"]
        assert entry["description"], name
    assert config["vllm-serving:platform"]["default"] == "eks"
    assert config["vllm-serving:autoscaling"]["default"]["waitingRequestsThreshold"] == 10
    assert "default" not in config["vllm-serving:models"]


def test_reference_lists_nested_keys_with_defaults() -> None:
    text = render_markdown()
    assert "| `models[].maxModelLen` | integer | required |" in text
    assert "| `autoscaling.cooldownSeconds` | integer | `300` |" in text
    assert "| `apiKey` |" in text
