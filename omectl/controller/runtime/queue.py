"""The reconcile work queue: client-go semantics (dedup, one in flight per key, per-item backoff), fair across clusters.

A key waits in exactly one place: ready (normal or low priority, in its cluster's lane), delayed (until a time on the
queue's clock), or parked (re-added while in flight; it becomes ready when `done` is called for it). Ready keys are
taken round-robin across clusters, normal priority before low priority, first in first out within a lane.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from omectl.observability.logs import bind as bind_log_fields
from omectl.observability.logs import unbind as unbind_log_fields

log = logging.getLogger(__name__)

__all__ = [
    "Clock",
    "FakeClock",
    "MonotonicClock",
    "QueueShutDown",
    "Result",
    "TerminalError",
    "WorkItem",
    "WorkKey",
    "WorkQueue",
    "run_workers",
]


# --- time --------------------------------------------------------------------------------------------------------


class Clock(Protocol):
    """`now()` in seconds; `sleep(seconds)` returns an awaitable that finishes `seconds` after the call."""

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> Awaitable[None]: ...


class MonotonicClock:
    """Real time: `time.monotonic` and `asyncio.sleep`."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> Awaitable[None]:
        return asyncio.sleep(seconds)


class FakeClock:
    """Test time that moves only on `advance`; sleepers whose deadline passes wake in deadline order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def sleep(self, seconds: float) -> Awaitable[None]:
        """The deadline is fixed at the call, not when the awaitable first runs (a task may start late)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if seconds <= 0:
            future.set_result(None)
        else:
            heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        return future

    def advance(self, seconds: float) -> None:
        """Move time forward and resolve every sleep that is due (the sleepers run on the next loop turns)."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleepers(self) -> int:
        """Sleeps not yet due and not cancelled."""
        return sum(1 for _, _, future in self._sleepers if not future.done())


# --- keys and items ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WorkKey:
    """One object to reconcile; `kind` is `group/Kind`, e.g. `ome.io/ServingRuntime`."""

    cluster: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.cluster}:{self.kind}:{where}"


@dataclass(frozen=True, slots=True)
class WorkItem:
    """A key handed to a worker; give it back with `WorkQueue.done`."""

    key: WorkKey
    enqueued_at: float  # when it became ready, on the queue's clock
    queue_wait: float  # seconds from ready to taken
    retries: int  # rate-limited re-adds since the last `forget`
    triggers: tuple[object, ...]  # opaque causes collected while it waited, oldest first


class QueueShutDown(Exception):
    """`get` on a queue that was shut down."""


@dataclass(slots=True)
class _Pending:
    enqueued_at: float
    low_priority: bool
    triggers: deque[object]
    due: float | None = None  # None: ready (or parked while in flight); else delayed until this time
    delay_seq: int = -1  # matches the live heap entry of a delayed key


class _Lanes:
    """Ready keys of one priority: one FIFO per cluster, clusters taken in rotation."""

    def __init__(self) -> None:
        self.by_cluster: dict[str, OrderedDict[WorkKey, None]] = {}
        self.rotation: OrderedDict[str, None] = OrderedDict()

    def push(self, key: WorkKey) -> None:
        lane = self.by_cluster.get(key.cluster)
        if lane is None:
            lane = self.by_cluster[key.cluster] = OrderedDict()
        lane[key] = None
        if key.cluster not in self.rotation:
            self.rotation[key.cluster] = None

    def remove(self, key: WorkKey) -> bool:
        lane = self.by_cluster.get(key.cluster)
        if lane is None or key not in lane:
            return False
        del lane[key]
        if not lane:
            del self.by_cluster[key.cluster]
            del self.rotation[key.cluster]
        return True

    def pop(self) -> WorkKey | None:
        if not self.rotation:
            return None
        cluster = next(iter(self.rotation))
        lane = self.by_cluster[cluster]
        key, _ = lane.popitem(last=False)
        if lane:
            self.rotation.move_to_end(cluster)
        else:
            del self.by_cluster[cluster]
            del self.rotation[cluster]
        return key

    def depth(self, cluster: str) -> int:
        lane = self.by_cluster.get(cluster)
        return len(lane) if lane else 0

    def total(self) -> int:
        return sum(len(lane) for lane in self.by_cluster.values())

    def clear(self) -> None:
        self.by_cluster.clear()
        self.rotation.clear()


# --- the queue ---------------------------------------------------------------------------------------------------


class WorkQueue:
    """Deduplicating, rate-limited, priority work queue shared by all clusters; at most `max_concurrency` in flight."""

    def __init__(
        self,
        *,
        max_concurrency: int,
        clock: Clock | None = None,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        max_triggers: int = 32,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_triggers = max_triggers
        self._pending: dict[WorkKey, _Pending] = {}
        self._normal = _Lanes()
        self._low = _Lanes()
        self._delayed: list[tuple[float, int, WorkKey]] = []  # heap; entries whose seq is stale are skipped
        self._delay_seq = itertools.count()
        self._processing: set[WorkKey] = set()
        self._failures: dict[WorkKey, int] = {}
        self._changed: asyncio.Future[None] | None = None
        self._idle: asyncio.Future[None] | None = None
        self._shut_down = False

    # --- adding ------------------------------------------------------------------------------------------------

    def add(self, key: WorkKey, *, low_priority: bool = False, trigger: object | None = None) -> None:
        """Queue `key` now; a key already waiting is not queued twice (a normal add promotes a low-priority one)."""
        if self._shut_down:
            return
        now = self.clock.now()
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending(now, low_priority, deque(maxlen=self.max_triggers))
            self._remember(entry, trigger)
            self._make_ready(key, entry)
            return
        self._remember(entry, trigger)
        if entry.due is not None:  # delayed: an add makes it ready now
            entry.low_priority = entry.low_priority and low_priority
            entry.due = None
            entry.enqueued_at = now
            self._make_ready(key, entry)
        elif entry.low_priority and not low_priority:
            entry.low_priority = False
            if self._low.remove(key):
                self._normal.push(key)
                self._notify()

    def add_after(
        self, key: WorkKey, delay: float, *, low_priority: bool = False, trigger: object | None = None
    ) -> None:
        """Queue `key` once `delay` seconds have passed; a key already ready stays ready, the earlier time wins."""
        if delay <= 0:
            self.add(key, low_priority=low_priority, trigger=trigger)
            return
        if self._shut_down:
            return
        due = self.clock.now() + delay
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending(due, low_priority, deque(maxlen=self.max_triggers))
            self._remember(entry, trigger)
            self._delay(key, entry, due)
            return
        self._remember(entry, trigger)
        if entry.due is not None and due < entry.due:
            entry.low_priority = entry.low_priority and low_priority
            self._delay(key, entry, due)

    def add_rate_limited(
        self, key: WorkKey, *, trigger: object | None = None, floor: float = 0.0, low_priority: bool = False
    ) -> None:
        """Queue `key` after its next backoff: `base_delay` doubling per failure up to `max_delay`, at least
        `floor` seconds."""
        self.add_after(key, max(self.next_backoff(key), floor), trigger=trigger, low_priority=low_priority)

    def next_backoff(self, key: WorkKey) -> float:
        """Count one more failure for `key` and return the delay it earns."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures >= 64:  # 2**64 * any sane base is far past any cap
            return self.max_delay
        return min(self.base_delay * 2.0**failures, self.max_delay)

    def forget(self, key: WorkKey) -> None:
        """Reset the backoff of `key` (its reconcile succeeded)."""
        self._failures.pop(key, None)

    def num_requeues(self, key: WorkKey) -> int:
        return self._failures.get(key, 0)

    def discard_cluster(self, cluster: str) -> int:
        """Drop every waiting key and backoff of `cluster` (it was unregistered); in-flight items finish normally."""
        keys = [key for key in self._pending if key.cluster == cluster]
        for key in keys:
            entry = self._pending.pop(key)
            # a parked key (re-added while in flight) is in no lane: dropping its entry is enough
            if entry.due is None and not self._normal.remove(key):
                self._low.remove(key)
        for key in [key for key in self._failures if key.cluster == cluster]:
            del self._failures[key]
        return len(keys)

    # --- taking ------------------------------------------------------------------------------------------------

    async def get(self) -> WorkItem:
        """Wait for the next ready key (round-robin across clusters, normal before low priority) and take it."""
        while True:
            if self._shut_down:
                raise QueueShutDown
            self._release_due()
            if len(self._processing) < self.max_concurrency:
                key = self._normal.pop()
                if key is None:
                    key = self._low.pop()
                if key is not None:
                    return self._take(key)
            await self._wait_for_change()

    def done(self, item: WorkItem) -> None:
        """Finish `item`; if its key was re-added meanwhile it becomes ready again."""
        key = item.key
        if key not in self._processing:
            return
        self._processing.discard(key)
        entry = self._pending.get(key)
        if entry is not None and entry.due is None:
            (self._low if entry.low_priority else self._normal).push(key)
        self._notify()
        if not self._processing and self._idle is not None and not self._idle.done():
            self._idle.set_result(None)

    # --- lifecycle ---------------------------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Stop: waiting keys are dropped, adds are ignored and `get` raises `QueueShutDown`; in-flight items finish.

        Unlike client-go, the backlog is not handed out after shutdown: reconciles are level-based and the next
        start lists everything again.
        """
        self._shut_down = True
        self._pending.clear()
        self._normal.clear()
        self._low.clear()
        self._delayed.clear()
        self._notify()

    @property
    def is_shut_down(self) -> bool:
        return self._shut_down

    async def drain(self) -> None:
        """Wait until no item is in flight."""
        while self._processing:
            if self._idle is None or self._idle.done():
                self._idle = asyncio.get_running_loop().create_future()
            await asyncio.wait({self._idle})

    # --- introspection -----------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Ready keys in all clusters (not delayed ones, not in-flight ones)."""
        self._release_due()
        return self._normal.total() + self._low.total()

    def depth(self, cluster: str | None = None) -> int:
        """Ready keys of one cluster (of all clusters when `cluster` is None)."""
        if cluster is None:
            return len(self)
        self._release_due()
        return self._normal.depth(cluster) + self._low.depth(cluster)

    def depths(self) -> dict[str, int]:
        self._release_due()
        clusters = set(self._normal.by_cluster) | set(self._low.by_cluster)
        return {cluster: self._normal.depth(cluster) + self._low.depth(cluster) for cluster in sorted(clusters)}

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    @property
    def delayed(self) -> int:
        return sum(1 for entry in self._pending.values() if entry.due is not None)

    # --- internals ---------------------------------------------------------------------------------------------

    @staticmethod
    def _remember(entry: _Pending, trigger: object | None) -> None:
        if trigger is not None:
            entry.triggers.append(trigger)

    def _make_ready(self, key: WorkKey, entry: _Pending) -> None:
        if key in self._processing:
            return  # parked: `done` makes it ready
        (self._low if entry.low_priority else self._normal).push(key)
        self._notify()

    def _delay(self, key: WorkKey, entry: _Pending, due: float) -> None:
        entry.due = due
        entry.delay_seq = next(self._delay_seq)
        heapq.heappush(self._delayed, (due, entry.delay_seq, key))
        if len(self._delayed) > 64 and len(self._delayed) > 4 * len(self._pending):
            self._compact_delayed()
        self._notify()  # a getter may need to sleep until this earlier time

    def _compact_delayed(self) -> None:
        self._delayed = [item for item in self._delayed if self._is_live(item)]
        heapq.heapify(self._delayed)

    def _is_live(self, item: tuple[float, int, WorkKey]) -> bool:
        entry = self._pending.get(item[2])
        return entry is not None and entry.due is not None and entry.delay_seq == item[1]

    def _release_due(self) -> None:
        now = self.clock.now()
        while self._delayed and self._delayed[0][0] <= now:
            item = heapq.heappop(self._delayed)
            if not self._is_live(item):
                continue
            key = item[2]
            entry = self._pending[key]
            entry.due = None
            entry.enqueued_at = item[0]
            self._make_ready(key, entry)

    def _take(self, key: WorkKey) -> WorkItem:
        entry = self._pending.pop(key)
        self._processing.add(key)
        now = self.clock.now()
        return WorkItem(
            key=key,
            enqueued_at=entry.enqueued_at,
            queue_wait=max(0.0, now - entry.enqueued_at),
            retries=self._failures.get(key, 0),
            triggers=tuple(entry.triggers),
        )

    def _notify(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    def _next_due(self) -> float | None:
        while self._delayed and not self._is_live(self._delayed[0]):
            heapq.heappop(self._delayed)
        return self._delayed[0][0] if self._delayed else None

    async def _wait_for_change(self) -> None:
        if self._changed is None:
            self._changed = asyncio.get_running_loop().create_future()
        changed = self._changed
        due = self._next_due() if len(self._processing) < self.max_concurrency else None
        if due is None:
            # asyncio.wait, not await: cancelling one getter must not cancel the future all getters share
            await asyncio.wait({changed})
            return
        timer = asyncio.ensure_future(self.clock.sleep(max(0.0, due - self.clock.now())))
        try:
            await asyncio.wait({changed, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            timer.cancel()


# --- workers -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Result:
    """What a reconcile asks for: run again after `requeue_after` seconds, or a retry with backoff on `error`."""

    requeue_after: float | None = None
    error: BaseException | None = None
    retry_floor: float = 0.0
    """With `error`: the retry waits at least this long, in the low-priority lane when it is above 0 (a failure a
    watch event heals: the retry is a safety net that must not hold up live work)."""


class TerminalError(Exception):
    """A reconcile failure that retrying cannot fix: the key's backoff is reset and it is not requeued."""


class RetryLater(Exception):
    """The object cannot be reconciled now (a broken chain, a missing reference): nothing is written, and the key
    is retried with backoff."""


def retry_after_of(exc: BaseException, cap: float) -> float:
    """The `retry_after` seconds an error carries (a Kubernetes 429/503's Retry-After), at most `cap`; else 0."""
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and value > 0:
        return float(min(value, cap))
    return 0.0


async def run_workers(queue: WorkQueue, handler: Callable[[WorkItem], Awaitable[Result | None]], n: int) -> None:
    """Run `n` workers over `queue` until it is shut down (then returns once in-flight items are done)."""
    if n < 1:
        raise ValueError("n must be at least 1")
    async with asyncio.TaskGroup() as group:
        for _ in range(n):
            group.create_task(_work(queue, handler))


async def _work(queue: WorkQueue, handler: Callable[[WorkItem], Awaitable[Result | None]]) -> None:
    while True:
        try:
            item = await queue.get()
        except QueueShutDown:
            return
        key = item.key  # log lines of this reconcile carry the object (omectl.observability.logs)
        token = bind_log_fields(cluster=key.cluster, kind=key.kind, namespace=key.namespace, name=key.name)
        try:
            await _handle(queue, handler, item)
        finally:
            unbind_log_fields(token)
            queue.done(item)


async def _handle(queue: WorkQueue, handler: Callable[[WorkItem], Awaitable[Result | None]], item: WorkItem) -> None:
    key = item.key
    try:
        result = await handler(item)
    except TerminalError:
        log.error("reconcile of %s failed permanently", key, exc_info=True)
        queue.forget(key)
        return
    except Exception as exc:  # a worker survives any reconcile failure: logged, then retried with backoff
        log.warning("reconcile of %s failed (retry %d)", key, item.retries + 1, exc_info=True)
        # a server that said when to come back (429/503 with Retry-After) is not asked again before then
        queue.add_rate_limited(key, floor=retry_after_of(exc, queue.max_delay))
        return
    if result is not None and result.error is not None:
        log.info("reconcile of %s returned an error (retry %d): %s", key, item.retries + 1, result.error)
        queue.add_rate_limited(key, floor=result.retry_floor, low_priority=result.retry_floor > 0)
        return
    queue.forget(key)
    if result is not None and result.requeue_after is not None:
        queue.add_after(key, result.requeue_after)
