"""The reconcile work queue: client-go semantics (dedup, one in flight per key, per-item backoff), fair across clusters.

A key waits in exactly one place: ready (in one priority lane, in its cluster's FIFO there), delayed (until a time
on the queue's clock), or parked (re-added while in flight; it becomes ready when `done` is called for it). Ready keys
are taken from the highest lane that has one (`Lane`: user edits, then fan-out, then resync), round-robin across
clusters within a lane, first in first out within a cluster; a cluster with `max_per_cluster` keys in flight is
skipped until one of them is done, so one cluster's storm cannot take every worker. `reserved_for_edits` of the
workers take edit-lane keys only: a fan-out or a resync can fill every other one, and a live edit still finds one
free. A held cluster (its caches are still listing: `hold`, `release`) is skipped too: its keys gather, deduplicated
and in their lanes, and none is handed out until it is released (controller-runtime starts no worker before its
caches have synced).
"""

from __future__ import annotations

import asyncio
import functools
import heapq
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Container
from dataclasses import dataclass
from enum import IntEnum
from typing import Protocol

from omectl.observability.logs import bind as bind_log_fields
from omectl.observability.logs import unbind as unbind_log_fields
from omectl.observability.steps import SlowSteps, timed_steps
from omectl.turn_share import turn_share

log = logging.getLogger(__name__)

