"""The resilience suite's mixed workload on simulated clusters, and the state it must converge to.

Per cluster (`workload_documents`):

- OME: the spec's `ClusterBaseModel`, the profile `sglang-profile` (a ClusterServingRuntime), its child
  `sglang-llama-3-2-3b` in the namespaces `team-a` and `team-b`, and `ISVCS_PER_NAMESPACE` InferenceServices in each
  naming the child (10 per cluster);
- AMD AIM: the Gateway, the cluster-wide `default` AIMClusterRuntimeConfig (label propagation of `org.example/*`),
  the `ml-team` namespace's `default` AIMRuntimeConfig (routing with a path template), and three AIMServices with a
  `project` label (the path) and cost-tracking labels (propagated to their children).

A rollout is a profile image edit (`set_profile_image`). `differences(server)` computes, from the pure core alone
(`resolve_chain` + `merge_chain` + `render_workloads` for each InferenceService, `aim.resolution.resolve` +
`render_inference_service` + `plan_routing` + label propagation for each AIMService), what every child must be,
and lists every way the cluster differs: a child missing, rendered from another input (its render-hash annotation,
and for Deployments the whole spec and labels), a duplicate or a stray one (counted by label), or a status that
does not record the current render. `MixedFleet.converged()` waits (on store commits, with a deadline) until no
difference is left; `MixedFleet.healthy()` checks the controller process: `/healthz` and `/readyz` answer 200 and
the work queue drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from omectl.cli.dev import write_registrations
from omectl.controller.aim.service import with_propagated_labels
from omectl.controller.app import ControllerApp
from omectl.controller.ome.revisions import revision_name, spec_hash
from omectl.controller.runtime.apply import RENDER_HASH, object_hash
from omectl.core.aim.kserve import render_inference_service
from omectl.core.aim.resolution import resolve
from omectl.core.aim.routing import plan_routing
from omectl.core.ome.inheritance import resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.render import render_workloads
from omectl.core.ome.selection import check_runtime_supports, lookup_named_runtime, named_runtime, resolve_model
from omectl.settings import Settings
from omectl.sim.apiserver.builtin_defaults import apply_builtin_defaults
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.fleet import EmbeddedFleet, apply_document

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
OME_SAMPLES = ROOT / "deploy" / "samples" / "ome"
AIM_SAMPLES = ROOT / "deploy" / "samples" / "aim"

OME_NAMESPACES = ("team-a", "team-b")
AIM_NAMESPACE = "ml-team"
PROFILE = "sglang-profile"
CHILD = "sglang-llama-3-2-3b"
MODEL = "llama-3-2-3b-instruct"
ISVCS_PER_NAMESPACE = 5
AIM_SERVICES = ("chat-a", "chat-b", "chat-c")
FIRST_IMAGE = "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
AIM_OPERATOR_NAMESPACE = "aim-system"

ISVCS = ("ome.io", "inferenceservices")
SERVING_RUNTIMES = ("ome.io", "servingruntimes")
CLUSTER_SERVING_RUNTIMES = ("ome.io", "clusterservingruntimes")
CLUSTER_BASE_MODELS = ("ome.io", "clusterbasemodels")
BASE_MODELS = ("ome.io", "basemodels")
DEPLOYMENTS = ("apps", "deployments")
SERVICES = ("", "services")
AIM_SERVICES_KEY = ("aim.eai.amd.com", "aimservices")
AIM_CONFIGS = ("aim.eai.amd.com", "aimruntimeconfigs")
AIM_CLUSTER_CONFIGS = ("aim.eai.amd.com", "aimclusterruntimeconfigs")
KSERVE = ("serving.kserve.io", "inferenceservices")
ROUTES = ("gateway.networking.k8s.io", "httproutes")
STORAGE_KEYS = {
    "Deployment": DEPLOYMENTS,
    "Service": SERVICES,
    "InferenceService": KSERVE,
    "HTTPRoute": ROUTES,
}


def _sample(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def profile(image: str = FIRST_IMAGE) -> dict[str, Any]:
    doc = _sample(OME_SAMPLES / "profile.yaml")
    doc["spec"]["engineConfig"]["runner"]["image"] = image
    return doc


def child(ns: str) -> dict[str, Any]:
    doc = _sample(OME_SAMPLES / "runtime.yaml")
    doc["metadata"]["namespace"] = ns
    return doc


def inference_service(name: str, ns: str) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": ns, "labels": {"resilience.omectl.io/workload": "true"}},
        "spec": {"model": {"name": MODEL}, "runtime": {"name": CHILD}, "engine": {"minReplicas": 1}},
    }


def isvc_names() -> list[tuple[str, str]]:
    return [(ns, f"isvc-{i}") for ns in OME_NAMESPACES for i in range(ISVCS_PER_NAMESPACE)]


def aim_cluster_config() -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMClusterRuntimeConfig",
        "metadata": {"name": "default"},
        "spec": {"labelPropagation": {"enabled": True, "match": ["org.example/*"]}},
    }


def aim_namespace_config(template: str = "/ml/{.metadata.namespace}/{.metadata.labels['project']}") -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMRuntimeConfig",
        "metadata": {"name": "default", "namespace": AIM_NAMESPACE},
        "spec": {
            "routing": {
                "enabled": True,
                "gatewayRef": {"name": "inference-gateway", "namespace": "gateways"},
                "pathTemplate": template,
            }
        },
    }


def aim_service(name: str, labels: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {
            "name": name,
            "namespace": AIM_NAMESPACE,
            "labels": dict(
                labels
                if labels is not None
                else {"project": f"project-{name}", "org.example/cost-center": f"cc-{name}", "team": "ml"}
            ),
        },
        "spec": {"model": {"name": "qwen-qwen3-32b"}, **spec},
    }


def workload_documents(image: str = FIRST_IMAGE) -> list[dict[str, Any]]:
    docs = [namespace(ns) for ns in (*OME_NAMESPACES, AIM_NAMESPACE, "gateways")]
    docs += [_sample(OME_SAMPLES / "clusterbasemodel.yaml"), profile(image)]
    docs += [child(ns) for ns in OME_NAMESPACES]
    docs += [inference_service(name, ns) for ns, name in isvc_names()]
    docs += [_sample(AIM_SAMPLES / "gateway.yaml"), aim_cluster_config(), aim_namespace_config()]
    docs += [aim_service(name) for name in AIM_SERVICES]
    return docs


async def apply_all(server: EmbeddedAPIServer, docs: list[dict[str, Any]]) -> None:
    """Server-side apply each document, as a user's `kubectl apply --server-side` would."""
    for doc in docs:
        await apply_document(server, doc)


