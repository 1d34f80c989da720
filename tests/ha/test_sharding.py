"""Ownership and sharding: the balanced assignment, and each member's ownership Lease acquired, renewed, refused,
expired, fenced, handed over and deleted, over real HTTP.

Rounds are driven by hand (`run_round`), so each step's effect is checked before the next, on fake time
(`LeaseTime`): expiry, renew deadlines and fencing are checked at the instant they fall, whatever the load on the
machine, and client-go's default timings cost nothing. Every member cluster is its own embedded API server (its
Lease lives in it); `--ha` membership Leases live in a separate `hub`. All are reached through `ClusterClient`,
like any cluster.
"""

from __future__ import annotations

import asyncio
import math
import random
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from omectl.controller.runtime.queue import FakeClock
from omectl.fleet.leases import REPLICA_ID_MAX, Holder, Leases, describe_holder
from omectl.fleet.sharding import (
    LEASE_NAME,
    REPLICA_LEASE_PREFIX,
    Fenced,
    LeaseRecord,
    LeaseTimings,
    Membership,
    Replica,
    ReplicaIdInUse,
    ShardCoordinator,
    assign,
    default_replica_id,
    fence_writes,
    validate_replica_id,
)
from omectl.kube.client import ClusterClient
from omectl.kube.resources import CONFIG_MAPS
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.apiserver.store import WatchEvent

NS = "omectl-system"
LEASE = ("coordination.k8s.io", "leases")
# client-go's defaults (15 s leases, a 10 s renew deadline, a round every 2 s): on fake time they cost nothing.
TIMINGS = LeaseTimings()
CLUSTERS = ["c0", "c1", "c2", "c3"]


# --- the assignment ----------------------------------------------------------------------------------------------


def loads(owners: dict[str, str], replicas: list[str]) -> dict[str, int]:
    return {r: sum(1 for o in owners.values() if o == r) for r in replicas}


@pytest.mark.parametrize("clusters", [1, 2, 4, 5, 10, 33, 200])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4, 7])
def test_every_cluster_gets_one_owner_and_no_replica_is_above_its_share(clusters: int, replicas: int) -> None:
    names = [f"cluster-{i}" for i in range(clusters)]
    ids = [f"replica-{i}" for i in range(replicas)]
    owners = assign(names, ids)
    assert set(owners) == set(names) and set(owners.values()) <= set(ids)
    counts = loads(owners, ids)
    assert max(counts.values()) <= math.ceil(clusters / replicas)
    assert max(counts.values()) - min(counts.values()) <= 1  # nobody idle while another has two more
    assert assign(list(reversed(names)), [*reversed(ids), ids[0]]) == owners  # order and duplicates do not matter
    assert assign(names, []) == {}


def test_random_replica_ids_never_leave_a_replica_idle() -> None:
    # The measurement: with plain rendezvous hashing, 56% of 2,000 draws of 3 ids left one of them idle
    # on 4 clusters. Bounded loads leave none idle.
    rng = random.Random(19)
    clusters = ["c1", "c2", "c3", "c4"]
    idle = 0
    for _ in range(2000):
        ids = [f"host-{rng.getrandbits(32):08x}" for _ in range(3)]
        counts = loads(assign(clusters, ids), ids)
        idle += min(counts.values()) == 0
        assert sorted(counts.values()) == [1, 1, 2]
    assert idle == 0


@pytest.mark.parametrize(("before", "after"), [(3, 4), (4, 3), (2, 3), (5, 6)])
def test_a_joining_or_leaving_replica_moves_about_its_share(before: int, after: int) -> None:
    clusters = [f"cluster-{i}" for i in range(400)]
    a = assign(clusters, [f"r{i}" for i in range(before)])
    b = assign(clusters, [f"r{i}" for i in range(after)])
    moved = sum(a[c] != b[c] for c in clusters)
    ideal = len(clusters) / max(before, after)  # the share of the replica that came or went
    print(f"{before} -> {after} replicas: {moved} of {len(clusters)} clusters moved (ideal {ideal:.0f})")
    assert ideal * 0.9 <= moved <= ideal * 1.3
    if after > before:  # nothing moves between the replicas that stayed, except to make room
        assert sum(1 for c in clusters if a[c] != b[c] and b[c] != f"r{after - 1}") <= ideal * 0.3


