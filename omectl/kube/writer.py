"""Status writes: read the live object, write only a changed status, retry on resourceVersion conflicts."""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from typing import Any

from omectl.core.layering import copy_json
from omectl.kube.client import ClusterClient
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import ResourceRef

__all__ = [
    "StatusMutation",
    "StatusWrite",
    "apply_merge_patch",
    "cache_behind_own_write",
    "patch_status_merge",
    "write_status",
]

log = logging.getLogger(__name__)

MERGE_PATCH = "application/merge-patch+json"

StatusMutation = Callable[[dict[str, Any]], dict[str, Any] | None]


class StatusWrite(enum.Enum):
    """What `write_status` did. Not the written object: no caller reads it, so its answer is never decoded."""

    WRITTEN = "written"
    UNCHANGED = "unchanged"  # `mutate` wanted no change: nothing was sent
    ABSENT = "absent"  # the object does not exist


def _scoped(resource: ResourceRef, namespace: str | None) -> str | None:
    return (namespace or None) if resource.namespaced else None


REMEMBERED_WRITES = 1024
"""How many objects' last status writes a client remembers until its informer's copy shows them (least recent go:
a watch delivers a write long before a thousand more are made)."""


def _resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def cache_behind_own_write(
    client: ClusterClient, resource: ResourceRef, namespace: str | None, name: str, cached: Mapping[str, Any]
) -> bool:
    """Whether the informer's copy `cached` is still the object as it was before this process's last status write
    of it: then its status is not the live one, and "nothing to write" cannot be decided against it (a reconcile
    that runs again before the watch delivers its own write would find the older status equal to what it wants now,
    and leave the one it wrote in place)."""
    path = resource.path(_scoped(resource, namespace), name)
    replaced = client.status_written_over.get(path)
    if replaced is None:
        return False
    if _resource_version(cached) in replaced:
        return True
    del client.status_written_over[path]  # the copy has moved past the write
    return False


def _remember_write(client: ClusterClient, path: str, replaced: tuple[str, ...]) -> None:
    remembered = client.status_written_over
    remembered[path] = replaced
    remembered.move_to_end(path)
    while len(remembered) > REMEMBERED_WRITES:
        remembered.popitem(last=False)


async def write_status(
    client: ClusterClient,
    resource: ResourceRef,
    namespace: str | None,
    name: str,
    mutate: StatusMutation,
    *,
    field_manager: str = FIELD_MANAGER,
    max_retries: int = 5,
    cached: Mapping[str, Any] | None = None,
) -> StatusWrite:
    """Replace the status of one object with `mutate(live)`, guarded by the live resourceVersion.

    With `cached` (the informer's copy), the first attempt writes against it without a GET; a 409 then means the
    cache was behind, and the object is read live for the retries.

    `mutate` gets a fresh copy of the live object and returns the status it should have, or None to leave it alone.
    A status equal to the live one sends no write. On 409 Conflict the object is read again and `mutate` runs
    again, at most `max_retries` times, then the conflict is raised. Returns what was done; the server's answer
    (the whole object) is not decoded.
    """
    namespace = _scoped(resource, namespace)
    object_path = resource.path(namespace, name)
    status_path = resource.path(namespace, name, "status")
    if cached is not None and cache_behind_own_write(client, resource, namespace, name, cached):
        cached = None  # read it live: the copy does not show this process's last write yet
    seen = (_resource_version(cached),) if cached is not None else ()
    for attempt in range(max_retries + 1):
        if attempt == 0 and cached is not None:
            live = dict(cached)
        else:
            try:
                live = await client.request("GET", object_path)
            except NotFound:
                return StatusWrite.ABSENT
        current = copy_json(live.get("status"))  # `mutate` may edit `live` in place
        desired = mutate(live)
        if desired is None or desired == (current if current is not None else {}):
            return StatusWrite.UNCHANGED
        metadata = {k: v for k, v in (live.get("metadata") or {}).items() if k != "managedFields"}
        body = {**live, "metadata": metadata, "status": desired}
        try:
            await client.request_bytes("PUT", status_path, query={"fieldManager": field_manager}, body=body)
        except NotFound:
            return StatusWrite.ABSENT
        except Conflict:
            if attempt == max_retries:
                raise
            log.debug("status of %s %s/%s conflicted (attempt %d); re-reading", resource, namespace, name, attempt + 1)
            continue
        _remember_write(client, object_path, (*seen, _resource_version(live)))
        return StatusWrite.WRITTEN
    raise AssertionError("unreachable: the last attempt returns or raises")


async def patch_status_merge(
    client: ClusterClient,
    resource: ResourceRef,
    namespace: str | None,
    name: str,
    status_patch: dict[str, Any],
    *,
    field_manager: str = FIELD_MANAGER,
    live: dict[str, Any] | None = None,
    resource_version: str | None = None,
) -> dict[str, Any] | None:
    """JSON-merge-patch (RFC 7386) the status of one object; None when the object does not exist.

    With `live` (e.g. the informer's copy), a patch that would not change its status sends nothing and returns
    `live`. With `resource_version`, the patch is a precondition and a 409 Conflict is raised to the caller.
    """
    if not status_patch:
        return live
    if live is not None:
        current = live.get("status") or {}
        if apply_merge_patch(current, status_patch) == current:
            return live
    namespace = _scoped(resource, namespace)
    body: dict[str, Any] = {"status": status_patch}
    if resource_version is not None:
        body["metadata"] = {"resourceVersion": resource_version}
    try:
        return await client.request(
            "PATCH",
            resource.path(namespace, name, "status"),
            query={"fieldManager": field_manager},
            body=body,
            content_type=MERGE_PATCH,
        )
    except NotFound:
        return None


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: the document `patch` makes of `target` (neither is modified)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result
