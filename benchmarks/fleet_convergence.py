"""Benchmark of fleet convergence: one profile edit reaching 2,000 child runtimes on 4 simulated clusters.

`python -m benchmarks.fleet_convergence` starts the simulated fleet the way a user does, `python -m omectl dev up
--clusters 4` (one process serving the 4 embedded API servers, with `deploy/crds/` applied), and runs the
controller in this process as `ControllerApp`. It creates a ClusterServingRuntime profile on each cluster and 500
ServingRuntime children per cluster inheriting from it, waits until every child is `Resolved`, measures the
servers' raw status-write rate (PUT /status from concurrent aiohttp clients in this process), then deletes the
profile (every child turns `ParentNotFound`), re-creates it (every child returns to `Resolved`) and bumps its
image (every child is re-resolved, no status changes), timing each until every child reflects it. Last, it
measures the memory of an `ObjectCache` of served runtimes with tracemalloc. It prints progress and a final
table, writes `benchmarks/results/fleet_convergence.json` and rewrites its table in `benchmarks/README.md`.
`--quick` runs small counts (the smoke test) and leaves the README alone; `--profile` runs the controller under
cProfile during the delete and re-create phases and prints its hot spots. The results JSON goes to `--out`, or
without it to the committed file only on a run that rewrites the README (not `--quick`, `--no-readme`, `--profile`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import functools
import gc
import pstats
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import psutil

from benchmarks.common import (
    README,
    RESULTS_DIR,
    ROOT,
    DevUpProcess,
    ServerAuth,
    cpu_notes,
    evaluate_targets,
    kubeconfig_credentials,
    machine_info,
    markdown_rows,
    print_phase,
    rewrite_readme_section,
    run_header,
    text_table,
    units_of,
    write_results,
)
from benchmarks.output import not_written_note, results_path
from benchmarks.resolver import API_VERSION, PROFILE_NAME, child_spec, profile_spec
from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.controller.ome.lookup import INHERIT_INDEX, inherit_index
from omectl.controller.ome.watch import OmeWatch
from omectl.kube.cache import ObjectCache
from omectl.kube.transforms import strip_bookkeeping
from omectl.settings import Settings

DEFAULT_OUT = RESULTS_DIR / "fleet_convergence.json"
README_BEGIN = "<!-- fleet-convergence:begin -->"
README_END = "<!-- fleet-convergence:end -->"
CRDS = ROOT / "deploy" / "crds"

GROUP_PATH = "/apis/ome.io/v1beta1"
CONDITION = "InheritanceReady"
PROBE_CONDITION = "BenchmarkProbe"
CLUSTER_PREFIX = "bench-"
USER_AGENT = "omectl-bench/1.0"
SETUP_CLIENTS = 32  # concurrent creates while setting up (not timed)
RAW_CLIENTS = 16  # the controller's default `concurrency`: as many writes in flight as its workers
CONVERGENCE_TARGET = 0.5  # the controller converges at >= 50% of the raw status-write rate

TARGETS: dict[str, tuple[str, float]] = {
    "delete_vs_raw": (">=", CONVERGENCE_TARGET),
    "recreate_vs_raw": (">=", CONVERGENCE_TARGET),
}
# Every figure of a run: name -> (unit, label). Each one is a positive number in the results file.
FIGURES: dict[str, tuple[str, str]] = {
    "children": ("", "child runtimes (profile edit reaches them all)"),
    "create_resolve_s": ("s", "create the children: from the first create until every child is Resolved"),
    "raw_status_writes_per_s": ("/s", "raw PUT /status rate of the servers"),
    "delete_converge_s": ("s", "delete the profile: until every child is ParentNotFound"),
    "delete_children_per_s": ("/s", "delete: children converged/s"),
    "delete_vs_raw": ("", "delete: converged/s ÷ raw writes/s"),
    "recreate_converge_s": ("s", "re-create the profile: until every child is Resolved"),
    "recreate_children_per_s": ("/s", "re-create: children converged/s"),
    "recreate_vs_raw": ("", "re-create: converged/s ÷ raw writes/s"),
    "same_writes_children_per_s": ("/s", "the delete's same writes (PUT /status + POST Event per child): children/s"),
    "delete_vs_same_writes": ("", "delete: converged/s ÷ the same writes' children/s"),
    "image_bump_reresolve_s": ("s", "image bump: until every child is re-resolved (no status change)"),
    "image_bump_children_per_s": ("/s", "image bump: children re-resolved/s"),
    "cache_bytes_per_runtime": ("B", "informer cache memory per runtime (tracemalloc)"),
    "cached_json_bytes": ("B", "average JSON size of a runtime as cached (no managedFields)"),
    "served_json_bytes": ("B", "average JSON size of a runtime as served (with managedFields)"),
    "cache_bytes_over_json": ("", "cache memory ÷ cached JSON size"),
}


@dataclass(frozen=True)
class Sizes:
    """Counts and deadlines of one run; every wait stops at its deadline and says so."""

    clusters: int
    children_per_cluster: int
    namespaces: int
    memory_objects: int
    phase_deadline_s: float


FULL = Sizes(clusters=4, children_per_cluster=500, namespaces=5, memory_objects=10_000, phase_deadline_s=300.0)
QUICK = Sizes(clusters=2, children_per_cluster=10, namespaces=2, memory_objects=500, phase_deadline_s=60.0)


# --- objects -----------------------------------------------------------------------------------------------------


def profile_object(image_tag: str = "v0.5.5.post3-cu129-amd64") -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterServingRuntime",
        "metadata": {"name": PROFILE_NAME, "annotations": {"ome.io/runtime-profile": "true"}},
        "spec": profile_spec(image_tag),
    }


def child_object(namespace: str, name: str, index: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"ome.io/inherit-from": PROFILE_NAME}},
        "spec": child_spec(index),
    }


def inheritance_condition(obj: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    if obj is None:
        return None
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == CONDITION:
            return condition  # type: ignore[no-any-return]
    return None


def is_resolved(obj: Mapping[str, Any] | None) -> bool:
    """The child's status says its chain [profile, child] resolves."""
    condition = inheritance_condition(obj)
    if condition is None or condition.get("status") != "True" or condition.get("reason") != "Resolved":
        return False
    assert obj is not None
    return (obj.get("status") or {}).get("inheritanceChain") == [PROFILE_NAME, obj["metadata"]["name"]]


