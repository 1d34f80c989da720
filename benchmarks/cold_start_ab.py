"""Cold start, before and after a change: `omectl run` from two checkouts, started in turn on the same fleet.

`python -m benchmarks.cold_start_ab --before DIR` builds the fleet-scale benchmark's fleet (`--clusters N` clusters
of one `dev up` process, each with 200 runtimes and 1,000 InferenceServices) and measures its cold start phase
(benchmarks/fleet_scale.py: spawn to every cache synced and to every object reconciled, seen from the benchmark's
own watches; the process's CPU seconds and peak RSS) 3 times for each of two controllers, alternating: `omectl`
imported from DIR (another checkout, e.g. `git worktree add --detach DIR main`) and from this one, each cold start
on a fleet whose rendered objects and statuses were undone. Alternating puts both under the same load on a shared
machine, so their ratio means more than either time. It prints each cold start, the medians with their range and
the ratios after ÷ before; `--out` writes them as JSON. It writes no README section: the figures go where the
change that needed them is described.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.common import ROOT, machine_info, run_header, text_table, write_results
from benchmarks.fleet_convergence import USER_AGENT, FleetProcess
from benchmarks.fleet_scale import FULL, Observer, OmectlProcess, ScaleFleet, SizeRun, shown
from benchmarks.repeats import ROUNDS, median_and_spread
from omectl.cli.dev import write_registrations

FIGURES = {
    "cold_synced_s": ("s", "`omectl run` to every cache synced (upper bound, 1 s steps)"),
    "cold_reconciled_s": ("s", "`omectl run` to every object reconciled"),
    "cold_cpu_s": ("s", "CPU seconds of `omectl run` until then"),
    "peak_rss_mb": ("MiB", "peak RSS of `omectl run`"),
}


async def alternate(server: FleetProcess, workdir: Path, clusters: int, roots: dict[str, Path]) -> dict[str, SizeRun]:
    """Each root's cold starts, in turn, on one fleet: round i of every root before round i + 1 of any."""
    sizes = replace(FULL, fleets=(clusters,))
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
    async with aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0), timeout=timeout, headers={"User-Agent": USER_AGENT}
    ) as session:
        fleet = ScaleFleet(server.urls, session, server.auth)
        runs = {label: SizeRun(sizes, clusters, workdir, server, fleet) for label in roots}
        write_registrations(workdir / "clusters", server.kubeconfig, list(server.urls))
        await fleet.setup(sizes)
        observer = Observer(server.urls, session, server.auth)
        await observer.start()
        first = True
        try:
            for index in range(ROUNDS):
                for label, root in roots.items():
                    run = runs[label]
                    if not first:
                        await run.undo_cold_start(observer)
                    first = False
                    print(f"--- {label}, round {index + 1}: omectl from {root}", flush=True)
                    omectl = OmectlProcess(workdir, f"{label}-{index + 1}", root=root)
                    try:
                        await run.cold_start(observer, omectl, 0, index)
                    finally:
                        run.stopped(omectl)
        finally:
            await observer.stop()
        return runs


def run_benchmark(clusters: int, before: Path) -> dict[str, Any]:
    started = time.monotonic()
    machine = machine_info()
    roots = {"before": before.resolve(), "after": ROOT}
    with tempfile.TemporaryDirectory(prefix="omectl-bench-ab-") as tmp, FleetProcess(Path(tmp), clusters) as server:
        runs = asyncio.run(alternate(server, Path(tmp), clusters, roots))
    figures: dict[str, dict[str, float]] = {}
    spread: dict[str, dict[str, list[float]]] = {}
    for label, run in runs.items():
        figures[label], spread[label] = median_and_spread(run.rounds, FIGURES)
    ratios = {name: round(figures["after"][name] / figures["before"][name], 3) for name in FIGURES}
    return {
        **run_header("cold_start_ab", False, started),
        "machine": machine,
        "clusters": clusters,
        "roots": {label: str(root) for label, root in roots.items()},
        "repeats": ROUNDS,
        "figures": figures,
        "spread": spread,
        "after_over_before": ratios,
        "phases": {label: run.phases for label, run in runs.items()},
    }


def table(results: dict[str, Any]) -> str:
    rows = []
    for name, (unit, label) in FIGURES.items():
        cells = []
        for who in ("before", "after"):
            low, high = results["spread"][who][name]
            cells.append(f"{shown(results['figures'][who][name], unit)} ({shown(low, '')}-{shown(high, '')})")
        rows.append((label, *cells, f"{results['after_over_before'][name]:.2f}"))
    return text_table(rows, ("figure", "before", "after", "after ÷ before"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cold_start_ab", description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the checkout whose omectl is 'before'")
    parser.add_argument("--clusters", type=int, default=4, help="clusters of 1,000 InferenceServices (default 4)")
    parser.add_argument("--out", type=Path, help="results JSON (default: not written)")
    args = parser.parse_args(argv)
    if not (args.before / "omectl" / "__init__.py").exists():
        parser.error(f"--before: {args.before} holds no omectl package")
    results = run_benchmark(args.clusters, args.before)
    print(
        f"\n{args.clusters} clusters, medians of {ROUNDS} alternating cold starts (range in brackets); 1-minute load "
        f"average before the run: {results['machine']['load_average_1m_before']}\n" + table(results),
        flush=True,
    )
    if args.out is not None:
        write_results(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
