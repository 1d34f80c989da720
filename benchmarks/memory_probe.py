"""The child process of `benchmarks.memory_breakdown`: the controller as `omectl run` builds it, measured once idle.

Run as a script (`python benchmarks/memory_probe.py CONFIG.json`) with `omectl` importable from the checkout under
test: it imports nothing from `benchmarks`, so a `--before` checkout's omectl can be measured by the same code. It
starts `ControllerApp` on the clusters of a clusters directory, waits until every cache is synced, every engine
Deployment it expects is cached and the work queue is idle, and writes to the config's `out`:

- `rss`, `peak_rss` (VmHWM) and `rss_after_trim` (after glibc's `malloc_trim(0)`: what the C allocator held free);
- `pymalloc`: CPython's small-object allocator (`sys._debugmallocstats`): arenas, bytes in live blocks and free
  blocks of partly used pools (memory a freed object leaves that only another small object can use);
- `malloc`: glibc's `mallinfo2` (bytes in use, free in the heap, mmapped);
- `cpu_s`: the process's CPU seconds until then;
- `kinds`: per informer kind, the objects and their bytes by field path and by type (`field_bytes`), and what one
  string object per distinct value would save (`string_sharing`);
- `holders`: bytes reachable from the controller by attribute path (`holder_bytes`), the caches walked first;
- with `tracemalloc_frames` > 0: `traced` and `traced_peak` (tracemalloc's), `sites` (live bytes by allocation site:
  the innermost omectl frame) at the end, and `mid_traced`, `mid_sites` halfway (half the Deployments cached).

The walks count live objects (`sys.getsizeof`, each object once) and are deterministic; RSS and the allocators'
figures move by a few per cent between runs.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import ctypes
import gc
import os
import sys
import tempfile
import time
import tracemalloc
import types
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson
import psutil

FIELD_DEPTH = 2  # `metadata.labels`, `status.conditions`: deeper fields count toward these
HOLDER_DEPTH = 6  # attribute names in a holder's path; deeper attributes count toward it
_ATOMS = (str, bytes, int, float, bool, type(None))
_NOT_DATA = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.MethodType,
    types.BuiltinFunctionType,
    types.CodeType,
    types.FrameType,
    types.CoroutineType,
    types.GeneratorType,
    asyncio.Future,
    asyncio.AbstractEventLoop,
)
_LIBRARIES = ("asyncio", "aiohttp", "ssl", "logging", "opentelemetry", "concurrent", "socket", "threading")


# --- walking the heap ------------------------------------------------------------------------------------------


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    """(step, child) of a container or an instance: items as `[]`, attributes by name."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield "[]", key
            yield "[]", value
    elif isinstance(obj, list | tuple | set | frozenset | collections.deque):
        for item in obj:
            yield "[]", item
    else:
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict):
            yield from ((f".{k}", v) for k, v in attrs.items())
        for cls in type(obj).__mro__:
            for slot in getattr(cls, "__slots__", ()):
                if isinstance(slot, str) and slot != "__dict__" and hasattr(obj, slot):
                    yield f".{slot}", getattr(obj, slot)


def holder_bytes(roots: Iterable[tuple[str, Any]], seen: set[int]) -> Counter[str]:
    """Bytes reachable from each root, by the path of attributes (at most `HOLDER_DEPTH`) that first reached them;
    code, classes, modules, tasks and library objects (sockets, the loop, the tracer) are not followed."""
    sizes: Counter[str] = Counter()
    stack: list[tuple[Any, str, int]] = [(obj, label, 0) for label, obj in roots]
    while stack:
        obj, label, depth = stack.pop()
        if id(obj) in seen or isinstance(obj, _NOT_DATA) or type(obj).__module__.startswith(_LIBRARIES):
            continue
        seen.add(id(obj))
        sizes[label] += sys.getsizeof(obj)
        if isinstance(obj, _ATOMS):
            continue
        for step, child in _children(obj):
            if step == "[]":
                stack.append((child, label if label.endswith("[]") else label + "[]", depth))
            elif depth < HOLDER_DEPTH:
                stack.append((child, label + step, depth + 1))
            else:
                stack.append((child, label, depth))
    return sizes


