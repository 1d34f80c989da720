"""Conformance: object rules, error bodies, status subresource and patches (checklist items 5-11, 26)."""

from __future__ import annotations

import asyncio
import re

import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio.client.exceptions import ApiException

from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.support import RawClient, widget, widget_crd

W = "/apis/example.com/v1/namespaces/default/widgets"
MERGE = "application/merge-patch+json"
JSONP = "application/json-patch+json"


@pytest.fixture
async def crd(raw: RawClient) -> dict:
    reply = await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
    assert reply.status == 201, reply.body
    return reply.body


async def test_create_sets_system_metadata(raw: RawClient, crd: dict) -> None:
    reply = await raw.post(W, widget("w1", size=3))
    assert reply.status == 201
    meta = reply.body["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["resourceVersion"].isdigit()
    assert meta["generation"] == 1
    assert meta["managedFields"][0]["manager"] == "Python"  # the User-Agent prefix (aiohttp's "Python/3.x")
    assert meta["managedFields"][0]["operation"] == "Update"
    assert reply.body["spec"]["mode"] == "auto"  # schema default applied


async def test_generate_name_uses_the_real_alphabet(raw: RawClient, crd: dict) -> None:
    body = widget("")
    body["metadata"] = {"generateName": "gen-"}
    reply = await raw.post(W, body)
    assert reply.status == 201
    assert re.fullmatch(r"gen-[bcdfghjklmnpqrstvwxz2456789]{5}", reply.body["metadata"]["name"])


async def test_create_drops_status_when_the_kind_has_a_status_subresource(raw: RawClient, crd: dict) -> None:
    body = widget("w1")
    body["status"] = {"phase": "Ready"}
    reply = await raw.post(W, body)
    assert "status" not in reply.body


async def test_already_exists_and_not_found_bodies(raw: RawClient, crd: dict) -> None:
    await raw.post(W, widget("w1"))
    dup = await raw.post(W, widget("w1"))
    assert dup.status == 409
    assert dup.body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'widgets.example.com "w1" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "w1", "group": "example.com", "kind": "widgets"},
        "code": 409,
    }
    missing = await raw.get(W + "/nope")
    assert missing.status == 404
    assert missing.body["message"] == 'widgets.example.com "nope" not found'
    assert missing.body["details"] == {"name": "nope", "group": "example.com", "kind": "widgets"}
    unknown = await raw.get("/apis/example.com/v1/namespaces/default/gadgets")
    assert unknown.status == 404
    assert unknown.body["message"] == "the server could not find the requested resource"
    assert unknown.body["details"] == {}


async def test_custom_resource_endpoint_is_404_before_its_crd(raw: RawClient) -> None:
    assert (await raw.get(W)).status == 404
    await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
    assert (await raw.get(W)).status == 200


