"""Bytes per cached object, per kind: what the controller's informer caches hold, beside the objects' JSON.

`python -m benchmarks.cache_memory` runs one embedded cluster (with the workload simulator, so the Deployments carry
a status) and the controller in this process; it creates the samples' ClusterBaseModel and `sglang-profile`,
a ServingRuntime child in each namespace and `--isvcs` InferenceServices naming it, waits until every engine
Deployment is cached and the queue is idle, then, for every OME informer of the cluster, compares:

- **json**: the mean size of the objects' JSON as the server lists them;
- **decoded**: the mean memory of those objects decoded as they are (orjson, no transform): what a cache without
  transforms would hold;
- **cached**: the mean memory of the informer's cache itself per object: the objects as the informer's transform
  left them, the key maps and the indexes.

Memory is counted by walking the containers (`sys.getsizeof` of each dict, list, tuple, set and string, each
counted once, so a string shared between objects, interned or not, is counted once for the whole cache), which
is deterministic: the figures need no repetition. `--out` writes the results JSON; nothing is written without it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from benchmarks.common import ROOT, machine_info, run_header, text_table, write_results
from benchmarks.engine_rollout import MODEL, PROFILE, isvc_object, runtime_object
from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.controller.ome.watch import OmeWatch
from omectl.kube.cache import ObjectCache
from omectl.settings import Settings
from omectl.sim.fleet import EmbeddedFleet, apply_document
from omectl.sim.simulator import SimulatorConfig

CRDS = ROOT / "deploy" / "crds"
HEADER = ("kind", "objects", "json B", "decoded B", "cached B", "cached/json", "cached/decoded")


def deep_size(roots: Iterable[Any]) -> int:
    """Bytes of everything reachable from `roots` through dicts, lists, tuples and sets, each object once."""
    seen: set[int] = set()
    stack = list(roots)
    total = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen or callable(obj):
            continue
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            stack.extend(obj.keys())
            stack.extend(obj.values())
        elif isinstance(obj, list | tuple | set | frozenset):
            stack.extend(obj)
    return total


def cache_size(cache: ObjectCache) -> int:
    """The cache's own memory: its objects, key maps and indexes (its attributes, walked)."""
    return deep_size(vars(cache).values())


async def _wait(condition: Any, what: str, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"cache_memory: {what} not reached within {deadline_s:.0f} s")
        await asyncio.sleep(0.2)  # the controller runs on this loop; a benchmark may poll


async def measure(isvcs: int, namespaces: int, workdir: Path) -> list[dict[str, Any]]:
    sim = await EmbeddedFleet(1, name_prefix="mem-", simulator=SimulatorConfig()).start()
    app: ControllerApp | None = None
    try:
        await sim.apply([CRDS])
        [server] = sim.servers
        kubeconfig = server.write_kubeconfig(workdir / "mem.kubeconfig")
        write_registrations(workdir / "clusters", kubeconfig, [server.name])
        settings = Settings.load(
            webhook_port=0,
            metrics_port=0,
            install_webhooks=False,
            clusters_dir=workdir / "clusters",
            trace_file=workdir / "traces.jsonl",
        )
        app = ControllerApp(settings)
        await app.start()
        await app.wait_synced(60)
        names = [f"team-{i}" for i in range(namespaces)]
        docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names]
        docs += [MODEL, PROFILE, *(runtime_object(n) for n in names)]
        docs += [isvc_object(names[i % namespaces], f"llama-{i:04d}") for i in range(isvcs)]
        for doc in docs:
            await apply_document(server, doc)
        ome = app.controller.clusters[server.name].watch(OmeWatch)
        await _wait(lambda: len(ome.deployments.cache) >= isvcs, f"{isvcs} engine Deployments cached", 300)
        queue = app.controller.queue
        await _wait(lambda: not queue.depth() and not queue.in_flight, "an idle queue", 300)
        rows = []
        for informer in ome.informers:
            count = len(informer.cache)
            if not count:
                continue
            query = {"labelSelector": informer.label_selector} if informer.label_selector else None
            listed = await ome.client.request("GET", informer.resource.path(), query=query)
            items = listed.get("items") or []
            json_bytes = sum(len(orjson.dumps(item)) for item in items)
            decoded = [orjson.loads(orjson.dumps(item)) for item in items]
            rows.append(
                {
                    "kind": informer.resource.kind,
                    "objects": count,
                    "json_bytes": round(json_bytes / len(items)),
                    "decoded_bytes": round(deep_size(decoded) / len(items)),
                    "cached_bytes": round(cache_size(informer.cache) / count),
                }
            )
        return rows
    finally:
        if app is not None:
            await app.stop()
        await sim.stop()


def table(rows: list[dict[str, Any]]) -> str:
    return text_table(
        [
            (
                r["kind"],
                str(r["objects"]),
                str(r["json_bytes"]),
                str(r["decoded_bytes"]),
                str(r["cached_bytes"]),
                f"{r['cached_bytes'] / r['json_bytes']:.2f}",
                f"{r['cached_bytes'] / r['decoded_bytes']:.2f}",
            )
            for r in rows
        ],
        HEADER,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cache_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--isvcs", type=int, default=200, help="InferenceServices to create (default 200)")
    parser.add_argument("--namespaces", type=int, default=4, help="namespaces they spread over (default 4)")
    parser.add_argument("--out", type=Path, help="write the results JSON here (default: nowhere)")
    args = parser.parse_args(argv)
    if args.isvcs < 1 or args.namespaces < 1:
        parser.error("--isvcs and --namespaces must be at least 1")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="omectl-bench-memory-") as tmp:
        rows = asyncio.run(measure(args.isvcs, args.namespaces, Path(tmp)))
    print(table(rows), flush=True)
    if args.out is not None:
        results = {**run_header("cache_memory", False, started), "machine": machine_info(), "kinds": rows}
        write_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
