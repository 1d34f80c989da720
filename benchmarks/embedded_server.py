"""Benchmark of the embedded API server: write, watch and list throughput and memory of one `dev up` process.

`python -m benchmarks.embedded_server` (what `make bench` runs) starts `omectl dev up --clusters 1` as a
subprocess, drives it over HTTP from client processes (aiohttp, one session per process), prints one line per
phase and a final table, writes `benchmarks/results/embedded_server.json` and rewrites the table in
`benchmarks/README.md`; then (`--real auto`, the default, when `make envtest` has built them) the same phases
against a real kube-apiserver + etcd from `dev up --real`, so each figure has the real server's beside it.
`--quick` runs small counts (the smoke test), `--profile` runs the create phase
against a server in this process under cProfile and prints its hot spots. The results JSON goes to `--out`, or
without it to the committed file only on a run that rewrites the README (not `--quick`, `--no-readme`, `--profile`).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import math
import multiprocessing
import os
import pstats
import ssl
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil
import yaml

from benchmarks.common import (
    README,
    REAL_TABLE_HEADER,
    RESULTS_DIR,
    TABLE_HEADER,
    DevUpProcess,
    add_real_option,
    cpu_notes,
    evaluate_targets,
    machine_info,
    markdown_rows,
    print_phase,
    real_server_for,
    rewrite_readme_section,
    run_header,
    text_table,
    units_of,
    write_results,
)
from benchmarks.output import not_written_note, results_path

DEFAULT_OUT = RESULTS_DIR / "embedded_server.json"
README_BEGIN = "<!-- embedded-server:begin -->"
README_END = "<!-- embedded-server:end -->"

GROUP = "bench.omectl.io"
VERSION = "v1"
PLURAL = "widgets"
KIND = "Widget"
CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": PLURAL, "singular": "widget", "kind": KIND, "listKind": f"{KIND}List"},
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["replicas"],
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 0},
                                    "color": {"type": "string", "enum": ["red", "green", "blue", "amber"]},
                                    "size": {"type": "string", "maxLength": 16},
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {"ready": {"type": "boolean"}},
                            },
                        },
                    }
                },
            }
        ],
    },
}
COLORS = ("red", "green", "blue", "amber")
WRITE_NAMESPACE = "default"
WATCH_NAMESPACE = "bench-watch"
MERGE_PATCH = "application/merge-patch+json"
USER_AGENT = "omectl-bench/1.0"

CLIENTS = 32  # concurrent writers, summed over the client processes
# Measured on the 2-core machine: with one client process the server stayed short of a full core (0.94) and
# did ~15% fewer creates/s than with two (0.98 of a core), so the clients run in a pool of two by default.
DEFAULT_CLIENT_PROCS = 2
CONNECTOR_LIMIT = 32  # per client session
WATCHERS = 10
SATURATED_CORES = 0.9  # server CPU use (in cores) under which a write phase is flagged as not server-bound
START_LEAD_S = 1.0  # clients open their connections before the common start instant
WATCH_IDLE_S = 5.0  # a watcher that got nothing for this long after the writers finished gives up

TARGET_OBJECTS = 100_000
REAL_MEMORY_OBJECTS = 20_000  # the real server's fill is slower: its 100k figure is projected from these
TARGETS: dict[str, tuple[str, float]] = {
    "creates_per_s": (">=", 3_000.0),
    "watch_events_delivered_per_s": (">=", 30_000.0),
    "rss_mib_at_100k_objects": ("<=", 1_024.0),
}
# Every figure of a run: name -> (unit, label). Each one is a positive number in the results file.
FIGURES: dict[str, tuple[str, str]] = {
    "creates_per_s": ("/s", "creates/s, 32 clients"),
    "create_p50_ms": ("ms", "create latency p50"),
    "create_p99_ms": ("ms", "create latency p99"),
    "patches_per_s": ("/s", "merge patches/s, 32 clients"),
    "patch_p50_ms": ("ms", "patch latency p50"),
    "watch_events_delivered_per_s": ("/s", "watch events delivered/s, 10 watchers"),
    "watch_phase_writes_per_s": ("/s", "writes/s during the watch phase"),
    "list_p50_ms": ("ms", "full list GET p50"),
    "list_p95_ms": ("ms", "full list GET p95"),
    "rss_mib": ("MiB", "server RSS with the memory-phase objects"),
    "rss_mib_at_100k_objects": ("MiB", "server RSS with 100k objects"),
    "bytes_per_object": ("B", "RSS delta per object"),
    "avg_object_json_bytes": ("B", "average object JSON size"),
}


@dataclass(frozen=True)
class Sizes:
    """Counts and deadlines of one run; every phase stops at its count or its deadline, whichever is first."""

    creates: int
    patches: int
    watch_writes: int
    list_requests: int
    memory_objects: int
    phase_deadline_s: float
    memory_deadline_s: float


FULL = Sizes(
    creates=10_000,
    patches=10_000,
    watch_writes=10_000,
    list_requests=50,
    memory_objects=TARGET_OBJECTS,
    phase_deadline_s=120.0,
    memory_deadline_s=600.0,
)
QUICK = Sizes(
    creates=300,
    patches=300,
    watch_writes=300,
    list_requests=10,
    memory_objects=3_000,
    phase_deadline_s=20.0,
    memory_deadline_s=40.0,
)


# --- client side (runs in the client processes) -----------------------------------------------------


@dataclass(frozen=True)
class WriteBatch:
    """Writes of one kind to objects `prefix + index` for index in [start, stop): creates, or merge patches
    that set spec.replicas to `seed + index` (a new value, so every patch is a real change and one event)."""

    op: str  # "create" or "patch"
    namespace: str
    prefix: str
    start: int
    stop: int
    seed: int = 0

    def split(self, parts: int) -> list[WriteBatch]:
        bounds = [self.start + (self.stop - self.start) * i // parts for i in range(parts + 1)]
        return [replace(self, start=bounds[i], stop=bounds[i + 1]) for i in range(parts)]


@dataclass(frozen=True)
class ClientTask:
    """What one client process does in one phase. Times are `time.monotonic()` (system-wide on Linux)."""

    url: str
    start_at: float
    deadline_s: float
    token: str = ""
    ca_pem: str = ""
    clients: int = 0
    batches: tuple[WriteBatch, ...] = ()
    watchers: int = 0
    watch_rv: str = ""
    watch_expected: int = 0
    list_path: str = ""
    list_requests: int = 0


@dataclass
class ClientReport:
    ok: int = 0
    errors: int = 0
    first_error: str = ""
    deadline_hit: bool = False
    end: float = 0.0  # when the last write (or list) finished
    cpu_s: float = 0.0  # this process's CPU time from the start instant to the end of its work
    latencies_ms: list[float] = field(default_factory=list)
    watch_counts: list[int] = field(default_factory=list)
    watch_last: list[float] = field(default_factory=list)
    list_items: int = 0
    list_bytes: int = 0
    avg_item_json_bytes: float = 0.0

    def fail(self, what: str) -> None:
        self.errors += 1
        if not self.first_error:
            self.first_error = what[:300]


def widget(namespace: str, name: str, index: int) -> dict[str, Any]:
    """The small custom resource every write phase creates."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": "bench", "shard": str(index % 16)},
        },
        "spec": {"replicas": index % 5, "color": COLORS[index % len(COLORS)], "size": "small"},
    }


