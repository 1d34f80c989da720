"""FleetRuntimes end to end (issue 16, first slices), through the real kubectl: a hub (fr-1) holding the
registrations and the FleetRuntimes, three members (fr-2, fr-3 labelled gpu=h200; fr-4 gpu=mi300x), and `omectl
run` with that hub (setting hub_kubeconfig) applying them.

Covered: a template applied to exactly the placed clusters (server-side apply, field manager omectl-fleet, owner
label, revision annotation, a ControllerRevision in the hub); a template edit rolled to every placed cluster as a
new revision; a user's runtime of the same name is a per-cluster Conflict and is never touched; drift reported
(Report) then put back (Correct); a cluster no longer placed loses its copy; a ServingRuntime template copied into
its namespaces; deleting the FleetRuntime removes its copies and its revisions, and nothing else.

Waves (the members simulate one 8-GPU node each, so InferenceServices turn Ready; the applier runs on a FakeClock
the tests move, so soaks and deadlines pass without waiting): a profile that the members' InferenceServices inherit
from rolled wave by wave, each wave gated by those engines; a revision whose engines never turn Ready (its
nodeSelector matches no node) fails its wave at the deadline and is rolled back; pause holds a wave; a new edit
mid-rollout starts again from wave 1; a new applier (nothing in memory, as after a restart) goes on from the
status mid-wave; a member partitioned away in its wave holds the gate until the deadline; a template whose chain
would break in a wave's cluster fails that wave with the chain error. Requests (annotations, as `omectl rollout`
writes them): promote skips a gate, abort stops the rollout where it is, rollback re-applies the stable revision
to the changed clusters (the last wave's first) or, `rollback-to`, a kept revision; `maxUnavailableClusters` lets a
wave pass with a member unreachable.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.controller.app import ControllerApp
from omectl.controller.ome.watch import OmeWatch
from omectl.controller.runtime.queue import FakeClock
from omectl.core.fleet_runtimes import FLEET_RUNTIME_LABEL, REVISION_ANNOTATION
from omectl.fleet.providers import CLUSTER_LABEL, CLUSTER_NAME_LABEL, LABEL_ANNOTATION_PREFIX
from omectl.kube.field_managers import FLEET_FIELD_MANAGER
from omectl.settings import Settings
from omectl.sim.fleet import BackgroundFleet
from omectl.sim.simulator import NodePool, SimulatorConfig
from omectl.tracing.reader import TraceStore
from omectl.tracing.spans import ATTR_FLEET_RUNTIME, ATTR_ROLLOUT_CLUSTERS, ATTR_ROLLOUT_REVISION, ATTR_ROLLOUT_WAVE
from tests.support import Kubectl, simulated_fleet, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("fleet-runtimes")]

ROOT = Path(__file__).resolve().parents[2]
HUB = "fr-1"
MEMBERS = {"fr-2": {"gpu": "h200", "tier": "lab"}, "fr-3": {"gpu": "h200"}, "fr-4": {"gpu": "mi300x"}}
NAMESPACE = "omectl-system"
SAMPLES = ROOT / "deploy" / "samples" / "ome"
EPOCH = 1_800_000_000.0  # the applier's FakeClock starts here (seconds since the epoch: its times go to status)


@dataclass
class Hub:
    kubectl: Kubectl
    app: ControllerApp
    bg: BackgroundFleet
    clock: FakeClock

    def advance(self, seconds: float) -> None:
        """Move the applier's clock (on the fleet's loop, where its sleepers wait)."""

        async def move() -> None:
            self.clock.advance(seconds)

        self.bg.run(move())

    def reconciled(self) -> None:
        """Wait until the applier has reconciled every FleetRuntime once more (to see that nothing moved): twice
        marked and a pass ended after each, so the second pass began after the first mark."""
        applier = self.app.fleet_runtimes
        assert applier is not None

        async def mark() -> None:
            applier.mark_all()

        for _ in range(2):
            before = applier.passes
            self.bg.run(mark())
            until(lambda: applier.passes > before or None, "one more reconcile pass")  # noqa: B023

    def k(self, cluster: str, *args: str, **kw: Any) -> str:
        return self.kubectl.run(f"--context={cluster}", *args, **kw).stdout  # type: ignore[no-any-return]

    def apply(self, cluster: str, doc: dict[str, Any]) -> None:
        self.k(cluster, "apply", "--validate=false", "-f", "-", input=json.dumps(doc))

    def get(self, cluster: str, *what: str) -> dict[str, Any] | None:
        proc = self.kubectl.run(
            f"--context={cluster}", "get", *what, "-o", "json", "--show-managed-fields", check=False
        )
        return json.loads(proc.stdout) if proc.returncode == 0 else None

    def fr(self, name: str) -> dict[str, Any]:
        found = self.get(HUB, "fleetruntime", name)
        assert found is not None, name
        return found

    def status(self, name: str) -> dict[str, Any]:
        return self.fr(name).get("status") or {}

    def clusters(self, name: str) -> dict[str, dict[str, Any]]:
        return {c["name"]: c for c in self.status(name).get("clusters") or []}

    def wait_phases(self, name: str, phases: dict[str, str], revision: int | None = None) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            status = self.status(name)
            got = {c["name"]: c["phase"] for c in status.get("clusters") or []}
            if got != phases or (revision is not None and status.get("revision") != revision):
                return None
            if revision is not None and any(
                c.get("revision") != revision for c in status["clusters"] if c["phase"] == "Applied"
            ):
                return None
            return status

        try:
            return until(reached, f"{name}: clusters {phases} at revision {revision}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; status: {self.status(name)}") from None

    def revisions(self, name: str) -> list[dict[str, Any]]:
        found = self.get(HUB, "controllerrevisions", "-n", NAMESPACE, "-l", f"{FLEET_RUNTIME_LABEL}={name}")
        return sorted((found or {}).get("items") or [], key=lambda r: r["revision"])


def registration(name: str, kubeconfig: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"omectl-cluster-{name}",
            "namespace": NAMESPACE,
            "labels": {CLUSTER_LABEL: "true", CLUSTER_NAME_LABEL: name},
            "annotations": {f"{LABEL_ANNOTATION_PREFIX}{k}": v for k, v in labels.items()},
        },
        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
    }


def register_members(
    kubectl: Kubectl, bg: BackgroundFleet, base: Path, hub: str, members: dict[str, dict[str, str]]
) -> Path:
    """Register each of `members` (name → labels) in the hub's namespace `NAMESPACE` by a Secret holding its
    kubeconfig (written under `base`); the hub's own kubeconfig is `base/hub.kubeconfig`, returned."""
    kubectl.run(f"--context={hub}", "create", "namespace", NAMESPACE)
    servers = {s.name: s for s in bg.fleet.servers}
    for name, labels in members.items():
        member_kubeconfig = servers[name].write_kubeconfig(base / f"{name}.kubeconfig").read_text()
        doc = registration(name, member_kubeconfig, labels)
        kubectl.run(f"--context={hub}", "apply", "--validate=false", "-f", "-", input=json.dumps(doc))
    hub_kubeconfig: Path = servers[hub].write_kubeconfig(base / "hub.kubeconfig")
    return hub_kubeconfig


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    base = tmp_path_factory.mktemp("fleet-runtimes")
    simulator = {name: SimulatorConfig(pools=(NodePool(count=1, gpus_per_node=8),)) for name in MEMBERS}
    # every CRD of deploy/crds, the hub's too (deploy/crds/hub)
    with simulated_fleet(base, 1 + len(MEMBERS), "fr-", simulator=simulator) as simulated:
        bg, kubectl = simulated.bg, simulated.kubectl
        hub_kubeconfig = register_members(kubectl, bg, base, HUB, MEMBERS)
        settings = Settings.load(
            webhook_port=0, hub_kubeconfig=hub_kubeconfig, hub_namespace=NAMESPACE, trace_file=base / "traces.jsonl"
        )

        async def start() -> ControllerApp:
            app = ControllerApp(settings)
            await app.start()
            await app.wait_synced(60)
            return app

        app = bg.run(start())
        try:
            assert app.fleet_runtimes is not None
            clock = FakeClock(EPOCH)
            app.fleet_runtimes.clock = clock
            yield Hub(kubectl, app, bg, clock)
        finally:
            bg.run(app.stop())


