"""Two and three `omectl run --ha` processes share a simulated fleet; one is SIGKILLed in the middle of a rollout.

The clusters and the coordination cluster (`ha-hub`, holding the membership Leases) are embedded servers on a
background loop of this process, so the test sees every commit of each cluster's ownership Lease (in that cluster)
as it happens (a store listener stamps each one) and reads every cluster's request log in-process. The replicas run
with 3 s leases (renew deadline 2 s, retry 0.5 s).

What is checked, from the servers' own records:
- each cluster is owned by exactly one replica (its Lease's holder, the clusters in that replica's status file),
  and the split is balanced (`assign`: loads differ by at most one);
- after the SIGKILL, the dead replica's clusters are acquired by the others, never before its last renewal plus the
  lease duration has passed (how soon after is a figure of benchmarks/ha_ownership.py, not a bound here: a loaded
  machine is no stopwatch);
- every child runtime converges to the new chain;
- from the request logs: every write a replica sent to a cluster lies inside one of its terms on that cluster.
  A term is the interval a replica held the cluster's Lease: from the commit of its acquisition to the commit of
  the next holder change, and no later than its last renewal's commit plus the lease duration. Terms of one
  cluster never overlap, so no object is written by two replicas in one term.
"""

from __future__ import annotations

import itertools
import json
import re
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

from omectl.cli.dev import write_registrations
from omectl.fleet.sharding import LEASE_NAME, LeaseRecord, assign
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet, apply_document
from tests.cli.test_run import omectl_env

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
NS = "default"
HA_NS = "omectl-system"
SR = ("ome.io", "servingruntimes")
LEASE = ("coordination.k8s.io", "leases")
PROFILE, PROFILE_V2 = "profile", "profile-v2"
CLUSTERS = 5
CHILDREN = 12
LEASE_SECONDS, RENEW_DEADLINE, RETRY = 3, 2.0, 0.5
TAKEOVER_DEADLINE = 60.0  # how long to wait for the takeover before calling it missing (not a bound on its time)
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection"}
REPLICA_AGENT = re.compile(r"\(replica=([a-z0-9-]+_[0-9a-f]+)\)")
pytestmark = pytest.mark.xdist_group("ha-replicas")


def replica_of(identity: str) -> str:
    return identity.rsplit("_", 1)[0]


def runtime(kind: str, name: str, parent: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "ServingRuntime":
        meta["namespace"] = NS
    meta["annotations"] = {"ome.io/inherit-from": parent} if parent else {"ome.io/runtime-profile": "true"}
    spec: dict[str, Any] = {"disabled": parent is None, "engineConfig": {"runner": {"name": "ome-container"}}}
    if parent is None:
        spec["engineConfig"]["runner"]["image"] = f"docker.io/lmsysorg/sglang:{name}"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def children() -> list[str]:
    return [f"child-{i}" for i in range(CHILDREN)]


def chain_of(obj: dict[str, Any] | None) -> list[str] | None:
    status = (obj or {}).get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "InheritanceReady"), {})
    return status.get("inheritanceChain") if ready.get("reason") == "Resolved" else None


@dataclass
class LeaseCommit:
    time: float
    cluster: str
    holder: str
    duration: int


