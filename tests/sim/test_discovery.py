"""Discovery, /version and OpenAPI v3 documents: shapes, ordering, hashes, and real clients consuming them."""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from aiohttp import web
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.dynamic import DynamicClient

from omectl.sim.apiserver import discovery as d
from omectl.sim.apiserver import openapi as o
from omectl.sim.apiserver import published_openapi
from omectl.sim.apiserver.openapi_http import OPENAPI_V2_PROTOBUF
from omectl.sim.apiserver.registry import ResourceType, builtin_types, types_from_crd
from tests.support import Kubectl, RawClient, kubectl_path, widget, widget_crd

KUBECTL_ACCEPT = (
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)


def two_version_crd() -> dict[str, Any]:
    """The sample Widget CRD served as v1 (storage) and v1beta1 (listed first, not storage)."""
    crd = widget_crd()
    v1 = crd["spec"]["versions"][0]
    beta = copy.deepcopy(v1)
    beta.update(name="v1beta1", storage=False)
    beta.pop("subresources")
    crd["spec"]["versions"] = [beta, v1]
    return crd


def alpha_crd() -> dict[str, Any]:
    crd = widget_crd(plural="gadgets", group="alpha.example.org", scope="Cluster")
    v1 = crd["spec"]["versions"][0]
    crd["spec"]["versions"] = [
        dict(v1, name="v1alpha1", storage=False),
        dict(v1, name="v1alpha2", storage=True),
    ]
    return crd


@pytest.fixture
def types() -> list[ResourceType]:
    return builtin_types() + types_from_crd(two_version_crd()) + types_from_crd(alpha_crd())


def find(entries: list[dict[str, Any]], key: str, value: str) -> dict[str, Any]:
    return next(e for e in entries if e[key] == value)


# --- /version ---


def test_version_info_has_the_kube_fields_and_a_1_32_version() -> None:
    info = d.version_info()
    assert set(info) == {
        "major",
        "minor",
        "gitVersion",
        "gitCommit",
        "gitTreeState",
        "buildDate",
        "goVersion",
        "compiler",
        "platform",
    }
    assert info["gitVersion"] == d.KUBERNETES_VERSION
    assert (info["major"], info["minor"]) == ("1", "32")
    assert info["gitVersion"].startswith("v1.32.")
    assert (info["gitTreeState"], info["compiler"], info["platform"]) == ("clean", "gc", "linux/amd64")
    assert len(info["gitCommit"]) == 40


# --- ordering ---


def test_kube_version_ordering_matches_apimachinery_priority() -> None:
    shuffled = [
        "v11alpha2",
        "foo10",
        "v1",
        "v10beta3",
        "v2",
        "v12alpha1",
        "v3beta1",
        "foo1",
        "v11beta2",
        "v10",
    ]
    expected = [
        "v10",
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v12alpha1",
        "v11alpha2",
        "foo1",
        "foo10",
    ]
    assert d.sort_versions(shuffled) == expected


def test_group_versions_put_preferred_first_and_leave_core_out(types: list[ResourceType]) -> None:
    groups = d.group_versions(types)
    assert "" not in groups
    assert groups["example.com"] == ["v1", "v1beta1"]
    assert groups["alpha.example.org"] == ["v1alpha2", "v1alpha1"]
    # Built-in groups in the upstream /apis order, custom groups after them sorted by name.
    assert list(groups) == [
        "apps",
        "events.k8s.io",
        "autoscaling",
        "batch",
        "policy",
        "rbac.authorization.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "alpha.example.org",
        "example.com",
    ]


# --- legacy discovery ---


def test_legacy_api_versions_shape() -> None:
    body = d.legacy_api_versions("127.0.0.1:6443")
    assert body == {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    }


