"""The engine workload reconciler: an InferenceService in, its rendered workloads applied, minimal writes.

For a named runtime the merged spec (from the shared resolver) is validated against the model and rendered;
without one, automatic selection picks among the runtimes' own specs. While a chain is broken, nothing is
written to the workloads (the running pods keep serving), a Warning event says why, and the reconcile retries
with backoff. An unchanged render makes no API write: each applied object carries the hash of its render.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from omectl.controller.ome.resolver import ChainResolver
from omectl.controller.ome.revisions import Revision, RevisionStore
from omectl.controller.ome.watch import ISVC_STATUS_WORK, OmeWatch
from omectl.controller.runtime.apply import (
    FIELD_MANAGER,
    Applied,
    apply_unless_held,
    holds_render,
    live_object,
    object_hash,
)
from omectl.controller.runtime.queue import RetryLater, WorkKey
from omectl.core.ome import engine_status
from omectl.core.ome.engine_status import Readiness, readiness
from omectl.core.ome.inheritance import ChainError
from omectl.core.ome.pinning import AUTO_SYNC, AUTOMATIC_SELECTION, drift_from_live, pin_of
from omectl.core.ome.pipeline import CachedModels, CachedRuntimes, Model, choose, model_of, render
from omectl.core.ome.render import RenderError
from omectl.core.ome.revisions import referenced_revisions
from omectl.core.ome.selection import (
    ModelError,
    NoRuntimeFound,
    RuntimeValidation,
    event_for_model_error,
    event_for_named_runtime_failure,
    event_for_selection_failure,
    named_runtime,
)
from omectl.kube import timestamps
from omectl.kube.resources import INFERENCE_SERVICES, ResourceRef
from omectl.kube.writer import cache_behind_own_write, write_status

log = logging.getLogger(__name__)

_RESOURCES = {
    ("apps/v1", "Deployment"): ResourceRef("apps", "v1", "deployments", "Deployment", True),
    ("v1", "Service"): ResourceRef("", "v1", "services", "Service", True),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): ResourceRef(
        "leaderworkerset.x-k8s.io", "v1", "leaderworkersets", "LeaderWorkerSet", True
    ),
    ("v1", "ServiceAccount"): ResourceRef("", "v1", "serviceaccounts", "ServiceAccount", True),
    ("rbac.authorization.k8s.io/v1", "Role"): ResourceRef("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ResourceRef(
        "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True
    ),
}


def desired_isvc_status(
    live: Mapping[str, Any], runtime: Mapping[str, Any], drift: Mapping[str, Any], ready: Readiness
) -> dict[str, Any] | None:
    """`omectl.core.ome.engine_status.desired_isvc_status` as of now."""
    return engine_status.desired_isvc_status(live, runtime, drift, ready, timestamps.now())


def _referenced_revisions(cluster: OmeWatch, namespace: str) -> set[str]:
    """Revisions an InferenceService of the namespace pins or records: never collected."""
    return referenced_revisions(cluster.inference_services.cache.list(namespace))


@dataclass(frozen=True)
class PendingStatus:
    """What a reconcile decided for an InferenceService's status, waiting for its low-priority write."""

    runtime: Mapping[str, Any]
    drift: Mapping[str, Any]
    objects: list[dict[str, Any]]
    """What readiness reads of each rendered object (`engine_status.rendered_outline`)."""
    applied: Mapping[tuple[str, str], Applied]
    """Each workload's apply: the cluster's answer (decoded only if read), or the cached object when unchanged."""

    def readiness(self, cluster: OmeWatch) -> Readiness:
        namespaces = {(o["kind"], o["metadata"]["name"]): o["metadata"].get("namespace", "") for o in self.objects}

        def live(kind: str, name: str) -> Mapping[str, Any] | None:
            applied = self.applied.get((kind, name))
            if applied is None:
                return None
            cache = cluster.workload_cache(kind)
            cached: Mapping[str, Any] | None = cache.get(namespaces[(kind, name)], name) if cache else None
            if cached is not None and holds_render(cached, applied.digest):
                # the cache has seen this render applied (only this apply stamps its hash): it is at least as new
                # as the apply's answer, which then needs no decoding
                return cached
            written = applied.object()
            if cached is None:
                return written
            # the newer spec wins; for the same spec the cache has the newer status
            newer = (written["metadata"].get("generation") or 0) > (cached["metadata"].get("generation") or 0)
            return written if newer else cached

        return readiness(self.objects, live)


