"""One kopf peer process: its caches, what each watch event schedules, and the two reconciles it runs (a runtime's
status, an InferenceService's engine). kopf's handlers (`kopf_engine.py`) hand every event here.

What an event schedules follows omectl's informer handlers (`omectl/controller/ome/watch.py`):

- a runtime: its own status, unless only its status changed; after a create, a delete or a change of its spec or
  inheritance annotations, also everything the edit reaches (`omectl.core.ome.reach`: the runtimes whose chains look
  it up, then the InferenceServices built on them);
- an InferenceService: its reconcile, unless only its status changed (a delete: nothing, the API server collects
  its workloads);
- a model: after a create, a delete or a change, the InferenceServices naming it;
- a rendered Deployment or Service: its InferenceService, when the workload's status changed or it was deleted
  (a Service: only deleted), since readiness mirrors it.

kopf's first list of each kind comes as events of type None. kopf says nothing of when it has listed every kind, so
`prime` lists the runtimes, the models and the rendered workloads once before kopf's watches start (kopf runs the
startup handler first): an InferenceService's first reconcile then finds its chain, as omectl's does after its
informers synced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from benchmarks.peers.api import Api
from benchmarks.peers.cache import ISVC_LABEL, Index, PeerCache, slim_workload, stripped
from benchmarks.peers.engine import EngineReconcile, now
from benchmarks.peers.merges import Merges
from benchmarks.peers.revisions import PeerRevisions
from benchmarks.peers.work import Reconciles
from omectl.core.ome.inheritance import ChainError, resolve_chain
from omectl.core.ome.reach import reach
from omectl.core.ome.runtime_status import RESOLVED, desired_runtime_status, resolved_message
from omectl.core.ome.runtimes import (
    CLUSTER_SERVING_RUNTIME,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    SERVING_RUNTIME,
    RuntimeKind,
    RuntimeRef,
)

OME: Final = "/apis/ome.io/v1beta1"
ISVC: Final = "InferenceService"
ROLLOUT_ANNOTATION: Final = "omectl.io/rollout-requested"  # `omectl runtime rollout` asks for a re-pin with it
WATCHED_ANNOTATIONS: Final = (INHERIT_FROM_ANNOTATION, RUNTIME_PROFILE_ANNOTATION, ROLLOUT_ANNOTATION)
RUNTIME_PLURALS: Final = {SERVING_RUNTIME: "servingruntimes", CLUSTER_SERVING_RUNTIME: "clusterservingruntimes"}
CONCURRENCY: Final = 16  # reconciles at once, as omectl's default workers


@dataclass(frozen=True, slots=True)
class Work:
    """A reconcile: a runtime's status (kind ServingRuntime or ClusterServingRuntime) or an InferenceService's."""

    kind: str
    namespace: str
    name: str


def spec_or_inheritance_changed(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether an update can change what is rendered: the spec (generation) or the watched annotations."""
    if old is None:
        return True
    meta, old_meta = obj["metadata"], old["metadata"]
    if meta.get("generation") != old_meta.get("generation"):
        return True
    annotations, old_annotations = meta.get("annotations") or {}, old_meta.get("annotations") or {}
    return any(annotations.get(k) != old_annotations.get(k) for k in WATCHED_ANNOTATIONS)


