"""Where `omectl run`'s memory per InferenceService goes: the informer caches by kind and field, and everything else.

`python -m benchmarks.memory_breakdown` builds the fleet-scale benchmark's fleet (benchmarks/fleet_scale.py: one
`python -m omectl dev up` process; per cluster the sample ClusterBaseModel, the `sglang-profile`, its children and
the InferenceServices naming them) and runs the controller, as `omectl run` builds it, in a child process
(`benchmarks/memory_probe.py`): once on the empty fleet, then from a cold start on the populated fleet until every
engine Deployment is cached and the queue is idle, each measured once idle. From the difference, per
InferenceService:

- **RSS** and where it is: objects alive (bytes in CPython's small-object allocator's live blocks; glibc's bytes
  in use), memory freed but kept by the allocators (free blocks in pymalloc's arenas, free bytes in glibc's heap),
  and RSS after `malloc_trim(0)`;
- **by holder**: the bytes reachable from the controller by the attribute path that holds them (each Python object
  once, `sys.getsizeof`), the informer caches walked first so what they share is theirs;
- **by kind and field**: per informer kind, bytes per cached object beside its JSON as served (managedFields
  dropped), by where in the object they are (`metadata.labels`, `status.conditions`, ...) and by type;
- **by allocation site** (a third run with tracemalloc): live bytes by the innermost omectl frame that allocated.

`--before DIR` measures the omectl of another checkout (e.g. `git worktree add --detach DIR main`) the same way on
the same fleet, each cold start on a fleet whose renders and statuses were undone: before and after side by side;
`--variant LABEL:NAME=VALUE,...` measures this checkout's again with those environment variables (allocator or
tracing settings, e.g. `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072` or `OTEL_SDK_DISABLED=true`).
The walks are deterministic, so the figures need no repetition; the RSS figures vary by a few per cent. `--out`
writes the results JSON; nothing is written without it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson

from benchmarks.common import ROOT, machine_info, run_header, text_table, write_results
from benchmarks.fleet_convergence import USER_AGENT, FleetProcess
from benchmarks.fleet_scale import FULL, Observer, ScaleFleet, SizeRun, Sizes, child_env
from omectl.cli.dev import write_registrations

PROBE = ROOT / "benchmarks" / "memory_probe.py"
TOP = 20  # holders and allocation sites shown


async def run_probe(
    workdir: Path, root: Path, label: str, deployments: int, frames: int = 0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """One child process's measurement (`benchmarks/memory_probe.py`, omectl imported from `root`)."""
    config = workdir / f"{label}.probe.json"
    out = workdir / f"{label}.result.json"
    config.write_bytes(
        orjson.dumps(
            {
                "workdir": str(workdir),
                "clusters_dir": str(workdir / "clusters"),
                "label": label,
                "deployments": deployments,
                "tracemalloc_frames": frames,
                "out": str(out),
            }
        )
    )
    log = workdir / f"{label}.log"
    with log.open("wb") as sink:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(PROBE),
            str(config),
            cwd=workdir,
            env={**child_env(root), **(env or {})},
            stdout=sink,
            stderr=sink,
        )
        code = await proc.wait()
    if code != 0:
        raise RuntimeError(f"memory probe {label} exited with {code}:\n{log.read_text(errors='replace')[-3000:]}")
    return orjson.loads(out.read_bytes())  # type: ignore[no-any-return]


Controller = tuple[Path, dict[str, str]]  # the checkout whose omectl runs, and environment variables it runs with


async def measure(
    sizes: Sizes, clusters: int, roots: dict[str, Controller], frames: int, workdir: Path
) -> dict[str, Any]:
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
    with FleetProcess(workdir, clusters) as server:
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=timeout, headers={"User-Agent": USER_AGENT}
        ) as session:
            fleet = ScaleFleet(server.urls, session, server.auth)
            write_registrations(workdir / "clusters", server.kubeconfig, list(server.urls))
            empty = {
                label: await run_probe(workdir, root, f"{label}-empty", 0, env=env)
                for label, (root, env) in roots.items()
            }
            empty["traced"] = await run_probe(workdir, ROOT, "traced-empty", 0, frames)
            await fleet.setup(sizes)
            run = SizeRun(sizes, clusters, workdir, server, fleet)
            observer = Observer(server.urls, session, server.auth)
            await observer.start()
            full: dict[str, dict[str, Any]] = {}
            try:
                for label, (root, env) in [*roots.items(), ("traced", (ROOT, {}))]:
                    if full:
                        await run.undo_cold_start(observer)
                    traced = frames if label == "traced" else 0
                    full[label] = await run_probe(workdir, root, label, len(run.isvc_keys), traced, env)
                json_sizes = await _json_sizes(fleet, run.names[0])
            finally:
                await observer.stop()
    isvcs = len(run.isvc_keys)
    return {
        "inference_services": isvcs,
        "objects_cached": sum(k["objects"] for k in full["after"]["kinds"].values()),
        "json_bytes_by_kind": json_sizes,
        "runs": {label: summary(empty[label], full[label], json_sizes, isvcs) for label in roots},
        "sites_kib_per_isvc": _top(_grown(full["traced"]["sites"], empty["traced"]["sites"]), isvcs),
        "traced": {
            "cold_s": full["traced"]["cold_s"],
            "frames": frames,
            "traced_growth_kib_per_isvc": _kib(full["traced"]["traced"] - empty["traced"]["traced"], isvcs),
            "traced_peak_growth_kib_per_isvc": _kib(full["traced"]["traced_peak"] - empty["traced"]["traced"], isvcs),
            "halfway_traced_growth_kib_per_isvc": _kib(full["traced"]["mid_traced"] - empty["traced"]["traced"], isvcs),
        },
        # what the cold start held halfway through beyond what it holds at the end: its transient memory
        "halfway_transient_sites_kib_per_isvc": _top(
            _grown(full["traced"]["mid_sites"], full["traced"]["sites"]), isvcs
        ),
    }


