"""The controller layer: the work queue that schedules reconciles, and the reconcilers that use it."""

from __future__ import annotations

from omectl.controller.runtime.queue import (
    Clock,
    FakeClock,
    MonotonicClock,
    QueueShutDown,
    Result,
    TerminalError,
    WorkItem,
    WorkKey,
    WorkQueue,
    run_workers,
)

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