def template(name: str, image: str, kind: str = "ClusterServingRuntime") -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": kind,
        "metadata": {"name": name, "labels": {"team": "ml"}},
        "spec": {
            "supportedModelFormats": [
                {
                    "name": "safetensors",
                    "modelFormat": {"name": "safetensors"},
                    "modelFramework": {"name": "transformers"},
                }
            ],
            "engineConfig": {"runner": {"name": "ome-container", "image": image}},
        },
    }


def fleet_runtime(name: str, tmpl: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"template": tmpl, "placement": {"clusterSelector": {"matchLabels": {"gpu": "h200"}}}}
    kind = {"apiVersion": "fleet.omectl.io/v1alpha1", "kind": "FleetRuntime"}
    return {**kind, "metadata": {"name": name}, "spec": {**body, **spec}}


def image_of(runtime: dict[str, Any] | None) -> str | None:
    return runtime["spec"]["engineConfig"]["runner"]["image"] if runtime else None


def test_a_template_rolls_to_the_placed_clusters_and_an_edit_is_a_new_revision(hub: Hub) -> None:
    hub.apply(HUB, fleet_runtime("vllm", template("vllm-fleet", "vllm:0.6")))
    status = hub.wait_phases("vllm", {"fr-2": "Applied", "fr-3": "Applied"}, revision=1)
    assert (status["placed"], status["applied"], status["phase"]) == (2, 2, "Succeeded")
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "Applied")
    for cluster in ("fr-2", "fr-3"):
        copy = hub.get(cluster, "clusterservingruntime", "vllm-fleet")
        assert copy is not None and image_of(copy) == "vllm:0.6"
        labels, annotations = copy["metadata"]["labels"], copy["metadata"]["annotations"]
        assert labels[FLEET_RUNTIME_LABEL] == "vllm" and labels["team"] == "ml"
        assert annotations[REVISION_ANNOTATION] == "1"
        managers = {(m["manager"], m["operation"]) for m in copy["metadata"]["managedFields"]}
        assert (FLEET_FIELD_MANAGER, "Apply") in managers
    assert hub.get("fr-4", "clusterservingruntime", "vllm-fleet") is None  # gpu=mi300x is not placed
    (first,) = hub.revisions("vllm")
    assert first["revision"] == 1 and first["data"]["template"]["spec"]["engineConfig"]["runner"]["image"] == "vllm:0.6"
    # The rest of the printer columns, as a person reads them.
    row = hub.k(HUB, "get", "fleetruntime", "vllm", "--no-headers").split()
    assert row[:6] == ["vllm", "ClusterServingRuntime", "vllm-fleet", "1", "2", "2"] and row[6] == "Succeeded"

    # An image bump: a second revision, on every placed cluster.
    hub.apply(HUB, fleet_runtime("vllm", template("vllm-fleet", "vllm:0.7")))
    hub.wait_phases("vllm", {"fr-2": "Applied", "fr-3": "Applied"}, revision=2)
    for cluster in ("fr-2", "fr-3"):
        copy = hub.get(cluster, "clusterservingruntime", "vllm-fleet")
        assert image_of(copy) == "vllm:0.7" and copy is not None
        assert copy["metadata"]["annotations"][REVISION_ANNOTATION] == "2"
    assert [r["revision"] for r in hub.revisions("vllm")] == [1, 2]

    # Going back to the first template renumbers its revision as the newest (no third ControllerRevision).
    hub.apply(HUB, fleet_runtime("vllm", template("vllm-fleet", "vllm:0.6")))
    hub.wait_phases("vllm", {"fr-2": "Applied", "fr-3": "Applied"}, revision=3)
    assert image_of(hub.get("fr-3", "clusterservingruntime", "vllm-fleet")) == "vllm:0.6"
    revisions = hub.revisions("vllm")
    assert [r["revision"] for r in revisions] == [2, 3]
    assert revisions[1]["data"]["template"]["spec"]["engineConfig"]["runner"]["image"] == "vllm:0.6"

    # Placing fr-4 too, then fr-2 no longer: fr-4 gets a copy, fr-2's is deleted.
    placement = {"clusterSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}}
    hub.apply(HUB, fleet_runtime("vllm", template("vllm-fleet", "vllm:0.6"), placement=placement))
    hub.wait_phases("vllm", {"fr-3": "Applied", "fr-4": "Applied"}, revision=3)
    until(lambda: hub.get("fr-2", "clusterservingruntime", "vllm-fleet") is None, "fr-2's copy deleted")
    assert hub.get("fr-4", "clusterservingruntime", "vllm-fleet") is not None

    # Deleting the FleetRuntime deletes its copies and its revisions.
    hub.k(HUB, "delete", "fleetruntime", "vllm")
    until(
        lambda: all(hub.get(c, "clusterservingruntime", "vllm-fleet") is None for c in ("fr-3", "fr-4")),
        "fr-3's and fr-4's copies deleted",
    )
    until(lambda: not hub.revisions("vllm"), "the revisions deleted")


def test_a_users_runtime_of_the_same_name_is_a_conflict_and_is_never_touched(hub: Hub) -> None:
    users = template("shared", "users:1")
    users["metadata"]["labels"] = {"owner": "someone"}
    hub.apply("fr-3", users)
    hub.apply(HUB, fleet_runtime("shared", template("shared", "fleet:1")))
    status = hub.wait_phases("shared", {"fr-2": "Applied", "fr-3": "Conflict"}, revision=1)
    conflict = next(c for c in status["clusters"] if c["name"] == "fr-3")
    assert "ClusterServingRuntime shared exists and is not made by this FleetRuntime" in conflict["message"]
    assert (status["phase"], status["applied"]) == ("Degraded", 1)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "Conflict")
    theirs = hub.get("fr-3", "clusterservingruntime", "shared")
    assert theirs is not None and image_of(theirs) == "users:1"
    assert FLEET_RUNTIME_LABEL not in theirs["metadata"]["labels"]
    assert FLEET_FIELD_MANAGER not in {m["manager"] for m in theirs["metadata"]["managedFields"]}

    # The FleetRuntime deleted: its own copy goes, the user's runtime stays as it was.
    hub.k(HUB, "delete", "fleetruntime", "shared")
    until(lambda: hub.get("fr-2", "clusterservingruntime", "shared") is None, "fr-2's copy deleted")
    until(lambda: hub.revisions("shared") == [], "the revisions deleted")
    kept = hub.get("fr-3", "clusterservingruntime", "shared")
    assert kept is not None and kept["metadata"]["uid"] == theirs["metadata"]["uid"] and image_of(kept) == "users:1"

    # Made again it is again a Conflict there; once the user's runtime is gone, the copy is applied there too.
    hub.apply(HUB, fleet_runtime("shared", template("shared", "fleet:1")))
    hub.wait_phases("shared", {"fr-2": "Applied", "fr-3": "Conflict"}, revision=1)
    hub.k("fr-3", "delete", "clusterservingruntime", "shared")
    hub.wait_phases("shared", {"fr-2": "Applied", "fr-3": "Applied"}, revision=1)
    assert image_of(hub.get("fr-3", "clusterservingruntime", "shared")) == "fleet:1"
    hub.k(HUB, "delete", "fleetruntime", "shared")
    until(lambda: hub.get("fr-3", "clusterservingruntime", "shared") is None, "fr-3's copy deleted")


