"""`omectl dev up` keeps its stored objects out of the collector's full passes (`omectl/sim/heap.py`).

Run in a fresh interpreter: freezing is process-wide, and the test process's own heap must stay as pytest left it."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def test_what_survives_a_pass_is_frozen_and_a_full_collection_walks_only_what_came_after() -> None:
    script = textwrap.dedent(
        """
        import asyncio, gc
        from omectl.sim.heap import freeze_periodically, freeze_young_survivors

        stored = [{"metadata": {"name": f"obj-{i}"}, "spec": {"replicas": i}} for i in range(50_000)]
        freeze_young_survivors()
        frozen = gc.get_freeze_count()
        assert frozen >= len(stored), frozen  # each stored object (dicts of atomic values only are never tracked)
        assert all(stored[0] is not o for o in gc.get_objects(generation=2))
        later = [{"made": i} for i in range(1_000)]
        walked = len(gc.get_objects(generation=0)) + len(gc.get_objects(generation=1)) + len(
            gc.get_objects(generation=2)
        )
        assert walked < len(stored), walked  # a full pass now walks what came after, not the stored objects
        del stored[:25_000]  # frozen objects are still freed when their last reference goes
        assert gc.get_freeze_count() < frozen

        async def twice():
            task = asyncio.create_task(freeze_periodically(0.01))
            before = gc.get_freeze_count()
            while gc.get_freeze_count() <= before:  # the next pass freezes `later` too
                await asyncio.sleep(0.01)
            task.cancel()

        asyncio.run(asyncio.wait_for(twice(), 10))
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
