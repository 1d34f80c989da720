"""The child process of `benchmarks.memory_phases`: `omectl run`, measuring its own memory on each SIGUSR1.

Run as a script (`python benchmarks/memory_phases_child.py DUMP_DIR run ARGS...`) with `omectl` importable from the
checkout under test: like `memory_probe.py` (whose allocator readers it uses) it imports nothing from `benchmarks`,
so another checkout's omectl runs under the same code. `omectl` runs exactly as `python -m omectl ARGS...`; each
SIGUSR1 writes `DUMP_DIR/N.json` (N counting from 1) after a full collection: the RSS, before and after glibc's
`malloc_trim(0)`, CPython's and glibc's allocators, and the live objects the collector tracks, by type. The signal
is handled between two bytecodes of the main thread, on the event loop's turn: the controller pauses meanwhile.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import memory_probe  # beside this file: the script's directory is the first entry of sys.path
import orjson

TYPES_KEPT = 60  # the most numerous types of tracked objects written per dump


def measure() -> dict[str, Any]:
    gc.collect()
    objects = gc.get_objects()
    types = Counter(type(obj).__name__ for obj in objects)
    result: dict[str, Any] = {
        "rss": memory_probe.rss(),
        "pymalloc": memory_probe.pymalloc_stats(),
        "malloc": memory_probe.malloc_stats(memory_probe._libc()),
        "gc_objects": len(objects),
        "gc_types": dict(types.most_common(TYPES_KEPT)),
    }
    del objects
    libc = memory_probe._libc()
    if libc is not None:
        libc.malloc_trim(0)
    result["rss_after_trim"] = memory_probe.rss()
    return result


def main() -> int:
    dumps = Path(sys.argv[1])
    count = 0

    def dump(signum: int, frame: Any) -> None:
        nonlocal count
        count += 1
        written = dumps / f"{count}.json"
        written.with_suffix(".tmp").write_bytes(orjson.dumps(measure()))
        os.replace(written.with_suffix(".tmp"), written)  # the driver never reads half a file

    signal.signal(signal.SIGUSR1, dump)
    from omectl.cli import main as omectl_main

    sys.argv = ["omectl", *sys.argv[2:]]
    omectl_main()  # exits through SystemExit with omectl's own code
    return 0


if __name__ == "__main__":
    sys.exit(main())
