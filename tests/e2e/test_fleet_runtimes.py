"""FleetRuntimes end to end (issue 16, first slices), through the real kubectl: a hub (fr-1) holding the
registrations and the FleetRuntimes, three members (fr-2, fr-3 labelled gpu=h200; fr-4 gpu=mi300x), and `omectl
run` with that hub (setting hub_kubeconfig) applying them.

Covered: a template applied to exactly the placed clusters (server-side apply, field manager omectl-fleet, owner
label, revision annotation, a ControllerRevision in the hub); a template edit rolled to every placed cluster as a
new revision; a user's runtime of the same name is a per-cluster Conflict and is never touched; drift reported
(Report) then put back (Correct); a cluster no longer placed loses its copy; a ServingRuntime template copied into
its namespaces; deleting the FleetRuntime removes its copies and its revisions, and nothing else.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from omectl.controller.app import ControllerApp
from omectl.core.fleet_runtimes import FLEET_RUNTIME_LABEL, REVISION_ANNOTATION
from omectl.fleet.providers import CLUSTER_LABEL, CLUSTER_NAME_LABEL, LABEL_ANNOTATION_PREFIX
from omectl.kube.field_managers import FLEET_FIELD_MANAGER
from omectl.settings import Settings
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.support import Kubectl, kubectl_path

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("fleet-runtimes")]

ROOT = Path(__file__).resolve().parents[2]
HUB = "fr-1"
MEMBERS = {"fr-2": {"gpu": "h200", "tier": "lab"}, "fr-3": {"gpu": "h200"}, "fr-4": {"gpu": "mi300x"}}
NAMESPACE = "omectl-system"
T = TypeVar("T")


def until(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    """Re-run `probe` until it returns something truthy (the controller works asynchronously)."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"never: {what} (last: {last!r})")


@dataclass
class Hub:
    kubectl: Kubectl
    app: ControllerApp

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


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    base = tmp_path_factory.mktemp("fleet-runtimes")
    binary = kubectl_path()
    bg = BackgroundFleet(EmbeddedFleet(1 + len(MEMBERS), name_prefix="fr-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))  # the hub's CRDs too (deploy/crds/hub)
        kubeconfig = bg.fleet.write_kubeconfig(base / "fleet.kubeconfig")
        kubectl = Kubectl(binary, kubeconfig, base / "kube-cache")
        kubectl.run(f"--context={HUB}", "create", "namespace", NAMESPACE)
        servers = {s.name: s for s in bg.fleet.servers}
        for name, labels in MEMBERS.items():
            member_kubeconfig = servers[name].write_kubeconfig(base / f"{name}.kubeconfig").read_text()
            doc = registration(name, member_kubeconfig, labels)
            kubectl.run(f"--context={HUB}", "apply", "--validate=false", "-f", "-", input=json.dumps(doc))
        hub_kubeconfig = servers[HUB].write_kubeconfig(base / "hub.kubeconfig")
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
            yield Hub(kubectl, app)
        finally:
            bg.run(app.stop())
    finally:
        bg.stop()


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
