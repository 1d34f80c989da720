"""Minimal writes for rendered objects: a server-side apply only when the cluster does not already hold the render.

Each applied object carries `omectl.io/render-hash`, the hash of what was rendered; an object whose live copy
carries the same hash is not written again, so an unchanged render makes no API call at all.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import orjson

from omectl.kube.client import ClusterClient
from omectl.kube.resources import ResourceRef

RENDER_HASH = "omectl.io/render-hash"
FIELD_MANAGER = "omectl"


def object_hash(obj: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


def holds_render(live: Mapping[str, Any] | None, digest: str) -> bool:
    return live is not None and (live["metadata"].get("annotations") or {}).get(RENDER_HASH) == digest


async def apply_render(
    client: ClusterClient,
    resource: ResourceRef,
    obj: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    field_manager: str = FIELD_MANAGER,
) -> tuple[Mapping[str, Any], bool]:
    """`obj` server-side applied with its render hash unless `live` already holds it: (the object, written)."""
    digest = object_hash(obj)
    if live is not None and holds_render(live, digest):
        return live, False
    meta = obj["metadata"]
    body = dict(obj, metadata=dict(meta, annotations={**(meta.get("annotations") or {}), RENDER_HASH: digest}))
    written: Mapping[str, Any] = await client.patch(
        resource,
        meta["name"],
        body,
        namespace=meta.get("namespace") or None,
        patch_type="apply",
        field_manager=field_manager,
        force=True,
    )
    return written, True
