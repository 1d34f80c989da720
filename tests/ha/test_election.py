"""The fleet Lease's leader election (omectl.fleet.election.LeaderLease), over real HTTP on fake time: a free Lease
is taken, a held one only once seen unchanged for a lease duration, a holder fences itself at its renew deadline
and learns of its loss at its next round, and a release hands it over at once.

Rounds are run by hand (`run_round`), as tests/ha/test_sharding.py runs the coordinators', on its `LeaseTime`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from omectl.fleet.election import LeaderLease
from omectl.fleet.leases import Holder, LeaseRecord, LeaseTimings
from omectl.fleet.sharding import Fenced, fence_writes
from omectl.kube.client import ClusterClient
from omectl.kube.resources import CONFIG_MAPS
from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.ha.test_sharding import LEASE, NS, LeaseTime

NAME = "omectl-fleet-runtimes"
TIMINGS = LeaseTimings()  # client-go's: 15 s lease, 10 s renew deadline, 2 s retry


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[EmbeddedAPIServer]:
    server = EmbeddedAPIServer("hub")
    await server.start()
    yield server
    await server.stop()


async def elector(hub: EmbeddedAPIServer, tmp_path: Path, replica: str, clock: LeaseTime) -> LeaderLease:
    client = await ClusterClient.from_kubeconfig(hub.write_kubeconfig(tmp_path / f"{replica}.kc"), name="hub")
    return LeaderLease(client, NS, NAME, Holder.for_this_process(replica, ha=True), timings=TIMINGS, clock=clock)


def holder(hub: EmbeddedAPIServer) -> str:
    obj = hub.api.store.get(LEASE, NS, NAME)
    return LeaseRecord.from_object(obj).holder if obj is not None else ""


async def test_one_holder_a_held_lease_is_taken_only_after_a_lease_duration_unchanged(
    hub: EmbeddedAPIServer, tmp_path: Path
) -> None:
    clock = LeaseTime()
    a, b = await elector(hub, tmp_path, "a", clock), await elector(hub, tmp_path, "b", clock)
    try:
        assert await a.run_round() == "" and a.leading and a.may_write()
        assert await b.run_round() == "" and not b.leading  # held, and fresh
        assert holder(hub) == a.holder.identity
        for _ in range(3):  # renewed every retry period: b never sees it expire
            clock.advance(TIMINGS.retry_period)
            await a.run_round()
            await b.run_round()
        assert a.leading and not b.leading and b.record is not None and b.record.holder == a.holder.identity

        # a stops renewing (hung, partitioned): it fences itself at its renew deadline ...
        clock.advance(TIMINGS.renew_deadline - 0.001)
        assert a.may_write()
        clock.advance(0.001)
        assert not a.may_write()
        with pytest.raises(Fenced), a.writing():
            pass
        # ... and b takes the Lease a lease duration after it last saw it change, not before.
        seen_since = TIMINGS.renew_deadline  # b's last round saw a's last renewal
        clock.advance(TIMINGS.lease_duration - seen_since - 0.001)
        await b.run_round()
        assert not b.leading
        clock.advance(0.001)
        await b.run_round()
        assert b.leading and holder(hub) == b.holder.identity
        assert await a.run_round() == "the lease was changed by another writer" and not a.leading
    finally:
        await a.client.close()
        await b.client.close()


async def test_a_release_hands_the_lease_over_at_once_and_fenced_writes_are_refused(
    hub: EmbeddedAPIServer, tmp_path: Path
) -> None:
    clock = LeaseTime()
    a, b = await elector(hub, tmp_path, "a", clock), await elector(hub, tmp_path, "b", clock)
    writer = await ClusterClient.from_kubeconfig(hub.write_kubeconfig(tmp_path / "writer.kc"), name="hub")
    fence_writes(writer, a, "hub")
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "written", "namespace": NS}}
    try:
        with pytest.raises(Fenced):  # not (yet) the holder
            await writer.create(CONFIG_MAPS, config_map, NS)
        await a.run_round()
        await b.run_round()
        await writer.create(CONFIG_MAPS, config_map, NS)
        assert hub.api.store.get(("", "configmaps"), NS, "written") is not None
        await a.release()
        record = LeaseRecord.from_object(hub.api.store.get(LEASE, NS, NAME))  # type: ignore[arg-type]
        assert (record.holder, record.duration_seconds) == ("", 1)
        assert not a.may_write()
        with pytest.raises(Fenced):
            await writer.delete(CONFIG_MAPS, "written", NS)
        clock.advance(TIMINGS.retry_period)
        await b.run_round()  # released: taken at once, no lease duration to wait
        assert b.leading and holder(hub) == b.holder.identity
        assert record.transitions == 0 and b.record is not None and b.record.transitions == 1
    finally:
        for client in (a.client, b.client, writer):
            await client.close()
