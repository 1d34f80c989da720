"""The cluster edge: one `ClusterClient` per cluster, `Informer`s that keep `ObjectCache`s current, `ResourceRef`s.

The names below are loaded from their modules on first use, so importing a light part of the package (its
errors, resources or cache) does not import the HTTP client and kubernetes_asyncio with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from omectl.kube.cache import IndexFunc, ObjectCache, ObjectKey, object_key
    from omectl.kube.client import PATCH_CONTENT_TYPES, ClusterClient, PatchType
    from omectl.kube.errors import (
        BadRequest,
        Conflict,
        Forbidden,
        Gone,
        Invalid,
        KubeAPIError,
        KubeConfigError,
        KubeConnectionError,
        KubeError,
        NotFound,
        TooManyRequests,
    )
    from omectl.kube.informer import (
        ADDED,
        DELETED,
        MODIFIED,
        Backoff,
        Clock,
        Handler,
        HealthListener,
        Informer,
        LoopClock,
    )
    from omectl.kube.resources import ResourceRef

_HOMES = {
    **dict.fromkeys(("IndexFunc", "ObjectCache", "ObjectKey", "object_key"), "cache"),
    **dict.fromkeys(("PATCH_CONTENT_TYPES", "ClusterClient", "PatchType"), "client"),
    **dict.fromkeys(
        (
            "BadRequest",
            "Conflict",
            "Forbidden",
            "Gone",
            "Invalid",
            "KubeAPIError",
            "KubeConfigError",
            "KubeConnectionError",
            "KubeError",
            "NotFound",
            "TooManyRequests",
        ),
        "errors",
    ),
    **dict.fromkeys(
        ("ADDED", "DELETED", "MODIFIED", "Backoff", "Clock", "Handler", "HealthListener", "Informer", "LoopClock"),
        "informer",
    ),
    "ResourceRef": "resources",
}

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "PATCH_CONTENT_TYPES",
    "Backoff",
    "BadRequest",
    "Clock",
    "ClusterClient",
    "Conflict",
    "Forbidden",
    "Gone",
    "Handler",
    "HealthListener",
    "IndexFunc",
    "Informer",
    "Invalid",
    "KubeAPIError",
    "KubeConfigError",
    "KubeConnectionError",
    "KubeError",
    "LoopClock",
    "NotFound",
    "ObjectCache",
    "ObjectKey",
    "PatchType",
    "ResourceRef",
    "TooManyRequests",
    "object_key",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
