"""Keep the garbage collector's full passes short: what the controller holds for its whole life is frozen.

A full collection walks every object the collector tracks and holds the event loop while it does: in a storm of
1,000 runtimes those passes were the longest holds of all (80 to 115 ms on the CPU; benchmarks/README.md). Most of
what it walks lives as long as the process: the modules, the OpenAPI schema, and the objects of the first list of
each cluster's caches. `HeapFreezer` collects the young generations and then freezes every survivor (`gc.freeze`:
the collector skips them from then on) after start and after a cluster's caches have synced, several syncs close
together making one pass; neither step walks the old generation, so a pass costs a few milliseconds. A frozen object
is still freed when its last reference goes (an informer replacing a cached object); only a reference cycle among
frozen objects that becomes garbage is never reclaimed (the caches' JSON objects hold none), which bounds what a
pass can leak by the cyclic garbage the old generation held at that moment. What was alive at a freeze and later
becomes garbage in a cycle (a removed cluster's informers and caches, a stopped controller) is reclaimed only once
the heap is thawed: `thaw()` on a cluster's removal and at stop unfreezes everything, and after a removal the next
pass collects in full before it freezes again.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

__all__ = ["HeapFreezer"]

log = logging.getLogger(__name__)


class HeapFreezer:
    """`request()` freezes the heap `delay` seconds later (later requests within that time join the same pass)."""

    def __init__(self, *, enabled: bool = True, delay: float = 1.0) -> None:
        self.enabled = enabled
        self.delay = delay
        self.passes = 0
        self._pending: asyncio.TimerHandle | None = None
        self._full = False  # the next pass collects every generation (the heap was thawed)

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

    def freeze_now(self) -> int:
        """Collect the young generations (every generation after a thaw), then freeze what survived; returns the
        objects frozen in all."""
        self._pending = None
        started = time.perf_counter()
        gc.collect() if self._full else gc.collect(1)
        self._full = False
        gc.freeze()
        self.passes += 1
        frozen = gc.get_freeze_count()
        log.debug("heap frozen: %d objects in all, in %.0f ms", frozen, (time.perf_counter() - started) * 1000)
        return frozen

    def cancel(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
