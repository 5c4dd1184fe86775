"""Fixtures of the capacity tests: where the shared calibration data lives and how to read its facts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from capacity import ModelFacts, load_model_facts

SHARED_DIR = Path(__file__).resolve().parents[2] / ".." / "shared"


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
