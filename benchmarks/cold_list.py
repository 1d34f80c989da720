"""Benchmark of an informer's first list: pages handled as they arrive, and the cache's indexes built in linear time.

`python -m benchmarks.cold_list` starts one embedded API server the way a user does (`python -m omectl dev up
--clusters 1`, `deploy/crds/` applied: the server in a process of its own) and creates InferenceServices in
namespaces of 1,000, 4,000 and 16,000 (`--quick`: 500 and 2,000). For each size, 3 rounds of: an `Informer` of that
namespace's InferenceServices with the controller's own indexes (by runtime, by model) and transform, pages of 500,
started on an empty cache and timed until its first event and until it is synced, with its CPU seconds (this
process: the client's decoding, the transform, the cache and its indexes; the server is elsewhere); the same with
the first list collected whole before it is applied (the informer before issue 15's change), side by side; the
cache's indexes alone (the objects decoded beforehand, then stored in an `ObjectCache` with both indexes); and,
under tracemalloc, the memory the list held on top of what the cache keeps (the pages not yet applied). Each figure
is the median of its rounds, its range in brackets. *Growth ÷ linear* is the per-object cost at the largest size ÷
at the smallest: about 1 is linear, a quadratic cost would be 16 (4 in the quick run); a bare dict and set of the
same keys, timed beside the indexes, shows what the machine's memory alone adds as the heap grows.

A full run writes `benchmarks/results/cold_list.json` and rewrites its section of `benchmarks/README.md`; `--quick`
does neither unless `--out` says where the JSON goes.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.common import (
    README,
    RESULTS_DIR,
    evaluate_targets,
    figure_rows,
    machine_info,
    markdown_rows,
    measured_on,
    rewrite_readme_section,
    run_header,
    text_table,
    units_of,
    write_results,
)
from benchmarks.engine_rollout import isvc_object
from benchmarks.fleet_convergence import SETUP_CLIENTS, USER_AGENT, Fleet, FleetProcess, run_concurrently
from benchmarks.output import not_written_note, results_path
from benchmarks.repeats import ROUNDS, median_and_spread
from omectl.controller.ome.lookup import MODEL_INDEX, RUNTIME_INDEX, model_index, runtime_index
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient
from omectl.kube.informer import Informer
from omectl.kube.resources import INFERENCE_SERVICES
from omectl.kube.transforms import strip_bookkeeping

DEFAULT_OUT = RESULTS_DIR / "cold_list.json"
README_BEGIN = "<!-- cold-list:begin -->"
README_END = "<!-- cold-list:end -->"
OME_PATH = "/apis/ome.io/v1beta1"
PAGE_SIZE = 500
FULL_SIZES = (1000, 4000, 16000)
QUICK_SIZES = (500, 2000)
# Per-object costs compared between the smallest and the largest size.
GROWTH: dict[str, str] = {
    "cpu_us_per_object": "the informer's CPU per object, pages as they arrive",
    "collected_cpu_us_per_object": "the informer's CPU per object, collected whole",
    "index_us_per_object": "the cache and its indexes, per object",
    "bare_us_per_object": "a bare dict and set, per object",
}


class CollectingInformer(Informer):
    """The informer as it was before issue 15: every page of the first list collected, then applied at once."""

    async def _list(self, resource_version: str) -> None:
        items: list[dict[str, Any]] = []
        list_rv = ""
        async for page, page_list_rv in self._pages(resource_version):
            items.extend(page)
            list_rv = page_list_rv
        self._replace(items, list_rv)
        self.cache.complete = True
        self.synced.set()


def indexed_informer(kind: type[Informer], client: ClusterClient, namespace: str, handler: Any) -> Informer:
    """An InferenceService informer of one namespace as the controller builds one (`controller/ome/watch.py`)."""
    informer = kind(client, INFERENCE_SERVICES, namespace=namespace, page_size=PAGE_SIZE, handlers=[handler])
    informer.cache.add_index(RUNTIME_INDEX, runtime_index)
    informer.cache.add_index(MODEL_INDEX, model_index)
    return informer


async def first_list(kind: type[Informer], client: ClusterClient, namespace: str) -> dict[str, float]:
    """One informer's first list: ms to its first event and to synced, and the CPU µs it cost per object."""
    first: list[float] = []

    def on_event(*_: Any) -> None:
        if not first:
            first.append(time.perf_counter())

    informer = indexed_informer(kind, client, namespace, on_event)
    gc.collect()
    cpu, started = time.process_time(), time.perf_counter()
    informer.start()
    try:
        await informer.wait_synced(120)
        synced, cpu = time.perf_counter(), time.process_time() - cpu
        objects = len(informer.cache)
    finally:
        await informer.stop()
    return {
        "first_event_ms": round((first[0] - started) * 1000, 2),
        "synced_ms": round((synced - started) * 1000, 2),
        "cpu_us_per_object": round(cpu / objects * 1e6, 2),
    }