async def test_put_requires_resource_version_and_detects_conflicts(raw: RawClient, crd: dict) -> None:
    created = (await raw.post(W, widget("w1"))).body
    body = widget("w1", size=2)
    no_rv = await raw.put(W + "/w1", body)
    assert no_rv.status == 422
    assert no_rv.body["message"] == (
        'widgets.example.com "w1" is invalid: metadata.resourceVersion: Invalid value: 0x0: '
        "must be specified for an update"
    )
    body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    ok = await raw.put(W + "/w1", body)
    assert ok.status == 200
    stale = await raw.put(W + "/w1", body)
    assert stale.status == 409
    assert stale.body["reason"] == "Conflict"
    assert stale.body["message"] == (
        'Operation cannot be fulfilled on widgets.example.com "w1": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    assert stale.body["details"] == {"name": "w1", "group": "example.com", "kind": "widgets"}


async def test_no_op_put_keeps_resource_version_and_emits_no_event(
    raw: RawClient, crd: dict, server: EmbeddedAPIServer
) -> None:
    created = (await raw.post(W, widget("w1"))).body
    rv_before = server.api.store.rv
    again = await raw.put(W + "/w1", created)
    assert again.status == 200
    assert again.body["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert server.api.store.rv == rv_before
    assert server.api.store.events_since(("example.com", "widgets"), rv_before) == []


async def test_generation_bumps_on_spec_not_on_metadata_or_status(raw: RawClient, crd: dict) -> None:
    await raw.post(W, widget("w1"))
    labelled = await raw.patch(W + "/w1", {"metadata": {"labels": {"a": "b"}}}, MERGE)
    assert labelled.body["metadata"]["generation"] == 1
    status = await raw.patch(W + "/w1/status", {"status": {"phase": "Ready"}}, MERGE)
    assert status.body["metadata"]["generation"] == 1
    spec = await raw.patch(W + "/w1", {"spec": {"size": 9}}, MERGE)
    assert spec.body["metadata"]["generation"] == 2


async def test_generation_bumps_once_on_deletion_mark(raw: RawClient, crd: dict) -> None:
    body = widget("w1")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    await raw.post(W, body)
    first = await raw.delete(W + "/w1")
    assert first.body["metadata"]["generation"] == 2
    assert first.body["metadata"]["deletionTimestamp"]
    second = await raw.delete(W + "/w1")
    assert second.body["metadata"]["generation"] == 2


async def test_status_subresource_only_changes_status(raw: RawClient, crd: dict) -> None:
    created = (await raw.post(W, widget("w1", size=1))).body
    created["spec"]["size"] = 50
    created["status"] = {"phase": "Ready"}
    via_status = await raw.put(W + "/w1/status", created)
    assert via_status.status == 200
    assert via_status.body["spec"]["size"] == 1
    assert via_status.body["status"] == {"phase": "Ready"}
    main = via_status.body
    main["status"] = {"phase": "Broken"}
    main["spec"]["size"] = 2
    via_main = await raw.put(W + "/w1", main)
    assert via_main.body["status"] == {"phase": "Ready"}
    assert via_main.body["spec"]["size"] == 2
    got = await raw.get(W + "/w1/status")
    assert got.body["status"] == {"phase": "Ready"}


async def test_status_path_is_404_without_the_subresource(raw: RawClient) -> None:
    crd = widget_crd()
    del crd["spec"]["versions"][0]["subresources"]
    await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    body = widget("w1")
    body["status"] = {"phase": "x"}
    created = await raw.post(W, body)
    assert created.body["status"] == {"phase": "x"}  # an ordinary field without the subresource
    assert (await raw.get(W + "/w1/status")).status == 404


async def test_merge_patch_null_deletes(raw: RawClient, crd: dict) -> None:
    await raw.post(W, widget("w1", size=1, color="red"))
    reply = await raw.patch(W + "/w1", {"spec": {"color": None}}, MERGE)
    assert reply.status == 200
    assert "color" not in reply.body["spec"]


async def test_json_patch_ops_and_failures(raw: RawClient, crd: dict) -> None:
    await raw.post(W, widget("w1", size=1))
    ok = await raw.patch(
        W + "/w1",
        [
            {"op": "replace", "path": "/spec/size", "value": 5},
            {"op": "add", "path": "/spec/color", "value": "blue"},
        ],
        JSONP,
    )
    assert ok.body["spec"]["size"] == 5
    assert ok.body["spec"]["color"] == "blue"
    failed = await raw.patch(W + "/w1", [{"op": "test", "path": "/spec/size", "value": 6}], JSONP)
    assert failed.status == 422
    not_a_list = await raw.patch(W + "/w1", {"spec": {"size": 1}}, JSONP)
    assert not_a_list.status == 400
    assert not_a_list.body["reason"] == "BadRequest"


async def test_strategic_merge_patch_on_a_custom_resource_is_415(raw: RawClient, crd: dict) -> None:
    await raw.post(W, widget("w1"))
    reply = await raw.patch(W + "/w1", {"spec": {"size": 2}}, "application/strategic-merge-patch+json")
    assert reply.status == 415
    assert reply.body["reason"] == "UnsupportedMediaType"
    assert reply.body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


async def test_strategic_merge_patch_on_a_configmap(raw: RawClient) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "1"}}
    await raw.post("/api/v1/namespaces/default/configmaps", cm)
    reply = await raw.patch(
        "/api/v1/namespaces/default/configmaps/c",
        {"data": {"a": None, "b": "2"}},
        "application/strategic-merge-patch+json",
    )
    assert reply.status == 200
    assert reply.body["data"] == {"b": "2"}