def test_api_group_list_shape_and_preferred_version_is_one_of_the_versions(types: list[ResourceType]) -> None:
    body = d.legacy_api_group_list(types)
    assert set(body) == {"kind", "apiVersion", "groups"}
    assert (body["kind"], body["apiVersion"]) == ("APIGroupList", "v1")
    for group in body["groups"]:
        assert set(group) == {"name", "versions", "preferredVersion"}
        assert all(set(v) == {"groupVersion", "version"} for v in group["versions"])
        assert group["preferredVersion"] in group["versions"]
    widgets = find(body["groups"], "name", "example.com")
    assert widgets["preferredVersion"] == {"groupVersion": "example.com/v1", "version": "v1"}
    assert [v["version"] for v in widgets["versions"]] == ["v1", "v1beta1"]
    # The dynamic client's own test: exactly one version of a group compares equal to preferredVersion.
    assert [v == widgets["preferredVersion"] for v in widgets["versions"]] == [True, False]
    gadgets = find(body["groups"], "name", "alpha.example.org")
    assert gadgets["preferredVersion"]["version"] == "v1alpha2"


def test_api_group_for_served_and_unserved_groups(types: list[ResourceType]) -> None:
    body = d.api_group(types, "example.com")
    assert body is not None
    assert set(body) == {"kind", "apiVersion", "name", "versions", "preferredVersion"}
    assert (body["kind"], body["apiVersion"], body["name"]) == ("APIGroup", "v1", "example.com")
    assert body["preferredVersion"] == body["versions"][0] == {"groupVersion": "example.com/v1", "version": "v1"}
    assert d.api_group(types, "nothing.example.com") is None
    assert d.api_group(types, "") is None


def test_core_resource_list_has_subresources_and_real_namespace_verbs(types: list[ResourceType]) -> None:
    body = d.api_resource_list(types, "", "v1")
    assert body is not None
    assert set(body) == {"kind", "apiVersion", "groupVersion", "resources"}
    assert (body["kind"], body["apiVersion"], body["groupVersion"]) == ("APIResourceList", "v1", "v1")
    names = [r["name"] for r in body["resources"]]
    assert names == sorted(names)
    resources = {r["name"]: r for r in body["resources"]}
    namespaces = resources["namespaces"]
    assert set(namespaces) == {
        "name",
        "singularName",
        "namespaced",
        "kind",
        "verbs",
        "shortNames",
        "storageVersionHash",
    }
    assert namespaces["verbs"] == ["create", "delete", "get", "list", "patch", "update", "watch"]
    assert namespaces["storageVersionHash"] == "Q3oi5N2YM8M="  # what a real 1.32 cluster shows
    assert resources["namespaces/status"] == {
        "name": "namespaces/status",
        "singularName": "",
        "namespaced": False,
        "kind": "Namespace",
        "verbs": ["get", "patch", "update"],
    }
    assert resources["namespaces/finalize"]["verbs"] == ["update"]
    assert resources["configmaps"]["verbs"] == [
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    ]
    assert "configmaps/status" not in resources
    assert resources["pods"]["categories"] == ["all"]
    assert "categories" not in resources["configmaps"]
    assert "shortNames" not in resources["secrets"]


def test_custom_resource_list_per_version(types: list[ResourceType]) -> None:
    v1 = d.api_resource_list(types, "example.com", "v1")
    beta = d.api_resource_list(types, "example.com", "v1beta1")
    assert v1 is not None and beta is not None
    assert v1["groupVersion"] == "example.com/v1"
    widgets = find(v1["resources"], "name", "widgets")
    assert widgets == {
        "name": "widgets",
        "singularName": "widget",
        "namespaced": True,
        "kind": "Widget",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["wd"],
        "categories": ["all"],
        "storageVersionHash": d.storage_version_hash("example.com", "v1", "Widget"),
    }
    assert find(v1["resources"], "name", "widgets/status")["kind"] == "Widget"
    # v1beta1 has no status subresource, and its storage hash names the storage version v1.
    assert [r["name"] for r in beta["resources"]] == ["widgets"]
    assert beta["resources"][0]["storageVersionHash"] == widgets["storageVersionHash"]
    assert d.api_resource_list(types, "example.com", "v2") is None
    assert d.api_resource_list(types, "nothing.example.com", "v1") is None


