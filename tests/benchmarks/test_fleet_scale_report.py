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
