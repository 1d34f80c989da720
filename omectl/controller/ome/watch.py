"""What one cluster watches for OME (`ome.io`), and which watch events become work.

- ServingRuntimes and ClusterServingRuntimes, indexed by the parent they name (`INHERIT_INDEX`). A create, a
  delete, or an update of the spec or of the inheritance annotations queues the runtime itself and everything the
  edit reaches (`omectl.core.ome.reach`): the runtimes whose chains look it up, then, in the low-priority lane,
  the InferenceServices built on them. Status-only updates (our own writes) queue nothing.
- InferenceServices, indexed by the runtime and the model they name; BaseModels and ClusterBaseModels, whose edit
  queues the InferenceServices naming the model.
- The workloads rendered for InferenceServices (label `ome.io/inferenceservice`): Deployments, LeaderWorkerSets
  (optional: a cluster without the CRD has none) and Services. Their cache keeps metadata and status only; a status
  change or a deletion queues the InferenceService, whose readiness mirrors them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

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
from omectl.controller.ome.revisions import RevisionStore
from omectl.controller.runtime.apply import RENDER_HASH, child_status_changed
from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.controller.runtime.view import ClusterView, DomainView
from omectl.core.ome.engine_status import AVAILABLE, ROLLOUT_COUNTS, WORKLOAD_KINDS
from omectl.core.ome.reach import Reach, reach
from omectl.core.ome.runtimes import (
    CLUSTER_SERVING_RUNTIME,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    SERVING_RUNTIME,
    RuntimeKind,
    RuntimeRef,
)
from omectl.kube.cache import ObjectCache
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
from omectl.kube.transforms import Transform, condition_fields, rendered_object
from omectl.tracing.spans import object_event_context

SR_KEY: Final = "ome.io/ServingRuntime"
CSR_KEY: Final = "ome.io/ClusterServingRuntime"
ISVC_KEY: Final = "ome.io/InferenceService"
ISVC_STATUS_WORK: Final = "ome.io/InferenceService.status"  # a low-priority work item: write the status decided
ISVC_LABEL: Final = "ome.io/inferenceservice"  # on every workload rendered for an InferenceService
ROLLOUT_ANNOTATION: Final = (
    "omectl.io/rollout-requested"  # set by `omectl runtime rollout`: re-pin to the live revision
)
RUNTIME_KIND_OF: Final[Mapping[str, RuntimeKind]] = {SR_KEY: SERVING_RUNTIME, CSR_KEY: CLUSTER_SERVING_RUNTIME}
"""Work key kind of a runtime -> its runtime kind."""
_KEY_OF: Final[Mapping[RuntimeKind, str]] = {SERVING_RUNTIME: SR_KEY, CLUSTER_SERVING_RUNTIME: CSR_KEY}

Handler = Callable[[str, dict[str, Any], "dict[str, Any] | None", bool], None]


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


def _availability(status: Mapping[str, Any]) -> dict[str, Any]:
    """What readiness reads of a workload's status: `observedGeneration`, the `Available` condition and the replica
    counts that say whether its rollout is complete (`engine_status.rolled_out`)."""
    kept = condition_fields(status, (AVAILABLE,))
    kept.update((key, status[key]) for key in ROLLOUT_COUNTS if key in status)
    return kept


WORKLOAD_TRANSFORM: Final = rendered_object(labels=(ISVC_LABEL,), annotations=(RENDER_HASH,), status=_availability)
"""What the caches keep of a rendered workload (Deployment, LeaderWorkerSet), and what a decided status waiting for
its write keeps of an apply's answer: identity, the InferenceService label, the render hash, what readiness reads."""


