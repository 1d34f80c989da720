"""FleetRuntimes without a hub (issue 16): FleetRuntime files in the clusters directory that `omectl run
--clusters-dir` reads, what a hub would hold of them kept in `<clusters-dir>/.omectl-state`, and `omectl rollout
... --clusters-dir` showing and steering them. Everything goes through real processes: `omectl cluster add`
registers the clusters, `omectl run` applies the files, `omectl rollout` reads and requests, kubectl reads the
members.

The fleet: hl-1 (gpu=h200, tier=lab), hl-2 (gpu=h200), hl-3 (gpu=mi300x), and one `omectl run` for the module; the
restart test has a fleet and processes of its own. The templates reach no InferenceService, so a wave's gate is
its copies alone; the lab wave soaks for an hour, and a promote from the CLI moves it on.

Covered: a file applied to exactly the placed clusters, an edit as a new revision, the file deleted (its copies and
its state deleted); an edit with waves rolled wave by wave, paused, resumed, promoted and rolled back from the CLI,
the file left as written; `omectl run` SIGKILLed mid-wave and started again goes on from the state directory
(nothing applied twice, no wave skipped, the rollout started once); bad files (one that does not parse, one the
schema refuses, an invalid template) reported in one line each while the others are applied, a file that breaks
deleting nothing; the CLI's one-line refusals.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.core.fleet_runtimes import FLEET_RUNTIME_LABEL, REVISION_ANNOTATION
from tests.e2e.test_fleet_runtimes import fleet_runtime, template
from tests.support import (
    SimulatedFleet,
    omectl,
    omectl_process,
    simulated_fleet,
    start_omectl_run,
    stop_process,
    until,
)

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("fleet-runtimes-hubless")]

MEMBERS = {"hl-1": {"gpu": "h200", "tier": "lab"}, "hl-2": {"gpu": "h200"}, "hl-3": {"gpu": "mi300x"}}
WAVES = {
    "waves": [
        {"name": "lab", "clusterSelector": {"matchLabels": {"tier": "lab"}}, "soakSeconds": 3600},
        {"name": "rest", "percent": 100},
    ]
}
KIND = "fleetruntime.fleet.omectl.io"


@dataclass
class Hubless:
    fleet: SimulatedFleet
    clusters: Path
    """The clusters directory: registrations and FleetRuntime files."""
    log: Path
    """`omectl run`'s stderr."""

    def write(self, filename: str, *documents: dict[str, Any]) -> Path:
        path = self.clusters / filename
        path.write_text(yaml.safe_dump_all(documents))
        return path

    def rollout(self, *args: str, code: int = 0) -> str:
        return omectl("rollout", *args, "--clusters-dir", str(self.clusters), code=code)

    def report(self, name: str) -> dict[str, Any]:
        """`omectl rollout status NAME -o json`."""
        return json.loads(self.rollout("status", name, "-o", "json"))  # type: ignore[no-any-return]

    def wait(
        self, name: str, what: str, check: Callable[[dict[str, Any]], bool], timeout: float = 60
    ) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            report = self.report(name)
            return report if check(report) else None

        try:
            return until(reached, f"{name}: {what}", timeout)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{self.log.read_text()[-3000:]}") from None

    def wait_rollout(self, name: str, revision: int, phase: str, waves: list[str]) -> dict[str, Any]:
        return self.wait(
            name,
            f"revision {revision} {phase}, waves {waves}",
            lambda r: (
                (r["rollout"].get("revision"), r["rollout"].get("phase"), [w["phase"] for w in r["waves"]])
                == (revision, phase, waves)
            ),
        )

    def copy(self, cluster: str, runtime: str) -> dict[str, Any] | None:
        return self.fleet.get(cluster, "clusterservingruntime", runtime)

    def revision_of(self, cluster: str, runtime: str) -> str | None:
        found = self.copy(cluster, runtime)
        return found["metadata"]["annotations"][REVISION_ANNOTATION] if found else None

    def state(self, name: str) -> Path:
        return self.clusters / ".omectl-state" / "fleetruntimes" / name

    def reasons(self, name: str) -> list[str]:
        """The FleetRuntime's events, oldest first (kept in the state directory)."""
        path = self.state(name) / "events.jsonl"
        return [json.loads(line)["reason"] for line in path.read_text().splitlines()] if path.exists() else []

    def log_lines(self, *words: str) -> list[str]:
        return [line for line in self.log.read_text().splitlines() if all(w in line for w in words)]

    def reported(self, filename: str) -> list[str]:
        """The controller's lines saying what is wrong with a file."""
        return self.log_lines(f"fleet runtimes: {self.clusters / filename}: ")