@dataclass
class HAFleet:
    bg: BackgroundFleet
    hub: EmbeddedAPIServer
    tmp: Path
    config: Path
    clusters_dir: Path
    commits: list[LeaseCommit] = field(default_factory=list)
    procs: dict[str, subprocess.Popen[str]] = field(default_factory=dict)

    @property
    def servers(self) -> list[EmbeddedAPIServer]:
        return self.bg.fleet.servers

    def on_loop(self, fn: Callable[[], Any]) -> Any:
        async def call() -> Any:
            return fn()

        return self.bg.run(call())

    def log(self, replica: str) -> str:
        """The replica's stderr (a file: a pipe nobody reads would block a chatty replica)."""
        return (self.tmp / f"{replica}.log").read_text()

    def spawn(self, replica: str) -> None:
        self.procs[replica] = self.popen(replica, replica)

    def popen(self, replica: str, label: str) -> subprocess.Popen[str]:
        """`omectl run --ha --replica-id <replica>`, its files named after `label`."""
        with (self.tmp / f"{label}.log").open("w") as log:
            return self._popen(replica, label, log)

    def _popen(self, replica: str, label: str, log: Any) -> subprocess.Popen[str]:
        status = self.tmp / f"status-{label}.json"
        return subprocess.Popen(
            [sys.executable, "-m", "omectl", "run", "--ha", "--replica-id", replica, "--config", str(self.config),
             "--status-file", str(status), "--trace-file", str(self.tmp / f"traces-{label}.jsonl"),
             "--no-install-webhooks", "--webhook-port", "0", "--concurrency", "2", "--metrics-port", "-1"],
            stdout=subprocess.DEVNULL, stderr=log, text=True, cwd=self.tmp, env=omectl_env(),
        )  # fmt: skip

    def status_clusters(self, replica: str) -> set[str] | None:
        try:
            document = json.loads((self.tmp / f"status-{replica}.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        return {c["name"] for c in document.get("clusters", []) if c["synced"]}

    def holders(self) -> dict[str, str]:
        """The replica id holding each cluster's ownership Lease (the holder identity is `<id>_<nonce>`)."""

        def read() -> dict[str, str]:
            found: dict[str, str] = {}
            for server in self.servers:
                obj = server.api.store.get(LEASE, HA_NS, LEASE_NAME)
                if obj is not None and (holder := LeaseRecord.from_object(obj).holder):
                    found[server.name] = replica_of(holder)
            return found

        result: dict[str, str] = self.on_loop(read)
        return result

    def chains(self) -> dict[tuple[str, str], list[str] | None]:
        def read() -> dict[tuple[str, str], list[str] | None]:
            return {(s.name, c): chain_of(s.api.store.get(SR, NS, c)) for s in self.servers for c in children()}

        result: dict[tuple[str, str], list[str] | None] = self.on_loop(read)
        return result

    def wait(self, check: Callable[[], Any], what: str, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = check()
            if found:
                return found
            for replica, proc in self.procs.items():
                if proc.poll() is not None and proc.returncode != -signal.SIGKILL:
                    err = self.log(replica)
                    raise AssertionError(f"replica {replica} exited ({proc.returncode}) before {what}:\n{err[-3000:]}")
            if time.monotonic() > deadline:
                holders = self.holders()
                logs = ""
                for replica, proc in self.procs.items():
                    proc.kill()
                    proc.wait()
                    logs += f"\n--- {replica}:\n{self.log(replica)[-3000:]}"
                raise AssertionError(f"never {what} within {timeout}s; holders {holders}{logs}")
            time.sleep(0.05)

    def stop_all(self) -> dict[str, tuple[int | None, str]]:
        outcome: dict[str, tuple[int | None, str]] = {}
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for replica, proc in self.procs.items():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            outcome[replica] = (proc.returncode, self.log(replica))
        return outcome


@pytest.fixture
def ha_fleet(tmp_path: Path) -> Iterator[HAFleet]:
    bg = BackgroundFleet(EmbeddedFleet(CLUSTERS, name_prefix="ha-"))
    bg.start()
    hub = EmbeddedAPIServer("ha-hub")
    try:
        bg.run(hub.start())
        bg.run(bg.fleet.apply([CRDS]))
        kubeconfig = bg.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
        clusters_dir = tmp_path / "clusters"
        write_registrations(clusters_dir, kubeconfig, [s.name for s in bg.fleet.servers])
        config = tmp_path / "ha.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "clusters_dir": str(clusters_dir),
                    "ha_kubeconfig": str(hub.write_kubeconfig(tmp_path / "hub.kubeconfig")),
                    "ha_namespace": HA_NS,
                    "lease_namespace": HA_NS,
                    "lease_duration": LEASE_SECONDS,
                    "lease_renew_deadline": RENEW_DEADLINE,
                    "lease_retry_period": RETRY,
                }
            )
        )
        fleet = HAFleet(bg, hub, tmp_path, config, clusters_dir)

        def recorder(cluster: str) -> Callable[[WatchEvent], None]:
            def record(event: WatchEvent) -> None:  # on the fleet's loop, at the commit
                if event.key != LEASE or event.obj["metadata"]["name"] != LEASE_NAME:
                    return
                lease = LeaseRecord.from_object(event.obj)
                holder = replica_of(lease.holder) if lease.holder else ""
                fleet.commits.append(LeaseCommit(time.time(), cluster, holder, lease.duration_seconds))

            return record

        for server in bg.fleet.servers:
            fleet.on_loop(lambda s=server: s.api.store.listeners.append(recorder(s.name)))

        async def seed() -> None:
            for server in bg.fleet.servers:  # the member install's namespace holds the ownership Lease
                await apply_document(server, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HA_NS}})
                await apply_document(server, runtime("ClusterServingRuntime", PROFILE))
                await apply_document(server, runtime("ClusterServingRuntime", PROFILE_V2))
                for child in children():
                    await apply_document(server, runtime("ServingRuntime", child, PROFILE))

        bg.run(seed())
        yield fleet
    finally:
        for proc in getattr(locals().get("fleet"), "procs", {}).values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        bg.run(hub.stop())
        bg.stop()