def test_events_k8s_io_shares_the_core_event_storage_hash(types: list[ResourceType]) -> None:
    core = d.api_resource_list(types, "", "v1")
    events = d.api_resource_list(types, "events.k8s.io", "v1")
    assert core is not None and events is not None
    assert find(events["resources"], "name", "events")["storageVersionHash"] == "r2yiGXH7wu8="
    assert find(core["resources"], "name", "events")["storageVersionHash"] == "r2yiGXH7wu8="


# --- aggregated discovery ---


def test_aggregated_discovery_shapes(types: list[ResourceType]) -> None:
    body = d.aggregated_discovery(types, core=False)
    assert set(body) == {"kind", "apiVersion", "metadata", "items"}
    assert (body["kind"], body["apiVersion"], body["metadata"]) == (
        "APIGroupDiscoveryList",
        "apidiscovery.k8s.io/v2",
        {},
    )
    assert [item["metadata"]["name"] for item in body["items"]] == list(d.group_versions(types))
    item = next(i for i in body["items"] if i["metadata"]["name"] == "example.com")
    assert set(item) == {"metadata", "versions"}
    assert [v["version"] for v in item["versions"]] == ["v1", "v1beta1"]  # first = preferred
    version = item["versions"][0]
    assert set(version) == {"version", "resources", "freshness"}
    assert version["freshness"] == "Current"
    resource = version["resources"][0]
    assert resource == {
        "resource": "widgets",
        "responseKind": {"group": "example.com", "version": "v1", "kind": "Widget"},
        "scope": "Namespaced",
        "singularResource": "widget",
        "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
        "shortNames": ["wd"],
        "categories": ["all"],
        "subresources": [
            {
                "subresource": "status",
                "responseKind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                "verbs": ["get", "patch", "update"],
            }
        ],
    }
    assert "subresources" not in item["versions"][1]["resources"][0]
    gadgets = next(i for i in body["items"] if i["metadata"]["name"] == "alpha.example.org")
    assert gadgets["versions"][0]["resources"][0]["scope"] == "Cluster"


def test_aggregated_core_discovery_holds_only_the_core_group(types: list[ResourceType]) -> None:
    body = d.aggregated_discovery(types, core=True, version="v2beta1")
    assert body["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    assert [item["metadata"]["name"] for item in body["items"]] == [""]
    resources = {r["resource"]: r for r in body["items"][0]["versions"][0]["resources"]}
    assert set(resources) == {rt.plural for rt in types if rt.group == ""}
    assert [s["subresource"] for s in resources["namespaces"]["subresources"]] == ["finalize", "status"]
    assert resources["namespaces"]["scope"] == "Cluster"


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (KUBECTL_ACCEPT, "v2"),
        ("application/json", None),
        ("", None),
        ("*/*", None),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
            "v2beta1",
        ),
        ("application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", None),
        # q-values outrank the listed order.
        ("application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "v2"),
        # Only JSON is served: a protobuf-only aggregated ask falls back to legacy JSON.
        ("application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", None),
        ("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", None),
    ],
)
def test_wants_aggregated(accept: str, expected: str | None) -> None:
    assert d.wants_aggregated(accept) == expected


def test_aggregated_content_types() -> None:
    assert d.AGGREGATED_CONTENT_TYPE == "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    assert d.aggregated_content_type("v2") == d.AGGREGATED_CONTENT_TYPE
    assert d.aggregated_content_type("v2beta1") == (
        "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
    )


# --- OpenAPI v3 ---


def index_hash(index: dict[str, Any], gv_path: str) -> str:
    url = index["paths"][gv_path]["serverRelativeURL"]
    assert url.startswith(f"/openapi/v3/{gv_path}?hash=")
    return str(url.rsplit("=", 1)[1])


