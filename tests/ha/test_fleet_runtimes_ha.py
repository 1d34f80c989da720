"""FleetRuntimes under `--ha` (issue 16): only the replica holding the fleet Lease drives them, also through the
clusters another replica runs, and a SIGKILLed holder's rollout is taken over from the status.

The fleet: a hub fh-1 (registration Secrets, the FleetRuntime, the membership Leases and the fleet Lease
`omectl-fleet-runtimes`) and two members fh-2 and fh-3, each with one simulated 8-GPU node, the sample profile's
child runtime and an InferenceService on it. Two `omectl run --ha` replicas share the members, one each (balanced
assignment), so whichever holds the fleet Lease runs one member and observes the other.

What is checked, from the servers' own records:
- the fleet Lease has one holder, and every FleetRuntime status write in the hub came from the replica holding it
  at that moment (its terms, as tests/ha/test_replicas.py reads them from the Lease's commits);
- the holder wrote the copy into the member it does not run, and read that member's gate: wave 1 is the other
  replica's member, whose engine is re-rendered (by its owner) and Ready at the new revision: Soaking;
- SIGKILLed while wave 1 soaks, the holder's fleet Lease is taken by the survivor, which goes on from the status:
  after a promote, wave 2 gets the revision; the wave-1 copy is not written again and the rollout started once.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.controller.fleet_driver import FLEET_LEASE_NAME
from omectl.core.fleet_runtimes import REVISION_ANNOTATION
from omectl.fleet.sharding import LEASE_NAME, LeaseRecord
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet, apply_document
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.cli.test_run import omectl_env
from tests.e2e.test_fleet_runtimes import NAMESPACE, SAMPLES, fleet_runtime, isvc, registration
from tests.ha.test_replicas import REPLICA_AGENT, LeaseCommit, replica_of, terms

pytestmark = [pytest.mark.xdist_group("ha-fleet-runtimes"), pytest.mark.long(25)]

HUB = "fh-1"
MEMBERS = ("fh-2", "fh-3")
LEASE = ("coordination.k8s.io", "leases")
FLEET_RUNTIMES = ("fleet.omectl.io", "fleetruntimes")
CSR = ("ome.io", "clusterservingruntimes")
ISVC = ("ome.io", "inferenceservices")
LEASE_SECONDS, RENEW_DEADLINE, RETRY = 3, 2.0, 0.5
REPLICAS = ("replica-a", "replica-b")


@dataclass
class Fleet:
    bg: BackgroundFleet
    tmp: Path
    config: Path
    fleet_lease: list[LeaseCommit] = field(default_factory=list)
    procs: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    def server(self, name: str) -> Any:
        return next(s for s in self.bg.fleet.servers if s.name == name)

    def read(self, cluster: str, key: tuple[str, str], namespace: str | None, name: str) -> dict[str, Any] | None:
        async def get() -> dict[str, Any] | None:
            found: dict[str, Any] | None = self.server(cluster).api.store.get(key, namespace or "", name)
            return found

        return self.bg.run(get())  # type: ignore[no-any-return]

    def apply(self, cluster: str, doc: dict[str, Any]) -> None:
        self.bg.run(apply_document(self.server(cluster), doc))

    def spawn(self, replica: str) -> None:
        with (self.tmp / f"{replica}.log").open("w") as log:
            self.procs[replica] = subprocess.Popen(
                [sys.executable, "-m", "omectl", "run", "--ha", "--replica-id", replica, "--config", str(self.config),
                 "--trace-file", str(self.tmp / f"traces-{replica}.jsonl"), "--no-install-webhooks",
                 "--webhook-port", "0", "--metrics-port", "-1"],
                stdout=subprocess.DEVNULL, stderr=log, text=True, cwd=self.tmp, env=omectl_env(),
            )  # fmt: skip

    def owners(self) -> dict[str, str]:
        """The replica holding each member's ownership Lease."""
        found = {}
        for member in MEMBERS:
            obj = self.read(member, LEASE, NAMESPACE, LEASE_NAME)
            if obj is not None and (holder := LeaseRecord.from_object(obj).holder):
                found[member] = replica_of(holder)
        return found

    def leader(self) -> str | None:
        obj = self.read(HUB, LEASE, NAMESPACE, FLEET_LEASE_NAME)
        holder = LeaseRecord.from_object(obj).holder if obj is not None else ""
        return replica_of(holder) if holder else None

    def status(self) -> dict[str, Any]:
        return (self.read(HUB, FLEET_RUNTIMES, None, "profile") or {}).get("status") or {}

    def copy(self, member: str) -> dict[str, Any] | None:
        return self.read(member, CSR, None, "sglang-profile")

    def ready(self, member: str) -> bool:
        status = (self.read(member, ISVC, "llama-demo", "follows") or {}).get("status") or {}
        return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or [])

    def wait(self, check: Callable[[], Any], what: str, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = check()
            if found:
                return found
            for replica, proc in self.procs.items():
                if proc.poll() is not None and proc.returncode != -signal.SIGKILL:
                    log = (self.tmp / f"{replica}.log").read_text()[-3000:]
                    raise AssertionError(f"{replica} exited ({proc.returncode}) before {what}:\n{log}")
            if time.monotonic() > deadline:
                logs = "".join(f"\n--- {r}:\n{(self.tmp / f'{r}.log').read_text()[-3000:]}" for r in self.procs)
                raise AssertionError(f"never {what} within {timeout}s; status {self.status()}{logs}")
            time.sleep(0.05)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    simulator = {name: SimulatorConfig(pools=(NodePool(count=1, gpus_per_node=8),)) for name in MEMBERS}
    bg = BackgroundFleet(EmbeddedFleet(1 + len(MEMBERS), name_prefix="fh-", simulator=simulator))
    bg.start()
    fleet: Fleet | None = None
    try:
        bg.run(bg.fleet.apply([Path(__file__).resolve().parents[2] / "deploy" / "crds"]))
        servers = {s.name: s for s in bg.fleet.servers}
        config = tmp_path / "ha.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "hub_kubeconfig": str(servers[HUB].write_kubeconfig(tmp_path / "hub.kubeconfig")),
                    "hub_namespace": NAMESPACE,
                    "ha_namespace": NAMESPACE,
                    "lease_namespace": NAMESPACE,
                    "lease_duration": LEASE_SECONDS,
                    "lease_renew_deadline": RENEW_DEADLINE,
                    "lease_retry_period": RETRY,
                }
            )
        )
        fleet = Fleet(bg, tmp_path, config)

        def record(event: WatchEvent) -> None:  # on the fleet's loop, at the commit
            if event.key == LEASE and event.obj["metadata"]["name"] == FLEET_LEASE_NAME:
                lease = LeaseRecord.from_object(event.obj)
                holder = replica_of(lease.holder) if lease.holder else ""
                fleet.fleet_lease.append(LeaseCommit(time.time(), HUB, holder, lease.duration_seconds))

        async def seed() -> None:
            servers[HUB].api.store.listeners.append(record)
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
            await apply_document(servers[HUB], namespace)
            for name in MEMBERS:
                await apply_document(servers[name], namespace)
                member = servers[name].write_kubeconfig(tmp_path / f"{name}.kubeconfig").read_text()
                await apply_document(servers[HUB], registration(name, member, {"gpu": "h200"}))

        bg.run(seed())
        yield fleet
    finally:
        for proc in (fleet.procs if fleet is not None else {}).values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        bg.stop()


