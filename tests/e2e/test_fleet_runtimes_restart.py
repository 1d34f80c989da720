"""A FleetRuntime rollout survives its controller: `omectl run` (a real process, with a hub) SIGKILLed while the
first wave soaks, and started again, goes on from the status: the wave's clusters are not written again, the
later wave is not started early nor skipped, and the rollout starts once.

The fleet: a hub fk-1 holding the registrations and the FleetRuntime, members fk-2 (`tier=lab`, wave 1) and fk-3
(wave 2). The template reaches no InferenceService, so each gate is the copies alone; the lab wave soaks for an
hour of real time, and a promote request (the annotation `omectl rollout promote` writes) moves it on after the
restart: only a running controller that read the rollout from the status acts on it.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omectl.core.fleet_runtimes import PROMOTE_ANNOTATION, REVISION_ANNOTATION
from tests.e2e.test_fleet_runtimes import NAMESPACE, fleet_runtime, register_members, template
from tests.support import SimulatedFleet, simulated_fleet, start_omectl_run, stop_process, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("fleet-runtimes-restart"), pytest.mark.long(35)]

HUB = "fk-1"
WAIT = 60  # seconds to wait for each outcome
MEMBERS = {"fk-2": {"gpu": "h200", "tier": "lab"}, "fk-3": {"gpu": "h200"}}
ROLLOUT = {
    "waves": [
        {"name": "lab", "clusterSelector": {"matchLabels": {"tier": "lab"}}, "soakSeconds": 3600},
        {"name": "rest", "percent": 100},
    ]
}


@dataclass
class Fleet(SimulatedFleet):
    base: Path

    def status(self) -> dict[str, Any]:
        return (self.get(HUB, "fleetruntime", "bump") or {}).get("status") or {}

    def copy(self, cluster: str) -> dict[str, Any] | None:
        return self.get(cluster, "clusterservingruntime", "bump")

    def revision_of(self, cluster: str) -> str | None:
        found = self.copy(cluster)
        return found["metadata"]["annotations"][REVISION_ANNOTATION] if found else None

    def reasons(self) -> list[str]:
        found = json.loads(self.k(HUB, "get", "events", "-n", "default", "-o", "json"))["items"]
        mine = [e for e in found if e["involvedObject"].get("name") == "bump"]
        return [e["reason"] for e in sorted(mine, key=lambda e: e["metadata"]["name"])]

    def controller(self, name: str) -> subprocess.Popen[str]:
        """`omectl run` with the hub (short member leases: a restart takes the killed process's clusters sooner)."""
        config = self.base / "controller.yaml"
        config.write_text(
            f"hub_kubeconfig: {self.base / 'hub.kubeconfig'}\nhub_namespace: {NAMESPACE}\n"
            "lease_duration: 3\nlease_renew_deadline: 2\nlease_retry_period: 0.5\n"
        )
        return start_omectl_run(self.base / f"{name}.log", "--config", str(config))


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    with simulated_fleet(tmp_path, 1 + len(MEMBERS), "fk-") as simulated:
        register_members(simulated.kubectl, simulated.bg, tmp_path, HUB, MEMBERS)
        yield Fleet(simulated.bg, simulated.kubectl, tmp_path)


def test_omectl_run_killed_mid_wave_goes_on_from_the_status_applying_nothing_twice(fleet: Fleet) -> None:
    apply = ["apply", "--validate=false", "-f", "-"]
    first = fleet.controller("first")
    try:
        fleet.k(HUB, *apply, input=json.dumps(fleet_runtime("bump", template("bump", "sglang:v1"))))
        until(lambda: fleet.status().get("phase") == "Succeeded", "revision 1 everywhere", timeout=WAIT)
        fleet.k(HUB, *apply, input=json.dumps(fleet_runtime("bump", template("bump", "sglang:v2"), rollout=ROLLOUT)))
        until(lambda: (fleet.status().get("rollout") or {}).get("phase") == "Soaking", "wave 1 soaking", timeout=WAIT)
        before = fleet.status()["rollout"]
        lab_copy = fleet.copy("fk-2")
        assert lab_copy is not None and fleet.revision_of("fk-3") == "1"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        stop_process(first)
    second = fleet.controller("second")
    try:
        # Promoted once the new process has read the rollout from the status: wave 1 passes, wave 2 starts.
        fleet.k(HUB, "annotate", "--overwrite", "fleetruntime", "bump", f"{PROMOTE_ANNOTATION}=after-restart")
        status = until(
            lambda: (s := fleet.status()) and (s.get("rollout") or {}).get("phase") == "Succeeded" and s,
            "the promoted rollout Succeeded under the new process",
            timeout=WAIT,
        )
        assert status["rollout"]["revision"] == before["revision"] == 2
        assert status["rollout"]["requests"] == {"promote": "after-restart"}
        again = fleet.copy("fk-2")
        assert again is not None
        assert again["metadata"]["resourceVersion"] == lab_copy["metadata"]["resourceVersion"]  # not written again
        assert fleet.revision_of("fk-3") == "2"
        reasons = until(lambda: (r := fleet.reasons()) and "RolloutSucceeded" in r and r, "the events", timeout=WAIT)
        assert reasons.count("RolloutStarted") == 1  # revision 1 went everywhere at once: no rollout, no events
        expected = ["RolloutStarted", "Soaking", "Promoted", "WaveSucceeded", "WaveStarted", "WaveSucceeded"]
        assert reasons[reasons.index("RolloutStarted") :] == [*expected, "RolloutSucceeded"]
    finally:
        stop_process(second)