def test_openapi_index_lists_every_gv_with_its_document_hash(types: list[ResourceType]) -> None:
    index = o.openapi_v3_index(types)
    assert set(index) == {"paths"}
    expected = {"api/v1"} | {f"apis/{g}/{v}" for g, vs in d.group_versions(types).items() for v in vs}
    assert set(index["paths"]) == expected
    for gv_path, entry in index["paths"].items():
        assert set(entry) == {"serverRelativeURL"}
        doc = o.openapi_v3_document(types, gv_path)
        assert doc is not None
        digest = index_hash(index, gv_path)
        assert digest == o.openapi_v3_hash(doc)
        assert len(digest) == 128 and digest == digest.upper()


def test_openapi_hash_is_stable_when_nothing_changes(types: list[ResourceType]) -> None:
    first = o.openapi_v3_index(types)
    rebuilt = builtin_types() + types_from_crd(two_version_crd()) + types_from_crd(alpha_crd())
    random.Random(7).shuffle(rebuilt)
    assert o.openapi_v3_index(rebuilt) == first
    assert o.openapi_v3_index(types) == first


def test_openapi_hash_changes_with_the_crd_schema_and_versions(types: list[ResourceType]) -> None:
    before = o.openapi_v3_index(types)
    changed = two_version_crd()
    changed["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"][
        "maximum"
    ] = 50
    after = o.openapi_v3_index(builtin_types() + types_from_crd(changed) + types_from_crd(alpha_crd()))
    assert index_hash(after, "apis/example.com/v1") != index_hash(before, "apis/example.com/v1")
    assert index_hash(after, "apis/example.com/v1beta1") == index_hash(before, "apis/example.com/v1beta1")
    assert index_hash(after, "api/v1") == index_hash(before, "api/v1")

    renamed = two_version_crd()
    renamed["spec"]["versions"][0]["served"] = False
    fewer = o.openapi_v3_index(builtin_types() + types_from_crd(renamed) + types_from_crd(alpha_crd()))
    assert "apis/example.com/v1beta1" not in fewer["paths"]
    assert "apis/example.com/v1" in fewer["paths"]


def patch_operations(doc: dict[str, Any], kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (path, item["patch"])
        for path, item in doc["paths"].items()
        if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"]["kind"] == kind
    ]


def query_names(operation: dict[str, Any]) -> set[str]:
    return {p["name"] for p in operation["parameters"] if p["in"] == "query"}


def test_custom_resource_document_has_patch_with_field_validation_and_gvk(types: list[ResourceType]) -> None:
    doc = o.openapi_v3_document(types, "apis/example.com/v1")
    assert doc is not None
    assert set(doc) == {"openapi", "info", "paths", "components"}
    assert doc["openapi"] == "3.0.0"
    assert doc["info"] == {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}  # apiextensions-apiserver's
    gvk = {"group": "example.com", "version": "v1", "kind": "Widget"}
    patches = dict(patch_operations(doc, "Widget"))
    # kubectl stops at the first PATCH of the GVK it meets (Go map order), so every one needs the parameter.
    assert set(patches) == {
        "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}",
        "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status",
    }
    for operation in patches.values():
        assert operation["x-kubernetes-group-version-kind"] == gvk
        assert operation["x-kubernetes-action"] == "patch"
        assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= query_names(operation)
        # No strategic merge patch for custom resources: kubectl then builds a JSON merge patch.
        assert "application/strategic-merge-patch+json" not in operation["requestBody"]["content"]
        assert "application/merge-patch+json" in operation["requestBody"]["content"]
    item = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]
    assert {k for k in item if k != "parameters"} == {"get", "put", "patch", "delete"}
    assert {k: v["x-kubernetes-action"] for k, v in item.items() if k != "parameters"} == {
        "get": "get",
        "put": "put",
        "patch": "patch",
        "delete": "delete",
    }
    collection = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets"]
    assert {k: v["x-kubernetes-action"] for k, v in collection.items() if k != "parameters"} == {
        "get": "list",
        "post": "post",
        "delete": "deletecollection",
    }
    assert {"fieldValidation", "dryRun", "fieldManager"} <= query_names(collection["post"])
    assert {"fieldValidation", "dryRun", "fieldManager"} <= query_names(item["put"])
    assert "get" in doc["paths"]["/apis/example.com/v1/widgets"]  # across namespaces


