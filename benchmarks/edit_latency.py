"""Edit latency under load, before and after, side by side: fleet_scale's latency phase alone, on one fleet.

The fleet is fleet_scale's (per cluster: the profile, 199 child ServingRuntimes in 5 namespaces, 1,000
InferenceServices; `--isvcs` to change), served by one `omectl dev up` process. Each round starts `omectl run` once
per variant (alternating, so a change in the machine's load falls on both), waits for its cold start to reconcile
everything, runs the latency phase (child runtimes' `spec.modelSizeRange.max` patched at `--rate` edits/s
fleet-wide, open loop; latency from each PATCH's answer to the runtime's `status.observedGeneration` in the watch;
each edit also re-renders the engine Deployments of that child's InferenceServices), stops it and undoes its writes.

Variants: `after`, omectl as it is; `before`, with the settings of before the loop-lag work (`BEFORE_SETTINGS`: the
heap not frozen, no worker kept for the edit lane). Targets (issue 15, at 200 edits/s on 10 clusters): p99 <= 100 ms
and p50 <= 20 ms. The full fleet_scale benchmark takes an hour; this phase on its own takes minutes.

    .venv/bin/python -m benchmarks.edit_latency --clusters 4 --isvcs 500 --rate 100 --seconds 10
    .venv/bin/python -m benchmarks.edit_latency --clusters 10 --rounds 2 --out /tmp/latency.json
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp

from benchmarks.common import ROOT, machine_info, run_header, text_table, write_results
from benchmarks.fleet_convergence import USER_AGENT, FleetProcess
from benchmarks.fleet_scale import FULL, Observer, OmectlProcess, ScaleFleet, SizeRun
from benchmarks.loop_lag import BEFORE_SETTINGS
from omectl.cli.dev import write_registrations

VARIANTS: dict[str, dict[str, str]] = {
    "after": {},
    "before": BEFORE_SETTINGS,
    "no-edit-workers": {"OMECTL_EDIT_WORKERS": "0"},  # the heap frozen, no worker kept for edits: which change pays
}
RESULTS = ROOT / "benchmarks" / "results" / "edit_latency.json"
FIGURES = ("latency_p50_ms", "latency_p99_ms", "latency_edits_per_s")


async def measure(run: SizeRun, rounds: int, variants: list[str]) -> list[dict[str, Any]]:
    await run.fleet.setup(run.sizes)
    observer = Observer(run.server.urls, run.fleet.session, run.fleet.auth)
    await observer.start()
    results: list[dict[str, Any]] = []
    try:
        for index in range(rounds):
            for variant in variants:
                slot = len(results)
                run.rounds.append({})
                omectl = OmectlProcess(run.workdir, f"omectl-{variant}-{index + 1}", settings=VARIANTS[variant])
                try:
                    await run.cold_start(observer, omectl, 0, slot)
                    await run._latency(observer, omectl, slot)
                finally:
                    run.stopped(omectl)
                await run.undo_cold_start(observer)
                figures = {name: run.rounds[slot][name] for name in FIGURES}
                results.append({"variant": variant, "round": index + 1, **figures})
                print(f"{variant} round {index + 1}: {figures}", flush=True)
    finally:
        await observer.stop()
    return results


def run_benchmark(
    clusters: int, isvcs: int, rate: float, seconds: float, rounds: int, variants: list[str]
) -> dict[str, Any]:
    started = time.monotonic()
    load = os.getloadavg()[0]
    sizes = replace(FULL, fleets=(clusters,), isvcs_per_cluster=isvcs, edit_rate_per_s=rate, edit_seconds=seconds)
    sizes = replace(sizes, rounds=rounds * len(variants))
    with tempfile.TemporaryDirectory(prefix="omectl-edit-latency-") as tmp:
        workdir = Path(tmp)
        with FleetProcess(workdir, clusters) as server:

            async def main() -> list[dict[str, Any]]:
                timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
                async with aiohttp.ClientSession(
                    connector=aiohttp.TCPConnector(limit=0), timeout=timeout, headers={"User-Agent": USER_AGENT}
                ) as session:
                    run = SizeRun(sizes, clusters, workdir, server, ScaleFleet(server.urls, session, server.auth))
                    run.rounds = []
                    write_registrations(workdir / "clusters", server.kubeconfig, run.names)
                    return await measure(run, rounds, variants)

            runs = asyncio.run(main())
    summary = {
        variant: {name: statistics.median(r[name] for r in runs if r["variant"] == variant) for name in FIGURES}
        for variant in variants
    }
    return {
        **run_header("edit_latency", False, started),
        "machine": machine_info(load),
        "fleet": {"clusters": clusters, "isvcs_per_cluster": isvcs, "edits_per_s": rate, "seconds": seconds},
        "variants": {variant: VARIANTS[variant] for variant in variants},
        "summary": summary,
        "runs": runs,
        "note": f"1-minute load average {load:.2f} on {os.cpu_count()} CPUs before the run",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--isvcs", type=int, default=FULL.isvcs_per_cluster, help="InferenceServices per cluster")
    parser.add_argument("--rate", type=float, default=FULL.edit_rate_per_s, help="edits/s, fleet-wide")
    parser.add_argument("--seconds", type=float, default=FULL.edit_seconds, help="how long the edits are sent")
    parser.add_argument("--rounds", type=int, default=2, help="rounds; each runs every variant once")
    parser.add_argument(
        "--variants", default="after,before", help=f"comma-separated, of {', '.join(VARIANTS)} (default after,before)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    args = parser.parse_args(argv)
    variants = args.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"--variants: unknown {', '.join(sorted(unknown))}")
    results = run_benchmark(args.clusters, args.isvcs, args.rate, args.seconds, args.rounds, variants)
    rows = [(variant, *(f"{figures[name]:.1f}" for name in FIGURES)) for variant, figures in results["summary"].items()]
    print(text_table(rows, ("variant", "p50 ms", "p99 ms", "edits/s")))
    write_results(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
