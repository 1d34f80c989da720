"""Keep the garbage collector's full passes short: what the controller holds for long is frozen.

A full collection walks every object the collector tracks and holds the event loop while it does: in a storm of
1,000 runtimes those passes were the longest holds of all (80 to 115 ms on the CPU), and in the fleet-scale
benchmark's edit and latency phases at 10 clusters they came every few hundred milliseconds and took 150 to 300 ms
each, over the 200,000 to 330,000 objects promoted since the last freeze (every cached Deployment an edit replaced)
while collecting some 5 to 25 (benchmarks/README.md). `HeapFreezer` collects the young generations and then freezes
every survivor (`gc.freeze`: the collector skips them from then on): after start and after a cluster's caches have
synced, several syncs close together making one pass, and (`start()`) at the end of each full pass the interpreter
makes, in the collector's own callback, so the next one walks only what was promoted since: at 20 clusters the
first lists made five full passes in one long loop turn, 60 to 150 ms each, before a freeze deferred to the loop
could run. No freezing step walks the old generation, so a pass costs a few milliseconds.

A frozen object is still freed when its last reference goes (an informer replacing a cached object); only a
reference cycle among frozen objects that becomes garbage later is not collected while it stays frozen (the caches'
JSON objects hold none; a connection or a task alive at a freeze may). So what is frozen is bounded in time:
every `reclaim_every` seconds, at the end of a full pass, the heap is thawed and the next pass collects every
generation before it freezes again (one long pass in that many seconds, and only while objects churn). What was
alive at a freeze and becomes garbage at once (a removed cluster's informers and caches, a stopped controller) is
reclaimed the same way, without waiting: `thaw()` on a cluster's removal and at stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from typing import Any

__all__ = ["HeapFreezer"]

log = logging.getLogger(__name__)

RECLAIM_EVERY_S = 600.0


class HeapFreezer:
    """`request()` freezes the heap `delay` seconds later (later requests within that time join the same pass);
    after `start()`, the survivors of every full collection are frozen too, and every `reclaim_every` seconds a
    full collection thaws the heap instead, so that the next pass collects every generation."""

    def __init__(self, *, enabled: bool = True, delay: float = 1.0, reclaim_every: float = RECLAIM_EVERY_S) -> None:
        self.enabled = enabled
        self.delay = delay
        self.reclaim_every = reclaim_every
        self.passes = 0
        self.reclaims = 0
        self._pending: asyncio.TimerHandle | None = None
        self._full = False  # the next pass collects every generation (the heap was thawed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._after_full_pending = False
        self._collecting = False  # our own collection: its end is no full pass of the interpreter's
        self._reclaimed_at = time.monotonic()

    def start(self) -> None:
        """Also freeze what survives each full collection the interpreter makes (call with the loop running)."""
        if not self.enabled or self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._reclaimed_at = time.monotonic()
        gc.callbacks.append(self._on_collection)

    def stop(self) -> None:
        self.cancel()
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        self._loop = None

    def request(self) -> None:
        if not self.enabled or self._pending is not None:
            return
        self._pending = asyncio.get_running_loop().call_later(self.delay, self.freeze_now)

    def thaw(self, *, refreeze: bool = True) -> None:
        """Unfreeze everything, so that what died since a freeze can be collected; with `refreeze`, request a pass
        that first collects in full."""
        if not self.enabled:
            return
        self.cancel()
        if self.passes:
            gc.unfreeze()
            self._full = True
        if refreeze:
            self.request()

    def freeze_now(self) -> None:
        """Collect the young generations (every generation after a thaw), then freeze what survived (neither step
        walks what is frozen already; `gc.get_freeze_count()` would, tens of milliseconds at 10 clusters)."""
        self.cancel()
        started = time.perf_counter()
        self._collecting = True
        try:
            gc.collect() if self._full else gc.collect(1)
        finally:
            self._collecting = False
        self._full = False
        gc.freeze()
        self.passes += 1
        log.debug("heap frozen (pass %d) in %.1f ms", self.passes, (time.perf_counter() - started) * 1000)

    def cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def _on_collection(self, phase: str, info: dict[str, Any]) -> None:
        # Called by the collector right after its pass, on whichever thread allocated, with nothing else running.
        # A full pass leaves the young generations empty, so freezing here freezes exactly its survivors, and at
        # once: a loop turn that makes several full passes (the first lists of many clusters arriving together)
        # walks each object once, not once per pass. Freezing only moves the collector's lists; collecting, logging
        # or touching the loop's timers is left to the loop.
        if phase != "stop" or info.get("generation") != 2 or self._collecting:
            return
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if time.monotonic() - self._reclaimed_at >= self.reclaim_every:
            if not self._after_full_pending:
                self._after_full_pending = True
                with contextlib.suppress(RuntimeError):  # the loop has closed: nothing runs any more
                    loop.call_soon_threadsafe(self._reclaim)
            return
        gc.freeze()
        self._full = False
        self.passes += 1

    def _reclaim(self) -> None:
        self._after_full_pending = False
        self._reclaimed_at = time.monotonic()
        self.reclaims += 1
        self.thaw()
