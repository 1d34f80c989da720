"""Ownership and sharding: the balanced assignment, and each member's ownership Lease acquired, renewed, refused,
expired, fenced, handed over and deleted, over real HTTP.

Rounds are driven by hand (`run_round`), so each step's effect is checked before the next. Every member cluster is
its own embedded API server (its Lease lives in it); `--ha` membership Leases live in a separate `hub`. All are
reached through `ClusterClient`, like any cluster.
"""

from __future__ import annotations

import asyncio
import math
import random
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

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

NS = "omectl-system"
LEASE = ("coordination.k8s.io", "leases")
# Lease durations are whole seconds; 1 s leases keep the expiry tests short.
FAST = LeaseTimings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.2)
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


@dataclass
class World:
    hub: EmbeddedAPIServer
    members: dict[str, EmbeddedAPIServer]
    tmp: Path
    made: list[ShardCoordinator] = field(default_factory=list)

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
        timings: LeaseTimings = FAST,
        holder: Holder | None = None,
    ) -> tuple[ShardCoordinator, Recorder]:
        holder = holder or Holder.for_this_process(replica, ha=ha)
        membership = None
        if ha:
            membership = Membership(
                await self.client(self.hub), holder, namespace=NS, timings=timings, owns_client=True
            )
            await membership.claim()
        coordinator = ShardCoordinator(holder, namespace=NS, timings=timings, membership=membership)
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
            for task in list(coordinator._tasks):
                await task


async def rounds_until(coordinator: ShardCoordinator, check: Callable[[], bool], timeout: float) -> float:
    """Run rounds (a retry period apart) until `check`; the seconds it took."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"not within {timeout} s"
        await coordinator.run_round()
        await asyncio.sleep(coordinator.timings.retry_period)
    return time.monotonic() - started


async def test_a_single_process_takes_every_members_lease_and_renews_it(world: World) -> None:
    a, events = await world.coordinator("a")
    await a.run_round()
    assert a.owned() == CLUSTERS and world.holders() == dict.fromkeys(CLUSTERS, a.identity)
    assert all(a.may_write(c) for c in CLUSTERS) and not a.may_write("unknown")
    assert events.events == [("acquired", c) for c in CLUSTERS]
    first = world.lease("c0")
    assert first is not None
    assert (first.holder, first.duration_seconds, first.transitions) == (a.identity, 1, 0)
    assert first.labels == {"omectl.io/ha-lease": "cluster", "omectl.io/cluster-name": "c0"}
    assert first.annotations["omectl.io/holder-host"] == a.holder.host
    assert first.annotations["omectl.io/holder-pid"] == str(a.holder.pid)
    await asyncio.sleep(0.01)
    await a.run_round()
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
    while not b.settled():  # the holder renews: it is alive
        await a.run_round()
        await b.run_round()
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
    while not c.refused():
        await a.run_round()
        await c.run_round()
    assert "restart it with --ha" in next(iter(c.refused().values()))
    assert world.holders() == dict.fromkeys(CLUSTERS, a.identity)


async def test_a_dead_holders_clusters_are_taken_only_after_a_full_lease_duration_unchanged(world: World) -> None:
    a, _ = await world.coordinator("a")
    await a.run_round()
    died = time.monotonic()  # a neither renews nor releases from here on
    b, _ = await world.coordinator("b")
    took = await rounds_until(b, lambda: b.owned() == CLUSTERS, 1.0 + 1.5)
    took = time.monotonic() - died
    assert took >= 1.0  # never before the holder's lease ran out on b's clock
    for c in CLUSTERS:
        record = world.lease(c)
        assert record is not None and record.holder == b.identity and record.transitions == 1
    # a's own fence fell at its renew deadline, long before b took over
    assert not any(a.may_write(c) for c in CLUSTERS)


async def test_a_holder_that_cannot_reach_a_member_fences_itself_and_says_so(world: World) -> None:
    a, events = await world.coordinator("a", ["c0"])
    await a.run_round()
    assert a.may_write("c0")
    acquired = time.monotonic()
    await world.members["c0"].partition()  # the Lease lives in the member: no renewal without reaching it
    while a.may_write("c0"):
        await a.run_round()
        await asyncio.sleep(0.05)
    fenced = time.monotonic() - acquired
    assert 0.5 <= fenced <= 0.6 + 0.3, fenced  # the renew deadline (0.6 s) after the last renewal
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
    membership = Membership(await world.client(world.hub), again, namespace=NS, timings=FAST, owns_client=True)
    claim = asyncio.create_task(membership.claim())
    while not claim.done():
        await a.run_round()  # a renews: its holder is alive
        await asyncio.sleep(FAST.retry_period)
    with pytest.raises(ReplicaIdInUse, match=f'replica id "replica-1" is in use by a live process: {a.identity} '):
        claim.result()
    await membership.leave()
    # a replica that died leaves its membership Lease behind; a new process with the id takes it once it is stale
    stale = Membership(await world.client(world.hub), again, namespace=NS, timings=FAST, owns_client=True)
    await asyncio.sleep(FAST.lease_duration)
    started = time.monotonic()
    await stale.claim()
    assert time.monotonic() - started < FAST.retry_period
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
    started = time.monotonic()
    while world.holders().get(victim) != b.identity:
        assert time.monotonic() - started < 0.6 + 1.0 + 2.0, "never taken over"
        await a.run_round()
        await b.run_round()
        await asyncio.sleep(FAST.retry_period)
    took = time.monotonic() - started
    print(f"{victim}: unreachable from its owner, taken by the other replica after {took:.2f} s")
    assert victim in a.unreachable() and a.desired[victim] == "b"
    assert took >= FAST.renew_deadline  # a declares it unreachable only after a renew deadline


async def test_writes_are_fenced_and_a_release_waits_for_those_in_flight(world: World) -> None:
    a, events = await world.coordinator("a", ["c0"], timings=LeaseTimings(3.0, 2.0, 0.5))  # drains for up to 1 s
    member = world.members["c0"]
    client = await world.client(member)
    fence_writes(client, a, "c0")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    with pytest.raises(Fenced):
        await client.create(CONFIG_MAPS, configmap)  # not held yet: refused before it is sent
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
