"""Background work in asyncio task groups: no task outlives the object, or the block, that started it.

Two shapes occur in omectl. An object with `start()` and `stop()` (a cluster's informers, the app's registry loop,
a coordinator's Lease releases) holds a `BackgroundTasks`: one `asyncio.TaskGroup`, open from the first `spawn`
until `stop`, which cancels the group and returns once the group has awaited every child. A loop that needs a
companion for as long as it runs (the coordinator's fencing watchdog) uses `alongside`.

The group is hosted by a task of its own: a task group is entered and left in one task, and `stop` is often called
from another task than the one that started the work. Each child is an independent loop: one that fails is logged
and its siblings keep running, as they did when each was a bare asyncio task (a TaskGroup would cancel them all).
Why asyncio's task groups and not anyio's: docs/architecture.md ("Background tasks").
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from contextlib import asynccontextmanager
from typing import Any

log = logging.getLogger(__name__)


class BackgroundTasks:
    """The background tasks of one object: `spawn` them, `stop` cancels them and waits until none is left."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._host: asyncio.Task[None] | None = None
        self._group: asyncio.TaskGroup | None = None
        self._queued: list[tuple[Coroutine[Any, Any, Any], str]] = []  # spawned before the group opened
        self._unfinished: set[Coroutine[Any, Any, Any]] = set()
        self._idle = asyncio.Event()
        self._idle.set()

    def __len__(self) -> int:
        """How many of the spawned tasks have not finished yet."""
        return len(self._unfinished)

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        """Run `work` in the group (opened on the first spawn; the caller's event loop must be running). Work
        spawned while `stop` waits for the group is not cancelled: it runs to its end, and `stop` waits for it."""
        self._unfinished.add(work)
        self._idle.clear()
        if self._group is not None:
            self._group.create_task(self._run(work, name), name=name)
            return
        self._queued.append((work, name))
        if self._host is None:
            self._host = asyncio.get_running_loop().create_task(self._hold_open(), name=f"{self.name}-tasks")

    async def idle(self) -> None:
        """Until every task spawned so far (and any it spawned) has finished, none cancelled."""
        await self._idle.wait()

    async def stop(self, grace: float = 0) -> None:
        """Give the tasks up to `grace` seconds to finish on their own, then cancel the rest and await them all."""
        host = self._host
        if host is None:
            return
        if grace > 0 and self._unfinished:
            try:
                async with asyncio.timeout(grace):
                    await self._idle.wait()
            except TimeoutError:
                pass
        host.cancel()  # the group cancels each child once and waits for every one (a host not yet run never runs)
        await asyncio.wait([host])
        for work in self._unfinished:  # cancelled before it ever ran: closed, so none is left never awaited
            work.close()
        self._unfinished.clear()
        self._queued.clear()
        self._idle.set()
        self._host = self._group = None

    async def _hold_open(self) -> None:
        async with asyncio.TaskGroup() as group:
            self._group = group
            for work, name in self._queued:
                group.create_task(self._run(work, name), name=name)
            self._queued.clear()
            await asyncio.Event().wait()  # until `stop` cancels this task

    async def _run(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        try:
            await work
        except Exception:
            log.exception("%s: background task %s failed", self.name, name)
        finally:
            self._unfinished.discard(work)
            if not self._unfinished:
                self._idle.set()


@asynccontextmanager
async def alongside(companion: Callable[[], Coroutine[Any, Any, Any]], name: str) -> AsyncIterator[None]:
    """Run `companion` while the block runs; when the block ends, it is cancelled and awaited. Either's exception
    comes out as raised (not in an ExceptionGroup); when the companion fails, the block is cancelled first."""
    try:
        async with asyncio.TaskGroup() as group:
            task = group.create_task(companion(), name=name)
            try:
                yield
            finally:
                task.cancel()
    except BaseExceptionGroup as failed:
        if len(failed.exceptions) == 1:
            raise failed.exceptions[0] from None
        raise


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any]]) -> None:
    """Cancel tasks started outside a task group and return once every one has ended; what one raised is logged.
    For owners not yet moved onto `BackgroundTasks`."""
    ending = list(tasks)
    for task in ending:
        task.cancel()
    if ending:
        await asyncio.wait(ending)
    for task in ending:
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())
