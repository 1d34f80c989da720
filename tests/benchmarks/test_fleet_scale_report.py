"""benchmarks/fleet_scale.py's verdicts: a target judged on a round that stopped at its phase's deadline fails,
whatever the value (the value is the deadline's, not a measurement)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from benchmarks import fleet_scale


def passing(value: float) -> dict[str, Any]:
    return {"target": 0.333, "op": "<=", "value": value, "pass": True}


def convergence(recreate_hit: bool) -> dict[str, Any]:
    return {
        "delete": {"elapsed_s": 2.0, "deadline_hit": False},
        "recreate": {"elapsed_s": 300.0 if recreate_hit else 20.0, "deadline_hit": recreate_hit},
    }


def test_a_ratio_judged_on_a_round_that_hit_its_deadline_fails_and_says_why() -> None:
    targets = {
        "runtime_converge_s_omectl_over_kopf_10c": passing(0.15),
        "cold_reconciled_s_omectl_over_kopf_10c": passing(0.3),
    }
    phases = {
        "10_clusters": {
            "runtime_convergence_kopf_1": convergence(recreate_hit=False),
            "runtime_convergence_kopf_2": convergence(recreate_hit=True),
            "kopf_cold_start_1": {"deadline_hit": False},
            "kopf": {},
        }
    }
    judged = fleet_scale.judged_with_deadlines(targets, phases)

    assert judged["runtime_converge_s_omectl_over_kopf_10c"]["pass"] is False
    assert judged["runtime_converge_s_omectl_over_kopf_10c"]["deadline_hit"] is True
    assert judged["cold_reconciled_s_omectl_over_kopf_10c"] == targets["cold_reconciled_s_omectl_over_kopf_10c"]
    assert fleet_scale.verdict_of(judged["runtime_converge_s_omectl_over_kopf_10c"]).startswith("FAIL")
    results = {"targets": judged}
    (line,) = [m for m in fleet_scale.missed_targets(results) if "runtime_converge" in m]
    assert "deadline" in line


def test_rounds_that_all_finished_leave_the_verdicts_alone() -> None:
    targets = {"runtime_converge_s_omectl_over_kopf_4c": passing(0.2)}
    phases = {"4_clusters": {f"runtime_convergence_kopf_{i}": convergence(recreate_hit=False) for i in (1, 2, 3)}}
    assert fleet_scale.judged_with_deadlines(targets, phases) == targets


def test_a_missed_reason_quotes_this_runs_figures_and_a_question_mark_where_nothing_was_measured() -> None:
    results = {
        "sizes": {"fleets": [1, 4, 10]},
        "figures": {
            "same_writes_render_per_s_1c": 200.0,
            "same_writes_render_per_s_10c": 160.0,
            "same_writes_edit_per_s_1c": 566.0,
            "same_writes_edit_per_s_10c": 366.0,
            "edit_converge_s_1c": 1.37,
        },
        "phases": {
            "10_clusters": {
                f"latency_{i}": {"cpu_s_until_idle": cpu, "idle_s_after_sending": idle}
                for i, (cpu, idle) in enumerate([(27.9, 23.2), (25.4, 17.7), (26.0, 17.9)], start=1)
            }
        },
        "targets": {
            name: {"target": 1.0, "op": "<=", "value": 2.0, "pass": False}
            for name in ("growth_cold_reconciled_s", "growth_edit_converge_s", "latency_p50_ms_10c")
        },
    }
    cold, edit, latency = (line for line in fleet_scale.missed_targets(results) if line.startswith("- "))
    assert "grows 1.25 times faster than linear from 1 to 10 clusters on this run: 200 and 160" in cold
    assert "falls from 566 to 366 InferenceServices/s from 1 to 10 clusters" in edit
    assert "1.55 times linear growth" in edit and "over in 1.4 s" in edit
    assert "cost it 26 CPU seconds at 10 clusters, 18 s of it after the last edit" in latency
    del results["figures"], results["phases"]
    cold, edit, latency = (line for line in fleet_scale.missed_targets(results) if line.startswith("- "))
    assert "grows ? times faster" in cold and "cost it ? CPU seconds" in latency


def test_a_phases_loop_figures_are_the_lag_between_two_scrapes_and_the_probes_answered_since_it_began(
    tmp_path: Path,
) -> None:
    omectl = fleet_scale.OmectlProcess(tmp_path, "omectl")
    assert omectl.command[-2:] == ["--metrics-port", str(omectl.metrics_port)]
    omectl.prober.probes.extend(
        [
            (1.0, 0.01, True),  # before the phase
            (10.0, 0.001, False),  # refused: the process does not listen yet
            (10.1, 0.02, True),
            (10.2, 0.75, True),
            (10.3, 30.0, False),  # no answer within the probe's timeout
        ]
    )
    before = {0.005: 10.0, 0.05: 12.0, 0.1: 12.0, float("inf"): 12.0}
    after = {0.005: 100.0, 0.05: 197.0, 0.1: 210.0, float("inf"): 212.0}  # 200 more: 98.5% within 50 ms
    figures = omectl.loop_figures(before, after, since=9.0)
    assert figures == {
        "loop_lag_p99_ms": 100.0,
        "loop_lag_samples": 200,
        "healthz_probes": 3,
        "healthz_slowest_s": 30.0,
        "healthz_failures": 1,
    }
    beyond = omectl.loop_figures({}, {0.1: 1.0, float("inf"): 100.0}, since=0.0)
    assert beyond["loop_lag_p99_ms"] == fleet_scale.LAG_BEYOND_MS


def test_a_results_file_from_before_a_figure_existed_reports_without_that_row_or_its_target() -> None:
    sizes = fleet_scale.Sizes((1,), 6, 10, 2, 20.0, 2.0, 60.0, rounds=1)
    expected = fleet_scale.all_figures(sizes)
    figures = {name: 1.0 for name in expected if not name.startswith(("loop_lag", "healthz"))}
    results = {
        "mode": "full",
        "sizes": {**dataclasses.asdict(sizes), "fleets": [1]},
        "figures": figures,
        "spread": {name: [1.0, 1.0] for name in figures},
        "phases": {},
    }
    refreshed = fleet_scale.refreshed(results)
    assert "loop_lag_p99_ms_1c" not in refreshed["targets"] and "rss_over_json_1c" in refreshed["targets"]
    labels = [row[0] for row in fleet_scale.table_rows(refreshed)]
    assert fleet_scale.PER_SIZE["omectl_rss_mb"][1] in labels
    assert fleet_scale.PER_SIZE["loop_lag_p99_ms"][1] not in labels