def test_drift_is_reported_then_put_back_when_the_policy_says_correct(hub: Hub) -> None:
    hub.apply(HUB, fleet_runtime("drift", template("drift", "good:1"), driftPolicy="Report"))
    hub.wait_phases("drift", {"fr-2": "Applied", "fr-3": "Applied"}, revision=1)
    edit = {"spec": {"engineConfig": {"runner": {"image": "hand-edited"}}}}
    hub.k("fr-2", "patch", "clusterservingruntime", "drift", "--type=merge", "-p", json.dumps(edit))
    status = hub.wait_phases("drift", {"fr-2": "Drifted", "fr-3": "Applied"}, revision=1)
    drifted = next(c for c in status["clusters"] if c["name"] == "fr-2")
    assert "edited in the cluster" in drifted["message"] and "driftPolicy is Report" in drifted["message"]
    assert status["phase"] == "Degraded"
    assert image_of(hub.get("fr-2", "clusterservingruntime", "drift")) == "hand-edited"  # reported, not reverted
    # A copy deleted by hand is applied again, under Report too.
    uid = (hub.get("fr-3", "clusterservingruntime", "drift") or {})["metadata"]["uid"]
    hub.k("fr-3", "delete", "clusterservingruntime", "drift")
    until(
        lambda: (
            (hub.get("fr-3", "clusterservingruntime", "drift") or {"metadata": {"uid": uid}})["metadata"]["uid"] != uid
        ),
        "fr-3's copy made again",
    )

    spec = fleet_runtime("drift", template("drift", "good:1"), driftPolicy="Correct")
    hub.apply(HUB, spec)
    hub.wait_phases("drift", {"fr-2": "Applied", "fr-3": "Applied"}, revision=1)
    until(lambda: image_of(hub.get("fr-2", "clusterservingruntime", "drift")) == "good:1", "the copy put back")
    # Under Correct the next edit is put back at once.
    hub.k("fr-3", "patch", "clusterservingruntime", "drift", "--type=merge", "-p", json.dumps(edit))
    until(lambda: image_of(hub.get("fr-3", "clusterservingruntime", "drift")) == "good:1", "the edit reverted")
    hub.wait_phases("drift", {"fr-2": "Applied", "fr-3": "Applied"}, revision=1)
    hub.k(HUB, "delete", "fleetruntime", "drift")
    until(lambda: hub.get("fr-2", "clusterservingruntime", "drift") is None, "the copy deleted")


def test_a_serving_runtime_goes_to_each_namespace_and_a_bad_template_is_invalid(hub: Hub) -> None:
    for cluster in MEMBERS:
        for ns in ("team-a", "team-b"):
            hub.k(cluster, "create", "namespace", ns)
    tmpl = template("ns-runtime", "sr:1", kind="ServingRuntime")
    hub.apply(HUB, fleet_runtime("ns", tmpl, namespaces=["team-a", "team-b"], placement={"clusters": ["fr-4"]}))
    status = hub.wait_phases("ns", {"fr-4": "Applied"}, revision=1)
    (entry,) = status["clusters"]
    assert sorted(c["namespace"] for c in entry["copies"]) == ["team-a", "team-b"]
    for ns in ("team-a", "team-b"):
        assert image_of(hub.get("fr-4", "servingruntime", "ns-runtime", "-n", ns)) == "sr:1"
    assert hub.get("fr-2", "servingruntime", "ns-runtime", "-n", "team-a") is None
    # One namespace dropped: its copy goes.
    hub.apply(HUB, fleet_runtime("ns", tmpl, namespaces=["team-a"], placement={"clusters": ["fr-4"]}))
    hub.wait_phases("ns", {"fr-4": "Applied"}, revision=2)
    until(lambda: hub.get("fr-4", "servingruntime", "ns-runtime", "-n", "team-b") is None, "team-b's copy deleted")
    # A template the controller refuses: Invalid, nothing applied or deleted.
    hub.apply(HUB, fleet_runtime("ns", tmpl, placement={"clusters": ["fr-4"]}))  # no namespaces
    until(lambda: hub.status("ns").get("phase") == "Invalid", "Invalid")
    ready = next(c for c in hub.status("ns")["conditions"] if c["type"] == "Ready")
    assert ready["reason"] == "InvalidTemplate" and "spec.namespaces is required" in ready["message"]
    assert hub.get("fr-4", "servingruntime", "ns-runtime", "-n", "team-a") is not None
    hub.k(HUB, "delete", "fleetruntime", "ns")
    until(lambda: hub.get("fr-4", "servingruntime", "ns-runtime", "-n", "team-a") is None, "the copy deleted")


# --- waves -------------------------------------------------------------------------------------------------------

