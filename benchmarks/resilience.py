"""Benchmark of rollouts under API-server faults: how long the resilience suite's mixed workload takes to converge
when writes are throttled (429 + Retry-After) and fail in bursts (500, 503), and how fast the healthy clusters roll
out while another cluster is partitioned.

The scenarios are those of tests/resilience/ (the workload of tests/resilience/workload.py: 3 embedded clusters and
the controller on one event loop, the mixed OME and AIM workload seeded and converged first): the tests check what
happens (every refused write retried, no write before its Retry-After, every rollout reaching every healthy
cluster, the state equal to the expected render); the times it takes are these figures, not test assertions, since
a loaded machine is no stopwatch.

- *throttled rollout*: tests/resilience/test_faults.py's faults (`throttled_rollout_faults`), then a profile edit;
  the time from the edit until every cluster equals the expected render.
- *rollout beside a partition*: one cluster partitioned; a profile edit every 3 s meanwhile; each healthy cluster's
  latency from the edit to the commit of the last of its engine Deployments carrying the new image (store
  listeners, as tests/resilience/test_partition.py); after healing, the time until the partitioned cluster
  converges (its informers' reconnect backoff, capped at 30 s as client-go's reflector's, dominates it).

`python -m benchmarks.resilience` prints a table, writes `benchmarks/results/resilience.json` and rewrites its
section in `benchmarks/README.md`; `--quick` runs one throttled rollout and a 6 s partition and leaves the README
alone.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common import (
    README,
    RESULTS_DIR,
    evaluate_targets,
    figure_rows,
    machine_info,
    markdown_rows,
    measured_on,
    publish,
    run_header,
    units_of,
)
from tests.resilience.workload import (
    ISVCS_PER_NAMESPACE,
    RolloutClock,
    mixed_fleet,
    throttled_rollout_faults,
    until,
)

DEFAULT_OUT = RESULTS_DIR / "resilience.json"
README_BEGIN = "<!-- resilience:begin -->"
README_END = "<!-- resilience:end -->"
ENGINES = 2 * ISVCS_PER_NAMESPACE  # engine Deployments per cluster
EDIT_EVERY = 3.0
HEAL_DEADLINE = 60.0  # how long a phase waits for the healed cluster before it fails (not a target)
FIGURES: dict[str, tuple[str, str]] = {
    "throttled_rollout_s": ("s", "rollout converged under 429 (Retry-After 1 s) and 5xx bursts, median"),
    "throttled_rollout_max_s": ("s", "the same, slowest repeat"),
    "partition_rollout_median_s": ("s", "a healthy cluster's rollout beside a partitioned one, median"),
    "partition_rollout_max_s": ("s", "the same, slowest"),
    "healed_converged_s": ("s", "the partitioned cluster converged, after healing"),
}
TARGETS: dict[str, tuple[str, float]] = {
    # the Retry-After (1 s) plus a bounded backoff: the bound tests/resilience/test_faults.py used to assert
    "throttled_rollout_max_s": ("<=", 1 + 3.0),
    # a partitioned cluster does not stall the others: the bound tests/resilience/test_partition.py used to assert
    "partition_rollout_max_s": ("<=", 2.0),
}


async def throttled_once(tmp: Path) -> float:
    async with mixed_fleet(tmp, "bt-") as fleet:
        throttled_rollout_faults(fleet.servers)
        started = time.monotonic()
        await fleet.rollout("sglang:throttled")
        await fleet.converged(60)
        took = time.monotonic() - started
        if any(s.faults.rules for s in fleet.servers):
            raise RuntimeError("an injected fault was never hit: the rollout did not meet the faults it is timed with")
        return took


async def partition_once(tmp: Path, seconds: float) -> tuple[list[float], float]:
    async with mixed_fleet(tmp, "bp-") as fleet:
        cut, *healthy = fleet.servers
        clocks = {s.name: RolloutClock(s, ENGINES) for s in healthy}
        latencies: list[float] = []
        await cut.partition()
        partitioned_at = time.monotonic()
        try:
            round_ = 0
            while round_ == 0 or time.monotonic() - partitioned_at < seconds - EDIT_EVERY:
                image = f"sglang:part-{round_}"
                edited = time.monotonic()
                await fleet.rollout(image)
                await until(healthy, lambda i=image: all(i in c.done for c in clocks.values()), 30, f"{image} rolled")
                latencies += [clocks[s.name].done[image] - edited for s in healthy]
                round_ += 1
                await asyncio.sleep(max(0.0, edited + EDIT_EVERY - time.monotonic()))  # the next edit's time
            await asyncio.sleep(max(0.0, partitioned_at + seconds - time.monotonic()))
        finally:
            await cut.heal()
            for clock in clocks.values():
                clock.close()
        healed_at = time.monotonic()
        await fleet.converged(HEAL_DEADLINE)
        return latencies, time.monotonic() - healed_at


async def measure(repeats: int, partition_seconds: float, tmp: Path) -> dict[str, Any]:
    throttled = []
    for i in range(repeats):
        (tmp / f"throttled-{i}").mkdir()
        throttled.append(await throttled_once(tmp / f"throttled-{i}"))
    (tmp / "partition").mkdir()
    latencies, healed = await partition_once(tmp / "partition", partition_seconds)
    return {"throttled": throttled, "partition_rollouts": latencies, "healed": healed}


def run_benchmark(repeats: int, partition_seconds: float, quick: bool) -> dict[str, Any]:
    started = time.monotonic()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="omectl-bench-resilience-") as tmp:
        samples = asyncio.run(measure(repeats, partition_seconds, Path(tmp)))
    rollouts = samples["partition_rollouts"]
    figures = {
        "throttled_rollout_s": round(statistics.median(samples["throttled"]), 3),
        "throttled_rollout_max_s": round(max(samples["throttled"]), 3),
        "partition_rollout_median_s": round(statistics.median(rollouts), 3),
        "partition_rollout_max_s": round(max(rollouts), 3),
        "healed_converged_s": round(samples["healed"], 3),
    }
    return {
        **run_header("resilience", quick, started),
        "machine": machine_info(load),
        "layout": {
            "servers": "3 embedded clusters and the controller (ControllerApp) on one event loop in this process",
            "workload": "tests/resilience/workload.py's mixed OME and AIM workload, seeded and converged first",
        },
        "sizes": {
            "engines_per_cluster": ENGINES,
            "throttled_repeats": repeats,
            "partition_s": partition_seconds,
            "edit_every_s": EDIT_EVERY,
            "partition_rollouts": len(rollouts),
        },
        "samples": {
            "throttled": [round(v, 3) for v in samples["throttled"]],
            "partition_rollouts": [round(v, 3) for v in rollouts],
        },
        "figures": figures,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(figures, quick, TARGETS),
    }


def markdown_table(results: dict[str, Any]) -> str:
    sizes = results["sizes"]
    return "\n".join(
        [
            "## Rollouts under API-server faults",
            "",
            "```sh",
            ".venv/bin/python -m benchmarks.resilience             # the full run; rewrites this section",
            "```",
            "",
            "The resilience suite's mixed workload (tests/resilience/workload.py: 3 embedded clusters, "
            f"{sizes['engines_per_cluster']} engine Deployments each, and the controller, on one event loop). "
            f"*Throttled*: tests/resilience/test_faults.py's 429 (Retry-After 1 s) and 5xx bursts, then a profile "
            f"edit, until every cluster equals the expected render ({sizes['throttled_repeats']} repeats). *Beside "
            f"a partition*: one cluster partitioned for {sizes['partition_s']:g} s, a profile edit every "
            f"{sizes['edit_every_s']:g} s, each healthy cluster's rollout from the edit to the commit of its last "
            f"engine Deployment ({sizes['partition_rollouts']} rollouts); then the healed cluster's convergence. "
            "tests/resilience/ checks the behaviour; the times are these figures, not test assertions.",
            "",
            *markdown_rows(figure_rows(results, FIGURES)),
            "",
            measured_on(results),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.resilience", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one throttled rollout, a 6 s partition; no README")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results JSON (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    logging.getLogger("omectl").setLevel(logging.ERROR)  # the faults make the controller warn, as they should
    results = run_benchmark(1 if args.quick else 3, 6.0 if args.quick else 30.0, args.quick)
    section = None if args.quick else markdown_table(results)
    publish(args.out, results, figure_rows(results, FIGURES), section, README, (README_BEGIN, README_END))
    return 0


if __name__ == "__main__":
    sys.exit(main())
