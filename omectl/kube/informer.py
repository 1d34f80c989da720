"""`Informer`: keeps an `ObjectCache` of one kind in one cluster current, by client-go reflector rules.

The watch-resume rule, in one place:
- list (paged with `limit`/`continue`; resourceVersion "0" the first time, "" — a consistent read — after 410),
  then watch from the list's resourceVersion with bookmarks and a random `timeoutSeconds`;
- the first list is cached and delivered a page at a time, as each page arrives, and `synced` is set after the last
  one; a relist is applied whole once its last page is in (the cache readers rely on never shows half of one); a
  list that fails part-way (a continue token expired: 410) starts again, and the objects an earlier attempt cached
  that the new list lacks are deleted;
- a clean end of the stream re-watches from the newest resourceVersion seen (object or bookmark);
- 410 Expired (an ERROR event or the HTTP status) re-lists and reconciles the cache with the fresh list, so
  objects deleted meanwhile produce DELETED, changed ones MODIFIED and new ones ADDED;
- any other failure (refused, reset, 5xx, 429, a stream silent for `inactivity_timeout`, a watch that closes at
  once with nothing in it) backs off 0.8 s → 30 s with jitter (at least Retry-After), then re-watches from the
  newest resourceVersion seen; the backoff resets after a healthy period;
- a server whose resourceVersion went back (restarted empty, restored from an older backup) re-lists, as after a
  410: it is checked with a one-item list before the first watch after a failure or a watch the server ended
  early, and on every bookmark (a resumed watch would otherwise wait for a resourceVersion that is not coming, and
  the cache would keep objects the server no longer has).
Handlers run synchronously on the informer's task, after the cache holds the change. The informers of one event
loop share it: each applies a listed page in a loop turn of its own, and together they handle watch events for at
most `WATCH_SHARE_PER_TURN_S` of a turn (past it, each yields before its next event).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import weakref
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

from omectl.kube.cache import ObjectCache, ObjectKey, object_key
from omectl.kube.client import ClusterClient, KubeAPIError, KubeConnectionError
from omectl.kube.errors import NotFound, api_error
from omectl.kube.resources import ResourceRef
from omectl.kube.transforms import Transform, strip_bookkeeping
from omectl.turn_share import turn_share

__all__ = ["ADDED", "DELETED", "MODIFIED", "Backoff", "Clock", "Handler", "HealthListener", "Informer", "LoopClock"]

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

# handler(event_type, obj, old, initial): `old` is the cached object before the change (None for ADDED);
# `initial` is True for the ADDED events of the first list, so a work queue can give them low priority.
Handler = Callable[[str, dict[str, Any], dict[str, Any] | None, bool], None]
HealthListener = Callable[["Informer"], None]

# A watch that ends this soon with no line in it is a failure, not a clean timeout (client-go's "very short watch").
_SHORT_WATCH_SECONDS = 1.0

_page_gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()


WATCH_SHARE_PER_TURN_S = 0.02
"""The time the informers of one event loop spend on watch events in one loop turn (`omectl.turn_share`): a watch's
lines arrive in bursts (a profile deleted on every cluster at once reaches a thousand runtimes and InferenceServices
through each cluster's handlers), and an informer handled a whole burst in one step: at 10 clusters, ten such steps
in one turn, 100-200 ms."""


def _page_gate() -> asyncio.Lock:
    """One lock per event loop that every informer takes to apply a listed page: a fleet's clusters start together,
    and their pages, arriving in the same moments, were applied in one loop turn (at 20 clusters a turn of 300 ms
    to over a second: /healthz waited for it). Each holds it into the next turn, so a page that arrived beside it waits
    for a turn of its own."""
    loop = asyncio.get_running_loop()
    gate = _page_gates.get(loop)
    if gate is None:
        gate = _page_gates[loop] = asyncio.Lock()
    return gate


class Clock(Protocol):
    """Time as the informer sees it; tests pass one whose `sleep` does not wait."""

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class LoopClock:
    """The event loop's clock."""

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Backoff:
    """Exponential backoff with jitter: `initial` doubling up to `cap`; back to `initial` once no failure has been
    seen for `reset_after` seconds (client-go: 0.8 s, 30 s, factor 2, jitter 1.0, reset after 2 min)."""

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        *,
        factor: float = 2.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        clock: Clock | None = None,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.initial = initial
        self.cap = cap
        self.factor = factor
        self.jitter = jitter
        self.reset_after = reset_after
        self.clock = clock or LoopClock()
        self.rng = rng
        self._current = initial
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        """The wait before the next attempt; call once per failure."""
        now = self.clock.monotonic()
        if self._last_failure is not None and now - self._last_failure > self.reset_after:
            self._current = self.initial
        self._last_failure = now
        delay = min(self.cap, self._current * (1.0 + self.jitter * self.rng()))
        self._current = min(self.cap, self._current * self.factor)
        return delay

    def reset(self) -> None:
        self._current = self.initial
        self._last_failure = None


class _Expired(Exception):
    """The watch's resourceVersion is older than the server's history: re-list."""


class Informer:
    """List then watch one kind (optionally one namespace and label selector) of one cluster into `cache`."""

    def __init__(
        self,
        client: ClusterClient,
        resource: ResourceRef,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        handlers: list[Handler] | None = None,
        health_listeners: list[HealthListener] | None = None,
        bookmarks: bool = True,
        watch_timeout_range: tuple[float, float] = (300, 600),
        inactivity_timeout: float | None = None,
        page_size: int = 500,
        backoff: tuple[float, float] = (0.8, 30.0),
        healthy_reset: float = 120.0,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        optional: bool = False,
        transform: Transform = strip_bookkeeping,
    ) -> None:
        if namespace and not resource.namespaced:
            raise ValueError(f"{resource.plural} is cluster-scoped; an informer for it takes no namespace")
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.handlers: list[Handler] = list(handlers or [])
        self.health_listeners: list[HealthListener] = list(health_listeners or [])
        self.bookmarks = bookmarks
        self.watch_timeout_range = watch_timeout_range
        # Real servers send a bookmark about once a minute to a watch that asked for them; without bookmarks the
        # server's own timeoutSeconds is the only sign of life on a quiet kind.
        self.inactivity_timeout = (
            inactivity_timeout
            if inactivity_timeout is not None
            else (150.0 if bookmarks else watch_timeout_range[1] + 30.0)
        )
        self.page_size = page_size
        self.clock: Clock = clock or LoopClock()
        self._rng = rng or random.Random()
        self.backoff = Backoff(
            backoff[0], backoff[1], reset_after=healthy_reset, clock=self.clock, rng=self._rng.random
        )
        # An optional kind (a third-party CRD) that the cluster does not serve counts as synced and empty; the
        # informer keeps listing at its backoff and picks the kind up once it is installed.
        self.optional = optional
        self.transform = transform  # what the cache keeps of each object (omectl.kube.transforms)
        self.served = True
        self.cache = ObjectCache()
        self.synced = asyncio.Event()  # set once the first full list is in the cache and delivered
        # health, for the fleet's status and for tests
        self.connected = False  # the last list or watch line succeeded and no failure came after it
        self.last_error: str | None = None  # the newest failure's message (kept after recovery)
        self.restarts = 0  # list/watch cycles restarted: clean end of a watch, expiry or failure
        self.relists = 0  # full lists after the first
        self.failures = 0
        self.handler_errors = 0
        self._watch_progressed = False  # the current list/watch cycle delivered something beyond an ERROR line
        # The watch ended early or the server was unreachable: before the next watch resumes, check that the
        # server's resourceVersion did not go back (`_raise_if_gone_back`).
        self._probe_before_watch = False
        self._task: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        scope = f"/{self.namespace}" if self.namespace else ""
        return f"{self.client.name}:{self.resource}{scope}"

    # --- running -----------------------------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        self.handlers.append(handler)

    def start(self) -> asyncio.Task[None]:
        """Run in a task of its own (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self.run(), name=f"informer {self.name}")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise

    async def wait_synced(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self.synced.wait(), timeout)

    async def run(self) -> None:
        """List and watch until cancelled; never raises anything else."""
        need_list = True
        consistent_list = False
        expired_in_a_row = 0
        try:
            while True:
                try:
                    if need_list:
                        await self._list(resource_version="" if consistent_list else "0")
                        need_list = False
                    await self._watch_once()
                    self.restarts += 1
                    self._notify_health()
                    expired_in_a_row = 0
                except asyncio.CancelledError:
                    raise
                except (_Expired, KubeAPIError) as exc:
                    if isinstance(exc, NotFound) and self.optional:
                        need_list = True
                        await self._not_served()
                        continue
                    if isinstance(exc, KubeAPIError) and not exc.expired:
                        await self._failed(exc)
                        continue
                    need_list, consistent_list = True, True
                    expired_in_a_row = 1 if self._watch_progressed else expired_in_a_row + 1
                    log.info("%s: resourceVersion expired; re-listing", self.name)
                    if expired_in_a_row > 1:  # a server that expires every fresh list must not be hammered
                        await self._failed(exc)
                    else:
                        self.restarts += 1
                        self._notify_health()
                except Exception as exc:  # the informer outlives any failure: `_failed` logs it and backs off
                    if isinstance(exc, KubeConnectionError):
                        # what answers next may be a restarted server whose store starts over: look before resuming
                        self._probe_before_watch = True
                    await self._failed(exc)
        finally:
            self._set_connected(False)

    async def _not_served(self) -> None:
        if self.served:
            log.info("%s: not served by the cluster; treated as empty until it is", self.name)
        self.served = False
        if len(self.cache):
            self._replace([], self.cache.resource_version)
        self.cache.complete = True
        self.synced.set()
        self._set_connected(True, notify=True)
        await self.clock.sleep(self.backoff.next_delay())

    async def _failed(self, exc: Exception) -> None:
        self.failures += 1
        self.restarts += 1
        self.last_error = str(exc) if str(exc) else type(exc).__name__
        if not isinstance(exc, KubeAPIError | KubeConnectionError):
            log.exception("%s: unexpected failure", self.name, exc_info=exc)
        self._set_connected(False, notify=True)
        delay = self.backoff.next_delay()
        retry_after = exc.retry_after if isinstance(exc, KubeAPIError) else None
        if retry_after is not None:
            delay = max(delay, retry_after)
        log.debug("%s: %s; retrying in %.2f s", self.name, self.last_error, delay)
        await self.clock.sleep(delay)

    def _set_connected(self, connected: bool, *, notify: bool = False) -> None:
        changed = connected != self.connected
        self.connected = connected
        if changed or notify:
            self._notify_health()

    def _notify_health(self) -> None:
        for listener in self.health_listeners:
            try:
                listener(self)
            except Exception:  # a listener's bug must not stop the informer
                log.exception("%s: health listener failed", self.name)

    # --- list --------------------------------------------------------------------------------------------

    def _selector_query(self) -> dict[str, Any]:
        query: dict[str, Any] = {}
        if self.label_selector:
            query["labelSelector"] = self.label_selector
        if self.field_selector:
            query["fieldSelector"] = self.field_selector
        return query

    async def _pages(self, resource_version: str) -> AsyncIterator[tuple[list[dict[str, Any]], str]]:
        """The list, a page at a time as each arrives: (items, the list's resourceVersion). The list's resourceVersion
        is the first page's: the snapshot every page belongs to. A continue token that expired (410) raises like any
        list failure; `run` then lists again from the start, as after a 410 on a watch."""
        self._watch_progressed = False
        path = self.resource.path(self.namespace)
        query = {**self._selector_query(), "limit": self.page_size, "resourceVersion": resource_version or None}
        list_rv: str | None = None
        while True:
            page = await self.client.request("GET", path, query=query)
            meta = page.get("metadata") or {}
            if list_rv is None:
                list_rv = str(meta.get("resourceVersion") or "")
            yield page.get("items") or [], list_rv
            token = meta.get("continue")
            if not token:
                return
            query = {**self._selector_query(), "limit": self.page_size, "continue": token}

    async def _list(self, resource_version: str) -> None:
        """The first list fills the cache page by page, each page's events delivered as it arrives (nobody reads a
        cache before it is synced: `synced` is set after the last page). A relist replaces a synced cache that
        readers rely on, so it is applied whole once its last page is in, as client-go's reflector does."""
        if self.synced.is_set():
            items: list[dict[str, Any]] = []
            list_rv = ""
            async for page, page_list_rv in self._pages(resource_version):
                items.extend(page)
                list_rv = page_list_rv
            self.served = True
            self.relists += 1
            async with _page_gate():
                self._replace(items, list_rv)
                await asyncio.sleep(0)  # held past this turn: another informer's page waits for a turn of its own
        else:
            await self._fill(resource_version)
            self.cache.complete = True
            self.synced.set()
            log.debug(
                "%s: synced %d objects at resourceVersion %s", self.name, len(self.cache), self.cache.resource_version
            )
        self._set_connected(True, notify=True)

    async def _fill(self, resource_version: str) -> None:
        """The first list, into a cache that may hold part of an earlier attempt (its continue token expired, or
        the server failed mid-list): what that attempt cached and this list lacks is deleted at the end."""
        listed: set[ObjectKey] = set()
        list_rv = ""
        async for page, page_list_rv in self._pages(resource_version):
            self.served = True
            list_rv = page_list_rv
            async with _page_gate():
                for item in page:
                    listed.add(self._apply_listed(item, initial=True))
                await asyncio.sleep(0)  # held past this turn: another informer's page waits for a turn of its own
        self._delete_unlisted(listed)
        self.cache.resource_version = list_rv

    def _replace(self, items: list[dict[str, Any]], list_rv: str) -> None:
        """Make the synced cache equal to a full list, delivering the difference as events."""
        listed = {self._apply_listed(item, initial=False) for item in items}
        self._delete_unlisted(listed)
        self.cache.resource_version = list_rv

    def _apply_listed(self, item: dict[str, Any], *, initial: bool) -> ObjectKey:
        """Cache one listed object and deliver what changed (nothing when the cache holds it at that version)."""
        cache = self.cache
        obj = self._normalise(item)
        key = object_key(obj)
        old = cache.get(*key)
        if old is not None:
            if old["metadata"].get("resourceVersion") == obj["metadata"].get("resourceVersion"):
                return key
            if old["metadata"].get("uid") != obj["metadata"].get("uid"):
                # deleted and re-created under the same name while we were away
                cache.delete(*key)
                self._dispatch(DELETED, old, old, False)
                old = None
        cache.upsert(obj)
        self._dispatch(MODIFIED if old is not None else ADDED, obj, old, initial)
        return key

    def _delete_unlisted(self, listed: set[ObjectKey]) -> None:
        for key in [k for k in self.cache.object_keys() if k not in listed]:
            gone = self.cache.delete(*key)
            if gone is not None:
                self._dispatch(DELETED, gone, gone, False)

    def _normalise(self, obj: dict[str, Any]) -> dict[str, Any]:
        # List items of built-in kinds come without apiVersion/kind; watch objects carry them. Keep them uniform.
        if "apiVersion" not in obj:
            obj["apiVersion"] = self.resource.api_version
        if "kind" not in obj:
            obj["kind"] = self.resource.kind
        return self.transform(obj)

    # --- watch -------------------------------------------------------------------------------------------

    async def _watch_once(self) -> None:
        """One watch request from the newest resourceVersion seen, until the server ends it cleanly."""
        low, high = self.watch_timeout_range
        query = {
            **self._selector_query(),
            "resourceVersion": self.cache.resource_version or None,
            "timeoutSeconds": max(1, int(self._rng.uniform(low, high))),
            "allowWatchBookmarks": True if self.bookmarks else None,
        }
        started = self.clock.monotonic()
        lines = 0
        path = self.resource.path(self.namespace)
        self._watch_progressed = False
        if self._probe_before_watch and self.cache.resource_version:
            await self._check_not_gone_back(path)
        self._probe_before_watch = False
        share = turn_share("watch events", WATCH_SHARE_PER_TURN_S)
        async for event in self.client.watch(path, query, inactivity_timeout=self.inactivity_timeout):
            lines += 1
            await share.wait_for_share()  # past it, the rest of the burst in a later turn
            started = time.perf_counter()
            self._handle_event(event)
            share.spend(time.perf_counter() - started)
            self._watch_progressed = True
            if not self.connected:
                self._set_connected(True)
        if lines == 0 and self.clock.monotonic() - started < _SHORT_WATCH_SECONDS:
            raise KubeConnectionError(self.client.name, f"watch {path}: closed at once with no events")
        if self.clock.monotonic() - started < query["timeoutSeconds"] - 1:
            # The server ended the watch early (dropped, restarting): before resuming, make sure it did not come
            # back with a store that starts over, where the resume would wait for a resourceVersion not coming.
            self._probe_before_watch = True

    async def _check_not_gone_back(self, path: str) -> None:
        page = await self.client.request("GET", path, query={"limit": 1})
        current = str((page.get("metadata") or {}).get("resourceVersion") or "")
        self._raise_if_gone_back(current)

    def _raise_if_gone_back(self, current: str) -> None:
        """A server whose resourceVersion is below the newest we saw lost its data (restarted empty, restored from
        an older backup): our cache describes objects that may be gone. Re-list (resourceVersions are compared as
        numbers only when both are, as etcd's are)."""
        ours = self.cache.resource_version or ""
        if current.isdigit() and ours.isdigit() and int(current) < int(ours):
            raise _Expired(
                f"cluster {self.client.name}: {self.resource.path(self.namespace)}: the server's resourceVersion "
                f"{current} is below {ours}: it lost its data"
            )

    def _handle_event(self, event: dict[str, Any]) -> None:
        type_ = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {str(event)[:200]}")
        if type_ == "ERROR":
            code = int(obj.get("code") or 0)
            if code == 410 or obj.get("reason") in ("Expired", "Gone"):
                message = obj.get("message") or "resourceVersion expired"
                raise _Expired(f"cluster {self.client.name}: watch {self.resource.path(self.namespace)}: {message}")
            raise api_error(
                code,
                str(obj.get("reason") or "WatchError"),
                str(obj.get("message") or ""),
                obj,
                cluster=self.client.name,
                method="WATCH",
                path=self.resource.path(self.namespace),
            )
        meta = obj.get("metadata") or {}
        rv = meta.get("resourceVersion")
        if type_ == "BOOKMARK":
            if rv:
                self._raise_if_gone_back(str(rv))
                self.cache.resource_version = str(rv)
            return
        cache = self.cache
        if type_ in (ADDED, MODIFIED):
            obj = self._normalise(obj)
            old = cache.get(meta.get("namespace"), meta["name"])
            if old is not None and old["metadata"].get("resourceVersion") == rv:
                pass  # already cached (a page of the list was newer than the list's resourceVersion)
            else:
                cache.upsert(obj)
                self._dispatch(MODIFIED if old is not None else ADDED, obj, old, False)
        elif type_ == DELETED:
            obj = self._normalise(obj)
            old = cache.delete(meta.get("namespace"), meta["name"])
            if old is not None:
                self._dispatch(DELETED, obj, old, False)
        else:
            raise ValueError(f"unknown watch event type {type_!r}")
        if rv:
            cache.resource_version = str(rv)

    def _dispatch(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        for handler in self.handlers:
            try:
                handler(type_, obj, old, initial)
            except Exception:  # a handler's bug must neither stop the informer nor starve the other handlers
                self.handler_errors += 1
                log.exception("%s: handler %r failed on %s %s", self.name, handler, type_, object_key(obj))

    def __repr__(self) -> str:
        return f"Informer({self.name!r}, synced={self.synced.is_set()}, objects={len(self.cache)})"