async def test_client_dict_patch_without_content_type_is_rejected(
    kube: k8s_client.ApiClient, raw: RawClient, crd: dict
) -> None:
    """kubernetes-asyncio sends a dict body as json-patch; the real server answers 400 and so do we."""
    await raw.post(W, widget("w1"))
    api = k8s_client.CustomObjectsApi(kube)
    with pytest.raises(ApiException) as info:
        await api.patch_namespaced_custom_object("example.com", "v1", "default", "widgets", "w1", {"spec": {"size": 2}})
    assert info.value.status == 400
    fixed = await api.patch_namespaced_custom_object(
        "example.com", "v1", "default", "widgets", "w1", {"spec": {"size": 2}}, _content_type=MERGE
    )
    assert fixed["spec"]["size"] == 2


async def test_schema_validation_errors_are_422_with_the_servers_text(raw: RawClient, crd: dict) -> None:
    reply = await raw.post(W, widget("w1", size="x"))
    assert reply.status == 422
    assert reply.body["reason"] == "Invalid"
    assert reply.body["message"] == (
        'Widget.example.com "w1" is invalid: spec.size: Invalid value: "string": '
        'spec.size in body must be of type integer: "string"'
    )
    cause = reply.body["details"]["causes"][0]
    assert cause["field"] == "spec.size"
    assert cause["reason"] == "FieldValueTypeInvalid"
    assert reply.body["details"]["kind"] == "Widget"


async def test_strict_field_validation_and_warnings_and_pruning(raw: RawClient, crd: dict) -> None:
    body = widget("w1", size=1)
    body["spec"]["foo"] = 1
    strict = await raw.post(W + "?fieldValidation=Strict", body)
    assert strict.status == 400
    assert strict.body["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "spec.foo"'
    )
    warn = await raw.post(W + "?fieldValidation=Warn", body)
    assert warn.status == 201
    assert warn.headers["Warning"] == '299 - "unknown field \\"spec.foo\\""'
    assert "foo" not in warn.body["spec"]  # pruned
    body["metadata"]["name"] = "w2"
    body["spec"]["extra"] = {"anything": {"goes": True}}
    kept = await raw.post(W + "?fieldValidation=Ignore", body)
    assert kept.body["spec"]["extra"] == {"anything": {"goes": True}}


async def test_a_custom_resources_unknown_fields_are_listed_sorted_and_a_built_in_kinds_in_document_order(
    raw: RawClient, crd: dict
) -> None:
    """kube-apiserver sorts the paths its structural pruning finds; a built-in kind's Go decoder lists them as read
    (both answers taken from a real kube-apiserver; tests/envtest/test_real_server.py asks it the same)."""
    body = widget("w-order", size=1)
    body["zz"] = 4
    body["metadata"]["zz"] = 3
    body["spec"] = {"zeta": 1, "size": 1, "alpha": 2}
    strict = await raw.post(W + "?fieldValidation=Strict", body)
    assert strict.body["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: unknown field "metadata.zz", '
        'unknown field "spec.alpha", unknown field "spec.zeta", unknown field "zz"'
    )
    warn = await raw.post(W + "?fieldValidation=Warn", body)
    assert warn.status == 201
    warned = re.findall(r'unknown field \\"([^\\]+)\\"', warn.headers["Warning"])
    assert warned == ["metadata.zz", "spec.alpha", "spec.zeta", "zz"]
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "order", "zz": 3}, "zeta": 1, "alpha": 2}
    refused = await raw.post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict", config)
    assert refused.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
        'unknown field "metadata.zz", unknown field "zeta", unknown field "alpha"'
    )