PROFILE = yaml.safe_load((SAMPLES / "profile.yaml").read_text())  # ClusterServingRuntime sglang-profile
CHILD = "sglang-llama-3-2-3b"  # the sample ServingRuntime of llama-demo, inheriting from sglang-profile


def profile(image: str, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    tmpl = json.loads(json.dumps(PROFILE))
    tmpl["spec"]["engineConfig"]["runner"]["image"] = image
    if node_selector:
        tmpl["spec"]["nodeSelector"] = node_selector
    return tmpl  # type: ignore[no-any-return]


def isvc(name: str, **runtime: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((SAMPLES / "isvc.yaml").read_text())
    doc["metadata"]["name"] = name
    doc["spec"]["runtime"].update(runtime)
    return doc


def rolled(**rollout: Any) -> dict[str, Any]:
    waves = [
        {"name": "lab", "clusterSelector": {"matchLabels": {"tier": "lab"}}, "soakSeconds": 60},
        {"name": "rest", "percent": 100, "soakSeconds": 60, "progressDeadlineSeconds": 300},
    ]
    return {"waves": waves, "autoRollback": True, **rollout}


def revision_of(hub: Hub, cluster: str) -> str | None:
    copy = hub.get(cluster, "clusterservingruntime", "sglang-profile")
    return copy["metadata"]["annotations"][REVISION_ANNOTATION] if copy else None


def wait_rollout(hub: Hub, name: str, revision: int, phase: str, waves: list[str]) -> dict[str, Any]:
    def reached() -> dict[str, Any] | None:
        status = hub.status(name)
        rollout = status.get("rollout") or {}
        got = [w["phase"] for w in status.get("waves") or []]
        if (rollout.get("revision"), rollout.get("phase"), got) == (revision, phase, waves):
            return status
        return None

    try:
        return until(reached, f"{name}: revision {revision} {phase}, waves {waves}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; status: {hub.status(name)}") from None


def events(hub: Hub, name: str) -> list[tuple[str, str]]:
    found = json.loads(hub.k(HUB, "get", "events", "-n", "default", "-o", "json"))["items"]
    mine = [
        e for e in found if e["involvedObject"].get("kind") == "FleetRuntime" and e["involvedObject"]["name"] == name
    ]
    return [(e["reason"], e["message"]) for e in sorted(mine, key=lambda e: e["metadata"]["name"])]


@pytest.fixture(scope="module")
def engines(hub: Hub) -> Hub:
    """The FleetRuntime `profile` (the sample profile sglang-profile, image sglang:v1, applied at once: no waves
    yet) and, in fr-2 and fr-3, the sample model, the sample ServingRuntime inheriting from it (the admission
    webhook wants its parent there first), an InferenceService following it and, in fr-2, one pinned."""
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v1")))
    hub.wait_phases("profile", {"fr-2": "Applied", "fr-3": "Applied"})
    for cluster in ("fr-2", "fr-3"):
        hub.k(cluster, "create", "namespace", "llama-demo")
        for sample in ("clusterbasemodel.yaml", "runtime.yaml"):
            hub.k(cluster, "apply", "-f", str(SAMPLES / sample))
        hub.apply(cluster, isvc("follows"))
    hub.apply("fr-2", isvc("pinned", autoSync=False))
    return hub


def settled(hub: Hub) -> tuple[int, int]:
    """`profile` at sglang:v1 on both clusters at once (no waves), the engines Ready: the start of each test
    (they run in any order). Returns its revision and how many events the FleetRuntime has so far."""
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v1")))
    until(lambda: hub.status("profile").get("phase") == "Succeeded" and "rollout" not in hub.status("profile"), "v1")
    revision = int(hub.status("profile")["revision"])
    hub.wait_phases("profile", {"fr-2": "Applied", "fr-3": "Applied"}, revision=revision)
    # a longer deadline: after a test that left a rollout stuck on a missing image, the simulated Deployments roll
    # back through their pods' start-up delays, slow on a loaded 2-core machine
    until(lambda: ready(hub, "fr-2", "follows") and ready(hub, "fr-3", "follows"), "the engines Ready", timeout=90)
    return revision, len(events(hub, "profile"))


def isvc_status(hub: Hub, cluster: str, name: str) -> dict[str, Any]:
    return (hub.get(cluster, "inferenceservice", name, "-n", "llama-demo") or {}).get("status") or {}


def ready(hub: Hub, cluster: str, name: str) -> bool:
    conditions = isvc_status(hub, cluster, name).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def test_waves_roll_in_order_gated_by_the_engines_and_a_bad_revision_is_rolled_back(engines: Hub) -> None:
    hub = engines
    base, seen = settled(hub)
    r1, r2, r3 = base, base + 1, base + 2
    # Waves turned on for the revision every cluster has: nothing to roll.
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v1"), rollout=rolled()))
    status = wait_rollout(hub, "profile", r1, "Succeeded", ["Succeeded", "Succeeded"])
    assert status["rollout"]["stableRevision"] == r1 and status["phase"] == "Succeeded"
    pinned_revision = isvc_status(hub, "fr-2", "pinned")["runtime"]["revision"]

    # An image bump: wave 1 (lab: fr-2) gets revision 2; once its engine is Ready at it, it soaks. fr-3, in wave
    # 2, keeps revision 1 until the soak is over.
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v2"), rollout=rolled()))
    status = wait_rollout(hub, "profile", r2, "Soaking", ["Soaking", "Pending"])
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(r2), str(r1))
    clusters = hub.clusters("profile")
    assert clusters["fr-2"]["engines"] == {"reached": 2, "updated": 1, "ready": 1, "pinned": 1}
    assert (clusters["fr-3"]["phase"], clusters["fr-3"]["revision"]) == ("Applied", r1)
    assert (clusters["fr-3"]["wave"], clusters["fr-3"]["rolloutPhase"]) == ("rest", "Pending")
    assert status["waves"][0] == {
        "name": "lab",
        "phase": "Soaking",
        "clusters": ["fr-2"],
        "revision": r2,
        "engines": {"reached": 2, "updated": 1, "ready": 1, "pinned": 1},
    }
    assert status["phase"] == "Soaking" and ready(hub, "fr-2", "follows")
    assert (
        isvc_status(hub, "fr-2", "follows")["runtime"]["hash"] != isvc_status(hub, "fr-3", "follows")["runtime"]["hash"]
    )
    hub.advance(59)
    hub.reconciled()  # nothing happens before the soak's end
    assert revision_of(hub, "fr-3") == str(r1)
    hub.advance(1)
    wait_rollout(hub, "profile", r2, "Soaking", ["Succeeded", "Soaking"])
    assert revision_of(hub, "fr-3") == str(r2) and ready(hub, "fr-3", "follows")
    hub.advance(60)
    status = wait_rollout(hub, "profile", r2, "Succeeded", ["Succeeded", "Succeeded"])
    assert status["phase"] == "Succeeded" and status["rollout"]["stableRevision"] == r1
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "RolloutSucceeded")
    # A revision whose engines never turn Ready (no node matches its nodeSelector): wave 1's engine is re-rendered
    # and stays not Ready; at the deadline (default 600s for lab) the wave fails and revision 2 is put back.
    bad = profile("sglang:v3-broken", node_selector={"gpu.omectl.io/type": "B300"})
    hub.apply(HUB, fleet_runtime("profile", bad, rollout=rolled()))
    status = wait_rollout(hub, "profile", r3, "Progressing", ["Progressing", "Pending"])
    until(
        lambda: hub.clusters("profile")["fr-2"].get("engines") == {"reached": 2, "updated": 1, "ready": 0, "pinned": 1},
        "fr-2's engine at revision 3, not Ready",
    )
    assert revision_of(hub, "fr-3") == str(r2)
    message = hub.status("profile")["rollout"]["message"]
    assert message.startswith(f"wave 1 (lab) at revision {r3}: waiting for fr-2: llama-demo/follows: not Ready:")
    hub.advance(599)
    hub.reconciled()
    assert hub.status("profile")["rollout"]["phase"] == "Progressing"
    hub.advance(1)
    status = wait_rollout(hub, "profile", r3, "RolledBack", ["RolledBack", "Pending"])
    assert status["phase"] == "RolledBack" and status["waves"][0]["revision"] == r2
    assert status["rollout"]["message"] == f"revision {r2} re-applied to fr-2 after revision {r3} failed its gate"
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "RolledBack")
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(r2), str(r2))
    assert image_of(hub.get("fr-2", "clusterservingruntime", "sglang-profile")) == "sglang:v2"
    until(lambda: ready(hub, "fr-2", "follows"), "fr-2's engine Ready again at revision 2")
    assert isvc_status(hub, "fr-2", "pinned")["runtime"]["revision"] == pinned_revision  # never moved
    until(lambda: [r for r, _ in events(hub, "profile")][-2:] == ["WaveFailed", "RolledBack"], "the last events")
    reasons = [r for r, _ in events(hub, "profile")[seen:]]
    assert reasons[:7] == [
        "RolloutStarted",
        "Soaking",
        "WaveSucceeded",
        "WaveStarted",
        "Soaking",
        "WaveSucceeded",
        "RolloutSucceeded",
    ]
    assert reasons[7:] == ["RolloutStarted", "WaveFailed", "RolledBack"]
    failed = dict(events(hub, "profile")[seen:])["WaveFailed"]
    assert failed.startswith("wave 1 (lab) did not pass its gate within 600s (progressDeadlineSeconds): fr-2:")


