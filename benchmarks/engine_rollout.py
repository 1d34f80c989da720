"""Benchmark of an engine rollout: one profile edit reaching 2,000 autoSync InferenceServices on 4 simulated clusters.

`python -m benchmarks.engine_rollout` starts the simulated fleet the way a user does, `python -m omectl dev up
--clusters 4` (one process serving the 4 embedded API servers, with `deploy/crds/` applied), and runs the controller
in this process as `ControllerApp`. On each cluster it creates the samples' ClusterBaseModel and `sglang-profile`
ClusterServingRuntime, a ServingRuntime child of the profile in each namespace, then 500 InferenceServices naming
that child (autoSync), and times until every engine Deployment is rendered. Then, 3 times, it merge-patches the
profile's runner image and times until every engine Deployment in the controller's informer cache carries the new
image, counting the API writes it took (applies, Deployment updates seen by watch, InferenceService status writes,
ControllerRevisions). With the controller stopped, a plain aiohttp client then makes the same writes the controller
made (recorded as it sent them), 3 times for the render and 3 for the edit: the baselines of the two rates. Each
figure is the median of its rounds, printed with their range. It prints progress and a final table; a full run writes
`benchmarks/results/engine_rollout.json` and rewrites its section in `benchmarks/README.md`. `--quick` runs small
counts (the smoke test) and leaves both alone, as do `--profile` (the controller under cProfile during the first
edit, its hot spots printed) and `--no-readme`; `--out` writes the results JSON where it says.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import cProfile
import functools
import gc
import pstats
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import yaml

from benchmarks.common import (
    README,
    REAL_TABLE_HEADER,
    RESULTS_DIR,
    ROOT,
    TABLE_HEADER,
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
from benchmarks.fleet_convergence import (
    SETUP_CLIENTS,
    USER_AGENT,
    Fleet,
    FleetProcess,
    Meter,
    controller_counts,
    delta,
    run_concurrently,
    wait_idle,
)
from benchmarks.output import not_written_note, results_path
from benchmarks.repeats import ROUNDS, median_and_spread
from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.controller.ome.watch import ISVC_LABEL, OmeWatch
from omectl.controller.runtime.apply import RENDER_HASH
from omectl.core.ome.render import component_name
from omectl.kube.client import PATCH_CONTENT_TYPES, ClusterClient
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.settings import Settings

DEFAULT_OUT = RESULTS_DIR / "engine_rollout.json"
README_BEGIN = "<!-- engine-rollout:begin -->"
README_END = "<!-- engine-rollout:end -->"
SAMPLES = ROOT / "deploy" / "samples" / "ome"

OME_PATH = "/apis/ome.io/v1beta1"
APPS_PATH = "/apis/apps/v1"
RUNNER = "ome-container"  # the runner container of the sample profile
NEW_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-cu129-amd64"
SAME_WRITES_TARGET = 0.5  # the controller reaches >= 50% of the rate of the same writes made by a plain client
SAME_WRITES_CLIENTS = 32  # the plain client's connections

TARGETS: dict[str, tuple[str, float]] = {
    "render_vs_same_writes": (">=", SAME_WRITES_TARGET),
    "edit_vs_same_writes": (">=", SAME_WRITES_TARGET),
    "deployment_updates_per_isvc": ("==", 1.0),
}
# Every figure of a run: name -> (unit, label). Each one is a positive number in the results file.
FIGURES: dict[str, tuple[str, str]] = {
    "inference_services": ("", "autoSync InferenceServices (the profile edit reaches them all)"),
    "render_s": ("s", "render: from the first create until every engine Deployment has the profile's image"),
    "render_isvcs_per_s": ("/s", "render: InferenceServices rendered/s"),
    "same_writes_render_per_s": ("/s", "the same writes by a plain client: InferenceServices created/s"),
    "render_vs_same_writes": ("", "render: rendered/s ÷ the same writes' rate"),
    "edit_rollout_s": ("s", "profile edit: until every engine Deployment has the new image"),
    "edit_isvcs_per_s": ("/s", "profile edit: Deployments rolled out/s"),
    "same_writes_edit_per_s": ("/s", "the same writes by a plain client: InferenceServices rolled out/s"),
    "edit_vs_same_writes": ("", "profile edit: rolled out/s ÷ the same writes' rate"),
    "deployment_updates_per_isvc": ("", "profile edit: Deployment updates (watch events) per InferenceService"),
    "api_writes_per_isvc": ("", "profile edit: all API writes per InferenceService"),
}


@dataclass(frozen=True)
class Sizes:
    """Counts and deadlines of one run; every wait stops at its deadline and says so."""

    clusters: int
    isvcs_per_cluster: int
    namespaces: int
    phase_deadline_s: float


FULL = Sizes(clusters=4, isvcs_per_cluster=500, namespaces=5, phase_deadline_s=300.0)
QUICK = Sizes(clusters=2, isvcs_per_cluster=10, namespaces=2, phase_deadline_s=60.0)


# --- objects (the samples, renamed) ------------------------------------------------------------------------------


def sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((SAMPLES / name).read_text())
    return loaded


PROFILE = sample("profile.yaml")
RUNTIME = sample("runtime.yaml")
MODEL = sample("clusterbasemodel.yaml")
ISVC = sample("isvc.yaml")
PROFILE_NAME: str = PROFILE["metadata"]["name"]
CHILD_NAME: str = RUNTIME["metadata"]["name"]
OLD_IMAGE: str = PROFILE["spec"]["engineConfig"]["runner"]["image"]
# The profile's image in each edit round: every round is a real change of every engine Deployment.
EDIT_IMAGES = (NEW_IMAGE, OLD_IMAGE, NEW_IMAGE)


def runtime_object(namespace: str) -> dict[str, Any]:
    obj = copy.deepcopy(RUNTIME)
    obj["metadata"]["namespace"] = namespace
    return obj


def isvc_object(namespace: str, name: str) -> dict[str, Any]:
    obj = copy.deepcopy(ISVC)
    obj["metadata"].update(name=name, namespace=namespace)
    obj["spec"]["runtime"]["name"] = CHILD_NAME
    return obj


def runner_image(deployment: Mapping[str, Any] | None) -> str | None:
    if deployment is None:
        return None
    containers = ((((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")) or []
    return next((c.get("image") for c in containers if c.get("name") == RUNNER), None)


def namespaces_of(sizes: Sizes) -> list[str]:
    return [f"team-{i}" for i in range(sizes.namespaces)]


IsvcKey = tuple[str, str, str]  # (cluster, namespace, InferenceService name)


def isvc_keys(sizes: Sizes, clusters: list[str]) -> list[IsvcKey]:
    """Every InferenceService, the clusters interleaved (the order they are created in)."""
    namespaces = namespaces_of(sizes)
    return [
        (cluster, namespaces[index % len(namespaces)], f"llama-{index:04d}")
        for index in range(sizes.isvcs_per_cluster)
        for cluster in clusters
    ]


# --- observing the rollout ---------------------------------------------------------------------------------------


class Rollout:
    """Watches the controller's Deployment informers for the moment every engine Deployment runs `image`.

    An informer caches an object only from the API server's list or watch, so a Deployment counts once the server
    has committed it *and* streamed it back: the time includes the watch delivery. The same handlers count the
    watch events per Deployment (each update is one MODIFIED event), and handlers on the InferenceService
    informers count their MODIFIED events (the controller's status writes: nothing else writes them).
    """

    def __init__(self, app: ControllerApp, isvcs: list[IsvcKey]) -> None:
        self.app = app
        self.keys = [(cluster, ns, component_name(name, "engine")) for cluster, ns, name in isvcs]
        self.image = OLD_IMAGE
        # The controller caches its workloads without their spec: a Deployment counts as rolled once its cached
        # generation passed the one it had when the wait began (its spec changed); the servers are then checked
        # for the image itself (`verified_on_server`).
        self.generation_before: dict[IsvcKey, int] = {}
        self.pending: set[IsvcKey] = set()
        self.done = asyncio.Event()
        self.last_at = 0.0
        self.modified: Counter[IsvcKey] = Counter()
        self.added = 0
        self.isvc_modified = 0
        self.modified_goal = 0  # `modified_reached` is set once this many MODIFIED events were seen since a reset
        self.modified_reached = asyncio.Event()
        for name, cluster in app.controller.clusters.items():
            ome = cluster.watch(OmeWatch)
            ome.deployments.add_handler(self._deployment_handler(name))
            ome.inference_services.add_handler(self._isvc_handler)

    def _deployment_handler(self, cluster: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None, bool], None]:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
            meta = obj["metadata"]
            key = (cluster, meta.get("namespace", ""), meta["name"])
            if event_type == "MODIFIED":
                self.modified[key] += 1
                if self.modified_goal and self.modified.total() >= self.modified_goal:
                    self.modified_reached.set()
            elif event_type == "ADDED" and not initial:
                self.added += 1
            if key in self.pending and event_type != "DELETED" and self._rolled(key, obj):
                self.pending.discard(key)
                self.last_at = time.perf_counter()
                if not self.pending:
                    self.done.set()

        return on_event

    def _isvc_handler(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        if event_type == "MODIFIED":
            self.isvc_modified += 1

    def cached(self, key: IsvcKey) -> dict[str, Any] | None:
        cluster, namespace, name = key
        return self.app.controller.clusters[cluster].watch(OmeWatch).deployments.cache.get(namespace, name)  # type: ignore[no-any-return]

    def counts(self) -> dict[str, int]:
        """Watch events seen so far: Deployment MODIFIED (total) and ADDED, InferenceService MODIFIED."""
        return {
            "deployment_modified_events": sum(self.modified.values()),
            "deployment_added_events": self.added,
            "isvc_modified_events": self.isvc_modified,
        }

    def reset_counts(self) -> None:
        self.modified.clear()
        self.modified_goal = 0
        self.modified_reached = asyncio.Event()

    async def wait_modified(self, count: int, timeout: float) -> bool:
        """Until `count` Deployment MODIFIED events were seen since the last reset; False at the timeout."""
        self.modified_goal = count
        if self.modified.total() >= count:
            return True
        try:
            await asyncio.wait_for(self.modified_reached.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def per_deployment(self) -> dict[str, int]:
        """Min, max and total MODIFIED events per engine Deployment since the last `reset_counts`."""
        values = [self.modified.get(key, 0) for key in self.keys]
        return {"min": min(values), "max": max(values), "total": sum(values)}

    def _rolled(self, key: IsvcKey, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        return int(obj["metadata"].get("generation") or 0) > self.generation_before.get(key, 0)

    def expect(self, image: str) -> None:
        """From now on, wait for every engine Deployment to be rendered anew (created, or its spec changed: the
        phases change the image); the servers are checked for `image` after the wait."""
        self.image = image
        self.generation_before = {
            key: int(cached["metadata"].get("generation") or 0)
            for key in self.keys
            if (cached := self.cached(key)) is not None
        }
        self.pending = set(self.keys)
        self.done = asyncio.Event()
        self.last_at = time.perf_counter()
        if not self.pending:
            self.done.set()

    async def wait(self, phase: str, what: str, started: float, deadline_s: float) -> tuple[float, bool]:
        """Seconds from `started` to the last Deployment converging; True when the deadline stopped the wait."""
        total = len(self.keys)
        deadline = started + deadline_s
        next_report = time.perf_counter() + 1.0
        while not self.done.is_set():
            now = time.perf_counter()
            if now > deadline:
                print(f"[{phase:>7}] deadline: {total - len(self.pending)}/{total} {what}", flush=True)
                absent = sum(1 for key in self.pending if self.cached(key) is None)
                print(
                    f"[{phase:>7}]   still pending: {absent} not rendered, {len(self.pending) - absent} unchanged",
                    flush=True,
                )
                return now - started, True
            if now >= next_report:
                print(f"[{phase:>7}] {total - len(self.pending)}/{total} {what} ({now - started:.1f} s)", flush=True)
                next_report = now + 1.0
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.done.wait(), min(0.25, max(0.01, deadline - now)))
        return self.last_at - started, False


# --- the controller's writes, recorded for the same-writes baseline ---------------------------------------------

IsvcWrites = dict[str, dict[str, Any]]  # "Deployment" / "Service": the apply body; "status": the status PUT body


class WriteRecorder:
    """The controller's own writes as it sent them, the last of each kind per InferenceService: the server-side
    applies of its engine Deployment and Service and its status write. The same-writes baseline replays them."""

    def __init__(self) -> None:
        self.writes: dict[IsvcKey, IsvcWrites] = {}

    def _applied(self, cluster: str, kind: str, body: Mapping[str, Any]) -> None:
        meta = body["metadata"]
        isvc = (meta.get("labels") or {}).get(ISVC_LABEL)
        if isvc and kind in ("Deployment", "Service"):
            self.writes.setdefault((cluster, meta["namespace"], isvc), {})[kind] = copy.deepcopy(dict(body))

    def _status(self, cluster: str, path: str, body: Any) -> None:
        if path.endswith("/status") and "/inferenceservices/" in path and isinstance(body, dict):
            meta = body["metadata"]
            self.writes.setdefault((cluster, meta["namespace"], meta["name"]), {})["status"] = copy.deepcopy(body)

    @contextlib.contextmanager
    def recording(self, clients: Iterable[ClusterClient]) -> Any:
        """Record while the block runs: each of the controller's clients' `request_bytes` wrapped, then restored.
        Every call of a client goes through it (omectl/kube/client.py), and per instance, since the shard guard
        already wraps it there (omectl/fleet/sharding.py)."""
        recorder = self
        wrapped: list[tuple[ClusterClient, bool, Any]] = []
        for client in clients:
            send = client.request_bytes

            async def recorded(
                method: str, path: str, *, _send: Any = send, _client: ClusterClient = client, **kwargs: Any
            ) -> bytes:
                if method.upper() == "PUT":
                    recorder._status(_client.name, path, kwargs.get("body"))
                elif method.upper() == "PATCH" and kwargs.get("content_type") == APPLY:
                    body = kwargs.get("body")
                    if isinstance(body, Mapping) and "kind" in body:
                        recorder._applied(_client.name, str(body["kind"]), body)
                return await _send(method, path, **kwargs)  # type: ignore[no-any-return]

            wrapped.append((client, "request_bytes" in vars(client), send))
            setattr(client, "request_bytes", recorded)  # noqa: B010 - an instance attribute shadowing the method
        try:
            yield self
        finally:
            for client, had_own, send in wrapped:
                if had_own:
                    setattr(client, "request_bytes", send)  # noqa: B010
                else:
                    delattr(client, "request_bytes")


def with_runner_image(body: Mapping[str, Any], image: str) -> dict[str, Any]:
    obj = copy.deepcopy(dict(body))
    for container in obj["spec"]["template"]["spec"]["containers"]:
        if container.get("name") == RUNNER:
            container["image"] = image
    return obj


def with_annotation(body: dict[str, Any], key: str, value: str) -> dict[str, Any]:
    meta = body["metadata"]
    meta["annotations"] = {**(meta.get("annotations") or {}), key: value}
    return body


Request = tuple[str, str, bytes, str]  # method, URL, body, Content-Type
APPLY_QUERY = f"?fieldManager={FIELD_MANAGER}&force=true"
APPLY = PATCH_CONTENT_TYPES["apply"]


# --- HTTP set-up, the same-writes baseline, server-side checks ---------------------------------------------------


class EngineFleet(Fleet):
    """The bench process's own aiohttp view of the fleet, for InferenceServices and their Deployments."""

    async def create_runtimes(self, sizes: Sizes) -> None:
        """Per cluster: the namespaces, the ClusterBaseModel, the profile, a child runtime per namespace."""

        async def one_cluster(url: str) -> None:
            for namespace in namespaces_of(sizes):
                await self.call("POST", f"{url}/api/v1/namespaces", {"metadata": {"name": namespace}})
            await self.call("POST", f"{url}{OME_PATH}/clusterbasemodels", MODEL)
            await self.call("POST", f"{url}{OME_PATH}/clusterservingruntimes", PROFILE)
            for namespace in namespaces_of(sizes):
                await self.call(
                    "POST", f"{url}{OME_PATH}/namespaces/{namespace}/servingruntimes", runtime_object(namespace)
                )

        await asyncio.gather(*(one_cluster(url) for url in self.urls.values()))

    async def create_isvcs(self, isvcs: list[IsvcKey]) -> None:
        """POST every InferenceService from `SETUP_CLIENTS` concurrent clients, the clusters interleaved."""
        calls: list[Callable[[], Any]] = []
        for cluster, namespace, name in isvcs:
            url = f"{self.urls[cluster]}{OME_PATH}/namespaces/{namespace}/inferenceservices"
            calls.append(functools.partial(self.call, "POST", url, isvc_object(namespace, name)))
        await run_concurrently(calls, SETUP_CLIENTS)

    async def list_deployments(self, cluster: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = (await self.call("GET", f"{self.urls[cluster]}{APPS_PATH}/deployments"))["items"]
        return items

    async def count_on_server(self, image: str) -> int:
        """How many engine Deployments the servers themselves say run `image` (the check after each phase)."""
        lists = await asyncio.gather(*(self.list_deployments(cluster) for cluster in self.urls))
        return sum(
            1
            for items in lists
            for item in items
            if item["metadata"]["name"].endswith("-engine") and runner_image(item) == image
        )

    async def count_revisions(self) -> int:
        """ControllerRevisions on every cluster (the controller creates one per new merged spec per namespace)."""
        lists = await asyncio.gather(
            *(self.call("GET", f"{url}{APPS_PATH}/controllerrevisions") for url in self.urls.values())
        )
        return sum(len(listed["items"]) for listed in lists)

    async def live_isvc_versions(self) -> dict[IsvcKey, str]:
        """(cluster, namespace, name) -> resourceVersion of every InferenceService (a status write carries it)."""
        lists = await asyncio.gather(
            *(self.call("GET", f"{url}{OME_PATH}/inferenceservices") for url in self.urls.values())
        )
        return {
            (cluster, item["metadata"]["namespace"], item["metadata"]["name"]): item["metadata"]["resourceVersion"]
            for cluster, listed in zip(self.urls, lists, strict=True)
            for item in listed["items"]
        }

    async def same_writes_jobs(
        self, recorded: dict[IsvcKey, IsvcWrites], kinds: tuple[str, ...], mark: str, *, rename: bool, image: str | None
    ) -> list[list[Request]]:
        """Per InferenceService, the requests its reconcile made, in its order: the applies of `kinds` (renamed
        `<name>-<mark>`, so created anew, with `rename`; with the runner image `image` when given), then its status
        write (a real change: `status.runtime.hash` set to `mark`) against the live resourceVersion."""
        versions = await self.live_isvc_versions()
        jobs: list[list[Request]] = []
        for key, writes in recorded.items():
            cluster, namespace, name = key
            url = self.urls[cluster]
            job: list[Request] = []
            for kind in kinds:
                body = copy.deepcopy(writes[kind])
                if image is not None and kind == "Deployment":
                    body = with_runner_image(body, image)
                body = with_annotation(body, RENDER_HASH, mark)
                if rename:
                    body["metadata"]["name"] = f"{body['metadata']['name']}-{mark}"
                target = body["metadata"]["name"]
                path = (
                    f"{APPS_PATH}/namespaces/{namespace}/deployments/{target}"
                    if kind == "Deployment"
                    else f"/api/v1/namespaces/{namespace}/services/{target}"
                )
                job.append(("PATCH", f"{url}{path}{APPLY_QUERY}", orjson.dumps(body), APPLY))
            status_body = copy.deepcopy(writes["status"])
            status_body["metadata"]["resourceVersion"] = versions[key]
            status_body["status"] = dict(status_body.get("status") or {})
            status_body["status"]["runtime"] = {**(status_body["status"].get("runtime") or {}), "hash": mark}
            status_path = f"{OME_PATH}/namespaces/{namespace}/inferenceservices/{name}/status"
            job.append(
                (
                    "PUT",
                    f"{url}{status_path}?fieldManager={FIELD_MANAGER}",
                    orjson.dumps(status_body),
                    "application/json",
                )
            )
            jobs.append(job)
        return jobs

    async def delete_rendered(self, sizes: Sizes) -> None:
        """Delete every engine Deployment and Service, and wait until their Pods are gone too (untimed)."""
        calls: list[Callable[[], Any]] = [
            functools.partial(self.call, "DELETE", f"{url}{path.format(namespace)}?labelSelector={ISVC_LABEL}")
            for url in self.urls.values()
            for namespace in namespaces_of(sizes)
            for path in (f"{APPS_PATH}/namespaces/{{}}/deployments", "/api/v1/namespaces/{}/services")
        ]
        await run_concurrently(calls, SETUP_CLIENTS)
        deadline = time.monotonic() + sizes.phase_deadline_s
        while True:
            listed = await asyncio.gather(*(self.call("GET", f"{url}/api/v1/pods") for url in self.urls.values()))
            left = sum(len(pods["items"]) for pods in listed)
            if not left:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{left} Pods of deleted engine Deployments left after {sizes.phase_deadline_s} s")
            await asyncio.sleep(0.2)  # the servers' garbage collector deletes them: nothing to wait on but a list

    async def send_jobs(self, jobs: list[list[Request]], clients: int) -> tuple[int, float, int]:
        """Each job's requests in order, `clients` jobs at a time: (jobs done without an error, seconds, errors)."""
        errors = 0
        failed_jobs = 0
        next_job = 0

        async def client() -> None:
            nonlocal errors, failed_jobs, next_job
            while next_job < len(jobs):
                job = jobs[next_job]
                next_job += 1
                ok = True
                for method, url, body, content_type in job:
                    async with self.session.request(
                        method, url, data=body, **self.auth.options(url, content_type)
                    ) as resp:
                        await resp.read()
                        if resp.status >= 300:
                            errors += 1
                            ok = False
                failed_jobs += not ok

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        return len(jobs) - failed_jobs, time.perf_counter() - started, errors


# --- the run -----------------------------------------------------------------------------------------------------


def engine_counts(app: ControllerApp) -> dict[str, int]:
    """The controller's own counters: reconciles, resolver cache use, and the engine reconciler's applies."""
    return {**controller_counts(app), "engine_applies": app.reconcilers.engine.writes}


class Bench:
    def __init__(self, sizes: Sizes, server: FleetProcess, fleet: EngineFleet, workdir: Path, profile: bool) -> None:
        self.sizes = sizes
        self.server = server
        self.fleet = fleet
        self.workdir = workdir
        self.profile = cProfile.Profile() if profile else None
        self.figures: dict[str, float] = {}
        self.spread: dict[str, list[float]] = {}
        self.phases: dict[str, dict[str, Any]] = {}
        self.recorder = WriteRecorder()

    def progress(self, phase: str, text: str) -> None:
        details = self.phases[phase]
        # this process's CPU: the controller's, or in a same-writes phase (the controller stopped) the client's
        who = "client process cpu" if phase.startswith("same_writes") else "controller process cpu"
        notes = cpu_notes(details, "controller_process_cpu_cores", who)
        if details.get("deadline_hit"):
            notes.append("stopped at the deadline")
        print_phase(phase, text, notes, width=7)

    async def run(self, clients: int) -> None:
        sizes = self.sizes
        isvcs = isvc_keys(sizes, list(self.server.urls))
        self.figures["inference_services"] = float(len(isvcs))
        registry = self.workdir / "clusters"
        write_registrations(registry, self.server.kubeconfig, list(self.server.urls))
        settings = Settings.load(
            webhook_port=0, clusters_dir=registry, trace_file=self.workdir / "traces.jsonl", install_webhooks=False
        )
        app = ControllerApp(settings)
        await app.start()
        try:
            # The controller starts on the empty fleet and sees every object arrive by watch (as fleet_convergence).
            await app.wait_synced(sizes.phase_deadline_s)
            rollout = Rollout(app, isvcs)
            with self.recorder.recording(c.client for c in app.controller.clusters.values()):
                await self._phase_render(app, rollout, isvcs)
                edits = [await self._phase_edit(app, rollout, index) for index in range(len(EDIT_IMAGES))]
        finally:
            await app.stop()
        # The same writes by a plain client, with no controller running, on the same clusters: the edits first, on
        # the controller's Deployments; each render on nodes as empty as the controller's render found them (a
        # Pod that finds every GPU taken waits, and the scheduler walks every waiting Pod again on each change: the
        # rounds that piled up on one another fell from 136 to 67 InferenceServices/s)
        edit_rates = [await self._phase_same_writes("edit", index, clients) for index in range(ROUNDS)]
        render_rates = []
        for index in range(ROUNDS):
            await self.fleet.delete_rendered(self.sizes)
            render_rates.append(await self._phase_same_writes("render", index, clients))
        render_rate = self.figures["render_isvcs_per_s"]
        rounds: list[dict[str, float]] = [  # round i: the i-th edit beside the i-th same-writes run
            {
                **edit,
                "same_writes_render_per_s": render,
                "render_vs_same_writes": round(render_rate / render, 3),
                "same_writes_edit_per_s": rolled,
                "edit_vs_same_writes": round(edit["edit_isvcs_per_s"] / rolled, 3),
            }
            for edit, render, rolled in zip(edits, render_rates, edit_rates, strict=True)
        ]
        figures, spread = median_and_spread(rounds, rounds[0])
        self.figures.update(figures)
        self.spread.update(spread)
        for name in ("inference_services", "render_s", "render_isvcs_per_s"):  # the InferenceServices: created once
            self.spread[name] = [self.figures[name], self.figures[name]]

    async def _measure(
        self, app: ControllerApp, rollout: Rollout, phase: str, image: str, what: str, action: Callable[[], Any]
    ) -> dict[str, Any]:
        """Run `action` and wait until every engine Deployment runs `image`; the phase's counts and CPU."""
        await wait_idle(app, self.sizes.phase_deadline_s)
        total = len(rollout.keys)
        revisions_before = await self.fleet.count_revisions()
        rollout.reset_counts()
        before = {**engine_counts(app), **rollout.counts()}
        rollout.expect(image)
        profiling = self.profile is not None and phase == "edit_1"
        if profiling:
            assert self.profile is not None
            self.profile.enable()
        meter = Meter(self.server)
        started = time.perf_counter()
        await action()
        elapsed, deadline_hit = await rollout.wait(phase, what, started, self.sizes.phase_deadline_s)
        cpu = meter.read()
        idle_s = await wait_idle(app, self.sizes.phase_deadline_s)
        if profiling:
            assert self.profile is not None
            self.profile.disable()
        verified = await self.fleet.count_on_server(image)
        revisions_after = await self.fleet.count_revisions()
        counts = delta({**engine_counts(app), **rollout.counts()}, before)
        converged = total - len(rollout.pending)
        return {
            **cpu,
            "elapsed_s": round(elapsed, 3),
            "deadline_hit": deadline_hit,
            "converged": converged,
            "verified_on_server": verified,
            "queue_idle_after_s": round(idle_s, 3),
            "per_s": round(converged / elapsed, 1),
            **counts,
            "deployment_modified_per_deployment": rollout.per_deployment(),
            "controller_revisions_created": revisions_after - revisions_before,
        }

    async def _phase_render(self, app: ControllerApp, rollout: Rollout, isvcs: list[IsvcKey]) -> None:
        """Runtimes first (untimed), then every InferenceService: until every engine Deployment is rendered."""
        await self.fleet.create_runtimes(self.sizes)

        async def create() -> None:
            started = time.perf_counter()
            await self.fleet.create_isvcs(isvcs)
            print(
                f"[ render] {len(isvcs)} InferenceServices created in {time.perf_counter() - started:.2f} s from "
                f"{SETUP_CLIENTS} clients",
                flush=True,
            )

        details = await self._measure(app, rollout, "render", OLD_IMAGE, "engine Deployments rendered", create)
        # the status writes are queued behind the applies: the recorder holds every one once the queue is idle
        self.phases["render"] = details
        self.figures["render_s"] = details["elapsed_s"]
        self.figures["render_isvcs_per_s"] = details["per_s"]
        self.progress(
            "render",
            f"{details['verified_on_server']}/{len(isvcs)} engine Deployments (server-side check) "
            f"{details['elapsed_s']:.2f} s after the first create, {details['engine_applies']} applies",
        )

    async def _phase_same_writes(self, kind: str, index: int, clients: int) -> float:
        """The writes the controller made per InferenceService, by a plain client: on a render each engine
        Deployment and Service applied as the controller rendered them (under new names, so created) and the
        status written; on an edit each engine Deployment applied with a new runner image and the status written.
        Returns InferenceServices/s."""
        phase = f"same_writes_{kind}_{index + 1}"
        mark = f"sw{kind[0]}{index + 1}"
        render = kind == "render"
        jobs = await self.fleet.same_writes_jobs(
            self.recorder.writes,
            ("Deployment", "Service") if render else ("Deployment",),
            mark,
            rename=render,
            image=None if render else f"{NEW_IMAGE}-{mark}",
        )
        meter = Meter(self.server)
        done, elapsed, errors = await self.fleet.send_jobs(jobs, clients)
        rate = done / elapsed
        self.phases[phase] = {
            **meter.read(),
            "clients": clients,
            "inference_services": len(jobs),
            "requests": sum(len(job) for job in jobs),
            "errors": errors,
            "elapsed_s": round(elapsed, 3),
            "per_s": round(rate, 1),
        }
        self.progress(
            phase,
            f"{done}/{len(jobs)} InferenceServices, {self.phases[phase]['requests']} requests from {clients} "
            f"clients in {elapsed:.2f} s = {rate:,.0f}/s",
        )
        return round(rate, 1)

    async def _phase_edit(self, app: ControllerApp, rollout: Rollout, index: int) -> dict[str, float]:
        """One profile edit to `EDIT_IMAGES[index]`; its figures (the round's)."""
        image = EDIT_IMAGES[index]
        phase = f"edit_{index + 1}"
        patch = {"spec": {"engineConfig": {"runner": {"image": image}}}}

        async def edit() -> None:
            await asyncio.gather(
                *(
                    self.fleet.call(
                        "PATCH",
                        f"{url}{OME_PATH}/clusterservingruntimes/{PROFILE_NAME}",
                        patch,
                        "application/merge-patch+json",
                    )
                    for url in self.server.urls.values()
                )
            )

        details = await self._measure(app, rollout, phase, image, "engine Deployments on the new image", edit)
        total = len(rollout.keys)
        writes = details["engine_applies"] + details["isvc_modified_events"] + details["controller_revisions_created"]
        details["api_writes"] = writes
        self.phases[phase] = details
        per = details["deployment_modified_per_deployment"]
        self.progress(
            phase,
            f"{details['verified_on_server']}/{total} on the new image (server-side check) in "
            f"{details['elapsed_s']:.2f} s = {details['per_s']:,.0f}/s; {details['engine_applies']} applies, "
            f"Deployment updates per Deployment {per['min']}..{per['max']}, {details['isvc_modified_events']} "
            f"status writes, {details['controller_revisions_created']} revisions",
        )
        return {
            "edit_rollout_s": details["elapsed_s"],
            "edit_isvcs_per_s": details["per_s"],
            "deployment_updates_per_isvc": round(details["deployment_modified_events"] / total, 3),
            "api_writes_per_isvc": round(writes / total, 3),
        }


def run_benchmark(sizes: Sizes, quick: bool, clients: int, profile: bool, real: str | None) -> dict[str, Any]:
    """The phases against the embedded servers, then (with `real`, the real server's versions) the same phases
    against real kube-apiservers + etcd started the same way (`dev up --real`), in the same run."""
    total = sizes.clusters * sizes.isvcs_per_cluster
    print(
        f"engine rollout benchmark ({'quick' if quick else 'full'}): {sizes.clusters} clusters in one `dev up` "
        f"process, {total} InferenceServices, the controller in this process",
        flush=True,
    )
    machine = machine_info()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="omectl-bench-engine-") as tmp:
        bench = run_fleet(sizes, Path(tmp) / "embedded", clients, profile, real=False)
        real_bench = None
        if real is not None:
            print(f"the same phases against {sizes.clusters} real clusters: {real} (`dev up --real`)", flush=True)
            real_bench = run_fleet(sizes, Path(tmp) / "real", clients, False, real=True)
    if bench.profile is not None:
        for order in ("cumulative", "tottime"):
            print(f"\n=== controller process, first profile edit: top 30 by {order} ===", flush=True)
            pstats.Stats(bench.profile, stream=sys.stdout).sort_stats(order).print_stats(30)
    results: dict[str, Any] = {
        **run_header("engine_rollout", quick, started),
        "machine": machine,
        "layout": {
            "servers": f"one `python -m omectl dev up --clusters {sizes.clusters}` process",
            "controller": "ControllerApp in the benchmark process (defaults: concurrency 16, tracing to a file; "
            "webhooks not installed)",
            "same_writes_clients": clients,
        },
        "sizes": asdict(sizes),
        "repeats": ROUNDS,
        "figures": bench.figures,
        "spread": bench.spread,
        "units": units_of(FIGURES),
        "targets": evaluate_targets(bench.figures, quick, TARGETS),
        "phases": bench.phases,
        "profiled": profile,
    }
    if real_bench is not None:
        results["real_server"] = {
            "server": real,
            "layout": f"one `python -m omectl dev up --real --clusters {sizes.clusters}` process: an etcd and a "
            "kube-apiserver per cluster",
            "figures": real_bench.figures,
            "spread": real_bench.spread,
            "targets": evaluate_targets(real_bench.figures, quick, TARGETS),
            "embedded_over_real": {
                name: round(value / real_bench.figures[name], 3)
                for name, value in bench.figures.items()
                if real_bench.figures.get(name)
            },
            "phases": real_bench.phases,
        }
    return results


def run_fleet(sizes: Sizes, workdir: Path, clients: int, profile: bool, *, real: bool) -> Bench:
    workdir.mkdir(parents=True)
    with FleetProcess(workdir, sizes.clusters, real=real) as server:

        async def main() -> Bench:
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=120)
            connector = aiohttp.TCPConnector(limit=64)
            async with aiohttp.ClientSession(
                connector=connector, timeout=timeout, headers={"User-Agent": USER_AGENT}
            ) as session:
                bench = Bench(sizes, server, EngineFleet(server.urls, session, server.auth), workdir, profile)
                await bench.run(clients)
                return bench

        gc.collect()
        return asyncio.run(main())