class EngineReconciler:
    def __init__(self, resolver: ChainResolver) -> None:
        self.resolver = resolver
        self.writes = 0
        self.pending_status: dict[tuple[str, str, str], PendingStatus] = {}

    async def reconcile(self, cluster: OmeWatch, isvc: dict[str, Any]) -> None:
        meta = isvc["metadata"]
        namespace = meta.get("namespace", "")
        lookup = cluster.lookup()
        try:
            model = model_of(isvc, CachedModels(cluster.base_models.cache, cluster.cluster_base_models.cache))
        except ModelError as exc:
            cluster.record_event(isvc, "Warning", *event_for_model_error(exc))
            return
        try:
            choice = choose(isvc, model, CachedRuntimes(cluster.serving.cache, cluster.cluster_serving.cache))
        except NoRuntimeFound as exc:
            assert model.ref is not None  # automatic selection needs a model
            cluster.record_event(isvc, "Warning", *event_for_selection_failure(model.ref.name, exc.message))
            return
        except RuntimeValidation as exc:  # the runtime it names does not exist
            self._named_runtime_failed(cluster, isvc, model, exc)
        name, kind = choice.ref.name, choice.ref.kind
        if choice.own_spec is not None:
            merged: Mapping[str, Any] = choice.own_spec
            chain = [name]
            revision: Revision | None = None
            drift: Mapping[str, Any] = AUTOMATIC_SELECTION
        else:
            try:
                resolution = await self.resolver.resolve(cluster.name, choice.runtime, lookup)
            except (ChainError, RuntimeValidation) as exc:
                self._named_runtime_failed(cluster, isvc, model, exc)
            chain = list(resolution.names)
            pinned = await self._pinned_revision(cluster, isvc, name, kind, resolution)
            if pinned is None:
                return  # a missing pinned revision: RuntimePinError recorded, workload left as it is
            merged, revision, drift = pinned
        try:
            objects = render(isvc, choice, merged, revision=revision.name if revision else None)
        except RuntimeValidation as exc:  # the named runtime does not support the model
            model_name = model.ref.name if model.ref else None
            reason, message = event_for_named_runtime_failure(isvc, name, model_name, exc.message, chain_broken=False)
            cluster.record_event(isvc, "Warning", reason, message)
            return
        except RenderError as exc:
            cluster.record_event(isvc, "Warning", exc.reason, exc.message)
            return
        applied: dict[tuple[str, str], Applied] = {}
        for obj in objects:
            step = await self._apply(cluster, obj)
            applied[(obj["kind"], obj["metadata"]["name"])] = step.kept(cluster.status_transform(obj["kind"]))
        desired_runtime: dict[str, Any] = {"name": name, "kind": kind, "chain": chain}
        if revision is not None:
            desired_runtime.update(chain=list(revision.chain), revision=revision.name, hash=revision.hash)
        else:
            desired_runtime["hash"] = object_hash({"objects": objects})

        pending = PendingStatus(desired_runtime, drift, [engine_status.rendered_outline(o) for o in objects], applied)
        # After a write the status is decided when its work item runs, from the caches then (which have seen the
        # apply by then, as a rule): deciding now would decode every apply answer.
        wrote = any(a.wrote for a in applied.values())
        if wrote or desired_isvc_status(isvc, desired_runtime, drift, pending.readiness(cluster)) is not None:
            # Workloads first: during a rollout every InferenceService's workloads are applied before any status
            # is written, so the status write (bookkeeping) waits in the low-priority lane of the queue.
            self.pending_status[(cluster.name, namespace, meta["name"])] = pending
            cluster.enqueue(WorkKey(cluster.name, ISVC_STATUS_WORK, namespace, meta["name"]), low_priority=True)

    @staticmethod
    def _named_runtime_failed(
        cluster: OmeWatch, isvc: Mapping[str, Any], model: Model, exc: ChainError | RuntimeValidation
    ) -> NoReturn:
        """The runtime the InferenceService names is missing or its chain is broken: a Warning event, the workload
        left as it is, and a retry with backoff (a watch event of the runtimes heals it sooner)."""
        reason, message = event_for_named_runtime_failure(
            isvc,
            named_runtime(isvc) or "",
            model.ref.name if model.ref else None,
            exc.message,
            chain_broken=isinstance(exc, ChainError),
        )
        cluster.record_event(isvc, "Warning", reason, message)
        raise RetryLater(message) from None

    async def write_pending_status(self, cluster: OmeWatch, isvc: dict[str, Any]) -> None:
        """Write the status the last reconcile of `isvc` decided, with readiness as the caches report it now."""
        meta = isvc["metadata"]
        pending = self.pending_status.pop((cluster.name, meta.get("namespace", ""), meta["name"]), None)
        if pending is None:
            return
        ready = pending.readiness(cluster)
        if desired_isvc_status(isvc, pending.runtime, pending.drift, ready) is None and not cache_behind_own_write(
            cluster.client, INFERENCE_SERVICES, meta.get("namespace", ""), meta["name"], isvc
        ):
            return
        try:
            await write_status(
                cluster.client,
                INFERENCE_SERVICES,
                meta.get("namespace", ""),
                meta["name"],
                lambda live: desired_isvc_status(live, pending.runtime, pending.drift, ready),
                field_manager=FIELD_MANAGER,
                cached=isvc,
            )
        except BaseException:
            # the retry of this work item must still find what to write (unless a newer reconcile decided again)
            self.pending_status.setdefault((cluster.name, meta.get("namespace", ""), meta["name"]), pending)
            raise

    async def _pinned_revision(
        self, cluster: OmeWatch, isvc: dict[str, Any], runtime: str, kind: str, resolution: Any
    ) -> tuple[Mapping[str, Any], Revision, Mapping[str, Any]] | None:
        """The spec to render and the drift condition (None: leave the workload)."""
        meta = isvc["metadata"]
        namespace = meta.get("namespace", "")
        store: RevisionStore = cluster.revisions
        live = await store.ensure(
            namespace,
            runtime,
            kind,
            resolution.names,
            [rv for *_, rv in resolution.key[1]],
            resolution.result.spec,
            lambda: _referenced_revisions(cluster, namespace),
        )
        pin = pin_of(isvc, runtime)
        if pin.follows_live:
            return resolution.result.spec, live, AUTO_SYNC
        if pin.requested:
            chosen = await store.get(namespace, pin.requested)
            if chosen is None:
                reason, message = event_for_named_runtime_failure(
                    isvc,
                    runtime,
                    ((isvc.get("spec") or {}).get("model") or {}).get("name"),
                    f"runtime revision {pin.requested} not found",
                    chain_broken=True,
                )
                cluster.record_event(isvc, "Warning", reason, message)
                return None
        else:
            chosen = (await store.get(namespace, pin.pinned) if pin.pinned else None) or live  # the first pins
        return chosen.spec, chosen, drift_from_live(chosen, live)

    async def _apply(self, cluster: OmeWatch, obj: dict[str, Any]) -> Applied:
        """Apply one rendered object unless the cluster already holds this render."""
        resource = _RESOURCES.get((obj.get("apiVersion", ""), obj.get("kind", "")))
        if resource is None:
            raise RenderError(f"omectl cannot apply {obj.get('apiVersion')} {obj.get('kind')}")
        meta = obj["metadata"]
        live = await live_object(
            cluster.client, resource, cluster.workload_cache(obj["kind"]), meta.get("namespace", ""), meta["name"]
        )
        applied = await apply_unless_held(cluster.client, resource, obj, live)
        self.writes += applied.wrote
        return applied