def test_a_member_cache_lagging_behind_a_copy_does_not_make_the_status_report_an_older_revision(
    engines: Hub,
) -> None:
    hub = engines
    start, _ = settled(hub)

    async def lag() -> None:  # fr-3's cache as a reconnecting watch leaves it: the copy before its last write
        cache = hub.app.controller.clusters["fr-3"].watch(OmeWatch).cluster_serving.cache
        stale = copy.deepcopy(cache.get(None, "sglang-profile"))
        assert stale is not None
        stale["metadata"]["annotations"][REVISION_ANNOTATION] = str(start - 1)
        cache.upsert(stale)

    hub.bg.run(lag())
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v13"), rollout=rolled()))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    fr3 = hub.clusters("profile")["fr-3"]
    assert (fr3["rolloutPhase"], fr3["phase"], fr3["revision"]) == ("Pending", "Applied", start)
    assert revision_of(hub, "fr-3") == str(start)


def test_pause_holds_a_wave_and_a_new_edit_mid_rollout_starts_again_from_wave_one(engines: Hub) -> None:
    hub = engines
    start, seen = settled(hub)
    stable = str(start)
    # Paused from the start: wave 1 gets the revision and holds there, past its deadline too.
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v4"), rollout=rolled(paused=True)))
    status = wait_rollout(hub, "profile", start + 1, "Paused", ["Paused", "Pending"])
    assert status["rollout"]["message"] == "paused at wave 1 (lab)"
    hub.advance(3600)
    hub.reconciled()
    assert hub.status("profile")["rollout"]["phase"] == "Paused" and revision_of(hub, "fr-3") == stable
    # Resumed: the gate is read again, the wave soaks and wave 2 starts.
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v4"), rollout=rolled(paused=False)))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    hub.advance(60)
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Succeeded", "Soaking"])
    assert revision_of(hub, "fr-3") == str(start + 1)
    # A new edit while wave 2 soaks: the newest revision starts again from wave 1; fr-3 keeps the one it has.
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v5"), rollout=rolled()))
    status = wait_rollout(hub, "profile", start + 2, "Soaking", ["Soaking", "Pending"])
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(start + 2), str(start + 1))
    assert status["rollout"]["stableRevision"] == start  # the interrupted rollout never became stable
    until(lambda: "RolloutRestarted" in dict(events(hub, "profile")[seen:]), "the restart event")
    restarted = dict(events(hub, "profile")[seen:])["RolloutRestarted"]
    assert restarted == f"revision {start + 2} replaces revision {start + 1} mid-rollout: starting again from wave 1"
    hub.advance(60)
    wait_rollout(hub, "profile", start + 2, "Soaking", ["Succeeded", "Soaking"])
    assert revision_of(hub, "fr-3") == str(start + 2)
    assert image_of(hub.get("fr-3", "clusterservingruntime", "sglang-profile")) == "sglang:v5"
    hub.advance(60)
    wait_rollout(hub, "profile", start + 2, "Succeeded", ["Succeeded", "Succeeded"])


def test_a_restarted_applier_goes_on_from_the_status_applying_nothing_twice(engines: Hub) -> None:
    hub = engines
    start, seen = settled(hub)
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v6"), rollout=rolled()))
    before = wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    copy = hub.get("fr-2", "clusterservingruntime", "sglang-profile")
    assert copy is not None
    hub.advance(30)  # half the soak

    async def restart() -> FakeClock:
        """A new applier with nothing in memory, as after `omectl run` restarts; its clock where the old one was."""
        assert hub.app.fleet_runtimes is not None
        await hub.app.fleet_runtimes.stop()
        await hub.app._start_fleet_runtimes()
        assert hub.app.fleet_runtimes is not None
        clock = FakeClock(hub.clock.now())
        hub.app.fleet_runtimes.clock = clock
        return clock

    hub.clock = hub.bg.run(restart())
    hub.reconciled()
    after = hub.status("profile")
    assert after["rollout"] == before["rollout"]  # the same wave, soaking since the same time
    again = hub.get("fr-2", "clusterservingruntime", "sglang-profile")
    assert again is not None and again["metadata"]["resourceVersion"] == copy["metadata"]["resourceVersion"]
    assert revision_of(hub, "fr-3") == str(start)
    hub.advance(30)  # the rest of the soak, counted from the status
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Succeeded", "Soaking"])
    assert revision_of(hub, "fr-3") == str(start + 1)
    hub.advance(60)
    wait_rollout(hub, "profile", start + 1, "Succeeded", ["Succeeded", "Succeeded"])
    reasons = [r for r, _ in events(hub, "profile")[seen:]]
    assert reasons.count("RolloutStarted") == 1 and reasons.count("WaveStarted") == 1