# --- output ------------------------------------------------------------------------------------------------------


def _shown(value: float, unit: str) -> str:
    shown = f"{value:,.0f}" if value >= 100 else f"{value:,.2f}" if value >= 1 else f"{value:.3f}"
    return f"{shown} {unit}".rstrip().replace(" /s", "/s")


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
        wanted = f"{target['op']} {target['target']:.2f}" if target else ""
        verdict = ("PASS" if target["pass"] else "FAIL") if target else ""
        low, high = results["spread"][name]
        shown = _shown(value, unit) if low == high else f"{_shown(value, unit)} ({_shown(low, '')}-{_shown(high, '')})"
        if real is None:
            rows.append((label, shown, wanted, verdict))
            continue
        real_value = real["figures"].get(name)
        real_target = real["targets"].get(name)
        if real_target:
            verdict += f" (real: {'PASS' if real_target['pass'] else 'FAIL'})"
        ratio = real["embedded_over_real"].get(name)
        real_shown = _shown(real_value, unit) if real_value else ""
        rows.append((label, shown, real_shown, f"{ratio:.2f}x" if ratio else "", wanted, verdict))
    return rows


def format_table(results: dict[str, Any]) -> str:
    return text_table(table_rows(results), table_header(results))


README_INTRO = """## Engine rollout

```sh
.venv/bin/python -m benchmarks.engine_rollout                           # the full run; rewrites this section
.venv/bin/python -m benchmarks.engine_rollout --quick --out /tmp/e.json # small counts, README untouched
.venv/bin/python -m benchmarks.engine_rollout --profile --no-readme     # cProfile of the controller's edit phase
```

**Layout.** As in the fleet-convergence benchmark: the 4 simulated clusters are served by one `python -m omectl dev
up --clusters 4` process (with `deploy/crds/` applied); the controller runs in the benchmark process as
`ControllerApp` with its default settings (16 workers, spans to a trace file), minus the admission webhooks; the
same-writes baseline's client runs in the benchmark process too (after the controller stopped), so both rates are
measured with the same split of cores, in the same run, against the same 2,000 engine Deployments.

**Beside real kube-apiservers.** Where `make envtest` has built them (`--real auto`, the default), the same phases
run after the embedded fleet, in the same run, against `omectl dev up --real --clusters 4` (an etcd and a
kube-apiserver per cluster, on the same two cores), with the same controller settings, clients and counts. The
comparison that matters is each fleet's rate ÷ its own same-writes rate: a controller that keeps up with a fast
fake may not keep up with a real server, and the other way round.

**Phases** (each bounded by a deadline, each printing progress such as `1234/2000 engine Deployments rendered`):

1. The controller starts on the empty fleet and syncs (started first for the reason the fleet-convergence section
   gives). On each cluster (untimed): 5 namespaces, the samples' ClusterBaseModel and `sglang-profile`
   ClusterServingRuntime, and in each namespace a ServingRuntime child of the profile like `runtime.yaml`. Then 500
   InferenceServices per cluster (2,000 in all, spread over the namespaces) like `isvc.yaml`, each naming its
   namespace's child runtime (autoSync, the default), from 32 concurrent clients: **render** is the time from the
   first create until every engine Deployment `<isvc>-engine` is in the controller's cache with the profile's image.
2. **profile edit**, 3 rounds: a merge patch of the profile's `spec.engineConfig.runner.image` on the 4 clusters at
   once (a new image, back to the old one, the new one again); timed until every engine Deployment in the
   controller's cache runs the round's image. **rolled out/s** = 2,000 / time from the edit to the last Deployment.
3. **the same writes** (the baselines), 3 rounds each, after the controller stopped: the controller's own requests
   were recorded as it sent them (its last server-side apply of each engine Deployment and Service, its last status
   write of each InferenceService), and a plain aiohttp client with 32 connections sends, per InferenceService and
   in the controller's order, the same requests: for the render, the Deployment's and the Service's server-side
   applies under new names (so created, as on a render) and the status write; for the edit, the Deployment's
   apply with a new runner image (a real rollout) and the status write. Each status write is a real change,
   against a resourceVersion listed just before (untimed). The edits run first, on the controller's Deployments;
   before each render round every engine Deployment and Service is deleted and their Pods are waited out
   (untimed), so each round starts on nodes as empty as the controller's render found them. The targets:
   rendered/s and rolled out/s >= 50% of the same writes' rates. Each figure is the median of its 3 rounds, its
   range in brackets (the render itself runs once: the InferenceServices are created once).

**The observable.** An informer caches only what the API server lists or streams, so a Deployment counts once the
server committed the new spec and streamed it back (the watch delivery is included). After each phase the servers
themselves are listed (`verified_on_server`). **Writes**: `engine_applies` is the EngineReconciler's own count of
server-side applies (every rendered kind); independently, a handler on the controller's Deployment informers counts
the MODIFIED events per Deployment during the phase (`deployment_modified_per_deployment`: min/max/total; target:
exactly 1 update per InferenceService), one on the InferenceService informers counts their MODIFIED events (the
controller's status writes: nothing else writes them), and the ControllerRevisions are counted on the servers
before and after (one per new merged spec per namespace). **API writes per InferenceService** = (applies + status
writes + revisions) / 2,000.
"""


