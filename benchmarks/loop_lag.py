"""The controller's event loop through a storm: 1,000 ClusterServingRuntimes that inherit from one another in a
cycle (`storm-i` from `storm-(i+1) mod N`) created at once, `/healthz` probed all the while.

The API server is `omectl dev up --clusters 1` and the controller `python -m omectl run`, each a process of its
own; this process writes the runtimes from 32 concurrent clients and, from a thread of its own, GETs `/healthz`
every 100 ms on a fresh connection as the kubelet does, recording each answer's latency. The loop lag is the
controller's own `omectl_event_loop_lag_seconds` histogram (omectl/observability/loop_lag.py), scraped before and
after: its p99 is the upper bound of the bucket holding the 99th percentile. The storm ends when the controller is
idle (queue empty, nothing in flight, no new reconcile over a second). With uvloop installed (omectl does not use
it: benchmarks/README.md says why), each storm also runs with uvloop's event-loop policy set before `omectl run`
starts, alternating with asyncio's loop, each on a fresh server and controller.

Targets: `/healthz` answers within 1 s (deploy/base's liveness probe times out at 5 s) and loop lag p99 <= 50 ms.

    .venv/bin/python -m benchmarks.loop_lag                    # writes benchmarks/results/loop_lag.json
    .venv/bin/python -m benchmarks.loop_lag --count 200 --repeats 1 --out /tmp/lag.json --no-readme
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import functools
import http.client
import importlib.util
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.common import (
    ROOT,
    evaluate_targets,
    machine_info,
    markdown_rows,
    rewrite_readme_section,
    run_header,
    text_table,
    write_results,
)
from benchmarks.fleet_convergence import GROUP_PATH, SETUP_CLIENTS, Fleet, FleetProcess, run_concurrently
from benchmarks.resolver import API_VERSION, profile_spec
from omectl.cli.dev import write_registrations

RESULTS = ROOT / "benchmarks" / "results" / "loop_lag.json"
README = ROOT / "benchmarks" / "README.md"
BEGIN, END = "<!-- loop-lag:begin -->", "<!-- loop-lag:end -->"
PROBE_EVERY_S = 0.1
PROBE_TIMEOUT_S = 30.0
UVLOOP_LAUNCH = (
    "import asyncio, runpy, uvloop; asyncio.set_event_loop_policy(uvloop.EventLoopPolicy()); "
    "runpy.run_module('omectl', run_name='__main__', alter_sys=True)"
)
SLOW_STEP_S = 0.05  # a reconcile step this long is logged with the code it ran (OMECTL_SLOW_STEP_SECONDS)
TARGETS = {"healthz_max_s": ("<=", 1.0), "loop_lag_p99_s": ("<=", 0.05)}


def storm_runtime(index: int, count: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterServingRuntime",
        "metadata": {"name": f"storm-{index}", "annotations": {"ome.io/inherit-from": f"storm-{(index + 1) % count}"}},
        "spec": profile_spec(),
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HealthProber(threading.Thread):
    """GET /healthz every `PROBE_EVERY_S` (the next one once the last answered), each on a new connection."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.latencies: list[float] = []
        self.failures = 0
        self.probes: list[tuple[float, float, bool]] = []  # (started, seconds to the answer, answered 200)
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            started = time.perf_counter()
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=PROBE_TIMEOUT_S)
                connection.request("GET", "/healthz")
                ok = connection.getresponse().status == 200
                connection.close()
            except OSError:
                ok = False
            self.latencies.append(time.perf_counter() - started)
            self.probes.append((started, self.latencies[-1], ok))
            self.failures += 0 if ok else 1
            self.stopping.wait(max(0.0, PROBE_EVERY_S - (time.perf_counter() - started)))


def lag_buckets(text: str) -> dict[float, float]:
    """The cumulative counts of `omectl_event_loop_lag_seconds` by bucket bound (inf for +Inf)."""
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "omectl_event_loop_lag_seconds":
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    buckets[float(sample.labels["le"])] = sample.value
    return buckets