def register(fleet: SimulatedFleet, clusters: Path, members: dict[str, dict[str, str]]) -> None:
    """`omectl cluster add` for each member, with its labels."""
    for name, labels in members.items():
        flags = [f"--label={k}={v}" for k, v in labels.items()]
        kubeconfig = str(fleet.kubectl.kubeconfig)
        omectl(
            "cluster",
            "add",
            name,
            "--kubeconfig",
            kubeconfig,
            "--context",
            name,
            *flags,
            "--clusters-dir",
            str(clusters),
        )


def running(log: Path) -> bool:
    return "fleet runtimes: read from" in log.read_text()


@pytest.fixture(scope="module")
def hubless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hubless]:
    base = tmp_path_factory.mktemp("hubless")
    with simulated_fleet(base, len(MEMBERS), "hl-") as fleet:
        clusters = base / "clusters"
        register(fleet, clusters, MEMBERS)
        log = base / "omectl.log"
        proc = start_omectl_run(log, "--clusters-dir", str(clusters))
        try:
            until(lambda: running(log) or proc.poll() is not None, "omectl run reading FleetRuntime files", 60)
            assert proc.poll() is None, log.read_text()
            yield Hubless(fleet, clusters, log)
        finally:
            stop_process(proc)


def test_a_file_is_applied_to_the_placed_clusters_an_edit_is_a_new_revision_and_deleting_it_deletes(
    hubless: Hubless,
) -> None:
    path = hubless.write("vllm.yaml", fleet_runtime("vllm", template("vllm-fleet", "vllm:0.6")))
    report = hubless.wait("vllm", "revision 1 Succeeded", lambda r: (r["revision"], r["phase"]) == (1, "Succeeded"))
    assert {c["name"]: (c["phase"], c["revision"]) for c in report["clusters"]} == {
        "hl-1": ("Applied", 1),
        "hl-2": ("Applied", 1),
    }
    for cluster in ("hl-1", "hl-2"):
        copy = hubless.copy(cluster, "vllm-fleet")
        assert copy is not None and copy["spec"]["engineConfig"]["runner"]["image"] == "vllm:0.6"
        assert copy["metadata"]["labels"][FLEET_RUNTIME_LABEL] == "vllm"
        assert copy["metadata"]["annotations"][REVISION_ANNOTATION] == "1"
    assert hubless.copy("hl-3", "vllm-fleet") is None  # gpu=mi300x is not placed
    (first,) = json.loads(hubless.rollout("history", "vllm", "-o", "json"))["revisions"]
    assert (first["revision"], first["current"], first["image"]) == (1, True, "vllm:0.6")

    # An image bump in the file: revision 2 on every placed cluster, picked up without a restart.
    hubless.write("vllm.yaml", fleet_runtime("vllm", template("vllm-fleet", "vllm:0.7")))
    hubless.wait("vllm", "revision 2 Succeeded", lambda r: (r["revision"], r["phase"]) == (2, "Succeeded"))
    assert [hubless.revision_of(c, "vllm-fleet") for c in ("hl-1", "hl-2")] == ["2", "2"]
    rows = json.loads(hubless.rollout("history", "vllm", "-o", "json"))["revisions"]
    assert [(r["revision"], r["image"]) for r in rows] == [(2, "vllm:0.7"), (1, "vllm:0.6")]
    kept = json.loads((hubless.state("vllm") / "fleetruntime.json").read_text())
    assert (kept["status"]["revision"], kept["metadata"]["generation"]) == (2, 2)

    # The file deleted: the FleetRuntime is, with its copies and everything kept of it.
    path.unlink()
    until(lambda: all(hubless.copy(c, "vllm-fleet") is None for c in ("hl-1", "hl-2")), "the copies deleted")
    until(lambda: not hubless.state("vllm").exists(), "its state deleted")
    assert hubless.rollout("status", "vllm", code=1) == (
        f'error: fleetruntime "vllm" not found in {hubless.clusters}\n'
    )


