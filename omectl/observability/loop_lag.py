"""How late the event loop runs what is due: a task asks to sleep `interval` seconds, again and again, and each
time reports how much longer than that it slept. A render or an index rebuild that holds the loop shows up here
(and in `/healthz` answering late) before anything else does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

__all__ = ["LoopLagMonitor"]


class LoopLagMonitor:
    """Reports each wake-up's lag (seconds past the requested interval, never below 0) to `observe`."""

    def __init__(
        self,
        observe: Callable[[float], None],
        *,
        interval: float = 0.05,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be above 0")
        self.observe = observe
        self.interval = interval
        self.clock = clock
        self.sleep = sleep
        self.worst = 0.0
        """The largest lag seen so far."""

    async def run(self) -> None:
        """Measure until cancelled."""
        while True:
            asked = self.clock()
            await self.sleep(self.interval)
            lag = max(0.0, self.clock() - asked - self.interval)
            self.worst = max(self.worst, lag)
            self.observe(lag)