class OmeWatch(DomainView):
    """The OME informers of one cluster, their event handlers, and the cluster as the OME reconcilers see it."""

    def __init__(
        self, cluster: ClusterView, on_runtime_deleted: Callable[[str, RuntimeRef], None] | None = None
    ) -> None:
        """`on_runtime_deleted(cluster, ref)`: told of every runtime deleted here (the shared resolver forgets it)."""
        super().__init__(cluster)
        self.on_runtime_deleted = on_runtime_deleted
        client = cluster.client
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
        # the controller rendered, so the cache keeps what its readers read: the InferenceService label
        # (`_workload_handler`), the render hash (`holds_render`), `generation`, and of a workload's status what
        # readiness reads (`omectl.core.ome.engine_status`). LeaderWorkerSet is a third-party CRD: a cluster
        # without it simply has none.
        workloads: dict[str, Any] = {"label_selector": ISVC_LABEL, "handlers": [self._workload_handler]}
        self.deployments = Informer(client, DEPLOYMENTS, transform=WORKLOAD_TRANSFORM, **workloads)
        self.leader_worker_sets = Informer(
            client, LEADER_WORKER_SETS, optional=True, transform=WORKLOAD_TRANSFORM, **workloads
        )
        service = rendered_object(labels=(ISVC_LABEL,), annotations=(RENDER_HASH,))  # its status: not read
        self.services = Informer(client, SERVICES, transform=service, **workloads)

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

    @staticmethod
    def status_transform(kind: str) -> Transform | None:
        """What a decided InferenceService status keeps of the apply's answer for a rendered object of `kind`: of a
        workload, what its cache keeps (readiness reads it); of anything else (a Service), nothing."""
        return WORKLOAD_TRANSFORM if kind in WORKLOAD_KINDS else None

    def reach(self, ref: RuntimeRef) -> Reach:
        """What an edit of `ref` reaches here: the runtimes whose chains look it up, per resolution context, and the
        InferenceServices built on them (`omectl.core.ome.reach`)."""
        return reach(ref, CacheGraph(self.serving.cache, self.cluster_serving.cache, self.inference_services.cache))

    def lookup(self) -> CacheLookup:
        return CacheLookup(self.serving.cache, self.cluster_serving.cache)

    def _handler(self, work_kind: str) -> Handler:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            meta = obj["metadata"]
            namespace = meta.get("namespace", "")
            trigger = object_event_context(self.name, work_kind, obj)
            relevant = event_type != "MODIFIED" or _chain_relevant_change(obj, old)
            if not relevant:
                return  # our own status write (or a label edit) cannot change any chain
            changed = RuntimeRef(RUNTIME_KIND_OF[work_kind], namespace, meta["name"])
            if event_type != "DELETED":
                lane = Lane.RESYNC if initial else Lane.EDIT
                self.enqueue(WorkKey(self.name, work_kind, namespace, meta["name"]), lane=lane, trigger=trigger)
            elif self.on_runtime_deleted is not None:
                self.on_runtime_deleted(self.name, changed)
            if initial:
                return  # every runtime of the initial list is queued anyway
            reached = self.reach(changed)
            # The runtimes' own status first (their lane is above the renders'), then the InferenceServices below:
            # neither in the edit lane, so an edit made meanwhile is not queued behind what a profile edit reaches.
            for ref in reached.runtimes:
                key = WorkKey(self.name, _KEY_OF[ref.kind], ref.namespace, ref.name)
                self.enqueue(key, lane=Lane.CHAIN, trigger=trigger)
            for isvc in reached.inference_services:
                self._enqueue_isvc(isvc, trigger, Lane.FANOUT)

        return on_event

    def _enqueue_isvc(self, isvc: Mapping[str, Any], trigger: Any, lane: Lane) -> None:
        meta = isvc["metadata"]
        key = WorkKey(self.name, ISVC_KEY, meta.get("namespace", ""), meta["name"])
        self.enqueue(key, lane=lane, trigger=trigger)

    def _isvc_handler(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        if event_type == "DELETED":
            return  # owner references let the API server collect the workloads
        if event_type == "MODIFIED" and old is not None and not _chain_relevant_change(obj, old):
            return
        self._enqueue_isvc(obj, object_event_context(self.name, ISVC_KEY, obj), Lane.RESYNC if initial else Lane.EDIT)

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
            # the workload changes because the controller wrote it: that follows a rollout, it is no user's edit
            self._enqueue_isvc(isvc, object_event_context(self.name, obj.get("kind", ""), obj), Lane.FANOUT)

    def _model_handler(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        if initial or (event_type == "MODIFIED" and old is not None and not _chain_relevant_change(obj, old)):
            return
        meta = obj["metadata"]
        model_ns = meta.get("namespace")
        trigger = object_event_context(self.name, obj.get("kind", ""), obj)
        for isvc in self.inference_services.cache.by_index(MODEL_INDEX, meta["name"]):
            if model_ns and isvc["metadata"].get("namespace") != model_ns:
                continue
            self._enqueue_isvc(isvc, trigger, Lane.FANOUT)
