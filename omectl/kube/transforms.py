"""What an informer keeps of each object (client-go's `TransformFunc`): a cache holds only what its readers read.

Applied to every listed and watched object before it is cached and handed to the handlers, so the handlers see
the same object the cache holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

Transform = Callable[[dict[str, Any]], dict[str, Any]]


def strip_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    """Drop what no reader of a cache reads: `managedFields` and kubectl's last-applied copy of the object."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            annotations.pop(LAST_APPLIED)
    return obj


def metadata_and_status(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep an object's identity, metadata and status; drop its spec (and everything else).

    For the workloads the controller renders: it reads their metadata (the render hash, the runtime revision,
    `generation`) and their status (readiness); their spec is what it rendered itself."""
    kept: dict[str, Any] = {key: obj[key] for key in ("apiVersion", "kind", "metadata", "status") if key in obj}
    return strip_bookkeeping(kept)