def collection_path(namespace: str | None) -> str:
    if namespace is None:
        return f"/apis/{GROUP}/{VERSION}/{PLURAL}"
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"


def _requests(batch: WriteBatch) -> Iterator[tuple[str, str, bytes, str]]:
    for index in range(batch.start, batch.stop):
        name = f"{batch.prefix}{index:06d}"
        if batch.op == "create":
            body = orjson.dumps(widget(batch.namespace, name, index))
            yield "POST", collection_path(batch.namespace), body, "application/json"
        else:
            body = orjson.dumps({"spec": {"replicas": batch.seed + index}})
            yield "PATCH", f"{collection_path(batch.namespace)}/{name}", body, MERGE_PATCH


def _interleaved(batches: tuple[WriteBatch, ...]) -> Iterator[tuple[str, str, bytes, str]]:
    """Round-robin over the batches, so a mixed phase mixes its writes all along."""
    streams = [_requests(b) for b in batches]
    while streams:
        for stream in list(streams):
            item = next(stream, None)
            if item is None:
                streams.remove(stream)
            else:
                yield item


def run_client(task: ClientTask) -> ClientReport:
    """Entry point of a client process for one phase."""
    return asyncio.run(_client(task))


def warm_up_process(_: int) -> int:
    """Pays a client process's start-up and imports before anything is timed."""
    time.sleep(0.3)
    return os.getpid()


