"""What the metrics and the readiness probe see of a `FleetController`: cluster health, samples, readiness.

Readiness rule (`/readyz`): ready once the registry's first batch has been applied and every registered cluster is
either **synced** (each of its informers has listed once; a partition after that does not undo it, the caches keep
serving) or **marked unhealthy**: disconnected (some informer's last list or watch failed) for at least
`grace` seconds. So one unreachable cluster delays readiness by at most `grace`, never forever, and a cluster that is
still listing keeps the controller unready. Clusters whose registration cannot be used do not count. A cluster this
process wants but cannot reach to take its ownership Lease (`unreached`) counts as not synced and disconnected;
one it has reached and is taking, or has taken but not started yet (`starting`), counts as not synced; one another
process holds does not count.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from omectl.kube.informer import Informer
from omectl.kube.resources import ResourceRef
from omectl.observability.metrics import ClusterSample, FleetSample

if TYPE_CHECKING:
    from omectl.controller.runtime.manager import ClusterRuntime

__all__ = ["FleetObserver", "kind_label"]


def kind_label(resource: ResourceRef) -> str:
    """`group/Kind` (`ome.io/ServingRuntime`, `apps/Deployment`), `Kind` for core kinds: the work keys' spelling."""
    return f"{resource.group}/{resource.kind}" if resource.group else resource.kind


class FleetObserver:
    """Tracks since when each cluster is disconnected and answers the metrics' samples and the readiness probe."""

    def __init__(
        self,
        controller: Any,
        *,
        grace: float = 30.0,
        registry_ready: Callable[[], bool] = lambda: True,
        unreached: Callable[[], Mapping[str, str]] = dict,
        starting: Callable[[], set[str]] = set,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.controller = controller
        self.unreached = unreached  # cluster -> why its Lease could not be taken
        self.starting = starting  # reached, its Lease being taken or its caches not started yet
        self.grace = grace
        self.registry_ready = registry_ready
        self.clock = clock
        self._disconnected_since: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None

    # --- health ----------------------------------------------------------------------------------------

    @staticmethod
    def _informers(cluster: ClusterRuntime) -> list[Informer]:
        return list(cluster.informers)

    def _update(self) -> None:
        now = self.clock()
        clusters = self.controller.clusters
        unreached = self.unreached()
        for name in [n for n in self._disconnected_since if n not in clusters and n not in unreached]:
            del self._disconnected_since[name]
        for name in unreached:
            self._disconnected_since.setdefault(name, now)
        for name, cluster in clusters.items():
            if all(i.connected for i in self._informers(cluster)):
                self._disconnected_since.pop(name, None)
            else:
                self._disconnected_since.setdefault(name, now)

    def unhealthy(self, name: str) -> bool:
        """Disconnected for at least `grace` seconds (as last seen by `_update`)."""
        since = self._disconnected_since.get(name)
        return since is not None and self.clock() - since >= self.grace

    async def run(self, interval: float = 0.5) -> None:
        """Keep the disconnection times current between scrapes (so `grace` counts from the failure)."""
        while True:
            self._update()
            await asyncio.sleep(interval)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name="fleet-observer")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- metrics and readiness -------------------------------------------------------------------------

    def sample(self) -> FleetSample:
        self._update()
        controller = self.controller
        queue = controller.queue
        depths = queue.depths()
        clusters: list[ClusterSample] = []
        for name, cluster in list(controller.clusters.items()):
            informers = self._informers(cluster)
            sample = ClusterSample(
                name=name,
                connected=all(i.connected for i in informers),
                synced=all(i.synced.is_set() for i in informers),
                healthy=not self.unhealthy(name),
                queue_depth=depths.get(name, 0),
                api_errors=dict(getattr(cluster.client, "api_errors", None) or {}),
                events_dropped=getattr(cluster, "events_dropped", 0),
            )
            for informer in informers:
                kind = kind_label(informer.resource)
                sample.objects[kind] = sample.objects.get(kind, 0) + len(informer.cache)
                sample.watch_restarts[kind] = sample.watch_restarts.get(kind, 0) + informer.restarts
                sample.watch_failures[kind] = sample.watch_failures.get(kind, 0) + informer.failures
            clusters.append(sample)
        for name in sorted(self.unreached()):
            if name not in controller.clusters:
                healthy = not self.unhealthy(name)
                clusters.append(ClusterSample(name, connected=False, synced=False, healthy=healthy, queue_depth=0))
        stats = controller.resolver.stats
        return FleetSample(
            clusters=clusters,
            resolver_hits=stats.hits,
            resolver_misses=stats.misses,
            resolver_merges=stats.merges,
            resolver_entries=len(controller.resolver),
            queue_in_flight=queue.in_flight,
            queue_delayed=queue.delayed,
            registry_errors=len(controller.registry_errors),
        )

    def readiness(self) -> tuple[bool, list[str]]:
        """(ready, why not): see the module docstring for the rule."""
        self._update()
        if not self.registry_ready():
            return False, ["registry: the first registrations have not been applied yet"]
        waiting: list[str] = []
        notes: list[str] = []
        for name, cluster in sorted(self.controller.clusters.items()):
            informers = self._informers(cluster)
            if all(i.synced.is_set() for i in informers):
                continue
            if self.unhealthy(name):
                notes.append(f"cluster {name}: unhealthy (not synced, disconnected), not waited on")
                continue
            pending = sum(1 for i in informers if not i.synced.is_set())
            waiting.append(f"cluster {name}: {pending} of {len(informers)} caches not synced yet")
        unreached = self.unreached()
        for name in sorted(self.starting()):
            if name not in self.controller.clusters and name not in unreached:
                waiting.append(f"cluster {name}: not synced (its ownership lease is being taken, caches not started)")
        for name, why in sorted(unreached.items()):
            if name in self.controller.clusters:
                continue
            if self.unhealthy(name):
                notes.append(f"cluster {name}: unhealthy (its ownership lease cannot be taken: {why}), not waited on")
            else:
                waiting.append(f"cluster {name}: not synced (its ownership lease cannot be taken yet: {why})")
        return not waiting, waiting + notes
