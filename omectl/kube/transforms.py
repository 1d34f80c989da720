"""What an informer keeps of each object (client-go's `TransformFunc`): a cache holds only what its readers read.

Applied to every listed and watched object before it is cached and handed to the handlers, so the handlers see
the same object the cache holds. Every transform drops `metadata.managedFields` and kubectl's last-applied copy,
and shares one string object among all objects for the strings that repeat across a fleet's objects
(`SharedStrings`): apiVersion, kind, namespace, label and annotation keys and, in the objects cached whole, every
string value but an object's own identity (a decoder makes a new string object for each value of each object: a
condition's type, status, reason and message, the runtime and model an InferenceService names, a runtime's
images and arguments repeat across thousands of objects and were half of such an object's memory).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

Transform = Callable[[dict[str, Any]], dict[str, Any]]
StatusFilter = Callable[[Mapping[str, Any]], dict[str, Any]]

# The identity an informer needs of every object (list reconciliation, watch resume) and a reader may ask for.
_IDENTITY: Final = ("name", "namespace", "uid", "resourceVersion", "generation", "deletionTimestamp")


# Values of an object's own (its name, uid, resourceVersion): no other object has them, so a pool entry is waste.
_OWN_VALUES: Final = frozenset({"name", "uid", "resourceVersion", "generateName", "selfLink"})
MAX_SHARED_LENGTH: Final = 512  # longer values (a config blob, a certificate) rarely repeat: left as they are


class SharedStrings:
    """One string object per distinct value, for values that repeat across objects.

    Not `sys.intern`: interned strings are immortal on some Python versions, and a pool must not grow without
    bound. Reaching `limit` distinct values, the pool starts afresh (the objects keep the strings they share; only
    the pool lets go of them), so what it holds stays bounded while values seen from then on are shared again."""

    def __init__(self, limit: int = 1 << 15) -> None:
        self.limit = limit
        self._pool: dict[str, str] = {}

    def __call__(self, value: Any) -> Any:
        if type(value) is not str:
            return value
        pool = self._pool
        shared = pool.get(value)
        if shared is not None:
            return shared
        if len(pool) >= self.limit:
            pool.clear()
        pool[value] = value
        return value

    def keys_of(self, mapping: Mapping[str, Any]) -> dict[str, Any]:
        return {self(k): v for k, v in mapping.items()}

    def __len__(self) -> int:
        return len(self._pool)


SHARED = SharedStrings()


def _share_identity(obj: dict[str, Any], meta: dict[str, Any]) -> None:
    for key in ("apiVersion", "kind"):
        if key in obj:
            obj[key] = SHARED(obj[key])
    if "namespace" in meta:
        meta["namespace"] = SHARED(meta["namespace"])


def share_values(node: dict[str, Any] | list[Any], pool: SharedStrings = SHARED) -> None:
    """Replace, in place, every string value of a decoded object's dicts and lists (up to `MAX_SHARED_LENGTH`) by
    the pool's string object of that value. (On the watch path of every event: a loop, exact type checks and the
    pool's dict read inline cost a third of a recursive walk through `SharedStrings.__call__`.)"""
    pooled = pool._pool
    stack: list[Any] = [node]
    while stack:
        current = stack.pop()
        items = current.items() if type(current) is dict else enumerate(current)
        for key, value in items:  # values replaced, never keys: no container changes size while iterated
            kind = type(value)
            if kind is str:
                if len(value) <= MAX_SHARED_LENGTH:
                    shared = pooled.get(value)
                    if shared is None:
                        pool(value)
                    elif shared is not value:
                        current[key] = shared
            elif kind is dict or kind is list:
                stack.append(value)


def strip_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what no reader of a cache reads: `managedFields` and kubectl's last-applied copy of the object; share
    the repeated strings (keys, and every value but the object's own identity). The object is changed in place
    (the informer owns it)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            meta["annotations"] = SHARED.keys_of(annotations)
        labels = meta.get("labels")
        if isinstance(labels, dict):
            meta["labels"] = SHARED.keys_of(labels)
        share_values([value for key, value in meta.items() if key not in _OWN_VALUES and type(value) is not str])
        for key in ("namespace", "creationTimestamp", "deletionTimestamp"):
            if key in meta:
                meta[key] = SHARED(meta[key])
    share_values([value for key, value in obj.items() if key != "metadata" and type(value) is not str])
    for key in ("apiVersion", "kind"):
        if key in obj:
            obj[key] = SHARED(obj[key])
    return obj


def metadata_and_status(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep an object's identity, metadata and status; drop its spec (and everything else)."""
    kept: dict[str, Any] = {key: obj[key] for key in ("apiVersion", "kind", "metadata", "status") if key in obj}
    return strip_bookkeeping(kept)


def rendered_object(
    *, labels: Collection[str], annotations: Collection[str], status: StatusFilter | None = None
) -> Transform:
    """A transform for objects the controller renders itself: their spec is what it rendered, so the cache keeps
    their identity, the named labels and annotations, and what `status` keeps of their status (nothing without)."""

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        kept_meta = {key: meta[key] for key in _IDENTITY if key in meta}
        for field, keys in (("labels", labels), ("annotations", annotations)):
            present = meta.get(field) or {}
            chosen = {SHARED(k): present[k] for k in keys if k in present}
            if chosen:
                kept_meta[field] = chosen
        kept: dict[str, Any] = {"metadata": kept_meta}
        for key in ("apiVersion", "kind"):
            if key in obj:
                kept[key] = obj[key]
        if status is not None and isinstance(obj.get("status"), Mapping):
            kept["status"] = status(obj["status"])
        _share_identity(kept, kept_meta)
        return kept

    return transform


def condition_fields(status: Mapping[str, Any], types: Collection[str]) -> dict[str, Any]:
    """`observedGeneration` and the conditions of `types` (type, status, reason, message; no timestamps)."""
    kept: dict[str, Any] = {}
    if "observedGeneration" in status:
        kept["observedGeneration"] = status["observedGeneration"]
    conditions = [
        {SHARED(k): SHARED(c[k]) if k != "message" else c[k] for k in ("type", "status", "reason", "message") if k in c}
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") in types
    ]
    if conditions:
        kept["conditions"] = conditions
    return kept