def test_a_replica_is_not_given_the_clusters_it_cannot_reach() -> None:
    owners = assign(CLUSTERS, ["a", "b"])
    of_a = sorted(c for c, o in owners.items() if o == "a")
    excluded = assign(CLUSTERS, ["a", "b"], {"a": of_a})
    assert all(excluded[c] == "b" for c in of_a)  # above b's share: being reachable wins
    assert assign(CLUSTERS, ["a", "b"], {"a": CLUSTERS, "b": CLUSTERS}) == owners  # nobody can: as if nothing


# --- timings and identities ----------------------------------------------------------------------------------------


def test_timings_follow_client_go_rules() -> None:
    assert LeaseTimings() == LeaseTimings(15.0, 10.0, 2.0)
    with pytest.raises(ValueError, match="must exceed the renew deadline"):
        LeaseTimings(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match=r"1\.2 x the retry period"):
        LeaseTimings(lease_duration=15, renew_deadline=2.2, retry_period=2)
    assert LeaseTimings(2.5, 2, 1).lease_seconds == 3


def test_replica_ids_are_stable_and_identities_unique_per_process() -> None:
    assert validate_replica_id("replica-1") is None
    assert validate_replica_id("Replica_1") is not None
    assert validate_replica_id("-a") is not None
    assert validate_replica_id("a" * REPLICA_ID_MAX) is None and validate_replica_id("a" * (REPLICA_ID_MAX + 1))
    assert default_replica_id() == default_replica_id()  # the host (or POD_NAME): the same after a restart
    assert validate_replica_id(default_replica_id()) is None
    holders = [Holder.for_this_process("replica-1") for _ in range(5)]
    identities = {h.identity for h in holders}
    assert len(identities) == 5 and all(i.startswith("replica-1_") for i in identities)
    assert all(len(i) <= 63 for i in identities)  # a label value: it labels the webhook configuration
    with pytest.raises(ValueError, match="invalid replica id"):
        Holder.for_this_process("Replica_1")


# --- members over HTTP ---------------------------------------------------------------------------------------------


@dataclass
class Recorder:
    """An `OwnershipListener` that records what it hears, in order."""

    events: list[tuple[str, str]] = field(default_factory=list)
    successors: dict[str, Replica | None] = field(default_factory=dict)

    def acquired(self, cluster: str) -> None:
        self.events.append(("acquired", cluster))

    async def handing_over(self, cluster: str, successor: Replica | None, removed: bool) -> None:
        self.events.append(("removed" if removed else "handing-over", cluster))
        self.successors[cluster] = successor

    async def stopping(self, cluster: str) -> None:
        self.events.append(("stopping", cluster))

    def lost(self, cluster: str) -> None:
        self.events.append(("lost", cluster))


class LeaseTime(FakeClock):
    """The `LeaseClock` of a test's coordinators and memberships: the queue's fake monotonic time, and the wall
    clock at the same instant after a fixed epoch; both move only on `advance`."""

    EPOCH = 1_800_000_000.0

    def __init__(self) -> None:
        super().__init__()
        self._slept = asyncio.Event()

    def time(self) -> float:
        return self.EPOCH + self.now()

    def monotonic(self) -> float:
        return self.now()

    async def sleep(self, seconds: float) -> None:  # type: ignore[override]  # the LeaseClock's coroutine form
        waiting = super().sleep(seconds)
        self._slept.set()
        await waiting

    async def until_asleep_or_done(self, task: asyncio.Task[object]) -> None:
        """Until `task` has finished or waits on this clock (its requests, real I/O, run meanwhile)."""
        while not task.done() and not self.sleepers:
            self._slept.clear()
            slept = asyncio.ensure_future(self._slept.wait())
            await asyncio.wait([task, slept], return_when=asyncio.FIRST_COMPLETED)
            slept.cancel()