async def _client(task: ClientTask) -> ClientReport:
    report = ClientReport()
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=None)
    headers = {"User-Agent": USER_AGENT, **({"Authorization": f"Bearer {task.token}"} if task.token else {})}
    tls = ssl.create_default_context(cadata=task.ca_pem) if task.ca_pem else True
    connector = aiohttp.TCPConnector(limit=CONNECTOR_LIMIT, ssl=tls)
    session = aiohttp.ClientSession(task.url, connector=connector, timeout=timeout, headers=headers)
    async with session:
        # Open the connections now so that connection set-up is not timed.
        await asyncio.gather(*(_get_version(session) for _ in range(max(task.clients, 1))))
        # Watch streams hold their connection for the whole phase: they get a session of their own so that
        # the writers keep all 32 connections of theirs.
        watch_connector = aiohttp.TCPConnector(limit=max(task.watchers, 1), ssl=tls)
        async with aiohttp.ClientSession(
            task.url, connector=watch_connector, timeout=timeout, headers=headers
        ) as watch_session:
            report.watch_counts = [0] * task.watchers
            report.watch_last = [0.0] * task.watchers
            watchers = range(task.watchers)
            watch_tasks = [asyncio.create_task(_watch(watch_session, task, report, i)) for i in watchers]
            await asyncio.sleep(max(0.0, task.start_at - time.monotonic()))
            cpu_start = time.process_time()
            if task.list_path:
                await _lists(session, task, report)
            writers = asyncio.create_task(_writes(session, task, report))
            if watch_tasks:
                await _await_watchers(watch_tasks, writers, task, report)
            await writers
            report.cpu_s = time.process_time() - cpu_start
    return report


async def _get_version(session: aiohttp.ClientSession) -> None:
    async with session.get("/version") as resp:
        await resp.read()


async def _writes(session: aiohttp.ClientSession, task: ClientTask, report: ClientReport) -> None:
    if not task.batches:
        return
    requests = _interleaved(task.batches)  # shared by every client coroutine: each takes the next write
    deadline = task.start_at + task.deadline_s

    async def one_client() -> None:
        for method, path, body, content_type in requests:
            if time.monotonic() > deadline:
                report.deadline_hit = True
                return
            started = time.perf_counter()
            try:
                headers = {"Content-Type": content_type}
                async with session.request(method, path, data=body, headers=headers) as resp:
                    payload = await resp.read()
                    status = resp.status
            except aiohttp.ClientError as exc:
                report.fail(f"{method} {path}: {exc!r}")
                continue
            report.latencies_ms.append((time.perf_counter() - started) * 1000)
            if status in (200, 201):
                report.ok += 1
            else:
                report.fail(f"{method} {path}: {status} {payload[:200].decode(errors='replace')}")
            report.end = time.monotonic()

    await asyncio.gather(*(one_client() for _ in range(task.clients)))


async def _watch(session: aiohttp.ClientSession, task: ClientTask, report: ClientReport, index: int) -> None:
    """One raw watch stream of every Widget from `watch_rv` on, counting the event lines it reads."""
    query = f"watch=1&resourceVersion={task.watch_rv}&timeoutSeconds={int(task.deadline_s) + 60}"
    async with session.get(f"{collection_path(None)}?{query}") as resp:
        if resp.status != 200:
            report.fail(f"watch: {resp.status} {(await resp.read())[:200]!r}")
            return
        tail = b""
        async for chunk in resp.content.iter_any():
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            events = 0
            for line in lines:
                if not line:
                    continue
                event_type = orjson.loads(line).get("type")
                if event_type in ("ADDED", "MODIFIED", "DELETED"):
                    events += 1
                elif event_type == "ERROR":
                    report.fail(f"watch: {line[:200]!r}")
                    return
            if events:
                report.watch_counts[index] += events
                report.watch_last[index] = time.monotonic()
            if report.watch_counts[index] >= task.watch_expected:
                return


async def _await_watchers(
    watch_tasks: list[asyncio.Task[None]], writers: asyncio.Task[None], task: ClientTask, report: ClientReport
) -> None:
    """Until every watcher saw every expected event, the deadline passed, or the streams went quiet."""
    deadline = task.start_at + task.deadline_s
    while not all(t.done() for t in watch_tasks):
        now = time.monotonic()
        if now > deadline:
            report.deadline_hit = True
            break
        newest = max([task.start_at, *report.watch_last])
        if writers.done() and now - newest > WATCH_IDLE_S:
            break
        await asyncio.sleep(0.05)
    for t in watch_tasks:
        t.cancel()
    for outcome in await asyncio.gather(*watch_tasks, return_exceptions=True):
        if isinstance(outcome, Exception):
            report.fail(f"watch: {outcome!r}")


async def _lists(session: aiohttp.ClientSession, task: ClientTask, report: ClientReport) -> None:
    """Sequential full list GETs (two untimed warm-ups first); the first body is decoded to check it."""
    deadline = task.start_at + task.deadline_s
    for attempt in range(task.list_requests + 2):
        if time.monotonic() > deadline:
            report.deadline_hit = True
            return
        started = time.perf_counter()
        async with session.get(task.list_path) as resp:
            body = await resp.read()
            status = resp.status
        elapsed_ms = (time.perf_counter() - started) * 1000
        if status != 200:
            report.fail(f"list: {status} {body[:200]!r}")
            continue
        if attempt == 0:
            items = orjson.loads(body)["items"]
            report.list_items = len(items)
            report.list_bytes = len(body)
            if items:
                report.avg_item_json_bytes = sum(len(orjson.dumps(i)) for i in items) / len(items)
        if attempt >= 2:
            report.latencies_ms.append(elapsed_ms)
            report.ok += 1
        report.end = time.monotonic()


