"""Smoke tests of the controller benchmarks: a `--quick` run of each completes and reports every figure as a positive
number, with a pass/fail verdict per target, and leaves the README alone (no timing assertions). Where a benchmark
repeats its figures, each is the median of its rounds and lies within their spread, and the counts the controller's
work must satisfy (one apply per engine per edit, the same number of requests in a baseline as the controller made)
are checked; a run without `--out` writes no results file."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks import (
    cel_rules,
    cli_startup,
    cold_list,
    engine_rollout,
    fleet_convergence,
    fleet_scale,
    ha_ownership,
    resilience,
    resolver,
)
from omectl.envtest import BinariesMissing, find_binaries

ROOT = Path(__file__).resolve().parents[2]
# no xdist group: the quick runs are independent subprocesses, so the workers may share them out
pytestmark = pytest.mark.long(60)


def run_quick(module: str, out: Path, timeout: float) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(
        [sys.executable, "-m", module, "--quick", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results: dict[str, Any] = orjson.loads(out.read_bytes())
    return results


def assert_within_spread(results: dict[str, Any], rounds: int) -> None:
    """Each figure is the median of `rounds` rounds: it lies within the [lowest, highest] the run reports."""
    assert results["repeats"] == rounds
    assert set(results["spread"]) == set(results["figures"])
    for name, (low, high) in results["spread"].items():
        assert low <= results["figures"][name] <= high, f"{name}: {results['figures'][name]} not in [{low}, {high}]"


def assert_every_figure_positive(results: dict[str, Any], figures: dict[str, Any], targets: dict[str, Any]) -> None:
    assert results["mode"] == "quick"
    assert set(results["figures"]) == set(figures)
    for name, value in results["figures"].items():
        assert isinstance(value, int | float) and not isinstance(value, bool), name
        assert math.isfinite(value) and value > 0, f"{name} = {value}"
    assert set(results["targets"]) == set(targets)
    for name, verdict in results["targets"].items():
        assert verdict["value"] == results["figures"][name]
        assert isinstance(verdict["pass"], bool)
    assert results["machine"]["cpu_count"] >= 1 and results["machine"]["python"]
    assert results["timestamp"]


def test_resolver_quick_run_reports_every_figure_as_a_positive_number_and_leaves_the_readme(tmp_path: Path) -> None:
    readme_before = resolver.README.read_text() if resolver.README.exists() else None
    results = run_quick("benchmarks.resolver", tmp_path / "resolver.json", timeout=120)

    assert_every_figure_positive(results, resolver.FIGURES, resolver.TARGETS)
    assert_within_spread(results, 3)
    assert results["phases"]["warm_resolve"]["samples"] > 0
    figures = results["figures"]
    assert figures["warm_resolve_us"] < figures["cold_resolve_us"]  # a hit merges nothing
    assert figures["edit_resolve_us"] < figures["edit_first_resolve_us"]  # one layer merged, not five
    what_if = results["phases"][resolver.WHAT_IF]
    assert "NullSerializer())" in what_if["note"]  # the what-if's second level keeps aiocache's default timeout
    for name in ("cold", "edit", "edit_first"):  # each what-if figure beside the default resolver's, same round
        default = results["phases"][f"{name}_resolve"]["median_us"]
        expected = what_if[f"{name}_resolve_median_us"] / default
        assert what_if[f"{name}_over_default"] == pytest.approx(expected, rel=0.01, abs=0.002), name
    assert (resolver.README.read_text() if resolver.README.exists() else None) == readme_before


def test_a_run_without_out_writes_no_results_file_when_it_leaves_the_readme(tmp_path: Path) -> None:
    committed = resolver.DEFAULT_OUT
    before = committed.read_bytes() if committed.exists() else None
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.resolver", "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "results JSON not written" in proc.stdout
    assert (committed.read_bytes() if committed.exists() else None) == before


def test_fleet_convergence_quick_run_reports_every_figure_as_a_positive_number_and_leaves_the_readme(
    tmp_path: Path,
) -> None:
    readme_before = fleet_convergence.README.read_text() if fleet_convergence.README.exists() else None
    results = run_quick("benchmarks.fleet_convergence", tmp_path / "fleet.json", timeout=240)

    assert_every_figure_positive(results, fleet_convergence.FIGURES, fleet_convergence.TARGETS)
    children = int(results["figures"]["children"])
    for phase in ("create", "delete", "recreate"):
        assert not results["phases"][phase]["deadline_hit"], phase
        assert results["phases"][phase]["verified_on_server"] == children, phase
    assert results["phases"]["raw"]["errors"] == 0
    # the delete's same writes: every child's status PUT and its Event POST answered 200 and 201
    assert (results["phases"]["same_writes"]["writes"], results["phases"]["same_writes"]["errors"]) == (children, 0)
    assert (fleet_convergence.README.read_text() if fleet_convergence.README.exists() else None) == readme_before


def test_engine_rollout_quick_run_reports_every_figure_as_a_positive_number_and_leaves_the_readme(
    tmp_path: Path,
) -> None:
    readme_before = engine_rollout.README.read_text() if engine_rollout.README.exists() else None
    results = run_quick("benchmarks.engine_rollout", tmp_path / "engine.json", timeout=300)

    assert_every_figure_positive(results, engine_rollout.FIGURES, engine_rollout.TARGETS)
    assert_within_spread(results, 3)
    isvcs = int(results["figures"]["inference_services"])
    assert_rollout_phases(results["phases"], isvcs)
    try:
        find_binaries()
    except BinariesMissing:
        assert "real_server" not in results
    else:  # the same phases against real kube-apiservers, in the same run
        real = results["real_server"]
        assert set(real["figures"]) == set(engine_rollout.FIGURES)
        assert all(math.isfinite(v) and v > 0 for v in real["figures"].values()), real["figures"]
        assert real["figures"]["inference_services"] == isvcs
        assert_rollout_phases(real["phases"], isvcs)
    assert (engine_rollout.README.read_text() if engine_rollout.README.exists() else None) == readme_before


def assert_rollout_phases(phases: dict[str, Any], isvcs: int) -> None:
    edits = [f"edit_{i}" for i in (1, 2, 3)]
    for phase in ("render", *edits):
        assert not phases[phase]["deadline_hit"], phase
        assert phases[phase]["verified_on_server"] == isvcs, phase
    # a new InferenceService: its engine Deployment and Service applied, its status written once
    assert phases["render"]["engine_applies"] == 2 * isvcs
    assert phases["render"]["isvc_modified_events"] == isvcs
    for phase in edits:  # an edit: one apply per engine Deployment, nothing else re-applied
        assert phases[phase]["engine_applies"] == isvcs, phase
        assert phases[phase]["deployment_modified_per_deployment"]["min"] >= 1, phase
    # the baselines make the writes the controller made, per InferenceService: 2 applies + status, apply + status
    for kind, requests in (("render", 3), ("edit", 2)):
        for i in (1, 2, 3):
            baseline = phases[f"same_writes_{kind}_{i}"]
            assert baseline["errors"] == 0, baseline
            assert (baseline["inference_services"], baseline["requests"]) == (isvcs, requests * isvcs), baseline


def test_fleet_scale_quick_run_reports_every_figure_beside_the_same_writes_and_the_kopf_peer_and_leaves_the_readme(
    tmp_path: Path,
) -> None:
    readme_before = fleet_scale.README.read_text() if fleet_scale.README.exists() else None
    results = run_quick("benchmarks.fleet_scale", tmp_path / "scale.json", timeout=600)

    assert_every_figure_positive(
        results, fleet_scale.all_figures(fleet_scale.QUICK), fleet_scale.targets_of(fleet_scale.QUICK)
    )
    rounds = fleet_scale.QUICK.rounds  # fewer than a full run's, each still checked
    assert_within_spread(results, rounds)
    assert results["sizes"]["fleets"] == [1, 2]
    for clusters in (1, 2):
        phases = results["phases"][f"{clusters}_clusters"]
        isvcs = clusters * fleet_scale.QUICK.isvcs_per_cluster
        assert phases["kopf"]["processes"] == clusters
        for i in range(1, rounds + 1):
            cold = phases[f"cold_start_{i}"]  # each cold start on a fleet whose rendered objects were undone
            assert not cold["deadline_hit"] and cold["reconcile_errors"] == 0, cold
            assert not phases[f"edit_{i}"]["deadline_hit"]
            # each profile edit: every engine Deployment applied once, every status written once, the edit itself
            writes = phases[f"edit_{i}"]["api_writes_by_request"]
            assert (writes["PATCH deployments"], writes["PUT inferenceservices"]) == (isvcs, isvcs), writes
            assert writes["PATCH clusterservingruntimes"] == clusters
            assert phases[f"latency_{i}"]["errors"] == 0 and phases[f"latency_{i}"]["samples"] > 0
            for who in ("omectl", "kopf"):
                steps = phases[f"runtime_convergence_{who}_{i}"]
                assert not steps["delete"]["deadline_hit"] and not steps["recreate"]["deadline_hit"], who
            # the kopf peer's cold start renders every engine, its profile edit applies each once, and writes statuses
            kopf_cold = phases[f"kopf_cold_start_{i}"]
            assert not kopf_cold["deadline_hit"] and kopf_cold["reconcile_errors"] == 0, kopf_cold
            assert kopf_cold["failures"] == {} and kopf_cold["applies"] == 2 * isvcs, kopf_cold
            assert not phases[f"kopf_edit_{i}"]["deadline_hit"]
            writes = phases[f"kopf_edit_{i}"]["api_writes_by_request"]
            assert writes["PATCH deployments"] == isvcs and writes["PUT inferenceservices"] >= isvcs, writes
            # the baselines make the controller's writes per InferenceService: 2 applies + status, apply + status
            for kind, requests in (("render", 3), ("edit", 2)):
                baseline = phases[f"same_writes_{kind}_{i}"]
                assert baseline["errors"] == 0, baseline
                assert (baseline["inference_services"], baseline["requests"]) == (isvcs, requests * isvcs), baseline
        assert len(phases["rounds"]) == rounds
        for figures in phases["rounds"]:  # each ratio from the controller's round and the baseline's same round
            cold = figures["cold_isvcs_per_s"] / figures["same_writes_render_per_s"]
            edit = figures["edit_isvcs_per_s"] / figures["same_writes_edit_per_s"]
            assert figures["cold_vs_same_writes"] == pytest.approx(cold, rel=0.01, abs=0.002)
            assert figures["edit_vs_same_writes"] == pytest.approx(edit, rel=0.01, abs=0.002)
            for name in fleet_scale.KOPF_COUNTERPARTS:  # and from omectl's and the kopf peer's same round
                ratio = figures[name] / figures[f"kopf_{name}"]
                assert figures[f"{name}_omectl_over_kopf"] == pytest.approx(ratio, rel=0.01, abs=0.002), name
            # the lowest ratio reachable: the same round's same writes' time over the peer's
            floor = isvcs / figures["same_writes_render_per_s"] / figures["kopf_cold_reconciled_s"]
            assert figures["cold_reconciled_s_floor_over_kopf"] == pytest.approx(floor, rel=0.01, abs=0.002)
    assert (tmp_path / "scale.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")  # drawn beside --out
    for clusters in (1, 2):  # the cold start's RSS growth per InferenceService: per cached object, times the objects
        figures = results["phases"][f"{clusters}_clusters"]["rounds"][0]
        per_isvc = (
            figures["rss_per_object_bytes"]
            * figures["objects_cached"]
            / (clusters * fleet_scale.QUICK.isvcs_per_cluster)
        )
        assert figures["rss_per_isvc_kib"] == pytest.approx(per_isvc / 1024, rel=0.01, abs=0.01)

    # reported again from the file, as a file written before rss_per_isvc_kib existed: the same figures and verdicts
    older = {**results, "figures": dict(results["figures"]), "spread": dict(results["spread"])}
    for clusters in (1, 2):
        del older["figures"][f"rss_per_isvc_kib_{clusters}c"], older["spread"][f"rss_per_isvc_kib_{clusters}c"]
    (tmp_path / "older.json").write_bytes(orjson.dumps(older))
    again = tmp_path / "again.json"
    assert fleet_scale.main(["--from-json", str(tmp_path / "older.json"), "--out", str(again), "--no-readme"]) == 0
    reported = orjson.loads(again.read_bytes())
    assert set(reported["figures"]) == set(results["figures"]) and set(reported["targets"]) == set(results["targets"])
    for name, value in results["figures"].items():
        assert reported["figures"][name] == pytest.approx(value, rel=0.01, abs=0.01), name
    assert {n: t["pass"] for n, t in reported["targets"].items()} == {
        n: t["pass"] for n, t in results["targets"].items()
    }
    assert (fleet_scale.README.read_text() if fleet_scale.README.exists() else None) == readme_before


def test_cold_list_quick_run_reports_every_figure_and_a_paged_first_list_holds_less_than_a_collected_one(
    tmp_path: Path,
) -> None:
    readme_before = cold_list.README.read_text() if cold_list.README.exists() else None
    results = run_quick("benchmarks.cold_list", tmp_path / "cold_list.json", timeout=300)

    sizes = cold_list.QUICK_SIZES
    assert_every_figure_positive(results, cold_list.figures_of(sizes), cold_list.targets_of(sizes))
    assert_within_spread(results, 3)
    assert results["details"]["sizes"] == list(sizes)
    largest = max(sizes)  # several pages of 500: the paged list holds about one page beyond the cache, not them all
    figures = results["figures"]
    assert figures[f"list_held_kib_{largest}"] < 0.75 * figures[f"collected_list_held_kib_{largest}"], figures
    assert (cold_list.README.read_text() if cold_list.README.exists() else None) == readme_before


def test_cli_startup_quick_run_reports_every_figure_and_leaves_the_readme(tmp_path: Path) -> None:
    readme_before = cli_startup.README.read_text() if cli_startup.README.exists() else None
    results = run_quick("benchmarks.cli_startup", tmp_path / "cli.json", timeout=120)

    assert_every_figure_positive(results, cli_startup.FIGURES, cli_startup.TARGETS)
    for name, (low, high) in results["spread"].items():
        assert low <= results["figures"][name] <= high, name
    assert (cli_startup.README.read_text() if cli_startup.README.exists() else None) == readme_before


def test_ha_ownership_quick_run_reports_every_figure_and_leaves_the_readme(tmp_path: Path) -> None:
    readme_before = ha_ownership.README.read_text() if ha_ownership.README.exists() else None
    results = run_quick("benchmarks.ha_ownership", tmp_path / "ha.json", timeout=180)

    assert_every_figure_positive(results, ha_ownership.FIGURES, ha_ownership.TARGETS)
    assert {name: len(values) for name, values in results["samples"].items()} == {
        "takeover": 1,
        "fence": 1,
        "fence_late": 1,
        "handover": 1,
    }
    assert (ha_ownership.README.read_text() if ha_ownership.README.exists() else None) == readme_before


def test_resilience_quick_run_reports_every_figure_and_leaves_the_readme(tmp_path: Path) -> None:
    readme_before = resilience.README.read_text() if resilience.README.exists() else None
    results = run_quick("benchmarks.resilience", tmp_path / "resilience.json", timeout=300)

    assert_every_figure_positive(results, resilience.FIGURES, resilience.TARGETS)
    assert len(results["samples"]["throttled"]) == 1
    # every edit made during the partition reached both healthy clusters
    assert len(results["samples"]["partition_rollouts"]) == results["sizes"]["partition_rollouts"] >= 2
    assert (resilience.README.read_text() if resilience.README.exists() else None) == readme_before


def test_cache_memory_reports_each_kind_and_the_rendered_workloads_cached_below_their_json(tmp_path: Path) -> None:
    out = tmp_path / "memory.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.cache_memory", "--isvcs", "10", "--namespaces", "2", "--out", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kinds = {row["kind"]: row for row in orjson.loads(out.read_bytes())["kinds"]}
    assert {"InferenceService", "ServingRuntime", "Deployment", "Service"} <= set(kinds)
    assert kinds["InferenceService"]["objects"] == kinds["Deployment"]["objects"] == kinds["Service"]["objects"] == 10
    for kind, row in kinds.items():
        assert 0 < row["cached_bytes"] <= row["decoded_bytes"], kind  # a transform never adds
    # rendered by the controller, cached without their spec or anything no reader reads (with their whole metadata
    # and status, as before the transforms of issue 15: a Deployment 0.74 of its JSON, a Service 1.6)
    assert kinds["Deployment"]["cached_bytes"] < 0.5 * kinds["Deployment"]["json_bytes"], kinds["Deployment"]
    assert kinds["Service"]["cached_bytes"] < kinds["Service"]["json_bytes"], kinds["Service"]


def test_cel_rules_quick_run_reports_every_figure_as_a_positive_number_and_leaves_the_readme(tmp_path: Path) -> None:
    readme_before = cel_rules.README.read_text() if cel_rules.README.exists() else None
    results = run_quick("benchmarks.cel_rules", tmp_path / "cel_rules.json", timeout=120)

    assert_every_figure_positive(results, cel_rules.FIGURES, cel_rules.TARGETS)
    assert (cel_rules.README.read_text() if cel_rules.README.exists() else None) == readme_before