def step_buckets(text: str) -> dict[str, dict[float, float]]:
    """Per reconcile kind, the cumulative counts of `omectl_reconcile_longest_step_seconds` by bucket bound."""
    kinds: dict[str, dict[float, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name == "omectl_reconcile_longest_step_seconds":
            for sample in family.samples:
                if sample.name.endswith("_bucket"):
                    kinds.setdefault(sample.labels["kind"], {})[float(sample.labels["le"])] = sample.value
    return kinds


def quantile_bound(before: dict[float, float], after: dict[float, float], q: float) -> tuple[float, int]:
    """(upper bound of the bucket holding the `q` quantile, observations) between two scrapes."""
    delta = {bound: after[bound] - before.get(bound, 0.0) for bound in sorted(after)}
    count = delta.get(float("inf"), 0.0)
    for bound, cumulative in delta.items():
        if count and cumulative >= q * count:
            return bound, int(count)
    return float("inf"), int(count)


def p99_bound(before: dict[float, float], after: dict[float, float]) -> tuple[float, int]:
    """(upper bound of the bucket holding the 99th percentile, observations) between two scrapes."""
    return quantile_bound(before, after, 0.99)


def step_histogram(before: dict[str, dict[float, float]], after: dict[str, dict[float, float]]) -> dict[str, Any]:
    """Per reconcile kind through the storm: reconciles, the p50/p99/max bucket bounds of their longest step and
    how many held the loop over 50 ms."""
    out: dict[str, Any] = {}
    for kind, buckets in sorted(after.items()):
        earlier = before.get(kind, {})
        p50, count = quantile_bound(earlier, buckets, 0.5)
        if not count:
            continue
        p99, _ = quantile_bound(earlier, buckets, 0.99)
        top, _ = quantile_bound(earlier, buckets, 1.0)
        within = buckets.get(SLOW_STEP_S, 0.0) - earlier.get(SLOW_STEP_S, 0.0)
        out[kind] = {"reconciles": count, "p50_s": p50, "p99_s": p99, "max_s": top, "over_50ms": int(count - within)}
    return out


SLOW_LINE = re.compile(
    r"(?P<key>\S+) held the event loop (?P<ms>\d+) ms \((?P<cpu>\d+) ms on the CPU\), from (?P<start>.+?) "
    r"to (?P<end>.+?); sampled in: (?P<hot>.*)$"
)
GC_LINE = re.compile(
    r"garbage collection of generation (?P<generation>\d) held the event loop (?P<ms>\d+) ms \((?P<cpu>\d+) ms on "
    r"the CPU; (?P<collected>\d+) collected, (?P<old>\d+) objects in generation 2, (?P<frozen>\d+) frozen\)"
)


def logged_at(line: str) -> float:
    """The time of a text log line (`omectl.observability.logs`: local time, milliseconds after a comma), else 0."""
    try:
        return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return 0.0


def slow_steps(log: Path, since: float = 0.0) -> list[dict[str, Any]]:
    """The steps and collections the controller logged as holding the loop (omectl.observability.steps) from
    `since` (a `time.time()`) on."""
    steps: list[dict[str, Any]] = []
    for line in log.read_text(errors="replace").splitlines():
        if since and logged_at(line) < since:
            continue
        if match := SLOW_LINE.search(line):
            key = match["key"]
            kind = key.split(":")[1] if key.count(":") >= 2 else key
            where = {"from": match["start"], "to": match["end"], "sampled_in": match["hot"]}
            steps.append({"kind": kind, "ms": int(match["ms"]), "cpu_ms": int(match["cpu"]), **where})
        elif (match := GC_LINE.search(line)) and match["generation"] == "2":
            figures = {name: int(match[name]) for name in ("ms", "collected", "old", "frozen")}
            steps.append({"kind": "gc generation 2", "cpu_ms": int(match["cpu"]), **figures})
    return steps


def idle_sample(text: str) -> tuple[float, float, float]:
    """(queue depth, in flight, reconciles so far) from a scrape."""
    depth = in_flight = reconciles = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "omectl_queue_depth":
                depth += sample.value
            elif sample.name == "omectl_queue_in_flight":
                in_flight += sample.value
            elif sample.name == "omectl_reconciles_total":
                reconciles += sample.value
    return depth, in_flight, reconciles


class Controller:
    """`python -m omectl run` against the fleet's clusters, its metrics on `port`."""

    def __init__(self, workdir: Path, port: int, uvloop: bool | None, settings: dict[str, str]) -> None:
        self.port = port
        self.log = workdir / f"omectl-{port}.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        env["OMECTL_SLOW_STEP_SECONDS"] = str(SLOW_STEP_S)
        env.update(settings)
        # omectl itself runs on asyncio's loop; the uvloop column sets uvloop's policy before `omectl run` starts
        launch = ["-c", UVLOOP_LAUNCH] if uvloop else ["-m", "omectl"]
        command = [sys.executable, *launch, "run", "--clusters-dir", str(workdir / "clusters")]
        command += ["--no-install-webhooks", "--webhook-port", "0", "--metrics-port", str(port)]
        command += ["--trace-file", str(workdir / f"traces-{port}.jsonl"), "--log-level", "WARNING"]
        command += ["--status-file", str(workdir / f"status-{port}.json")]
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(command, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def metrics(self, session: aiohttp.ClientSession) -> str:
        async with session.get(self.base + "/metrics", timeout=aiohttp.ClientTimeout(total=60)) as reply:
            return await reply.text()

    async def wait_ready(self, session: aiohttp.ClientSession, deadline_s: float) -> None:
        deadline = time.perf_counter() + deadline_s
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"omectl run exited with {self.proc.returncode}: see {self.log}")
            with contextlib.suppress(aiohttp.ClientError):
                async with session.get(self.base + "/readyz") as reply:
                    if reply.status == 200:
                        return
            await asyncio.sleep(0.2)
        raise RuntimeError(f"omectl run not ready within {deadline_s:.0f} s: see {self.log}")

    async def wait_idle(self, session: aiohttp.ClientSession, deadline_s: float) -> float:
        started = time.perf_counter()
        previous: tuple[float, float, float] | None = None
        while time.perf_counter() - started < deadline_s:
            sample = idle_sample(await self.metrics(session))
            if previous is not None and sample[0] == sample[1] == 0 and sample == previous:
                return time.perf_counter() - started
            previous = sample
            await asyncio.sleep(1.0)
        raise RuntimeError(f"the controller was not idle within {deadline_s:.0f} s")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


Variant = tuple[str, bool | None, dict[str, str]]  # label, uvloop (None: not installed), `omectl run`'s environment
# `--before`: the controller as it was before its heap was frozen after start and sync (controller/runtime/heap.py)
# and workers were kept for the edit lane
BEFORE_SETTINGS = {"OMECTL_FREEZE_HEAP": "false", "OMECTL_EDIT_WORKERS": "0"}


async def storm_once(workdir: Path, count: int, variant: Variant, repeat: int) -> dict[str, Any]:
    label, uvloop, settings = variant
    workdir = workdir / f"{label.replace(', ', '-')}-{repeat}"
    workdir.mkdir()
    with FleetProcess(workdir, 1) as server:
        write_registrations(workdir / "clusters", server.kubeconfig, list(server.urls))
        controller = Controller(workdir, free_port(), uvloop, settings)
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=SETUP_CLIENTS)) as session:
                await controller.wait_ready(session, 120)
                await controller.wait_idle(session, 120)
                scraped = await controller.metrics(session)
                before, steps_before = lag_buckets(scraped), step_buckets(scraped)
                prober = HealthProber(controller.port)
                prober.start()
                fleet = Fleet(server.urls, session, server.auth)
                url = next(iter(server.urls.values())) + f"{GROUP_PATH}/clusterservingruntimes"
                post = functools.partial(fleet.call, "POST", url)
                bodies = [storm_runtime(i, count) for i in range(count)]
                started, storm_at = time.perf_counter(), time.time()
                calls: list[Callable[[], Any]] = [functools.partial(post, body) for body in bodies]
                await run_concurrently(calls, SETUP_CLIENTS)
                written = time.perf_counter() - started
                settled = await controller.wait_idle(session, 600) + written
                prober.stopping.set()
                await asyncio.to_thread(prober.join)
                scraped = await controller.metrics(session)
                after, steps_after = lag_buckets(scraped), step_buckets(scraped)
        finally:
            controller.stop()
    p99, observations = p99_bound(before, after)
    latencies = sorted(prober.latencies)
    return {
        "loop": label,
        "runtimes": count,
        "writes_s": round(written, 2),
        "storm_to_idle_s": round(settled, 2),
        "healthz_probes": len(latencies),
        "healthz_failures": prober.failures,
        "healthz_p50_s": round(latencies[len(latencies) // 2], 4),
        "healthz_p99_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 4),
        "healthz_max_s": round(latencies[-1], 4),
        "loop_lag_p99_s": p99,
        "loop_lag_observations": observations,
        "longest_step_by_kind": step_histogram(steps_before, steps_after),
        "slow_steps": slow_steps(controller.log, storm_at),
    }


def summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per loop, each figure's median over the repeats and its spread (min, max)."""
    out: dict[str, dict[str, Any]] = {}
    for loop in dict.fromkeys(run["loop"] for run in runs):
        mine = [run for run in runs if run["loop"] == loop]
        out[loop] = {"repeats": len(mine)}
        for name in ("healthz_max_s", "healthz_p99_s", "loop_lag_p99_s", "storm_to_idle_s"):
            values = [run[name] for run in mine]
            out[loop][name] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        kinds = dict.fromkeys(kind for run in mine for kind in run.get("longest_step_by_kind", {}))
        out[loop]["longest_step_by_kind"] = {
            kind: {
                name: statistics.median(run["longest_step_by_kind"].get(kind, {}).get(name, 0) for run in mine)
                for name in ("reconciles", "p50_s", "p99_s", "max_s", "over_50ms")
            }
            for kind in kinds
        }
        full = [[s for s in run.get("slow_steps", []) if s["kind"] == "gc generation 2"] for run in mine]
        out[loop]["full_gc_per_storm"] = statistics.median(len(passes) for passes in full)
        out[loop]["full_gc_cpu_ms"] = statistics.median(
            max((s["cpu_ms"] for s in passes), default=0) for passes in full
        )
    return out


def run_benchmark(count: int, loops: str, workdir: Path | None, repeats: int, before: bool = False) -> dict[str, Any]:
    started = time.monotonic()
    load = os.getloadavg()[0]
    variants: list[Variant] = [("default", None, {})]
    if importlib.util.find_spec("uvloop"):
        choices: dict[str, list[bool]] = {"both": [False, True], "asyncio": [False], "uvloop": [True]}
        variants = [("uvloop" if uvloop else "asyncio", uvloop, {}) for uvloop in choices[loops]]
    if before:
        variants += [(f"{label}, before", uvloop, BEFORE_SETTINGS) for label, uvloop, _ in variants]
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="omectl-loop-lag-")))
        # the loops alternate, so a change in the machine's load falls on both
        runs = [
            asyncio.run(storm_once(workdir, count, variant, repeat))
            for repeat in range(repeats)
            for variant in variants
        ]
    medians = summary(runs)
    first = medians[runs[0]["loop"]]
    figures = {name: first[name]["median"] for name in TARGETS}
    return {
        **run_header("loop_lag", False, started),
        "machine": machine_info(load),
        "summary": medians,
        "runs": runs,
        "targets": evaluate_targets(figures, False, TARGETS),
        "targets_of": runs[0]["loop"],
        "note": f"1-minute load average {load:.2f} on {os.cpu_count()} CPUs before the run: on a shared machine the "
        "figures are noisy, not final",
    }


