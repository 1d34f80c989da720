"""Smoke test of the embedded server benchmark: a `--quick` run completes and reports every figure, and, where
`make envtest` has built the real kube-apiserver, every figure of the real server beside it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from benchmarks.embedded_server import FIGURES, README, TARGETS
from omectl.envtest import BinariesMissing, find_binaries

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.xdist_group("benchmark"), pytest.mark.long(35)]


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
        timeout=300,
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
    for phase in ("create", "patch"):  # every request made and answered, and the latencies ordered
        details = results["phases"][phase]
        assert not details["deadline_hit"], phase
        assert details["ok"] == details["requested"] > 0, details
        assert 0 < details["p50_ms"] <= details["p99_ms"], details
    assert (README.read_text() if README.exists() else None) == readme_before
    try:
        binaries = find_binaries()
    except BinariesMissing:
        assert "real_server" not in results
        assert "no real-server column" in proc.stdout
        return
    real = results["real_server"]
    assert real["server"] == f"kube-apiserver {binaries.kube_version} with etcd {binaries.etcd_version}"
    assert set(real["figures"]) == set(FIGURES)
    for name, value in real["figures"].items():
        assert math.isfinite(value) and value > 0, f"real {name} = {value}"
        assert real["embedded_over_real"][name] == round(results["figures"][name] / value, 3)
    for phase in ("create", "patch", "watch", "list", "memory"):
        assert real["phases"][phase]["errors"] == 0, real["phases"][phase]["first_error"]
    assert "real kube-apiserver" in proc.stdout
