"""`omectl run`'s memory through the fleet-scale benchmark's phases: does it settle, or climb with every round?

`python -m benchmarks.memory_phases` builds the fleet-scale fleet (benchmarks/fleet_scale.py: one `omectl dev up`
process; per cluster the profile, its children and the InferenceServices naming them) and runs `omectl run` as a
user runs it, under `benchmarks/memory_phases_child.py`, through fleet_scale's own phases: a cold start, three
profile edits (every engine Deployment re-rendered each time), then `--latency-rounds` rounds of runtime edits at
200/s for 15 s. After each phase, once the controller is idle, the child measures itself: RSS (and after glibc's
`malloc_trim`), bytes in CPython's live small-object blocks, glibc's bytes in use, and the objects the collector
tracks by type. What grows from the profile edits' end to the last round, and by which types, is what a round
leaves behind: zero for a controller that holds only its fleet.

`--before DIR` runs the omectl of another checkout (e.g. `git worktree add --detach DIR main`) first, on the same
fleet (its renders and statuses undone, the profile's image set back, between the two). The walks are exact; the
RSS moves by a few MiB between runs. `--out` writes the results JSON; nothing is written without it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
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
from benchmarks.engine_rollout import OLD_IMAGE
from benchmarks.fleet_convergence import USER_AGENT, FleetProcess
from benchmarks.fleet_scale import FULL, MERGE_PATCH, Observer, OmectlProcess, ScaleFleet, SizeRun
from omectl.cli.dev import write_registrations

CHILD = ROOT / "benchmarks" / "memory_phases_child.py"
PROFILE_EDITS = 3
TYPES_SHOWN = 8  # the types whose tracked objects grew most, per controller
DUMP_DEADLINE_S = 120.0


class DumpingOmectl(OmectlProcess):
    """`omectl run` under `memory_phases_child.py`: `measure()` signals it and reads what it wrote."""

    def __init__(self, workdir: Path, label: str, root: Path) -> None:
        super().__init__(workdir, label, root)
        self.dumps = workdir / f"{label}.dumps"
        self.dumps.mkdir()
        self.command[1:3] = [str(CHILD), str(self.dumps)]  # in place of `-m omectl`
        self.taken = 0

    async def measure(self, phase: str) -> dict[str, Any]:
        self.taken += 1
        written = self.dumps / f"{self.taken}.json"
        os.kill(self.pid, signal.SIGUSR1)
        deadline = time.perf_counter() + DUMP_DEADLINE_S
        while not written.exists():
            self.check_alive()
            if time.perf_counter() > deadline:
                raise RuntimeError(f"omectl run wrote no measurement after {phase} in {DUMP_DEADLINE_S:.0f} s")
            await asyncio.sleep(0.1)  # a file in another process: nothing to await but its appearance
        dump: dict[str, Any] = orjson.loads(written.read_bytes())
        return {"phase": phase, **dump}


def row_of(dump: dict[str, Any]) -> dict[str, Any]:
    mib = 2**20
    return {
        "phase": dump["phase"],
        "rss_mb": round(dump["rss"] / mib, 1),
        "rss_after_trim_mb": round(dump["rss_after_trim"] / mib, 1),
        "pymalloc_live_mb": round(dump["pymalloc"].get("live_bytes", 0) / mib, 1),
        "malloc_in_use_mb": round(dump["malloc"].get("in_use_bytes", 0) / mib, 1),
        "gc_objects": dump["gc_objects"],
    }


async def run_controller(
    run: SizeRun, observer: Observer, label: str, root: Path, latency_rounds: int
) -> list[dict[str, Any]]:
    omectl = DumpingOmectl(run.workdir, label, root)
    dumps = []
    try:
        await run.cold_start(observer, omectl, 0, 0)
        dumps.append(await omectl.measure("cold start"))
        for index in range(PROFILE_EDITS):
            await run._edit(observer, [omectl.pid], omectl.wait_idle, index)
        dumps.append(await omectl.measure(f"{PROFILE_EDITS} profile edits"))
        for index in range(latency_rounds):
            await run._latency(observer, omectl, index % run.sizes.rounds)
            dumps.append(await omectl.measure(f"latency round {index + 1}"))
    finally:
        run.stopped(omectl)
    return dumps


def summary(dumps: list[dict[str, Any]], latency_rounds: int) -> dict[str, Any]:
    """Each phase's figures, and what the latency rounds added after the profile edits: in all, and per round."""
    rows = [row_of(d) for d in dumps]
    edits, last = rows[1], rows[-1]
    types_before, types_after = Counter(dumps[1]["gc_types"]), Counter(dumps[-1]["gc_types"])
    grown = {t: types_after[t] - types_before[t] for t in types_after | types_before}
    top = dict(sorted(grown.items(), key=lambda kv: -kv[1])[:TYPES_SHOWN])
    rounds = max(1, latency_rounds)
    return {
        "phases": rows,
        "latency_rounds_added": {
            "rss_mb": round(last["rss_mb"] - edits["rss_mb"], 1),
            "rss_mb_per_round": round((last["rss_mb"] - edits["rss_mb"]) / rounds, 2),
            "pymalloc_live_mb_per_round": round((last["pymalloc_live_mb"] - edits["pymalloc_live_mb"]) / rounds, 2),
            "gc_objects_per_round": round((last["gc_objects"] - edits["gc_objects"]) / rounds),
            "gc_objects_by_type": top,
        },
    }