def is_parent_not_found(obj: Mapping[str, Any] | None) -> bool:
    condition = inheritance_condition(obj)
    return condition is not None and condition.get("status") == "False" and condition.get("reason") == "ParentNotFound"


def warning_event(child: Mapping[str, Any], row: int) -> dict[str, Any]:
    """A Warning Event about `child` in the shape omectl's event recorder creates one (the delete's second write)."""
    meta = child["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.bench{row:06d}{time.time_ns() % 10**9:09d}",
            "namespace": meta["namespace"],
        },
        "involvedObject": {
            "apiVersion": child.get("apiVersion"),
            "kind": child.get("kind"),
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": "Warning",
        "reason": "ParentNotFound",
        "message": f"benchmark: the same write as the controller's event {row}",
        "source": {"component": "omectl-bench"},
        "reportingComponent": "omectl-bench",
        "reportingInstance": "benchmark",
        "firstTimestamp": "2026-12-01T09:00:00Z",
        "lastTimestamp": "2026-12-01T09:00:00Z",
        "count": 1,
    }


# --- the fleet's server process ----------------------------------------------------------------------------------


class FleetProcess(DevUpProcess):
    """`python -m omectl dev up --clusters N` with `deploy/crds/` applied: ready when its ready file lists every
    cluster."""

    def __init__(self, workdir: Path, clusters: int, real: bool = False) -> None:
        super().__init__(
            workdir,
            clusters,
            name_prefix=CLUSTER_PREFIX,
            ready_file=workdir / "fleet.ready",
            kubeconfig=workdir / "fleet.kubeconfig",
            log_path=workdir / "fleet.log",
            apply=CRDS,
            ready_timeout_s=180.0 if real else 90.0,
            poll_s=0.05,
            label="dev up --real" if real else "dev up",
            real=real,
        )

    @property
    def auth(self) -> ServerAuth:
        """Each cluster's token and CA, from the kubeconfig `dev up` wrote."""
        return ServerAuth(kubeconfig_credentials(self.kubeconfig))


# --- observing convergence ---------------------------------------------------------------------------------------

ChildKey = tuple[str, str, str]  # (cluster, namespace, name)
Predicate = Callable[[Mapping[str, Any] | None], bool]