async def set_profile_image(server: EmbeddedAPIServer, image: str) -> None:
    """The rollout: the profile's image edited (every InferenceService below it re-renders)."""
    await apply_document(server, profile(image))


# --- the expected render ---------------------------------------------------------------------------------------


class _StoreLookup:
    """`RuntimeLookup` and `ModelLookup` over one embedded server's store (what the cluster holds now)."""

    def __init__(self, server: EmbeddedAPIServer) -> None:
        self.store = server.api.store

    def get(self, kind: str, ns: str, name: str) -> Mapping[str, Any] | None:
        key = {
            "ServingRuntime": SERVING_RUNTIMES,
            "ClusterServingRuntime": CLUSTER_SERVING_RUNTIMES,
            "BaseModel": BASE_MODELS,
            "ClusterBaseModel": CLUSTER_BASE_MODELS,
        }[kind]
        return self.store.get(key, ns if kind in ("ServingRuntime", "BaseModel") else "", name)


@dataclass
class Expected:
    """What one InferenceService or AIMService must have: its children as rendered, and its status."""

    owner: tuple[str, str, str]  # (kind, namespace, name)
    children: list[dict[str, Any]] = field(default_factory=list)
    status: dict[str, Any] = field(default_factory=dict)


def expected_ome(server: EmbeddedAPIServer, isvc: Mapping[str, Any]) -> Expected:
    """The engine render of `isvc` from the cluster's runtimes and model, as `render_workloads` makes it."""
    lookup = _StoreLookup(server)
    ns, name = isvc["metadata"]["namespace"], isvc["metadata"]["name"]
    model = resolve_model(isvc, lookup)
    runtime_name = named_runtime(isvc)
    assert model is not None and runtime_name is not None, "the workload names its model and runtime"
    ref, runtime = lookup_named_runtime(ns, runtime_name, lookup)  # type: ignore[arg-type]
    merged = merge_chain(spec_layers(resolve_chain(runtime, lookup))).spec  # type: ignore[arg-type]
    check_runtime_supports(ref.name, merged, model, kind=ref.kind)
    revision = revision_name(ref.name, spec_hash(merged))
    objects = render_workloads(
        isvc,
        merged,
        runtime_name=ref.name,
        runtime_kind=ref.kind,
        model=lookup.get(model.kind, model.namespace, model.name),
        revision=revision,
    )
    status = {"runtime.revision": revision, "observedGeneration": isvc["metadata"].get("generation")}
    return Expected(("InferenceService", ns, name), objects, status)