def test_an_edit_of_the_file_rolls_in_waves_steered_by_the_rollout_cli(hubless: Hubless, tmp_path: Path) -> None:
    path = hubless.write("bump.yaml", fleet_runtime("bump", template("bump", "sglang:v1")))
    hubless.wait("bump", "revision 1 Succeeded", lambda r: (r["revision"], r["phase"]) == (1, "Succeeded"))
    # Before the edit: the plan numbers it as the controller will, per wave of the registered clusters.
    edited = tmp_path / "bump-v2.yaml"
    edited.write_text(yaml.safe_dump(fleet_runtime("bump", template("bump", "sglang:v2"), rollout=WAVES)))
    argv = ("rollout", "plan", "bump", "-f", str(edited), "-o", "json", "--clusters-dir", str(hubless.clusters))
    plan = json.loads(omectl_process(*argv, code=1).stdout)  # as kubectl diff: 1, something would change
    assert (plan["revision"], plan["errors"], plan["written"]) == (2, [], False)
    assert [(w["name"], [c["cluster"] for c in w["clusters"]]) for w in plan["waves"]] == [
        ("lab", ["hl-1"]),
        ("rest", ["hl-2"]),
    ]
    path.write_text(edited.read_text())
    report = hubless.wait_rollout("bump", 2, "Soaking", ["Soaking", "Pending"])
    assert [(c["name"], c["wave"], c["revision"]) for c in report["clusters"]] == [
        ("hl-1", "lab", 2),
        ("hl-2", "rest", 1),
    ]
    assert (hubless.revision_of("hl-1", "bump"), hubless.revision_of("hl-2", "bump")) == ("2", "1")
    text = hubless.rollout("status", "bump").splitlines()
    assert text[0] == f"{KIND}/bump: revision 2 Soaking, stable 1"
    assert text[1].split() == ["wave", "1", "lab", "Soaking", "[####################]", "0/0", "revision", "2", "hl-1"]
    assert text[3] == "wave 1 (lab): every engine ready at revision 2; soaking for 3600s"

    # Pause and resume: requests in the state directory; the file stays as it was written.
    written = path.read_bytes()
    assert hubless.rollout("pause", "bump") == f"{KIND}/bump paused\n"
    hubless.wait_rollout("bump", 2, "Paused", ["Paused", "Pending"])
    assert hubless.rollout("resume", "bump") == f"{KIND}/bump resumed\n"
    hubless.wait_rollout("bump", 2, "Soaking", ["Soaking", "Pending"])
    assert path.read_bytes() == written
    # Promote: the lab wave passes, the rest wave gets revision 2 (its gate: the copy alone, no soak).
    assert hubless.rollout("promote", "bump") == f"{KIND}/bump promote requested\n"
    report = hubless.wait_rollout("bump", 2, "Succeeded", ["Succeeded", "Succeeded"])
    assert hubless.revision_of("hl-2", "bump") == "2"
    rows = json.loads(hubless.rollout("history", "bump", "-o", "json"))["revisions"]
    assert [(r["revision"], r["current"], r["stable"]) for r in rows] == [(2, True, False), (1, False, True)]
    assert hubless.rollout("history", "bump").splitlines()[0].split() == [
        "REVISION",
        "NAME",
        "HASH",
        "CURRENT",
        "STABLE",
        "IMAGE",
    ]

    # Rollback: a revision that is not kept is refused before anything is written; the stable one goes back.
    error = hubless.rollout("rollback", "bump", "--to", "99", code=1)
    assert error == "error: revision 99 of fleetruntime bump is not kept (kept: 1, 2)\n"
    said = hubless.rollout("rollback", "bump")
    assert said == f"{KIND}/bump rollback to the stable revision requested\n"
    report = hubless.wait_rollout("bump", 2, "RolledBack", ["RolledBack", "RolledBack"])
    assert report["rollout"]["message"] == "revision 1 re-applied to hl-2, hl-1 after a rollback was requested"
    assert [hubless.revision_of(c, "bump") for c in ("hl-1", "hl-2")] == ["1", "1"]
    assert hubless.copy("hl-2", "bump")["spec"]["engineConfig"]["runner"]["image"] == "sglang:v1"  # type: ignore[index]
    reasons = hubless.reasons("bump")
    steps = ["RolloutStarted", "Soaking", "Paused", "Resumed", "Promoted", "RolloutSucceeded", "RolledBack"]
    assert [r for r in reasons if r in steps] == [
        "RolloutStarted",
        "Soaking",
        "Paused",
        "Resumed",
        "Soaking",
        "Promoted",
        "RolloutSucceeded",
        "RolledBack",
    ]
    assert hubless.log_lines("FleetRuntime bump: RollbackRequested: rollback of revision 2 to revision 1")
    path.unlink()


