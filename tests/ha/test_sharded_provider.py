"""ShardedProvider (omectl/fleet/sharding.py) between a clusters directory and the controller: the clusters whose
Leases it takes are `added`, a registration removed from the directory is `removed` and its Lease released, an
edited one is `changed`, and one that cannot connect is an error of the registry, never a crash. Real embedded
API servers over HTTP, real clients; the Leases are read back from the members."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from omectl.cli.dev import write_registrations
from omectl.fleet.leases import Holder, LeaseTimings
from omectl.fleet.providers import DirectoryProvider, RegistryChange
from omectl.fleet.sharding import ShardCoordinator, ShardedProvider
from omectl.kube.client import ClusterClient
from omectl.kube.resources import LEASES
from omectl.sim.fleet import EmbeddedFleet

pytestmark = pytest.mark.xdist_group("e2e")
TIMINGS = LeaseTimings(lease_duration=4.0, renew_deadline=3.0, retry_period=0.5)
LEASE_NAMESPACE = "omectl-system"
EXEC_API = "client.authentication.k8s.io/v1"


class Batches:
    """The registry batches the provider hands the controller, read in a task of their own."""

    def __init__(self, provider: ShardedProvider) -> None:
        self.changes: list[tuple[str, str]] = []
        self.arrived = asyncio.Condition()
        self._task = asyncio.create_task(self._read(provider))

    async def _read(self, provider: ShardedProvider) -> None:
        async for batch in provider.watch():
            async with self.arrived:
                self.changes += [(c.kind, c.registration.name) for c in batch]
                self.arrived.notify_all()

    async def until(self, change: tuple[str, str], timeout: float = 30) -> None:
        async with asyncio.timeout(timeout), self.arrived:
            await self.arrived.wait_for(lambda: change in self.changes)

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.wait([self._task])


@pytest.fixture
async def fleet() -> AsyncIterator[EmbeddedFleet]:
    fleet = await EmbeddedFleet(2, name_prefix="sp-").start()
    try:
        yield fleet
    finally:
        await fleet.stop()


async def lease_holder(kubeconfig: Path, cluster: str) -> str | None:
    """The holder of the ownership Lease in `cluster`, read over HTTP (None without a Lease)."""
    async with await ClusterClient.from_kubeconfig(kubeconfig, context=cluster, name=cluster) as client:
        leases = (await client.list(LEASES, LEASE_NAMESPACE))["items"]
    holders = [str(lease["spec"].get("holderIdentity") or "") for lease in leases]
    return holders[0] if holders else None


async def test_the_registry_s_additions_removals_edits_and_bad_entries_reach_the_controller(
    fleet: EmbeddedFleet, tmp_path: Path
) -> None:
    clusters = tmp_path / "clusters"
    kubeconfig = fleet.write_kubeconfig(tmp_path / "kc")
    files = write_registrations(clusters, kubeconfig, ["sp-1", "sp-2"])
    coordinator = ShardCoordinator(Holder.for_this_process("sp-replica"), namespace=LEASE_NAMESPACE, timings=TIMINGS)
    provider = ShardedProvider(DirectoryProvider(clusters, poll_interval=0.1), coordinator)
    heard: list[RegistryChange] = []
    provider.registry_listeners.append(heard.append)
    await provider.start(wait_settled=True)
    batches = Batches(provider)
    try:
        await batches.until(("added", "sp-1"))
        await batches.until(("added", "sp-2"))
        assert set(provider.snapshot()) == {"sp-1", "sp-2"} == set(provider.registrations())
        assert await lease_holder(kubeconfig, "sp-2") == coordinator.identity

        # an edit of a running cluster's registration (a label) is `changed`, with the new registration
        edited = yaml.safe_load(files[0].read_text())
        edited["metadata"]["labels"]["tier"] = "gpu"
        files[0].write_text(yaml.safe_dump(edited))
        await batches.until(("changed", "sp-1"))
        assert provider.snapshot()["sp-1"].labels["tier"] == "gpu"

        # a valid registration whose credential plugin is missing cannot connect: reported under its name
        plugin = tmp_path / "no-such-plugin"
        broken_kubeconfig = yaml.safe_load(kubeconfig.read_text())
        for user in broken_kubeconfig["users"]:
            user["user"] = {"exec": {"apiVersion": EXEC_API, "command": str(plugin), "interactiveMode": "Never"}}
        (tmp_path / "kc-broken").write_text(yaml.safe_dump(broken_kubeconfig))
        write_registrations(tmp_path / "broken", tmp_path / "kc-broken", ["sp-2"])
        broken = yaml.safe_load((tmp_path / "broken" / "sp-2.yaml").read_text())
        broken["metadata"]["name"] = "sp-broken"
        (clusters / "sp-broken.yaml").write_text(yaml.safe_dump(broken))
        async with asyncio.timeout(30):
            while "sp-broken" not in provider.errors:  # noqa: ASYNC110 - the directory is polled
                await asyncio.sleep(0.05)
        assert str(plugin) in provider.errors["sp-broken"]
        assert "sp-broken" not in provider.registrations()
        assert set(provider.snapshot()) == {"sp-1", "sp-2"}

        # a registration removed from the directory: the controller is told, the Lease is released
        files[1].unlink()
        await batches.until(("removed", "sp-2"))
        assert set(provider.snapshot()) == {"sp-1"}
        async with asyncio.timeout(30):
            while await lease_holder(kubeconfig, "sp-2") == coordinator.identity:  # noqa: ASYNC110 - released in a task
                await asyncio.sleep(0.05)
        assert ("removed", "sp-2") in [(c.kind, c.registration.name) for c in heard]
    finally:
        await batches.stop()
        await provider.close()
    assert await lease_holder(kubeconfig, "sp-1") in (None, "")  # close released it
