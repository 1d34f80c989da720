"""omectl/background.py: a task group held open from the first spawn to `stop`, and a companion beside a block."""

from __future__ import annotations

import asyncio
import logging
import warnings

import pytest

from omectl.background import BackgroundTasks, alongside


async def test_stop_cancels_every_task_and_returns_once_each_has_ended() -> None:
    tasks = BackgroundTasks("t")
    ended: list[str] = []
    started = asyncio.Event()

    async def forever(name: str) -> None:
        try:
            started.set()
            await asyncio.Event().wait()
        finally:
            await asyncio.sleep(0)  # an awaiting cleanup: stop waits for it too
            ended.append(name)

    before = asyncio.all_tasks()
    tasks.spawn(forever("a"), "a")
    tasks.spawn(forever("b"), "b")
    await started.wait()
    assert {t.get_name() for t in asyncio.all_tasks() - before} == {"a", "b", "t-tasks"}
    assert len(tasks) == 2
    await tasks.stop()
    assert sorted(ended) == ["a", "b"]
    assert len(tasks) == 0
    assert [t for t in asyncio.all_tasks() - before if not t.done()] == []


async def test_work_spawned_and_stopped_before_it_ran_is_closed_never_left_unawaited() -> None:
    tasks = BackgroundTasks("t")
    ran: list[str] = []

    async def work() -> None:
        ran.append("ran")

    before = asyncio.all_tasks()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine ... was never awaited" would be a RuntimeWarning
        tasks.spawn(work(), "early")
        await tasks.stop()
    assert ran == []
    assert [t for t in asyncio.all_tasks() - before if not t.done()] == []


async def test_a_failing_task_is_logged_and_its_siblings_keep_running(caplog: pytest.LogCaptureFixture) -> None:
    tasks = BackgroundTasks("t")
    sibling_alive = asyncio.Event()
    release = asyncio.Event()

    async def fails() -> None:
        raise ValueError("broken")

    async def sibling() -> None:
        await release.wait()
        sibling_alive.set()

    caplog.set_level(logging.ERROR, logger="omectl.background")
    tasks.spawn(sibling(), "sibling")
    tasks.spawn(fails(), "fails")
    async with asyncio.timeout(10):
        while len(tasks) == 2:  # noqa: ASYNC110 - the count drops when `fails` ends
            await asyncio.sleep(0)
    release.set()
    await asyncio.wait_for(sibling_alive.wait(), 10)
    await tasks.stop()
    failures = [r for r in caplog.records if r.exc_info]
    assert [r.getMessage() for r in failures] == ["t: background task fails failed"]
    assert isinstance(failures[0].exc_info[1], ValueError)  # type: ignore[index]


async def test_stop_with_a_grace_lets_finishing_work_end_and_cancels_the_rest() -> None:
    tasks = BackgroundTasks("t")
    outcome: dict[str, str] = {}
    go = asyncio.Event()

    async def finishes() -> None:
        await go.wait()
        outcome["finishes"] = "done"

    async def never() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            outcome["never"] = "cancelled"
            raise

    tasks.spawn(finishes(), "finishes")
    tasks.spawn(never(), "never")
    await asyncio.sleep(0)
    asyncio.get_running_loop().call_soon(go.set)
    await tasks.stop(grace=0.2)
    assert outcome == {"finishes": "done", "never": "cancelled"}


async def test_a_stopped_group_opens_again_on_the_next_spawn() -> None:
    tasks = BackgroundTasks("t")
    done = asyncio.Event()

    async def work() -> None:
        done.set()

    await tasks.stop()  # nothing spawned yet: nothing to do
    tasks.spawn(asyncio.Event().wait(), "first")
    await tasks.stop()
    tasks.spawn(work(), "second")
    await asyncio.wait_for(done.wait(), 10)
    await tasks.stop()


async def test_alongside_cancels_its_companion_when_the_block_ends() -> None:
    companion_cancelled = asyncio.Event()

    async def companion() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            companion_cancelled.set()
            raise

    async with alongside(companion, "companion"):
        await asyncio.sleep(0)
    assert companion_cancelled.is_set()


async def test_alongside_raises_the_blocks_exception_as_raised() -> None:
    with pytest.raises(KeyError, match="from the block"):
        async with alongside(asyncio.Event().wait, "companion"):
            raise KeyError("from the block")


async def test_alongside_cancels_the_block_when_the_companion_fails_and_raises_its_exception() -> None:
    block_cancelled = False

    async def companion() -> None:
        raise ValueError("from the companion")

    with pytest.raises(ValueError, match="from the companion"):
        async with alongside(companion, "companion"):
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                block_cancelled = True
                raise
    assert block_cancelled
