"""The member clusters the FleetRuntime applier reaches: where it reads copies and gates, and writes copies.

```
without --ha:  LocalMembers   the controller's own ClusterRuntimes (every cluster whose Lease it holds)
under --ha:    HolderMembers  on the replica holding the fleet Lease (omectl.controller.fleet_driver): its own
                              ClusterRuntimes, and an ObservedCluster for every other registered cluster
```

An `ObservedCluster` holds what the applier reads of a cluster another replica runs: the OME caches a gate needs
(ServingRuntimes, ClusterServingRuntimes, InferenceServices, BaseModels, ClusterBaseModels) and a client to write
copies with. It reconciles nothing, installs no webhook and takes no ownership Lease: the cluster's owner reconciles
what a copy reaches; its writes are fenced by the fleet Lease. When this replica comes to run the cluster itself its
observer stops, and it starts again when the cluster is handed to another replica.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from omectl.background import BackgroundTasks
from omectl.controller.ome.watch import OmeWatch
from omectl.controller.runtime.manager import ClusterRuntime, FleetController, SharedResolver
from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.controller.runtime.registry import Domain, WorkKinds
from omectl.controller.runtime.view import EventType
from omectl.fleet.registration import ClusterRegistration, resolve_kubeconfig
from omectl.fleet.sharding import WriteFence, fence_writes
from omectl.kube.client import ClusterClient
from omectl.kube.informer import Informer

__all__ = ["HolderMembers", "LocalMembers", "Members", "ObservedCluster"]

log = logging.getLogger(__name__)

MemberCallback = Callable[[ClusterRuntime], Awaitable[None]]


class Members(Protocol):
    """The clusters the applier may read and write, and the hooks it hears their arrivals and departures on."""

    on_added: list[MemberCallback]
    on_removed: list[MemberCallback]

    def get(self, name: str) -> ClusterRuntime | None: ...

    def values(self) -> list[ClusterRuntime]: ...

    def unavailable(self, name: str) -> str:
        """Why `name` cannot be reached now (when `get` gives None)."""
        ...


class LocalMembers:
    """The controller's own clusters (without `--ha` this process runs every cluster it can)."""

    def __init__(self, controller: FleetController) -> None:
        self.controller = controller
        self.on_added: list[MemberCallback] = controller.on_cluster_added
        self.on_removed: list[MemberCallback] = controller.on_cluster_removed

    def get(self, name: str) -> ClusterRuntime | None:
        return self.controller.clusters.get(name)

    def values(self) -> list[ClusterRuntime]:
        return list(self.controller.clusters.values())

    def unavailable(self, name: str) -> str:
        return self.controller.registry_errors.get(name) or "not run by this controller (not reached yet)"


class GateWatch(OmeWatch):
    """OME's watch of a cluster another replica runs: only the caches a gate reads (`FleetRuntimeApplier._gate`):
    runtimes for the copies and the reverse index, InferenceServices, and models for the runtime checks."""

    @property
    def informers(self) -> list[Informer]:
        return [self.serving, self.cluster_serving, self.inference_services, self.base_models, self.cluster_base_models]


GATE_KINDS = WorkKinds([Domain("ome-gates", GateWatch, {})])


class ObservedCluster(ClusterRuntime):
    """A cluster this replica reads and writes copies in but does not run: its watch handlers queue nothing and it
    records no events (its owner's reconciles do both)."""

    def enqueue(
        self, key: WorkKey, *, lane: Lane | None = None, low_priority: bool = False, trigger: object | None = None
    ) -> None:
        return None

    def enqueue_after(self, key: WorkKey, delay: float) -> None:
        return None

    def record_event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        return None

    async def start(self) -> None:
        for informer in self.informers:
            self._tasks.spawn(informer.run(), f"observed-{self.name}-{informer.resource.plural}")
        self._tasks.spawn(self._watch_health(), f"observed-health-{self.name}")