def test_a_member_unreachable_in_its_wave_holds_the_gate_until_the_deadline_then_fails(engines: Hub) -> None:
    hub = engines
    start, seen = settled(hub)
    (fr3,) = [s for s in hub.bg.fleet.servers if s.name == "fr-3"]
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v7"), rollout=rolled()))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    hub.bg.run(fr3.partition())
    try:
        hub.advance(60)  # wave 2 (rest: fr-3) starts, and fr-3 cannot be written
        status = wait_rollout(hub, "profile", start + 1, "Progressing", ["Succeeded", "Progressing"])
        assert status["rollout"]["message"].startswith(f"wave 2 (rest) at revision {start + 1}: waiting for fr-3: ")
        assert hub.clusters("profile")["fr-3"]["phase"] == "Pending"
        hub.advance(299)
        hub.reconciled()
        assert hub.status("profile")["rollout"]["phase"] == "Progressing"
        hub.advance(1)
        status = wait_rollout(hub, "profile", start + 1, "RolledBack", ["RolledBack", "RolledBack"])
        # fr-3's copy is at the stable revision already: nothing to write there. While its synced cache holds that
        # copy it counts as re-applied; once the partition broke its watch and its caches are listing again (on a
        # loaded machine that can come before the deadline) it is not reached yet, and it gets the stable revision
        # once healed (asserted below)
        assert status["rollout"]["message"] in (
            f"revision {start} re-applied to fr-3, fr-2 after revision {start + 1} failed its gate",
            f"revision {start} re-applied to fr-2 after revision {start + 1} failed its gate; not yet to fr-3",
        )
        assert revision_of(hub, "fr-2") == str(start)
        failed = dict(events(hub, "profile")[seen:])["WaveFailed"]
        assert failed.startswith("wave 2 (rest) did not pass its gate within 300s (progressDeadlineSeconds): fr-3: ")
    finally:
        hub.bg.run(fr3.heal())
    # Reachable again: fr-3 never had the failed revision, and has the stable one.
    until(lambda: hub.clusters("profile")["fr-3"]["phase"] == "Applied", "fr-3 reached again")
    assert revision_of(hub, "fr-3") == str(start)


def test_a_chain_that_breaks_in_a_waves_cluster_fails_that_wave_with_the_chain_error(engines: Hub) -> None:
    hub = engines
    start, seen = settled(hub)
    broken = profile("sglang:v8")
    broken["metadata"]["annotations"]["ome.io/inherit-from"] = "no-such-base"  # in no member
    hub.apply(HUB, fleet_runtime("profile", broken, rollout=rolled()))
    status = wait_rollout(hub, "profile", start + 1, "Progressing", ["Progressing", "Pending"])
    lab = hub.clusters("profile")["fr-2"]
    assert lab["phase"] == "Failed" and 'inherit-from parent "no-such-base" not found' in lab["message"]
    assert status["rollout"]["message"].startswith(f"wave 1 (lab) at revision {start + 1}: waiting for fr-2: Failed: ")
    hub.advance(600)
    status = wait_rollout(hub, "profile", start + 1, "RolledBack", ["RolledBack", "Pending"])
    failed = dict(events(hub, "profile")[seen:])["WaveFailed"]
    assert 'inherit-from parent "no-such-base" not found' in failed
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(start), str(start))  # the apply was refused
    assert ready(hub, "fr-2", "follows") and ready(hub, "fr-3", "follows")


def annotate(hub: Hub, name: str, **annotations: str | None) -> None:
    """A request, as `omectl rollout` makes it: `kubectl annotate --overwrite` of the FleetRuntime (None: remove)."""
    keys = {f"fleet.omectl.io/{key.replace('_', '-')}": value for key, value in annotations.items()}
    pairs = [f"{key}={value}" if value is not None else f"{key}-" for key, value in keys.items()]
    hub.k(HUB, "annotate", "--overwrite", "fleetruntime", name, *pairs)


def test_promote_skips_a_gate_abort_stops_and_a_rollback_reverses_the_changed_waves(engines: Hub) -> None:
    hub = engines
    start, seen = settled(hub)
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v9"), rollout=rolled()))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    # Promote: the lab wave's soak is skipped, the rest wave starts without the clock moving.
    annotate(hub, "profile", promote="p1")
    status = wait_rollout(hub, "profile", start + 1, "Soaking", ["Succeeded", "Soaking"])
    assert status["rollout"]["requests"]["promote"] == "p1"
    assert revision_of(hub, "fr-3") == str(start + 1)
    # Abort: the rollout stops where it is; the changed clusters keep the revision, past any deadline too.
    annotate(hub, "profile", abort="a1")
    status = wait_rollout(hub, "profile", start + 1, "Aborted", ["Succeeded", "Aborted"])
    assert status["phase"] == "Aborted"
    assert status["rollout"]["message"] == (
        f"aborted at wave 2 (rest): the clusters of waves 1-2 keep revision {start + 1}, later waves keep what they had"
    )
    progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "RolloutAborted")
    hub.advance(3600)
    hub.reconciled()
    assert hub.status("profile")["rollout"]["phase"] == "Aborted"
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(start + 1), str(start + 1))
    # The same abort token again is not a new request; a promote of an aborted rollout is refused.
    annotate(hub, "profile", promote="p2")
    until(lambda: "RequestRefused" in dict(events(hub, "profile")[seen:]), "the refused promote")
    assert dict(events(hub, "profile")[seen:])["RequestRefused"] == (
        f"promote refused: the rollout of revision {start + 1} is Aborted"
    )
    # Rollback: the stable revision back to the changed clusters, the last wave's first.
    annotate(hub, "profile", rollback="r1", rollback_to=None)
    status = wait_rollout(hub, "profile", start + 1, "RolledBack", ["RolledBack", "RolledBack"])
    assert status["rollout"]["message"] == f"revision {start} re-applied to fr-3, fr-2 after a rollback was requested"
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(start), str(start))
    assert image_of(hub.get("fr-3", "clusterservingruntime", "sglang-profile")) == "sglang:v1"
    assert status["rollout"]["requests"] == {"abort": "a1", "promote": "p2", "rollback": "r1"}  # each acted on
    until(lambda: ready(hub, "fr-2", "follows") and ready(hub, "fr-3", "follows"), "the engines Ready at the stable")
    reasons = [r for r, _ in events(hub, "profile")[seen:]]
    assert reasons[-3:] == ["RequestRefused", "RollbackRequested", "RolledBack"] and "Promoted" in reasons


