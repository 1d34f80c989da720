"""Minimal writes for rendered objects: a server-side apply only when the cluster does not already hold the render.

Each applied object carries `omectl.io/render-hash`, the hash of what was rendered (`omectl.core.render_stamp`); an
object whose live copy carries the same hash is not written again, so an unchanged render makes no API call at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from omectl.core.render_stamp import RENDER_HASH, holds_render, object_hash, with_stamp
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import ResourceRef

# The stamp's names stay importable here, where the reconcilers and the tests read them.
__all__ = [
    "FIELD_MANAGER",
    "RENDER_HASH",
    "Applied",
    "apply_render",
    "apply_unless_held",
    "child_status_changed",
    "holds_render",
    "live_object",
    "object_hash",
]


class Applied:
    """One rendered object after `apply_unless_held`: either the live object that already held the render, or the
    server's answer to the apply, decoded only when `object()` is first read."""

    __slots__ = ("_answer", "_object", "digest", "wrote")

    def __init__(
        self, digest: str, live: Mapping[str, Any] | None, answer: bytes | None, *, wrote: bool | None = None
    ) -> None:
        self.digest = digest
        self.wrote = answer is not None if wrote is None else wrote
        self._object = live
        self._answer = answer

    def object(self) -> Mapping[str, Any]:
        """The object as the cluster held it after this step (the apply's answer when it wrote)."""
        if self._object is None:
            answer, self._answer = self._answer, None
            self._object = orjson.loads(answer) if answer else {}
        return self._object

    def kept(self, transform: Callable[[dict[str, Any]], Mapping[str, Any]] | None) -> Applied:
        """This step as a decision waiting for its status write keeps it: the answer, if any, decoded now and
        reduced by `transform` (what the kind's informer caches: a few hundred bytes of small objects where the
        answer is kilobytes, held for as long as a rollout's applies come first); with no transform, no object
        (a kind whose state nothing reads afterwards)."""
        if self._answer is None:
            return self if transform is not None else Applied(self.digest, {}, None, wrote=self.wrote)
        kept = transform(orjson.loads(self._answer)) if transform is not None and self._answer else {}
        return Applied(self.digest, kept, None, wrote=self.wrote)


async def apply_unless_held(
    client: ClusterClient,
    resource: ResourceRef,
    obj: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    field_manager: str = FIELD_MANAGER,
) -> Applied:
    """`obj` server-side applied with its render hash unless `live` already holds it; the answer is not decoded."""
    digest = object_hash(obj)
    if live is not None and holds_render(live, digest):
        return Applied(digest, live, None)
    answer = await client.apply_bytes(resource, with_stamp(obj, digest), field_manager=field_manager, force=True)
    return Applied(digest, None, answer)


async def apply_render(
    client: ClusterClient,
    resource: ResourceRef,
    obj: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    field_manager: str = FIELD_MANAGER,
) -> tuple[Mapping[str, Any], bool]:
    """`obj` server-side applied with its render hash unless `live` already holds it: (the object, written)."""
    applied = await apply_unless_held(client, resource, obj, live, field_manager=field_manager)
    return applied.object(), applied.wrote


async def live_object(
    client: ClusterClient, resource: ResourceRef, cache: ObjectCache | None, namespace: str, name: str
) -> Mapping[str, Any] | None:
    """A rendered object as the informer cache holds it; None when it does not exist. Only without a synced
    cache (a kind with no informer, or before its first list) is the API server asked.

    A miss in a synced cache is taken as "absent" with no GET: what we render carries the label the informers
    select on, and when the cache lags (our own apply not streamed back yet) the apply that follows is the same
    server-side apply again, which the server answers without a change."""
    namespace = namespace if resource.namespaced else ""
    if cache is not None:
        cached = cache.get(namespace, name)
        if cached is not None or cache.complete:
            return cached
    try:
        found: Mapping[str, Any] = await client.get(resource, name, namespace=namespace or None)
    except NotFound:
        return None
    return found


def child_status_changed(event_type: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None, initial: bool) -> bool:
    """Whether a child's watch event can change its owner's status: not an initial list (the owners are queued
    anyway), not a new child without status (the reconcile that created it saw it), not a spec or metadata write
    (our own apply)."""
    if initial or (event_type == "ADDED" and not obj.get("status")):
        return False
    return not (event_type == "MODIFIED" and old is not None and old.get("status") == obj.get("status"))
