"""The heap is frozen after start, after each cluster's sync and after each full collection: requests close together
make one pass, the collector skips what was frozen, and every so often a full pass thaws it so that what died frozen
is collected. Workers are kept for the edit lane: one in eight by default, as many as set."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable

import pytest

from omectl.controller.runtime.heap import HeapFreezer
from omectl.controller.runtime.manager import FleetController, default_edit_workers
from omectl.controller.runtime.registry import WorkKinds
from omectl.settings import Settings


class Node:
    me: Node | None = None


async def test_requests_close_together_make_one_pass_that_freezes_what_is_held_until_thawed() -> None:
    freezer = HeapFreezer(enabled=True, delay=0.01)
    held = [{"spec": {"containers": [{"name": f"c{i}"}]}} for i in range(1000)]  # a cache's worth of objects
    try:
        freezer.request()
        freezer.request()  # another cluster synced within the delay: the same pass
        while freezer.passes == 0:  # noqa: ASYNC110 (the pass is a timer callback: nothing to await)
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        assert freezer.passes == 1
        assert gc.get_freeze_count() >= len(held)
        walked = {id(obj) for obj in gc.get_objects()}  # what a collection walks: the frozen objects are not in it
        assert gc.is_tracked(held[0]) and id(held[0]) not in walked and id(held[-1]["spec"]) not in walked
        informer = Node()
        informer.me = informer  # alive at the freeze, garbage in a cycle later (a removed cluster's informers)
        gone = weakref.ref(informer)
        freezer.freeze_now()
        del informer
        gc.collect()
        assert gone() is not None  # frozen: the collector never looks at it
        freezer.thaw(refreeze=False)  # a cluster removed, or the controller stopped
        gc.collect()
        assert gone() is None and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
    off = HeapFreezer(enabled=False, delay=0.0)
    off.request()
    await asyncio.sleep(0.01)
    assert off.passes == 0


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = asyncio.get_running_loop().time() + 5
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"never: {what}")
        await asyncio.sleep(0.01)  # the freezer runs from a loop callback: nothing to await


async def test_the_survivors_of_a_full_collection_are_frozen_at_its_end_so_the_next_one_skips_them() -> None:
    freezer = HeapFreezer(enabled=True, delay=60.0, reclaim_every=3600.0)
    freezer.start()
    try:
        held = [{"metadata": {"labels": [f"l{i}"]}} for i in range(1000)]  # cached objects an edit replaced
        assert id(held[0]) in {id(obj) for obj in gc.get_objects()}
        # Full passes of the interpreter's (it makes them itself when the old generation has grown), two in one
        # loop turn as when many clusters' first lists arrive together: each freezes its survivors before the
        # loop runs anything again, so the second walks only what came after the first.
        gc.collect()
        assert freezer.passes == 1
        walked = {id(obj) for obj in gc.get_objects()}
        assert id(held[0]) not in walked and id(held[-1]["metadata"]) not in walked
        later = [{"metadata": {"labels": [f"m{i}"]}} for i in range(1000)]
        gc.collect()
        assert freezer.passes == 2 and id(later[0]) not in {id(obj) for obj in gc.get_objects()}
        assert freezer.reclaims == 0
        gc.collect(1)  # a young collection is no full pass: nothing to freeze after it
        await asyncio.sleep(0.05)
        assert freezer.passes == 2
    finally:
        freezer.stop()
        gc.unfreeze()
    gc.collect()
    await asyncio.sleep(0.05)
    assert freezer.passes == 2  # stopped: the interpreter's passes are its own again


async def test_a_full_collection_past_the_reclaim_interval_thaws_the_heap_so_frozen_cycles_are_collected() -> None:
    freezer = HeapFreezer(enabled=True, delay=0.01, reclaim_every=3600.0)
    freezer.start()
    try:
        connection = Node()
        connection.me = connection  # alive at a freeze, garbage in a cycle later (a closed watch's connection)
        gone = weakref.ref(connection)
        gc.collect()
        del connection
        gc.collect()
        assert freezer.passes == 2 and gone() is not None  # frozen: no pass looks at it
        freezer.reclaim_every = 0.0  # the interval has passed
        gc.collect()
        await wait_for(lambda: freezer.reclaims == 1 and freezer.passes == 3, "a reclaim, then a pass")
        assert gone() is None  # the reclaiming pass collected every generation
        assert gc.get_freeze_count() > 0  # and froze what survived it
    finally:
        freezer.stop()
        gc.unfreeze()


def test_edit_workers_default_to_one_in_eight_and_stay_below_the_concurrency() -> None:
    assert [default_edit_workers(n) for n in (1, 2, 7, 8, 16, 64)] == [0, 0, 0, 1, 2, 8]
    assert FleetController(WorkKinds(), resolver=None).queue.reserved_for_edits == 2  # type: ignore[arg-type]
    assert FleetController(WorkKinds(), None, edit_workers=0).queue.reserved_for_edits == 0  # type: ignore[arg-type]
    assert Settings(concurrency=4, edit_workers=3).edit_workers == 3
    with pytest.raises(ValueError, match="edit_workers"):
        Settings(concurrency=4, edit_workers=4)