def test_a_rollback_to_a_kept_revision_and_to_one_that_is_not(engines: Hub) -> None:
    hub = engines
    start, seen = settled(hub)
    for step, image in enumerate(("sglang:v10", "sglang:v11"), start=1):
        hub.apply(HUB, fleet_runtime("profile", profile(image), rollout=rolled()))
        wait_rollout(hub, "profile", start + step, "Soaking", ["Soaking", "Pending"])
        hub.advance(60)
        wait_rollout(hub, "profile", start + step, "Soaking", ["Succeeded", "Soaking"])
        hub.advance(60)
        wait_rollout(hub, "profile", start + step, "Succeeded", ["Succeeded", "Succeeded"])
    assert image_of(hub.get("fr-3", "clusterservingruntime", "sglang-profile")) == "sglang:v11"
    annotate(hub, "profile", rollback="to-999", rollback_to="999")
    until(lambda: "RequestRefused" in dict(events(hub, "profile")[seen:]), "the refused rollback")
    assert dict(events(hub, "profile")[seen:])["RequestRefused"] == "rollback refused: revision 999 is no longer kept"
    assert hub.status("profile")["rollout"]["phase"] == "Succeeded"
    # Back past the stable revision (start + 1) to the one before it: sglang:v1, revision `start`.
    annotate(hub, "profile", rollback="to-start", rollback_to=str(start))
    status = wait_rollout(hub, "profile", start + 2, "RolledBack", ["RolledBack", "RolledBack"])
    assert status["rollout"]["stableRevision"] == start
    assert status["rollout"]["message"] == f"revision {start} re-applied to fr-3, fr-2 after a rollback was requested"
    assert [image_of(hub.get(c, "clusterservingruntime", "sglang-profile")) for c in ("fr-2", "fr-3")] == [
        "sglang:v1",
        "sglang:v1",
    ]


def test_max_unavailable_clusters_lets_a_wave_pass_without_an_unreachable_member(engines: Hub) -> None:
    hub = engines
    start, _ = settled(hub)
    (fr3,) = [s for s in hub.bg.fleet.servers if s.name == "fr-3"]
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v12"), rollout=rolled(maxUnavailableClusters=1)))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    hub.bg.run(fr3.partition())
    try:
        hub.advance(60)  # the rest wave (fr-3 alone) starts; fr-3 cannot be written, and 1 cluster may be so
        status = wait_rollout(hub, "profile", start + 1, "Soaking", ["Succeeded", "Soaking"])
        assert hub.clusters("profile")["fr-3"]["phase"] == "Pending"
        hub.advance(60)
        status = wait_rollout(hub, "profile", start + 1, "Succeeded", ["Succeeded", "Succeeded"])
        assert status["applied"] == 1
    finally:
        hub.bg.run(fr3.heal())
    # Reachable again: fr-3 gets the revision the rollout left everywhere else.
    until(lambda: revision_of(hub, "fr-3") == str(start + 1), "fr-3 at the new revision once reachable")
    try:
        until(lambda: ready(hub, "fr-3", "follows"), "fr-3's engine Ready at it", timeout=60)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {isvc_status(hub, 'fr-3', 'follows')}") from None


def omectl_argv(hub: Hub, *args: str) -> list[str]:
    """The installed `omectl` binary, talking to the hub through the tests' kubeconfig."""
    binary = str(Path(sys.executable).parent / "omectl")
    return [binary, *args, "--kubeconfig", str(hub.kubectl.kubeconfig), "--context", HUB]


def omectl(hub: Hub, *args: str, code: int = 0) -> str:
    proc = subprocess.run(omectl_argv(hub, *args), capture_output=True, text=True, env=hub.kubectl.env(), timeout=60)
    assert proc.returncode == code, f"omectl {' '.join(args)}: {proc.returncode}\n{proc.stderr}{proc.stdout}"
    return proc.stdout if code == 0 else proc.stderr


def kubectl_ome(hub: Hub, *args: str) -> str:
    """`kubectl ome ...`: the same entry point found by kubectl as its plugin `kubectl-ome` on PATH."""
    env = hub.kubectl.env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = [hub.kubectl.binary, "ome", *args, "--kubeconfig", str(hub.kubectl.kubeconfig), "--context", HUB]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_rollout_cli_shows_and_steers_a_rollout_as_omectl_and_as_kubectl_ome(engines: Hub) -> None:
    hub = engines
    start, _ = settled(hub)
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v13"), rollout=rolled()))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    report = json.loads(omectl(hub, "rollout", "status", "profile", "-o", "json"))
    assert [(w["name"], w["phase"]) for w in report["waves"]] == [("lab", "Soaking"), ("rest", "Pending")]
    assert (report["revision"], report["rollout"]["stableRevision"]) == (start + 1, start)
    text = kubectl_ome(hub, "rollout", "status", "profile").splitlines()
    assert text[0] == f"fleetruntime.fleet.omectl.io/profile: revision {start + 1} Soaking, stable {start}"
    # fr-2 reaches 2 engines, one pinned: 1 of 1 gated engine Ready is a full bar; the rest wave has not started.
    assert text[1].split() == [
        "wave",
        "1",
        "lab",
        "Soaking",
        "[####################]",
        "1/1",
        "revision",
        str(start + 1),
        "fr-2",
    ]
    assert text[2].split() == ["wave", "2", "rest", "Pending", "[....................]", "0/0", "-", "fr-3"]
    assert text[3] == "wave 1 (lab): every engine ready at revision " + str(start + 1) + "; soaking for 60s"
    assert text[5].split()[:5] == ["CLUSTER", "WAVE", "WAVE", "PHASE", "PHASE"]

    assert kubectl_ome(hub, "rollout", "pause", "profile") == "fleetruntime.fleet.omectl.io/profile paused\n"
    wait_rollout(hub, "profile", start + 1, "Paused", ["Paused", "Pending"])
    assert omectl(hub, "rollout", "resume", "profile") == "fleetruntime.fleet.omectl.io/profile resumed\n"
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    assert omectl(hub, "rollout", "promote", "profile") == "fleetruntime.fleet.omectl.io/profile promote requested\n"
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Succeeded", "Soaking"])

    rows = json.loads(omectl(hub, "rollout", "history", "profile", "-o", "json"))["revisions"]
    assert [r["revision"] for r in rows] == sorted((r["revision"] for r in rows), reverse=True)
    assert (rows[0]["revision"], rows[0]["current"], rows[0]["image"]) == (start + 1, True, "sglang:v13")
    assert [r["revision"] for r in rows if r["stable"]] == [start]
    table = omectl(hub, "rollout", "history", "profile").splitlines()
    assert table[0].split() == ["REVISION", "NAME", "HASH", "CURRENT", "STABLE", "IMAGE"]
    error = omectl(hub, "rollout", "rollback", "profile", "--to", "99999", code=1)
    assert (
        error.startswith("error: revision 99999 of fleetruntime profile is not kept (kept: ") and error.count("\n") == 1
    )

    assert omectl(hub, "rollout", "abort", "profile") == "fleetruntime.fleet.omectl.io/profile abort requested\n"
    wait_rollout(hub, "profile", start + 1, "Aborted", ["Succeeded", "Aborted"])
    said = omectl(hub, "rollout", "rollback", "profile")
    assert said == "fleetruntime.fleet.omectl.io/profile rollback to the stable revision requested\n"
    status = wait_rollout(hub, "profile", start + 1, "RolledBack", ["RolledBack", "RolledBack"])
    assert status["rollout"]["message"] == f"revision {start} re-applied to fr-3, fr-2 after a rollback was requested"
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(start), str(start))