async def measure(
    clusters: int, roots: dict[str, Path], latency_rounds: int, workdir: Path
) -> dict[str, dict[str, Any]]:
    sizes = replace(FULL, fleets=(clusters,))
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
    results: dict[str, dict[str, Any]] = {}
    with FleetProcess(workdir, clusters) as server:
        async with aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), timeout=timeout, headers={"User-Agent": USER_AGENT}
        ) as session:
            fleet = ScaleFleet(server.urls, session, server.auth)
            run = SizeRun(sizes, clusters, workdir, server, fleet)
            write_registrations(workdir / "clusters", server.kubeconfig, run.names)
            await fleet.setup(sizes)
            observer = Observer(server.urls, session, server.auth)
            await observer.start()
            try:
                for label, root in roots.items():
                    if results:  # the fleet as the first controller found it: its image, nothing rendered
                        patch = {"spec": {"engineConfig": {"runner": {"image": OLD_IMAGE}}}}
                        await fleet.profile_call("PATCH", patch, MERGE_PATCH)
                        await run.undo_cold_start(observer)
                    dumps = await run_controller(run, observer, label, root, latency_rounds)
                    results[label] = summary(dumps, latency_rounds)
            finally:
                await observer.stop()
    return results


def tables(results: dict[str, dict[str, Any]]) -> str:
    out = []
    for label, result in results.items():
        rows = [
            (
                r["phase"],
                f"{r['rss_mb']:.1f}",
                f"{r['rss_after_trim_mb']:.1f}",
                f"{r['pymalloc_live_mb']:.1f}",
                f"{r['malloc_in_use_mb']:.1f}",
                f"{r['gc_objects']:,}",
            )
            for r in result["phases"]
        ]
        header = (f"{label}: after", "RSS MiB", "trimmed", "pymalloc live", "malloc in use", "tracked objects")
        added = result["latency_rounds_added"]
        types = ", ".join(f"{t} {n:+,}" for t, n in added["gc_objects_by_type"].items())
        out.append(
            f"{text_table(rows, header)}\nper latency round: RSS {added['rss_mb_per_round']:+.2f} MiB, pymalloc live "
            f"{added['pymalloc_live_mb_per_round']:+.2f} MiB, {added['gc_objects_per_round']:+,} tracked objects "
            f"({types})"
        )
    return "\n\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory_phases", description=__doc__.split("\n")[0])
    parser.add_argument("--clusters", type=int, default=4, help="clusters of 1,000 InferenceServices (default 4)")
    parser.add_argument("--latency-rounds", type=int, default=6, help="rounds of 200 edits/s for 15 s (default 6)")
    parser.add_argument("--before", type=Path, help="also run the omectl of this checkout, first, as 'before'")
    parser.add_argument("--out", type=Path, help="write the results JSON here (default: nowhere)")
    args = parser.parse_args(argv)
    if args.before is not None and not (args.before / "omectl" / "__init__.py").exists():
        parser.error(f"--before: {args.before} holds no omectl package")
    if args.clusters < 1 or args.latency_rounds < 1:
        parser.error("--clusters and --latency-rounds must be at least 1")
    roots = {"before": args.before.resolve()} if args.before is not None else {}
    roots["after"] = ROOT
    started = time.monotonic()
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="omectl-bench-memory-phases-") as tmp:
        results = asyncio.run(measure(args.clusters, roots, args.latency_rounds, Path(tmp)))
    print(tables(results), flush=True)
    if args.out is not None:
        header = run_header("memory_phases", False, started)
        settings = {"clusters": args.clusters, "latency_rounds": args.latency_rounds, "profile_edits": PROFILE_EDITS}
        roots_shown = {label: str(root) for label, root in roots.items()}
        write_results(args.out, {**header, "machine": machine, **settings, "roots": roots_shown, "runs": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
