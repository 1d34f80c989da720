"""The fleet controller: clusters come and go from the registry; each has its informers; one queue, one resolver.

```
registry provider ──▶ FleetController.apply_changes ──▶ ClusterRuntime (client + each domain's watch) per cluster
                                                             │ watch events (handlers, synchronous)
                                                             ▼
                      work queue (dedup, fair across clusters, lanes: edits > fan-out > initial lists)
                                                             │
                                                             ▼
                      workers ──▶ WorkKinds.handler(key.kind) ──▶ reconcile span ──▶ the kind's reconciler
```

The manager knows no domain: what each work kind reads and runs is in the work-kind registry
(`omectl.controller.runtime.registry`), filled by `omectl.controller.app`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from omectl.background import BackgroundTasks
from omectl.controller.runtime.heap import HeapFreezer
from omectl.controller.runtime.queue import Lane, Result, RetryLater, WorkItem, WorkKey, WorkQueue, run_workers
from omectl.controller.runtime.registry import DomainWatch, WorkKinds
from omectl.controller.runtime.view import EventType
from omectl.fleet.providers import RegistryChange
from omectl.fleet.registration import ClusterRegistration, resolve_kubeconfig
from omectl.fleet.sharding import Fenced
from omectl.kube import timestamps
from omectl.kube.client import ClusterClient, KubeError
from omectl.kube.crds import INSTALL_CRDS, runtime_crds_without_status, status_subresource_problem
from omectl.kube.events import EventRecorder
from omectl.kube.informer import Informer
from omectl.observability.logs import note_span
from omectl.observability.metrics import RESULT_ERROR, RESULT_REQUEUE, RESULT_SUCCESS, ControllerMetrics
from omectl.observability.redact import without_userinfo
from omectl.observability.steps import SlowSteps
from omectl.problems import one_line
from omectl.tracing.spans import reconcile_span, set_result

log = logging.getLogger(__name__)

EVENT_WRITERS = 4  # concurrent event writes per cluster
EVENT_BACKLOG = 2000  # events waiting to be written per cluster; beyond it they are dropped (client-go: 1000)
RETRY_LATER_FLOOR = 2.0  # seconds before a RetryLater reconcile runs again (then the per-item backoff grows)
W = TypeVar("W", bound=DomainWatch)


def default_edit_workers(concurrency: int) -> int:
    """Workers kept for the edit lane: one in eight (two of the default 16; none below eight)."""
    return concurrency // 8


class ResolverStats(Protocol):
    @property
    def hits(self) -> int: ...

    @property
    def misses(self) -> int: ...

    @property
    def merges(self) -> int: ...


class SharedResolver(Protocol):
    """The one cache the reconcilers of every cluster share (`omectl.controller.ome.resolver.ChainResolver`): its
    figures are reported, and a removed cluster's entries forgotten."""

    @property
    def stats(self) -> ResolverStats: ...

    def __len__(self) -> int: ...

    async def forget_cluster(self, cluster: str) -> None: ...


@dataclass
class ClusterHealth:
    connected: bool = False
    synced: bool = False
    last_error: str | None = None
    """The newest failure of the cluster's watches (None once they all answer again)."""
    reconciles: int = 0
    errors: int = 0
    started_at: float = field(default_factory=time.time)
    last_reconcile_at: float | None = None
    last_reconcile_error: str | None = None
    """The newest reconcile that failed (`errors` counts them), kept after later reconciles succeed."""
    last_reconcile_error_at: float | None = None


def _rfc3339(when: float | None) -> str | None:
    if when is None:
        return None
    return timestamps.rfc3339(when)


def _cluster_state(health: ClusterHealth) -> str:
    if not health.connected:
        return "disconnected"
    return "ready" if health.synced else "syncing"


