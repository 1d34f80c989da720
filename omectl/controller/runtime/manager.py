"""The fleet controller: clusters come and go from the registry; each has its informers; one queue, one resolver.

```
registry provider ──▶ FleetController.apply_changes ──▶ ClusterRuntime (client + informers) per cluster
                                                             │ watch events (handlers, synchronous)
                                                             ▼
                      work queue (dedup, fair across clusters, low priority for initial lists)
                                                             │
                                                             ▼
                      workers ──▶ reconcile span ──▶ runtime status reconciler ──▶ resolver (shared) ──▶ status write
```
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from omectl.controller.aim.consumers import AimConsumerReconciler
from omectl.controller.aim.consumers_watch import CONSUMER_KEYS as AIM_CONSUMER_KEYS
from omectl.controller.aim.service import AimServiceReconciler
from omectl.controller.aim.watch import AIM_SERVICE_KEY
from omectl.controller.ome.engine import ISVC_STATUS_WORK, EngineReconciler
from omectl.controller.ome.lookup import (
    INHERIT_INDEX,
    MODEL_INDEX,
    RUNTIME_INDEX,
    CacheGraph,
    CacheLookup,
    inherit_index,
    model_index,
    runtime_index,
)
from omectl.controller.ome.resolver import ChainResolver
from omectl.controller.ome.revisions import RevisionStore
from omectl.controller.ome.runtime_status import desired_status, record_merge_span, resolve_runtime
from omectl.controller.runtime.apply import child_status_changed
from omectl.controller.runtime.queue import Result, RetryLater, WorkItem, WorkKey, WorkQueue, run_workers
from omectl.core.aim.meta import RECONCILIATION_PAUSED, reconciliation_paused
from omectl.core.ome.reach import Reach, reach
from omectl.core.ome.runtimes import (
    CLUSTER_SERVING_RUNTIME,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    SERVING_RUNTIME,
    RuntimeKind,
    RuntimeRef,
)
from omectl.fleet.providers import RegistryChange
from omectl.fleet.registration import ClusterRegistration, resolve_kubeconfig
from omectl.fleet.sharding import Fenced
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient, KubeError
from omectl.kube.crds import INSTALL_CRDS, runtime_crds_without_status, status_subresource_problem
from omectl.kube.errors import NotFound
from omectl.kube.events import EventRecorder
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    BASE_MODELS,
    CLUSTER_BASE_MODELS,
    CLUSTER_SERVING_RUNTIMES,
    DEPLOYMENTS,
    INFERENCE_SERVICES,
    LEADER_WORKER_SETS,
    SERVICES,
    SERVING_RUNTIMES,
    ResourceRef,
)
from omectl.kube.transforms import metadata_and_status
from omectl.kube.writer import write_status
from omectl.observability.logs import note_span
from omectl.observability.metrics import RESULT_ERROR, RESULT_REQUEUE, RESULT_SUCCESS, ControllerMetrics
from omectl.observability.redact import without_userinfo
from omectl.problems import one_line
from omectl.tracing.spans import reconcile_span, set_result, watch_event_context

log = logging.getLogger(__name__)

SR_KEY = "ome.io/ServingRuntime"
CSR_KEY = "ome.io/ClusterServingRuntime"
ISVC_KEY = "ome.io/InferenceService"
ISVC_LABEL = "ome.io/inferenceservice"  # on every workload rendered for an InferenceService
ROLLOUT_ANNOTATION = "omectl.io/rollout-requested"  # set by `omectl runtime rollout`: re-pin to the live revision
EVENT_WRITERS = 4  # concurrent event writes per cluster
EVENT_BACKLOG = 2000  # events waiting to be written per cluster; beyond it they are dropped (client-go: 1000)
RETRY_LATER_FLOOR = 2.0  # seconds before a RetryLater reconcile runs again (then the per-item backoff grows)
_KIND_OF: dict[str, RuntimeKind] = {SR_KEY: SERVING_RUNTIME, CSR_KEY: CLUSTER_SERVING_RUNTIME}
_KEY_OF = {SERVING_RUNTIME: SR_KEY, CLUSTER_SERVING_RUNTIME: CSR_KEY}


def _chain_relevant_change(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether an update can change a chain: the spec (generation) or the inheritance annotations."""
    if old is None:
        return True
    meta, old_meta = obj.get("metadata") or {}, old.get("metadata") or {}
    if meta.get("generation") != old_meta.get("generation"):
        return True
    annotations, old_annotations = meta.get("annotations") or {}, old_meta.get("annotations") or {}
    watched = (INHERIT_FROM_ANNOTATION, RUNTIME_PROFILE_ANNOTATION, ROLLOUT_ANNOTATION)
    return any(annotations.get(k) != old_annotations.get(k) for k in watched)


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
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def _cluster_state(health: ClusterHealth) -> str:
    if not health.connected:
        return "disconnected"
    return "ready" if health.synced else "syncing"