async def _json_sizes(fleet: ScaleFleet, cluster: str) -> dict[str, float]:
    """Mean JSON size per kind as served, managedFields dropped (the first cluster's objects)."""
    url = fleet.urls[cluster]
    paths = {
        "ServingRuntime": "/apis/ome.io/v1beta1/servingruntimes",
        "ClusterServingRuntime": "/apis/ome.io/v1beta1/clusterservingruntimes",
        "InferenceService": "/apis/ome.io/v1beta1/inferenceservices",
        "ClusterBaseModel": "/apis/ome.io/v1beta1/clusterbasemodels",
        "Deployment": "/apis/apps/v1/deployments",
        "Service": "/api/v1/services",
    }
    sizes: dict[str, float] = {}
    for kind, path in paths.items():
        items = (await fleet.call("GET", url + path))["items"]
        for item in items:
            item["metadata"].pop("managedFields", None)
        sizes[kind] = round(sum(len(orjson.dumps(i)) for i in items) / max(1, len(items)), 1)
    return sizes


def _kib(value: float, isvcs: int) -> float:
    return round(value / isvcs / 1024, 2)


def _top(sizes: dict[str, int], isvcs: int, n: int = TOP) -> dict[str, float]:
    ranked = sorted(sizes.items(), key=lambda kv: -kv[1])[:n]
    return {k: _kib(v, isvcs) for k, v in ranked if v > 0}


def _grown(full: dict[str, int], empty: dict[str, int]) -> dict[str, int]:
    return {k: full.get(k, 0) - empty.get(k, 0) for k in full.keys() | empty.keys()}


def summary(empty: dict[str, Any], full: dict[str, Any], json_sizes: dict[str, float], isvcs: int) -> dict[str, Any]:
    """One controller's figures: the growth from the empty fleet per InferenceService, and its caches by kind."""

    def grown(*path: str) -> float:
        a: Any = full
        b: Any = empty
        for p in path:
            a, b = a.get(p, 0) if isinstance(a, dict) else 0, b.get(p, 0) if isinstance(b, dict) else 0
        return _kib(a - b, isvcs)

    pym_free = [r["pymalloc"].get("total_bytes", 0) - r["pymalloc"].get("live_bytes", 0) for r in (empty, full)]
    kinds = []
    for kind, row in full["kinds"].items():
        n = row["objects"]
        cached = sum(row["fields"].values())
        json_b = json_sizes.get(kind, 0.0)
        kinds.append(
            {
                "kind": kind,
                "objects": n,
                "json_bytes": round(json_b),
                "cached_bytes": round(cached / n),
                "cached_over_json": round(cached / n / json_b, 2) if json_b else None,
                "by_field": {k: round(v / n) for k, v in Counter(row["fields"]).most_common()},
                "by_type": {k: round(v / n) for k, v in Counter(row["types"]).most_common()},
                "string_values": {
                    "bytes": round(row["strings"]["bytes"] / n),
                    "bytes_if_shared": round(row["strings"]["bytes_if_shared"] / n),
                    "saved_by_path": {k: round(v / n) for k, v in row["strings"]["saved_by_path"].items()},
                },
            }
        )
    holder_growth = _grown(full["holders"], empty["holders"])
    return {
        "cold_s": full["cold_s"],
        "cold_cpu_s": round(full["cpu_s"] - empty["cpu_s"], 2),
        "empty_rss_mb": round(empty["rss"] / 2**20, 1),
        "rss_mb": round(full["rss"] / 2**20, 1),
        "peak_rss_mb": round(full["peak_rss"] / 2**20, 1),
        "per_isvc_kib": {
            "rss": grown("rss"),
            "rss_after_malloc_trim": grown("rss_after_trim"),
            "pymalloc_live": grown("pymalloc", "live_bytes"),
            "pymalloc_free_in_arenas": _kib(pym_free[1] - pym_free[0], isvcs),
            "malloc_in_use": grown("malloc", "in_use_bytes"),
            "malloc_free": grown("malloc", "free_bytes"),
            "malloc_mmapped": grown("malloc", "mmapped_bytes"),
            "reachable_from_controller": _kib(sum(holder_growth.values()) + full["caches_bytes"], isvcs),
            "informer_caches": _kib(full["caches_bytes"], isvcs),
        },
        "gc_objects_per_isvc": round((full["gc_objects"] - empty["gc_objects"]) / isvcs, 1),
        "kinds": kinds,
        "holders_kib_per_isvc": _top(holder_growth, isvcs),
    }


