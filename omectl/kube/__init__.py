"""The cluster edge: one `ClusterClient` per cluster, `Informer`s that keep `ObjectCache`s current, `ResourceRef`s."""

from __future__ import annotations

from .cache import IndexFunc, ObjectCache, ObjectKey, object_key
from .client import (
    PATCH_CONTENT_TYPES,
    ClusterClient,
    KubeAPIError,
    KubeConfigError,
    KubeConnectionError,
    KubeError,
    PatchType,
)
from .informer import ADDED, DELETED, MODIFIED, Backoff, Clock, Handler, HealthListener, Informer, LoopClock
from .resources import ResourceRef

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "PATCH_CONTENT_TYPES",
    "Backoff",
    "Clock",
    "ClusterClient",
    "Handler",
    "HealthListener",
    "IndexFunc",
    "Informer",
    "KubeAPIError",
    "KubeConfigError",
    "KubeConnectionError",
    "KubeError",
    "LoopClock",
    "ObjectCache",
    "ObjectKey",
    "PatchType",
    "ResourceRef",
    "object_key",
]
