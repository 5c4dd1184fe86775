"""Accuracy benchmark of the capacity planner against recorded vLLM start-ups.

Predicts every run of the calibration table from its settings and model facts only, and prints,
per run, the predicted and logged ``GPU KV cache size`` tokens and ``Maximum concurrency`` with
their % error, then the mean absolute errors. The output is the table in capacity/ACCURACY.md.

    python -m benchmarks.calibration [--calibration-dir ../shared/calibration]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CALIBRATION_DIR = ROOT / ".." / "shared" / "calibration"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calibration-dir", type=Path, default=DEFAULT_CALIBRATION_DIR)
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:  # also runnable as `python benchmarks/calibration.py`
        sys.path.insert(0, str(ROOT))
    from capacity.calibration import evaluate, format_table

    print(format_table(evaluate(args.calibration_dir.resolve())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