class ClusterRuntime:
    """One registered cluster inside the controller: its client, informers, event recorder and health."""

    def __init__(
        self,
        registration: ClusterRegistration,
        client: ClusterClient,
        queue: WorkQueue,
        kinds: WorkKinds,
        *,
        on_synced: Callable[[], None] | None = None,
    ) -> None:
        self.on_synced = on_synced
        """Called once every informer of the cluster has listed (its keys are handed out from then on)."""
        self.registration = registration
        self.name = registration.name
        self.client = client
        self.queue = queue
        self.health = ClusterHealth()
        self.recorder = EventRecorder(client, component="omectl")
        self._tasks = BackgroundTasks(f"cluster {self.name}")
        self.crd_problems: list[str] = []
        self._event_tasks = BackgroundTasks(f"cluster {self.name} events")
        self._event_writers = asyncio.Semaphore(EVENT_WRITERS)
        self.events_dropped = 0
        self.watches = kinds.watches(self)
        """Every domain's informers of this cluster, by domain (`WorkKinds.watches`)."""

    def watch(self, of: type[W]) -> W:
        """The domain watch of this cluster that is an `of`."""
        for watch in self.watches.values():
            if isinstance(watch, of):
                return watch
        raise LookupError(f"cluster {self.name}: no {of.__name__} registered")

    @property
    def informers(self) -> list[Informer]:
        return [informer for watch in self.watches.values() for informer in watch.informers]

    def enqueue(
        self, key: WorkKey, *, lane: Lane | None = None, low_priority: bool = False, trigger: object | None = None
    ) -> None:
        self.queue.add(key, lane=lane, low_priority=low_priority, trigger=trigger)

    def enqueue_after(self, key: WorkKey, delay: float) -> None:
        self.queue.add_after(key, delay, lane=Lane.RESYNC)

    def record_event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        """Record an event off the reconcile path (like client-go's broadcaster); events are best effort: a few
        are written at a time, so a burst of them never crowds the reconciles' own writes out of the connection
        pool, and beyond a backlog they are dropped (counted in `events_dropped`)."""
        if len(self._event_tasks) >= EVENT_BACKLOG:
            self.events_dropped += 1
            log.debug("cluster %s: event backlog full; dropped %s %s", self.name, type_, reason)
            return
        self._event_tasks.spawn(self._record_event(obj, type_, reason, message), f"event-{self.name}-{reason}")

    async def _record_event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        async with self._event_writers:
            await self.recorder.record(obj if isinstance(obj, dict) else dict(obj), type_, reason, message)

    async def start(self) -> None:
        # The informers' first lists arrive a page at a time and their events queue work at once; none of it runs
        # until every informer of the cluster has listed (a chain read from half-listed caches could report a
        # parent that exists as missing), so the queue holds the cluster's keys until then.
        self.queue.hold(self.name)
        for informer in self.informers:
            self._tasks.spawn(informer.run(), f"informer-{self.name}-{informer.resource.plural}")
        self._tasks.spawn(self._release_when_synced(), f"synced-{self.name}")
        self._tasks.spawn(self._watch_health(), f"health-{self.name}")
        self._tasks.spawn(self._check_runtime_crds(), f"crd-check-{self.name}")

    async def _check_runtime_crds(self) -> None:
        """Say once, at start, when the runtime CRDs are upstream OME's (no status subresource)."""
        try:
            lacking = await runtime_crds_without_status(self.client)
        except KubeError as exc:
            log.debug("cluster %s: cannot read the runtime CRDs: %s", self.name, exc)
            return
        self.crd_problems = [status_subresource_problem(name) for name in lacking]
        for problem in self.crd_problems:
            log.error("cluster %s: %s; apply omectl's CRDs: %s", self.name, problem, INSTALL_CRDS)

    async def _watch_health(self) -> None:
        while True:
            self.health.synced = all(i.synced.is_set() for i in self.informers)
            self.health.connected = all(i.connected for i in self.informers)
            errors = [i.last_error for i in self.informers if i.last_error]
            self.health.last_error = errors[0] if errors else None
            await asyncio.sleep(0.5)

    async def wait_synced(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in self.informers)), timeout)
        self.health.synced = True

    async def _release_when_synced(self) -> None:
        await self.wait_synced()
        self.queue.release(self.name)
        if self.on_synced is not None:
            self.on_synced()

    async def stop(self) -> None:
        await self._event_tasks.stop(grace=5)  # the events recorded so far are written, if the server answers
        await self._tasks.stop()
        self.queue.release(self.name)  # its keys are let go: with the cluster gone, a worker drops each one
        await self.client.close()

    def status(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "server": without_userinfo(self.client.server) if hasattr(self.client, "server") else "",
            "state": _cluster_state(self.health),
            "connected": self.health.connected,
            "synced": self.health.synced,
            # a watch failing now first; else the last reconcile that failed, so errors > 0 always has its cause
            "lastError": self.health.last_error or self.health.last_reconcile_error,
            "lastErrorTime": _rfc3339(self.health.last_reconcile_error_at) if not self.health.last_error else None,
            "objectsCached": sum(len(i.cache) for i in self.informers),
            "reconciles": self.health.reconciles,
            "errors": self.health.errors,
            "lastReconcileTime": _rfc3339(self.health.last_reconcile_at),
            "queueDepth": self.queue.depth(self.name),
        }