def expected_aim(server: EmbeddedAPIServer, service: Mapping[str, Any]) -> Expected:
    """The KServe InferenceService and HTTPRoute of `service` as the AIM core renders them, labels propagated."""
    store = server.api.store

    def config_lookup(ns: str, name: str) -> Mapping[str, Any] | None:
        return store.get(AIM_CONFIGS, ns, name) if ns else store.get(AIM_CLUSTER_CONFIGS, "", name)

    resolution = resolve(service, config_lookup, operator_namespace=AIM_OPERATOR_NAMESPACE)
    config = resolution.config
    ns, name = service["metadata"]["namespace"], service["metadata"]["name"]
    children = []
    rendered = [render_inference_service(service, config)]
    plan = plan_routing(service, config)
    if plan.route is not None:
        rendered.append(plan.route)
    for obj in rendered:
        live = store.get(STORAGE_KEYS[obj["kind"]], ns, obj["metadata"]["name"])
        children.append(with_propagated_labels(service, obj, live, config))
    status = {
        "routing.path": plan.path if plan.route is not None else None,
        "observedGeneration": service["metadata"].get("generation"),
    }
    return Expected(("AIMService", ns, name), children, status)


def _dig(obj: Mapping[str, Any] | None, dotted: str) -> Any:
    value: Any = obj
    for part in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def expected_state(server: EmbeddedAPIServer) -> list[Expected]:
    store = server.api.store
    out = [expected_ome(server, isvc) for isvc in store.items(ISVCS)]
    out += [expected_aim(server, svc) for svc in store.items(AIM_SERVICES_KEY)]
    return out


def differences(server: EmbeddedAPIServer) -> list[str]:
    """Every way the cluster's state differs from the expected render; empty when it equals it."""
    store = server.api.store
    problems: list[str] = []
    try:
        expected = expected_state(server)
    except Exception as exc:  # the inputs themselves are not there (yet)
        return [f"{server.name}: cannot compute the expected render: {type(exc).__name__}: {exc}"]
    for item in expected:
        kind, ns, name = item.owner
        for obj in item.children:
            key = STORAGE_KEYS[obj["kind"]]
            where = f"{server.name} {obj['kind']} {ns}/{obj['metadata']['name']} (of {kind} {name})"
            live = store.get(key, ns, obj["metadata"]["name"])
            if live is None:
                problems.append(f"{where}: missing")
                continue
            digest = (live["metadata"].get("annotations") or {}).get(RENDER_HASH)
            if digest != object_hash(obj):
                problems.append(f"{where}: render hash {digest} != expected {object_hash(obj)}")
            if (live["metadata"].get("labels") or {}) != (obj["metadata"].get("labels") or {}):
                problems.append(f"{where}: labels {live['metadata'].get('labels')} != {obj['metadata'].get('labels')}")
            if obj["kind"] == "Deployment" and live.get("spec") != _as_stored(obj).get("spec"):
                problems.append(f"{where}: spec differs from the render")
        owner_key = ISVCS if kind == "InferenceService" else AIM_SERVICES_KEY
        owner = store.get(owner_key, ns, name)
        for path, wanted in item.status.items():
            got = _dig((owner or {}).get("status"), path)
            if got != wanted:
                problems.append(f"{server.name} {kind} {ns}/{name}: status.{path} {got!r} != {wanted!r}")
    problems += duplicates(server, expected)
    for runtime in store.items(SERVING_RUNTIMES):
        conditions = (runtime.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "InheritanceReady"), {})
        if ready.get("reason") != "Resolved" or (runtime.get("status") or {}).get("observedGeneration") != runtime[
            "metadata"
        ].get("generation"):
            problems.append(
                f"{server.name} ServingRuntime {runtime['metadata']['name']}: not Resolved at its generation"
            )
    return problems


def _as_stored(rendered: dict[str, Any]) -> dict[str, Any]:
    """A rendered Deployment as the API server stores it: with the defaults it gives every Deployment."""
    stored = copy.deepcopy(rendered)
    apply_builtin_defaults("apps", "Deployment", stored)
    return stored


