"""The controller across a fleet: registration changes while running, partitions, watch faults, credential rotation.

Everything runs on the test's event loop: embedded clusters, the controller and the assertions, which wait for
store commits (never sleeps) with deadlines.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.controller.ome.watch import OmeWatch
from omectl.core.ome.runtimes import RuntimeRef
from omectl.settings import Settings
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet

ROOT = Path(__file__).resolve().parents[2]
SR = ("ome.io", "servingruntimes")
OPTS = WriteOptions(field_manager="fleet-test")
pytestmark = pytest.mark.xdist_group("e2e")


def csr(name: str, parent: str | None = None, image: str = "img:1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": meta,
        "spec": {"disabled": True, "engineConfig": {"runner": {"name": "ome-container", "image": image}}},
    }


def sr(name: str, parent: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": namespace, "annotations": {"ome.io/inherit-from": parent}},
        "spec": {"engineConfig": {"runner": {"name": "ome-container", "args": [f"--name={name}"]}}},
    }


async def create(server: EmbeddedAPIServer, obj: dict[str, Any]) -> None:
    plural = "clusterservingruntimes" if obj["kind"] == "ClusterServingRuntime" else "servingruntimes"
    rt = server.api.types.lookup("ome.io", "v1beta1", plural)
    assert rt is not None
    await server.api.create(rt, obj["metadata"].get("namespace", ""), obj, OPTS)


async def delete(server: EmbeddedAPIServer, kind_plural: str, name: str, namespace: str = "") -> None:
    rt = server.api.types.lookup("ome.io", "v1beta1", kind_plural)
    assert rt is not None
    await server.api.delete(rt, namespace, name, {}, OPTS)


def reasons(server: EmbeddedAPIServer) -> dict[str, str]:
    """InheritanceReady reason of every ServingRuntime in a cluster ("" while none is written)."""
    out = {}
    for obj in server.api.store.items(SR):
        conditions = (obj.get("status") or {}).get("conditions") or []
        ready = next((c for c in conditions if c.get("type") == "InheritanceReady"), {})
        out[obj["metadata"]["name"]] = ready.get("reason", "")
    return out


async def until(servers: list[EmbeddedAPIServer], predicate: Callable[[], bool], timeout: float = 30) -> None:
    """Wait for `predicate` to hold, re-checking after every commit on any of the servers."""
    changed = asyncio.Event()

    def listener(_event: Any) -> None:
        changed.set()

    for server in servers:
        server.api.store.listeners.append(listener)
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                changed.clear()
                # a bounded wait, so that a predicate over controller state (not a store) is also re-checked
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), 0.5)
    finally:
        for server in servers:
            server.api.store.listeners.remove(listener)


@dataclass
class Fleet:
    servers: list[EmbeddedAPIServer]
    app: ControllerApp
    clusters_dir: Path
    kubeconfigs: dict[str, Path]


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    sim = await EmbeddedFleet(4, name_prefix="f-").start()
    await sim.apply([ROOT / "deploy" / "crds"])
    kubeconfigs = {s.name: s.write_kubeconfig(tmp_path / f"{s.name}.kubeconfig") for s in sim.servers}
    clusters_dir = tmp_path / "clusters"
    for server in sim.servers[:3]:
        write_registrations(clusters_dir, kubeconfigs[server.name], [server.name])
    settings = Settings.load(
        webhook_port=0, clusters_dir=clusters_dir, trace_file=tmp_path / "traces.jsonl", install_webhooks=False
    )
    app = ControllerApp(settings)
    await app.start()
    await app.wait_synced(30)
    try:
        yield Fleet(sim.servers, app, clusters_dir, kubeconfigs)
    finally:
        await app.stop()
        await sim.stop()


async def seed(server: EmbeddedAPIServer, children: int = 3) -> None:
    await create(server, csr("profile"))
    for i in range(children):
        await create(server, sr(f"child-{i}", "profile"))


def all_resolved(server: EmbeddedAPIServer, count: int = 3) -> bool:
    found = reasons(server)
    return len(found) == count and set(found.values()) == {"Resolved"}


async def test_clusters_from_a_directory_and_changes_while_running(fleet: Fleet) -> None:
    first, second, third, fourth = fleet.servers
    for server in fleet.servers:
        await seed(server)
    await until(fleet.servers[:3], lambda: all(all_resolved(s) for s in (first, second, third)))
    assert reasons(fourth) == {name: "" for name in reasons(fourth)}  # not registered: nobody reconciles it
    assert sorted(fleet.app.controller.clusters) == ["f-1", "f-2", "f-3"]

    write_registrations(fleet.clusters_dir, fleet.kubeconfigs["f-4"], ["f-4"])
    (fleet.clusters_dir / "f-1.yaml").unlink()
    assert fleet.app.provider is not None
    await fleet.app.provider.inner.rescan()  # type: ignore[attr-defined]
    await fleet.app.wait_clusters({"f-2", "f-3", "f-4"})  # f-4's Lease taken, f-1's released
    await until([fourth], lambda: all_resolved(fourth))

    await create(first, sr("late", "profile"))  # f-1 is no longer registered
    await create(second, sr("late", "profile"))
    await until([second], lambda: all_resolved(second, 4))
    assert reasons(first)["late"] == ""


async def test_a_partitioned_cluster_does_not_stall_the_others_and_converges_after_healing(fleet: Fleet) -> None:
    first, second, third, _ = fleet.servers
    for server in (first, second, third):
        await seed(server)
    await until(fleet.servers[:3], lambda: all(all_resolved(s) for s in (first, second, third)))
    await second.partition()
    try:
        await delete(first, "clusterservingruntimes", "profile")
        await delete(third, "clusterservingruntimes", "profile")
        await delete(second, "clusterservingruntimes", "profile")  # in-process: the controller cannot see it
        broken = {f"child-{i}": "ParentNotFound" for i in range(3)}
        await until([first, third], lambda: reasons(first) == broken and reasons(third) == broken)
        assert set(reasons(second).values()) == {"Resolved"}
    finally:
        await second.heal()
    await until([second], lambda: reasons(second) == {f"child-{i}": "ParentNotFound" for i in range(3)})


async def test_watch_drops_and_forced_410s_lose_no_update(fleet: Fleet) -> None:
    first = fleet.servers[0]
    await seed(first, children=5)
    await until([first], lambda: all_resolved(first, 5))
    rt = first.api.types.lookup("ome.io", "v1beta1", "servingruntimes")
    assert rt is not None
    for round_ in range(5):
        first.api.store.close_all_watches()
        # re-point one child per round at a parent that does not exist, then compact so the resume gets 410
        body = sr(f"child-{round_}", f"missing-{round_}")
        live = first.api.store.get(SR, "default", f"child-{round_}")
        assert live is not None
        body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        await first.api.update(rt, "default", f"child-{round_}", body, OPTS)
        first.api.store.compact()
    await until([first], lambda: set(reasons(first).values()) == {"ParentNotFound"})
    cluster = fleet.app.controller.clusters["f-1"]
    assert sum(i.relists for i in cluster.informers) >= 1


async def test_rotating_one_clusters_credentials_rebuilds_only_that_cluster(fleet: Fleet) -> None:
    before = dict(fleet.app.controller.clusters)
    path = fleet.kubeconfigs["f-2"]
    config = yaml.safe_load(path.read_text())
    config["users"][0]["user"]["token"] = fleet.servers[1].token = "rotated-token"
    path.write_text(yaml.safe_dump(config))
    assert fleet.app.provider is not None
    applied = fleet.app.registry_batches
    changes = await fleet.app.provider.inner.rescan()  # type: ignore[attr-defined]
    assert [(c.kind, c.registration.name) for c in changes] == [("changed", "f-2")]
    await fleet.app.wait_registry_batches(applied + 1)
    after = fleet.app.controller.clusters
    assert after["f-1"] is before["f-1"]
    assert after["f-3"] is before["f-3"]
    assert after["f-2"] is not before["f-2"]
    second = fleet.servers[1]
    await seed(second)
    await until([second], lambda: all_resolved(second))


async def test_reverse_index_reaches_inference_services_below_a_profile(fleet: Fleet) -> None:
    first = fleet.servers[0]
    await seed(first, children=2)
    rt = first.api.types.lookup("ome.io", "v1beta1", "inferenceservices")
    assert rt is not None
    for name, runtime in (("uses-child", "child-0"), ("uses-profile", "profile"), ("unrelated", "other")):
        isvc = {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"runtime": {"name": runtime}, "engine": {"minReplicas": 1}},
        }
        await first.api.create(rt, "default", isvc, OPTS)
    cluster = fleet.app.controller.clusters["f-1"]

    def below(ref: RuntimeRef) -> list[str]:
        return sorted(i["metadata"]["name"] for i in cluster.watch(OmeWatch).reach(ref).inference_services)

    profile = RuntimeRef("ClusterServingRuntime", "", "profile")
    await until([first], lambda: below(profile) == ["uses-child", "uses-profile"])
    assert below(RuntimeRef("ServingRuntime", "default", "child-1")) == []


async def test_engine_workload_minimal_writes_and_broken_chain_leaves_it_untouched(fleet: Fleet) -> None:
    first = fleet.servers[0]
    samples = ROOT / "deploy" / "samples" / "ome"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llama-demo"}}
    ns_rt = first.api.types.lookup("", "v1", "namespaces")
    assert ns_rt is not None
    await first.api.create(ns_rt, "", ns, OPTS)
    for name in ("clusterbasemodel", "profile", "runtime", "isvc"):
        doc = yaml.safe_load((samples / f"{name}.yaml").read_text())
        plural = {
            "ClusterBaseModel": "clusterbasemodels",
            "ClusterServingRuntime": "clusterservingruntimes",
            "ServingRuntime": "servingruntimes",
            "InferenceService": "inferenceservices",
        }[doc["kind"]]
        rt = first.api.types.lookup("ome.io", "v1beta1", plural)
        assert rt is not None
        await first.api.create(rt, doc["metadata"].get("namespace", ""), doc, OPTS)
    deployments = ("apps", "deployments")

    def deployment() -> dict[str, Any] | None:
        return first.api.store.get(deployments, "llama-demo", "llama-3-2-3b-instruct-engine")

    def rendered() -> bool:
        isvc = first.api.store.get(("ome.io", "inferenceservices"), "llama-demo", "llama-3-2-3b-instruct")
        return deployment() is not None and bool(((isvc or {}).get("status") or {}).get("runtime"))

    await until([first], rendered)  # status.runtime is written after every object is applied
    before = deployment()
    assert before is not None
    engine = fleet.app.reconcilers.engine
    writes = engine.writes
    await delete(first, "clusterservingruntimes", "sglang-profile")

    def warned() -> bool:
        return any(
            e.get("reason") == "RuntimeValidationError" and e["involvedObject"]["name"] == "llama-3-2-3b-instruct"
            for e in first.api.store.items(("", "events"), "llama-demo")
        )

    await until([first], warned)
    assert any(
        e["message"].startswith("Runtime sglang-llama-3-2-3b does not support model llama-3-2-3b-instruct:")
        and e["message"].endswith(
            'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
        )
        for e in first.api.store.items(("", "events"), "llama-demo")
    )
    assert deployment() == before  # byte-identical: the broken chain wrote nothing
    await create(first, yaml.safe_load((samples / "profile.yaml").read_text()))
    await until([first], lambda: reasons(first).get("sglang-llama-3-2-3b") == "Resolved")
    await fleet.app.controller.queue.drain()
    assert deployment() == before  # the same render again: no write
    assert engine.writes == writes


async def apply_samples(server: EmbeddedAPIServer, names: tuple[str, ...]) -> None:
    samples = ROOT / "deploy" / "samples" / "ome"
    ns_rt = server.api.types.lookup("", "v1", "namespaces")
    assert ns_rt is not None
    if server.api.store.get(("", "namespaces"), "", "llama-demo") is None:
        await server.api.create(
            ns_rt, "", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llama-demo"}}, OPTS
        )
    plurals = {
        "ClusterBaseModel": "clusterbasemodels",
        "ClusterServingRuntime": "clusterservingruntimes",
        "ServingRuntime": "servingruntimes",
        "InferenceService": "inferenceservices",
    }
    for name in names:
        doc = yaml.safe_load((samples / f"{name}.yaml").read_text())
        rt = server.api.types.lookup("ome.io", "v1beta1", plurals[doc["kind"]])
        assert rt is not None
        await server.api.create(rt, doc["metadata"].get("namespace", ""), doc, OPTS)


def isvc_doc(name: str, runtime: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "llama-demo"},
        "spec": {"model": {"name": "llama-3-2-3b-instruct"}, "runtime": runtime, "engine": {"minReplicas": 1}},
    }


async def test_autosync_follows_a_profile_edit_and_a_pinned_service_reports_drift(fleet: Fleet) -> None:
    first = fleet.servers[0]
    await apply_samples(first, ("clusterbasemodel", "profile", "runtime"))
    isvcs = first.api.types.lookup("ome.io", "v1beta1", "inferenceservices")
    assert isvcs is not None
    await first.api.create(isvcs, "llama-demo", isvc_doc("follows", {"name": "sglang-llama-3-2-3b"}), OPTS)
    await first.api.create(
        isvcs, "llama-demo", isvc_doc("pinned", {"name": "sglang-llama-3-2-3b", "autoSync": False}), OPTS
    )

    def image(name: str) -> str | None:
        dep = first.api.store.get(("apps", "deployments"), "llama-demo", f"{name}-engine")
        return dep["spec"]["template"]["spec"]["containers"][0]["image"] if dep else None

    def drift(name: str) -> tuple[str, str] | None:
        obj = first.api.store.get(("ome.io", "inferenceservices"), "llama-demo", name) or {}
        cond = next(
            (c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "RuntimeDrifted"), None
        )
        return (cond["status"], cond["reason"]) if cond else None

    old_image = "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
    await until([first], lambda: drift("follows") == ("False", "AutoSync") and drift("pinned") == ("False", "UpToDate"))
    assert image("follows") == image("pinned") == old_image
    pinned_before = first.api.store.get(("apps", "deployments"), "llama-demo", "pinned-engine")

    csr_rt = first.api.types.lookup("ome.io", "v1beta1", "clusterservingruntimes")
    assert csr_rt is not None

    async def set_profile_image(value: str) -> None:
        live = first.api.store.get(("ome.io", "clusterservingruntimes"), "", "sglang-profile")
        assert live is not None
        body = yaml.safe_load((ROOT / "deploy" / "samples" / "ome" / "profile.yaml").read_text())
        body["spec"]["engineConfig"]["runner"]["image"] = value
        body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
        await first.api.update(csr_rt, "", "sglang-profile", body, OPTS)

    await set_profile_image("sglang:NEW")
    await until([first], lambda: image("follows") == "sglang:NEW" and drift("pinned") == ("True", "RevisionMismatch"))
    assert first.api.store.get(("apps", "deployments"), "llama-demo", "pinned-engine") == pinned_before
    revisions = [r["metadata"]["name"] for r in first.api.store.items(("apps", "controllerrevisions"), "llama-demo")]
    assert len(revisions) == 2 and all(r.startswith("sglang-llama-3-2-3b-") for r in revisions)

    await set_profile_image(old_image)  # undoing the edit clears the drift
    await until([first], lambda: image("follows") == old_image and drift("pinned") == ("False", "UpToDate"))
    assert first.api.store.get(("apps", "deployments"), "llama-demo", "pinned-engine") == pinned_before


async def test_a_missing_pinned_revision_is_a_pin_error_and_renders_nothing(fleet: Fleet) -> None:
    first = fleet.servers[0]
    await apply_samples(first, ("clusterbasemodel", "profile", "runtime"))
    isvcs = first.api.types.lookup("ome.io", "v1beta1", "inferenceservices")
    assert isvcs is not None
    await first.api.create(
        isvcs,
        "llama-demo",
        isvc_doc("stuck", {"name": "sglang-llama-3-2-3b", "revision": "sglang-llama-3-2-3b-nope"}),
        OPTS,
    )

    def pin_errors() -> list[str]:
        return [
            e["message"]
            for e in first.api.store.items(("", "events"), "llama-demo")
            if e.get("reason") == "RuntimePinError" and e["involvedObject"]["name"] == "stuck"
        ]

    await until([first], lambda: bool(pin_errors()))
    assert pin_errors()[0] == (
        "Runtime sglang-llama-3-2-3b does not support model llama-3-2-3b-instruct: "
        "runtime revision sglang-llama-3-2-3b-nope not found"
    )
    assert first.api.store.get(("apps", "deployments"), "llama-demo", "stuck-engine") is None


async def test_rollout_moves_a_pinned_service_to_the_live_revision(fleet: Fleet) -> None:
    first = fleet.servers[0]
    await apply_samples(first, ("clusterbasemodel", "profile", "runtime"))
    isvcs = first.api.types.lookup("ome.io", "v1beta1", "inferenceservices")
    csr_rt = first.api.types.lookup("ome.io", "v1beta1", "clusterservingruntimes")
    assert isvcs is not None and csr_rt is not None
    await first.api.create(
        isvcs, "llama-demo", isvc_doc("pinned", {"name": "sglang-llama-3-2-3b", "autoSync": False}), OPTS
    )

    def state() -> tuple[str | None, str | None]:
        dep = first.api.store.get(("apps", "deployments"), "llama-demo", "pinned-engine")
        obj = first.api.store.get(("ome.io", "inferenceservices"), "llama-demo", "pinned") or {}
        cond = next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == "RuntimeDrifted"), {})
        image = dep["spec"]["template"]["spec"]["containers"][0]["image"] if dep else None
        return image, cond.get("reason")

    await until([first], lambda: state()[1] == "UpToDate")
    live = first.api.store.get(("ome.io", "clusterservingruntimes"), "", "sglang-profile")
    assert live is not None
    body = yaml.safe_load((ROOT / "deploy" / "samples" / "ome" / "profile.yaml").read_text())
    body["spec"]["engineConfig"]["runner"]["image"] = "sglang:ROLLED"
    body["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
    await first.api.update(csr_rt, "", "sglang-profile", body, OPTS)
    await until([first], lambda: state()[1] == "RevisionMismatch")
    assert state()[0] != "sglang:ROLLED"
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "omectl",
        "runtime",
        "rollout",
        "pinned",
        "-n",
        "llama-demo",
        "--kubeconfig",
        str(fleet.kubeconfigs["f-1"]),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert out.decode().strip() == "inferenceservice.ome.io/pinned rolling out to the live revision"
    await until([first], lambda: state() == ("sglang:ROLLED", "UpToDate"))