def markdown_table(results: dict[str, Any]) -> str:
    machine = results["machine"]
    phases = results["phases"]
    edit = phases["edit_1"]
    per = edit["deployment_modified_per_deployment"]
    cpu = ", ".join(
        f"{name} {phases[name]['server_cpu_cores']:.2f} / {phases[name]['controller_process_cpu_cores']:.2f}"
        for name in ("render", "edit_1", "same_writes_render_1", "same_writes_edit_1")
    )
    total = int(results["figures"]["inference_services"])
    lines = [
        README_INTRO,
        *markdown_rows(table_rows(results), table_header(results)),
        "",
        f"Measured {results['timestamp']} ({results['mode']} run, {results['duration_s']} s) on "
        f"{machine['cpu_count']} CPUs, {machine['implementation']} {machine['python']}, {machine['platform']}; "
        f"servers: {results['layout']['servers']}; controller: {results['layout']['controller']}; same writes: "
        f"{results['layout']['same_writes_clients']} concurrent aiohttp connections in the benchmark process.",
        "",
        f"CPU per phase in cores, server process / benchmark process: {cpu}; 1-minute load average before the run: "
        f"{machine['load_average_1m_before']}. First profile edit: {edit['engine_applies']} applies, Deployment "
        f"updates per Deployment {per['min']} to {per['max']} ({per['total']} in all), {edit['isvc_modified_events']} "
        f"InferenceService status writes, {edit['controller_revisions_created']} ControllerRevisions created, "
        f"{edit['reconciles']} reconciles. Render: {phases['render']['engine_applies']} applies (Deployments and "
        f"Services), {phases['render']['reconciles']} reconciles. Checked on the servers: render "
        f"{phases['render']['verified_on_server']}, first edit {edit['verified_on_server']} of {total}.",
    ]
    real = results.get("real_server")
    if real is not None:
        real_edit = real["phases"]["edit_1"]
        lines += [
            "",
            f"Real servers: {real['server']}; {real['layout']}; the same controller, clients and counts, after the "
            f"embedded fleet, in the same run. Checked on the servers: render "
            f"{real['phases']['render']['verified_on_server']}, first edit {real_edit['verified_on_server']} of "
            f"{total}; first profile edit: {real_edit['engine_applies']} applies, {real_edit['reconciles']} "
            "reconciles.",
        ]
    return "\n".join(lines)


