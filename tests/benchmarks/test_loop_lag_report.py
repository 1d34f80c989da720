"""benchmarks/loop_lag.py's report of the controller's own figures: the longest-step histogram by reconcile kind
between two scrapes, and the slow steps and full collections read back from the controller's log lines."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from benchmarks.loop_lag import SLOW_STEP_S, slow_steps, step_buckets, step_histogram
from omectl.observability.metrics import ControllerMetrics
from omectl.observability.steps import SlowStep, SlowSteps

CSR = "ome.io/ClusterServingRuntime"


def test_the_step_histogram_counts_only_the_storms_reconciles_by_kind() -> None:
    metrics = ControllerMetrics()
    metrics.observe_longest_step(CSR, 0.002)  # before the storm
    before = step_buckets(metrics.exposition().decode())
    for seconds in (0.0008, 0.003, 0.004, 0.2):
        metrics.observe_longest_step(CSR, seconds)
    metrics.observe_longest_step("Service", 0.0009)
    after = step_buckets(metrics.exposition().decode())
    histogram = step_histogram(before, after)
    assert histogram[CSR] == {"reconciles": 4, "p50_s": 0.005, "p99_s": 0.25, "max_s": 0.25, "over_50ms": 1}
    assert histogram["Service"]["reconciles"] == 1 and histogram["Service"]["over_50ms"] == 0


def test_slow_steps_are_read_back_from_the_lines_the_controller_logs(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    slow = SlowSteps(threshold=SLOW_STEP_S)
    with caplog.at_level(logging.WARNING, logger="omectl.observability.steps"):
        stack = ("omectl/core/ome/render.py:10 render", "omectl/kube/client.py:397 request_bytes")
        slow.record(SlowStep("bench-1:" + CSR + ":storm-7", 0.12, "start", "omectl/x.py:1 f", [stack], 0.03))
    log = tmp_path / "omectl.log"
    log.write_text("\n".join(f"2026-12-06 WARNING omectl.observability.steps: {m}" for m in caplog.messages) + "\n")
    [step] = slow_steps(log)
    assert step["kind"] == CSR and step["ms"] == 120 and step["cpu_ms"] == 30
    assert step["from"] == "start" and step["to"] == "omectl/x.py:1 f"
    assert step["sampled_in"] == "omectl/core/ome/render.py:10 render x1"
