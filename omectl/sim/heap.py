"""Keep the garbage collector's full passes short in a process that serves simulated clusters.

Each embedded API server holds every stored object and a window of watch events as plain JSON trees: at 10
clusters of fleet_scale's objects that is gigabytes of dicts the collector tracks. A full collection walks all of
them and stops every server of the process while it does, for seconds on a 2-CPU machine: a watch event or a write
answered that much later, which a benchmark timing the controller counts as the controller's latency (the likely
cause of a p99 of 2.6 s at 50 edits/s with the controller and the servers under three quarters of a core each,
387 ms with this in one run; benchmarks/README.md). `freeze_periodically`
collects the young generations and freezes what survived every few seconds, so a full pass walks only what was made
since the last freeze. A frozen object is still freed when its last reference goes (a stored object replaced, an
event leaving the window); only a reference cycle that was alive at a freeze and becomes garbage later is never
reclaimed (stored objects hold none; a request in flight at that moment may), which is the price of the short
passes in a process that lives for a benchmark or a development session.

An in-process controller (`omectl dev up --controller`) freezes the heap itself (`HeapFreezer`), and tests that run
servers beside the controller in one process use neither: only `omectl dev up` without `--controller` runs this.
"""

from __future__ import annotations

import asyncio
import gc

FREEZE_INTERVAL_S = 10.0


def freeze_young_survivors() -> None:
    """Collect generations 0 and 1, freeze every survivor (neither walks the frozen objects: counting them would,
    `gc.get_freeze_count()` walks the whole list)."""
    gc.collect(1)
    gc.freeze()


async def freeze_periodically(interval_s: float = FREEZE_INTERVAL_S) -> None:
    """`freeze_young_survivors` now and every `interval_s` seconds, until cancelled."""
    while True:
        freeze_young_survivors()
        await asyncio.sleep(interval_s)
