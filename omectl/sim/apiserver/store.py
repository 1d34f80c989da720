"""One cluster's object store: a single resourceVersion counter, per-kind buckets, watch history and fan-out.

Every write is committed synchronously (no await between check and commit), so events leave in
resourceVersion order without a lock.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

StorageKey = tuple[str, str]  # (group, plural)
ObjectKey = tuple[str, str]  # (namespace or "", name)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


class WatchEvent:
    """A committed change. `old` is the previous object for MODIFIED/DELETED (selector transitions need it)."""

    __slots__ = ("_line", "key", "obj", "old", "rv", "type")

    def __init__(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, rv: int, key: StorageKey):
        self.type = type_
        self.obj = obj
        self.old = old
        self.rv = rv
        self.key = key
        self._line: bytes | None = None

    def json_line(self, type_: str | None = None) -> bytes:
        """The serialized `{"type","object"}` line, computed once and shared by every plain-JSON watcher."""
        if type_ is not None and type_ != self.type:
            return orjson.dumps({"type": type_, "object": self.obj}) + b"\n"
        if self._line is None:
            self._line = orjson.dumps({"type": self.type, "object": self.obj}) + b"\n"
        return self._line


# As the kube-apiserver's watch cache sizes itself (k8s.io/apiserver cacher: events kept fresh for 75 s, a capacity
# of at least 100): each kind keeps its last 75 s of events and never fewer than 100, so a watch resumed from further
# back gets 410 Expired and re-lists. Without it a server under a benchmark's load held every object version of
# the last 50,000 writes of each kind (13.7 GB at 10 clusters).
HISTORY_SECONDS = 75.0
HISTORY_MIN_EVENTS = 100


@dataclass
class KindHistory:
    """Recent events of one kind, in resourceVersion order, for resuming watches."""

    events: list[WatchEvent] = field(default_factory=list)
    rvs: list[int] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)  # when each event was committed (the store's clock)
    # Every event with rv > floor is still held; a resume from below the floor must re-list (410).
    floor: int = 0

    def append(self, event: WatchEvent, window: int, now: float = 0.0, keep_seconds: float | None = None) -> None:
        """Add an event; drop the oldest beyond `window`, and those older than `keep_seconds` (at least
        `HISTORY_MIN_EVENTS` stay). Both drop in batches (down to `window`, or once the oldest is half as old
        again as `keep_seconds`), so an append costs O(1) amortized."""
        self.events.append(event)
        self.rvs.append(event.rv)
        self.stamps.append(now)
        if len(self.events) > 2 * window:
            self._drop(len(self.events) - window)
        elif keep_seconds is not None and now - self.stamps[0] > 1.5 * keep_seconds:
            stale = bisect.bisect_left(self.stamps, now - keep_seconds)
            self._drop(min(stale, len(self.events) - HISTORY_MIN_EVENTS))

    def _drop(self, count: int) -> None:
        if count <= 0:
            return
        self.floor = max(self.floor, self.rvs[count - 1])
        del self.events[:count]
        del self.rvs[:count]
        del self.stamps[:count]

    def since(self, rv: int) -> list[WatchEvent]:
        return self.events[bisect.bisect_right(self.rvs, rv) :]

    def compact(self, up_to: int) -> None:
        cut = bisect.bisect_right(self.rvs, up_to)
        del self.events[:cut]
        del self.rvs[:cut]
        del self.stamps[:cut]
        self.floor = max(self.floor, up_to)


class Subscriber:
    """A live watch on one kind. The store calls `offer` synchronously; the HTTP layer drains `pending`."""

    __slots__ = ("accept", "closed", "pending", "wakeup")

    def __init__(self, accept: Callable[[WatchEvent], str | None]) -> None:
        # accept(event) -> the event type to deliver (selector transitions may turn MODIFIED into ADDED or
        # DELETED), or None to skip it.
        self.accept = accept
        self.pending: list[tuple[str, WatchEvent]] = []
        self.wakeup = asyncio.Event()
        self.closed = False

    def offer(self, event: WatchEvent) -> None:
        delivered = self.accept(event)
        if delivered is not None:
            self.pending.append((delivered, event))
            self.wakeup.set()

    def close(self) -> None:
        self.closed = True
        self.wakeup.set()


class Store:
    def __init__(
        self,
        history_window: int = 50_000,
        start_rv: int = 0,
        *,
        history_seconds: float | None = HISTORY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rv = start_rv
        self.history_window = history_window
        self.history_seconds = history_seconds  # None: keep up to `history_window` events however old
        self.clock = clock
        self.buckets: dict[StorageKey, dict[ObjectKey, dict[str, Any]]] = {}
        self.history: dict[StorageKey, KindHistory] = {}
        self.subscribers: dict[StorageKey, set[Subscriber]] = {}
        self.by_uid: dict[str, tuple[StorageKey, ObjectKey]] = {}
        self.listeners: list[Callable[[WatchEvent], None]] = []
        self.start_rv = start_rv
        # Each kind's keys in namespace/name order; dropped when a key comes or goes (not on an update).
        self._sorted_keys: dict[StorageKey, list[ObjectKey]] = {}

    # --- reads -------------------------------------------------------------------------------------------

    def bucket(self, key: StorageKey) -> dict[ObjectKey, dict[str, Any]]:
        return self.buckets.setdefault(key, {})

    def get(self, key: StorageKey, namespace: str, name: str) -> dict[str, Any] | None:
        return self.buckets.get(key, {}).get((namespace, name))

    def items(self, key: StorageKey, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        """Objects of a kind ordered by namespace/name, optionally within one namespace."""
        bucket = self.buckets.get(key, {})
        keys = self._sorted_keys.get(key)
        if keys is None or len(keys) != len(bucket):
            keys = self._sorted_keys[key] = sorted(bucket)
        if namespace:
            # ("ns",) sorts before every ("ns", name) and ("ns\0",) after them all.
            start = bisect.bisect_left(keys, (namespace,))
            end = bisect.bisect_left(keys, (namespace + "\x00",), start)
            keys = keys[start:end]
        for k in keys:
            yield bucket[k]

    def lookup_uid(self, uid: str) -> dict[str, Any] | None:
        where = self.by_uid.get(uid)
        if where is None:
            return None
        return self.buckets.get(where[0], {}).get(where[1])

    # --- writes ------------------------------------------------------------------------------------------

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def commit(self, type_: str, key: StorageKey, obj: dict[str, Any], old: dict[str, Any] | None) -> WatchEvent:
        """Store (or remove, for DELETED) an object whose metadata.resourceVersion is already the new RV."""
        meta = obj["metadata"]
        okey = (meta.get("namespace", ""), meta["name"])
        rv = int(meta["resourceVersion"])
        bucket = self.bucket(key)
        if type_ == DELETED:
            if bucket.pop(okey, None) is not None:
                self._sorted_keys.pop(key, None)
            self.by_uid.pop(meta.get("uid", ""), None)
        else:
            if okey not in bucket:
                self._sorted_keys.pop(key, None)
            bucket[okey] = obj
            self.by_uid[meta["uid"]] = (key, okey)
        event = WatchEvent(type_, obj, old, rv, key)
        self.history.setdefault(key, KindHistory(floor=self.start_rv)).append(
            event, self.history_window, self.clock(), self.history_seconds
        )
        for sub in tuple(self.subscribers.get(key, ())):
            sub.offer(event)
        for listener in self.listeners:
            listener(event)
        return event

    def drop_kind(self, key: StorageKey) -> None:
        """Forget a kind entirely (its CRD is gone)."""
        self._sorted_keys.pop(key, None)
        for obj in self.buckets.pop(key, {}).values():
            self.by_uid.pop(obj["metadata"].get("uid", ""), None)
        for sub in self.subscribers.pop(key, set()):
            sub.close()

    # --- watch support -----------------------------------------------------------------------------------

    def subscribe(self, key: StorageKey, sub: Subscriber) -> None:
        self.subscribers.setdefault(key, set()).add(sub)

    def unsubscribe(self, key: StorageKey, sub: Subscriber) -> None:
        self.subscribers.get(key, set()).discard(sub)

    def history_floor(self, key: StorageKey) -> int:
        hist = self.history.get(key)
        return hist.floor if hist else self.start_rv

    def events_since(self, key: StorageKey, rv: int) -> list[WatchEvent]:
        hist = self.history.get(key)
        return hist.since(rv) if hist else []

    def compact(self) -> None:
        """Forget all history up to now: a watch resumed from any earlier resourceVersion gets 410 Expired."""
        for hist in self.history.values():
            hist.compact(self.rv)
        self.start_rv = self.rv

    def close_all_watches(self) -> None:
        for subs in self.subscribers.values():
            for sub in tuple(subs):
                sub.close()
            subs.clear()

    # --- persistence -------------------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "resourceVersion": self.rv,
            "buckets": [
                {"group": g, "plural": p, "items": list(bucket.values())}
                for (g, p), bucket in self.buckets.items()
                if bucket
            ],
        }

    def restore(self, snap: dict[str, Any]) -> None:
        self.rv = int(snap["resourceVersion"])
        self.start_rv = self.rv
        for entry in snap.get("buckets", []):
            key = (entry["group"], entry["plural"])
            self._sorted_keys.pop(key, None)
            bucket = self.bucket(key)
            for obj in entry["items"]:
                meta = obj["metadata"]
                okey = (meta.get("namespace", ""), meta["name"])
                bucket[okey] = obj
                self.by_uid[meta["uid"]] = (key, okey)
