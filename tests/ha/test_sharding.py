"""Sharding: rendezvous assignment, and Lease acquisition, renewal, expiry, fencing and hand-over over real HTTP.

Rounds are driven by hand (`run_round`), so each step's effect is checked before the next; the Leases live in an
embedded API server on the test's loop, reached through `ClusterClient` like any cluster.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from omectl.embedded.server import EmbeddedAPIServer
from omectl.fleet.sharding import (
    CLUSTER_LEASE_PREFIX,
    REPLICA_LEASE_PREFIX,
    LeaseRecord,
    LeaseTimings,
    ShardCoordinator,
    assign,
    default_replica_id,
    desired_owner,
    validate_replica_id,
)
from omectl.kube.client import ClusterClient

NS = "omectl-system"
LEASE = ("coordination.k8s.io", "leases")
# Lease durations are whole seconds; 1 s leases keep the expiry tests short.
FAST = LeaseTimings(lease_duration=1.0, renew_deadline=0.6, retry_period=0.2)
CLUSTERS = [f"c{i}" for i in range(8)]


# --- rendezvous --------------------------------------------------------------------------------------------


def test_every_cluster_gets_one_owner_and_the_spread_is_even() -> None:
    clusters = [f"cluster-{i}" for i in range(600)]
    owners = assign(clusters, ["a", "b", "c"])
    assert set(owners) == set(clusters)
    counts = {r: sum(1 for o in owners.values() if o == r) for r in "abc"}
    assert all(150 <= n <= 250 for n in counts.values()), counts
    assert assign(clusters, ["c", "b", "a", "a"]) == owners  # order and duplicates do not matter
    assert assign(clusters, []) == {}
    assert desired_owner("x", []) is None


def test_a_joining_replica_takes_clusters_only_for_itself_and_a_leaving_one_moves_only_its_own() -> None:
    clusters = [f"cluster-{i}" for i in range(400)]
    before = assign(clusters, ["a", "b", "c"])
    joined = assign(clusters, ["a", "b", "c", "d"])
    moved = {c for c in clusters if before[c] != joined[c]}
    assert moved and all(joined[c] == "d" for c in moved)
    assert 60 <= len(moved) <= 140  # about a quarter
    left = assign(clusters, ["a", "c"])
    assert {c for c in clusters if before[c] != left[c]} == {c for c in clusters if before[c] == "b"}


def test_timings_follow_client_go_rules() -> None:
    assert LeaseTimings() == LeaseTimings(15.0, 10.0, 2.0)
    with pytest.raises(ValueError, match="must exceed the renew deadline"):
        LeaseTimings(lease_duration=10, renew_deadline=10, retry_period=2)
    with pytest.raises(ValueError, match=r"1\.2 x the retry period"):
        LeaseTimings(lease_duration=15, renew_deadline=2.2, retry_period=2)
    assert LeaseTimings(2.5, 2, 1).lease_seconds == 3


def test_replica_ids() -> None:
    assert validate_replica_id("replica-1") is None
    assert validate_replica_id("Replica_1") is not None
    assert validate_replica_id("-a") is not None
    generated = {default_replica_id() for _ in range(5)}
    assert len(generated) == 5 and all(validate_replica_id(r) is None for r in generated)


# --- Leases over HTTP ----------------------------------------------------------------------------------------


@pytest.fixture
async def hub(tmp_path: Any) -> AsyncIterator[EmbeddedAPIServer]:
    server = EmbeddedAPIServer("hub")
    await server.start()
    yield server
    await server.stop()


Factory = Callable[..., ShardCoordinator]


@pytest.fixture
async def coordinators(hub: EmbeddedAPIServer, tmp_path: Any) -> AsyncIterator[Factory]:
    made: list[ShardCoordinator] = []
    path = hub.write_kubeconfig(tmp_path / "hub.kubeconfig")

    async def make(replica: str, clusters: list[str] = CLUSTERS, timings: LeaseTimings = FAST) -> ShardCoordinator:
        client = await ClusterClient.from_kubeconfig(path, name="hub")
        coordinator = ShardCoordinator(client, replica, namespace=NS, timings=timings, owns_client=True)
        coordinator.registered.update(clusters)
        events: list[tuple[str, str]] = []
        coordinator.start_cluster = lambda name: events.append(("start", name))

        async def stop(name: str) -> None:
            events.append(("stop", name))

        coordinator.stop_cluster = stop
        coordinator.lost_cluster = lambda name: events.append(("lost", name))
        coordinator.events = events  # type: ignore[attr-defined]
        made.append(coordinator)
        return coordinator

    yield make  # type: ignore[misc]
    for coordinator in made:
        await coordinator.close()


def lease(hub: EmbeddedAPIServer, name: str) -> LeaseRecord | None:
    obj = hub.api.store.get(LEASE, NS, name)
    return LeaseRecord.from_object(obj) if obj is not None else None


def holders(hub: EmbeddedAPIServer) -> dict[str, str]:
    return {c: record.holder for c in CLUSTERS if (record := lease(hub, CLUSTER_LEASE_PREFIX + c)) and record.holder}


async def settle(coordinators: list[ShardCoordinator], rounds: int = 4) -> None:
    for _ in range(rounds):
        for coordinator in coordinators:
            await coordinator.run_round()
        await asyncio.sleep(0)  # let release tasks run
        for coordinator in coordinators:
            for task in list(coordinator._tasks):
                await task


async def test_a_single_replica_acquires_every_cluster_and_renews(hub: EmbeddedAPIServer, coordinators: Any) -> None:
    a = await coordinators("a")
    await a.run_round()
    assert a.owned() == CLUSTERS
    assert all(a.may_write(c) for c in CLUSTERS) and not a.may_write("unknown")
    assert a.events == [("start", c) for c in CLUSTERS]
    first = lease(hub, CLUSTER_LEASE_PREFIX + "c0")
    assert first is not None
    assert (first.holder, first.duration_seconds, first.transitions) == ("a", 1, 0)
    assert first.labels == {"omectl.io/ha-lease": "cluster", "omectl.io/cluster-name": "c0"}
    member = lease(hub, REPLICA_LEASE_PREFIX + "a")
    assert member is not None and member.holder == "a" and member.fresh(time.time())
    await asyncio.sleep(0.01)
    await a.run_round()
    renewed = lease(hub, CLUSTER_LEASE_PREFIX + "c0")
    assert renewed is not None
    assert renewed.renew_time > first.renew_time and renewed.acquire_time == first.acquire_time
    assert renewed.transitions == 0 and a.owned() == CLUSTERS


async def test_two_replicas_split_the_clusters_by_rendezvous_and_hand_over_gracefully(
    hub: EmbeddedAPIServer, coordinators: Any
) -> None:
    a = await coordinators("a")
    await a.run_round()
    assert a.owned() == CLUSTERS
    b = await coordinators("b")
    await settle([b, a, b])
    expected = assign(CLUSTERS, ["a", "b"])
    assert holders(hub) == expected
    assert set(a.owned()) == {c for c, o in expected.items() if o == "a"}
    assert set(b.owned()) == {c for c, o in expected.items() if o == "b"}
    moved = sorted(c for c, o in expected.items() if o == "b")
    assert moved, "rendezvous gave b nothing: pick other names"
    # a stopped each moved cluster before releasing it, and b started it after acquiring it
    assert [e for e in a.events if e[0] == "stop"] == [("stop", c) for c in moved]
    assert not any(e[0] == "lost" for e in a.events)
    assert b.events == [("start", c) for c in moved]
    for c in moved:
        record = lease(hub, CLUSTER_LEASE_PREFIX + c)
        assert record is not None and record.transitions == 1  # one hand-over: a release keeps the count, b adds one
        assert not a.may_write(c) and b.may_write(c)


async def test_a_dead_holders_clusters_are_taken_only_after_a_full_lease_duration_unchanged(
    hub: EmbeddedAPIServer, coordinators: Any
) -> None:
    a = await coordinators("a")
    b = await coordinators("b")
    await settle([a, b])
    of_a = sorted(c for c, o in holders(hub).items() if o == "a")
    assert of_a
    # a dies: it neither renews nor releases
    died = time.monotonic()
    await b.run_round()
    assert not set(of_a) & set(b.owned())
    while time.monotonic() - died < 1.0 + 1.5:
        await b.run_round()
        await asyncio.sleep(0.1)
        if set(of_a) <= set(b.owned()):
            break
    took = time.monotonic() - died
    assert set(b.owned()) == set(CLUSTERS), f"not taken over after {took:.1f} s"
    assert took >= 1.0  # never before the holder's lease ran out on b's clock
    for c in of_a:
        record = lease(hub, CLUSTER_LEASE_PREFIX + c)
        assert record is not None and record.holder == "b" and record.transitions == 1
    # a's own fence fell at its renew deadline, long before b took over
    assert not any(a.may_write(c) for c in of_a)


async def test_a_holder_that_cannot_renew_fences_itself_at_the_renew_deadline(
    hub: EmbeddedAPIServer, coordinators: Any
) -> None:
    a = await coordinators("a", clusters=["c0"])
    await a.run_round()
    assert a.may_write("c0")
    acquired = time.monotonic()
    hub.faults.fail_next(1000, 503, method="PUT")
    while a.may_write("c0"):
        await a.run_round()
        await asyncio.sleep(0.05)
    fenced = time.monotonic() - acquired
    assert 0.5 <= fenced <= 0.6 + 0.3, fenced  # the renew deadline (0.6 s) after the last renewal
    await a.run_round()
    assert ("lost", "c0") in a.events and a.owned() == []
    hub.faults.clear()
    await a.run_round()  # the lease still names a: it takes it back at once
    assert a.owned() == ["c0"] and a.events[-1] == ("start", "c0")


async def test_racing_writers_of_one_lease_version_exactly_one_wins(hub: EmbeddedAPIServer, coordinators: Any) -> None:
    a = await coordinators("a", clusters=[])
    b = await coordinators("b", clusters=[])
    await a.leases.write("omectl-cluster-x", {"holderIdentity": ""}, {"omectl.io/ha-lease": "cluster"}, None)
    free = await a.leases.get("omectl-cluster-x")
    assert free is not None
    results = await asyncio.gather(
        a.leases.write("omectl-cluster-x", {"holderIdentity": "a"}, free.labels, free),
        b.leases.write("omectl-cluster-x", {"holderIdentity": "b"}, free.labels, free),
    )
    assert sum(r is not None for r in results) == 1
    creates = await asyncio.gather(
        a.leases.write("omectl-cluster-y", {"holderIdentity": "a"}, free.labels, None),
        b.leases.write("omectl-cluster-y", {"holderIdentity": "b"}, free.labels, None),
    )
    assert sum(r is not None for r in creates) == 1


async def test_close_releases_every_lease_and_leaves_the_membership(hub: EmbeddedAPIServer, coordinators: Any) -> None:
    a = await coordinators("a", clusters=["c0", "c1"])
    await a.run_round()
    await a.close()
    assert not a.may_write("c0")
    for c in ("c0", "c1"):
        record = lease(hub, CLUSTER_LEASE_PREFIX + c)
        assert record is not None and record.holder == "" and record.duration_seconds == 1
    assert lease(hub, REPLICA_LEASE_PREFIX + "a") is None
    b = await coordinators("b", clusters=["c0", "c1"])
    await b.run_round()  # a released cluster is free at once, no lease duration to wait
    assert b.owned() == ["c0", "c1"]


async def test_a_new_replica_waits_for_a_departed_replicas_membership_to_go_stale(
    hub: EmbeddedAPIServer, coordinators: Any
) -> None:
    # The membership Lease of a replica that stopped renewing keeps it in the assignment only until it is stale.
    a = await coordinators("a")
    await a.run_round()
    b = await coordinators("b")
    await b.run_round()
    assert b.live_replicas == ["a", "b"]
    await asyncio.sleep(1.1)
    await b.run_round()
    assert b.live_replicas == ["b"]


async def test_writes_are_fenced_and_a_release_waits_for_those_in_flight(
    hub: EmbeddedAPIServer, coordinators: Any, tmp_path: Any
) -> None:
    from omectl.fleet.sharding import Fenced, fence_writes
    from omectl.kube.resources import CONFIG_MAPS

    a = await coordinators("a", clusters=["c0"], timings=LeaseTimings(3.0, 2.0, 0.5))  # drains for up to 1 s
    client = await ClusterClient.from_kubeconfig(hub.write_kubeconfig(tmp_path / "c0.kubeconfig"), name="c0")
    fence_writes(client, a, "c0")
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    with pytest.raises(Fenced):
        await client.create(CONFIG_MAPS, configmap)  # not held yet: refused before it is sent
    assert not [r for r in hub.request_log.records() if r.resource == "configmaps"]
    await a.run_round()
    await client.create(CONFIG_MAPS, configmap)
    assert (await client.get(CONFIG_MAPS, "x", "default"))["metadata"]["name"] == "x"

    # a slow write is in flight when the cluster is to be handed over: the release waits for its answer
    hub.faults.delay_next(1, 0.5, method="PUT", path_contains="configmaps")
    slow = asyncio.create_task(client.replace(CONFIG_MAPS, {**configmap, "data": {"k": "v"}}))
    await asyncio.sleep(0.1)
    a.registered.discard("c0")
    release = asyncio.create_task(a.release("c0"))
    await asyncio.sleep(0.1)
    assert not a.may_write("c0")  # draining: new writes refused at once
    with pytest.raises(Fenced):
        await client.delete(CONFIG_MAPS, "x", "default")
    assert a.events == [("start", "c0")]  # not stopped yet: the write is still in flight
    await slow
    await release
    assert a.events == [("start", "c0"), ("stop", "c0")]
    record = lease(hub, CLUSTER_LEASE_PREFIX + "c0")
    assert record is not None and record.holder == ""
    released_at = max(r.time for r in hub.request_log.records() if r.resource == "leases" and r.name.endswith("c0"))
    [put] = [r for r in hub.request_log.records() if r.resource == "configmaps" and r.verb == "update"]
    assert put.code == 200 and put.end <= released_at
    await client.close()
