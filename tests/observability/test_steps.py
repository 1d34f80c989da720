"""Each step of a coroutine timed: its longest hold of the event loop, errors and cancellation passed through, and
the code of a step past the slow threshold named."""

from __future__ import annotations

import asyncio

import pytest

from omectl.observability.steps import SlowSteps, timed_steps
from tests.support import spin


async def test_the_result_and_the_longest_step_are_reported_once() -> None:
    reports: list[float] = []

    async def two_steps() -> str:
        await asyncio.sleep(0)
        spin(0.003)
        return "done"

    assert await timed_steps(two_steps(), reports.append) == "done"
    assert len(reports) == 1 and reports[0] >= 0.003


async def test_an_error_and_a_cancellation_reach_the_inner_coroutine_and_the_report_is_still_made() -> None:
    reports: list[float] = []
    cleaned: list[str] = []

    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("apiserver said no")

    with pytest.raises(ValueError, match="apiserver said no"):
        await timed_steps(fails(), reports.append)

    waiting = asyncio.Event()

    async def waits() -> None:
        try:
            waiting.set()
            await asyncio.Event().wait()
        finally:
            cleaned.append("finally")

    task = asyncio.ensure_future(timed_steps(waits(), reports.append))
    await waiting.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally"] and len(reports) == 2


async def test_a_slow_step_is_recorded_with_where_it_resumed_and_suspended() -> None:
    slow = SlowSteps(threshold=0.005)

    async def holds_between_awaits() -> None:
        await asyncio.sleep(0)
        spin(0.01)
        await asyncio.sleep(0)

    await timed_steps(holds_between_awaits(), lambda _: None, slow, "cluster:kind:name")
    [step] = slow.steps
    assert step.label == "cluster:kind:name" and step.seconds >= 0.01
    assert "holds_between_awaits" in step.resumed_at and "holds_between_awaits" in step.suspended_at
    assert step.resumed_at != step.suspended_at  # two different lines: the code between them held the loop


async def test_the_sampling_thread_names_the_function_that_holds_the_loop() -> None:
    slow = SlowSteps(threshold=0.02, sample_every=0.002)
    slow.start()
    try:

        async def renders() -> None:
            await asyncio.sleep(0)
            deep_render()

        def deep_render() -> None:
            spin(0.05)

        await timed_steps(renders(), lambda _: None, slow, "render")
    finally:
        slow.stop()
    render = next(step for step in slow.steps if step.label == "render")
    assert render.samples and any("deep_render" in frame for stack in render.samples for frame in stack)