def test_bad_files_are_reported_in_one_line_each_and_the_others_are_applied(hubless: Hubless) -> None:
    ok = hubless.write("ok.yaml", fleet_runtime("ok", template("ok", "ok:1")))
    broken = hubless.clusters / "broken.yaml"
    broken.write_text("apiVersion: fleet.omectl.io/v1alpha1\nkind: FleetRuntime\nmetadata: {name: broken\n")
    hubless.write("refused.yaml", fleet_runtime("refused", template("refused", "x:1"), driftPolicy="Sometimes"))
    hubless.write("invalid.yaml", fleet_runtime("invalid", template("invalid", "x:1", kind="ServingRuntime")))

    hubless.wait("ok", "revision 1 Succeeded", lambda r: (r["revision"], r["phase"]) == (1, "Succeeded"))
    assert [hubless.revision_of(c, "ok") for c in ("hl-1", "hl-2")] == ["1", "1"]
    # A file that does not parse, and a document the schema refuses: one line each, naming the file.
    (unparsed,) = until(lambda: hubless.reported("broken.yaml"), "broken.yaml reported")
    assert f"fleet runtimes: {broken}: invalid YAML: " in unparsed
    (refused,) = until(lambda: hubless.reported("refused.yaml"), "refused.yaml reported")
    assert "fleetruntime refused: spec.driftPolicy: must be one of" in refused
    assert all(hubless.copy(c, "refused") is None for c in MEMBERS)
    error = hubless.rollout("status", "refused", code=1)
    assert error.startswith('error: fleetruntime "refused" not found in ') and "spec.driftPolicy" in error
    assert error.count("\n") == 1
    # A template the controller cannot apply: Invalid, as in a hub, and one line.
    report = hubless.wait("invalid", "Invalid", lambda r: r["phase"] == "Invalid")
    assert report["clusters"] == []
    (line,) = until(lambda: hubless.reported("invalid.yaml"), "invalid.yaml reported")
    assert "spec.namespaces is required for a ServingRuntime template" in line

    # A file that breaks deletes nothing (which FleetRuntimes it held is not known): ok keeps its copies and state.
    ok.write_text("kind: FleetRuntime\nmetadata: [ok\n")
    until(lambda: hubless.log_lines(f"fleet runtimes: {ok}: invalid YAML"), "ok.yaml reported")
    assert (hubless.state("ok") / "fleetruntime.json").exists()
    assert hubless.report("ok")["phase"] == "Succeeded"
    assert [hubless.revision_of(c, "ok") for c in ("hl-1", "hl-2")] == ["1", "1"]
    # Mended with an edit: the edit is read.
    hubless.write("ok.yaml", fleet_runtime("ok", template("ok", "ok:2")))
    hubless.wait("ok", "revision 2 Succeeded", lambda r: (r["revision"], r["phase"]) == (2, "Succeeded"))
    for filename in ("ok.yaml", "broken.yaml", "refused.yaml", "invalid.yaml"):
        (hubless.clusters / filename).unlink()
    until(lambda: all(hubless.copy(c, "ok") is None for c in ("hl-1", "hl-2")), "ok's copies deleted")


