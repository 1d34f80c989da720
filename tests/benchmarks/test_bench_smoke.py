"""Smoke test of the embedded server benchmark: a `--quick` run completes and reports every figure."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from benchmarks.embedded_server import FIGURES, README, TARGETS

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("benchmark")


def test_quick_run_reports_every_figure_as_a_positive_number_and_leaves_the_readme(tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    readme_before = README.read_text() if README.exists() else None
    python_path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=python_path)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.embedded_server", "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = orjson.loads(out.read_bytes())

    assert results["mode"] == "quick"
    assert set(results["figures"]) == set(FIGURES)
    for name, value in results["figures"].items():
        assert isinstance(value, int | float) and not isinstance(value, bool), name
        assert math.isfinite(value) and value > 0, f"{name} = {value}"
    assert set(results["targets"]) == set(TARGETS)
    for name, verdict in results["targets"].items():
        assert verdict["value"] == results["figures"][name]
        assert isinstance(verdict["pass"], bool)
    assert results["machine"]["cpu_count"] >= 1 and results["machine"]["python"]
    assert results["timestamp"]
    for phase in ("create", "patch", "watch", "list", "memory"):
        assert results["phases"][phase]["errors"] == 0, results["phases"][phase]["first_error"]
    assert (README.read_text() if README.exists() else None) == readme_before