def test_custom_resource_schema_is_the_crd_schema_with_gvk_and_object_meta(types: list[ResourceType]) -> None:
    doc = o.openapi_v3_document(types, "apis/example.com/v1")
    assert doc is not None
    schemas = doc["components"]["schemas"]
    schema = schemas["com.example.v1.Widget"]
    assert schema["x-kubernetes-group-version-kind"] == [{"group": "example.com", "version": "v1", "kind": "Widget"}]
    crd_schema = widget_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema["properties"]["spec"] == crd_schema["properties"]["spec"]
    assert schema["properties"]["apiVersion"]["type"] == schema["properties"]["kind"]["type"] == "string"
    meta_ref = schema["properties"]["metadata"]["allOf"][0]["$ref"]
    assert meta_ref == "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert schemas["com.example.v1.WidgetList"]["x-kubernetes-group-version-kind"][0]["kind"] == "WidgetList"
    # Building the document leaves the registry's schema alone.
    rt = next(t for t in types if (t.group, t.version) == ("example.com", "v1"))
    assert "metadata" not in (rt.schema or {}).get("properties", {})


def all_refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from all_refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from all_refs(value)


@pytest.mark.parametrize(
    "gv_path", ["api/v1", "apis/example.com/v1", "apis/apps/v1", "apis/alpha.example.org/v1alpha2"]
)
def test_every_schema_reference_resolves(types: list[ResourceType], gv_path: str) -> None:
    doc = o.openapi_v3_document(types, gv_path)
    assert doc is not None
    refs = set(all_refs(doc))
    assert refs
    for ref in refs:
        assert ref.startswith("#/components/schemas/")
        assert ref.removeprefix("#/components/schemas/") in doc["components"]["schemas"]


def test_core_document_always_has_a_namespace_patch(types: list[ResourceType]) -> None:
    full = o.openapi_v3_document(types, "api/v1")
    without_namespace = [rt for rt in types if rt.plural != "namespaces"]
    bare = o.openapi_v3_document(without_namespace, "api/v1")
    assert full is not None and bare is not None
    for doc in (full, bare):
        patches = dict(patch_operations(doc, "Namespace"))
        assert "/api/v1/namespaces/{name}" in patches
        assert "fieldValidation" in query_names(patches["/api/v1/namespaces/{name}"])
    # Namespaces have no deletecollection, so their collection path has no DELETE.
    assert "delete" not in full["paths"]["/api/v1/namespaces"]
    assert "put" in full["paths"]["/api/v1/namespaces/{name}/finalize"]