class FleetController:
    """The central fleet controller: registry in, reconciles out, one shared resolver for every cluster."""

    def __init__(
        self,
        kinds: WorkKinds,
        resolver: SharedResolver,
        *,
        concurrency: int = 16,
        cluster_concurrency: int | None = None,
        edit_workers: int | None = None,
        tracer: Any = None,
        step_timing: bool = True,
        slow_steps: SlowSteps | None = None,
        freeze_heap: bool = False,
    ) -> None:
        reserved = default_edit_workers(concurrency) if edit_workers is None else edit_workers
        self.queue = WorkQueue(
            max_concurrency=concurrency, max_per_cluster=cluster_concurrency, reserved_for_edits=reserved
        )
        self.concurrency = concurrency
        self.kinds = kinds
        self.resolver = resolver
        self.tracer = tracer
        self.clusters: dict[str, ClusterRuntime] = {}
        self.registry_errors: dict[str, str] = {}
        self.on_cluster_added: list[Any] = []
        self.on_cluster_removed: list[Any] = []
        self.metrics: ControllerMetrics | None = None  # set by ControllerApp; one observation per reconcile
        self.heap = HeapFreezer(enabled=freeze_heap)
        """Freezes what the garbage collector would walk in vain: after start, after each cluster's sync and after
        each full collection (off unless asked: a process that runs several controllers, a test suite, would keep
        each one's cycles)."""
        self.step_timing = step_timing
        """Observe each reconcile's longest synchronous step (`omectl_reconcile_longest_step_seconds`)."""
        self.slow_steps = slow_steps
        """Name the reconcile steps that hold the loop past its threshold (a log line each)."""
        self._workers = BackgroundTasks("workers")
        self._workers_started = False

    # --- clusters --------------------------------------------------------------------------------------

    async def apply_changes(self, changes: list[RegistryChange]) -> None:
        for change in changes:
            name = change.registration.name
            if change.kind in ("removed", "changed"):
                await self.remove_cluster(name)
            if change.kind in ("added", "changed"):
                await self.add_cluster(change.registration)

    async def add_cluster(self, registration: ClusterRegistration) -> ClusterRuntime | None:
        try:
            config = resolve_kubeconfig(registration)
            client = await ClusterClient.from_kubeconfig(
                config_dict=config, context=registration.context, name=registration.name
            )
        except Exception as exc:  # a bad registration is reported, never a crash
            self.registry_errors[registration.name] = str(exc)
            log.error("cluster %s: cannot be added: %s", registration.name, exc)
            return None
        self.registry_errors.pop(registration.name, None)
        self.heap.start()  # from the first cluster on: its first lists are what makes the old generation grow
        runtime = ClusterRuntime(registration, client, self.queue, self.kinds, on_synced=self.heap.request)
        self.clusters[registration.name] = runtime
        await runtime.start()
        for callback in self.on_cluster_added:
            await callback(runtime)
        log.info("cluster %s: added", registration.name)
        return runtime

    async def remove_cluster(self, name: str) -> None:
        runtime = self.clusters.pop(name, None)
        if runtime is None:
            return
        for callback in self.on_cluster_removed:
            await callback(runtime)
        await runtime.stop()
        await self.resolver.forget_cluster(name)
        self.heap.thaw(refreeze=not self.queue.is_shut_down)  # its caches were frozen with the rest: let them go
        log.info("cluster %s: removed", name)

    # --- running ---------------------------------------------------------------------------------------

    def start_workers(self) -> None:
        if not self._workers_started:
            self._workers_started = True
            on_step = self._observe_step if self.step_timing or self.slow_steps is not None else None
            workers = run_workers(self.queue, self.process, self.concurrency, on_step=on_step, slow=self.slow_steps)
            self._workers.spawn(workers, "workers")
            self.heap.start()
            self.heap.request()

    def _observe_step(self, item: WorkItem, longest: float) -> None:
        if self.metrics is not None:
            self.metrics.observe_longest_step(item.key.kind, longest)

    async def stop(self) -> None:
        """Finish in-flight reconciles, then stop every cluster."""
        self.queue.shutdown()
        self.heap.stop()
        if self._workers_started:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self.queue.drain(), 10)
            await self._workers.stop()
            self._workers_started = False
        for name in list(self.clusters):
            await self.remove_cluster(name)
        self.heap.thaw(refreeze=False)  # what the controller held is garbage now, cycles and all

    # --- reconciling -----------------------------------------------------------------------------------

    async def process(self, item: WorkItem) -> Result:
        key = item.key
        cluster = self.clusters.get(key.cluster)
        if cluster is None:
            return Result()
        if not cluster.health.synced and not all(i.synced.is_set() for i in cluster.informers):
            # Like client-go's WaitForCacheSync: a chain read from half-listed caches could report a parent that
            # exists as missing. The queue holds a cluster's keys until it has synced (`ClusterRuntime.start`);
            # one taken before (a cluster re-added under its name) comes back once every informer has listed.
            return Result(requeue_after=0.1)
        handler = self.kinds.handler(key.kind)
        if handler is None:
            log.error("%s: no handler is registered for work kind %s; dropped", key, key.kind)
            return Result()
        obj = handler.get(cluster.watches, key.namespace, key.name)
        if obj is None:
            return Result()
        if not handler.traced:
            await handler.reconcile(cluster.watches, key, obj)
            return Result()
        paused = handler.paused(obj)
        if paused is not None:
            log.debug("%s: %s", key, paused)
            return Result()
        started, outcome = time.perf_counter(), RESULT_ERROR
        with reconcile_span(
            self.tracer,
            cluster=key.cluster,
            kind=key.kind,
            namespace=key.namespace,
            name=key.name,
            resource_version=obj["metadata"].get("resourceVersion", ""),
            queue_wait=item.queue_wait,
            retries=item.retries,
            links=[t for t in item.triggers if t is not None],  # type: ignore[misc]
        ) as span:
            note_span(span)  # the trace id reaches the log lines of this reconcile, a failure's included
            try:
                await handler.reconcile(cluster.watches, key, obj)
                outcome = RESULT_SUCCESS
            except RetryLater as exc:
                outcome = RESULT_REQUEUE
                set_result(span, RESULT_REQUEUE)
                # The workload is left as it is. What heals a broken chain or a missing config is a watch event
                # (the reverse index requeues everything below a runtime or config that changes), so retries are
                # a slow safety net rather than a hot loop over every InferenceService below a deleted profile.
                return Result(error=exc, retry_floor=RETRY_LATER_FLOOR)
            except Fenced:  # the cluster is being handed over, or its Lease was lost: its next holder reconciles it
                outcome = RESULT_REQUEUE
                set_result(span, RESULT_REQUEUE)
                return Result()
            except Exception as exc:  # counted in the cluster's health, then raised: the queue logs and retries
                cluster.health.errors += 1
                where = f"{key.namespace}/{key.name}" if key.namespace else key.name
                problem = one_line(str(exc) or type(exc).__name__)
                cluster.health.last_reconcile_error = f"{key.kind} {where}: {problem}"
                cluster.health.last_reconcile_error_at = time.time()
                raise
            finally:
                cluster.health.reconciles += 1
                cluster.health.last_reconcile_at = time.time()
                if self.metrics is not None:
                    elapsed = time.perf_counter() - started
                    self.metrics.observe_reconcile(key.cluster, key.kind, outcome, elapsed, item.queue_wait)
        return Result()

    # --- reporting -------------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return {
            "clusters": [c.status() for c in self.clusters.values()],
            "registryErrors": dict(self.registry_errors),
            "resolver": {
                "entries": len(self.resolver),
                "hits": self.resolver.stats.hits,
                "misses": self.resolver.stats.misses,
                "merges": self.resolver.stats.merges,
            },
            "queueDepth": self.queue.depth(),
        }