def field_bytes(objects: Iterable[Any], seen: set[int]) -> tuple[Counter[str], Counter[str]]:
    """Bytes of cached objects by field path (`FIELD_DEPTH` deep; a dict's keys count toward the field they name)
    and by type; each Python object once (a string shared among objects counts once, for the first)."""
    by_field: Counter[str] = Counter()
    by_type: Counter[str] = Counter()
    stack: list[tuple[Any, str]] = [(obj, "(object)") for obj in objects]
    while stack:
        obj, path = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        size = sys.getsizeof(obj)
        by_field[path] += size
        by_type[type(obj).__name__] += size
        if isinstance(obj, dict):
            for key, value in obj.items():
                child = key if path == "(object)" else f"{path}.{key}" if path.count(".") < FIELD_DEPTH - 1 else path
                stack.append((key, child))
                stack.append((value, child))
        elif isinstance(obj, list | tuple):
            stack.extend((item, path) for item in obj)
        elif not isinstance(obj, _ATOMS):
            stack.extend((child, path) for _, child in _children(obj))
    return by_field, by_type


def string_sharing(objects: Iterable[Any]) -> dict[str, Any]:
    """Of the string values (not keys) in cached objects: their bytes, the bytes were every equal value one object,
    and the field paths whose equal values cost most (what sharing them would save)."""
    objs: dict[int, tuple[str, str]] = {}  # id -> (value, path): each string object once
    stack: list[tuple[Any, str]] = [(obj, "") for obj in objects]
    while stack:
        obj, path = stack.pop()
        if isinstance(obj, dict):
            stack.extend((v, f"{path}.{k}" if path.count(".") < 3 else path) for k, v in obj.items())
        elif isinstance(obj, list | tuple):
            stack.extend((item, path + "[]") for item in obj)
        elif isinstance(obj, str):
            objs[id(obj)] = (obj, path)
    total = sum(sys.getsizeof(v) for v, _ in objs.values())
    distinct: dict[str, int] = {}
    saved_by_path: Counter[str] = Counter()
    for value, path in objs.values():
        if value in distinct:
            saved_by_path[path] += sys.getsizeof(value)
        else:
            distinct[value] = 1
    shared = sum(sys.getsizeof(v) for v in distinct)
    return {"bytes": total, "bytes_if_shared": shared, "saved_by_path": dict(saved_by_path.most_common(12))}


# --- the allocators --------------------------------------------------------------------------------------------


def pymalloc_stats() -> dict[str, int]:
    """CPython's small-object allocator, as `sys._debugmallocstats` prints it (to the C stderr)."""
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    wanted = {
        "# arenas allocated current": "arenas",
        "# arenas highwater mark": "arenas_highwater",
        "# bytes in allocated blocks": "live_bytes",
        "# bytes in available blocks": "free_block_bytes",
    }
    stats: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if name.strip() in wanted:
            stats[wanted[name.strip()]] = int(value.strip().replace(",", ""))
        elif "unused pools *" in name:
            stats["unused_pool_bytes"] = int(value.strip().replace(",", ""))
        elif name.strip() == "Total" and "total_bytes" not in stats:
            stats["total_bytes"] = int(value.strip().replace(",", ""))
    return stats


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def _libc() -> Any:
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = _MallInfo2
        return libc
    return None


def malloc_stats(libc: Any) -> dict[str, int]:
    """glibc's heap: bytes in use, free inside the heap, and in mmapped chunks (`mallinfo2`)."""
    if libc is None:
        return {}
    info = libc.mallinfo2()
    return {
        "heap_bytes": info.arena,
        "in_use_bytes": info.uordblks,
        "free_bytes": info.fordblks,
        "mmapped_bytes": info.hblkhd,
    }


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def peak_rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


# --- allocation sites ------------------------------------------------------------------------------------------


def site_of(traceback: tracemalloc.Traceback, package: str) -> str:
    """The innermost frame in omectl (`omectl/kube/client.py:123 (function)`), else the innermost frame's file."""
    for frame in reversed(traceback):  # the most recent call last
        if frame.filename.startswith(package):
            return f"omectl/{frame.filename[len(package) :]}:{frame.lineno}"
    parts = Path(traceback[-1].filename).parts
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1 :][:2])
    return Path(traceback[-1].filename).name


def bytes_by_site(snapshot: tracemalloc.Snapshot, package: str) -> Counter[str]:
    sizes: Counter[str] = Counter()
    for stat in snapshot.statistics("traceback"):
        sizes[site_of(stat.traceback, package)] += stat.size
    return sizes


# --- the controller --------------------------------------------------------------------------------------------