@dataclass(frozen=True)
class Endpoint:
    """Where the clients go: the server's URL and its credentials."""

    url: str
    token: str = ""
    ca_pem: str = ""

    def task(self, start_at: float, deadline_s: float, **work: Any) -> ClientTask:
        """A client task against this server, with its credentials."""
        return ClientTask(self.url, start_at, deadline_s, token=self.token, ca_pem=self.ca_pem, **work)


# --- server process ---------------------------------------------------------------------------------


class ServerProcess(DevUpProcess):
    """`python -m omectl dev up --clusters 1` in a subprocess (with `real`: `--real`, a real etcd and
    kube-apiserver): ready when its ready file names the URL."""

    def __init__(self, workdir: Path, manifest: Path, name: str, real: bool = False) -> None:
        super().__init__(
            workdir,
            1,
            name_prefix=f"{name}-",
            ready_file=workdir / f"{name}.ready",
            kubeconfig=workdir / f"{name}.kubeconfig",
            log_path=workdir / f"{name}.log",
            apply=manifest,
            ready_timeout_s=60.0,
            poll_s=0.02,
            label=f"server {name}",
            real=real,
        )
        self.manifest = manifest
        self.name = name
        self.token = ""
        self.ca_pem = ""

    def __enter__(self) -> ServerProcess:
        super().__enter__()
        self.token, self.ca_pem = self.credentials()
        return self

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.url, self.token, self.ca_pem)

    def task(self, start_at: float, deadline_s: float, **work: Any) -> ClientTask:
        return self.endpoint.task(start_at, deadline_s, **work)

    def http_json(self, path: str, method: str = "GET", body: dict[str, Any] | None = None) -> dict[str, Any]:
        """A set-up call (not timed): namespaces, the current resourceVersion."""
        data = orjson.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        context = ssl.create_default_context(cadata=self.ca_pem) if self.ca_pem else None
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30, context=context) as resp:
            result: dict[str, Any] = orjson.loads(resp.read())
            return result

    @property
    def url(self) -> str:
        """The one cluster's URL ("" until the server is ready)."""
        return next(iter(self.urls.values()), "")


# --- phases (benchmark process) ---------------------------------------------------------------------


@dataclass
class PhaseRun:
    reports: list[ClientReport]
    start_at: float
    server_cpu_s: float
    span_s: float  # from the start instant until every client process reported

    @property
    def ok(self) -> int:
        return sum(r.ok for r in self.reports)

    @property
    def errors(self) -> int:
        return sum(r.errors for r in self.reports)

    @property
    def write_elapsed_s(self) -> float:
        return max(r.end for r in self.reports) - self.start_at

    def latencies(self) -> list[float]:
        return [x for r in self.reports for x in r.latencies_ms]

    def summary(self) -> dict[str, Any]:
        client_cpu = sum(r.cpu_s for r in self.reports)
        return {
            "ok": self.ok,
            "errors": self.errors,
            "first_error": next((r.first_error for r in self.reports if r.first_error), ""),
            "deadline_hit": any(r.deadline_hit for r in self.reports),
            "client_processes": len(self.reports),
            # CPU seconds per wall second: 1.0 is one core busy the whole phase.
            "server_cpu_cores": round(self.server_cpu_s / self.span_s, 3) if self.span_s > 0 else 0.0,
            "client_cpu_cores": round(client_cpu / self.span_s, 3) if self.span_s > 0 else 0.0,
        }