def terms(commits: list[LeaseCommit], end: float) -> dict[str, list[tuple[str, float, float]]]:
    """Per cluster: (holder, start, stop) for each interval a replica held the Lease, from the commits in order."""
    found: dict[str, list[tuple[str, float, float]]] = {}
    current: dict[str, tuple[str, float, float, int]] = {}  # cluster -> holder, start, last renewal, duration
    for commit in commits:
        held = current.get(commit.cluster)
        if held is not None and held[0] == commit.holder:
            current[commit.cluster] = (held[0], held[1], commit.time, commit.duration)
            continue
        if held is not None:
            holder, start, renewed, duration = held
            found.setdefault(commit.cluster, []).append((holder, start, min(commit.time, renewed + duration)))
            del current[commit.cluster]
        if commit.holder:
            current[commit.cluster] = (commit.holder, commit.time, commit.time, commit.duration)
    for cluster, (holder, start, renewed, duration) in current.items():
        found.setdefault(cluster, []).append((holder, start, min(end, renewed + duration)))
    return found


@pytest.mark.parametrize("replicas", [2, 3])
def test_replicas_shard_the_fleet_and_survive_a_sigkill_mid_rollout(ha_fleet: HAFleet, replicas: int) -> None:
    fleet = ha_fleet
    names = [s.name for s in fleet.servers]
    ids = [f"replica-{i}" for i in range(replicas)]
    for replica in ids:
        fleet.spawn(replica)

    # 1. every cluster owned by exactly one replica, each replica running exactly the clusters it holds
    def sharded() -> dict[str, str] | None:
        holders = fleet.holders()
        if sorted(holders) != names or set(holders.values()) != set(ids):
            return None
        for replica in ids:
            if fleet.status_clusters(replica) != {c for c, h in holders.items() if h == replica}:
                return None
        return holders

    holders = fleet.wait(sharded, "sharded the fleet across every replica", 45)
    shares = sorted(sum(1 for h in holders.values() if h == r) for r in ids)
    assert shares[-1] - shares[0] <= 1, holders  # balanced: nobody idle while another has two more
    fleet.wait(lambda: all(c == [PROFILE, n] for (_, n), c in fleet.chains().items()), "resolved every child", 30)
    # stable: nobody took or gave a cluster; each replica's status file (re-written as its caches re-sync) agrees
    assert fleet.holders() == holders
    fleet.wait(lambda: sharded() == holders, "kept the same shares in the status files", 10)

    # 2. a rollout: every child moves to profile-v2; status writes are slowed so it takes a few seconds
    victim = max(ids, key=lambda r: sum(1 for h in holders.values() if h == r))
    victims_clusters = sorted(c for c, h in holders.items() if h == victim)

    async def start_rollout() -> None:
        for server in fleet.servers:
            server.faults.delay_next(CHILDREN * 4, 0.1, method="PUT", path_contains="/status")
            for child in children():
                await apply_document(server, runtime("ServingRuntime", child, PROFILE_V2))

    fleet.bg.run(start_rollout())

    def rollout_underway() -> bool:
        moved = [c == [PROFILE_V2, n] for (cluster, n), c in fleet.chains().items() if cluster in victims_clusters]
        return any(moved) and not all(moved)

    fleet.wait(rollout_underway, f"started the rollout on {victim}'s clusters", 20)
    killed_at = time.time()
    fleet.procs[victim].send_signal(signal.SIGKILL)
    fleet.procs[victim].wait(10)

    # 3. the victim's clusters are taken over within the lease duration, and everything converges
    survivors = [r for r in ids if r != victim]
    fleet.wait(
        lambda: all(fleet.holders().get(c) in survivors for c in victims_clusters),
        f"took over {victim}'s clusters",
        TAKEOVER_DEADLINE,
    )
    fleet.wait(lambda: all(c == [PROFILE_V2, n] for (_, n), c in fleet.chains().items()), "converged every child", 30)
    after = fleet.holders()
    assert sorted(after) == names and set(after.values()) <= set(survivors)
    for replica in survivors:
        fleet.wait(
            lambda r=replica: fleet.status_clusters(r) == {c for c, h in fleet.holders().items() if h == r},
            f"{replica} running exactly its clusters",
            10,
        )
    commits = list(fleet.commits)
    by_cluster = terms(commits, time.time())
    for cluster in victims_clusters:
        victim_term = [t for t in by_cluster[cluster] if t[0] == victim][-1]
        takeover = next(t for t in by_cluster[cluster] if t[1] >= victim_term[2] and t[0] in survivors)
        print(f"takeover of {cluster} {takeover[1] - killed_at:.2f} s after the SIGKILL")
        last_renewal = max(c.time for c in commits if c.cluster == cluster and c.holder == victim)
        assert takeover[1] >= last_renewal + LEASE_SECONDS - 0.05, "taken before the victim's lease expired"

    # 4. a replica joins in the middle of another rollout: the others hand clusters over (stop, then release)
    joined = "replica-new"

    async def rollout_back() -> None:
        for server in fleet.servers:
            server.faults.delay_next(CHILDREN * 4, 0.25, method="PUT", path_contains="/status")
            for child in children():
                await apply_document(server, runtime("ServingRuntime", child, PROFILE))

    fleet.bg.run(rollout_back())
    fleet.spawn(joined)
    expected = assign(names, [*survivors, joined])
    assert joined in expected.values()  # bounded loads: a replica that joins always gets a share
    fleet.wait(lambda: fleet.holders() == expected, f"rebalanced onto {joined}", 30)
    fleet.wait(lambda: all(c == [PROFILE, n] for (_, n), c in fleet.chains().items()), "converged again", 30)
    for replica in [*survivors, joined]:
        fleet.wait(
            lambda r=replica: fleet.status_clusters(r) == {c for c, h in expected.items() if h == r},
            f"{replica} running exactly its clusters after the join",
            10,
        )

    # 5. from the request logs: each replica wrote to a cluster only inside its own terms there
    by_cluster = terms(list(fleet.commits), time.time())
    for cluster, intervals in by_cluster.items():
        ordered = sorted(intervals, key=lambda t: t[1])
        for (_, _, stop), (_, start, _) in itertools.pairwise(ordered):
            assert stop <= start + 1e-6, f"{cluster}: overlapping terms {ordered}"
    writes = 0
    for server in fleet.servers:
        for request in fleet.on_loop(server.request_log.records):
            if request.verb not in WRITE_VERBS or request.resource == "leases":
                continue
            match = REPLICA_AGENT.search(request.user_agent)
            assert match, f"a write without a replica's User-Agent: {request}"
            writer = replica_of(match.group(1))
            inside = [
                (start, stop)
                for holder, start, stop in by_cluster.get(server.name, [])
                if holder == writer and start <= request.time and request.end <= stop
            ]
            assert inside, f"{writer} wrote outside its terms on {server.name}: {request} terms {by_cluster}"
            writes += 1
    print(f"{writes} writes checked against {sum(len(t) for t in by_cluster.values())} terms")
    assert writes >= CLUSTERS * CHILDREN * 3  # the three rollouts' status writes, at least

    outcome = fleet.stop_all()
    for replica in [*survivors, joined]:
        code, err = outcome[replica]
        assert code == 0, f"{replica} exited {code}:\n{err[-3000:]}"
    # a clean stop releases the Leases, so nothing is left held
    assert fleet.holders() == {}