def test_the_rollout_cli_without_a_hub_refuses_in_one_line(hubless: Hubless, tmp_path: Path) -> None:
    hubless.write("nowaves.yaml", fleet_runtime("nowaves", template("nowaves", "x:1")))
    assert hubless.rollout("promote", "nowaves", code=1) == (
        "error: fleetruntime nowaves has no spec.rollout.waves: nothing to promote\n"
    )
    both = omectl("rollout", "status", "nowaves", "--clusters-dir", str(hubless.clusters), "--context", "x", code=2)
    assert both.count("\n") == 1 and "--clusters-dir" in both and "give one or the other" in both
    missing = tmp_path / "nope"
    assert omectl("rollout", "history", "x", "--clusters-dir", str(missing), code=1) == (
        f"error: clusters directory {missing} does not exist\n"
    )
    (hubless.clusters / "nowaves.yaml").unlink()


def test_omectl_run_killed_mid_wave_goes_on_from_the_state_directory(tmp_path: Path) -> None:
    members = {"hk-1": {"tier": "lab", "gpu": "h200"}, "hk-2": {"gpu": "h200"}}
    with simulated_fleet(tmp_path, len(members), "hk-") as fleet:
        clusters = tmp_path / "clusters"
        register(fleet, clusters, members)
        config = tmp_path / "controller.yaml"  # short member leases: a restart takes the killed one's clusters sooner
        config.write_text("lease_duration: 3\nlease_renew_deadline: 2\nlease_retry_period: 0.5\n")
        args = ("--config", str(config), "--clusters-dir", str(clusters))
        hubless = Hubless(fleet, clusters, tmp_path / "first.log")
        first = start_omectl_run(hubless.log, *args)
        try:
            hubless.write("bump.yaml", fleet_runtime("bump", template("bump", "sglang:v1")))
            hubless.wait("bump", "revision 1 Succeeded", lambda r: (r["revision"], r["phase"]) == (1, "Succeeded"))
            hubless.write("bump.yaml", fleet_runtime("bump", template("bump", "sglang:v2"), rollout=WAVES))
            before = hubless.wait_rollout("bump", 2, "Soaking", ["Soaking", "Pending"])["rollout"]
            lab_copy = hubless.copy("hk-1", "bump")
            assert lab_copy is not None and hubless.revision_of("hk-2", "bump") == "1"
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        finally:
            stop_process(first)
        # Promoted while no controller runs: the request waits in the state directory for the next one.
        assert hubless.rollout("promote", "bump") == f"{KIND}/bump promote requested\n"
        hubless.log = tmp_path / "second.log"
        second = start_omectl_run(hubless.log, *args)
        try:
            report = hubless.wait_rollout("bump", 2, "Succeeded", ["Succeeded", "Succeeded"])
            assert report["rollout"]["revision"] == before["revision"] == 2
            assert report["rollout"]["stableRevision"] == before["stableRevision"] == 1
            assert set(report["rollout"]["requests"]) == {"promote"}
            again = hubless.copy("hk-1", "bump")
            assert again is not None
            assert again["metadata"]["resourceVersion"] == lab_copy["metadata"]["resourceVersion"]  # not written again
            assert hubless.revision_of("hk-2", "bump") == "2"
            reasons = hubless.reasons("bump")
            assert reasons.count("RolloutStarted") == 1  # revision 1 went everywhere at once: no rollout, no events
            assert reasons[reasons.index("RolloutStarted") :] == [
                "RolloutStarted",
                "Soaking",
                "Promoted",
                "WaveSucceeded",
                "WaveStarted",
                "WaveSucceeded",
                "RolloutSucceeded",
            ]
            assert not hubless.log_lines("RolloutStarted")  # the second process went on; it started nothing
            rows = json.loads(hubless.rollout("history", "bump", "-o", "json"))["revisions"]
            assert [(r["revision"], r["image"]) for r in rows] == [(2, "sglang:v2"), (1, "sglang:v1")]  # read back
        finally:
            stop_process(second)