def test_the_rollout_cli_refuses_what_it_cannot_do_in_one_line(engines: Hub) -> None:
    hub = engines
    settled(hub)  # profile without waves
    assert omectl(hub, "rollout", "status", "nope", code=1) == 'error: fleetruntime "nope" not found (cluster fr-1)\n'
    assert omectl(hub, "rollout", "promote", "profile", code=1) == (
        "error: fleetruntime profile has no spec.rollout.waves: nothing to promote\n"
    )


def test_rollout_status_watch_redraws_until_interrupted(engines: Hub) -> None:
    hub = engines
    settled(hub)
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v1"), rollout=rolled()))
    wait_rollout(hub, "profile", hub.status("profile")["revision"], "Succeeded", ["Succeeded", "Succeeded"])
    argv = omectl_argv(hub, "rollout", "status", "profile", "--watch", "--interval", "0.2")
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=hub.kubectl.env())
    try:
        assert proc.stdout is not None
        headlines = 0
        while headlines < 2:  # two frames, one after the other (a pipe gets every frame)
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "no output"
            headlines += line.startswith("fleetruntime.fleet.omectl.io/profile: revision ")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_rollout_plan_shows_what_each_wave_would_re_render_and_writes_nothing(engines: Hub, tmp_path: Path) -> None:
    hub = engines
    start, _ = settled(hub)
    edited = tmp_path / "profile-v14.yaml"
    edited.write_text(yaml.safe_dump(fleet_runtime("profile", profile("sglang:v14"), rollout=rolled())))
    proc = subprocess.run(
        omectl_argv(hub, "rollout", "plan", "profile", "-f", str(edited), "-o", "json"),
        capture_output=True,
        text=True,
        env=hub.kubectl.env(),
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr  # as kubectl diff: something would change
    plan = json.loads(proc.stdout)
    assert (plan["revision"], plan["errors"], plan["written"]) == (start + 1, [], False)
    assert [(w["name"], [c["cluster"] for c in w["clusters"]]) for w in plan["waves"]] == [
        ("lab", ["fr-2"]),
        ("rest", ["fr-3"]),
    ]
    lab = {(e["name"], e["action"]) for e in plan["waves"][0]["clusters"][0]["inferenceServices"]}
    assert lab == {("follows", "re-render"), ("pinned", "would drift")}
    (rest,) = plan["waves"][1]["clusters"][0]["inferenceServices"]
    assert (rest["name"], rest["action"]) == ("follows", "re-render")
    assert any("sglang:v14" in diff for diff in rest["diff"].values())
    text = omectl(hub, "rollout", "plan", "profile", "-f", str(edited), code=1)  # stderr: nothing on it
    assert text == ""
    table = subprocess.run(
        omectl_argv(hub, "rollout", "plan", "profile", "-f", str(edited)),
        capture_output=True,
        text=True,
        env=hub.kubectl.env(),
        timeout=60,
    ).stdout.splitlines()
    assert table[0] == f"fleetruntime.fleet.omectl.io/profile: revision {start + 1} to 2 placed clusters"
    assert table.index("wave 1 (lab):") < table.index("cluster fr-2:") < table.index("wave 2 (rest):")
    assert (revision_of(hub, "fr-2"), revision_of(hub, "fr-3")) == (str(start), str(start))  # nothing written
    assert hub.status("profile")["revision"] == start
    # A file that is not that FleetRuntime is an error (exit 2), in one line.
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(fleet_runtime("other", profile("x"))))
    error = omectl(hub, "rollout", "plan", "profile", "-f", str(other), code=2)
    assert error == f"error: {other}: the FleetRuntime is 'other', not 'profile'\n"


def test_a_wave_transition_is_a_span_linked_to_the_member_reconciles_it_caused(engines: Hub) -> None:
    hub = engines
    start, _ = settled(hub)
    hub.apply(HUB, fleet_runtime("profile", profile("sglang:v15"), rollout=rolled()))
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Soaking", "Pending"])
    hub.advance(60)  # the lab wave passes: WaveStarted writes fr-3's copy
    wait_rollout(hub, "profile", start + 1, "Soaking", ["Succeeded", "Soaking"])
    trace_file = hub.app.settings.trace_file

    def caused() -> tuple[Any, list[Any]] | None:
        hub.app.tracing.force_flush()
        store = TraceStore.load(trace_file)
        started = [
            s
            for s in store.spans()
            if s.name == "rollout WaveStarted"
            and s.attributes.get(ATTR_FLEET_RUNTIME) == "profile"
            and s.attributes.get(ATTR_ROLLOUT_REVISION) == start + 1
        ]
        if len(started) != 1:
            return None
        (wave,) = started
        links = {(link.trace_id, link.span_id) for link in wave.links}
        reconciles = [
            r
            for r in store.reconciles(cluster="fr-3", name="follows")
            if links & {(link.trace_id, link.span_id) for link in r.links}
        ]
        return (wave, reconciles) if reconciles else None

    wave, reconciles = until(caused, "a WaveStarted span linked to fr-3's reconcile of follows")
    assert wave.attributes[ATTR_ROLLOUT_WAVE] == "rest" and wave.attributes[ATTR_ROLLOUT_CLUSTERS] == ["fr-3"]
    assert wave.parent_span_id is None
    # `omectl trace show` of that reconcile says which transition caused it.
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "omectl"),
            "trace",
            "show",
            reconciles[0].trace_id,
            "--file",
            str(trace_file),
        ],
        capture_output=True,
        text=True,
        env={**hub.kubectl.env(), "COLUMNS": "400"},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"caused by rollout WaveStarted fleetruntime/profile wave rest revision {start + 1}" in proc.stdout
