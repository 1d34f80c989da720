"""`EventRecorder`: core/v1 Events about objects, aggregated like client-go's correlator.

The first occurrence of an (object, type, reason, message) creates an Event; each repeat patches that Event's
`count` and `lastTimestamp` instead of creating another. The recorder remembers the most recent `max_keys`
occurrences (an LRU, as client-go's 4096-entry cache). Recording is best effort: a failed write is logged, never
raised, so a reconcile does not fail because its event could not be written.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from omectl.kube import timestamps
from omectl.kube.client import ClusterClient, KubeError
from omectl.kube.errors import NotFound
from omectl.kube.resources import EVENTS
from omectl.observability.redact import scrub

__all__ = ["EventRecorder", "EventType"]

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
MERGE_PATCH = "application/merge-patch+json"
# Where client-go records events about cluster-scoped objects.
CLUSTER_SCOPED_EVENT_NAMESPACE = "default"


@dataclass(slots=True)
class _Occurrence:
    """What the server holds for one correlated event."""

    namespace: str
    name: str
    count: int
    first_timestamp: str


def _timestamp(moment: datetime) -> str:
    return timestamps.rfc3339(moment.timestamp())


class EventRecorder:
    """Records Events into one cluster; one recorder per cluster client."""

    def __init__(
        self,
        client: ClusterClient,
        *,
        component: str = "omectl",
        host: str | None = None,
        max_keys: int = 4096,
        now: Callable[[], datetime] | None = None,
    ) -> None:
        self.client = client
        self.component = component
        self.host = host if host is not None else socket.gethostname()
        self.max_keys = max_keys
        self._now = now if now is not None else (lambda: datetime.now(UTC))
        self._seen: OrderedDict[tuple[str, ...], _Occurrence] = OrderedDict()
        self._locks: dict[tuple[str, ...], tuple[asyncio.Lock, int]] = {}
        self._last_name_ns = 0

    def __len__(self) -> int:
        """Occurrences remembered for aggregation."""
        return len(self._seen)

    async def record(
        self,
        obj: dict[str, Any],
        type_: EventType,
        reason: str,
        message: str,
        *,
        api_version: str | None = None,
        kind: str | None = None,
    ) -> dict[str, Any] | None:
        """Record one occurrence about `obj`; returns the Event as stored, or None when the write failed.

        `api_version` and `kind` override the object's own (list items of built-in kinds may lack them).
        """
        if type_ not in ("Normal", "Warning"):
            raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
        involved = self._involved_object(obj, api_version, kind)
        message = scrub(message)  # messages quote servers' errors, which may quote env values or credentials
        key = (
            involved.get("apiVersion", ""),
            involved.get("kind", ""),
            involved.get("namespace", ""),
            involved.get("name", ""),
            involved.get("uid", ""),
            type_,
            reason,
            message,
        )
        async with self._lock_for(key):
            try:
                return await self._write(key, involved, type_, reason, message)
            except KubeError as exc:
                log.warning("could not record %s event %s on %s: %s", type_, reason, involved.get("name"), exc)
                return None

    # --- internals ---------------------------------------------------------------------------------------

    @staticmethod
    def _involved_object(obj: dict[str, Any], api_version: str | None, kind: str | None) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        fields = {
            "apiVersion": api_version or obj.get("apiVersion"),
            "kind": kind or obj.get("kind"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        }
        return {field: value for field, value in fields.items() if value}

    async def _write(
        self, key: tuple[str, ...], involved: dict[str, str], type_: str, reason: str, message: str
    ) -> dict[str, Any]:
        now = _timestamp(self._now())
        seen = self._seen.get(key)
        if seen is not None:
            self._seen.move_to_end(key)
            try:
                stored = await self.client.request(
                    "PATCH",
                    EVENTS.path(seen.namespace, seen.name),
                    body={"count": seen.count + 1, "lastTimestamp": now},
                    content_type=MERGE_PATCH,
                )
            except NotFound:
                # The Event expired or was deleted: create it again, keeping the count (as client-go does).
                stored = await self._create(involved, type_, reason, message, seen.count + 1, seen.first_timestamp, now)
        else:
            stored = await self._create(involved, type_, reason, message, 1, now, now)
        self._remember(key, stored)
        return stored

    async def _create(
        self,
        involved: dict[str, str],
        type_: str,
        reason: str,
        message: str,
        count: int,
        first_timestamp: str,
        last_timestamp: str,
    ) -> dict[str, Any]:
        namespace = involved.get("namespace") or CLUSTER_SCOPED_EVENT_NAMESPACE
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": self._event_name(involved.get("name", "event")), "namespace": namespace},
            "involvedObject": involved,
            "type": type_,
            "reason": reason,
            "message": message,
            "source": {"component": self.component, "host": self.host},
            "reportingComponent": self.component,
            "reportingInstance": self.host,
            "firstTimestamp": first_timestamp,
            "lastTimestamp": last_timestamp,
            "count": count,
        }
        result: dict[str, Any] = await self.client.request("POST", EVENTS.path(namespace), body=event)
        return result

    def _event_name(self, object_name: str) -> str:
        """`<object>.<unix nanoseconds in hex>` like client-go, strictly increasing so two never collide."""
        nanos = max(time.time_ns(), self._last_name_ns + 1)
        self._last_name_ns = nanos
        return f"{object_name}.{nanos:x}"

    def _remember(self, key: tuple[str, ...], stored: dict[str, Any]) -> None:
        meta = stored.get("metadata") or {}
        self._seen[key] = _Occurrence(
            namespace=meta.get("namespace", CLUSTER_SCOPED_EVENT_NAMESPACE),
            name=meta.get("name", ""),
            count=int(stored.get("count") or 1),
            first_timestamp=str(stored.get("firstTimestamp") or ""),
        )
        self._seen.move_to_end(key)
        while len(self._seen) > self.max_keys:
            self._seen.popitem(last=False)

    def _lock_for(self, key: tuple[str, ...]) -> _KeyLock:
        return _KeyLock(self._locks, key)


class _KeyLock:
    """Serializes records of one key (so two concurrent repeats patch, not create twice); freed when unused."""

    def __init__(self, locks: dict[tuple[str, ...], tuple[asyncio.Lock, int]], key: tuple[str, ...]) -> None:
        self._locks = locks
        self._key = key

    async def __aenter__(self) -> None:
        lock, users = self._locks.get(self._key, (asyncio.Lock(), 0))
        self._locks[self._key] = (lock, users + 1)
        try:
            await lock.acquire()
        except BaseException:
            self._leave()
            raise

    def _leave(self) -> None:
        lock, users = self._locks[self._key]
        if users <= 1:
            del self._locks[self._key]
        else:
            self._locks[self._key] = (lock, users - 1)

    async def __aexit__(self, *exc: object) -> None:
        self._locks[self._key][0].release()
        self._leave()
