"""The kopf peer of the fleet-scale benchmark does omectl's engine work: run as kopf runs it (`kopf run --standalone`,
a subprocess) on one simulated cluster while omectl's controller runs on its twin (the same objects applied to
both), each cluster holds exactly the pure render of its InferenceServices, and the twins hold the same engine
Deployments and Services (as each writer applied them), the same InferenceService and runtime statuses and the same
runtime revisions. A profile edit then re-renders, on both, exactly the engines it reaches: not those of a namespace
whose own ServingRuntime shadows the profile, not an automatically selected one, not a pinned one (which reports
its drift instead).

Everything is awaited on the embedded servers' store commits, with a deadline (no sleeps)."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchmarks.applied import applied_configuration
from benchmarks.peers import api as peer_api
from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.core.ome.inheritance import resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.pipeline import CachedModels, CachedRuntimes, choose, model_of, render
from omectl.core.ome.render import component_name
from omectl.core.ome.revisions import revision_name, spec_hash
from omectl.core.render_stamp import RENDER_HASH, object_hash
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.settings import Settings
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet, apply_document
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.resilience.workload import CRDS, OME_SAMPLES, child, namespace, profile, until

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "benchmarks" / "peers" / "kopf_engine.py"
pytestmark = pytest.mark.xdist_group("e2e")

ISVCS = ("ome.io", "inferenceservices")
SERVING_RUNTIMES = ("ome.io", "servingruntimes")
CLUSTER_SERVING_RUNTIMES = ("ome.io", "clusterservingruntimes")
BASE_MODELS = ("ome.io", "basemodels")
CLUSTER_BASE_MODELS = ("ome.io", "clusterbasemodels")
DEPLOYMENTS = ("apps", "deployments")
SERVICES = ("", "services")
REVISIONS = ("apps", "controllerrevisions")
CHILD = "sglang-llama-3-2-3b"
PROFILE = "sglang-profile"
MODEL = "llama-3-2-3b-instruct"
EDITED_IMAGE = "registry.example/sglang:edited"
DEADLINE_S = 90.0


# --- the workload: reached and not reached by a profile edit -------------------------------------------------------


def runtime(kind: str, name: str, ns: str, spec: dict[str, Any], parent: str | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "ServingRuntime":
        meta["namespace"] = ns
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def inference_service(name: str, ns: str, runtime_name: str | None, **runtime_spec: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"name": MODEL}, "engine": {"minReplicas": 1}}
    if runtime_name:
        spec["runtime"] = {"name": runtime_name, **runtime_spec}
    meta = {"name": name, "namespace": ns}
    return {"apiVersion": "ome.io/v1beta1", "kind": "InferenceService", "metadata": meta, "spec": spec}


def documents() -> list[dict[str, Any]]:
    """team-a: the profile's child (two InferenceServices and a pinned one), an AMD child no node fits, and an
    automatically selected standalone ClusterServingRuntime; team-b: the child under team-b's own ServingRuntime
    `sglang-profile`, which shadows the ClusterServingRuntime."""
    model = yaml.safe_load((OME_SAMPLES / "clusterbasemodel.yaml").read_text())
    shadow = copy.deepcopy(profile())
    shadow["kind"] = "ServingRuntime"
    shadow["metadata"]["namespace"] = "team-b"
    amd = child("team-a")
    amd["metadata"]["name"] = "sglang-amd"
    for limits in (amd["spec"]["engineConfig"]["runner"]["resources"][k] for k in ("requests", "limits")):
        limits["amd.com/gpu"] = limits.pop("nvidia.com/gpu")
    standalone_spec = copy.deepcopy(child("team-a")["spec"])
    standalone_spec["supportedModelFormats"][0]["autoSelect"] = True
    runner = profile()["spec"]["engineConfig"]["runner"]
    standalone_spec["engineConfig"]["runner"].update(image="registry.example/standalone:1", command=runner["command"])
    return [
        namespace("team-a"),
        namespace("team-b"),
        model,
        profile(),
        shadow,
        child("team-a"),
        child("team-b"),
        amd,
        runtime("ClusterServingRuntime", "standalone", "", standalone_spec, None),
        inference_service("a-0", "team-a", CHILD),
        inference_service("a-1", "team-a", CHILD),
        inference_service("a-amd", "team-a", "sglang-amd"),
        inference_service("a-pinned", "team-a", CHILD, autoSync=False),
        inference_service("a-auto", "team-a", None),
        inference_service("b-0", "team-b", CHILD),
    ]


REACHED_ENGINES = {"a-0-engine", "a-1-engine", "a-amd-engine"}  # by the ClusterServingRuntime profile's edit


# --- the cluster as its store holds it -----------------------------------------------------------------------------


class StoreView:
    """One kind of a store as `omectl.core.ome.pipeline.Store`."""

    def __init__(self, server: EmbeddedAPIServer, key: tuple[str, str]) -> None:
        self.store, self.key = server.api.store, key

    def get(self, ns: str, name: str) -> Mapping[str, Any] | None:
        return self.store.get(self.key, ns, name)

    def list(self, ns: str | None = None) -> Iterable[Mapping[str, Any]]:
        return list(self.store.items(self.key, ns))


def runtimes_of(server: EmbeddedAPIServer) -> CachedRuntimes:
    return CachedRuntimes(StoreView(server, SERVING_RUNTIMES), StoreView(server, CLUSTER_SERVING_RUNTIMES))


def models_of(server: EmbeddedAPIServer) -> CachedModels:
    return CachedModels(StoreView(server, BASE_MODELS), StoreView(server, CLUSTER_BASE_MODELS))


def live_revision(server: EmbeddedAPIServer, isvc: Mapping[str, Any]) -> str | None:
    """The revision of the live merge of the runtime `isvc` names; None under automatic selection."""
    choice = choose(isvc, model_of(isvc, models_of(server)), runtimes_of(server))
    if choice.own_spec is not None:
        return None
    merged = merge_chain(spec_layers(resolve_chain(choice.runtime, runtimes_of(server)))).spec
    return revision_name(choice.ref.name, spec_hash(merged))


def pure_render(server: EmbeddedAPIServer, isvc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """What `isvc` renders from its cluster's objects: its runtime's own spec under automatic selection, else the
    spec of the revision its status records."""
    choice = choose(isvc, model_of(isvc, models_of(server)), runtimes_of(server))
    if choice.own_spec is not None:
        return render(isvc, choice, choice.own_spec)
    recorded = isvc["status"]["runtime"]["revision"]
    stored = server.api.store.get(REVISIONS, isvc["metadata"]["namespace"], recorded)
    assert stored is not None, recorded
    return render(isvc, choice, stored["data"]["spec"], revision=recorded)


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def unsettled(server: EmbeddedAPIServer) -> list[str]:
    """What keeps the cluster from the state its writer must leave: runtimes Resolved at their generation; every
    InferenceService's status at its generation, on the live revision (pinned: drifting exactly when that is not
    the one it pins), its engine's status observed and mirrored (EngineReady known)."""
    store = server.api.store
    problems = []
    for key in (SERVING_RUNTIMES, CLUSTER_SERVING_RUNTIMES):
        for rt in store.items(key):
            ready = condition(rt, "InheritanceReady")
            if ready.get("reason") != "Resolved" or (rt.get("status") or {}).get("observedGeneration") != rt[
                "metadata"
            ].get("generation"):
                problems.append(f"runtime {rt['metadata']['name']} not Resolved at its generation")
    for isvc in store.items(ISVCS):
        ns, name = isvc["metadata"]["namespace"], isvc["metadata"]["name"]
        status = isvc.get("status") or {}
        engine = store.get(DEPLOYMENTS, ns, component_name(name, "engine"))
        if status.get("observedGeneration") != isvc["metadata"]["generation"] or engine is None:
            problems.append(f"{name}: not rendered at its generation")
            continue
        if (engine.get("status") or {}).get("observedGeneration") != engine["metadata"]["generation"]:
            problems.append(f"{name}: its engine's new generation not observed yet")
        if condition(isvc, "EngineReady").get("status", "Unknown") == "Unknown":
            problems.append(f"{name}: EngineReady unknown")
        live = live_revision(server, isvc)
        recorded = (status.get("runtime") or {}).get("revision")
        if isvc["spec"].get("runtime", {}).get("autoSync") is False:
            if condition(isvc, "RuntimeDrifted").get("status") != ("True" if recorded != live else "False"):
                problems.append(f"{name}: drift not reported")
        elif recorded != live:
            problems.append(f"{name}: on revision {recorded}, the live one is {live}")
    return problems