def test_built_in_kinds_are_described_by_the_published_schemas(types: list[ResourceType]) -> None:
    """What kube-apiserver publishes (`kubectl explain` prints its descriptions and enums), shared, not copied."""
    core = o.openapi_v3_document(types, "api/v1")
    apps = o.openapi_v3_document(types, "apis/apps/v1")
    assert core is not None and apps is not None
    assert core["info"] == {"title": "Kubernetes", "version": ".".join(d.KUBERNETES_VERSION[1:].split(".")[:2])}
    published = published_openapi.schemas()
    config_map = core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]
    assert config_map is published["io.k8s.api.core.v1.ConfigMap"]
    assert config_map["x-kubernetes-group-version-kind"] == [{"group": "", "version": "v1", "kind": "ConfigMap"}]
    assert "immutable" in config_map["properties"] and config_map["properties"]["data"]["description"]
    replicas = apps["components"]["schemas"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert replicas["description"].startswith("Number of desired pods.")
    pull_policy = apps["components"]["schemas"]["io.k8s.api.core.v1.Container"]["properties"]["imagePullPolicy"]
    assert pull_policy["enum"] == ["Always", "IfNotPresent", "Never"]
    # A GV document holds its own kinds and what they reference, not the other groups' kinds.
    assert "io.k8s.api.apps.v1.Deployment" not in core["components"]["schemas"]
    assert "io.k8s.api.core.v1.ConfigMap" not in apps["components"]["schemas"]
    for rt in builtin_types():
        assert o.schema_name(rt) in published, rt.kind


def test_built_in_patches_accept_strategic_merge_patch_custom_resources_do_not(types: list[ResourceType]) -> None:
    apps = o.openapi_v3_document(types, "apis/apps/v1")
    widgets = o.openapi_v3_document(types, "apis/example.com/v1")
    assert apps is not None and widgets is not None
    for _, operation in patch_operations(apps, "Deployment"):
        assert "application/strategic-merge-patch+json" in operation["requestBody"]["content"]
    for _, operation in patch_operations(widgets, "Widget"):
        assert "application/strategic-merge-patch+json" not in operation["requestBody"]["content"]


def test_unknown_or_malformed_gv_paths_have_no_document(types: list[ResourceType]) -> None:
    assert o.openapi_v3_document(types, "apis/nothing.example.com/v1") is None
    assert o.openapi_v3_document(types, "apis/example.com") is None
    assert o.openapi_v3_document(types, "version") is None
    assert o.openapi_v3_document(types, "api/v2") is None


def test_openapi_hash_is_uppercase_sha512_of_canonical_json() -> None:
    doc = {"b": [1, 2], "a": {"y": None, "x": "é"}}
    assert o.canonical_json(doc) == orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)
    assert o.openapi_v3_hash(doc) == hashlib.sha512(b'{"a":{"x":"\xc3\xa9","y":null},"b":[1,2]}').hexdigest().upper()
    assert o.openapi_v3_hash(doc) == o.openapi_v3_hash({"a": {"x": "é", "y": None}, "b": [1, 2]})


# --- real clients against a tiny server that serves only these documents ---


class DiscoveryServer:
    """An aiohttp app answering discovery and OpenAPI from the builders, plus a stub create for kubectl."""

    def __init__(self, types: list[ResourceType]) -> None:
        self.types = types
        self.requests: list[tuple[str, str]] = []  # (method, path_qs)
        self.created: list[dict[str, Any]] = []
        self.live: dict[str, dict[str, Any]] = {}  # path -> object a GET returns
        self.patches: list[tuple[str, str, dict[str, Any]]] = []  # (path, content type, body)
        self.url = ""
        self.app = web.Application(middlewares=[self._record])
        self.app.router.add_get("/version", self._json(lambda r: d.version_info()))
        self.app.router.add_get("/api", self._api)
        self.app.router.add_get("/apis", self._apis)
        self.app.router.add_get(
            "/api/{version}", self._json(lambda r: d.api_resource_list(types, "", r.match_info["version"]))
        )
        self.app.router.add_get(
            "/apis/{group}/{version}",
            self._json(lambda r: d.api_resource_list(types, r.match_info["group"], r.match_info["version"])),
        )
        self.app.router.add_get("/openapi/v3", self._json(lambda r: o.openapi_v3_index(types)))
        self.app.router.add_get(
            "/openapi/v3/{gv:.+}", self._json(lambda r: o.openapi_v3_document(types, r.match_info["gv"]))
        )
        self.app.router.add_route("*", "/{tail:.*}", self._objects)

    @web.middleware
    async def _record(self, request: web.Request, handler: Callable[..., Any]) -> web.StreamResponse:
        self.requests.append((request.method, request.path_qs))
        response: web.StreamResponse = await handler(request)
        return response

    @staticmethod
    def _json(build: Callable[[web.Request], dict[str, Any] | None]) -> Callable[[web.Request], Any]:
        async def handler(request: web.Request) -> web.Response:
            body = build(request)
            if body is None:
                return not_found()
            return web.Response(body=orjson.dumps(body), content_type="application/json")

        return handler

    async def _api(self, request: web.Request) -> web.Response:
        version = d.wants_aggregated(request.headers.get("Accept", ""))
        if version:
            body = orjson.dumps(d.aggregated_discovery(self.types, core=True, version=version))
            return web.Response(body=body, headers={"Content-Type": d.aggregated_content_type(version)})
        address = f"{request.url.host}:{request.url.port}"
        return web.Response(body=orjson.dumps(d.legacy_api_versions(address)), content_type="application/json")

    async def _apis(self, request: web.Request) -> web.Response:
        version = d.wants_aggregated(request.headers.get("Accept", ""))
        if version:
            body = orjson.dumps(d.aggregated_discovery(self.types, core=False, version=version))
            return web.Response(body=body, headers={"Content-Type": d.aggregated_content_type(version)})
        return web.Response(body=orjson.dumps(d.legacy_api_group_list(self.types)), content_type="application/json")

    async def _objects(self, request: web.Request) -> web.Response:
        """Objects in `live` are read back and patches to them recorded; a create is echoed back."""
        if request.method == "POST":
            obj = orjson.loads(await request.read())
            self.created.append(obj)
            obj["metadata"].update(uid="u-1", resourceVersion="1", creationTimestamp="2025-01-01T00:00:00Z")
            return web.Response(status=201, body=orjson.dumps(obj), content_type="application/json")
        live = self.live.get(request.path)
        if live is None or request.method not in ("GET", "PATCH"):
            return not_found()
        if request.method == "PATCH":
            self.patches.append((request.path, request.content_type, orjson.loads(await request.read())))
        return web.Response(body=orjson.dumps(live), content_type="application/json")


