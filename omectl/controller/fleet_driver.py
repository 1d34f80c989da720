"""Under `--ha`: the one replica that drives FleetRuntimes, elected by a Lease in the hub.

```
every replica: LeaderLease omectl-fleet-runtimes (hub, hub namespace) ──taken──▶ lead():
                   a hub client fenced by the Lease (status, revisions, Events)
                   HolderMembers: its own clusters + an ObservedCluster per cluster another replica runs
                   FleetRuntimeApplier over them (copies written only while the Lease is held)
               ──lost──▶ step_down(): the applier and the observers stopped; the Lease is tried for again
clean stop:    step_down(), then the Lease released: another replica takes over at its next retry
```

A new holder starts as a restarted controller does: from the FleetRuntimes' status (the rollout, each cluster's
revision and copies), so a wave in progress goes on, nothing is applied twice and no wave is skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omectl.background import BackgroundTasks
from omectl.controller.fleet_members import HolderMembers
from omectl.controller.fleet_runtime_stores.hub import HubStore
from omectl.controller.fleet_runtimes import FleetRuntimeApplier
from omectl.fleet.election import LeaderLease
from omectl.fleet.leases import Holder, LeaseTimings
from omectl.fleet.sharding import fence_writes
from omectl.kube.client import ClusterClient

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from omectl.controller.ome.resolver import ChainResolver
    from omectl.controller.runtime.manager import FleetController
    from omectl.fleet.registration import ClusterRegistration

__all__ = ["FLEET_LEASE_NAME", "ElectedFleetRuntimes"]

log = logging.getLogger(__name__)

FLEET_LEASE_NAME = "omectl-fleet-runtimes"


class ElectedFleetRuntimes:
    """The FleetRuntime applier of a `--ha` replica: run while this replica holds the fleet Lease."""

    def __init__(
        self,
        hub_kubeconfig: Path,
        namespace: str,
        controller: FleetController,
        registrations: Callable[[], Mapping[str, ClusterRegistration]],
        resolver: ChainResolver,
        holder: Holder,
        *,
        timings: LeaseTimings,
        tracer: Tracer | None = None,
    ) -> None:
        self.hub_kubeconfig = hub_kubeconfig
        self.namespace = namespace
        self.controller = controller
        self.registrations = registrations
        self.resolver = resolver
        self.holder = holder
        self.timings = timings
        self.tracer = tracer
        self.lease: LeaderLease | None = None
        self.members: HolderMembers | None = None
        self.applier: FleetRuntimeApplier | None = None
        self._tasks = BackgroundTasks("fleet runtimes election")

    async def start(self) -> None:
        client = await ClusterClient.from_kubeconfig(self.hub_kubeconfig, name="hub-lease")
        self.lease = LeaderLease(client, self.namespace, FLEET_LEASE_NAME, self.holder, timings=self.timings)
        self._tasks.spawn(self.lease.run(self._lead, self._step_down), "fleet-lease")

    async def _lead(self) -> None:
        assert self.lease is not None
        log.info("fleet runtimes: this replica drives them (holder of Lease %s/%s)", self.namespace, self.lease.name)
        hub = await ClusterClient.from_kubeconfig(self.hub_kubeconfig, name="hub")
        fence_writes(hub, self.lease, "hub")  # status, revisions and Events only while the Lease is held
        self.members = HolderMembers(self.controller, self.registrations, self.lease, self.resolver)
        self.applier = FleetRuntimeApplier(
            HubStore(hub, self.namespace, owns_hub=True),
            self.members,
            self.registrations,
            self.resolver,
            tracer=self.tracer,
            fence=self.lease,
        )
        await self.applier.start()
        await self.members.start()  # after the applier: it hears of every member the observers add

    async def _step_down(self, why: str = "") -> None:
        applier, members = self.applier, self.members
        self.applier = self.members = None
        if applier is not None:
            await applier.stop()
        if members is not None:
            await members.stop()
        if why:
            log.warning("fleet runtimes: this replica no longer drives them: %s", why)

    def mark_all(self) -> None:
        """The registry changed: observe the clusters as they are registered now, and reconcile every
        FleetRuntime (a label change can place or unplace a cluster)."""
        if self.members is not None:
            self.members.sync_soon()
        if self.applier is not None:
            self.applier.mark_all()

    def status(self) -> dict[str, Any]:
        return self.lease.status() if self.lease is not None else {}

    async def stop(self) -> None:
        await self._tasks.stop()
        await self._step_down()
        if self.lease is not None:
            await self.lease.release()
            await self.lease.client.close()