class ClusterRuntime:
    """One registered cluster inside the controller: its client, informers, event recorder and health."""

    def __init__(self, registration: ClusterRegistration, client: ClusterClient, controller: FleetController) -> None:
        self.registration = registration
        self.name = registration.name
        self.client = client
        self.controller = controller
        self.health = ClusterHealth()
        self.recorder = EventRecorder(client, component="omectl")
        self.revisions = RevisionStore(client)
        self.serving = self._informer(SERVING_RUNTIMES, SR_KEY)
        self.cluster_serving = self._informer(CLUSTER_SERVING_RUNTIMES, CSR_KEY)
        # InferenceServices by the runtime they name: the last hop of the reverse index (parent -> children ->
        # InferenceServices) that the engine-workload reconciler walks.
        self.inference_services = Informer(client, INFERENCE_SERVICES, handlers=[self._isvc_handler])
        self.inference_services.cache.add_index(RUNTIME_INDEX, runtime_index)
        self.inference_services.cache.add_index(MODEL_INDEX, model_index)
        self.base_models = Informer(client, BASE_MODELS, handlers=[self._model_handler])
        self.cluster_base_models = Informer(client, CLUSTER_BASE_MODELS, handlers=[self._model_handler])
        # The workloads rendered for InferenceServices: their status becomes the InferenceService's readiness, and
        # the cache spares a GET per object when checking whether a render is already applied. Their spec is what
        # the controller rendered, so the cache keeps only metadata and status. LeaderWorkerSet is a third-party
        # CRD: a cluster without it simply has none.
        workloads: dict[str, Any] = {
            "label_selector": ISVC_LABEL,
            "handlers": [self._workload_handler],
            "transform": metadata_and_status,
        }
        self.deployments = Informer(client, DEPLOYMENTS, **workloads)
        self.leader_worker_sets = Informer(client, LEADER_WORKER_SETS, optional=True, **workloads)
        self.services = Informer(client, SERVICES, **workloads)
        self.aim = controller.aim.watch(self)  # AMD AIM: optional informers (omectl.controller.aim.watch)
        self._tasks: list[asyncio.Task[None]] = []
        self.crd_problems: list[str] = []
        self._event_tasks: set[asyncio.Task[Any]] = set()
        self._event_writers = asyncio.Semaphore(EVENT_WRITERS)
        self.events_dropped = 0

    def _informer(self, resource: ResourceRef, work_kind: str) -> Informer:
        informer = Informer(self.client, resource, handlers=[self._handler(work_kind)])
        informer.cache.add_index(INHERIT_INDEX, inherit_index)
        return informer

    @property
    def informers(self) -> list[Informer]:
        return [
            self.serving,
            self.cluster_serving,
            self.inference_services,
            self.base_models,
            self.cluster_base_models,
            self.deployments,
            self.leader_worker_sets,
            self.services,
            *self.aim.informers,
        ]

    def workload_cache(self, kind: str) -> ObjectCache | None:
        """The informer cache holding rendered workloads of `kind`, if the controller watches that kind."""
        if kind == "Deployment":
            return self.deployments.cache
        if kind == "Service":
            return self.services.cache
        if kind == "LeaderWorkerSet" and self.leader_worker_sets.served:
            return self.leader_worker_sets.cache
        return None

    def reach(self, ref: RuntimeRef) -> Reach:
        """What an edit of `ref` reaches here: the runtimes whose chains look it up, per resolution context, and the
        InferenceServices built on them (`omectl.core.ome.reach`)."""
        return reach(ref, CacheGraph(self.serving.cache, self.cluster_serving.cache, self.inference_services.cache))

    def lookup(self) -> CacheLookup:
        return CacheLookup(self.serving.cache, self.cluster_serving.cache)

    def _handler(self, work_kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            meta = obj["metadata"]
            namespace = meta.get("namespace", "")
            trigger = watch_event_context(
                self.name, work_kind, namespace, meta["name"], meta.get("resourceVersion", "")
            )
            relevant = event_type != "MODIFIED" or _chain_relevant_change(obj, old)
            if not relevant:
                return  # our own status write (or a label edit) cannot change any chain
            queue = self.controller.queue
            if event_type != "DELETED":
                queue.add(WorkKey(self.name, work_kind, namespace, meta["name"]), low_priority=initial, trigger=trigger)
            if initial:
                return  # every runtime of the initial list is queued anyway
            reached = self.reach(RuntimeRef(_KIND_OF[work_kind], namespace, meta["name"]))
            for ref in reached.runtimes:
                queue.add(WorkKey(self.name, _KEY_OF[ref.kind], ref.namespace, ref.name), trigger=trigger)
            # The runtimes' own status first: the InferenceServices a runtime edit reaches re-render in the
            # low-priority lane, so a profile edit's chain statuses are not queued behind thousands of renders.
            for isvc in reached.inference_services:
                self._enqueue_isvc(isvc, trigger, low_priority=True)

        return on_event

    def _enqueue_isvc(self, isvc: Mapping[str, Any], trigger: Any, low_priority: bool = False) -> None:
        meta = isvc["metadata"]
        key = WorkKey(self.name, ISVC_KEY, meta.get("namespace", ""), meta["name"])
        self.controller.queue.add(key, low_priority=low_priority, trigger=trigger)

    def _isvc_handler(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        if event_type == "DELETED":
            return  # owner references let the API server collect the workloads
        if event_type == "MODIFIED" and old is not None and not _chain_relevant_change(obj, old):
            return
        meta = obj["metadata"]
        trigger = watch_event_context(
            self.name, ISVC_KEY, meta.get("namespace", ""), meta["name"], meta.get("resourceVersion", "")
        )
        self._enqueue_isvc(obj, trigger, low_priority=initial)

    def _workload_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool
    ) -> None:
        """A workload's status changed (or it was deleted): its InferenceService's readiness may have too."""
        if not child_status_changed(event_type, obj, old, initial):
            return
        if obj.get("kind") == "Service" and event_type != "DELETED":
            return  # a Service's status says nothing of readiness; only its deletion needs a re-render
        meta = obj["metadata"]
        isvc_name = (meta.get("labels") or {}).get(ISVC_LABEL)
        isvc = self.inference_services.cache.get(meta.get("namespace", ""), isvc_name) if isvc_name else None
        if isvc is not None:
            trigger = watch_event_context(
                self.name, obj.get("kind", ""), meta.get("namespace", ""), meta["name"], meta.get("resourceVersion", "")
            )
            self._enqueue_isvc(isvc, trigger)

    def _model_handler(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        if initial or (event_type == "MODIFIED" and old is not None and not _chain_relevant_change(obj, old)):
            return
        meta = obj["metadata"]
        model_ns = meta.get("namespace")
        trigger = watch_event_context(
            self.name, obj.get("kind", ""), model_ns or "", meta["name"], meta.get("resourceVersion", "")
        )
        for isvc in self.inference_services.cache.by_index(MODEL_INDEX, meta["name"]):
            if model_ns and isvc["metadata"].get("namespace") != model_ns:
                continue
            self._enqueue_isvc(isvc, trigger)

    def record_event(self, obj: dict[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str) -> None:
        """Record an event off the reconcile path (like client-go's broadcaster); events are best effort: a few
        are written at a time, so a burst of them never crowds the reconciles' own writes out of the connection
        pool, and beyond a backlog they are dropped (counted in `events_dropped`)."""
        if len(self._event_tasks) >= EVENT_BACKLOG:
            self.events_dropped += 1
            log.debug("cluster %s: event backlog full; dropped %s %s", self.name, type_, reason)
            return
        task = asyncio.get_running_loop().create_task(self._record_event(obj, type_, reason, message))
        self._event_tasks.add(task)
        task.add_done_callback(self._event_tasks.discard)

    async def _record_event(
        self, obj: dict[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None:
        async with self._event_writers:
            await self.recorder.record(obj, type_, reason, message)

    async def start(self) -> None:
        for informer in self.informers:
            self._tasks.append(
                asyncio.create_task(informer.run(), name=f"informer-{self.name}-{informer.resource.plural}")
            )
        self._tasks.append(asyncio.create_task(self._watch_health(), name=f"health-{self.name}"))
        self._tasks.append(asyncio.create_task(self._check_runtime_crds(), name=f"crd-check-{self.name}"))

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

    async def stop(self) -> None:
        if self._event_tasks:
            await asyncio.wait(self._event_tasks, timeout=5)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
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
            "queueDepth": self.controller.queue.depth(self.name),
        }


class FleetController:
    """The central fleet controller: registry in, reconciles out, one shared resolver for every cluster."""

    def __init__(self, *, concurrency: int = 16, tracer: Any = None, resolver: ChainResolver | None = None) -> None:
        self.queue = WorkQueue(max_concurrency=concurrency)
        self.concurrency = concurrency
        self.resolver = resolver or ChainResolver()
        self.engine = EngineReconciler(self.resolver)
        self.aim = AimServiceReconciler()
        self.aim_consumers = AimConsumerReconciler(operator_namespace=self.aim.operator_namespace)  # AIM v1alpha2
        self.tracer = tracer
        self.clusters: dict[str, ClusterRuntime] = {}
        self.registry_errors: dict[str, str] = {}
        self.on_cluster_added: list[Any] = []
        self.on_cluster_removed: list[Any] = []
        self.metrics: ControllerMetrics | None = None  # set by ControllerApp; one observation per reconcile
        self._workers: asyncio.Task[None] | None = None

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
        runtime = ClusterRuntime(registration, client, self)
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
        log.info("cluster %s: removed", name)

    # --- running ---------------------------------------------------------------------------------------

    def start_workers(self) -> None:
        if self._workers is None:
            self._workers = asyncio.create_task(run_workers(self.queue, self.process, self.concurrency), name="workers")

    async def stop(self) -> None:
        """Finish in-flight reconciles, then stop every cluster."""
        self.queue.shutdown()
        if self._workers is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self.queue.drain(), 10)
            self._workers.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._workers
            self._workers = None
        for name in list(self.clusters):
            await self.remove_cluster(name)

    # --- reconciling -----------------------------------------------------------------------------------

    async def process(self, item: WorkItem) -> Result:
        key = item.key
        cluster = self.clusters.get(key.cluster)
        if cluster is None:
            return Result()
        if not cluster.health.synced and not all(i.synced.is_set() for i in cluster.informers):
            # Like client-go's WaitForCacheSync: a chain read from half-listed caches could report a parent that
            # exists as missing. Come back once every informer of the cluster has listed.
            return Result(requeue_after=0.1)
        if key.kind == ISVC_STATUS_WORK:
            isvc = cluster.inference_services.cache.get(key.namespace, key.name)
            if isvc is not None:
                await self.engine.write_pending_status(cluster, isvc)
            return Result()
        if key.kind == ISVC_KEY:
            cache = cluster.inference_services.cache
        elif key.kind == AIM_SERVICE_KEY:
            cache = cluster.aim.services.cache
        elif key.kind in AIM_CONSUMER_KEYS:
            cache = cluster.aim.consumers.kinds[AIM_CONSUMER_KEYS[key.kind]].cache
        else:
            cache = cluster.serving.cache if key.kind == SR_KEY else cluster.cluster_serving.cache
        obj = cache.get(key.namespace, key.name)
        if obj is None:
            return Result()
        if (key.kind == AIM_SERVICE_KEY or key.kind in AIM_CONSUMER_KEYS) and reconciliation_paused(obj):
            log.debug("%s: reconciliation paused by its %s annotation", key, RECONCILIATION_PAUSED)
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
                if key.kind == ISVC_KEY:
                    await self.engine.reconcile(cluster, obj)
                elif key.kind == AIM_SERVICE_KEY:
                    await self.aim.reconcile(cluster, obj, self.tracer)
                elif key.kind in AIM_CONSUMER_KEYS:
                    await self.aim_consumers.reconcile(cluster, key.kind, obj, self.tracer)
                else:
                    await self._reconcile_runtime(cluster, key, obj)
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

    async def _reconcile_runtime(self, cluster: ClusterRuntime, key: WorkKey, obj: dict[str, Any]) -> None:
        outcome = await resolve_runtime(self.resolver, cluster.name, obj, cluster.lookup())
        if self.tracer is not None:
            record_merge_span(self.tracer, outcome, _KIND_OF[key.kind], key.namespace, key.name)
        resource = SERVING_RUNTIMES if key.kind == SR_KEY else CLUSTER_SERVING_RUNTIMES
        if desired_status(obj, outcome) is not None:  # cheap check against the cache before any request
            with contextlib.suppress(NotFound):
                await write_status(
                    cluster.client,
                    resource,
                    key.namespace or None,
                    key.name,
                    lambda live: desired_status(live, outcome),
                    field_manager=FIELD_MANAGER,
                    cached=obj,
                )
        if not outcome.ok:
            cluster.record_event(obj, "Warning", outcome.reason, outcome.message)

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