@dataclass
class World:
    hub: EmbeddedAPIServer
    members: dict[str, EmbeddedAPIServer]
    tmp: Path
    clock: LeaseTime = field(default_factory=LeaseTime)
    made: list[ShardCoordinator] = field(default_factory=list)

    async def tick(self, *coordinators: ShardCoordinator, seconds: float = TIMINGS.retry_period) -> None:
        """A retry period passes, then each coordinator runs its round."""
        self.clock.advance(seconds)
        for coordinator in coordinators:
            await coordinator.run_round()

    def lease(self, cluster: str) -> LeaseRecord | None:
        obj = self.members[cluster].api.store.get(LEASE, NS, LEASE_NAME)
        return LeaseRecord.from_object(obj) if obj is not None else None

    def holders(self) -> dict[str, str]:
        return {c: r.holder for c in self.members if (r := self.lease(c)) is not None and r.holder}

    async def client(self, server: EmbeddedAPIServer) -> ClusterClient:
        return await ClusterClient.from_kubeconfig(
            server.write_kubeconfig(self.tmp / f"{server.name}.kc"), name=server.name
        )

    async def coordinator(
        self,
        replica: str,
        clusters: list[str] = CLUSTERS,
        *,
        ha: bool = False,
        timings: LeaseTimings = TIMINGS,
        holder: Holder | None = None,
    ) -> tuple[ShardCoordinator, Recorder]:
        holder = holder or Holder.for_this_process(replica, ha=ha)
        membership = None
        if ha:
            membership = Membership(
                await self.client(self.hub), holder, namespace=NS, timings=timings, clock=self.clock, owns_client=True
            )
            await membership.claim()
        coordinator = ShardCoordinator(holder, namespace=NS, timings=timings, membership=membership, clock=self.clock)
        for cluster in clusters:
            coordinator.add_member(cluster, await self.client(self.members[cluster]))
        recorder = Recorder()
        coordinator.listeners.append(recorder)
        self.made.append(coordinator)
        return coordinator, recorder


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    hub = EmbeddedAPIServer("hub")
    members = {c: EmbeddedAPIServer(c) for c in CLUSTERS}
    for server in [hub, *members.values()]:
        await server.start()
    w = World(hub, members, tmp_path)
    yield w
    for coordinator in w.made:
        if not coordinator._stopped:
            await coordinator.close()
    for server in [hub, *members.values()]:
        await server.stop()


def free_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def settle(coordinators: list[ShardCoordinator], rounds: int = 4) -> None:
    for _ in range(rounds):
        for coordinator in coordinators:
            await coordinator.run_round()
        await asyncio.sleep(0)  # let release tasks run
        for coordinator in coordinators:
            await coordinator._tasks.idle()


async def test_a_single_process_takes_every_members_lease_and_renews_it(world: World) -> None:
    a, events = await world.coordinator("a")
    await a.run_round()
    assert a.owned() == CLUSTERS and world.holders() == dict.fromkeys(CLUSTERS, a.identity)
    assert all(a.may_write(c) for c in CLUSTERS) and not a.may_write("unknown")
    assert events.events == [("acquired", c) for c in CLUSTERS]
    first = world.lease("c0")
    assert first is not None
    assert (first.holder, first.duration_seconds, first.transitions) == (a.identity, 15, 0)
    assert first.labels == {"omectl.io/ha-lease": "cluster", "omectl.io/cluster-name": "c0"}
    assert first.annotations["omectl.io/holder-host"] == a.holder.host
    assert first.annotations["omectl.io/holder-pid"] == str(a.holder.pid)
    await world.tick(a)
    renewed = world.lease("c0")
    assert renewed is not None
    assert renewed.renew_time > first.renew_time and renewed.acquire_time == first.acquire_time
    assert renewed.transitions == 0 and a.owned() == CLUSTERS


async def test_a_second_process_refuses_clusters_whose_holder_is_alive(world: World) -> None:
    a, _ = await world.coordinator("host-a")
    await a.run_round()
    b, b_events = await world.coordinator("host-b")
    await b.run_round()
    assert not b.settled()  # a holder seen once may be dead: not judged yet
    await world.tick(a, b)  # the holder renews: it is alive
    assert b.settled()
    assert b.owned() == [] and b_events.events == []
    refused = b.refused()
    assert sorted(refused) == CLUSTERS
    record = world.lease("c0")
    assert record is not None
    assert refused["c0"] == (
        f"cluster c0 is held by another omectl: {describe_holder(record)}; one omectl runs a cluster at a time: "
        "stop that one, or run every omectl of the fleet with --ha"
    )
    assert a.identity in refused["c0"] and f"on host {a.holder.host}" in refused["c0"] and " since " in refused["c0"]
    assert world.holders() == dict.fromkeys(CLUSTERS, a.identity)  # a is untouched
    # an --ha replica beside it uses the same Lease, and is told to have the holder run --ha
    c, _ = await world.coordinator("host-c", ha=True)
    await c.run_round()
    assert sorted(c.refused()) == CLUSTERS
    assert "restart it with --ha" in next(iter(c.refused().values()))
    assert world.holders() == dict.fromkeys(CLUSTERS, a.identity)


