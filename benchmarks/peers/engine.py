"""The kopf peer's engine reconcile: one InferenceService in, its rendered workloads applied, its status written,
doing what omectl's engine reconciler (`omectl/controller/ome/engine.py`) does with the same pure pipeline:

    model = model_of(isvc, models)                         # omectl.core.ome.pipeline
    choice = choose(isvc, model, runtimes)
    spec = choice.own_spec, or the merge of the named runtime's chain (resolved from the peer's caches) at the
           revision the InferenceService renders (`omectl.core.ome.pinning`; the revision read or created)
    objects = render(isvc, choice, spec, revision=...)

Each object is server-side applied with its render stamp unless the cache already holds that render
(`omectl.core.render_stamp`); the status (runtime record, drift, readiness from the workloads as the cache or the
apply's answer has them) is `omectl.core.ome.engine_status.desired_isvc_status`, written when it changes.

Where omectl records a Warning event and retries (a missing model or runtime, a broken chain, a render error), the
peer counts the failure by reason and leaves the workloads alone; the runtime or model event that heals it
reconciles the InferenceService again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import orjson

from benchmarks.peers.api import Api, object_path, rendered_path
from benchmarks.peers.cache import PeerCache
from benchmarks.peers.merges import Merges
from benchmarks.peers.revisions import PeerRevisions
from omectl.core.ome.engine_status import desired_isvc_status, readiness
from omectl.core.ome.inheritance import ChainError, resolve_chain
from omectl.core.ome.pinning import AUTO_SYNC, AUTOMATIC_SELECTION, drift_from_live, pin_of
from omectl.core.ome.pipeline import choose, model_of, render
from omectl.core.ome.render import RenderError
from omectl.core.ome.revisions import Revision, referenced_revisions
from omectl.core.ome.selection import ModelError, NoRuntimeFound, RuntimeValidation
from omectl.core.render_stamp import holds_render, object_hash, with_stamp

ISVC_PREFIX, ISVC_PLURAL = "/apis/ome.io/v1beta1", "inferenceservices"


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Applied:
    """One rendered object after its apply step: the stamp it carries, and the server's answer when it was written."""

    __slots__ = ("answer", "digest")

    def __init__(self, digest: str, answer: bytes | None) -> None:
        self.digest = digest
        self.answer = answer


class EngineReconcile:
    def __init__(self, cache: PeerCache, api: Api, revisions: PeerRevisions, merges: Merges) -> None:
        self.cache = cache
        self.api = api
        self.revisions = revisions
        self.merges = merges
        self.applies = 0
        self.status_writes = 0
        self.failures: Counter[str] = Counter()

    async def __call__(self, namespace: str, name: str) -> None:
        isvc = self.cache.inference_services.get(namespace, name)
        if isvc is None:
            return
        try:
            model = model_of(isvc, self.cache.models)
            choice = choose(isvc, model, self.cache.runtimes)
        except (ModelError, NoRuntimeFound, RuntimeValidation) as exc:
            self.failures[type(exc).__name__] += 1
            return
        runtime, kind = choice.ref.name, choice.ref.kind
        revision: Revision | None = None
        drift: Mapping[str, Any]
        if choice.own_spec is not None:
            spec, chain, drift = choice.own_spec, [runtime], AUTOMATIC_SELECTION
        else:
            try:
                resolved = resolve_chain(choice.runtime, self.cache)
            except ChainError as exc:
                self.failures[exc.reason] += 1
                return
            merged = self.merges.merged(resolved)
            live = await self.revisions.ensure(
                namespace,
                runtime,
                kind,
                resolved.names,
                resolved.resource_versions,
                merged,
                lambda: referenced_revisions(self.cache.inference_services.list(namespace)),
            )
            pinned = await self._pinned(isvc, runtime, live)
            if pinned is None:
                self.failures["RuntimePinError"] += 1
                return
            revision, drift = pinned
            spec = merged if revision is live else revision.spec  # following the live runtime: its merge
            chain = list(revision.chain)
        try:
            objects = render(isvc, choice, spec, revision=revision.name if revision else None)
        except (RuntimeValidation, RenderError) as exc:
            self.failures[type(exc).__name__] += 1
            return
        applied = {(obj["kind"], obj["metadata"]["name"]): await self._apply(obj) for obj in objects}
        record: dict[str, Any] = {"name": runtime, "kind": kind, "chain": chain}
        if revision is not None:
            record.update(revision=revision.name, hash=revision.hash)
        else:
            record["hash"] = object_hash({"objects": objects})

        def live_workload(workload_kind: str, workload_name: str) -> Mapping[str, Any] | None:
            step = applied.get((workload_kind, workload_name))
            if step is None:
                return None
            cached = self.cache.workload(workload_kind, namespace, workload_name)
            if holds_render(cached, step.digest) or step.answer is None:
                return cached
            answer: Mapping[str, Any] = orjson.loads(step.answer)
            return answer

        ready = readiness(objects, live_workload)
        path = object_path(ISVC_PREFIX, ISVC_PLURAL, namespace, name)
        written = await self.api.write_status(path, isvc, lambda o: desired_isvc_status(o, record, drift, ready, now()))
        self.status_writes += written is not None

    async def _pinned(
        self, isvc: Mapping[str, Any], runtime: str, live: Revision
    ) -> tuple[Revision, Mapping[str, Any]] | None:
        """The revision to render and the drift condition; None when the requested revision does not exist."""
        pin = pin_of(isvc, runtime)
        if pin.follows_live:
            return live, AUTO_SYNC
        namespace = isvc["metadata"].get("namespace", "")
        if pin.requested:
            chosen = await self.revisions.get(namespace, pin.requested)
            if chosen is None:
                return None
        else:
            chosen = (await self.revisions.get(namespace, pin.pinned) if pin.pinned else None) or live
        return chosen, drift_from_live(chosen, live)

    async def _apply(self, obj: Mapping[str, Any]) -> Applied:
        """Apply one rendered object unless the cache holds this render already."""
        digest = object_hash(obj)
        meta = obj["metadata"]
        if holds_render(self.cache.workload(obj["kind"], meta.get("namespace", ""), meta["name"]), digest):
            return Applied(digest, None)
        answer = await self.api.apply(rendered_path(obj), with_stamp(obj, digest))
        self.applies += 1
        return Applied(digest, answer)