def duplicates(server: EmbeddedAPIServer, expected: list[Expected]) -> list[str]:
    """Children counted by their owner label: exactly one of each expected, and no stray ones."""
    store = server.api.store
    wanted = Counter(
        (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"]) for e in expected for obj in e.children
    )
    problems = [f"{server.name}: {k} rendered {n} times" for k, n in wanted.items() if n != 1]
    isvcs = {(e.owner[1], e.owner[2]) for e in expected if e.owner[0] == "InferenceService"}
    services = {(e.owner[1], e.owner[2]) for e in expected if e.owner[0] == "AIMService"}
    for kind, key, label, owners in (
        ("Deployment", DEPLOYMENTS, "ome.io/inferenceservice", isvcs),
        ("Service", SERVICES, "ome.io/inferenceservice", isvcs),
        ("InferenceService", KSERVE, "aim.eai.amd.com/service", services),
        ("HTTPRoute", ROUTES, "aim.eai.amd.com/service", services),
    ):
        counted = Counter(
            (obj["metadata"]["namespace"], (obj["metadata"].get("labels") or {}).get(label))
            for obj in store.items(key)
            if label in (obj["metadata"].get("labels") or {})
        )
        for owner, count in counted.items():
            if owner not in owners:
                problems.append(f"{server.name}: stray {kind} of {owner}")
            elif count != 1:
                problems.append(f"{server.name}: {count} {kind}s of {owner}")
    return problems


def images(server: EmbeddedAPIServer) -> Counter[str]:
    """Engine images across the cluster's Deployments (how far a rollout got)."""
    return Counter(
        dep["spec"]["template"]["spec"]["containers"][0]["image"]
        for dep in server.api.store.items(DEPLOYMENTS)
        if (dep["metadata"].get("labels") or {}).get("ome.io/inferenceservice")
    )


# --- faults and rollout times ------------------------------------------------------------------------------------


def throttled_rollout_faults(servers: list[EmbeddedAPIServer]) -> None:
    """429 + Retry-After on the first engine writes of one cluster; bursts of 500 and 503 on the others' writes
    (tests/resilience/test_faults.py checks what the controller does; benchmarks/resilience.py times it)."""
    first, second, third = servers
    first.faults.fail_next(4, 429, method="PATCH", path_contains="/deployments/", retry_after=1)
    second.faults.fail_next(6, 500, method="PATCH")
    third.faults.fail_next(6, 503, method="PATCH", retry_after=None)
    third.faults.fail_next(3, 503, method="PUT", path_contains="/status")


class RolloutClock:
    """Commit times of engine Deployments per image, on one cluster: `done[image]` is the monotonic instant the
    last of its `engines` engine Deployments was committed carrying `image`."""

    def __init__(self, server: EmbeddedAPIServer, engines: int) -> None:
        self.server = server
        self.engines = engines
        self.done: dict[str, float] = {}
        self.seen: dict[str, set[str]] = {}
        server.api.store.listeners.append(self._on_commit)

    def _on_commit(self, event: WatchEvent) -> None:
        if event.key != DEPLOYMENTS or event.type == "DELETED":
            return
        image = event.obj["spec"]["template"]["spec"]["containers"][0]["image"]
        names = self.seen.setdefault(image, set())
        names.add(f"{event.obj['metadata']['namespace']}/{event.obj['metadata']['name']}")
        if len(names) == self.engines and image not in self.done:
            self.done[image] = time.monotonic()

    def close(self) -> None:
        self.server.api.store.listeners.remove(self._on_commit)


# --- waiting ---------------------------------------------------------------------------------------------------


CHEAP_CHECK_S = 0.002  # a check faster than this runs again at the next commit
QUIET_FACTOR = 4  # a slower one: at most a fifth of the loop's time goes to it


def single_cluster_settings(server: EmbeddedAPIServer, workdir: Path, **overrides: Any) -> Settings:
    """Settings of a `ControllerApp` that reconciles `server` alone: its registration and traces under `workdir`, no
    webhooks installed, no metrics port."""
    registry = workdir / "clusters"
    write_registrations(registry, server.write_kubeconfig(workdir / "kubeconfig"), [server.name])
    return Settings.load(
        webhook_port=0,
        clusters_dir=registry,
        trace_file=workdir / "traces.jsonl",
        install_webhooks=False,
        metrics_port=-1,
        **overrides,
    )


async def until(
    servers: list[EmbeddedAPIServer], predicate: Callable[[], Any], timeout: float, what: str = "the predicate"
) -> Any:
    """Re-check `predicate` after every commit on `servers` (and at least every 0.25 s, for state outside the
    stores) until it returns something truthy; an AssertionError naming `what` after `timeout` seconds.

    A predicate that takes long (`differences` renders every InferenceService of the cluster) runs on the loop the
    controller runs on: re-run after each commit it would leave the controller one commit per check, so after a
    commit the commits that follow are let land for `QUIET_FACTOR` times the check's own time before it runs again
    (a time measured to its return, as benchmarks/resilience.py's convergence, is late by at most that pause)."""
    changed = asyncio.Event()

    def listener(_event: WatchEvent) -> None:
        changed.set()

    stores = [s.api.store for s in servers]
    for store in stores:
        store.listeners.append(listener)
    try:
        deadline = time.monotonic() + timeout
        while True:
            checked = time.monotonic()
            result = predicate()
            if result:
                return result
            cost = time.monotonic() - checked
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"not within {timeout:.0f} s: {what}")
            changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), min(0.25, left))
            if changed.is_set() and cost > CHEAP_CHECK_S:
                await asyncio.sleep(min(QUIET_FACTOR * cost, max(0.0, deadline - time.monotonic())))
    finally:
        for store in stores:
            with contextlib.suppress(ValueError):
                store.listeners.remove(listener)