# --- command line ------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.engine_rollout", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small counts (the smoke test); the README is untouched")
    parser.add_argument(
        "--out", type=Path, help=f"results JSON (default: {DEFAULT_OUT}, on a run that rewrites the README only)"
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=SAME_WRITES_CLIENTS,
        help=f"connections of the same-writes client (default {SAME_WRITES_CLIENTS})",
    )
    parser.add_argument("--no-readme", action="store_true", help="do not rewrite the table in the README")
    parser.add_argument("--profile", action="store_true", help="cProfile the controller process in the edit phase")
    add_real_option(parser)
    args = parser.parse_args(argv)
    real, error = real_server_for(args.real)
    if error:
        print(error, file=sys.stderr)
        return 1
    if args.clients < 1:
        parser.error("--clients must be at least 1")
    results = run_benchmark(QUICK if args.quick else FULL, args.quick, args.clients, args.profile, real)
    print("\n" + format_table(results), flush=True)
    rewrites_readme = not args.quick and not args.no_readme and not args.profile
    out = results_path(args.out, DEFAULT_OUT, rewrites_readme=rewrites_readme)
    if out is not None:
        write_results(out, results)
    else:
        print(not_written_note(), flush=True)
    if rewrites_readme:
        rewrite_readme_section(README, markdown_table(results), README_BEGIN, README_END, append_missing=True)
        print(f"table rewritten in {README}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