__all__ = [
    "Clock",
    "FakeClock",
    "Lane",
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


class Lane(IntEnum):
    """The priority of a ready key; a lower value is taken first. A key waiting in two lanes waits in the higher."""

    EDIT = 0
    """A watch event of the object itself: what a user changed waits for nothing else."""
    CHAIN = 1
    """The runtimes whose chain an edit of another runtime changed (a profile's children): one status write each,
    at most as many as the cluster has runtimes, so they do not wait behind the renders of the InferenceServices the
    same edit (or an earlier one, still being rolled out) reaches."""
    FANOUT = 2
    """The keys an edit reaches through an index (every InferenceService below a runtime or config that changed),
    and owners whose workload changed status (which follows the controller's own writes, so a rollout's)."""
    RESYNC = 3
    """Initial lists and relists, and retries that only a watch event would heal sooner."""


_ALL_LANES: tuple[Lane, ...] = tuple(Lane)
_EDIT_ONLY: tuple[Lane, ...] = (Lane.EDIT,)


def _lane_of(lane: Lane | None, low_priority: bool) -> Lane:
    if lane is not None:
        return lane
    return Lane.RESYNC if low_priority else Lane.EDIT


@dataclass(frozen=True, slots=True)
class WorkItem:
    """A key handed to a worker; give it back with `WorkQueue.done`."""

    key: WorkKey
    enqueued_at: float  # when it became ready, on the queue's clock
    queue_wait: float  # seconds from ready to taken
    retries: int  # rate-limited re-adds since the last `forget`
    triggers: tuple[object, ...]  # opaque causes collected while it waited, oldest first
    lane: Lane = Lane.EDIT  # the lane it was taken from; its retries and requeues wait in the same one


class QueueShutDown(Exception):
    """`get` on a queue that was shut down."""


@dataclass(slots=True)
class _Pending:
    enqueued_at: float
    lane: Lane
    triggers: list[object] | None = None  # made on the first trigger (an empty deque(maxlen) is 0.75 KiB per key)
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

    def pop(self, blocked: Container[str] = ()) -> WorkKey | None:
        """The oldest key of the next cluster in rotation that is not `blocked` (a blocked one keeps its turn)."""
        cluster = next((name for name in self.rotation if name not in blocked), None)
        if cluster is None:
            return None
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
    """Deduplicating, rate-limited, priority work queue shared by all clusters; at most `max_concurrency` in flight,
    at most `max_per_cluster` of one cluster (default: no bound beyond `max_concurrency`)."""

    def __init__(
        self,
        *,
        max_concurrency: int,
        max_per_cluster: int | None = None,
        reserved_for_edits: int = 0,
        clock: Clock | None = None,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        max_triggers: int = 32,
    ) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if max_per_cluster is not None and max_per_cluster < 1:
            raise ValueError("max_per_cluster must be at least 1")
        if not 0 <= reserved_for_edits < max_concurrency:
            raise ValueError("reserved_for_edits must be at least 0 and below max_concurrency")
        self.max_concurrency = max_concurrency
        self.max_per_cluster = max_concurrency if max_per_cluster is None else min(max_per_cluster, max_concurrency)
        self.reserved_for_edits = reserved_for_edits
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.max_triggers = max_triggers
        self._pending: dict[WorkKey, _Pending] = {}
        self._lanes = tuple(_Lanes() for _ in Lane)
        self._delayed: list[tuple[float, int, WorkKey]] = []  # heap; entries whose seq is stale are skipped
        self._delay_seq = itertools.count()
        self._processing: set[WorkKey] = set()
        self._in_flight_of: dict[str, int] = {}  # cluster -> keys of it in `_processing`
        self._in_flight_below_edit = 0  # keys in `_processing` taken from a lane below `Lane.EDIT`
        self._held: set[str] = set()  # clusters whose keys are not handed out yet
        self._failures: dict[WorkKey, int] = {}
        self._changed: asyncio.Future[None] | None = None
        self._idle: asyncio.Future[None] | None = None
        self._shut_down = False

    # --- adding ------------------------------------------------------------------------------------------------

    def add(
        self, key: WorkKey, *, lane: Lane | None = None, low_priority: bool = False, trigger: object | None = None
    ) -> None:
        """Queue `key` now in `lane` (default `Lane.EDIT`; `low_priority` is short for `Lane.RESYNC`); a key already
        waiting is not queued twice, and an add in a higher lane promotes it there."""
        if self._shut_down:
            return
        lane = _lane_of(lane, low_priority)
        now = self.clock.now()
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending(now, lane)
            self._remember(entry, trigger)
            self._make_ready(key, entry)
            return
        self._remember(entry, trigger)
        if entry.due is not None:  # delayed: an add makes it ready now
            entry.lane = min(entry.lane, lane)
            entry.due = None
            entry.enqueued_at = now
            self._make_ready(key, entry)
        elif lane < entry.lane:
            was, entry.lane = entry.lane, lane
            if self._lanes[was].remove(key):  # else parked in flight: `done` readies it in its new lane
                self._lanes[lane].push(key)
                self._notify()

    def add_after(
        self,
        key: WorkKey,
        delay: float,
        *,
        lane: Lane | None = None,
        low_priority: bool = False,
        trigger: object | None = None,
    ) -> None:
        """Queue `key` once `delay` seconds have passed; a key already ready stays ready, the earlier time wins."""
        lane = _lane_of(lane, low_priority)
        if delay <= 0:
            self.add(key, lane=lane, trigger=trigger)
            return
        if self._shut_down:
            return
        due = self.clock.now() + delay
        entry = self._pending.get(key)
        if entry is None:
            entry = self._pending[key] = _Pending(due, lane)
            self._remember(entry, trigger)
            self._delay(key, entry, due)
            return
        self._remember(entry, trigger)
        if entry.due is not None and due < entry.due:
            entry.lane = min(entry.lane, lane)
            self._delay(key, entry, due)

    def add_rate_limited(
        self,
        key: WorkKey,
        *,
        trigger: object | None = None,
        floor: float = 0.0,
        lane: Lane | None = None,
        low_priority: bool = False,
    ) -> None:
        """Queue `key` after its next backoff: `base_delay` doubling per failure up to `max_delay`, at least
        `floor` seconds."""
        lane = _lane_of(lane, low_priority)
        self.add_after(key, max(self.next_backoff(key), floor), trigger=trigger, lane=lane)

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
            if entry.due is None:
                self._lanes[entry.lane].remove(key)
        for key in [key for key in self._failures if key.cluster == cluster]:
            del self._failures[key]
        return len(keys)

    def hold(self, cluster: str) -> None:
        """Hand out none of `cluster`'s keys until `release`; they are still added, deduplicated and promoted."""
        self._held.add(cluster)

    def release(self, cluster: str) -> None:
        """Hand `cluster`'s keys out again (they wait in their lanes, behind nothing they did not wait behind)."""
        if cluster in self._held:
            self._held.discard(cluster)
            self._notify()

    def is_held(self, cluster: str) -> bool:
        return cluster in self._held

    # --- taking ------------------------------------------------------------------------------------------------

    async def get(self) -> WorkItem:
        """Wait for the next ready key (highest lane first, round-robin across clusters within it) and take it."""
        while True:
            if self._shut_down:
                raise QueueShutDown
            self._release_due()
            if len(self._processing) < self.max_concurrency:
                taken = self._pop_ready()
                if taken is not None:
                    return self._take(*taken)
            await self._wait_for_change()

    def _pop_ready(self) -> tuple[WorkKey, Lane] | None:
        blocked = self._held.union(name for name, count in self._in_flight_of.items() if count >= self.max_per_cluster)
        lanes = _ALL_LANES
        if self._in_flight_below_edit >= self.max_concurrency - self.reserved_for_edits:
            lanes = _EDIT_ONLY  # the workers left are kept for edits
        for lane in lanes:
            key = self._lanes[lane].pop(blocked)
            if key is not None:
                return key, lane
        return None

    def done(self, item: WorkItem) -> None:
        """Finish `item`; if its key was re-added meanwhile it becomes ready again."""
        key = item.key
        if key not in self._processing:
            return
        self._processing.discard(key)
        if item.lane != Lane.EDIT:
            self._in_flight_below_edit -= 1
        count = self._in_flight_of[key.cluster] - 1
        if count:
            self._in_flight_of[key.cluster] = count
        else:
            del self._in_flight_of[key.cluster]
        entry = self._pending.get(key)
        if entry is not None and entry.due is None:
            self._lanes[entry.lane].push(key)
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
        for lane in self._lanes:
            lane.clear()
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
        return sum(lane.total() for lane in self._lanes)

    def depth(self, cluster: str | None = None) -> int:
        """Ready keys of one cluster (of all clusters when `cluster` is None)."""
        if cluster is None:
            return len(self)
        self._release_due()
        return sum(lane.depth(cluster) for lane in self._lanes)

    def depths(self) -> dict[str, int]:
        self._release_due()
        clusters = {cluster for lane in self._lanes for cluster in lane.by_cluster}
        return {cluster: sum(lane.depth(cluster) for lane in self._lanes) for cluster in sorted(clusters)}

    def lane_depths(self) -> dict[str, int]:
        """Ready keys per lane, by lane name (`EDIT`, `CHAIN`, `FANOUT`, `RESYNC`)."""
        self._release_due()
        return {lane.name: self._lanes[lane].total() for lane in Lane}

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    @property
    def delayed(self) -> int:
        return sum(1 for entry in self._pending.values() if entry.due is not None)

    # --- internals ---------------------------------------------------------------------------------------------

    def _remember(self, entry: _Pending, trigger: object | None) -> None:
        """Keep `trigger`, the newest `max_triggers` of them."""
        if trigger is None:
            return
        if entry.triggers is None:
            entry.triggers = [trigger]
            return
        entry.triggers.append(trigger)
        if len(entry.triggers) > self.max_triggers:
            del entry.triggers[0]

    def _make_ready(self, key: WorkKey, entry: _Pending) -> None:
        if key in self._processing:
            return  # parked: `done` makes it ready
        self._lanes[entry.lane].push(key)
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

    def _take(self, key: WorkKey, lane: Lane) -> WorkItem:
        entry = self._pending.pop(key)
        self._processing.add(key)
        if lane != Lane.EDIT:
            self._in_flight_below_edit += 1
        self._in_flight_of[key.cluster] = self._in_flight_of.get(key.cluster, 0) + 1
        now = self.clock.now()
        return WorkItem(
            key=key,
            enqueued_at=entry.enqueued_at,
            queue_wait=max(0.0, now - entry.enqueued_at),
            retries=self._failures.get(key, 0),
            triggers=tuple(entry.triggers) if entry.triggers else (),
            lane=lane,
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
    """With `error`: the retry waits at least this long, in the resync lane when it is above 0 (a failure a watch
    event heals: the retry is a safety net that must not hold up live work)."""


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


RECONCILE_SHARE_PER_TURN_S = 0.02
"""The time the reconciles' steps take of one loop turn before the workers start no new one in it
(`omectl.turn_share`): sixteen workers resuming together filled turns of 10-66 ms at 10 clusters."""

StepReport = Callable[[WorkItem, float], None]
"""Told, once each reconcile ends, its item and its longest synchronous step in seconds (`timed_steps`)."""


async def run_workers(
    queue: WorkQueue,
    handler: Callable[[WorkItem], Awaitable[Result | None]],
    n: int,
    *,
    on_step: StepReport | None = None,
    slow: SlowSteps | None = None,
) -> None:
    """Run `n` workers over `queue` until it is shut down (then returns once in-flight items are done). With
    `on_step`, each reconcile's longest synchronous step is reported; with `slow`, steps past its threshold too."""
    if n < 1:
        raise ValueError("n must be at least 1")
    async with asyncio.TaskGroup() as group:
        for _ in range(n):
            group.create_task(_work(queue, handler, on_step, slow))


async def _work(
    queue: WorkQueue,
    handler: Callable[[WorkItem], Awaitable[Result | None]],
    on_step: StepReport | None = None,
    slow: SlowSteps | None = None,
) -> None:
    share = turn_share("reconciles", RECONCILE_SHARE_PER_TURN_S)
    while True:
        try:
            item = await queue.get()
        except QueueShutDown:
            return
        key = item.key  # log lines of this reconcile carry the object (omectl.observability.logs)
        token = bind_log_fields(cluster=key.cluster, kind=key.kind, namespace=key.namespace, name=key.name)
        try:  # from here on the key is in flight: `done` however this ends, a stop's cancellation included
            if item.lane is not Lane.EDIT:  # a user's edit starts at once; the rest waits for a turn with share left
                await share.wait_for_share()
            if on_step is None:
                await _handle(queue, handler, item)
            else:
                report = functools.partial(on_step, item)
                await timed_steps(_handle(queue, handler, item), report, slow, str(key), share)
        finally:
            unbind_log_fields(token)
            queue.done(item)
        # A reconcile with nothing to write never suspends, and `get` returns at once while keys are ready: without
        # this a worker would run a whole backlog of such reconciles in one step of the loop, /healthz and the
        # watch streams waiting behind it. And no new reconcile but an edit's starts in a turn whose share the
        # workers' steps have spent (timed steps only: with step timing off nothing is spent).
        await asyncio.sleep(0)


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
        queue.add_rate_limited(key, floor=retry_after_of(exc, queue.max_delay), lane=item.lane)
        return
    if result is not None and result.error is not None:
        log.info("reconcile of %s returned an error (retry %d): %s", key, item.retries + 1, result.error)
        lane = Lane.RESYNC if result.retry_floor > 0 else item.lane
        queue.add_rate_limited(key, floor=result.retry_floor, lane=lane)
        return
    queue.forget(key)
    if result is not None and result.requeue_after is not None:
        queue.add_after(key, result.requeue_after, lane=item.lane)
