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
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from omectl.core.fleet_runtimes import PROMOTE_ANNOTATION, REVISION_ANNOTATION
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.e2e.test_fleet_runtimes import NAMESPACE, fleet_runtime, registration, template
from tests.support import Kubectl, kubectl_path

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("fleet-runtimes-restart")]

ROOT = Path(__file__).resolve().parents[2]
HUB = "fk-1"
MEMBERS = {"fk-2": {"gpu": "h200", "tier": "lab"}, "fk-3": {"gpu": "h200"}}
ROLLOUT = {
    "waves": [
        {"name": "lab", "clusterSelector": {"matchLabels": {"tier": "lab"}}, "soakSeconds": 3600},
        {"name": "rest", "percent": 100},
    ]
}
T = TypeVar("T")


def until(probe: Callable[[], T | None], what: str, timeout: float = 60) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"never: {what} (last: {last!r})")


class Fleet:
    def __init__(self, kubectl: Kubectl, base: Path) -> None:
        self.kubectl = kubectl
        self.base = base

    def k(self, cluster: str, *args: str, **kw: Any) -> str:
        return self.kubectl.run(f"--context={cluster}", *args, **kw).stdout  # type: ignore[no-any-return]

    def get(self, cluster: str, *what: str) -> dict[str, Any] | None:
        proc = self.kubectl.run(f"--context={cluster}", "get", *what, "-o", "json", check=False)
        return json.loads(proc.stdout) if proc.returncode == 0 else None

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
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OMECTL_"))}
        return subprocess.Popen(
            [sys.executable, "-m", "omectl", "run", "--config", str(config), "--no-install-webhooks",
             "--webhook-port", "0", "--metrics-port", "0", "--trace-file", str(self.base / f"{name}.jsonl")],
            stdout=subprocess.DEVNULL, stderr=(self.base / f"{name}.log").open("w"), text=True,
            env=dict(env, PYTHONPATH=str(ROOT)),
        )  # fmt: skip


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    bg = BackgroundFleet(EmbeddedFleet(1 + len(MEMBERS), name_prefix="fk-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))
        kubectl = Kubectl(kubectl_path(), bg.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig"), tmp_path / "kc")
        kubectl.run(f"--context={HUB}", "create", "namespace", NAMESPACE)
        servers = {s.name: s for s in bg.fleet.servers}
        for name, labels in MEMBERS.items():
            member = servers[name].write_kubeconfig(tmp_path / f"{name}.kubeconfig").read_text()
            doc = registration(name, member, labels)
            kubectl.run(f"--context={HUB}", "apply", "--validate=false", "-f", "-", input=json.dumps(doc))
        servers[HUB].write_kubeconfig(tmp_path / "hub.kubeconfig")
        yield Fleet(kubectl, tmp_path)
    finally:
        bg.stop()


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_omectl_run_killed_mid_wave_goes_on_from_the_status_applying_nothing_twice(fleet: Fleet) -> None:
    apply = ["apply", "--validate=false", "-f", "-"]
    first = fleet.controller("first")
    try:
        fleet.k(HUB, *apply, input=json.dumps(fleet_runtime("bump", template("bump", "sglang:v1"))))
        until(lambda: fleet.status().get("phase") == "Succeeded", "revision 1 everywhere")
        fleet.k(HUB, *apply, input=json.dumps(fleet_runtime("bump", template("bump", "sglang:v2"), rollout=ROLLOUT)))
        until(lambda: (fleet.status().get("rollout") or {}).get("phase") == "Soaking", "wave 1 soaking")
        before = fleet.status()["rollout"]
        lab_copy = fleet.copy("fk-2")
        assert lab_copy is not None and fleet.revision_of("fk-3") == "1"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        stop(first)
    second = fleet.controller("second")
    try:
        # Promoted once the new process has read the rollout from the status: wave 1 passes, wave 2 starts.
        fleet.k(HUB, "annotate", "--overwrite", "fleetruntime", "bump", f"{PROMOTE_ANNOTATION}=after-restart")
        status = until(
            lambda: (s := fleet.status()) and (s.get("rollout") or {}).get("phase") == "Succeeded" and s,
            "the promoted rollout Succeeded under the new process",
        )
        assert status["rollout"]["revision"] == before["revision"] == 2
        assert status["rollout"]["requests"] == {"promote": "after-restart"}
        again = fleet.copy("fk-2")
        assert again is not None
        assert again["metadata"]["resourceVersion"] == lab_copy["metadata"]["resourceVersion"]  # not written again
        assert fleet.revision_of("fk-3") == "2"
        reasons = until(lambda: (r := fleet.reasons()) and "RolloutSucceeded" in r and r, "the events")
        assert reasons.count("RolloutStarted") == 1  # revision 1 went everywhere at once: no rollout, no events
        expected = ["RolloutStarted", "Soaking", "Promoted", "WaveSucceeded", "WaveStarted", "WaveSucceeded"]
        assert reasons[reasons.index("RolloutStarted") :] == [*expected, "RolloutSucceeded"]
    finally:
        stop(second)