def not_found() -> web.Response:
    status = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "not found",
        "reason": "NotFound",
        "code": 404,
    }
    return web.Response(status=404, body=orjson.dumps(status), content_type="application/json")


@pytest.fixture
async def discovery_server(types: list[ResourceType]) -> AsyncIterator[DiscoveryServer]:
    server = DiscoveryServer(types)
    runner = web.AppRunner(server.app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    server.url = f"http://{host}:{port}"
    yield server
    await runner.cleanup()


async def test_dynamic_client_discovers_kinds_from_legacy_discovery(
    discovery_server: DiscoveryServer, tmp_path: Path
) -> None:
    config = Configuration(host=discovery_server.url)
    async with ApiClient(configuration=config) as api:
        client = await DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
        widgets = await client.resources.get(api_version="example.com/v1", kind="Widget")
        beta = await client.resources.get(api_version="example.com/v1beta1", kind="Widget")
        configmaps = await client.resources.get(api_version="v1", kind="ConfigMap")
        gadgets = await client.resources.get(api_version="alpha.example.org/v1alpha1", kind="Gadget")
    assert (widgets.name, widgets.namespaced, widgets.preferred) == ("widgets", True, True)
    assert "status" in widgets.subresources
    assert (beta.preferred, beta.subresources) == (False, {})
    assert (configmaps.name, configmaps.extra_args["shortNames"]) == ("configmaps", ["cm"])
    assert (gadgets.namespaced, gadgets.preferred) == (False, False)
    assert client.version["kubernetes"]["gitVersion"] == d.KUBERNETES_VERSION
    requested = {path.split("?")[0] for _, path in discovery_server.requests}
    assert {"/version", "/apis", "/apis/example.com/v1", "/apis/example.com/v1beta1", "/api/v1"} <= requested


def kubectl_for(server: DiscoveryServer, tmp_path: Path) -> Kubectl:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server.url}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
                "current-context": "c",
            }
        )
    )
    return Kubectl(kubectl_path(), kubeconfig, tmp_path / "kube-cache")


@pytest.mark.kubectl
async def test_kubectl_creates_with_default_validation_against_these_documents(
    discovery_server: DiscoveryServer, tmp_path: Path
) -> None:
    kubectl = kubectl_for(discovery_server, tmp_path)
    manifest = widget("w1", size=3)
    # Only the server may reject an unknown field: kubectl must skip client-side validation.
    manifest["spec"]["unknownField"] = True
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"a": "1"}}
    _, out, err = await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump_all([manifest, cm]), timeout=60)
    assert "widget.example.com/w1 created" in out, err
    assert "configmap/c1 created" in out, err
    assert [obj["kind"] for obj in discovery_server.created] == ["Widget", "ConfigMap"]
    posts = [path for method, path in discovery_server.requests if method == "POST"]
    assert all("fieldValidation=Strict" in path for path in posts), posts
    index = o.openapi_v3_index(discovery_server.types)
    wanted = index["paths"]["apis/example.com/v1"]["serverRelativeURL"]
    assert any(m == "GET" and p.startswith(f"{wanted}&") for m, p in discovery_server.requests)

    _, out, err = await kubectl.arun("explain", "widgets.spec", timeout=60)
    assert "example.com" in out and "size" in out, err