class Convergence:
    """Watches the controller's own informer caches for the moment every child's status says what it should.

    An informer caches an object only from the API server's list or watch, so a child counts as converged once
    the server has committed its new status *and* streamed it back: the time includes the watch delivery.
    """

    def __init__(self, app: ControllerApp, children: list[ChildKey]) -> None:
        self.app = app
        self.children = children
        self.pending: set[ChildKey] = set()
        self.predicate: Predicate = is_resolved
        self.done = asyncio.Event()
        self.last_at = 0.0
        for name, cluster in app.controller.clusters.items():
            cluster.watch(OmeWatch).serving.add_handler(self._handler(name))

    def _handler(self, cluster: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None, bool], None]:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
            meta = obj["metadata"]
            key = (cluster, meta.get("namespace", ""), meta["name"])
            if key in self.pending and event_type != "DELETED" and self.predicate(obj):
                self.pending.discard(key)
                self.last_at = time.perf_counter()
                if not self.pending:
                    self.done.set()

        return on_event

    def cached(self, key: ChildKey) -> dict[str, Any] | None:
        cluster, namespace, name = key
        return self.app.controller.clusters[cluster].watch(OmeWatch).serving.cache.get(namespace, name)

    def expect(self, predicate: Predicate) -> None:
        """From now on, wait for every child to satisfy `predicate` (those that already do count at once)."""
        self.predicate = predicate
        self.pending = {key for key in self.children if not predicate(self.cached(key))}
        self.done = asyncio.Event()
        self.last_at = time.perf_counter()
        if not self.pending:
            self.done.set()

    async def wait(self, phase: str, what: str, started: float, deadline_s: float) -> tuple[float, bool]:
        """Seconds from `started` to the last child converging; True when the deadline stopped the wait."""
        total = len(self.children)
        deadline = started + deadline_s
        next_report = time.perf_counter() + 1.0
        while not self.done.is_set():
            now = time.perf_counter()
            if now > deadline:
                print(f"[{phase:>8}] deadline: {total - len(self.pending)}/{total} {what}", flush=True)
                reasons: dict[str, tuple[int, str]] = {}
                for key in self.pending:
                    condition = inheritance_condition(self.cached(key)) or {}
                    reason = str(condition.get("reason"))
                    count, example = reasons.get(reason, (0, str(condition.get("message"))))
                    reasons[reason] = (count + 1, example)
                for reason, (count, example) in sorted(reasons.items()):
                    print(f"[{phase:>8}]   still pending: {count} with {reason}, e.g. {example}", flush=True)
                return now - started, True
            if now >= next_report:
                print(f"[{phase:>8}] {total - len(self.pending)}/{total} {what} ({now - started:.1f} s)", flush=True)
                next_report = now + 1.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.done.wait(), min(0.25, max(0.01, deadline - now)))
        return self.last_at - started, False


async def wait_idle(app: ControllerApp, deadline_s: float) -> float:
    """Until the work queue holds nothing ready, delayed or in flight (events recorded, retries done)."""
    started = time.perf_counter()
    queue = app.controller.queue
    while len(queue) or queue.in_flight or queue.delayed:
        if time.perf_counter() - started > deadline_s:
            break
        await asyncio.sleep(0.02)
    return time.perf_counter() - started


def namespaces_of(sizes: Sizes) -> list[str]:
    return [f"team-{i}" for i in range(sizes.namespaces)]


def child_keys(sizes: Sizes, clusters: list[str]) -> list[ChildKey]:
    """Every child, the clusters interleaved (the order they are created in)."""
    namespaces = namespaces_of(sizes)
    return [
        (cluster, namespaces[index % len(namespaces)], f"sglang-model-{index:04d}")
        for index in range(sizes.children_per_cluster)
        for cluster in clusters
    ]


# --- HTTP set-up and the raw baseline ----------------------------------------------------------------------------