async def list_memory(kind: type[Informer], client: ClusterClient, namespace: str) -> float:
    """KiB the first list held at its peak on top of what the synced cache keeps (the pages not yet applied)."""
    informer = indexed_informer(kind, client, namespace, lambda *_: None)
    gc.collect()
    tracemalloc.start()
    try:
        informer.start()
        await informer.wait_synced(120)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await informer.stop()
    return round((peak - kept) / 1024, 1)


def index_cost(listed: list[dict[str, Any]]) -> tuple[float, float]:
    """µs per object to store decoded objects (the informer's transform applied) in a cache with both indexes, and
    to put their keys in a bare dict and set (the floor the machine's memory sets): the fastest of 5 passes each,
    the garbage collector paused (the algorithms' cost; its passes over a growing heap are in the informer's CPU)."""
    objects = [strip_bookkeeping(dict(item, metadata=dict(item["metadata"]))) for item in listed]

    def indexed() -> None:
        cache = ObjectCache()
        cache.add_index(RUNTIME_INDEX, runtime_index)
        cache.add_index(MODEL_INDEX, model_index)
        for obj in objects:
            cache.upsert(obj)

    def bare() -> None:
        by_key: dict[tuple[str, str], dict[str, Any]] = {}
        keys: set[tuple[str, str]] = set()
        for obj in objects:
            key = (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])
            by_key[key] = obj
            keys.add(key)

    return fastest_us_per_object(indexed, len(objects)), fastest_us_per_object(bare, len(objects))


def fastest_us_per_object(build: Callable[[], None], objects: int, passes: int = 5) -> float:
    best = float("inf")
    for _ in range(passes):
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            build()
            best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
    return round(best / objects * 1e6, 3)


async def create_isvcs(server: FleetProcess, sizes: tuple[int, ...]) -> None:
    url = next(iter(server.urls.values()))
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=120)
    async with aiohttp.ClientSession(timeout=timeout, headers={"User-Agent": USER_AGENT}) as session:
        fleet = Fleet(server.urls, session, server.auth)
        calls: list[Callable[[], Any]] = []
        for size in sizes:
            namespace = f"list-{size}"
            await fleet.call("POST", f"{url}/api/v1/namespaces", {"metadata": {"name": namespace}})
            path = f"{url}{OME_PATH}/namespaces/{namespace}/inferenceservices"
            calls += [
                functools.partial(fleet.call, "POST", path, isvc_object(namespace, f"isvc-{i:05d}"))
                for i in range(size)
            ]
        started = time.perf_counter()
        await run_concurrently(calls, SETUP_CLIENTS)
        print(f"{len(calls)} InferenceServices created in {time.perf_counter() - started:.1f} s", flush=True)


async def measure(server: FleetProcess, sizes: tuple[int, ...]) -> tuple[list[dict[str, float]], dict[str, Any]]:
    """The rounds (figure -> value each) and the details of the run."""
    cluster = next(iter(server.urls))
    rounds: list[dict[str, float]] = [{} for _ in range(ROUNDS)]
    details: dict[str, Any] = {"page_size": PAGE_SIZE, "sizes": list(sizes)}
    async with await ClusterClient.from_kubeconfig(server.kubeconfig, context=cluster, name=cluster) as client:
        for size in sizes:
            namespace = f"list-{size}"
            listed = (await client.request("GET", INFERENCE_SERVICES.path(namespace)))["items"]
            assert len(listed) == size, (namespace, len(listed))
            for figures in rounds:  # the two informers interleaved, so a burst of other load touches both alike
                streamed = await first_list(Informer, client, namespace)
                collected = await first_list(CollectingInformer, client, namespace)
                figures.update({f"{name}_{size}": value for name, value in streamed.items()})
                figures.update({f"collected_{name}_{size}": value for name, value in collected.items()})
                figures[f"index_us_per_object_{size}"], figures[f"bare_us_per_object_{size}"] = index_cost(listed)
                figures[f"list_held_kib_{size}"] = await list_memory(Informer, client, namespace)
                figures[f"collected_list_held_kib_{size}"] = await list_memory(CollectingInformer, client, namespace)
            print(
                f"[{size:>6}] synced in {statistics.median(r[f'synced_ms_{size}'] for r in rounds):,.0f} ms "
                f"(first event after {statistics.median(r[f'first_event_ms_{size}'] for r in rounds):,.0f} ms; "
                f"collected whole: {statistics.median(r[f'collected_first_event_ms_{size}'] for r in rounds):,.0f} "
                f"ms), index {statistics.median(r[f'index_us_per_object_{size}'] for r in rounds):.2f} µs/object",
                flush=True,
            )
    smallest, largest = min(sizes), max(sizes)
    for figures in rounds:
        for name in GROWTH:
            figures[f"{name}_growth"] = round(figures[f"{name}_{largest}"] / figures[f"{name}_{smallest}"], 3)
    return rounds, details


