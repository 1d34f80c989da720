"""benchmarks/fleet_scale.py's verdicts: a target judged on a round that stopped at its phase's deadline fails,
whatever the value (the value is the deadline's, not a measurement)."""

from __future__ import annotations

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