async def test_a_dead_holders_clusters_are_taken_only_after_a_full_lease_duration_unchanged(world: World) -> None:
    a, _ = await world.coordinator("a")
    await a.run_round()  # a neither renews nor releases from here on
    b, _ = await world.coordinator("b")
    await b.run_round()
    first_seen = world.clock.now()
    while world.clock.now() - first_seen < TIMINGS.lease_duration:
        assert b.owned() == [], world.clock.now() - first_seen  # never before the lease ran out on b's clock
        await world.tick(b)
    assert b.owned() == CLUSTERS  # the first round once it has
    for c in CLUSTERS:
        record = world.lease(c)
        assert record is not None and record.holder == b.identity and record.transitions == 1
    # a's own fence fell at its renew deadline, long before b took over
    assert not any(a.may_write(c) for c in CLUSTERS)


async def test_a_holder_that_cannot_reach_a_member_fences_itself_and_says_so(world: World) -> None:
    a, events = await world.coordinator("a", ["c0"])
    await a.run_round()
    assert a.may_write("c0")
    renewed = world.clock.now()  # the acquisition: the last renewal
    await world.members["c0"].partition()  # the Lease lives in the member: no renewal without reaching it
    while world.clock.now() + TIMINGS.retry_period < renewed + TIMINGS.renew_deadline:
        await world.tick(a)
        assert a.may_write("c0") and a.owned() == ["c0"], world.clock.now() - renewed  # failing, not yet fenced
    world.clock.advance(renewed + TIMINGS.renew_deadline - world.clock.now())
    assert not a.may_write("c0")  # fenced at the renew deadline itself, before any round notices
    await a.run_round()
    assert ("lost", "c0") in events.events and a.owned() == []
    assert a.unreachable() == {"c0"}  # published in an --ha replica's membership, so another takes it
    assert "c0" in a.unreached()
    await world.members["c0"].heal()
    await a.run_round()  # the lease still names a: it takes it back at once
    assert a.owned() == ["c0"] and events.events[-1] == ("acquired", "c0") and a.unreachable() == set()


async def test_racing_writers_of_one_lease_version_exactly_one_wins(world: World) -> None:
    clients = [await world.client(world.members["c0"]) for _ in range(2)]
    la, lb = (Leases(client, NS) for client in clients)
    await la.write("x", {"holderIdentity": ""}, {"omectl.io/ha-lease": "cluster"}, None)
    free = await la.get("x")
    assert free is not None
    results = await asyncio.gather(
        la.write("x", {"holderIdentity": "a"}, free.labels, free),
        lb.write("x", {"holderIdentity": "b"}, free.labels, free),
    )
    assert sum(r is not None for r in results) == 1
    creates = await asyncio.gather(
        la.write("y", {"holderIdentity": "a"}, free.labels, None),
        lb.write("y", {"holderIdentity": "b"}, free.labels, None),
    )
    assert sum(r is not None for r in creates) == 1
    for client in clients:
        await client.close()


async def test_close_hands_over_then_releases_and_a_removed_cluster_loses_its_lease(world: World) -> None:
    a, events = await world.coordinator("a", ["c0", "c1"])
    await a.run_round()
    await a.remove_member("c1")  # left the registry: handed over as removed, then its Lease deleted
    assert events.events[-2:] == [("removed", "c1"), ("stopping", "c1")]
    assert world.lease("c1") is None
    await a.close()
    assert events.events[-1] == ("handing-over", "c0") and events.successors["c0"] is None  # nobody else: delete
    assert not a.may_write("c0")
    record = world.lease("c0")
    assert record is not None and record.holder == "" and record.duration_seconds == 1
    b, _ = await world.coordinator("b", ["c0"])
    await b.run_round()  # a released cluster is free at once, no lease duration to wait
    assert b.owned() == ["c0"]