def workload_status_changed(event_type: str | None, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """omectl's `child_status_changed`: not the first list, not a new workload without status, not a spec or
    metadata write (the peer's own apply)."""
    if event_type is None or (event_type == "ADDED" and not obj.get("status")):
        return False
    return not (event_type == "MODIFIED" and old is not None and old.get("status") == obj.get("status"))


def _older(meta: Mapping[str, Any], than: Mapping[str, Any]) -> bool:
    """Whether `meta`'s resourceVersion is older than `than`'s. Kubernetes calls them opaque; both servers the
    benchmark runs on (the embedded one and etcd's revisions) count them up, and this peer is only run there."""
    return int(meta.get("resourceVersion") or 0) < int(than.get("resourceVersion") or 0)


class Peer:
    def __init__(self) -> None:
        self.cache = PeerCache()
        self.merges = Merges()
        self.work: Reconciles[Work] = Reconciles(self.reconcile, CONCURRENCY)
        self.events = 0
        self.runtime_status_writes = 0
        # per runtime, the object as the peer last wrote its status, until the cache has its event: kopf hands each
        # object's events to its own worker, so a runtime's reconcile can read a cached copy older than the peer's
        # own last write of it (and, comparing with that copy, find nothing to write over a status it replaced)
        self.own_status_writes: dict[tuple[RuntimeKind, str, str], dict[str, Any]] = {}
        self.api: Api | None = None
        self.engine: EngineReconcile | None = None
        self.revisions: PeerRevisions | None = None

    def connect(self, api: Api) -> None:
        self.api = api
        self.revisions = PeerRevisions(api)
        self.engine = EngineReconcile(self.cache, api, self.revisions, self.merges)

    async def prime(self) -> None:
        """One list of the runtimes, the models and the rendered workloads, before kopf's watches start."""
        assert self.api is not None
        for index, path, selector in (
            (self.cache.serving, f"{OME}/servingruntimes", ""),
            (self.cache.cluster_serving, f"{OME}/clusterservingruntimes", ""),
            (self.cache.base_models, f"{OME}/basemodels", ""),
            (self.cache.cluster_base_models, f"{OME}/clusterbasemodels", ""),
        ):
            for obj in await self.api.list(path, selector):
                index.put(stripped(obj))
        for kind, path in (("Deployment", "/apis/apps/v1/deployments"), ("Service", "/api/v1/services")):
            for obj in await self.api.list(path, ISVC_LABEL):
                self.cache.workloads[kind].put(slim_workload(obj))

    # --- events -----------------------------------------------------------------------------------------------

    def runtime_event(self, kind: RuntimeKind, event: Mapping[str, Any]) -> None:
        self.events += 1
        index = self.cache.runtime_index(kind)
        obj = event["object"]
        meta = obj["metadata"]
        own_key = (kind, meta.get("namespace", "") if kind == SERVING_RUNTIME else "", meta["name"])
        own = self.own_status_writes.get(own_key)
        if own is not None and (event.get("type") == "DELETED" or not _older(meta, own["metadata"])):
            self.own_status_writes.pop(own_key, None)  # the cache is as new as the peer's own write, or newer
        if event.get("type") == "DELETED":
            old = index.pop(obj)
            changed = True
        else:
            obj = stripped(obj)
            old = index.put(obj)
            changed = spec_or_inheritance_changed(obj, old)
            if changed or event.get("type") is None:  # the first list: its status may want writing
                self.work.schedule(Work(kind, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))
        if not changed:
            return
        meta = obj["metadata"]
        namespace = meta.get("namespace", "") if kind == SERVING_RUNTIME else ""
        reached = reach(RuntimeRef(kind, namespace, meta["name"]), self.cache)
        for ref in reached.runtimes:  # statuses first, then the renders below them
            self.work.schedule(Work(ref.kind, ref.namespace, ref.name))
        for isvc in reached.inference_services:
            self.work.schedule(Work(ISVC, isvc["metadata"].get("namespace", ""), isvc["metadata"]["name"]))

    def isvc_event(self, event: Mapping[str, Any]) -> None:
        self.events += 1
        obj = event["object"]
        if event.get("type") == "DELETED":
            self.cache.inference_services.pop(obj)
            return
        obj = stripped(obj)
        old = self.cache.inference_services.put(obj)
        if spec_or_inheritance_changed(obj, old):
            self.work.schedule(Work(ISVC, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]))

    def model_event(self, index: Index, event: Mapping[str, Any]) -> None:
        self.events += 1
        obj = event["object"]
        if event.get("type") == "DELETED":
            index.pop(obj)
        elif not spec_or_inheritance_changed(obj, index.put(stripped(obj))):
            return
        model_namespace = obj["metadata"].get("namespace")
        for isvc in self.cache.inference_services.having("model", obj["metadata"]["name"]):
            namespace = isvc["metadata"].get("namespace", "")
            if not model_namespace or namespace == model_namespace:
                self.work.schedule(Work(ISVC, namespace, isvc["metadata"]["name"]))

    def workload_event(self, kind: str, event: Mapping[str, Any]) -> None:
        self.events += 1
        index = self.cache.workloads[kind]
        event_type = event.get("type")
        obj = slim_workload(event["object"])
        old = index.pop(obj) if event_type == "DELETED" else index.put(obj)
        if not workload_status_changed(event_type, obj, old) or (kind == "Service" and event_type != "DELETED"):
            return
        meta = obj["metadata"]
        isvc = (meta.get("labels") or {}).get(ISVC_LABEL)
        if isvc and self.cache.inference_services.get(meta.get("namespace", ""), isvc) is not None:
            self.work.schedule(Work(ISVC, meta.get("namespace", ""), isvc))

    # --- reconciles -------------------------------------------------------------------------------------------

    async def reconcile(self, work: Work) -> None:
        if work.kind == ISVC:
            assert self.engine is not None
            await self.engine(work.namespace, work.name)
        else:
            await self.reconcile_runtime(work.kind, work.namespace, work.name)  # type: ignore[arg-type]

    async def reconcile_runtime(self, kind: RuntimeKind, namespace: str, name: str) -> None:
        """Resolve and merge one runtime's chain from the caches; write its status when it changes."""
        live = self.cache.runtime_index(kind).get(namespace, name)
        if live is None:
            return
        own = self.own_status_writes.get((kind, namespace, name))
        if own is not None:
            live = own  # the cache has not seen the peer's own last status write yet: compare with what it wrote
        names: tuple[str, ...] | None
        reason: str
        try:
            chain = resolve_chain(live, self.cache)
        except ChainError as exc:
            names, reason, message = None, exc.reason, exc.message
        else:
            self.merges.merged(chain)
            names, reason, message = chain.names, RESOLVED, resolved_message(chain.names)
        if desired_runtime_status(live, names, reason, message, now()) is None:
            return
        assert self.api is not None
        scope = f"/namespaces/{namespace}" if kind == SERVING_RUNTIME else ""
        path = f"{OME}{scope}/{RUNTIME_PLURALS[kind]}/{name}"
        written = await self.api.write_status(
            path, live, lambda obj: desired_runtime_status(obj, names, reason, message, now())
        )
        if written is not None:
            self.own_status_writes[(kind, namespace, name)] = written
            self.runtime_status_writes += 1

    def stats(self) -> dict[str, Any]:
        """The counters `benchmarks.fleet_scale` reads from the stats file."""
        cache, engine = self.cache, self.engine
        return {
            "cached": len(cache.serving) + len(cache.cluster_serving),  # the runtimes
            "inference_services": len(cache.inference_services),
            "deployments": len(cache.workloads["Deployment"]),
            "events": self.events,
            "pending": self.work.pending,
            "reconciles": self.work.done,
            "reconcile_errors": self.work.errors,
            "merges": self.merges.computed,
            "applies": engine.applies if engine else 0,
            "status_writes": self.runtime_status_writes + (engine.status_writes if engine else 0),
            "writes": self.runtime_status_writes + (engine.status_writes + engine.applies if engine else 0),
            "revisions_created": self.revisions.created if self.revisions else 0,
            "failures": dict(engine.failures) if engine else {},
            "requests": dict(self.api.requests) if self.api else {},
        }
