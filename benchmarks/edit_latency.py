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
    .venv/bin/python -m benchmarks.edit_latency --clusters 10 --rounds 1 --variants after --rate 25,50,100,200
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
    # half the reconciles at once (one kept for edits, as one in eight): a saturated loop turns in less time
    "concurrency-8": {"OMECTL_CONCURRENCY": "8"},
}
RESULTS = ROOT / "benchmarks" / "results" / "edit_latency.json"
FIGURES = ("latency_p50_ms", "latency_p99_ms", "latency_edits_per_s")


async def measure(run: SizeRun, rounds: int, variants: list[str], rates: list[float]) -> list[dict[str, Any]]:
    """Per round and variant one cold start, then the latency phase at each rate in turn (each waits for the
    controller to be idle after the one before)."""
    await run.fleet.setup(run.sizes)
    observer = Observer(run.server.urls, run.fleet.session, run.fleet.auth)
    await observer.start()
    results: list[dict[str, Any]] = []
    try:
        for index in range(rounds):
            for variant in variants:
                omectl = OmectlProcess(run.workdir, f"omectl-{variant}-{index + 1}", settings=VARIANTS[variant])
                try:
                    for number, rate in enumerate(rates):
                        slot = len(results)
                        run.rounds.append({})
                        if number == 0:
                            await run.cold_start(observer, omectl, 0, slot)
                        run.sizes = replace(run.sizes, edit_rate_per_s=rate)
                        await run._latency(observer, omectl, slot)
                        figures = {name: run.rounds[slot][name] for name in FIGURES}
                        phase = run.phases.pop(f"latency_{slot + 1}")
                        results.append({"variant": variant, "round": index + 1, "rate": rate, **figures, **phase})
                        print(f"{variant} round {index + 1} at {rate:g}/s: {figures}", flush=True)
                finally:
                    run.stopped(omectl)
                await run.undo_cold_start(observer)
    finally:
        await observer.stop()
    return results


def run_benchmark(
    clusters: int, isvcs: int, rates: list[float], seconds: float, rounds: int, variants: list[str]
) -> dict[str, Any]:
    started = time.monotonic()
    load = os.getloadavg()[0]
    sizes = replace(FULL, fleets=(clusters,), isvcs_per_cluster=isvcs, edit_rate_per_s=rates[0], edit_seconds=seconds)
    sizes = replace(sizes, rounds=rounds * len(variants) * len(rates))
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
                    return await measure(run, rounds, variants, rates)

            runs = asyncio.run(main())
    summary = {
        summary_key(variant, rate, rates): {
            name: statistics.median(r[name] for r in runs if r["variant"] == variant and r["rate"] == rate)
            for name in (*FIGURES, "cpu_cores_while_sending", "idle_s_after_sending")
        }
        for variant in variants
        for rate in rates
    }
    return {
        **run_header("edit_latency", False, started),
        "machine": machine_info(load),
        "fleet": {"clusters": clusters, "isvcs_per_cluster": isvcs, "edits_per_s": rates, "seconds": seconds},
        "variants": {variant: VARIANTS[variant] for variant in variants},
        "summary": summary,
        "runs": runs,
        "note": f"1-minute load average {load:.2f} on {os.cpu_count()} CPUs before the run",
    }


def summary_key(variant: str, rate: float, rates: list[float]) -> str:
    return variant if len(rates) == 1 else f"{variant} at {rate:g}/s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=10)
    parser.add_argument("--isvcs", type=int, default=FULL.isvcs_per_cluster, help="InferenceServices per cluster")
    parser.add_argument(
        "--rate",
        default=str(FULL.edit_rate_per_s),
        help="edits/s, fleet-wide; comma-separated rates are measured in turn after one cold start (e.g. 50,100,200)",
    )
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
    try:
        rates = [float(rate) for rate in args.rate.split(",")]
    except ValueError:
        parser.error(f"--rate: not a number or comma-separated numbers: {args.rate}")
    if any(rate <= 0 for rate in rates):
        parser.error(f"--rate: every rate must be above 0: {args.rate}")
    results = run_benchmark(args.clusters, args.isvcs, rates, args.seconds, args.rounds, variants)
    rows = [
        (key, *(f"{figures[name]:.1f}" for name in FIGURES), f"{figures['cpu_cores_while_sending']:.2f}")
        for key, figures in results["summary"].items()
    ]
    print(text_table(rows, ("variant", "p50 ms", "p99 ms", "edits/s", "omectl cores")))
    write_results(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