def tables(results: dict[str, Any]) -> str:
    runs = results["runs"]
    labels = list(runs)
    out = []
    names = list(runs[labels[-1]]["per_isvc_kib"])
    out.append(
        text_table(
            [(name, *(f"{runs[label]['per_isvc_kib'][name]:.2f}" for label in labels)) for name in names]
            + [("peak RSS, MiB", *(f"{runs[label]['peak_rss_mb']:.1f}" for label in labels))]
            + [("cold start, s", *(f"{runs[label]['cold_s']:.1f}" for label in labels))]
            + [("its CPU beyond the empty fleet's, s", *(f"{runs[label]['cold_cpu_s']:.1f}" for label in labels))],
            ("per InferenceService, KiB", *labels),
        )
    )
    by_kind = {label: {r["kind"]: r for r in runs[label]["kinds"]} for label in labels}
    rows = []
    for kind, row in by_kind[labels[-1]].items():
        cells = []
        for label in labels:
            other = by_kind[label].get(kind)
            cells.append(f"{other['cached_bytes']} ({other['cached_over_json']}x)" if other else "-")
        rows.append((kind, str(row["objects"]), str(row["json_bytes"]), *cells))
    out.append(text_table(rows, ("kind", "objects", "json B", *(f"{label}: cached B (÷ json)" for label in labels))))
    for r in runs[labels[-1]]["kinds"]:
        fields = ", ".join(f"{k} {v}" for k, v in list(r["by_field"].items())[:8])
        types = ", ".join(f"{k} {v}" for k, v in r["by_type"].items())
        out.append(f"{r['kind']} ({labels[-1]}), B per object: {fields}\n  by type: {types}")
    for label in labels:
        holders = runs[label]["holders_kib_per_isvc"]
        out.append(text_table([(k, f"{v:.2f}") for k, v in holders.items()], (f"{label}: holder", "KiB/isvc")))
    out.append("tracemalloc: " + ", ".join(f"{k} {v}" for k, v in results["traced"].items()))
    for title, key in (
        ("allocation site (tracemalloc), live at the end", "sites_kib_per_isvc"),
        ("allocation site, live halfway beyond the end", "halfway_transient_sites_kib_per_isvc"),
    ):
        out.append(text_table([(k, f"{v:.2f}") for k, v in results[key].items()], (title, "KiB/isvc")))
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_breakdown", description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=1, help="clusters (default 1)")
    parser.add_argument("--isvcs", type=int, default=FULL.isvcs_per_cluster, help="InferenceServices per cluster")
    parser.add_argument("--runtimes", type=int, default=FULL.runtimes_per_cluster, help="runtimes per cluster")
    parser.add_argument("--frames", type=int, default=10, help="tracemalloc frames per allocation (default 10)")
    parser.add_argument("--before", type=Path, help="also measure the omectl of this checkout, as 'before'")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL:NAME=VALUE[,NAME=VALUE]",
        help="also measure this checkout's omectl with these environment variables (e.g. allocator settings)",
    )
    parser.add_argument("--out", type=Path, help="write the results JSON here (default: nowhere)")
    args = parser.parse_args(argv)
    if args.before is not None and not (args.before / "omectl" / "__init__.py").exists():
        parser.error(f"--before: {args.before} holds no omectl package")
    sizes = replace(FULL, fleets=(args.clusters,), isvcs_per_cluster=args.isvcs, runtimes_per_cluster=args.runtimes)
    roots: dict[str, Controller] = {"before": (args.before.resolve(), {})} if args.before is not None else {}
    roots["after"] = (ROOT, {})
    for variant in args.variant:
        label, _, assignments = variant.partition(":")
        roots[label] = (ROOT, dict(a.split("=", 1) for a in assignments.split(",") if a))
    started = time.monotonic()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="omectl-bench-breakdown-") as tmp:
        results = asyncio.run(measure(sizes, args.clusters, roots, args.frames, Path(tmp)))
    print(tables(results), flush=True)
    if args.out is not None:
        header = run_header("memory_breakdown", False, started)
        roots_shown = {label: {"root": str(root), "env": env} for label, (root, env) in roots.items()}
        write_results(
            args.out, {**header, "machine": machine, "clusters": args.clusters, "roots": roots_shown, **results}
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
