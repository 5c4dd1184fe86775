"""Fixtures of the capacity tests: the shared calibration data, its facts files and a fake Hub."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from capacity import ModelFacts, load_model_facts

SHARED_DIR = Path(__file__).resolve().parents[2] / ".." / "shared"
COMMIT = "0e9e39f249a16976918f6564b8830bc894c89659"
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}
INFO = {
    "sha": COMMIT,
    "safetensors": {"parameters": {"BF16": 8030261248}, "total": 8030261248},
    "siblings": [
        {"rfilename": "config.json", "size": 855},
        {"rfilename": "model-00001-of-00002.safetensors", "size": 9_000_000_000},
        {"rfilename": "model-00002-of-00002.safetensors", "size": 7_060_000_000},
    ],
}


class FakeHub:
    """Answers the two Hub requests from fixed documents and records them."""

    commit = COMMIT
    config = CONFIG

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, str]]] = []

    def __call__(self, url: str, headers: Mapping[str, str]) -> bytes:
        self.calls.append((url, dict(headers)))
        if "/api/models/" in url:
            return json.dumps(INFO).encode()
        return json.dumps(CONFIG).encode()


@pytest.fixture
def calibration_dir() -> Path:
    """The recorded vLLM start-ups (../shared/calibration; always present in CI)."""
    return (SHARED_DIR / "calibration").resolve()


@pytest.fixture
def calibration_facts(calibration_dir: Path) -> Callable[[str], ModelFacts]:
    """Load a facts file of the calibration set by its file stem."""

    def load(stem: str) -> ModelFacts:
        return load_model_facts(calibration_dir / "models" / f"{stem}.json")

    return load


@pytest.fixture
def fake_hub() -> FakeHub:
    """A fetch function for ``capacity.hub`` that serves a fixed Llama config and safetensors index."""
    return FakeHub()