class Bench:
    """Runs the phases with a pool of client processes and collects the results."""

    def __init__(self, sizes: Sizes, client_procs: int, pool: ProcessPoolExecutor) -> None:
        self.sizes = sizes
        self.client_procs = client_procs
        self.pool = pool
        self.phases: dict[str, dict[str, Any]] = {}
        self.figures: dict[str, float] = {}

    def run_phase(self, server: ServerProcess, tasks: list[ClientTask]) -> PhaseRun:
        futures: list[Future[ClientReport]] = [self.pool.submit(run_client, t) for t in tasks]
        start_at = tasks[0].start_at
        time.sleep(max(0.0, start_at - time.monotonic()))
        cpu_before = server.cpu_seconds()
        reports = [f.result() for f in futures]
        span = time.monotonic() - start_at
        return PhaseRun(reports, start_at, server.cpu_seconds() - cpu_before, span)

    def write_tasks(self, endpoint: Endpoint, batch: WriteBatch, deadline_s: float) -> list[ClientTask]:
        start_at = time.monotonic() + START_LEAD_S
        return [
            endpoint.task(start_at, deadline_s, clients=clients, batches=(part,))
            for part, clients in zip(batch.split(self.client_procs), self._clients_per_process(), strict=True)
        ]

    def _clients_per_process(self) -> list[int]:
        return [
            CLIENTS // self.client_procs + (1 if i < CLIENTS % self.client_procs else 0)
            for i in range(self.client_procs)
        ]

    def _write_phase(self, name: str, server: ServerProcess, batch: WriteBatch, deadline: float) -> PhaseRun:
        run = self.run_phase(server, self.write_tasks(server.endpoint, batch, deadline))
        elapsed = run.write_elapsed_s
        latencies = sorted(run.latencies())
        rate = run.ok / elapsed if elapsed > 0 else 0.0
        self.phases[name] = {
            **run.summary(),
            "requested": batch.stop - batch.start,
            "elapsed_s": round(elapsed, 3),
            "per_s": round(rate, 1),
            "p50_ms": round(percentile(latencies, 50), 3),
            "p99_ms": round(percentile(latencies, 99), 3),
        }
        return run

    def creates(self, server: ServerProcess) -> int:
        batch = WriteBatch("create", WRITE_NAMESPACE, "w-", 0, self.sizes.creates)
        run = self._write_phase("create", server, batch, self.sizes.phase_deadline_s)
        phase = self.phases["create"]
        self.figures["creates_per_s"] = phase["per_s"]
        self.figures["create_p50_ms"] = phase["p50_ms"]
        self.figures["create_p99_ms"] = phase["p99_ms"]
        progress("create", f"{run.ok} objects in {phase['elapsed_s']:.2f} s = {phase['per_s']:,.0f}/s", phase)
        return run.ok

    def patches(self, server: ServerProcess, objects: int) -> None:
        count = min(self.sizes.patches, objects)
        batch = WriteBatch("patch", WRITE_NAMESPACE, "w-", 0, count, seed=1_000_000)
        run = self._write_phase("patch", server, batch, self.sizes.phase_deadline_s)
        phase = self.phases["patch"]
        self.figures["patches_per_s"] = phase["per_s"]
        self.figures["patch_p50_ms"] = phase["p50_ms"]
        text = f"{run.ok} merge patches in {phase['elapsed_s']:.2f} s = {phase['per_s']:,.0f}/s"
        progress("patch", text, phase)

    def watch(self, server: ServerProcess, objects: int) -> None:
        server.http_json("/api/v1/namespaces", "POST", {"metadata": {"name": WATCH_NAMESPACE}})
        rv = server.http_json(f"{collection_path(None)}?limit=1")["metadata"]["resourceVersion"]
        creates = self.sizes.watch_writes // 2
        patch_count = min(self.sizes.watch_writes - creates, objects)
        expected = creates + patch_count
        create_parts = WriteBatch("create", WATCH_NAMESPACE, "ww-", 0, creates).split(self.client_procs)
        patch_parts = WriteBatch("patch", WRITE_NAMESPACE, "w-", 0, patch_count, seed=2_000_000).split(
            self.client_procs
        )
        watchers = [
            WATCHERS // self.client_procs + (1 if i < WATCHERS % self.client_procs else 0)
            for i in range(self.client_procs)
        ]
        start_at = time.monotonic() + START_LEAD_S
        tasks = [
            server.task(
                start_at,
                self.sizes.phase_deadline_s,
                clients=clients,
                batches=(create_parts[i], patch_parts[i]),
                watchers=watchers[i],
                watch_rv=rv,
                watch_expected=expected,
            )
            for i, clients in enumerate(self._clients_per_process())
        ]
        run = self.run_phase(server, tasks)
        counts = [c for r in run.reports for c in r.watch_counts]
        last = max(t for r in run.reports for t in r.watch_last)
        delivered = sum(counts)
        deliver_s = last - run.start_at if delivered else 0.0
        write_s = run.write_elapsed_s
        self.phases["watch"] = {
            **run.summary(),
            "watchers": len(counts),
            "writes_requested": expected,
            "writes_elapsed_s": round(write_s, 3),
            "writes_per_s": round(run.ok / write_s, 1) if write_s > 0 else 0.0,
            "events_expected_per_watcher": expected,
            "events_per_watcher": counts,
            "events_delivered": delivered,
            "delivery_elapsed_s": round(deliver_s, 3),
            "events_delivered_per_s": round(delivered / deliver_s, 1) if deliver_s > 0 else 0.0,
        }
        phase = self.phases["watch"]
        self.figures["watch_events_delivered_per_s"] = phase["events_delivered_per_s"]
        self.figures["watch_phase_writes_per_s"] = phase["writes_per_s"]
        progress(
            "watch",
            f"{delivered} events to {len(counts)} watchers in {deliver_s:.2f} s = "
            f"{phase['events_delivered_per_s']:,.0f}/s while writing {phase['writes_per_s']:,.0f}/s",
            phase,
        )

    def lists(self, server: ServerProcess) -> None:
        task = server.task(
            time.monotonic() + START_LEAD_S,
            self.sizes.phase_deadline_s,
            list_path=collection_path(WRITE_NAMESPACE),
            list_requests=self.sizes.list_requests,
        )
        run = self.run_phase(server, [task])
        report = run.reports[0]
        latencies = sorted(report.latencies_ms)
        self.phases["list"] = {
            **run.summary(),
            "objects": report.list_items,
            "body_bytes": report.list_bytes,
            "requests": len(latencies),
            "p50_ms": round(percentile(latencies, 50), 3),
            "p95_ms": round(percentile(latencies, 95), 3),
            "max_ms": round(latencies[-1], 3) if latencies else 0.0,
        }
        phase = self.phases["list"]
        self.figures["list_p50_ms"] = phase["p50_ms"]
        self.figures["list_p95_ms"] = phase["p95_ms"]
        progress(
            "list",
            f"{len(latencies)} GETs of {report.list_items} objects ({report.list_bytes / 2**20:.1f} MiB): "
            f"p50 {phase['p50_ms']:.1f} ms, p95 {phase['p95_ms']:.1f} ms",
            phase,
        )

    def memory(self, server: ServerProcess) -> None:
        time.sleep(0.5)  # let start-up garbage settle before the baseline
        baseline = server.rss()
        batch = WriteBatch("create", WRITE_NAMESPACE, "m-", 0, self.sizes.memory_objects)
        run = self.run_phase(server, self.write_tasks(server.endpoint, batch, self.sizes.memory_deadline_s))
        time.sleep(0.5)
        stored = run.ok
        rss = server.rss()
        sample = self.run_phase(
            server,
            [
                server.task(
                    time.monotonic() + START_LEAD_S,
                    self.sizes.phase_deadline_s,
                    list_path=f"{collection_path(WRITE_NAMESPACE)}?limit=500",
                    list_requests=0,
                )
            ],
        ).reports[0]
        per_object = (rss - baseline) / stored if stored else 0.0
        measured_at_target = stored >= TARGET_OBJECTS
        rss_at_target = rss if measured_at_target else baseline + per_object * TARGET_OBJECTS
        elapsed = run.write_elapsed_s
        self.phases["memory"] = {
            **run.summary(),
            "objects": stored,
            "fill_elapsed_s": round(elapsed, 3),
            "fill_creates_per_s": round(stored / elapsed, 1) if elapsed > 0 else 0.0,
            "rss_baseline_bytes": baseline,
            "rss_bytes": rss,
            "rss_at_100k_objects": "measured" if measured_at_target else "projected from the delta",
            "json_size_sample_objects": sample.list_items,
        }
        self.figures["rss_mib"] = round(rss / 2**20, 1)
        self.figures["rss_mib_at_100k_objects"] = round(rss_at_target / 2**20, 1)
        self.figures["bytes_per_object"] = round(per_object, 1)
        self.figures["avg_object_json_bytes"] = round(sample.avg_item_json_bytes, 1)
        progress(
            "memory",
            f"{stored} objects: RSS {rss / 2**20:.1f} MiB (baseline {baseline / 2**20:.1f} MiB), "
            f"{per_object:,.0f} B/object vs {sample.avg_item_json_bytes:,.0f} B of JSON each",
            self.phases["memory"],
        )


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list (0.0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def progress(phase: str, text: str, details: dict[str, Any]) -> None:
    notes = cpu_notes(details, "client_cpu_cores", "client cpu")
    if details["errors"]:
        notes.append(f"{details['errors']} errors, first: {details['first_error']}")
    if details["deadline_hit"]:
        notes.append("stopped at the deadline")
    if phase != "list" and details["server_cpu_cores"] < SATURATED_CORES:
        # The server is one asyncio process: short of a full core, something else was the limit.
        notes.append("server below one core: other load on the machine, or the clients, limited it")
    print_phase(phase, text, notes, width=6)


def write_manifest(workdir: Path) -> Path:
    path = workdir / "bench-crd.yaml"
    path.write_text(yaml.safe_dump(CRD, sort_keys=False))
    return path


def client_note(client_procs: int) -> str:
    if client_procs == 1:
        return f"1 client process: {CLIENTS} concurrent clients on one aiohttp session (connector limit 32)"
    return (
        f"a multiprocessing pool of {client_procs} client processes (one could not saturate the server), "
        f"{CLIENTS} concurrent clients in all, one aiohttp session each (connector limit 32)"
    )


def run_benchmark(sizes: Sizes, client_procs: int, quick: bool, real: str | None) -> dict[str, Any]:
    """Every phase against the embedded server, then (with `real`, the real server's versions) the same phases
    against a real kube-apiserver + etcd started the same way (`dev up --real`), in the same run."""
    print(
        f"embedded API server benchmark ({'quick' if quick else 'full'}): {client_note(client_procs)}",
        flush=True,
    )
    load_before = os.getloadavg()[0]
    context = multiprocessing.get_context("spawn")
    started = time.monotonic()
    with (
        ProcessPoolExecutor(client_procs, mp_context=context) as pool,
        tempfile.TemporaryDirectory(prefix="omectl-bench-") as tmp,
    ):
        list(pool.map(warm_up_process, range(client_procs)))
        workdir = Path(tmp)
        manifest = write_manifest(workdir)
        bench = run_phases(Bench(sizes, client_procs, pool), workdir, manifest, real=False)
        real_bench = None
        if real is not None:
            print(f"the same phases against a real {real} (`dev up --real`)", flush=True)
            real_sizes = replace(sizes, memory_objects=min(sizes.memory_objects, REAL_MEMORY_OBJECTS))
            real_bench = run_phases(Bench(real_sizes, client_procs, pool), workdir, manifest, real=True)
    results: dict[str, Any] = {
        **run_header("embedded_server", quick, started),
        "machine": machine_info(
            load_before, {"memory_bytes": psutil.virtual_memory().total, "aiohttp": aiohttp.__version__}
        ),
        "clients": {
            "processes": client_procs,
            "concurrent_writers": CLIENTS,
            "connector_limit": CONNECTOR_LIMIT,
            "watchers": WATCHERS,
            "note": client_note(client_procs) + "; watch streams use a second session so writers keep 32",
        },
        "sizes": asdict(sizes),
        "figures": bench.figures,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(bench.figures, quick, TARGETS),
        "phases": bench.phases,
    }
    if real_bench is not None:
        results["real_server"] = {
            "server": real,
            "sizes": asdict(real_bench.sizes),
            "figures": real_bench.figures,
            "embedded_over_real": {
                name: round(value / real_bench.figures[name], 3)
                for name, value in bench.figures.items()
                if real_bench.figures.get(name)
            },
            "phases": real_bench.phases,
        }
    return results


def run_phases(bench: Bench, workdir: Path, manifest: Path, *, real: bool) -> Bench:
    prefix = "real-" if real else ""
    with ServerProcess(workdir, manifest, f"{prefix}bench", real=real) as server:
        created = bench.creates(server)
        bench.patches(server, created)
        bench.watch(server, created)
        bench.lists(server)
    with ServerProcess(workdir, manifest, f"{prefix}mem", real=real) as server:
        bench.memory(server)
    return bench


# --- output -----------------------------------------------------------------------------------------


def _shown(value: float, unit: str) -> str:
    shown = f"{value:,.0f}" if value >= 100 else f"{value:,.2f}"
    return f"{shown} {unit}".replace(" /s", "/s")


def table_header(results: dict[str, Any]) -> tuple[str, ...]:
    if "real_server" not in results:
        return TABLE_HEADER
    return REAL_TABLE_HEADER


def table_rows(results: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    real = results.get("real_server")
    for name, (unit, label) in FIGURES.items():
        value = results["figures"][name]
        target = results["targets"].get(name)
        wanted = f"{target['op']} {target['target']:,.0f}" if target else ""
        verdict = ("PASS" if target["pass"] else "FAIL") if target else ""
        if real is None:
            rows.append((label, _shown(value, unit), wanted, verdict))
            continue
        real_value = real["figures"].get(name)
        ratio = real["embedded_over_real"].get(name)
        rows.append(
            (
                label,
                _shown(value, unit),
                _shown(real_value, unit) if real_value else "",
                f"{ratio:.2f}x" if ratio else "",
                wanted,
                verdict,
            )
        )
    return rows


def format_table(results: dict[str, Any]) -> str:
    return text_table(table_rows(results), table_header(results))


def markdown_table(results: dict[str, Any]) -> str:
    machine = results["machine"]
    lines = [
        *markdown_rows(table_rows(results), table_header(results)),
        "",
        f"Measured {results['timestamp']} ({results['mode']} run, {results['duration_s']} s) on "
        f"{machine['cpu_count']} CPUs, {machine['implementation']} {machine['python']}, "
        f"{machine['platform']}; "
        f"clients: {results['clients']['note']}.",
        "",
        "Server CPU use per phase, in cores (about 1.00 means the server was the limit): "
        + ", ".join(f"{name} {phase['server_cpu_cores']:.2f}" for name, phase in results["phases"].items())
        + f"; 1-minute load average just before the run: {machine['load_average_1m_before']}.",
    ]
    real = results.get("real_server")
    if real is not None:
        lines += [
            "",
            f"Real server: {real['server']}, started by `omectl dev up --real` with the same CRD, the same clients "
            f"and the same counts, after the embedded server, in the same run (its memory figures are etcd + "
            f"kube-apiserver + the `dev up` process, filled with {real['sizes']['memory_objects']:,} objects and "
            "projected to 100k). Its CPU use per phase, in cores (two processes, so up to 2.00): "
            + ", ".join(f"{name} {phase['server_cpu_cores']:.2f}" for name, phase in real["phases"].items())
            + ".",
        ]
    return "\n".join(lines)


# --- profile ----------------------------------------------------------------------------------------


def run_profile(sizes: Sizes, client_procs: int, top: int, dump: Path | None) -> None:
    """The create phase against a server in this process under cProfile; prints the top functions."""
    from omectl.sim.apiserver.server import EmbeddedAPIServer
    from omectl.sim.fleet import apply_document

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(client_procs, mp_context=context) as pool:
        list(pool.map(warm_up_process, range(client_procs)))

        async def profiled() -> tuple[cProfile.Profile, list[ClientReport], float]:
            server = EmbeddedAPIServer("bench-profile")
            await server.start()
            try:
                await apply_document(server, CRD)
                bench = Bench(sizes, client_procs, pool)
                batch = WriteBatch("create", WRITE_NAMESPACE, "w-", 0, sizes.creates)
                tasks = bench.write_tasks(Endpoint(server.url, server.token), batch, sizes.phase_deadline_s)
                futures = [asyncio.wrap_future(pool.submit(run_client, t)) for t in tasks]
                await asyncio.sleep(max(0.0, tasks[0].start_at - time.monotonic()))
                profiler = cProfile.Profile()
                profiler.enable()
                reports = await asyncio.gather(*futures)
                profiler.disable()
                return profiler, list(reports), tasks[0].start_at
            finally:
                await server.stop()

        profiler, reports, start_at = asyncio.run(profiled())
    ok = sum(r.ok for r in reports)
    elapsed = max(r.end for r in reports) - start_at
    print(
        f"[profile] {ok} creates in {elapsed:.2f} s = {ok / elapsed:,.0f}/s under cProfile "
        f"(server in this process; not comparable with the benchmark figures)",
        flush=True,
    )
    if dump is not None:
        profiler.dump_stats(str(dump))
        print(f"[profile] stats written to {dump}", flush=True)
    for order in ("cumulative", "tottime"):
        print(f"\n=== top {top} functions by {order} time ===", flush=True)
        pstats.Stats(profiler, stream=sys.stdout).sort_stats(order).print_stats(top)


# --- command line -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    description = __doc__.split("\n")[0]
    parser = argparse.ArgumentParser(prog="python -m benchmarks.embedded_server", description=description)
    parser.add_argument("--quick", action="store_true", help="small counts (smoke test); README untouched")
    parser.add_argument(
        "--out", type=Path, help=f"results JSON (default: {DEFAULT_OUT}, on a run that rewrites the README only)"
    )
    parser.add_argument(
        "--client-procs",
        type=int,
        choices=(1, 2),
        default=DEFAULT_CLIENT_PROCS,
        help=f"client processes (default {DEFAULT_CLIENT_PROCS})",
    )
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the table in the README")
    add_real_option(parser)
    parser.add_argument("--profile", action="store_true", help="cProfile the create phase, server in-process")
    parser.add_argument("--profile-top", type=int, default=25, help="functions listed per ordering")
    parser.add_argument("--profile-out", type=Path, default=None, help="also dump the cProfile stats here")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.profile:
        run_profile(sizes, args.client_procs, args.profile_top, args.profile_out)
        return 0
    real, error = real_server_for(args.real)
    if error:
        print(error, file=sys.stderr)
        return 1
    results = run_benchmark(sizes, args.client_procs, args.quick, real)
    print("\n" + format_table(results), flush=True)
    rewrites_readme = not args.quick and not args.no_readme
    out = results_path(args.out, DEFAULT_OUT, rewrites_readme=rewrites_readme)
    if out is None:
        print(not_written_note(), flush=True)
    else:
        write_results(out, results)
    if rewrites_readme:
        if rewrite_readme_section(README, markdown_table(results), README_BEGIN, README_END, append_missing=False):
            print(f"table rewritten in {README}", flush=True)
        else:
            print(f"warning: {README} has no {README_BEGIN} ... {README_END} markers", flush=True)
    return 0


if __name__ == "__main__":
    # Run through the importable module, so that the client processes unpickle its functions by that name.
    from benchmarks.embedded_server import main as module_main

    sys.exit(module_main())