class Fleet:
    """The bench process's own aiohttp view of the fleet: set-up calls, the raw baseline, server-side checks."""

    def __init__(self, urls: dict[str, str], session: aiohttp.ClientSession, auth: ServerAuth | None = None) -> None:
        self.urls = urls
        self.session = session
        self.auth = auth or ServerAuth({})

    async def call(self, method: str, url: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = orjson.dumps(body) if body is not None else None
        async with self.session.request(method, url, data=data, **self.auth.options(url, content_type)) as resp:
            payload = await resp.read()
            if resp.status >= 300:
                raise RuntimeError(f"{method} {url}: {resp.status} {payload[:300]!r}")
            return orjson.loads(payload) if payload else None

    async def create_profiles(self, sizes: Sizes) -> None:
        for url in self.urls.values():
            for namespace in namespaces_of(sizes):
                await self.call("POST", f"{url}/api/v1/namespaces", {"metadata": {"name": namespace}})
            await self.call("POST", f"{url}{GROUP_PATH}/clusterservingruntimes", profile_object())

    async def create_children(self, children: list[ChildKey]) -> None:
        """POST every child from `SETUP_CLIENTS` concurrent clients, the clusters interleaved."""
        calls: list[Callable[[], Any]] = []
        for index, (cluster, namespace, name) in enumerate(children):
            url = f"{self.urls[cluster]}{GROUP_PATH}/namespaces/{namespace}/servingruntimes"
            body = child_object(namespace, name, index // len(self.urls))
            calls.append(functools.partial(self.call, "POST", url, body))
        await run_concurrently(calls, SETUP_CLIENTS)

    async def list_children(self, cluster: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self.call("GET", f"{self.urls[cluster]}{GROUP_PATH}/servingruntimes"))[
            "items"
        ]
        return items

    async def count_on_server(self, predicate: Predicate) -> int:
        """How many children the servers themselves say satisfy `predicate` (the check after each phase)."""
        lists = await asyncio.gather(*(self.list_children(cluster) for cluster in self.urls))
        return sum(1 for items in lists for item in items if predicate(item))

    async def raw_status_writes(self, clients: int, *, with_events: bool = False) -> tuple[int, float, int]:
        """PUT /status of every child once (a new `BenchmarkProbe` condition) from `clients` concurrent clients;
        `with_events`: each followed by a POST of a Warning Event about the child, as the controller's recorder
        writes one (the delete phase's same writes).

        Bodies are built from a list taken just before (untimed), so each PUT carries the live resourceVersion.
        Returns (children written, seconds, errors).
        """
        per_cluster = await asyncio.gather(*(self.list_children(cluster) for cluster in self.urls))
        requests: list[list[tuple[str, str, bytes]]] = []
        columns = [
            list(zip([url] * len(items), items, strict=True))
            for url, items in zip(self.urls.values(), per_cluster, strict=True)
        ]
        for row in range(max(len(column) for column in columns)):  # interleave the clusters
            for column in columns:
                if row < len(column):
                    url, item = column[row]
                    meta = {k: v for k, v in item["metadata"].items() if k != "managedFields"}
                    status = dict(item.get("status") or {})
                    status["conditions"] = [
                        *(c for c in status.get("conditions") or [] if c.get("type") != PROBE_CONDITION),
                        {
                            "type": PROBE_CONDITION,
                            "status": "True",
                            "reason": "RawWrite",
                            "message": f"raw status write {row}",
                            "lastTransitionTime": "2026-12-01T09:00:00Z",
                        },
                    ]
                    path = f"{GROUP_PATH}/namespaces/{meta['namespace']}/servingruntimes/{meta['name']}/status"
                    unit = [("PUT", url + path, orjson.dumps({**item, "metadata": meta, "status": status}))]
                    if with_events:
                        events = f"{url}/api/v1/namespaces/{meta['namespace']}/events"
                        unit.append(("POST", events, orjson.dumps(warning_event(item, row))))
                    requests.append(unit)
        errors = 0
        next_request = 0

        async def client() -> None:
            nonlocal errors, next_request
            while next_request < len(requests):
                unit = requests[next_request]
                next_request += 1
                failed = False
                for method, url, body in unit:
                    options = self.auth.options(url, "application/json")
                    async with self.session.request(method, url, data=body, **options) as resp:
                        await resp.read()
                        failed = failed or resp.status not in (200, 201)
                errors += failed

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return len(requests) - errors, time.perf_counter() - started, errors


async def run_concurrently(calls: list[Callable[[], Any]], limit: int) -> None:
    position = 0

    async def worker() -> None:
        nonlocal position
        while position < len(calls):
            call = calls[position]
            position += 1
            await call()

    await asyncio.gather(*(worker() for _ in range(limit)))


# --- memory ------------------------------------------------------------------------------------------------------


def measure_cache_memory(served: list[dict[str, Any]], count: int) -> dict[str, float]:
    """tracemalloc: bytes an `ObjectCache` (with the inherit-from index) holds per runtime decoded and kept as the
    runtimes' informer keeps it (orjson, then `strip_bookkeeping`: managedFields dropped, repeated strings shared),
    for `count` runtimes made of the served ones under new names."""
    served_json = [orjson.dumps(item) for item in served]
    cached_sizes = [
        len(orjson.dumps({**item, "metadata": {k: v for k, v in item["metadata"].items() if k != "managedFields"}}))
        for item in served
    ]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        cache = ObjectCache()
        cache.add_index(INHERIT_INDEX, inherit_index)
        for index in range(count):
            obj = orjson.loads(served_json[index % len(served_json)])
            obj["metadata"]["name"] = f"{obj['metadata']['name']}-{index // len(served_json)}"
            cache.upsert(strip_bookkeeping(obj))
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(cache) == count
    per_object = held / count
    cached = sum(cached_sizes) / len(cached_sizes)
    return {
        "objects": count,
        "cache_bytes_per_runtime": round(per_object, 1),
        "cached_json_bytes": round(cached, 1),
        "served_json_bytes": round(sum(len(b) for b in served_json) / len(served_json), 1),
        "cache_bytes_over_json": round(per_object / cached, 2),
    }


# --- the run -----------------------------------------------------------------------------------------------------


class Meter:
    """CPU (in cores) of the server process and of this process over one phase."""

    def __init__(self, server: FleetProcess) -> None:
        self.server = server
        self.me = psutil.Process()
        self.started = time.perf_counter()
        self.server_cpu = server.cpu_seconds()
        times = self.me.cpu_times()
        self.my_cpu = times.user + times.system

    def read(self) -> dict[str, float]:
        span = time.perf_counter() - self.started
        times = self.me.cpu_times()
        return {
            "server_cpu_cores": round((self.server.cpu_seconds() - self.server_cpu) / span, 3),
            "controller_process_cpu_cores": round((times.user + times.system - self.my_cpu) / span, 3),
        }


def controller_counts(app: ControllerApp) -> dict[str, int]:
    stats = app.controller.resolver.stats
    clusters = app.controller.clusters.values()
    return {
        "reconciles": sum(c.health.reconciles for c in clusters),
        "reconcile_errors": sum(c.health.errors for c in clusters),
        "resolver_hits": stats.hits,
        "resolver_misses": stats.misses,
        "resolver_merges": stats.merges,
    }


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {name: after[name] - before[name] for name in after}


class Bench:
    def __init__(self, sizes: Sizes, server: FleetProcess, fleet: Fleet, workdir: Path, profile: bool) -> None:
        self.sizes = sizes
        self.server = server
        self.fleet = fleet
        self.workdir = workdir
        self.profile = cProfile.Profile() if profile else None
        self.figures: dict[str, float] = {}
        self.phases: dict[str, dict[str, Any]] = {}

    def progress(self, phase: str, text: str) -> None:
        details = self.phases[phase]
        notes = cpu_notes(details, "controller_process_cpu_cores", "controller process cpu")
        if details.get("deadline_hit"):
            notes.append("stopped at the deadline")
        print_phase(phase, text, notes, width=8)

    async def run(self, raw_clients: int) -> None:
        sizes = self.sizes
        children = child_keys(sizes, list(self.server.urls))
        self.figures["children"] = float(len(children))
        registry = self.workdir / "clusters"
        write_registrations(registry, self.server.kubeconfig, list(self.server.urls))
        settings = Settings.load(
            webhook_port=0, clusters_dir=registry, trace_file=self.workdir / "traces.jsonl", install_webhooks=False
        )
        gc.collect()
        rss_before = psutil.Process().memory_info().rss
        app = ControllerApp(settings)
        await app.start()
        try:
            # The controller starts on the empty fleet and sees every runtime arrive by watch (see the README for
            # why not on a pre-filled one).
            await app.wait_synced(sizes.phase_deadline_s)
            convergence = Convergence(app, children)
            await self._phase_create(app, convergence, rss_before)
            await self._warm_up_raw_writer(app, raw_clients)
            await self._phase_raw(app, raw_clients)
            await self._phase_raw(app, raw_clients, with_events=True)
            await self._phase_edit(app, convergence, "delete", is_parent_not_found, "ParentNotFound", self._delete)
            await self._phase_edit(app, convergence, "recreate", is_resolved, "Resolved", self._recreate)
            await self._phase_image_bump(app, len(children))
        finally:
            await app.stop()
        served = await self.fleet.list_children(next(iter(self.server.urls)))
        memory = measure_cache_memory(served, sizes.memory_objects)
        self.phases["memory"] = {**memory, "rss_delta_per_cached_runtime": self.phases["create"].pop("rss_delta")}
        for name in ("cache_bytes_per_runtime", "cached_json_bytes", "served_json_bytes", "cache_bytes_over_json"):
            self.figures[name] = memory[name]
        print(
            f"[  memory] {memory['objects']} runtimes in an ObjectCache: {memory['cache_bytes_per_runtime']:,.0f} B "
            f"each vs {memory['cached_json_bytes']:,.0f} B of JSON as cached ({memory['served_json_bytes']:,.0f} B "
            f"as served) = {memory['cache_bytes_over_json']:.2f}x",
            flush=True,
        )
        self.figures["delete_vs_raw"] = round(
            self.figures["delete_children_per_s"] / self.figures["raw_status_writes_per_s"], 3
        )
        self.figures["recreate_vs_raw"] = round(
            self.figures["recreate_children_per_s"] / self.figures["raw_status_writes_per_s"], 3
        )
        self.figures["delete_vs_same_writes"] = round(
            self.figures["delete_children_per_s"] / self.figures["same_writes_children_per_s"], 3
        )

    async def _phase_create(self, app: ControllerApp, convergence: Convergence, rss_before: int) -> None:
        """Profiles first (untimed), then every child from concurrent clients: until every child is Resolved."""
        await self.fleet.create_profiles(self.sizes)
        await wait_idle(app, self.sizes.phase_deadline_s)
        total = len(convergence.children)
        convergence.expect(is_resolved)
        meter = Meter(self.server)
        started = time.perf_counter()
        await self.fleet.create_children(convergence.children)
        created_s = time.perf_counter() - started
        print(f"[  create] {total} children created in {created_s:.2f} s from {SETUP_CLIENTS} clients", flush=True)
        elapsed, deadline_hit = await convergence.wait("create", "Resolved", started, self.sizes.phase_deadline_s)
        cpu = meter.read()
        await wait_idle(app, self.sizes.phase_deadline_s)
        gc.collect()
        rss_delta = psutil.Process().memory_info().rss - rss_before
        verified = await self.fleet.count_on_server(is_resolved)
        self.phases["create"] = {
            **cpu,
            "creates_elapsed_s": round(created_s, 3),
            "elapsed_s": round(elapsed, 3),
            "deadline_hit": deadline_hit,
            "converged": total - len(convergence.pending),
            "verified_on_server": verified,
            **controller_counts(app),
            "rss_delta": round(rss_delta / total, 1),
        }
        self.figures["create_resolve_s"] = round(elapsed, 3)
        self.progress(
            "create", f"{verified}/{total} Resolved (server-side check) {elapsed:.2f} s after the first create"
        )

    async def _warm_up_raw_writer(self, app: ControllerApp, clients: int) -> None:
        """One untimed round of the raw writes: a writer's first write of the status takes the server twice as long
        (a new field manager's entry in every child's managedFields: 2,394/s, then 4,205/s), while the controller's
        own status writes in the phases are not its first (it wrote every child's status in the create phase)."""
        await wait_idle(app, self.sizes.phase_deadline_s)
        meter = Meter(self.server)
        writes, elapsed, errors = await self.fleet.raw_status_writes(clients)
        self.phases["raw_warm_up"] = {
            **meter.read(),
            "writes": writes,
            "errors": errors,
            "elapsed_s": round(elapsed, 3),
        }
        self.progress("raw_warm_up", f"{writes} PUT /status in {elapsed:.2f} s = {writes / elapsed:,.0f}/s (untimed)")

    async def _phase_raw(self, app: ControllerApp, clients: int, *, with_events: bool = False) -> None:
        await wait_idle(app, self.sizes.phase_deadline_s)
        meter = Meter(self.server)
        writes, elapsed, errors = await self.fleet.raw_status_writes(clients, with_events=with_events)
        rate = writes / elapsed
        phase = "same_writes" if with_events else "raw"
        self.phases[phase] = {
            **meter.read(),
            "clients": clients,
            "writes": writes,
            "errors": errors,
            "elapsed_s": round(elapsed, 3),
            "per_s": round(rate, 1),
        }
        if with_events:
            self.figures["same_writes_children_per_s"] = round(rate, 1)
            done = (
                f"{writes} PUT /status + POST Event from {clients} clients in {elapsed:.2f} s = {rate:,.0f} children/s"
            )
        else:
            self.figures["raw_status_writes_per_s"] = round(rate, 1)
            done = f"{writes} PUT /status from {clients} clients in {elapsed:.2f} s = {rate:,.0f}/s"
        self.progress(phase, done)

    async def _delete(self) -> None:
        await asyncio.gather(
            *(
                self.fleet.call("DELETE", f"{url}{GROUP_PATH}/clusterservingruntimes/{PROFILE_NAME}")
                for url in self.server.urls.values()
            )
        )

    async def _recreate(self) -> None:
        await asyncio.gather(
            *(
                self.fleet.call("POST", f"{url}{GROUP_PATH}/clusterservingruntimes", profile_object())
                for url in self.server.urls.values()
            )
        )

    async def _phase_edit(
        self,
        app: ControllerApp,
        convergence: Convergence,
        phase: str,
        predicate: Predicate,
        what: str,
        edit: Callable[[], Any],
    ) -> None:
        await wait_idle(app, self.sizes.phase_deadline_s)
        before = controller_counts(app)
        total = len(convergence.children)
        convergence.expect(predicate)
        if self.profile is not None:
            self.profile.enable()
        meter = Meter(self.server)
        started = time.perf_counter()
        await edit()
        elapsed, deadline_hit = await convergence.wait(phase, what, started, self.sizes.phase_deadline_s)
        cpu = meter.read()
        idle_s = await wait_idle(app, self.sizes.phase_deadline_s)
        if self.profile is not None:
            self.profile.disable()
        verified = await self.fleet.count_on_server(predicate)
        rate = (total - len(convergence.pending)) / elapsed
        self.phases[phase] = {
            **cpu,
            "elapsed_s": round(elapsed, 3),
            "deadline_hit": deadline_hit,
            "converged": total - len(convergence.pending),
            "verified_on_server": verified,
            "queue_idle_after_s": round(idle_s, 3),
            "children_per_s": round(rate, 1),
            **delta(controller_counts(app), before),
        }
        self.figures[f"{phase}_converge_s"] = round(elapsed, 3)
        self.figures[f"{phase}_children_per_s"] = round(rate, 1)
        self.progress(phase, f"{verified}/{total} {what} (server-side check) in {elapsed:.2f} s = {rate:,.0f}/s")

    async def _phase_image_bump(self, app: ControllerApp, total: int) -> None:
        """A spec edit that changes no child's status: timed until every child has been re-resolved."""
        await wait_idle(app, self.sizes.phase_deadline_s)
        before = controller_counts(app)
        meter = Meter(self.server)
        started = time.perf_counter()
        patch = {"spec": {"engineConfig": {"runner": {"image": "docker.io/lmsysorg/sglang:v0.5.6-cu129-amd64"}}}}
        await asyncio.gather(
            *(
                self.fleet.call(
                    "PATCH",
                    f"{url}{GROUP_PATH}/clusterservingruntimes/{PROFILE_NAME}",
                    patch,
                    "application/merge-patch+json",
                )
                for url in self.server.urls.values()
            )
        )
        # Each child misses the cache once (its parent's resourceVersion changed); so does each profile itself.
        expected = total + self.sizes.clusters
        deadline = started + self.sizes.phase_deadline_s
        queue = app.controller.queue
        while True:
            misses = app.controller.resolver.stats.misses - before["resolver_misses"]
            if misses >= expected and not (len(queue) or queue.in_flight):
                break
            if time.perf_counter() > deadline:
                break
            await asyncio.sleep(0.005)
        elapsed = time.perf_counter() - started
        counts = delta(controller_counts(app), before)
        rate = min(counts["resolver_misses"], expected) / elapsed
        self.phases["image_bump"] = {
            **meter.read(),
            "elapsed_s": round(elapsed, 3),
            "deadline_hit": counts["resolver_misses"] < expected,
            "children_per_s": round(rate, 1),
            **counts,
        }
        self.figures["image_bump_reresolve_s"] = round(elapsed, 3)
        self.figures["image_bump_children_per_s"] = round(rate, 1)
        self.progress(
            "image_bump",
            f"{counts['resolver_misses']} re-resolves ({counts['resolver_merges']} merges) in {elapsed:.2f} s = "
            f"{rate:,.0f}/s, no status write",
        )


def run_benchmark(sizes: Sizes, quick: bool, raw_clients: int, profile: bool) -> dict[str, Any]:
    total = sizes.clusters * sizes.children_per_cluster
    print(
        f"fleet convergence benchmark ({'quick' if quick else 'full'}): {sizes.clusters} clusters in one `dev up` "
        f"process, {total} children, the controller in this process",
        flush=True,
    )
    machine = machine_info()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="omectl-bench-fleet-") as tmp:
        workdir = Path(tmp)
        with FleetProcess(workdir, sizes.clusters) as server:

            async def main() -> Bench:
                timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=120)
                connector = aiohttp.TCPConnector(limit=64)
                async with aiohttp.ClientSession(
                    connector=connector, timeout=timeout, headers={"User-Agent": USER_AGENT}
                ) as session:
                    bench = Bench(sizes, server, Fleet(server.urls, session, server.auth), workdir, profile)
                    await bench.run(raw_clients)
                    return bench

            bench = asyncio.run(main())
    if bench.profile is not None:
        for order in ("cumulative", "tottime"):
            print(f"\n=== controller process, delete + re-create phases: top 30 by {order} ===", flush=True)
            pstats.Stats(bench.profile, stream=sys.stdout).sort_stats(order).print_stats(30)
    return {
        **run_header("fleet_convergence", quick, started),
        "machine": machine,
        "layout": {
            "servers": f"one `python -m omectl dev up --clusters {sizes.clusters}` process",
            "controller": "ControllerApp in the benchmark process (defaults: concurrency 16, tracing to a file; "
            "webhooks not installed)",
            "raw_clients": raw_clients,
        },
        "sizes": asdict(sizes),
        "figures": bench.figures,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(bench.figures, quick, TARGETS),
        "phases": bench.phases,
        "profiled": profile,
    }


