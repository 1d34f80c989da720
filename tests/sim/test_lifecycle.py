"""Conformance: deletion, finalizers, garbage collection, namespaces, dry run, CRDs, events (items 4, 18, 20-22, 25)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.support import RawClient, widget, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
W = "/apis/example.com/v1/namespaces/default/widgets"
CM = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"


def configmap(name: str, owners: list[dict[str, Any]] | None = None, namespace: str = "default") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}


def owner_ref(obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "uid": obj["metadata"]["uid"],
        **extra,
    }


@pytest.fixture
async def crd(raw: RawClient) -> dict:
    return (await raw.post(CRDS, widget_crd())).body


async def test_crd_becomes_established_with_accepted_names(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    got = (await raw.get(CRDS + "/widgets.example.com")).body
    conditions = {c["type"]: c["status"] for c in got["status"]["conditions"]}
    assert conditions == {"NamesAccepted": "True", "Established": "True"}
    assert got["status"]["acceptedNames"]["kind"] == "Widget"
    assert got["status"]["storedVersions"] == ["v1"]
    assert got["spec"]["names"]["listKind"] == "WidgetList"


async def test_crd_name_must_be_plural_dot_group(raw: RawClient) -> None:
    bad = widget_crd()
    bad["metadata"]["name"] = "wrong.example.com"
    reply = await raw.post(CRDS, bad)
    assert reply.status == 422
    assert 'must be spec.names.plural+"."+spec.group' in reply.body["message"]


async def test_deleting_a_crd_deletes_its_objects(raw: RawClient, crd: dict, server: EmbeddedAPIServer) -> None:
    await raw.post(W, widget("w1"))
    await raw.delete(CRDS + "/widgets.example.com")
    await server.controllers.wait_idle()
    assert (await raw.get(CRDS + "/widgets.example.com")).status == 404
    assert (await raw.get(W)).status == 404
    assert server.api.store.get(("example.com", "widgets"), "default", "w1") is None


async def test_delete_without_finalizers_returns_success_status(raw: RawClient, crd: dict) -> None:
    created = (await raw.post(W, widget("w1"))).body
    reply = await raw.delete(W + "/w1", {"propagationPolicy": "Background"})
    assert reply.status == 200
    assert reply.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": "w1",
            "group": "example.com",
            "kind": "widgets",
            "uid": created["metadata"]["uid"],
        },
    }
    assert (await raw.get(W + "/w1")).status == 404


async def test_finalizers_hold_the_object_until_removed(raw: RawClient, crd: dict) -> None:
    body = widget("w1")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await raw.post(W, body)
    marked = await raw.delete(W + "/w1")
    assert marked.status == 200
    assert marked.body["kind"] == "Widget"
    assert marked.body["metadata"]["deletionTimestamp"]
    assert marked.body["metadata"]["deletionGracePeriodSeconds"] == 0
    more = await raw.patch(W + "/w1", {"metadata": {"finalizers": ["example.com/hold", "x.io/new"]}}, MERGE)
    assert more.status == 422
    assert (
        'no new finalizers can be added if the object is being deleted, found new finalizers []string{"x.io/new"}'
        in (more.body["message"])
    )
    released = await raw.patch(W + "/w1", {"metadata": {"finalizers": None}}, MERGE)
    assert released.status == 200
    assert (await raw.get(W + "/w1")).status == 404


async def test_background_cascade_deletes_dependents(raw: RawClient, server: EmbeddedAPIServer) -> None:
    owner = (await raw.post(CM, configmap("owner"))).body
    await raw.post(CM, configmap("child", [owner_ref(owner)]))
    await raw.delete(CM + "/owner")
    await server.controllers.wait_idle()
    assert (await raw.get(CM + "/child")).status == 404


async def test_dependent_of_a_never_existing_owner_is_collected(raw: RawClient, server: EmbeddedAPIServer) -> None:
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "ghost",
        "uid": "00000000-0000-0000-0000-000000000000",
    }
    await raw.post(CM, configmap("orphaned", [ghost]))
    await server.controllers.wait_idle()
    assert (await raw.get(CM + "/orphaned")).status == 404


async def test_foreground_deletion_waits_for_blocking_dependents(raw: RawClient, server: EmbeddedAPIServer) -> None:
    owner = (await raw.post(CM, configmap("owner"))).body
    child = configmap("child", [owner_ref(owner, blockOwnerDeletion=True)])
    child["metadata"]["finalizers"] = ["example.com/hold"]
    await raw.post(CM, child)
    marked = await raw.delete(CM + "/owner", {"propagationPolicy": "Foreground"})
    assert "foregroundDeletion" in marked.body["metadata"]["finalizers"]
    await server.controllers.wait_idle()
    still = await raw.get(CM + "/owner")
    assert still.status == 200  # the child's finalizer blocks it
    assert (await raw.get(CM + "/child")).body["metadata"]["deletionTimestamp"]
    await raw.patch(CM + "/child", {"metadata": {"finalizers": None}}, MERGE)
    await server.controllers.wait_idle()
    assert (await raw.get(CM + "/child")).status == 404
    assert (await raw.get(CM + "/owner")).status == 404


async def test_orphan_deletion_strips_owner_references(raw: RawClient, server: EmbeddedAPIServer) -> None:
    owner = (await raw.post(CM, configmap("owner"))).body
    await raw.post(CM, configmap("child", [owner_ref(owner)]))
    await raw.delete(CM + "/owner", {"propagationPolicy": "Orphan"})
    await server.controllers.wait_idle()
    assert (await raw.get(CM + "/owner")).status == 404
    child = await raw.get(CM + "/child")
    assert child.status == 200
    assert "ownerReferences" not in child.body["metadata"]


async def test_two_controller_references_are_invalid(raw: RawClient) -> None:
    a = (await raw.post(CM, configmap("a"))).body
    b = (await raw.post(CM, configmap("b"))).body
    reply = await raw.post(CM, configmap("c", [owner_ref(a, controller=True), owner_ref(b, controller=True)]))
    assert reply.status == 422
    assert "Only one reference can have Controller set to true" in reply.body["message"]


async def test_default_namespaces_exist_with_their_labels(raw: RawClient) -> None:
    listed = (await raw.get("/api/v1/namespaces")).body["items"]
    assert [n["metadata"]["name"] for n in listed] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]
    default = listed[0]
    assert default["metadata"]["labels"] == {"kubernetes.io/metadata.name": "default"}
    assert default["spec"] == {"finalizers": ["kubernetes"]}
    assert default["status"] == {"phase": "Active"}


async def test_protected_namespaces_cannot_be_deleted(raw: RawClient) -> None:
    reply = await raw.delete("/api/v1/namespaces/default")
    assert reply.status == 403
    assert reply.body["message"] == 'namespaces "default" is forbidden: this namespace may not be deleted'


async def test_namespace_termination_deletes_content_then_itself(raw: RawClient, server: EmbeddedAPIServer) -> None:
    await raw.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    await raw.post("/api/v1/namespaces/team/configmaps", configmap("a", namespace="team"))
    held = configmap("held", namespace="team")
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await raw.post("/api/v1/namespaces/team/configmaps", held)
    marked = await raw.delete("/api/v1/namespaces/team")
    assert marked.body["status"]["phase"] == "Terminating"
    refused = await raw.post("/api/v1/namespaces/team/configmaps", configmap("late", namespace="team"))
    assert refused.status == 403
    assert refused.body["message"].endswith(
        "unable to create new content in namespace team because it is being terminated"
    )
    assert refused.body["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    await server.controllers.wait_idle()
    assert (await raw.get("/api/v1/namespaces/team/configmaps/a")).status == 404
    assert (await raw.get("/api/v1/namespaces/team")).status == 200  # the finalizer on "held" blocks it
    await raw.patch("/api/v1/namespaces/team/configmaps/held", {"metadata": {"finalizers": None}}, MERGE)
    await server.controllers.wait_idle()
    assert (await raw.get("/api/v1/namespaces/team")).status == 404


async def test_dry_run_persists_nothing(raw: RawClient, crd: dict, server: EmbeddedAPIServer) -> None:
    rv = server.api.store.rv
    created = await raw.post(W + "?dryRun=All", widget("w1"))
    assert created.status == 201
    assert created.body["metadata"]["uid"]
    assert "resourceVersion" not in created.body["metadata"]
    assert server.api.store.rv == rv
    assert (await raw.get(W + "/w1")).status == 404
    await raw.post(W, widget("w1"))
    rv = server.api.store.rv
    patched = await raw.patch(W + "/w1?dryRun=All", {"spec": {"size": 7}}, MERGE)
    assert patched.body["spec"]["size"] == 7
    deleted = await raw.delete(W + "/w1?dryRun=All")
    assert deleted.status == 200
    assert server.api.store.rv == rv
    assert (await raw.get(W + "/w1")).body["spec"]["size"] == 1
    bad = await raw.post(W + "?dryRun=Some", widget("w2"))
    assert bad.status == 422


async def test_core_and_events_v1_share_one_store(raw: RawClient) -> None:
    core = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
        "reason": "Tested",
        "message": "hello",
        "type": "Normal",
        "count": 1,
    }
    assert (await raw.post("/api/v1/namespaces/default/events", core)).status == 201
    seen = await raw.get("/apis/events.k8s.io/v1/namespaces/default/events/e1")
    assert seen.status == 200
    assert seen.body["apiVersion"] == "events.k8s.io/v1"
    assert seen.body["regarding"]["name"] == "c"
    assert seen.body["note"] == "hello"
    selected = await raw.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dc,reason%3DTested")
    assert [e["metadata"]["name"] for e in selected.body["items"]] == ["e1"]


async def test_events_v1_create_is_validated_strictly(raw: RawClient) -> None:
    reply = await raw.post(
        "/apis/events.k8s.io/v1/namespaces/default/events",
        {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2"}, "type": "Normal"},
    )
    assert reply.status == 422
    fields = {c["field"] for c in reply.body["details"]["causes"]}
    assert {"eventTime", "reportingController", "reportingInstance", "action", "reason"} <= fields
