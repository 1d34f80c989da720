"""The render stamp: each object a controller applies carries the hash of what it rendered, in an annotation.

An object whose live copy carries the hash of the new render already holds it, so an unchanged render needs no API
write at all. The stamp is part of what is applied (`with_stamp`), so it reaches the cluster with the render itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

import orjson

__all__ = ["RENDER_HASH", "holds_render", "object_hash", "with_stamp"]

RENDER_HASH: Final = "omectl.io/render-hash"


def object_hash(obj: Mapping[str, Any]) -> str:
    """The first 16 hex digits of the sha256 of `obj`'s canonical JSON (keys sorted)."""
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def holds_render(live: Mapping[str, Any] | None, digest: str) -> bool:
    """Whether `live` (an object as the cluster or a cache holds it) carries the stamp `digest`."""
    return live is not None and (live["metadata"].get("annotations") or {}).get(RENDER_HASH) == digest


def with_stamp(obj: Mapping[str, Any], digest: str) -> dict[str, Any]:
    """`obj` with its stamp among its annotations: the body to apply."""
    meta = obj["metadata"]
    return dict(obj, metadata=dict(meta, annotations={**(meta.get("annotations") or {}), RENDER_HASH: digest}))