# --- output ------------------------------------------------------------------------------------------------------


def table_rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for name, (unit, label) in FIGURES.items():
        value = results["figures"][name]
        shown = f"{value:,.0f}" if value >= 100 else f"{value:,.2f}" if value >= 1 else f"{value:.3f}"
        target = results["targets"].get(name)
        wanted = f"{target['op']} {target['target']:.2f}" if target else ""
        verdict = ("PASS" if target["pass"] else "FAIL") if target else ""
        rows.append((label, f"{shown} {unit}".rstrip().replace(" /s", "/s"), wanted, verdict))
    return rows


def format_table(results: dict[str, Any]) -> str:
    return text_table(table_rows(results))


README_INTRO = """## Fleet convergence

```sh
.venv/bin/python -m benchmarks.fleet_convergence                           # the full run; rewrites this section
.venv/bin/python -m benchmarks.fleet_convergence --quick --out /tmp/f.json # small counts, README untouched
.venv/bin/python -m benchmarks.fleet_convergence --profile --no-readme     # cProfile of the controller's phases
```

**Layout.** The 4 simulated clusters are served by one `python -m omectl dev up --clusters 4` process (with
`deploy/crds/` applied); the controller runs in the benchmark process as `ControllerApp` with its default settings
(16 workers, spans to a trace file), minus the admission webhooks (not installed: admission is not on the status
path). On a 2-core machine that gives the API servers one core and the controller the other, as in production
where they are separate processes, and neither the servers nor the controller can be slowed by sharing an event
loop or the GIL with the other. Everything in one process would measure them competing for one core; servers in
the benchmark process would let the raw baseline's clients steal the servers' core. The raw baseline runs from
the benchmark process too, so both rates are measured with the same split of cores, in the same run, against the
same 2,000 objects.

**Phases** (each bounded by a deadline, each printing progress such as `1234/2000 Resolved`):

1. The controller starts on the empty fleet and syncs; a `sglang-profile` ClusterServingRuntime (the spec's profile)
   is created on each cluster, then 500 ServingRuntime children per cluster (2,000 in all, in 5 namespaces, each
   like the spec's `runtime.yaml` with varied args and resources) from 32 concurrent clients: **create** is the time
   from the first create until every child is `Resolved`. (The controller is started first because, started on a
   pre-filled fleet, it left the first 16 children it reconciled at `ParentNotFound` for good: a start-up race,
   the ServingRuntime informer's initial list being reconciled before the ClusterServingRuntime informer's.)
2. **raw**: every child gets one `PUT .../status` with a new `BenchmarkProbe` condition (a real change, so one new
   resourceVersion and one watch event each), after one untimed round of the same (a writer's first status write of
   an object costs the server its new managedFields entry: about twice the time of the next; the controller's
   writes in the phases below are not its first either), built from a list taken just before (untimed) so each
   carries the live resourceVersion, from 16 concurrent aiohttp clients (the controller's worker count) spread over
   the 4 clusters. **raw PUT /status rate** = 2,000 / time to the last response. The controller sees those events and
   ignores them (no chain can change). **The delete's same writes** then do the same again with, after each
   child's PUT, the POST of a Warning Event about it as the controller's recorder creates one: the delete phase
   writes both for every child, the re-create phase only the status (its same writes are the raw ones).
3. **delete**: the profile is deleted on every cluster; every child must turn `InheritanceReady=False`,
   `ParentNotFound` (one status write and one Warning event each).
4. **re-create**: the profile is created again; every child must return to `Resolved`.
5. **image bump**: a merge patch of the profile's image; no child's status changes, so this is timed until the
   resolver has re-resolved every child (each misses the cache once) and the queue is empty: the controller's
   reconcile rate with no write.

**The observable.** A child counts as converged when the controller's own informer cache holds a status that says
so: an informer caches only what the API server lists or streams, so that is after the server committed the write
and streamed it back (the watch delivery is included, which only slows the controller's figure). After each phase
the servers themselves are listed and counted (`verified_on_server`). **converged/s** = 2,000 / time from the edit
to the last child; the target is converged/s >= 50% of the raw rate (the delete is also shown against its same
writes, without a target).

**Memory.** The children as served (with their managedFields) are decoded with orjson and stored in an
`ObjectCache` with the inherit-from index, as the runtimes' informer keeps them (`strip_bookkeeping`: managedFields
dropped, repeated strings shared; until 2026-12-07 this kept the managedFields), under new names until it holds
10,000 runtimes; tracemalloc gives the bytes it holds per runtime, beside the JSON size of a runtime as
cached and as served. (`phases.memory.rss_delta_per_cached_runtime` is the benchmark process's RSS growth per
child over phase 1, which also counts the controller's other state.)
"""