def held_renders(server: EmbeddedAPIServer) -> list[str]:
    """Every rendered object of every InferenceService, as the cluster holds it, carries the stamp of its pure
    render (whose owner references name this cluster's InferenceService)."""
    store = server.api.store
    problems = []
    for isvc in store.items(ISVCS):
        objects = pure_render(server, isvc)
        assert {o["kind"] for o in objects} == {"Deployment", "Service"}
        for obj in objects:
            key = DEPLOYMENTS if obj["kind"] == "Deployment" else SERVICES
            live = store.get(key, obj["metadata"]["namespace"], obj["metadata"]["name"])
            stamp = ((live or {}).get("metadata", {}).get("annotations") or {}).get(RENDER_HASH)
            if stamp != object_hash(obj):
                problems.append(f"{server.name} {obj['kind']} {obj['metadata']['name']}: not its pure render")
        if "revision" not in isvc["status"]["runtime"]:  # automatic selection records the render's hash
            assert isvc["status"]["runtime"]["hash"] == object_hash({"objects": objects})
    return problems


def without_times(conditions: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in c.items() if k != "lastTransitionTime"} for c in conditions]


def written_state(server: EmbeddedAPIServer, manager: str) -> dict[str, Any]:
    """What the cluster's writer (`manager`) left, without what differs between two clusters holding the same
    objects: uids (of owner references, hence render stamps and an automatic selection's render hash),
    resourceVersions, transition times, allocated addresses."""
    store = server.api.store

    def rendered(obj: Mapping[str, Any]) -> dict[str, Any]:
        applied = applied_configuration(obj, manager)
        assert applied is not None, f"{manager} applied no {obj['kind']} {obj['metadata']['name']}"
        applied["metadata"]["annotations"].pop(RENDER_HASH)
        for owner in applied["metadata"]["ownerReferences"]:
            isvc = store.get(ISVCS, obj["metadata"]["namespace"], owner["name"])
            assert isvc is not None and owner.pop("uid") == isvc["metadata"]["uid"]
        return applied

    def labelled(key: tuple[str, str]) -> Iterator[dict[str, Any]]:
        return (o for o in store.items(key) if "ome.io/inferenceservice" in (o["metadata"].get("labels") or {}))

    def status(obj: Mapping[str, Any]) -> dict[str, Any]:
        found = copy.deepcopy(obj.get("status") or {})
        found["conditions"] = without_times(found.get("conditions") or [])
        if "revision" not in found.get("runtime", {"revision": ""}):
            found["runtime"].pop("hash")  # covered by `held_renders`
        return found

    def revision(obj: Mapping[str, Any]) -> tuple[Any, ...]:
        data = {k: v for k, v in obj["data"].items() if k != "resourceVersions"}
        return obj["metadata"]["labels"], obj["revision"], data

    def ident(obj: Mapping[str, Any]) -> str:
        return f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"

    return {
        "deployments": {ident(d): (rendered(d), d["spec"]) for d in labelled(DEPLOYMENTS)},
        "services": {ident(s): rendered(s) for s in labelled(SERVICES)},
        "inference services": {ident(i): status(i) for i in store.items(ISVCS)},
        "runtimes": {ident(r): status(r) for k in (SERVING_RUNTIMES, CLUSTER_SERVING_RUNTIMES) for r in store.items(k)},
        "revisions": {ident(r): revision(r) for r in store.items(REVISIONS)},
    }