def test_a_bad_replica_id_or_lease_timings_exit_1_with_one_line(tmp_path: Path) -> None:
    from tests.cli.test_run import omectl

    bad_id = omectl("run", "--ha", "--replica-id", "Replica_1", cwd=tmp_path)
    assert bad_id.returncode == 1 and bad_id.stderr.startswith("error:")
    assert 'invalid replica id "Replica_1"' in bad_id.stderr and len(bad_id.stderr.strip().splitlines()) == 1
    config = tmp_path / "ha.yaml"
    config.write_text("ha: true\nlease_duration: 5\nlease_renew_deadline: 10\n")
    bad_timings = omectl("run", "--config", str(config), cwd=tmp_path)
    assert bad_timings.returncode == 1
    assert "must exceed the renew deadline" in bad_timings.stderr


def test_a_second_process_with_a_live_replica_id_is_refused_in_one_line(ha_fleet: HAFleet) -> None:
    fleet = ha_fleet
    fleet.spawn("replica-0")
    fleet.wait(lambda: fleet.holders() and set(fleet.holders().values()) == {"replica-0"}, "replica-0 running", 45)
    again = fleet.popen("replica-0", "again")
    assert again.wait(30) == 1
    err = (fleet.tmp / "again.log").read_text()
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith('error: replica id "replica-0" is in use by a live process: replica-0_'), err
    assert "give every replica its own --replica-id" in err
    assert set(fleet.holders().values()) == {"replica-0"}  # the first one keeps every cluster