async def _until(condition: Any, what: str, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"memory_probe: {what} not reached within {deadline_s:.0f} s")
        await asyncio.sleep(0.2)  # the controller runs on this loop; a probe may poll


async def probe(config: dict[str, Any]) -> dict[str, Any]:
    import omectl
    from omectl.controller.app import ControllerApp
    from omectl.controller.ome.watch import OmeWatch
    from omectl.settings import Settings

    with contextlib.suppress(ImportError):  # what `omectl run` sets before it starts, where the checkout has it
        from omectl.malloc import hold_mmap_threshold

        hold_mmap_threshold()
    package = str(Path(omectl.__file__).parent) + "/"
    libc = _libc()
    workdir = Path(config["workdir"])
    frames = int(config.get("tracemalloc_frames", 0))
    if frames:
        tracemalloc.start(frames)
    started = time.perf_counter()
    settings = Settings.load(
        webhook_port=0,
        metrics_port=0,
        install_webhooks=False,
        clusters_dir=Path(config["clusters_dir"]),
        trace_file=workdir / f"{config['label']}.traces.jsonl",
    )
    app = ControllerApp(settings)
    await app.start()
    try:
        await app.wait_synced(600)
        watches = [c.watch(OmeWatch) for c in app.controller.clusters.values()]
        deployments = int(config["deployments"])
        mid: tracemalloc.Snapshot | None = None
        if frames and deployments:  # halfway through the cold start: what it holds only while it runs
            await _until(lambda: sum(len(w.deployments.cache) for w in watches) >= deployments // 2, "half", 600)
            mid = tracemalloc.take_snapshot()
        await _until(lambda: sum(len(w.deployments.cache) for w in watches) >= deployments, "Deployments", 600)
        queue = app.controller.queue
        for _ in range(2):  # idle twice, a second apart: the watch events of the last status writes handled too
            await _until(lambda: not queue.depth() and not queue.in_flight, "an idle queue", 600)
            await asyncio.sleep(1.0)
        elapsed = time.perf_counter() - started
        times = psutil.Process().cpu_times()
        gc.collect()
        result: dict[str, Any] = {"cold_s": round(elapsed, 2), "cpu_s": round(times.user + times.system, 2)}
        result.update(peak_rss=peak_rss(), rss=rss())
        result["pymalloc"] = pymalloc_stats()
        result["malloc"] = malloc_stats(libc)
        result["gc_objects"] = len(gc.get_objects())
        trimmed = libc.malloc_trim(0) if libc is not None else None
        result["rss_after_trim"] = rss() if trimmed is not None else 0
        snapshot = tracemalloc.take_snapshot() if frames else None
        if snapshot is not None:
            result["traced"] = sum(s.size for s in snapshot.statistics("filename"))
            result["tracemalloc_overhead"] = tracemalloc.get_tracemalloc_memory()
            result["traced_peak"] = tracemalloc.get_traced_memory()[1]
            if mid is not None:
                result["mid_traced"] = sum(s.size for s in mid.statistics("filename"))
                result["mid_sites"] = bytes_by_site(mid, package)
            tracemalloc.stop()
        seen: set[int] = set()
        kinds: dict[str, dict[str, Any]] = {}
        for watch in watches:
            for informer in watch.informers:
                row = kinds.setdefault(informer.resource.kind, {"objects": 0, "fields": Counter(), "types": Counter()})
                row["objects"] += len(informer.cache)
                by_field, by_type = field_bytes(informer.cache.list(), seen)
                rest = holder_bytes([("(key maps, indexes)", vars(informer.cache))], seen)
                row["fields"].update(by_field)
                row["fields"]["(key maps, indexes)"] += sum(rest.values())
                row["types"].update(by_type)
        result["kinds"] = {k: v for k, v in kinds.items() if v["objects"]}
        for kind, row in result["kinds"].items():
            objects = [o for w in watches for i in w.informers if i.resource.kind == kind for o in i.cache.list()]
            row["strings"] = string_sharing(objects)
        result["caches_bytes"] = sum(sum(v["fields"].values()) for v in kinds.values())
        result["holders"] = holder_bytes([("app", app)], seen)
        if snapshot is not None:
            result["sites"] = bytes_by_site(snapshot, package)
        return result
    finally:
        await app.stop()


def main() -> int:
    config = orjson.loads(Path(sys.argv[1]).read_bytes())
    result = asyncio.run(probe(config))
    Path(config["out"]).write_bytes(orjson.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