def figures_of(sizes: tuple[int, ...]) -> dict[str, tuple[str, str]]:
    figures: dict[str, tuple[str, str]] = {}
    for size in sizes:
        n = f"{size:,}"
        figures |= {
            f"first_event_ms_{size}": ("ms", f"{n}: first event after the start, pages handled as they arrive"),
            f"collected_first_event_ms_{size}": ("ms", f"{n}: first event after the start, the list collected whole"),
            f"synced_ms_{size}": ("ms", f"{n}: synced after the start, pages handled as they arrive"),
            f"collected_synced_ms_{size}": ("ms", f"{n}: synced after the start, the list collected whole"),
            f"cpu_us_per_object_{size}": ("µs", f"{n}: the informer's CPU per object, pages as they arrive"),
            f"collected_cpu_us_per_object_{size}": ("µs", f"{n}: the informer's CPU per object, collected whole"),
            f"index_us_per_object_{size}": ("µs", f"{n}: the cache and its two indexes alone, per object"),
            f"bare_us_per_object_{size}": ("µs", f"{n}: a bare dict and set of the keys, per object"),
            f"list_held_kib_{size}": ("KiB", f"{n}: memory the list held beyond the cache, pages as they arrive"),
            f"collected_list_held_kib_{size}": ("KiB", f"{n}: memory the list held beyond the cache, collected whole"),
        }
    smallest, largest = min(sizes), max(sizes)
    for name, what in GROWTH.items():
        figures[f"{name}_growth"] = ("", f"growth {smallest:,} → {largest:,} ÷ linear: {what}")
    return figures


def targets_of(sizes: tuple[int, ...]) -> dict[str, tuple[str, float]]:
    """Per-object cost growing by at most the square root of the size ratio (a quadratic cost grows by the ratio)."""
    bound = round((max(sizes) / min(sizes)) ** 0.5, 2)
    return {"cpu_us_per_object_growth": ("<=", bound), "index_us_per_object_growth": ("<=", bound)}


def run_benchmark(sizes: tuple[int, ...], quick: bool) -> dict[str, Any]:
    started = time.monotonic()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="omectl-bench-list-") as tmp, FleetProcess(Path(tmp), 1) as server:

        async def main() -> tuple[list[dict[str, float]], dict[str, Any]]:
            await create_isvcs(server, sizes)
            return await measure(server, sizes)

        rounds, details = asyncio.run(main())
    figures_table = figures_of(sizes)
    figures, spread = median_and_spread(rounds, figures_table)
    return {
        **run_header("cold_list", quick, started),
        "machine": machine,
        "layout": "one `python -m omectl dev up --clusters 1` process; the informers in the benchmark process",
        "repeats": ROUNDS,
        "figures": figures,
        "spread": spread,
        "units": units_of(figures_table),
        "targets": evaluate_targets(figures, quick, targets_of(sizes)),
        "details": details,
    }


def value_text(results: dict[str, Any]) -> Callable[[str, float, str], str]:
    def text(name: str, value: float, unit: str) -> str:
        low, high = results["spread"][name]
        shown = f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"
        return f"{shown} {unit} ({low:,.2f}-{high:,.2f})"

    return text


README_INTRO = """## Cold list: an informer's first list

```sh
.venv/bin/python -m benchmarks.cold_list                              # the full run; rewrites this section
.venv/bin/python -m benchmarks.cold_list --quick --out /tmp/l.json    # 500 and 2,000 objects, README untouched
```

One `python -m omectl dev up --clusters 1` process serves InferenceServices in namespaces of 1,000, 4,000 and
16,000; in the benchmark process an `Informer` of one namespace, with the controller's indexes (by runtime, by
model) and pages of 500, lists it into an empty cache (`omectl/kube/informer.py`: the first list is cached and its
events delivered a page at a time, as each page arrives; synced after the last page). Beside it, in the same rounds,
the informer as it was before (every page collected, then applied whole). *CPU per object* is the benchmark
process's (the client's decoding, the transform, the cache and its indexes; the server runs elsewhere). *The cache
and its two indexes alone* stores objects decoded beforehand, and *a bare dict and set* only their keys: the fastest
of 5 passes each, the garbage collector paused (the algorithms' cost). *Memory the list held beyond the cache* is
tracemalloc's peak during the list less what the synced cache keeps. Medians of 3 rounds, the range in brackets.
*Growth ÷ linear* is the per-object cost at the largest size ÷ at the smallest: a quadratic cost would make it 16;
the target is at most 4 (the square root), and the bare dict shows what the machine's memory alone adds."""


def markdown_section(results: dict[str, Any]) -> str:
    rows = figure_rows(results, figures_of(tuple(results["details"]["sizes"])), value_text(results))
    return "\n".join([README_INTRO, "", *markdown_rows(rows), "", measured_on(results)])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_list", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 and 2,000 objects; the README is untouched")
    parser.add_argument("--out", type=Path, help=f"results JSON (default: {DEFAULT_OUT}, on a README-rewriting run)")
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the section in the README")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    results = run_benchmark(sizes, args.quick)
    print("\n" + text_table(figure_rows(results, figures_of(sizes), value_text(results))), flush=True)
    rewrites_readme = not args.quick and not args.no_readme
    out = results_path(args.out, DEFAULT_OUT, rewrites_readme=rewrites_readme)
    if out is None:
        print(not_written_note(), flush=True)
    else:
        write_results(out, results)
    if rewrites_readme:
        rewrite_readme_section(README, markdown_section(results), README_BEGIN, README_END, append_missing=True)
        print(f"section rewritten in {README}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
