"""Conformance: version, discovery and OpenAPI over HTTP, server-side apply, TLS and the dynamic client
(items 1-3, 12, 27, 28)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.dynamic import DynamicClient

from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.support import RawClient, widget, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
W = "/apis/example.com/v1/namespaces/default/widgets"
APPLY = "application/apply-patch+yaml"
KUBECTL_DISCOVERY_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


async def test_version_reports_1_32(raw: RawClient) -> None:
    reply = await raw.get("/version?timeout=5s")
    assert reply.body["major"] == "1"
    assert reply.body["minor"] == "32"
    assert reply.body["gitVersion"].startswith("v1.32.")
    assert set(reply.body) >= {"gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"}


async def test_legacy_discovery_shapes(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    api = (await raw.get("/api")).body
    assert api["kind"] == "APIVersions"
    assert api["versions"] == ["v1"]
    groups = (await raw.get("/apis")).body
    assert groups["kind"] == "APIGroupList"
    example = next(g for g in groups["groups"] if g["name"] == "example.com")
    assert example["preferredVersion"] in example["versions"]
    resources = (await raw.get("/apis/example.com/v1")).body
    assert resources["kind"] == "APIResourceList"
    by_name = {r["name"]: r for r in resources["resources"]}
    assert by_name["widgets"]["kind"] == "Widget"
    assert by_name["widgets"]["namespaced"] is True
    assert by_name["widgets"]["shortNames"] == ["wd"]
    assert "widgets/status" in by_name
    core = {r["name"] for r in (await raw.get("/api/v1")).body["resources"]}
    assert {"namespaces", "configmaps", "secrets", "events", "services", "nodes"} <= core


async def test_aggregated_discovery_when_asked(raw: RawClient) -> None:
    reply = await raw.get("/apis", headers={"Accept": KUBECTL_DISCOVERY_ACCEPT})
    assert reply.headers["Content-Type"] == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert reply.body["kind"] == "APIGroupDiscoveryList"
    plain = await raw.get("/apis", headers={"Accept": "application/json"})
    assert plain.body["kind"] == "APIGroupList"


async def test_openapi_index_hash_changes_with_a_crd(raw: RawClient) -> None:
    before = (await raw.get("/openapi/v3")).body["paths"]
    assert "api/v1" in before
    await raw.post(CRDS, widget_crd())
    after = (await raw.get("/openapi/v3")).body["paths"]
    url = after["apis/example.com/v1"]["serverRelativeURL"]
    doc = (await raw.get(url)).body
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    params = {p["name"] for p in item["patch"]["parameters"]}
    assert "fieldValidation" in params
    assert item["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "example.com",
        "version": "v1",
        "kind": "Widget",
    }
    crd = (await raw.get(CRDS + "/widgets.example.com")).body
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["new"] = {
        "type": "string"
    }
    assert (await raw.put(CRDS + "/widgets.example.com", crd)).status == 200
    changed = (await raw.get("/openapi/v3")).body["paths"]
    assert changed["apis/example.com/v1"]["serverRelativeURL"] != url


async def test_server_side_apply_create_update_remove(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    doc = widget("a", size=1, color="red")
    created = await raw.patch(W + "/a?fieldManager=alice", doc, APPLY)
    assert created.status == 201
    entry = created.body["metadata"]["managedFields"][0]
    assert (entry["manager"], entry["operation"], entry["fieldsType"]) == ("alice", "Apply", "FieldsV1")
    assert entry["fieldsV1"]["f:spec"] == {"f:size": {}, "f:color": {}}
    doc["spec"] = {"size": 2}
    updated = await raw.patch(W + "/a?fieldManager=alice", doc, APPLY)
    assert updated.status == 200
    assert updated.body["spec"] == {"size": 2, "mode": "auto"}  # color dropped by its only manager


async def test_server_side_apply_conflict_and_force(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    await raw.patch(W + "/a?fieldManager=alice", widget("a", size=1), APPLY)
    clash = await raw.patch(W + "/a?fieldManager=bob", widget("a", size=3), APPLY)
    assert clash.status == 409
    assert clash.body["reason"] == "Conflict"
    assert clash.body["message"] == 'Apply failed with 1 conflict: conflict with "alice": .spec.size'
    assert clash.body["details"]["causes"][0]["reason"] == "FieldManagerConflict"
    assert clash.body["details"]["causes"][0]["field"] == ".spec.size"
    forced = await raw.patch(W + "/a?fieldManager=bob&force=true", widget("a", size=3), APPLY)
    assert forced.status == 200
    assert forced.body["spec"]["size"] == 3


async def test_apply_needs_a_field_manager_and_force_only_applies_to_apply(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    reply = await raw.patch(W + "/a", widget("a"), APPLY, headers={"User-Agent": ""})
    assert reply.status == 422
    assert reply.body["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )
    await raw.post(W, widget("b"))
    forced = await raw.patch(W + "/b?force=true", {"spec": {"size": 2}}, "application/merge-patch+json")
    assert forced.status == 422
    assert "force: Forbidden: may not be specified for non-apply patch" in forced.body["message"]


async def test_kubernetes_asyncio_over_tls_with_the_ca(tmp_path: Path) -> None:
    async with EmbeddedAPIServer("secure", tls=True) as server:
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        api_client = await k8s_config.new_client_from_config(config_file=str(path))
        async with api_client:
            core = k8s_client.CoreV1Api(api_client)
            namespaces = await core.list_namespace()
            assert [n.metadata.name for n in namespaces.items][:1] == ["default"]
        async with aiohttp.ClientSession() as session:
            try:
                await session.get(server.url + "/version")
            except aiohttp.ClientConnectorCertificateError:
                pass  # a client without the CA must not be able to verify the server
            else:
                raise AssertionError("TLS verification unexpectedly succeeded without the CA")


async def test_dynamic_client_discovery_crud_and_apply(
    kube: k8s_client.ApiClient, raw: RawClient, tmp_path: Path
) -> None:
    await raw.post(CRDS, widget_crd())
    dyn = await DynamicClient(kube, cache_file=str(tmp_path / "discovery.json"))
    widgets = await dyn.resources.get(api_version="example.com/v1", kind="Widget")
    created = await widgets.create(body=widget("dyn", size=2), namespace="default")
    assert created.metadata.name == "dyn"
    got = await widgets.get(name="dyn", namespace="default")
    assert got.spec.size == 2
    applied = await widgets.server_side_apply(
        body=widget("dyn2", size=4), name="dyn2", namespace="default", field_manager="dyn-test"
    )
    assert applied.spec.size == 4
    await widgets.delete(name="dyn", namespace="default")
    names = [i.metadata.name for i in (await widgets.get(namespace="default")).items]
    assert names == ["dyn2"]