def profile(image: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((SAMPLES / "profile.yaml").read_text())
    doc["spec"]["engineConfig"]["runner"]["image"] = image
    return doc


def test_only_the_fleet_lease_holder_drives_a_rollout_across_both_replicas_clusters(fleet: Fleet) -> None:
    for replica in REPLICAS:
        fleet.spawn(replica)
    owners = fleet.wait(lambda: (o := fleet.owners()) and set(o.values()) == set(REPLICAS) and o, "one member each")
    leader = fleet.wait(fleet.leader, "a holder of the fleet Lease")
    other = next(r for r in REPLICAS if r != leader)
    (elsewhere,) = [m for m, r in owners.items() if r == other]  # the member the holder does not run
    (here,) = [m for m in MEMBERS if m != elsewhere]

    # Revision 1 everywhere at once; then each member gets the sample model, the child runtime and an engine.
    fleet.apply(HUB, fleet_runtime("profile", profile("sglang:v1")))
    fleet.wait(lambda: fleet.status().get("phase") == "Succeeded", "revision 1 on both members")
    for member in MEMBERS:
        fleet.apply(member, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llama-demo"}})
        for sample in ("clusterbasemodel.yaml", "runtime.yaml"):
            fleet.apply(member, yaml.safe_load((SAMPLES / sample).read_text()))
        fleet.apply(member, isvc("follows"))
    fleet.wait(lambda: all(fleet.ready(m) for m in MEMBERS), "both engines Ready")

    # An image bump in two waves, the first the member the holder does not run: it writes the copy there and
    # reads that member's gate (its engine re-rendered by the other replica, Ready at the new revision).
    waves = [{"name": "first", "clusters": [elsewhere], "soakSeconds": 3600}, {"name": "second", "percent": 100}]
    fleet.apply(HUB, fleet_runtime("profile", profile("sglang:v2"), rollout={"waves": waves}))
    soaking = fleet.wait(
        lambda: (s := fleet.status()) and (s.get("rollout") or {}).get("phase") == "Soaking" and s, "wave 1 soaking"
    )
    assert soaking["waves"][0]["engines"] == {"reached": 1, "updated": 1, "ready": 1, "pinned": 0}
    first_copy = fleet.copy(elsewhere)
    assert first_copy is not None and first_copy["metadata"]["annotations"][REVISION_ANNOTATION] == "2"
    assert fleet.copy(here)["metadata"]["annotations"][REVISION_ANNOTATION] == "1"  # type: ignore[index]
    copy_writers = {
        replica_of(m.group(1))
        for r in fleet.bg.run(_records(fleet.server(elsewhere)))
        if r.resource == "clusterservingruntimes" and r.verb == "patch" and (m := REPLICA_AGENT.search(r.user_agent))
    }
    assert copy_writers == {leader}, copy_writers  # only the holder writes copies, also where it does not run

    # The holder is SIGKILLed: the survivor takes the fleet Lease (and the other member), reads the rollout from
    # the status and acts on a promote: wave 2 gets the revision, wave 1's copy is left as it is.
    killed_at = time.time()
    fleet.procs[leader].send_signal(signal.SIGKILL)
    fleet.procs[leader].wait(10)
    fleet.wait(lambda: fleet.leader() == other and set(fleet.owners().values()) == {other}, "the survivor takes over")
    hub_kubeconfig = str(fleet.tmp / "hub.kubeconfig")
    promote = subprocess.run(
        [sys.executable, "-m", "omectl", "rollout", "promote", "profile", "--kubeconfig", hub_kubeconfig],
        capture_output=True, text=True, env=omectl_env(), timeout=60,
    )  # fmt: skip
    assert promote.returncode == 0, promote.stderr
    done = fleet.wait(
        lambda: (s := fleet.status()) and (s.get("rollout") or {}).get("phase") == "Succeeded" and s,
        "the promoted rollout Succeeded under the survivor",
    )
    assert set(done["rollout"]["requests"]) == {"promote"}
    assert fleet.copy(here)["metadata"]["annotations"][REVISION_ANNOTATION] == "2"  # type: ignore[index]
    assert fleet.copy(elsewhere)["metadata"]["resourceVersion"] == first_copy["metadata"]["resourceVersion"]  # type: ignore[index]
    fleet.wait(lambda: all(fleet.ready(m) for m in MEMBERS), "both engines Ready at revision 2")

    # From the hub's records: every FleetRuntime status write came from the fleet Lease's holder of the moment.
    by_holder = terms(list(fleet.fleet_lease), time.time())[HUB]
    takeover = next(start for holder, start, _ in by_holder if holder == other)
    assert takeover >= killed_at, "the survivor held the fleet Lease before the holder died"
    writes = [
        r
        for r in fleet.bg.run(_records(fleet.server(HUB)))
        if r.resource == "fleetruntimes" and r.subresource == "status" and r.verb == "update"
    ]
    writers = {replica_of(m.group(1)) for r in writes if (m := REPLICA_AGENT.search(r.user_agent))}
    assert writers == {leader, other}
    for request in writes:
        match = REPLICA_AGENT.search(request.user_agent)
        assert match, f"a status write without a replica's User-Agent: {request}"
        writer = replica_of(match.group(1))
        inside = [
            (start, stop)
            for holder, start, stop in by_holder
            if holder == writer and start <= request.time and request.end <= stop
        ]
        assert inside, f"{writer} wrote the status outside its terms of the fleet Lease: {request} {by_holder}"
    reasons = fleet.bg.run(_event_reasons(fleet.server(HUB)))
    assert reasons.count("RolloutStarted") == 1 and "Promoted" in reasons, reasons


async def _records(server: Any) -> list[Any]:
    return list(server.request_log.records())


async def _event_reasons(server: Any) -> list[str]:
    return [e["reason"] for e in server.api.store.items(("", "events"), "default")]