async def test_close_releases_a_lease_whose_acquisition_was_cancelled_after_the_server_took_it(world: World) -> None:
    # A stop cancels the round while its acquiring write is on the wire: the server commits it, the answer is
    # never read. The process does not know it holds the Lease, yet its close must not leave it held.
    a, _ = await world.coordinator("a", ["c0"])
    round_task = asyncio.ensure_future(a.run_round())

    def cancel_at_the_commit(event: WatchEvent) -> None:
        if event.key == LEASE and event.obj["metadata"]["name"] == LEASE_NAME:
            round_task.cancel()

    world.members["c0"].api.store.listeners.append(cancel_at_the_commit)
    with pytest.raises(asyncio.CancelledError):
        await round_task
    world.members["c0"].api.store.listeners.remove(cancel_at_the_commit)
    assert world.holders() == {"c0": a.identity} and a.owned() == []  # held on the server, unknown to the process
    await a.close()
    record = world.lease("c0")
    assert record is not None and record.holder == "" and record.duration_seconds == 1


async def test_a_stopping_process_renews_what_it_holds_but_takes_no_released_cluster(world: World) -> None:
    a, _ = await world.coordinator("a", ["c0"])
    await a.run_round()
    b, _ = await world.coordinator("b", ["c0", "c1"])
    await b.run_round()
    assert b.owned() == ["c1"]
    b.stop_acquiring()
    renewed_before = world.lease("c1")
    await a.close()  # c0 released: free at once for anyone still acquiring
    await world.tick(b)
    assert b.owned() == ["c1"] and world.holders() == {"c1": b.identity}
    renewed = world.lease("c1")
    assert renewed is not None and renewed_before is not None and renewed.renew_time > renewed_before.renew_time


# --- --ha ------------------------------------------------------------------------------------------------------------


async def test_two_replicas_split_the_clusters_evenly_and_hand_over_gracefully(world: World) -> None:
    a, a_events = await world.coordinator("a", ha=True)
    await a.run_round()
    assert a.owned() == CLUSTERS
    a.advertise = lambda: {}
    b, b_events = await world.coordinator("b", ha=True)
    b.advertise = lambda: {"omectl.io/webhook-url": "https://b.example:9443"}
    await settle([b, a, b])
    expected = assign(CLUSTERS, ["a", "b"])
    assert sorted(loads(expected, ["a", "b"]).values()) == [2, 2]
    assert world.holders() == {c: (a if o == "a" else b).identity for c, o in expected.items()}
    moved = sorted(c for c, o in expected.items() if o == "b")
    # a handed each moved cluster over (naming b and its webhook URL) and stopped it before releasing it
    assert [e for e in a_events.events if e[0] != "acquired"] == [
        e for c in moved for e in (("handing-over", c), ("stopping", c))
    ]
    assert all((s := a_events.successors[c]) is not None and s.webhook_url == "https://b.example:9443" for c in moved)
    assert b_events.events == [("acquired", c) for c in moved]
    for c in moved:
        record = world.lease(c)
        assert record is not None and record.transitions == 1  # one hand-over: a release keeps the count, b adds one
        assert not a.may_write(c) and b.may_write(c)


async def test_a_second_process_with_a_live_replica_id_is_refused(world: World) -> None:
    a, _ = await world.coordinator("replica-1", ha=True)
    await a.run_round()
    again = Holder.for_this_process("replica-1", ha=True)
    membership = Membership(
        await world.client(world.hub), again, namespace=NS, timings=TIMINGS, clock=world.clock, owns_client=True
    )
    claim = asyncio.create_task(membership.claim())
    await world.clock.until_asleep_or_done(claim)
    assert not claim.done()  # a fresh Lease of another process, seen once: watched for a lease duration
    world.clock.advance(TIMINGS.retry_period / 2)
    await a.run_round()  # a renews while the claim sleeps: its holder is alive
    world.clock.advance(TIMINGS.retry_period / 2)
    await world.clock.until_asleep_or_done(claim)
    with pytest.raises(ReplicaIdInUse, match=f'replica id "replica-1" is in use by a live process: {a.identity} '):
        claim.result()
    await membership.leave()
    # a replica that died leaves its membership Lease behind; a new process with the id takes it once it is stale
    stale = Membership(
        await world.client(world.hub), again, namespace=NS, timings=TIMINGS, clock=world.clock, owns_client=True
    )
    world.clock.advance(TIMINGS.lease_duration)
    stale_claim = asyncio.create_task(stale.claim())
    await world.clock.until_asleep_or_done(stale_claim)
    assert stale_claim.done() and world.clock.sleepers == 0  # taken at once: no retry period waited
    await stale_claim
    obj = world.hub.api.store.get(LEASE, NS, REPLICA_LEASE_PREFIX + "replica-1")
    assert obj is not None and obj["spec"]["holderIdentity"] == again.identity
    await stale.leave()


