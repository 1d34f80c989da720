"""A CRD served at two versions with `conversion.strategy: Webhook`, against the embedded server with the real
kubernetes-asyncio client and a real TLS conversion webhook (tests/conversion_webhook.py: v1 `spec.size` is v2
`spec.replicas`, v1 is stored).

The answers and messages asserted here are kube-apiserver v1.34.4's for the same requests (measured against the
real server; the fidelity scenarios `conversion-webhook*` keep comparing them)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import watch as k8s_watch
from kubernetes_asyncio.client.rest import ApiException

from omectl.envtest.controlplane import free_port
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.tls import CertificateAuthority, server_ssl_context
from tests.conversion_webhook import GROUP, REFUSE_LABEL, ConversionWebhook, converted, gizmo, gizmo_crd
from tests.support import RawClient

DEADLINE = 10.0  # seconds any wait below may take
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
V1 = f"/apis/{GROUP}/v1/namespaces/default/gizmos"
V2 = f"/apis/{GROUP}/v2/namespaces/default/gizmos"
MERGE = "application/merge-patch+json"


@pytest.fixture
async def webhook() -> AsyncIterator[ConversionWebhook]:
    hook = await ConversionWebhook(hosts=("127.0.0.1", "conv.default.svc")).start()
    yield hook
    await hook.stop()


@asynccontextmanager
async def raw_client(server: EmbeddedAPIServer) -> AsyncIterator[RawClient]:
    async with aiohttp.ClientSession() as session:
        yield RawClient(server.url, session, server.auth_headers)


async def install(raw: RawClient, crd: dict[str, Any]) -> None:
    reply = await raw.post(CRDS, crd)
    assert reply.status == 201, reply.body


@pytest.fixture
async def gizmos(raw: RawClient, webhook: ConversionWebhook) -> ConversionWebhook:
    """The Gizmo CRD installed, converted by `webhook`; no review recorded yet."""
    await install(raw, gizmo_crd(webhook.client_config()))
    return webhook


@pytest.fixture
def custom(kube: k8s_client.ApiClient) -> k8s_client.CustomObjectsApi:
    return k8s_client.CustomObjectsApi(kube)


async def create(custom: k8s_client.CustomObjectsApi, version: str, body: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await custom.create_namespaced_custom_object(GROUP, version, "default", "gizmos", body)
    return result


async def read(custom: k8s_client.CustomObjectsApi, version: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = await custom.get_namespaced_custom_object(GROUP, version, "default", "gizmos", name)
    return result


def failure(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = orjson.loads(exc.body)
    return body


def status_500(message: str) -> dict[str, Any]:
    """kube-apiserver's answer to a failed conversion: code 500, the message, no reason and no details."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "code": 500}


# ------------------------------------------------------------------------------------------------------------
# Reading and writing in either version
# ------------------------------------------------------------------------------------------------------------