class HolderMembers:
    """Under `--ha`, on the replica holding the fleet Lease: its own clusters, and an `ObservedCluster` for every
    other registered one. Call `sync()` when the registry changes."""

    def __init__(
        self,
        controller: FleetController,
        registrations: Callable[[], Mapping[str, ClusterRegistration]],
        fence: WriteFence,
        resolver: SharedResolver,
    ) -> None:
        self.controller = controller
        self.registrations = registrations
        self.fence = fence
        self.resolver = resolver
        self.observed: dict[str, ObservedCluster] = {}
        self.errors: dict[str, str] = {}
        self.on_added: list[MemberCallback] = []
        self.on_removed: list[MemberCallback] = []
        self._lock = asyncio.Lock()
        self._tasks = BackgroundTasks("fleet members")

    def get(self, name: str) -> ClusterRuntime | None:
        return self.controller.clusters.get(name) or self.observed.get(name)

    def values(self) -> list[ClusterRuntime]:
        return [*self.controller.clusters.values(), *self.observed.values()]

    def unavailable(self, name: str) -> str:
        return self.errors.get(name) or self.controller.registry_errors.get(name) or "not reached yet"

    async def start(self) -> None:
        self.controller.on_cluster_added.append(self._run_here)
        self.controller.on_cluster_removed.append(self._run_elsewhere)
        await self.sync()  # the controller's clusters are in `values()` already: only the observers are new

    async def stop(self) -> None:
        for hooks, hook in (
            (self.controller.on_cluster_added, self._run_here),
            (self.controller.on_cluster_removed, self._run_elsewhere),
        ):
            if hook in hooks:
                hooks.remove(hook)
        await self._tasks.stop()
        async with self._lock:
            for name in list(self.observed):
                await self._unobserve(name)

    async def sync(self) -> None:
        """Observe every registered cluster the controller does not run; stop observing the others."""
        async with self._lock:
            registered = self.registrations()
            for name in [n for n in self.observed if n not in registered or n in self.controller.clusters]:
                await self._unobserve(name)
            for name, registration in sorted(registered.items()):
                current = self.observed.get(name)
                if name in self.controller.clusters or (current is not None and _same_access(current, registration)):
                    continue
                if current is not None:  # new credentials: a new client
                    await self._unobserve(name)
                await self._observe(registration)

    def sync_soon(self) -> None:
        self._tasks.spawn(self.sync(), "fleet-members-sync")

    async def _observe(self, registration: ClusterRegistration) -> None:
        name = registration.name
        try:
            config = resolve_kubeconfig(registration)
            client = await ClusterClient.from_kubeconfig(config_dict=config, context=registration.context, name=name)
        except Exception as exc:  # a bad registration is reported in the status, never a crash
            self.errors[name] = str(exc)
            log.error("fleet runtimes: cluster %s cannot be observed: %s", name, exc)
            return
        self.errors.pop(name, None)
        fence_writes(client, self.fence, name)  # a copy is written only while the fleet Lease is held
        cluster = ObservedCluster(registration, client, self.controller.queue, GATE_KINDS)
        self.observed[name] = cluster
        await cluster.start()
        log.info("fleet runtimes: observing cluster %s (run by another replica)", name)
        await self._added(cluster)

    async def _unobserve(self, name: str) -> None:
        cluster = self.observed.pop(name, None)
        if cluster is None:
            return
        await self._removed(cluster)
        await cluster.stop()
        if name not in self.controller.clusters:
            await self.resolver.forget_cluster(name)

    async def _added(self, cluster: ClusterRuntime) -> None:
        for callback in self.on_added:
            await callback(cluster)

    async def _removed(self, cluster: ClusterRuntime) -> None:
        for callback in self.on_removed:
            await callback(cluster)

    async def _run_here(self, cluster: ClusterRuntime) -> None:
        """The controller took `cluster`: its own runtime replaces the observer."""
        async with self._lock:
            await self._unobserve(cluster.name)
        await self._added(cluster)

    async def _run_elsewhere(self, cluster: ClusterRuntime) -> None:
        """The controller let `cluster` go (handed over, lost or removed): observe it, if it is still registered."""
        await self._removed(cluster)
        self.sync_soon()  # not inline: the controller stops its own runtime of it after these callbacks


def _same_access(cluster: ClusterRuntime, registration: ClusterRegistration) -> bool:
    """Whether `cluster` was reached as `registration` says (a label change alone keeps the observer)."""
    old = cluster.registration
    return (old.kubeconfig_path, old.kubeconfig_inline, old.context) == (
        registration.kubeconfig_path,
        registration.kubeconfig_inline,
        registration.context,
    )