def applied(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as a live object that an earlier `kubectl apply` created."""
    live = copy.deepcopy(obj)
    last_applied = orjson.dumps(obj).decode() + "\n"
    live["metadata"].update(
        namespace="default",
        uid="u-1",
        resourceVersion="5",
        creationTimestamp="2025-01-01T00:00:00Z",
        annotations={"kubectl.kubernetes.io/last-applied-configuration": last_applied},
    )
    return live


@pytest.mark.kubectl
async def test_kubectl_update_patches_built_ins_strategically_and_custom_resources_by_merge(
    discovery_server: DiscoveryServer, tmp_path: Path
) -> None:
    """kubectl computes a strategic merge patch for a built-in (the OpenAPI says the server takes one, and gives
    the merge keys) and a JSON merge patch for a custom resource."""
    cm_path = "/api/v1/namespaces/default/configmaps/c1"
    widget_path = "/apis/example.com/v1/namespaces/default/widgets/w1"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"a": "1"}}
    discovery_server.live[cm_path] = applied(cm)
    discovery_server.live[widget_path] = applied(widget("w1", size=1))
    kubectl = kubectl_for(discovery_server, tmp_path)
    cm_new = dict(cm, data={"b": "2"})
    manifests = yaml.safe_dump_all([cm_new, widget("w1", size=2)])
    _, out, err = await kubectl.arun("apply", "-f", "-", input=manifests, timeout=60)
    assert "configmap/c1 configured" in out and "widget.example.com/w1 configured" in out, err
    assert "warning" not in err.lower(), err
    patches = {path: (content_type, body) for path, content_type, body in discovery_server.patches}
    assert patches[cm_path][0] == "application/strategic-merge-patch+json"
    assert patches[cm_path][1]["data"] == {"a": None, "b": "2"}
    assert patches[widget_path][0] == "application/merge-patch+json"
    assert patches[widget_path][1]["spec"] == {"size": 2}


async def test_openapi_v2_is_a_gnostic_document_and_kubectl_names_a_missing_kind(
    raw: RawClient, kubectl: Kubectl
) -> None:
    headers = {**raw.headers, "Accept": OPENAPI_V2_PROTOBUF}
    async with raw.session.get(raw.base + "/openapi/v2", headers=headers) as reply:
        assert reply.status == 200
        assert reply.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        body = await reply.read()
    assert body.startswith(b"\x0a\x032.0\x12")  # field 1 (swagger) "2.0", then field 2 (info)
    assert b"io.k8s.api.apps.v1.Deployment" in body
    gizmo = "apiVersion: example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\n"
    code, _out, err = await kubectl.arun("apply", "-f", "-", input=gizmo, check=False)
    assert code == 1
    assert 'no matches for kind "Gizmo" in version "example.com/v1"' in err, err


def test_an_int_or_string_field_is_published_with_the_any_of_it_implies() -> None:
    crd = widget_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["surge"] = {"x-kubernetes-int-or-string": True}
    spec["properties"]["typed"] = {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}]}
    doc = o.openapi_v3_document(builtin_types() + types_from_crd(crd), "apis/example.com/v1")
    assert doc is not None
    published = doc["components"]["schemas"]["com.example.v1.Widget"]["properties"]["spec"]["properties"]
    assert published["surge"] == {
        "x-kubernetes-int-or-string": True,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    }
    assert published["typed"]["anyOf"] == [{"type": "integer"}]
    assert "anyOf" not in spec["properties"]["surge"]  # the CRD itself is left alone