async def test_create_in_the_non_storage_version_is_stored_converted_and_read_in_both(
    server: EmbeddedAPIServer, custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    created = await create(custom, "v2", gizmo("v2", "g", 3, labels={"app": "a"}))
    assert (created["apiVersion"], created["spec"]) == (f"{GROUP}/v2", {"replicas": 3, "tier": "from-v2"})
    stored = server.api.store.get((GROUP, "gizmos"), "default", "g")
    assert stored is not None
    assert (stored["apiVersion"], stored["spec"]) == (f"{GROUP}/v1", {"size": 3, "tier": "from-v2"})
    assert (await read(custom, "v1", "g"))["spec"] == {"size": 3, "tier": "from-v2"}
    assert (await read(custom, "v2", "g"))["spec"] == {"replicas": 3, "tier": "from-v2"}
    # in: v2 -> v1 for storage; out: v1 -> v2 for the answer, and again for the v2 read (v1 needs none)
    assert gizmos.desired_versions() == [f"{GROUP}/v1", f"{GROUP}/v2", f"{GROUP}/v2"]


async def test_the_review_is_the_real_servers(custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook) -> None:
    await create(custom, "v2", gizmo("v2", "g", 3))
    review = gizmos.reviews[0]
    assert list(review) == ["kind", "apiVersion", "request", "response"]
    assert (review["kind"], review["apiVersion"]) == ("ConversionReview", "apiextensions.k8s.io/v1")
    assert review["response"] == {"uid": "", "convertedObjects": None, "result": {"metadata": {}}}
    request = review["request"]
    assert request["desiredAPIVersion"] == f"{GROUP}/v1"
    (sent,) = request["objects"]
    assert sent["apiVersion"] == f"{GROUP}/v2"
    assert "resourceVersion" not in sent["metadata"]  # objects travel as etcd holds them
    assert list(sent) == sorted(sent)
    assert gizmos.paths[0] == "/convert?timeout=30s"


async def test_a_v1beta1_review_when_the_crd_asks_for_it_first(
    raw: RawClient, custom: k8s_client.CustomObjectsApi, webhook: ConversionWebhook
) -> None:
    await install(raw, gizmo_crd(webhook.client_config(), review_versions=("v1beta1", "v1")))

    def v1beta1_answer(review: dict[str, Any]) -> dict[str, Any]:
        answer = converted(review)
        del answer["response"]["uid"]  # v1beta1 answers are not checked for their uid or kind
        return {"response": answer["response"]}

    webhook.answer = v1beta1_answer
    assert (await create(custom, "v2", gizmo("v2", "g", 2)))["spec"]["replicas"] == 2
    assert webhook.reviews[0]["apiVersion"] == "apiextensions.k8s.io/v1beta1"


async def test_validation_and_defaults_are_the_request_versions_before_any_conversion(
    custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    with pytest.raises(ApiException) as too_many:
        await create(custom, "v2", gizmo("v2", "g", 7))  # v1 would take 7 (its maximum is 10), v2 stops at 5
    assert too_many.value.status == 422
    assert failure(too_many.value)["message"] == (
        'Gizmo.conv.example.com "g" is invalid: spec.replicas: Invalid value: 7: spec.replicas in body should be '
        "less than or equal to 5"
    )
    with pytest.raises(ApiException) as ruled:
        await create(custom, "v2", gizmo("v2", "g", 4))
    assert (
        failure(ruled.value)["message"]
        == 'Gizmo.conv.example.com "g" is invalid: spec: Invalid value: "object": replicas 4'
    )
    assert gizmos.reviews == []
    assert (await create(custom, "v1", gizmo("v1", "h", 7)))["spec"] == {"size": 7, "tier": "from-v1"}


async def test_a_body_of_another_version_is_refused(raw: RawClient, gizmos: ConversionWebhook) -> None:
    reply = await raw.post(V2, gizmo("v1", "g", 1))
    assert (reply.status, reply.body["message"]) == (
        400,
        "the API version in the data (conv.example.com/v1) does not match the expected API version "
        "(conv.example.com/v2)",
    )


async def test_updates_patches_apply_and_status_in_the_non_storage_version(
    server: EmbeddedAPIServer, custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    await create(custom, "v1", gizmo("v1", "g", 1))
    live = await read(custom, "v2", "g")
    live["spec"]["replicas"] = 2
    replaced = await custom.replace_namespaced_custom_object(GROUP, "v2", "default", "gizmos", "g", live)
    assert replaced["spec"]["replicas"] == 2
    patched = await custom.patch_namespaced_custom_object(
        GROUP, "v2", "default", "gizmos", "g", {"spec": {"replicas": 3}}, _content_type=MERGE
    )
    assert (patched["spec"]["replicas"], patched["metadata"]["generation"]) == (3, 3)
    applied = await custom.patch_namespaced_custom_object(
        GROUP,
        "v2",
        "default",
        "gizmos",
        "g",
        gizmo("v2", "g", 5),
        field_manager="tester",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    assert applied["spec"]["replicas"] == 5
    status = await custom.patch_namespaced_custom_object_status(
        GROUP, "v2", "default", "gizmos", "g", {"status": {"phase": "Up"}, "spec": {"replicas": 1}}, _content_type=MERGE
    )
    assert (status["status"], status["spec"]["replicas"]) == ({"phase": "Up"}, 5)  # /status takes status alone
    stored = server.api.store.get((GROUP, "gizmos"), "default", "g")
    assert stored is not None
    assert (stored["apiVersion"], stored["spec"]["size"], stored["status"]) == (f"{GROUP}/v1", 5, {"phase": "Up"})
    managers = {(e["manager"], e["apiVersion"], e.get("subresource")) for e in stored["metadata"]["managedFields"]}
    assert ("tester", f"{GROUP}/v2", None) in managers


async def test_an_unchanged_write_writes_nothing_until_the_storage_version_moves(
    server: EmbeddedAPIServer, raw: RawClient, gizmos: ConversionWebhook
) -> None:
    await raw.post(V2, gizmo("v2", "g", 1))
    first = (await raw.patch(f"{V2}/g", {"spec": {"replicas": 1}}, MERGE)).body
    assert first["metadata"]["resourceVersion"] == (await raw.get(f"{V2}/g")).body["metadata"]["resourceVersion"]

    crd = (await raw.get(f"{CRDS}/gizmos.{GROUP}")).body
    for version in crd["spec"]["versions"]:
        version["storage"] = version["name"] == "v2"
    assert (await raw.put(f"{CRDS}/gizmos.{GROUP}", crd)).status == 200
    migrated = (await raw.patch(f"{V2}/g", {"spec": {"replicas": 1}}, MERGE)).body
    assert int(migrated["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    stored = server.api.store.get((GROUP, "gizmos"), "default", "g")
    assert stored is not None and stored["apiVersion"] == f"{GROUP}/v2"
    storage = (await raw.get(f"{CRDS}/gizmos.{GROUP}")).body["status"]["storedVersions"]
    assert storage == ["v1", "v2"]


async def test_dry_run_converts_and_stores_nothing(
    server: EmbeddedAPIServer, raw: RawClient, gizmos: ConversionWebhook
) -> None:
    reply = await raw.post(f"{V2}?dryRun=All", gizmo("v2", "g", 2))
    assert (reply.status, reply.body["spec"]["replicas"]) == (201, 2)
    assert server.api.store.get((GROUP, "gizmos"), "default", "g") is None
    assert gizmos.desired_versions() == [f"{GROUP}/v1", f"{GROUP}/v2"]
    await raw.post(V2, gizmo("v2", "g", 2))
    dry = await raw.patch(f"{V2}/g?dryRun=All", {"spec": {"replicas": 5}}, MERGE)
    assert dry.body["spec"]["replicas"] == 5
    listed = (await raw.get(V2)).body["items"]
    assert [i["spec"]["replicas"] for i in listed] == [2]  # what a dry run would have stored is not kept


async def test_delete_in_the_non_storage_version_answers_in_it(raw: RawClient, gizmos: ConversionWebhook) -> None:
    await raw.post(V1, gizmo("v1", "g", 2, finalizers=["example.com/hold"]))
    marked = await raw.delete(f"{V2}/g")
    assert (marked.status, marked.body["spec"]["replicas"]) == (200, 2)
    assert marked.body["metadata"]["deletionTimestamp"]


# ------------------------------------------------------------------------------------------------------------
# Lists and watches
# ------------------------------------------------------------------------------------------------------------


async def test_a_list_converts_each_object_once_per_resource_version(
    custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    await create(custom, "v1", gizmo("v1", "a", 1))
    await create(custom, "v1", gizmo("v1", "b", 2))
    listed = await custom.list_namespaced_custom_object(GROUP, "v2", "default", "gizmos")
    assert listed["apiVersion"] == f"{GROUP}/v2"
    assert [(i["metadata"]["name"], i["spec"]["replicas"]) for i in listed["items"]] == [("a", 1), ("b", 2)]
    assert len(gizmos.reviews) == 2  # one object per review, as the real server converts them
    assert all(len(r["request"]["objects"]) == 1 for r in gizmos.reviews)
    await custom.list_namespaced_custom_object(GROUP, "v2", "default", "gizmos")
    assert len(gizmos.reviews) == 2  # unchanged objects: converted already
    v1_list = await custom.list_namespaced_custom_object(GROUP, "v1", "default", "gizmos")
    assert [i["spec"]["size"] for i in v1_list["items"]] == [1, 2]
    assert len(gizmos.reviews) == 2  # the storage version needs none


async def test_a_watch_in_the_non_storage_version_sees_converted_events(
    custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    await create(custom, "v1", gizmo("v1", "a", 1))
    seen: list[tuple[str, str, int]] = []
    stream = k8s_watch.Watch().stream(
        custom.list_namespaced_custom_object, GROUP, "v2", "default", "gizmos", timeout_seconds=30
    )
    async with asyncio.timeout(DEADLINE):
        async for event in stream:
            obj = event["object"]
            seen.append((event["type"], obj["metadata"]["name"], obj["spec"]["replicas"]))
            if obj["metadata"]["name"] == "a" and event["type"] == "ADDED":
                await create(custom, "v1", gizmo("v1", "b", 2))
            if obj["metadata"]["name"] == "b":
                break
    assert seen == [("ADDED", "a", 1), ("ADDED", "b", 2)]


async def test_a_watch_holds_back_an_event_until_its_conversion_succeeds(
    raw: RawClient, custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    listed = await custom.list_namespaced_custom_object(GROUP, "v2", "default", "gizmos")
    gizmos.answer = lambda review: web.Response(status=503, text="not yet")
    stream = k8s_watch.Watch().stream(
        custom.list_namespaced_custom_object,
        GROUP,
        "v2",
        "default",
        "gizmos",
        resource_version=listed["metadata"]["resourceVersion"],
        timeout_seconds=30,
    )
    gizmos.received.clear()

    async def write_then_recover() -> None:
        assert (await raw.post(V1, gizmo("v1", "late", 3))).status == 201  # the storage version: no conversion
        await gizmos.received.wait()  # the watch asked, and was refused
        gizmos.received.clear()
        await gizmos.received.wait()  # it asks again
        gizmos.answer = None

    recovery = asyncio.create_task(write_then_recover())
    async with asyncio.timeout(DEADLINE):
        async for event in stream:
            assert (event["type"], event["object"]["spec"]) == ("ADDED", {"replicas": 3, "tier": "from-v1"})
            break
    await recovery
    assert len(gizmos.reviews) >= 2


async def test_a_watch_waiting_for_a_conversion_still_ends_at_its_timeout(
    raw: RawClient, custom: k8s_client.CustomObjectsApi, gizmos: ConversionWebhook
) -> None:
    assert (await raw.post(V1, gizmo("v1", "refused", 1, labels={REFUSE_LABEL: "true"}))).status == 201
    stream = k8s_watch.Watch().stream(
        custom.list_namespaced_custom_object, GROUP, "v2", "default", "gizmos", timeout_seconds=1
    )
    async with asyncio.timeout(DEADLINE):
        events = [event async for event in stream]
    assert events == []
    assert len(gizmos.reviews) >= 1  # it was asked, and kept refusing


# ------------------------------------------------------------------------------------------------------------
# Failures: the webhook's own, unreachable, slow, malformed answers
# ------------------------------------------------------------------------------------------------------------


async def test_a_refusal_fails_reads_and_writes_in_the_other_version_with_kubes_500(
    raw: RawClient, gizmos: ConversionWebhook
) -> None:
    refused = {REFUSE_LABEL: "true"}
    assert (await raw.post(V1, gizmo("v1", "r", 1, labels=refused))).status == 201
    for path in (f"{V2}/r", V2):
        reply = await raw.get(path)
        assert (reply.status, reply.body) == (
            500,
            status_500("conversion webhook for conv.example.com/v1, Kind=Gizmo failed: conversion refused for r"),
        )
    assert (await raw.get(f"{V1}/r")).status == 200  # the stored version needs no conversion
    created = await raw.post(V2, gizmo("v2", "s", 1, labels=refused))
    assert created.body == status_500(
        "conversion webhook for conv.example.com/v2, Kind=Gizmo failed: conversion refused for s"
    )


async def test_a_failure_without_a_message_names_the_status(raw: RawClient, gizmos: ConversionWebhook) -> None:
    await raw.post(V1, gizmo("v1", "g", 1))

    def failed(review: dict[str, Any]) -> dict[str, Any]:
        answer = converted(review)
        answer["response"]["result"] = {"status": "Failure"}
        return answer

    gizmos.answer = failed
    assert (await raw.get(f"{V2}/g")).body["message"] == (
        "conversion webhook for conv.example.com/v1, Kind=Gizmo failed: response.result.status was 'Failure', "
        "not 'Success'"
    )


async def test_an_unreachable_webhook_fails_with_the_dial_error(raw: RawClient, webhook: ConversionWebhook) -> None:
    port = free_port()
    await install(raw, gizmo_crd({"url": f"https://127.0.0.1:{port}/convert", "caBundle": webhook.ca_bundle}))
    assert (await raw.post(V1, gizmo("v1", "g", 1))).status == 201
    reply = await raw.get(f"{V2}/g")
    assert reply.body == status_500(
        f'conversion webhook for conv.example.com/v1, Kind=Gizmo failed: Post "https://127.0.0.1:{port}/convert'
        f'?timeout=30s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )


async def test_a_slow_webhook_runs_into_the_deadline(webhook: ConversionWebhook) -> None:
    async with (
        EmbeddedAPIServer("slow", conversion_webhook_timeout=1) as server,
        raw_client(server) as raw,
    ):
        await install(raw, gizmo_crd(webhook.client_config()))
        await raw.post(V1, gizmo("v1", "g", 1))
        webhook.hold = asyncio.Event()
        reply = await raw.get(f"{V2}/g")
        webhook.hold.set()
    assert reply.body["message"] == (
        f'conversion webhook for conv.example.com/v1, Kind=Gizmo failed: Post "{webhook.url}?timeout=1s": '
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    )


async def test_a_webhook_error_answer_is_quoted(raw: RawClient, gizmos: ConversionWebhook) -> None:
    await raw.post(V1, gizmo("v1", "g", 1))
    gizmos.answer = lambda review: web.Response(status=500, text="boom")
    assert (await raw.get(f"{V2}/g")).body["message"] == (
        'conversion webhook for conv.example.com/v1, Kind=Gizmo failed: an error on the server ("boom") has '
        "prevented the request from succeeding"
    )


def _tampered(change: Any) -> Any:
    def answer(review: dict[str, Any]) -> dict[str, Any]:
        result = converted(review)
        change(result)
        return result

    return answer


def _set_meta(key: str, value: Any) -> Any:
    return _tampered(lambda a: a["response"]["convertedObjects"][0]["metadata"].__setitem__(key, value))


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (_set_meta("name", "other"), "returned invalid object: must have the same name: g != other"),
        (
            _set_meta("namespace", "kube-system"),
            "returned invalid object: must have the same namespace: default != kube-system",
        ),
        (_set_meta("uid", "x"), "returned invalid object: must have the same UID: {uid} != x"),
        (
            _set_meta("labels", {"bad label": "x"}),
            'returned invalid metadata: metadata.labels: Invalid value: "bad label": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
            "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
        (
            _tampered(lambda a: a["response"]["convertedObjects"].append({})),
            "returned 2 objects, expected 1",
        ),
        (
            _tampered(lambda a: a["response"]["convertedObjects"][0].__setitem__("apiVersion", f"{GROUP}/v1")),
            "returned invalid object at index 0: invalid groupVersion (expected conv.example.com/v2, received "
            "conv.example.com/v1)",
        ),
        (
            _tampered(lambda a: a["response"].__setitem__("uid", "nope")),
            'failed: expected response.uid="{review}", got "nope"',
        ),
        (
            _tampered(lambda a: a.__setitem__("kind", "AdmissionReview")),
            "failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got "
            "apiextensions.k8s.io/v1, Kind=AdmissionReview",
        ),
    ],
    ids=["name", "namespace", "uid", "label", "count", "version", "review-uid", "review-kind"],
)
async def test_a_malformed_answer_fails_with_kubes_reason(
    raw: RawClient, gizmos: ConversionWebhook, answer: Any, message: str
) -> None:
    uid = (await raw.post(V1, gizmo("v1", "g", 1))).body["metadata"]["uid"]
    gizmos.answer = answer
    reply = await raw.get(f"{V2}/g")
    review_uid = gizmos.reviews[-1]["request"]["uid"]
    expected = "conversion webhook for conv.example.com/v1, Kind=Gizmo " + message.format(uid=uid, review=review_uid)
    assert reply.body == status_500(expected)


async def test_the_webhook_may_change_labels_and_annotations_and_nothing_else_of_metadata(
    raw: RawClient, gizmos: ConversionWebhook
) -> None:
    created = (await raw.post(V1, gizmo("v1", "g", 1, labels={"a": "1"}, annotations={"n": "1"}))).body

    def rewrite(answer: dict[str, Any]) -> None:
        meta = answer["response"]["convertedObjects"][0]["metadata"]
        meta.update(labels={"b": "2"}, generation=99, finalizers=["x.io/y"], creationTimestamp="2000-01-01T00:00:00Z")
        del meta["annotations"]
        answer["response"]["convertedObjects"][0]["spec"]["unknown"] = "pruned"

    gizmos.answer = _tampered(rewrite)
    read_back = (await raw.get(f"{V2}/g")).body
    meta = read_back["metadata"]
    assert meta["labels"] == {"b": "2"}
    assert "annotations" not in meta
    for key in ("generation", "creationTimestamp", "uid", "resourceVersion", "managedFields"):
        assert meta[key] == created["metadata"][key]
    assert "finalizers" not in meta
    assert read_back["spec"] == {"replicas": 1, "tier": "from-v1"}  # pruned to v2's schema


# ------------------------------------------------------------------------------------------------------------
# TLS and Service references
# ------------------------------------------------------------------------------------------------------------


async def test_the_ca_bundle_is_the_only_trust(raw: RawClient, webhook: ConversionWebhook) -> None:
    other = base64.b64encode(CertificateAuthority.generate("someone-else").cert_pem).decode()
    await install(raw, gizmo_crd({"url": webhook.url, "caBundle": other}))
    await raw.post(V1, gizmo("v1", "g", 1))
    assert (await raw.get(f"{V2}/g")).body["message"] == (
        f'conversion webhook for conv.example.com/v1, Kind=Gizmo failed: Post "{webhook.url}?timeout=30s": '
        "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    )
    assert webhook.reviews == []


async def test_an_external_name_service_reaches_the_webhook_under_its_service_name(
    raw: RawClient, webhook: ConversionWebhook
) -> None:
    reference = {"namespace": "default", "name": "conv", "path": "/convert", "port": webhook.port}
    await install(raw, gizmo_crd({"service": reference, "caBundle": webhook.ca_bundle}))
    await raw.post(V1, gizmo("v1", "g", 1))
    url = f"https://conv.default.svc:{webhook.port}/convert?timeout=30s"
    missing = await raw.get(f"{V2}/g")
    assert missing.body["message"] == (
        f'conversion webhook for conv.example.com/v1, Kind=Gizmo failed: Post "{url}": service "conv" not found'
    )
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv"}}
    external = {**service, "spec": {"type": "ExternalName", "externalName": "127.0.0.1"}}
    assert (await raw.post("/api/v1/namespaces/default/services", external)).status == 201
    assert (await raw.get(f"{V2}/g")).body["spec"]["replicas"] == 1


async def test_a_service_certificate_must_carry_the_service_name(raw: RawClient) -> None:
    hook = await ConversionWebhook().start()  # a certificate for 127.0.0.1 alone
    try:
        reference = {"namespace": "default", "name": "conv", "path": "/convert", "port": hook.port}
        await install(raw, gizmo_crd({"service": reference, "caBundle": hook.ca_bundle}))
        external = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv"}}
        external["spec"] = {"type": "ExternalName", "externalName": "127.0.0.1"}
        await raw.post("/api/v1/namespaces/default/services", external)
        await raw.post(V1, gizmo("v1", "g", 1))
        assert (
            (await raw.get(f"{V2}/g"))
            .body["message"]
            .endswith(
                "tls: failed to verify certificate: x509: certificate is not valid for any names, but wanted to match "
                "conv.default.svc"
            )
        )
    finally:
        await hook.stop()


@pytest.mark.parametrize(
    ("spec", "cause"),
    [
        ({"clusterIP": "None", "ports": [{"port": 443}]}, 'cannot route to service with ClusterIP "None"'),
        ({"ports": [{"port": 80}]}, 'no service port 443 found for service "conv"'),
    ],
    ids=["headless", "no-such-port"],
)
async def test_a_service_without_a_route_fails_as_kube_resolves_it(
    raw: RawClient, webhook: ConversionWebhook, spec: dict[str, Any], cause: str
) -> None:
    reference = {"namespace": "default", "name": "conv", "path": "/convert"}
    await install(raw, gizmo_crd({"service": reference, "caBundle": webhook.ca_bundle}))
    await raw.post(
        "/api/v1/namespaces/default/services",
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv"}, "spec": spec},
    )
    await raw.post(V1, gizmo("v1", "g", 1))
    assert (await raw.get(f"{V2}/g")).body["message"] == (
        'conversion webhook for conv.example.com/v1, Kind=Gizmo failed: Post "https://conv.default.svc:443/convert'
        f'?timeout=30s": {cause}'
    )


async def test_a_cluster_ip_is_out_of_reach(raw: RawClient, webhook: ConversionWebhook) -> None:
    reference = {"namespace": "default", "name": "conv", "path": "/convert"}
    await install(raw, gizmo_crd({"service": reference, "caBundle": webhook.ca_bundle}))
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "conv"}, "spec": {"ports": [{"port": 443}]}}
    ip = (await raw.post("/api/v1/namespaces/default/services", service)).body["spec"]["clusterIP"]
    await raw.post(V1, gizmo("v1", "g", 1))
    assert (
        (await raw.get(f"{V2}/g"))
        .body["message"]
        .endswith(
            f'": dial tcp {ip}:443: connect: network is unreachable (the embedded API server has no cluster network: '
            "point an ExternalName Service at the webhook)"
        )
    )


# ------------------------------------------------------------------------------------------------------------
# Admission webhooks registered for the other version
# ------------------------------------------------------------------------------------------------------------


async def test_an_admission_webhook_for_the_storage_version_sees_the_object_converted(
    raw: RawClient, gizmos: ConversionWebhook
) -> None:
    seen: list[dict[str, Any]] = []

    async def admit(request: web.Request) -> web.Response:
        review = await request.json()
        seen.append(review["request"])
        answer = {"uid": review["request"]["uid"], "allowed": True}
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer})

    app = web.Application()
    app.router.add_post("/validate", admit)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl_context(gizmos.ca.issue(["127.0.0.1"])))
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        hook = {
            "name": "v1.gizmos.conv.example.com",
            "clientConfig": {"url": f"https://127.0.0.1:{port}/validate", "caBundle": gizmos.ca_bundle},
            "rules": [
                {
                    "operations": ["CREATE", "UPDATE"],
                    "apiGroups": [GROUP],
                    "apiVersions": ["v1"],
                    "resources": ["gizmos"],
                }
            ],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }
        config = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration"}
        config |= {"metadata": {"name": "v1-only"}, "webhooks": [hook]}
        assert (
            await raw.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", config)
        ).status == 201
        assert (await raw.post(V2, gizmo("v2", "g", 3))).status == 201
        assert (await raw.patch(f"{V2}/g", {"spec": {"replicas": 2}}, MERGE)).status == 200
        (create_review, update_review) = seen
        assert (create_review["kind"]["version"], create_review["requestKind"]["version"]) == ("v1", "v2")
        assert create_review["object"]["spec"] == {"size": 3, "tier": "from-v2"}
        assert (update_review["object"]["spec"]["size"], update_review["oldObject"]["spec"]["size"]) == (2, 3)

        refused = await raw.post(V2, gizmo("v2", "r", 1, labels={REFUSE_LABEL: "true"}))
        cause = "conversion webhook for conv.example.com/v2, Kind=Gizmo failed: conversion refused for r"
        assert (refused.status, refused.body["reason"], refused.body["message"]) == (
            500,
            "InternalError",
            f"Internal error occurred: {cause}",
        )
    finally:
        await runner.cleanup()
