"""The work queue: dedup, per-key serialization, backoff, delays, priorities, fairness, triggers, workers, shutdown."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.controller.runtime.queue import (
    RECONCILE_SHARE_PER_TURN_S,
    FakeClock,
    Lane,
    QueueShutDown,
    Result,
    RetryLater,
    TerminalError,
    WorkItem,
    WorkKey,
    WorkQueue,
    run_workers,
)
from omectl.turn_share import turn_share
from tests.support import LoopTurns, spin

RUNTIME = "ome.io/ServingRuntime"


def key(name: str, cluster: str = "a") -> WorkKey:
    return WorkKey(cluster, RUNTIME, "default", name)


def new_queue(
    clock: FakeClock | None = None,
    *,
    max_concurrency: int = 100,
    max_per_cluster: int | None = None,
    base_delay: float = 0.005,
    max_delay: float = 1000.0,
) -> WorkQueue:
    clock = clock if clock is not None else FakeClock()
    return WorkQueue(
        max_concurrency=max_concurrency,
        max_per_cluster=max_per_cluster,
        clock=clock,
        base_delay=base_delay,
        max_delay=max_delay,
    )


async def take(queue: WorkQueue) -> WorkItem:
    return await asyncio.wait_for(queue.get(), 1.0)


async def settle(predicate: Callable[[], bool], turns: int = 200) -> None:
    """Let other tasks run until `predicate` holds (loop turns, not wall-clock sleeps)."""
    for _ in range(turns):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not reached")


async def test_key_added_several_times_while_waiting_is_processed_once() -> None:
    queue = new_queue()
    for _ in range(3):
        queue.add(key("x"))
    queue.add(key("y"))
    assert len(queue) == 2
    first, second = await take(queue), await take(queue)
    assert [first.key, second.key] == [key("x"), key("y")]
    assert len(queue) == 0


async def test_key_in_flight_is_not_handed_out_again_until_done() -> None:
    queue = new_queue()
    queue.add(key("x"))
    item = await take(queue)
    queue.add(key("x"))
    queue.add(key("x"))
    assert len(queue) == 0
    waiter = asyncio.ensure_future(queue.get())
    await settle(lambda: queue.in_flight == 1)
    for _ in range(10):
        await asyncio.sleep(0)
    assert not waiter.done()
    queue.done(item)
    again = await asyncio.wait_for(waiter, 1.0)
    assert again.key == key("x")
    queue.done(again)
    assert len(queue) == 0


async def test_key_done_without_readd_is_not_processed_again() -> None:
    queue = new_queue()
    queue.add(key("x"))
    queue.done(await take(queue))
    assert len(queue) == 0
    assert queue.in_flight == 0


async def test_backoff_doubles_per_failure_up_to_the_cap_and_forget_resets_it() -> None:
    clock = FakeClock()
    queue = new_queue(clock, base_delay=1.0, max_delay=8.0)
    k = key("x")
    for expected in [1.0, 2.0, 4.0, 8.0, 8.0]:
        queue.add_rate_limited(k)
        clock.advance(expected - 0.01)
        assert len(queue) == 0, f"ready before its {expected}s backoff"
        clock.advance(0.01)
        assert len(queue) == 1, f"not ready after its {expected}s backoff"
        queue.done(await take(queue))
    assert queue.num_requeues(k) == 5
    queue.forget(k)
    assert queue.num_requeues(k) == 0
    queue.add_rate_limited(k)
    clock.advance(1.0)
    assert len(queue) == 1


async def test_a_backoff_floor_delays_early_retries_and_lets_later_ones_grow_past_it() -> None:
    clock = FakeClock()
    queue = new_queue(clock, base_delay=1.0, max_delay=64.0)
    k = key("x")
    for expected in [3.0, 3.0, 4.0, 8.0]:  # max(1, 3), max(2, 3), then the backoff itself
        queue.add_rate_limited(k, floor=3.0)
        clock.advance(expected - 0.01)
        assert len(queue) == 0, f"ready before {expected}s"
        clock.advance(0.01)
        assert len(queue) == 1, f"not ready after {expected}s"
        queue.done(await take(queue))


async def test_a_low_priority_retry_waits_behind_live_work() -> None:
    clock = FakeClock()
    queue = new_queue(clock, base_delay=1.0)
    queue.add_rate_limited(key("retry"), floor=2.0, low_priority=True)
    clock.advance(2.0)
    queue.add(key("live"))
    first, second = await take(queue), await take(queue)
    assert (first.key.name, second.key.name) == ("live", "retry")


def test_default_backoff_runs_from_5ms_to_1000s() -> None:
    queue = WorkQueue(max_concurrency=1, clock=FakeClock())
    delays = [queue.next_backoff(key("x")) for _ in range(25)]
    assert delays[:3] == [0.005, 0.01, 0.02]
    assert all(later == min(2 * earlier, 1000.0) for earlier, later in itertools.pairwise(delays))
    assert delays[-1] == 1000.0
    assert queue.next_backoff(key("y")) == 0.005  # backoff is per item


async def test_retries_count_rate_limited_readds_since_forget() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add(key("x"))
    seen = []
    for _ in range(3):
        item = await take(queue)
        seen.append(item.retries)
        queue.add_rate_limited(item.key)
        queue.done(item)
        clock.advance(10.0)
    assert seen == [0, 1, 2]


async def test_add_after_releases_keys_in_due_order() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add_after(key("late"), 3.0)
    queue.add_after(key("early"), 1.0)
    queue.add_after(key("middle"), 2.0)
    clock.advance(0.5)
    assert len(queue) == 0
    assert queue.delayed == 3
    clock.advance(2.5)
    names = [(await take(queue)).key.name for _ in range(3)]
    assert names == ["early", "middle", "late"]


async def test_add_after_keeps_the_earlier_time_and_add_makes_a_delayed_key_ready_now() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add_after(key("x"), 5.0)
    queue.add_after(key("x"), 1.0)
    queue.add_after(key("x"), 9.0)
    clock.advance(1.0)
    assert len(queue) == 1
    queue.done(await take(queue))
    queue.add_after(key("y"), 100.0)
    queue.add(key("y"))
    assert len(queue) == 1
    assert queue.delayed == 0


async def test_waiting_getter_wakes_when_the_fake_clock_passes_a_delay() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add_after(key("x"), 2.0)
    waiter = asyncio.ensure_future(queue.get())
    await settle(lambda: clock.sleepers == 1)
    clock.advance(1.0)
    for _ in range(10):
        await asyncio.sleep(0)
    assert not waiter.done()
    clock.advance(1.0)
    item = await asyncio.wait_for(waiter, 1.0)
    assert item.key == key("x")
    assert item.enqueued_at == 2.0


async def test_queue_wait_measures_ready_to_taken() -> None:
    clock = FakeClock(start=100.0)
    queue = new_queue(clock)
    queue.add(key("x"))
    clock.advance(2.5)
    item = await take(queue)
    assert item.enqueued_at == 100.0
    assert item.queue_wait == 2.5


async def test_normal_adds_overtake_a_low_priority_backlog() -> None:
    queue = new_queue()
    for i in range(50):
        queue.add(key(f"initial-{i}"), low_priority=True)
    queue.add(key("live-edit"))
    assert (await take(queue)).key == key("live-edit")
    assert (await take(queue)).key == key("initial-0")


async def test_normal_add_promotes_a_key_waiting_at_low_priority() -> None:
    queue = new_queue()
    for i in range(5):
        queue.add(key(f"initial-{i}"), low_priority=True)
    queue.add(key("initial-3"))
    assert len(queue) == 5
    order = [(await take(queue)).key.name for _ in range(5)]
    assert order == ["initial-3", "initial-0", "initial-1", "initial-2", "initial-4"]


async def test_low_priority_add_does_not_demote_a_normal_key() -> None:
    queue = new_queue()
    queue.add(key("other"), low_priority=True)
    queue.add(key("x"))
    queue.add(key("x"), low_priority=True)
    assert (await take(queue)).key == key("x")


async def test_one_cluster_backlog_does_not_starve_another() -> None:
    queue = new_queue()
    for i in range(1000):
        queue.add(key(f"obj-{i}", cluster="a"))
    queue.add(key("only", cluster="b"))
    taken = [(await take(queue)).key for _ in range(2)]
    assert key("only", cluster="b") in taken


async def test_clusters_are_served_round_robin_within_each_priority() -> None:
    queue = new_queue()
    for cluster, count in [("a", 4), ("b", 2), ("c", 1)]:
        for i in range(count):
            queue.add(key(f"{cluster}{i}", cluster=cluster), low_priority=True)
    queue.add(key("b-live", cluster="b"))
    order = [(await take(queue)).key.name for _ in range(8)]
    assert order == ["b-live", "a0", "b0", "c0", "a1", "b1", "a2", "a3"]


async def test_depth_is_reported_per_cluster() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    for i in range(3):
        queue.add(key(f"x{i}", cluster="a"))
    queue.add(key("y", cluster="b"), low_priority=True)
    queue.add_after(key("z", cluster="b"), 5.0)
    assert queue.depth("a") == 3
    assert queue.depth("b") == 1
    assert queue.depths() == {"a": 3, "b": 1}
    assert len(queue) == queue.depth() == 4
    clock.advance(5.0)
    assert queue.depth("b") == 2


async def test_triggers_are_collected_until_the_key_is_taken() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add(key("x"), trigger="event-1")
    queue.add(key("x"))
    queue.add(key("x"), trigger="event-2", low_priority=True)
    queue.add_after(key("x"), 1.0, trigger="event-3")
    item = await take(queue)
    assert item.triggers == ("event-1", "event-2", "event-3")
    queue.add(key("x"), trigger="event-4")
    queue.done(item)
    assert (await take(queue)).triggers == ("event-4",)


async def test_triggers_keep_only_the_newest_when_bounded() -> None:
    queue = WorkQueue(max_concurrency=1, clock=FakeClock(), max_triggers=3)
    for i in range(10):
        queue.add(key("x"), trigger=i)
    assert (await take(queue)).triggers == (7, 8, 9)


async def test_max_concurrency_bounds_items_in_flight() -> None:
    queue = new_queue(max_concurrency=2)
    for i in range(3):
        queue.add(key(f"x{i}"))
    first, _second = await take(queue), await take(queue)
    third = asyncio.ensure_future(queue.get())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not third.done()
    queue.done(first)
    assert (await asyncio.wait_for(third, 1.0)).key == key("x2")


@pytest.mark.parametrize(("workers", "max_concurrency", "bound"), [(4, 100, 4), (6, 3, 3)])
async def test_run_workers_respects_the_concurrency_bound(workers: int, max_concurrency: int, bound: int) -> None:
    queue = new_queue(max_concurrency=max_concurrency)
    for i in range(20):
        queue.add(key(f"x{i}"))
    gate = asyncio.Event()
    running = 0
    peak = 0
    handled: list[WorkKey] = []

    async def handler(item: WorkItem) -> Result:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1
        handled.append(item.key)
        return Result()

    runner = asyncio.ensure_future(run_workers(queue, handler, workers))
    await settle(lambda: running == bound)
    for _ in range(10):
        await asyncio.sleep(0)
    assert running == bound
    assert queue.in_flight == bound
    gate.set()
    await settle(lambda: len(handled) == 20, turns=2000)
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)
    assert peak == bound
    assert sorted(k.name for k in handled) == sorted(f"x{i}" for i in range(20))


async def test_run_workers_retries_failures_with_backoff_and_forgets_on_success() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    attempts: list[int] = []

    async def handler(item: WorkItem) -> Result:
        attempts.append(item.retries)
        if len(attempts) == 1:
            raise RuntimeError("apiserver said no")
        if len(attempts) == 2:
            return Result(error=RuntimeError("reported, not raised"))
        return Result()

    runner = asyncio.ensure_future(run_workers(queue, handler, 2))
    queue.add(key("x"))
    await settle(lambda: len(attempts) == 1 and queue.delayed == 1)
    clock.advance(0.005)
    await settle(lambda: len(attempts) == 2 and queue.delayed == 1)
    clock.advance(0.01)
    await settle(lambda: len(attempts) == 3 and queue.in_flight == 0)
    assert attempts == [0, 1, 2]
    assert queue.num_requeues(key("x")) == 0
    assert queue.delayed == 0
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)


async def test_run_workers_requeues_after_the_requested_delay_and_drops_terminal_errors() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    calls: list[str] = []

    async def handler(item: WorkItem) -> Result:
        calls.append(item.key.name)
        if item.key.name == "broken":
            raise TerminalError("cannot be fixed by retrying")
        return Result(requeue_after=30.0) if len(calls) == 1 else Result()

    runner = asyncio.ensure_future(run_workers(queue, handler, 1))
    queue.add(key("periodic"))
    await settle(lambda: calls == ["periodic"] and queue.delayed == 1)
    clock.advance(29.0)
    assert len(queue) == 0
    clock.advance(1.0)
    await settle(lambda: calls == ["periodic", "periodic"] and queue.in_flight == 0)
    queue.add(key("broken"))
    await settle(lambda: len(calls) == 3 and queue.in_flight == 0)
    assert queue.delayed == 0
    assert len(queue) == 0
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)


async def test_shutdown_wakes_getters_drops_backlog_and_ignores_adds() -> None:
    queue = new_queue()
    waiter = asyncio.ensure_future(queue.get())
    await asyncio.sleep(0)
    queue.add_after(key("later"), 5.0)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(waiter, 1.0)
    queue.add(key("x"))
    assert len(queue) == 0
    assert queue.delayed == 0
    with pytest.raises(QueueShutDown):
        await take(queue)


async def test_drain_waits_for_items_in_flight() -> None:
    queue = new_queue()
    queue.add(key("x"))
    item = await take(queue)
    queue.shutdown()
    drained = asyncio.ensure_future(queue.drain())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not drained.done()
    queue.done(item)
    await asyncio.wait_for(drained, 1.0)
    await asyncio.wait_for(queue.drain(), 1.0)  # nothing in flight: returns at once


async def test_run_workers_returns_after_shutdown_once_in_flight_work_finishes() -> None:
    queue = new_queue()
    started = asyncio.Event()
    release = asyncio.Event()
    finished: list[str] = []

    async def handler(item: WorkItem) -> None:
        started.set()
        await release.wait()
        finished.append(item.key.name)

    runner = asyncio.ensure_future(run_workers(queue, handler, 3))
    queue.add(key("x"))
    await asyncio.wait_for(started.wait(), 1.0)
    queue.shutdown()
    for _ in range(10):
        await asyncio.sleep(0)
    assert not runner.done()
    release.set()
    await asyncio.wait_for(runner, 1.0)
    assert finished == ["x"]


async def test_discard_cluster_drops_its_keys_and_backoff_only() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add(key("x", cluster="gone"))
    queue.add(key("low", cluster="gone"), low_priority=True)
    queue.add_rate_limited(key("retry", cluster="gone"))
    queue.add(key("y", cluster="kept"))
    assert queue.discard_cluster("gone") == 3
    clock.advance(1.0)
    assert queue.depths() == {"kept": 1}
    assert queue.num_requeues(key("retry", cluster="gone")) == 0
    assert (await take(queue)).key == key("y", cluster="kept")


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.sampled_from(["a", "b"]), st.integers(0, 3), st.sampled_from(list(Lane))),
            st.tuples(st.just("get")),
            st.tuples(st.just("done"), st.integers(0, 7)),
        ),
        max_size=60,
    ),
    st.integers(1, 3),
)
def test_queue_matches_a_model_of_dedup_lanes_and_one_in_flight_per_key(
    ops: list[tuple[Any, ...]], max_per_cluster: int
) -> None:
    """Random adds, takes and dones: the queue hands out a key the model says is ready (not in flight, its cluster
    under `max_per_cluster`), from the highest lane any such key waits in."""

    async def scenario() -> None:
        queue = new_queue(max_per_cluster=max_per_cluster)
        lane_of: dict[WorkKey, Lane] = {}  # added and not yet taken: the highest lane it was added in
        in_flight: list[WorkItem] = []
        for op in ops:
            if op[0] == "add":
                k = key(f"k{op[2]}", cluster=op[1])
                queue.add(k, lane=op[3])
                lane_of[k] = min(lane_of.get(k, op[3]), op[3])
            elif op[0] == "get":
                flying = {item.key for item in in_flight}
                assert len(queue) == len(set(lane_of) - flying)
                full = {c for c in "ab" if sum(item.key.cluster == c for item in in_flight) >= max_per_cluster}
                ready = {k: lane for k, lane in lane_of.items() if k not in flying and k.cluster not in full}
                if ready:
                    item = await take(queue)
                    assert item.key in ready
                    assert item.lane == ready[item.key] == min(ready.values())
                    del lane_of[item.key]
                    in_flight.append(item)
            elif in_flight:
                queue.done(in_flight.pop(op[1] % len(in_flight)))
        for item in in_flight:
            queue.done(item)
        assert len(queue) == len(lane_of)

    asyncio.run(scenario())


# --- lanes and per-cluster bounds ----------------------------------------------------------------------------------


async def test_lanes_are_taken_edits_then_chains_then_fan_out_then_resync() -> None:
    queue = new_queue()
    queue.add(key("initial"), lane=Lane.RESYNC)
    queue.add(key("reached"), lane=Lane.FANOUT)
    queue.add(key("child-runtime"), lane=Lane.CHAIN)
    queue.add(key("edited"), lane=Lane.EDIT)
    taken = [await take(queue) for _ in range(4)]
    assert [(item.key.name, item.lane) for item in taken] == [
        ("edited", Lane.EDIT),
        ("child-runtime", Lane.CHAIN),
        ("reached", Lane.FANOUT),
        ("initial", Lane.RESYNC),
    ]


async def test_a_live_edit_overtakes_a_fan_out_of_a_thousand_keys() -> None:
    queue = new_queue(max_concurrency=4)
    for i in range(1000):
        queue.add(key(f"isvc-{i}"), lane=Lane.FANOUT)
    first = [await take(queue) for _ in range(3)]
    queue.add(key("user-edit"))
    item = await take(queue)
    assert item.key == key("user-edit")
    assert item.lane == Lane.EDIT
    assert [i.key.name for i in first] == ["isvc-0", "isvc-1", "isvc-2"]
    assert queue.lane_depths() == {"EDIT": 0, "CHAIN": 0, "FANOUT": 997, "RESYNC": 0}


async def test_an_add_in_a_higher_lane_promotes_a_waiting_key_and_a_lower_one_does_not_demote_it() -> None:
    queue = new_queue()
    for i in range(3):
        queue.add(key(f"r{i}"), lane=Lane.FANOUT)
    queue.add(key("r1"), lane=Lane.EDIT)
    queue.add(key("r2"), lane=Lane.RESYNC)
    assert len(queue) == 3
    order = [((item := await take(queue)).key.name, item.lane) for _ in range(3)]
    assert order == [("r1", Lane.EDIT), ("r0", Lane.FANOUT), ("r2", Lane.FANOUT)]


async def test_a_key_readded_in_flight_in_a_higher_lane_is_ready_there_once_done() -> None:
    queue = new_queue()
    queue.add(key("x"), lane=Lane.RESYNC)
    item = await take(queue)
    queue.add(key("other"), lane=Lane.FANOUT)
    queue.add(key("x"), lane=Lane.RESYNC)
    queue.add(key("x"), lane=Lane.EDIT)
    queue.done(item)
    again = await take(queue)
    assert (again.key, again.lane) == (key("x"), Lane.EDIT)


async def test_an_add_makes_a_delayed_key_ready_in_the_higher_of_its_lanes() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    queue.add_after(key("x"), 5.0, lane=Lane.RESYNC)
    queue.add(key("fan"), lane=Lane.FANOUT)
    queue.add(key("x"), lane=Lane.EDIT)
    assert queue.delayed == 0
    assert (await take(queue)).key == key("x")


async def test_a_cluster_at_its_bound_waits_while_another_cluster_is_served() -> None:
    queue = new_queue(max_concurrency=4, max_per_cluster=2)
    for i in range(10):
        queue.add(key(f"a{i}", cluster="a"))
    a0, a1 = await take(queue), await take(queue)
    third = asyncio.ensure_future(queue.get())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not third.done()  # two of four workers free, but cluster a is at its bound
    queue.add(key("b0", cluster="b"), lane=Lane.RESYNC)
    assert (await asyncio.wait_for(third, 1.0)).key == key("b0", cluster="b")
    queue.done(a0)
    assert (await take(queue)).key == key("a2", cluster="a")
    assert queue.in_flight == 3
    assert a1.key == key("a1", cluster="a")


async def test_a_held_cluster_gathers_its_keys_deduplicated_and_hands_none_out_until_released() -> None:
    queue = new_queue()
    queue.hold("listing")
    for name in ("r0", "r1", "r0"):  # its initial list, a page at a time
        queue.add(key(name, cluster="listing"), lane=Lane.RESYNC)
    queue.add(key("edit", cluster="listing"), lane=Lane.EDIT)  # a live edit while it lists
    queue.add(key("other", cluster="synced"), lane=Lane.RESYNC)
    waiting = asyncio.ensure_future(queue.get())
    assert (await asyncio.wait_for(waiting, 1.0)).key == key("other", cluster="synced")  # others are served
    held = asyncio.ensure_future(queue.get())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not held.done() and queue.is_held("listing")
    assert queue.depth("listing") == 3 and queue.lane_depths() == {"EDIT": 1, "CHAIN": 0, "FANOUT": 0, "RESYNC": 2}
    queue.release("listing")
    taken = [(await asyncio.wait_for(held, 1.0)).key.name, (await take(queue)).key.name, (await take(queue)).key.name]
    assert taken == ["edit", "r0", "r1"]  # the live edit first, then the initial list in its order


def test_the_per_cluster_bound_is_at_least_one_and_at_most_the_queue_bound() -> None:
    with pytest.raises(ValueError, match="max_per_cluster"):
        WorkQueue(max_concurrency=4, max_per_cluster=0)
    assert WorkQueue(max_concurrency=4, max_per_cluster=10).max_per_cluster == 4
    assert WorkQueue(max_concurrency=4).max_per_cluster == 4


async def test_a_discarded_cluster_with_items_in_flight_gets_its_bound_back_as_they_finish() -> None:
    queue = new_queue(max_concurrency=4, max_per_cluster=1)
    queue.add(key("x", cluster="gone"))
    item = await take(queue)
    queue.discard_cluster("gone")
    queue.add(key("y", cluster="gone"))
    queue.done(item)
    assert (await take(queue)).key == key("y", cluster="gone")


async def test_retries_and_requeues_stay_in_the_lane_their_item_was_taken_from() -> None:
    clock = FakeClock()
    queue = new_queue(clock)
    seen: list[tuple[str, Lane]] = []

    async def handler(item: WorkItem) -> Result:
        seen.append((item.key.name, item.lane))
        attempt = sum(name == item.key.name for name, _ in seen)
        if item.key.name == "fails" and attempt == 1:
            raise RuntimeError("apiserver said no")
        if item.key.name == "periodic" and attempt == 1:
            return Result(requeue_after=10.0)
        if item.key.name == "broken" and attempt == 1:
            return Result(error=RetryLater("a parent is missing"), retry_floor=2.0)
        return Result()

    runner = asyncio.ensure_future(run_workers(queue, handler, 1))
    queue.add(key("fails"), lane=Lane.FANOUT)
    queue.add(key("periodic"), lane=Lane.RESYNC)
    queue.add(key("broken"), lane=Lane.EDIT)
    await settle(lambda: len(seen) == 3 and queue.delayed == 3)
    clock.advance(10.0)
    await settle(lambda: len(seen) == 6 and queue.in_flight == 0)
    assert sorted(seen[3:]) == [("broken", Lane.RESYNC), ("fails", Lane.FANOUT), ("periodic", Lane.RESYNC)]
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)


async def test_workers_reserved_for_edits_are_never_taken_by_a_fan_out_or_a_resync() -> None:
    queue = WorkQueue(max_concurrency=3, reserved_for_edits=1, clock=FakeClock())
    for i in range(5):
        queue.add(key(f"reached{i}"), lane=Lane.FANOUT)
    queue.add(key("relisted"), lane=Lane.RESYNC)
    first, second = await take(queue), await take(queue)
    assert [first.lane, second.lane] == [Lane.FANOUT, Lane.FANOUT]
    third = asyncio.ensure_future(queue.get())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not third.done()  # one worker is free, but it is kept for edits
    queue.add(key("edited"), lane=Lane.EDIT)
    edit = await asyncio.wait_for(third, 1.0)
    assert (edit.key.name, edit.lane) == ("edited", Lane.EDIT)
    queue.done(edit)  # an edit done frees no fan-out capacity: the fan-out still holds two of two
    after_edit = asyncio.ensure_future(queue.get())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not after_edit.done()
    queue.done(first)  # a fan-out done makes room for the next fan-out key
    assert (await asyncio.wait_for(after_edit, 1.0)).key.name == "reached2"
    with pytest.raises(ValueError, match="reserved_for_edits"):
        WorkQueue(max_concurrency=2, reserved_for_edits=2)


async def test_workers_report_each_reconciles_longest_step_and_only_real_suspensions_end_a_step() -> None:
    queue = new_queue()
    reported: list[tuple[str, float]] = []
    held: dict[str, float] = {}

    async def returns_at_once() -> None:
        return None

    def busy(name: str) -> None:
        held[name] = held.get(name, 0.0) + spin(0.002)

    async def handler(item: WorkItem) -> None:
        busy(item.key.name)
        await returns_at_once()  # no suspension: the step goes on
        busy(item.key.name)
        await asyncio.sleep(0)  # a suspension: the next step starts here

    runner = asyncio.ensure_future(
        run_workers(queue, handler, 2, on_step=lambda i, s: reported.append((i.key.name, s)))
    )
    queue.add(key("x"))
    queue.add(key("y"))
    await settle(lambda: len(reported) == 2)
    assert sorted(name for name, _ in reported) == ["x", "y"]
    for name, longest in reported:
        assert longest >= held[name]  # both busy spells fell in one step
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)


async def test_a_worker_lets_the_loop_run_between_reconciles_that_never_suspend() -> None:
    queue = new_queue()
    seen: list[int] = []

    async def nothing_to_write(item: WorkItem) -> None:
        seen.append(turns.now)  # no await: the reconcile runs to its end in one step

    for i in range(20):
        queue.add(key(f"unchanged{i}"))
    turns = LoopTurns()
    runner = asyncio.ensure_future(run_workers(queue, nothing_to_write, 1))
    await settle(lambda: len(seen) == 20)
    assert all(later > earlier for earlier, later in itertools.pairwise(seen))  # the loop turned between each two
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)
    turns.stop()


async def test_workers_start_no_reconcile_but_an_edit_in_a_loop_turn_whose_share_their_steps_have_spent() -> None:
    queue = new_queue()
    for i in range(48):
        queue.add(key(f"x{i}"), lane=Lane.FANOUT)  # a rollout's fan-out (a user's edit never waits: below)
    steps_in: dict[int, list[float]] = {}  # loop turn -> the seconds of each reconcile step run in it, in order
    handled: list[str] = []

    async def handler(item: WorkItem) -> Result:  # one step of 5 ms: a render, say
        steps_in.setdefault(turns.now, []).append(spin(0.005))
        handled.append(item.key.name)
        return Result()

    turns = LoopTurns()
    runner = asyncio.ensure_future(run_workers(queue, handler, 8, on_step=lambda item, longest: None))
    await settle(lambda: len(handled) == 48, turns=2000)
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)
    # eight workers, each starting a reconcile whenever it resumes: in every turn, each step but the last began
    # within the share (the first turn, before any step was timed, excepted: each worker's first reconcile)
    later = [steps for _, steps in sorted(steps_in.items())[1:]]
    assert later and max(sum(steps[:-1]) for steps in later) < RECONCILE_SHARE_PER_TURN_S
    # the same reconciles as users' edits: each worker starts one whenever it resumes, share or not
    steps_in.clear()
    handled.clear()
    queue = new_queue()
    for i in range(48):
        queue.add(key(f"x{i}"), lane=Lane.EDIT)
    runner = asyncio.ensure_future(run_workers(queue, handler, 8, on_step=lambda item, longest: None))
    await settle(lambda: len(handled) == 48, turns=2000)
    queue.shutdown()
    await asyncio.wait_for(runner, 1.0)
    turns.stop()
    assert max(len(steps) for steps in steps_in.values()) == 8


async def test_a_worker_stopped_while_it_waits_for_the_share_leaves_its_key_no_longer_in_flight() -> None:
    queue = new_queue()
    queue.add(key("rollout"), lane=Lane.FANOUT)
    share = turn_share("reconciles", RECONCILE_SHARE_PER_TURN_S)
    share.spent = float("inf")  # this turn's share spent, and no reset queued: the worker waits until stopped
    runner = asyncio.ensure_future(run_workers(queue, lambda item: asyncio.sleep(0), 1))
    try:
        await settle(lambda: queue.in_flight == 1 and len(queue) == 0)
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner
    finally:
        share.spent = 0.0
    assert queue.in_flight == 0