# --- the fleet ---------------------------------------------------------------------------------------------------


@dataclass
class MixedFleet:
    sim: EmbeddedFleet
    app: ControllerApp
    base: Path
    clusters_dir: Path
    kubeconfigs: dict[str, Path]

    @property
    def servers(self) -> list[EmbeddedAPIServer]:
        return self.sim.servers

    async def seed(self, servers: list[EmbeddedAPIServer] | None = None) -> None:
        docs = workload_documents()
        await asyncio.gather(*(apply_all(s, docs) for s in servers or self.servers))

    async def rollout(self, image: str, servers: list[EmbeddedAPIServer] | None = None) -> None:
        await asyncio.gather(*(set_profile_image(s, image) for s in servers or self.servers))

    def differences(self, servers: list[EmbeddedAPIServer] | None = None) -> list[str]:
        return [p for s in servers or self.servers for p in differences(s)]

    async def converged(self, timeout: float = 30, servers: list[EmbeddedAPIServer] | None = None) -> None:
        """Wait until every cluster's state equals the expected render; fails listing what differs."""
        watched = servers or self.servers
        try:
            await until(watched, lambda: not self.differences(watched), timeout, "convergence")
        except AssertionError:
            left = self.differences(watched)
            raise AssertionError(
                f"not converged within {timeout} s; {len(left)} differences:\n" + "\n".join(left[:40])
            ) from None

    async def healthy(self, timeout: float = 15) -> None:
        """The controller process is healthy: /healthz and /readyz answer 200, and the queue drains."""
        assert self.app.status_server is not None
        base = self.app.status_server.base_url
        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            for probe in ("/healthz", "/readyz"):
                while True:
                    async with session.get(base + probe) as reply:
                        body = await reply.text()
                        if reply.status == 200:
                            break
                    if time.monotonic() > deadline:
                        raise AssertionError(f"{probe} answered {reply.status}: {body}")
                    await asyncio.sleep(0.1)  # another process's answer can only be polled
        queue = self.app.controller.queue
        await asyncio.wait_for(queue.drain(), max(0.1, deadline - time.monotonic()))
        while queue.depth() or queue.in_flight:
            if time.monotonic() > deadline:
                raise AssertionError(f"the queue does not drain: depth {queue.depths()}, in flight {queue.in_flight}")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def mixed_fleet(
    base: Path, prefix: str, *, count: int = 3, seed: bool = True, **settings: Any
) -> AsyncIterator[MixedFleet]:
    """`count` embedded clusters with every CRD, the controller running against them (on this event loop, its
    metrics server on a free port), and, with `seed`, the mixed workload applied on each and converged."""
    sim = await EmbeddedFleet(count, name_prefix=prefix).start()
    app: ControllerApp | None = None
    try:
        await sim.apply([CRDS])
        kubeconfigs = {s.name: s.write_kubeconfig(base / f"{s.name}.kubeconfig") for s in sim.servers}
        clusters_dir = base / "clusters"
        for server in sim.servers:
            write_registrations(clusters_dir, kubeconfigs[server.name], [server.name])
        options: dict[str, Any] = {"install_webhooks": False, "metrics_port": 0, **settings}
        loaded = Settings.load(webhook_port=0, clusters_dir=clusters_dir, trace_file=base / "traces.jsonl", **options)
        app = ControllerApp(loaded)
        await app.start()
        await app.wait_synced(30)
        fleet = MixedFleet(sim, app, base, clusters_dir, kubeconfigs)
        if seed:
            await fleet.seed()
            await fleet.converged(60)
        yield fleet
    finally:
        if app is not None:
            await app.stop()
        await sim.stop()