LABELS = {
    "healthz_max_s": "/healthz slowest answer",
    "healthz_p99_s": "/healthz p99",
    "loop_lag_p99_s": "loop lag p99 (bucket bound)",
    "storm_to_idle_s": "first write to controller idle",
}


def table_rows(results: dict[str, Any]) -> list[tuple[str, ...]]:
    """Per loop and figure: the median of the repeats with its spread, and the verdict where there is a target."""
    rows: list[tuple[str, ...]] = []
    count = results["runs"][0]["runtimes"]
    for loop, figures in results["summary"].items():
        for name, label in LABELS.items():
            stat = figures[name]
            value = f"{stat['median']:.3f} s ({stat['min']:.3f} to {stat['max']:.3f})"
            target, verdict = "", ""
            if name in TARGETS:
                op, bound = TARGETS[name]
                target = f"{op} {bound} s"
                verdict = "PASS" if stat["median"] <= bound else "FAIL"
            rows.append((f"{label}, {count} runtimes, {loop}", value, target, verdict))
        for kind, step in figures.get("longest_step_by_kind", {}).items():
            value = (
                f"p50 {step['p50_s']:g} s, p99 {step['p99_s']:g} s, max {step['max_s']:g} s; "
                f"{step['over_50ms']:g} of {step['reconciles']:g} over 50 ms"
            )
            rows.append((f"longest reconcile step (bucket bounds), {kind}, {loop}", value, "", ""))
        if "full_gc_per_storm" in figures:
            value = f"{figures['full_gc_per_storm']:g}, the longest {figures['full_gc_cpu_ms']:g} ms on the CPU"
            rows.append((f"full garbage collections per storm, {loop}", value, "", ""))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="runtimes in the cycle (default 1000)")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"results JSON (default {RESULTS})")
    parser.add_argument("--no-readme", action="store_true", help="leave benchmarks/README.md as it is")
    parser.add_argument("--repeats", type=int, default=3, help="storms per loop (default 3; median and spread)")
    parser.add_argument("--loops", choices=("both", "asyncio", "uvloop"), default="both", help="which loops to run")
    parser.add_argument(
        "--before",
        action="store_true",
        help="also run each storm, alternating, as the controller ran before the heap was frozen (`BEFORE_SETTINGS`)",
    )
    parser.add_argument("--workdir", type=Path, help="keep the servers' and controllers' logs here (an empty folder)")
    args = parser.parse_args(argv)
    results = run_benchmark(args.count, args.loops, args.workdir, args.repeats, args.before)
    header = ("figure", "value", "target", "result")
    print(text_table(table_rows(results), header))
    write_results(args.out, results)
    if not args.no_readme:
        section = "\n".join(markdown_rows(table_rows(results), header))
        rewrite_readme_section(README, section, BEGIN, END, append_missing=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