def markdown_table(results: dict[str, Any]) -> str:
    machine = results["machine"]
    phases = results["phases"]
    cpu = ", ".join(
        f"{name} {phases[name]['server_cpu_cores']:.2f} / {phases[name]['controller_process_cpu_cores']:.2f}"
        for name in ("create", "raw", "same_writes", "delete", "recreate", "image_bump")
    )
    lines = [
        README_INTRO,
        *markdown_rows(table_rows(results)),
        "",
        f"Measured {results['timestamp']} ({results['mode']} run, {results['duration_s']} s) on "
        f"{machine['cpu_count']} CPUs, {machine['implementation']} {machine['python']}, {machine['platform']}; "
        f"servers: {results['layout']['servers']}; controller: {results['layout']['controller']}; raw baseline: "
        f"{results['layout']['raw_clients']} concurrent aiohttp clients in the benchmark process.",
        "",
        f"CPU per phase in cores, server process / controller process: {cpu}; 1-minute load average before the run: "
        f"{machine['load_average_1m_before']}. Reconciles per phase: delete {phases['delete']['reconciles']}, "
        f"re-create {phases['recreate']['reconciles']}; every phase was checked on the servers "
        f"(delete {phases['delete']['verified_on_server']}, re-create {phases['recreate']['verified_on_server']} "
        f"of {int(results['figures']['children'])}).",
    ]
    return "\n".join(lines)


# --- command line ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet_convergence", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (the smoke test); the README is untouched")
    parser.add_argument(
        "--out", type=Path, help=f"results JSON (default: {DEFAULT_OUT}, on a run that rewrites the README only)"
    )
    parser.add_argument(
        "--raw-clients", type=int, default=RAW_CLIENTS, help=f"concurrent raw status writers (default {RAW_CLIENTS})"
    )
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the table in the README")
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the controller process in the delete and re-create phases"
    )
    args = parser.parse_args(argv)
    results = run_benchmark(QUICK if args.quick else FULL, args.quick, args.raw_clients, args.profile)
    print("\n" + format_table(results), flush=True)
    rewrites_readme = not args.quick and not args.no_readme and not args.profile
    out = results_path(args.out, DEFAULT_OUT, rewrites_readme=rewrites_readme)
    if out is None:
        print(not_written_note(), flush=True)
    else:
        write_results(out, results)
    if rewrites_readme:
        rewrite_readme_section(README, markdown_table(results), README_BEGIN, README_END, append_missing=True)
        print(f"table rewritten in {README}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