async def test_built_in_kinds_are_decoded_strictly_as_their_go_types(raw: RawClient) -> None:
    pod_spec = {"containers": [{"name": "c", "image": "i", "bogus": 1}], "nodeSelecter": {"a": "b"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec},
        },
    }
    deployments = "/apis/apps/v1/namespaces/default/deployments"
    strict = await raw.post(deployments + "?fieldValidation=Strict", deployment)
    assert strict.status == 400
    assert strict.body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'unknown field "spec.template.spec.containers[0].bogus", unknown field "spec.template.spec.nodeSelecter"'
    )
    warn = await raw.post(deployments + "?fieldValidation=Warn", deployment)
    assert warn.status == 201
    assert 'unknown field \\"spec.template.spec.nodeSelecter\\"' in warn.headers["Warning"]
    template = warn.body["spec"]["template"]["spec"]
    (container,) = template["containers"]
    assert "bogus" not in container and (container["name"], container["image"]) == ("c", "i")  # dropped, as there
    assert "nodeSelecter" not in template
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80, "bogus": 1}]},
    }
    ignored = await raw.post("/api/v1/namespaces/default/services?fieldValidation=Ignore", service)
    assert ignored.status == 201
    assert "bogus" not in ignored.body["spec"]["ports"][0]
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}, "extra": 1}
    refused = await raw.post("/api/v1/namespaces/default/configmaps?fieldValidation=Strict", config)
    assert refused.status == 400
    assert refused.body["message"].endswith('strict decoding error: unknown field "extra"')


async def test_namespace_mismatch_and_missing_namespace(raw: RawClient, crd: dict) -> None:
    mismatch = await raw.post(W, widget("w1", namespace="other"))
    assert mismatch.status == 400
    assert mismatch.body["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )
    missing = await raw.post("/apis/example.com/v1/namespaces/ghost/widgets", widget("w1", namespace="ghost"))
    assert missing.status == 404
    assert missing.body["message"] == 'namespaces "ghost" not found'
    assert missing.body["details"] == {"name": "ghost", "kind": "namespaces"}


async def test_resource_version_is_one_counter_per_cluster(raw: RawClient, crd: dict) -> None:
    a = (await raw.post(W, widget("w1"))).body["metadata"]["resourceVersion"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    b = (await raw.post("/api/v1/namespaces/default/configmaps", cm)).body["metadata"]["resourceVersion"]
    assert isinstance(a, str)
    assert int(b) == int(a) + 1
    listed = await raw.get("/api/v1/namespaces/default/configmaps")
    assert listed.body["metadata"]["resourceVersion"] == b


async def test_separate_servers_have_independent_counters() -> None:
    async with EmbeddedAPIServer("a") as one, EmbeddedAPIServer("b") as two:
        import aiohttp

        async with aiohttp.ClientSession() as session:
            ra, rb = RawClient(one.url, session, one.auth_headers), RawClient(two.url, session, two.auth_headers)
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
            for _ in range(3):
                cm["metadata"]["name"] = f"c{_}"
                await ra.post("/api/v1/namespaces/default/configmaps", cm)
            before_b = one.api.store.rv, two.api.store.rv
            await rb.post("/api/v1/namespaces/default/configmaps", cm)
            assert one.api.store.rv == before_b[0]
            assert two.api.store.rv == before_b[1] + 1
            assert (await ra.get("/api/v1/namespaces/default/configmaps/c0")).status == 200
            assert (await rb.get("/api/v1/namespaces/default/configmaps/c0")).status == 404


async def test_concurrent_creates_get_distinct_increasing_versions(raw: RawClient, crd: dict) -> None:
    replies = await asyncio.gather(*(raw.post(W, widget(f"w{i}")) for i in range(20)))
    rvs = sorted(int(r.body["metadata"]["resourceVersion"]) for r in replies)
    assert len(set(rvs)) == 20
    assert rvs == list(range(rvs[0], rvs[0] + 20))


async def test_a_body_over_3_mib_is_refused_with_413_before_it_is_decoded(raw: RawClient) -> None:
    blob = {"metadata": {"name": "huge"}, "data": {"blob": "x" * (3 * 1024 * 1024)}}
    reply = await raw.post("/api/v1/namespaces/default/configmaps", blob)
    assert reply.status == 413
    body = reply.body
    assert (body["kind"], body["reason"], body["code"]) == ("Status", "RequestEntityTooLarge", 413)
    assert body["message"] == "Request entity too large: limit is 3145728"
    assert (await raw.get("/api/v1/namespaces/default/configmaps/huge")).status == 404
