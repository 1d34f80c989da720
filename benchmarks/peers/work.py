"""The kopf peer's reconciles: one at a time per object, a bounded number at once.

kopf runs a handler per event of the object the event is about; a runtime edit must also reconcile the
InferenceServices it reaches, which kopf knows nothing of. So the handlers only update the caches and schedule
keys here, as omectl's informer handlers queue work keys: a key scheduled while its reconcile runs runs once more
after it (it reads the caches as they are then), a key scheduled twice before it starts runs once, and at most
`limit` reconciles run at once (omectl's default concurrency is 16 workers).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


class Reconciles(Generic[K]):
    def __init__(self, reconcile: Callable[[K], Awaitable[None]], limit: int) -> None:
        self.reconcile = reconcile
        self.slots = asyncio.Semaphore(limit)
        self.scheduled: set[K] = set()  # waiting for a slot, or running
        self.again: set[K] = set()  # scheduled again while running
        self.running: set[K] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.done = 0
        self.errors = 0

    def schedule(self, key: K) -> None:
        if key in self.running:
            self.again.add(key)
        elif key not in self.scheduled:
            self.scheduled.add(key)
            task = asyncio.get_running_loop().create_task(self._run(key))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    @property
    def pending(self) -> int:
        """Keys scheduled and not yet reconciled (waiting or running)."""
        return len(self.scheduled)

    async def _run(self, key: K) -> None:
        try:
            async with self.slots:
                while True:
                    self.running.add(key)
                    try:
                        await self.reconcile(key)
                    except Exception:
                        self.errors += 1
                        log.exception("reconcile of %s failed", key)
                    finally:
                        self.running.discard(key)
                        self.done += 1
                    if key not in self.again:
                        break
                    self.again.discard(key)
        finally:
            self.scheduled.discard(key)

    async def stop(self) -> None:
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