def patched_engines(server: EmbeddedAPIServer, since: int, agent: str) -> set[str]:
    return {
        r.name
        for r in server.request_log.records(since)
        if r.verb == "patch" and r.resource == "deployments" and agent in r.user_agent.lower() and r.is_write
    }


# --- the twins -----------------------------------------------------------------------------------------------------


def start_peer(kubeconfig: Path, log: Path) -> subprocess.Popen[bytes]:
    env = dict(os.environ, KUBECONFIG=str(kubeconfig))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", "--quiet", str(PEER)]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


async def test_the_kopf_peer_renders_what_omectl_renders_and_a_profile_edit_re_renders_exactly_what_it_reaches(
    tmp_path: Path,
) -> None:
    nodes = SimulatorConfig(pools=(NodePool(count=1, gpus_per_node=8),))
    sim = await EmbeddedFleet(2, name_prefix="twin-", simulator=nodes).start()
    omectl_side, kopf_side = sim.servers
    app: ControllerApp | None = None
    peer: subprocess.Popen[bytes] | None = None
    log = tmp_path / "kopf.log"
    try:
        await sim.apply([CRDS])
        clusters = tmp_path / "clusters"
        write_registrations(clusters, omectl_side.write_kubeconfig(tmp_path / "omectl.kubeconfig"), [omectl_side.name])
        settings = Settings.load(
            webhook_port=0, clusters_dir=clusters, trace_file=tmp_path / "traces.jsonl", install_webhooks=False,
            metrics_port=0,
        )  # fmt: skip
        app = ControllerApp(settings)
        await app.start()
        peer = start_peer(kopf_side.write_kubeconfig(tmp_path / "kopf.kubeconfig"), log)
        for doc in documents():
            for server in sim.servers:
                await apply_document(server, copy.deepcopy(doc))

        def settled() -> bool:
            if peer.poll() is not None:
                raise AssertionError(f"the kopf peer exited with {peer.returncode}:\n{log.read_text()[-3000:]}")
            return not unsettled(omectl_side) and not unsettled(kopf_side)

        await until(sim.servers, settled, DEADLINE_S, "both twins rendered and reported")
        assert held_renders(omectl_side) == [] and held_renders(kopf_side) == []
        assert written_state(kopf_side, peer_api.FIELD_MANAGER) == written_state(omectl_side, FIELD_MANAGER)
        amd = kopf_side.api.store.get(ISVCS, "team-a", "a-amd")
        assert amd is not None and condition(amd, "EngineReady")["status"] == "False"  # no node has AMD GPUs
        assert "Insufficient amd.com/gpu" in condition(amd, "EngineReady")["message"]

        since = {server.name: server.request_log.total for server in sim.servers}
        for server in sim.servers:
            await apply_document(server, profile(EDITED_IMAGE))
        await until(sim.servers, settled, DEADLINE_S, "both twins re-rendered after the profile edit")
        assert held_renders(omectl_side) == [] and held_renders(kopf_side) == []
        assert written_state(kopf_side, peer_api.FIELD_MANAGER) == written_state(omectl_side, FIELD_MANAGER)
        by_peer = patched_engines(kopf_side, since[kopf_side.name], peer_api.USER_AGENT.split("/")[0])
        by_omectl = patched_engines(omectl_side, since[omectl_side.name], "omectl")
        assert by_peer == by_omectl == REACHED_ENGINES
        pinned = kopf_side.api.store.get(ISVCS, "team-a", "a-pinned")
        assert pinned is not None and condition(pinned, "RuntimeDrifted")["reason"] == "RevisionMismatch"
    finally:
        if peer is not None:
            peer.terminate()
            peer.wait(30)
        if app is not None:
            await app.stop()
        await sim.stop()
