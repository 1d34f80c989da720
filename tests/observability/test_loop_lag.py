"""The event-loop lag monitor (omectl/observability/loop_lag.py) on a fake clock: each wake-up reports how much
longer than asked the sleep took, never a negative lag."""

from __future__ import annotations

import asyncio

import pytest

from omectl.observability.loop_lag import LoopLagMonitor
from omectl.observability.metrics import ControllerMetrics


class ScriptedLoop:
    """A clock and a sleep: the n-th sleep takes `durations[n]` seconds of the clock; after the last one the
    monitor is stopped (the sleep raises CancelledError, as a cancelled task's would)."""

    def __init__(self, durations: list[float]) -> None:
        self.now = 100.0
        self.durations = list(durations)
        self.asked: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        if not self.durations:
            raise asyncio.CancelledError
        self.now += self.durations.pop(0)


async def test_each_wake_up_reports_the_time_past_the_interval() -> None:
    lags: list[float] = []
    loop = ScriptedLoop([0.05, 0.3, 0.0501, 0.04])
    monitor = LoopLagMonitor(lags.append, interval=0.05, clock=loop.clock, sleep=loop.sleep)
    with pytest.raises(asyncio.CancelledError):
        await monitor.run()
    assert loop.asked == [0.05] * 5
    assert lags == pytest.approx([0.0, 0.25, 0.0001, 0.0])  # a sleep cut short is no negative lag
    assert monitor.worst == pytest.approx(0.25)


def test_the_interval_must_be_above_zero() -> None:
    with pytest.raises(ValueError, match="interval"):
        LoopLagMonitor(lambda lag: None, interval=0)


def test_lags_land_in_the_histogram_exported_on_metrics() -> None:
    metrics = ControllerMetrics()
    for lag in (0.0005, 0.02, 1.5):
        metrics.observe_loop_lag(lag)
    text = metrics.exposition().decode()
    assert 'omectl_event_loop_lag_seconds_bucket{le="0.001"} 1.0' in text
    assert 'omectl_event_loop_lag_seconds_bucket{le="0.025"} 2.0' in text
    assert 'omectl_event_loop_lag_seconds_bucket{le="+Inf"} 3.0' in text
    assert "omectl_event_loop_lag_seconds_count 3.0" in text