async def test_a_cluster_its_owner_cannot_reach_goes_to_a_replica_that_can(world: World) -> None:
    a, _ = await world.coordinator("a", ha=True)
    b, _ = await world.coordinator("b", ha=True)
    await settle([a, b])
    victim = next(c for c in CLUSTERS if a.desired[c] == "a")
    # a's traffic to the victim fails, b's does not: a's credentials for it now name a server that is not there
    path = world.members[victim].write_kubeconfig(world.tmp / "unreachable.kc")
    config = yaml.safe_load(path.read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{free_port()}"
    path.write_text(yaml.safe_dump(config))
    a.add_member(victim, await ClusterClient.from_kubeconfig(path, name=victim))
    started = world.clock.now()
    await a.run_round()
    await b.run_round()
    while world.clock.now() - started < TIMINGS.renew_deadline:
        assert victim not in a.unreachable() and world.holders()[victim] == a.identity  # not judged yet
        await world.tick(a, b)
    assert victim in a.unreachable()  # a renew deadline of failures
    # b takes it once a's Lease, no longer renewed, has stood unchanged for a lease duration on b's clock
    for _ in range(math.ceil(TIMINGS.lease_duration / TIMINGS.retry_period) + 1):
        if world.holders().get(victim) == b.identity:
            break
        await world.tick(a, b)
    assert world.holders().get(victim) == b.identity, "never taken over"
    assert victim in a.unreachable() and a.desired[victim] == "b"


async def test_writes_are_fenced_and_a_release_waits_for_those_in_flight(world: World) -> None:
    a, events = await world.coordinator("a", ["c0"], timings=LeaseTimings(3.0, 2.0, 0.5))  # drains for up to 1 s
    member = world.members["c0"]
    client = await world.client(member)
    fence_writes(client, a, "c0")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    with pytest.raises(Fenced):
        await client.create(CONFIG_MAPS, configmap)  # not held yet: refused before it is sent
    with pytest.raises(Fenced):
        await client.apply_bytes(CONFIG_MAPS, configmap, field_manager="omectl")  # the undecoded apply as well
    assert not [r for r in member.request_log.records() if r.resource == "configmaps"]
    await a.run_round()
    await client.create(CONFIG_MAPS, configmap)
    assert (await client.get(CONFIG_MAPS, "x", "default"))["metadata"]["name"] == "x"

    # a slow write is in flight when the cluster is to be handed over: the release waits for its answer
    member.faults.delay_next(1, 0.5, method="PUT", path_contains="configmaps")
    slow = asyncio.create_task(client.replace(CONFIG_MAPS, {**configmap, "data": {"k": "v"}}))
    await asyncio.sleep(0.1)
    release = asyncio.create_task(a.release("c0"))
    await asyncio.sleep(0.1)
    assert not a.may_write("c0")  # draining: new writes refused at once
    with pytest.raises(Fenced):
        await client.delete(CONFIG_MAPS, "x", "default")
    assert events.events == [("acquired", "c0"), ("handing-over", "c0")]  # not stopped: the write is in flight
    await slow
    await release
    assert events.events == [("acquired", "c0"), ("handing-over", "c0"), ("stopping", "c0")]
    record = world.lease("c0")
    assert record is not None and record.holder == ""
    released_at = max(r.time for r in member.request_log.records() if r.resource == "leases" and r.verb == "update")
    [put] = [r for r in member.request_log.records() if r.resource == "configmaps" and r.verb == "update"]
    assert put.code == 200 and put.end <= released_at
    await client.close()


def test_membership_names_what_a_handover_needs() -> None:
    record = LeaseRecord.from_object(
        {
            "metadata": {
                "name": "omectl-replica-b",
                "annotations": {
                    "omectl.io/webhook-url": "https://b:9443",
                    "omectl.io/webhook-ca-bundle": "Q0E=",
                    "omectl.io/unreachable": "c1,c3",
                },
            },
            "spec": {"holderIdentity": "b_0123abcd"},
        }
    )
    assert Replica.from_record(record) == Replica("b", "b_0123abcd", "https://b:9443", "Q0E=", frozenset({"c1", "c3"}))
