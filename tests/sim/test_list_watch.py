"""Conformance: list selectors and paging, watch semantics (checklist items 14-16)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import watch as k8s_watch
from kubernetes_asyncio.client.exceptions import ApiException

from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.apiserver.store import HISTORY_MIN_EVENTS, HISTORY_SECONDS
from tests.support import RawClient, widget, widget_crd

CM = "/api/v1/namespaces/default/configmaps"
W = "/apis/example.com/v1/namespaces/default/widgets"
MERGE = "application/merge-patch+json"


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}}


async def names(raw: RawClient, path: str) -> list[str]:
    reply = await raw.get(path)
    assert reply.status == 200, reply.body
    return [i["metadata"]["name"] for i in reply.body["items"]]


class WatchStream:
    """Reads a raw watch stream line by line with a deadline."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp

    async def next(self, timeout: float = 5.0) -> dict[str, Any]:
        line = await asyncio.wait_for(self.resp.content.readline(), timeout)
        assert line, "watch stream ended"
        return orjson.loads(line)

    async def until_eof(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        events = []
        while True:
            line = await asyncio.wait_for(self.resp.content.readline(), timeout)
            if not line:
                return events
            events.append(orjson.loads(line))


async def open_watch(raw: RawClient, path: str) -> tuple[aiohttp.ClientResponse, WatchStream]:
    resp = await raw.session.get(raw.base + path, headers=raw.headers)
    assert resp.status == 200
    return resp, WatchStream(resp)


async def test_label_selector_operators(raw: RawClient) -> None:
    await raw.post(CM, configmap("a", app="web", tier="front"))
    await raw.post(CM, configmap("b", app="db"))
    await raw.post(CM, configmap("c"))
    assert await names(raw, CM + "?labelSelector=app%3Dweb") == ["a"]
    assert await names(raw, CM + "?labelSelector=app%3D%3Dweb") == ["a"]
    assert await names(raw, CM + "?labelSelector=app!%3Dweb") == ["b", "c"]  # != matches absent keys
    assert await names(raw, CM + "?labelSelector=app") == ["a", "b"]
    assert await names(raw, CM + "?labelSelector=!app") == ["c"]
    assert await names(raw, CM + "?labelSelector=app%20in%20(web,db)") == ["a", "b"]
    assert await names(raw, CM + "?labelSelector=app%20notin%20(web)") == ["b", "c"]
    assert await names(raw, CM + "?labelSelector=app%3Dweb,tier%3Dfront") == ["a"]


async def test_bad_selectors_are_400(raw: RawClient) -> None:
    bad_label = await raw.get(CM + "?labelSelector=a%20in%20b")
    assert bad_label.status == 400
    assert bad_label.body["reason"] == "BadRequest"
    bad_field = await raw.get(CM + "?fieldSelector=spec.x%3D1")
    assert bad_field.status == 400
    assert bad_field.body["message"] == "field label not supported: spec.x"


async def test_field_selectors_name_and_namespace(raw: RawClient) -> None:
    await raw.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    await raw.post(CM, configmap("a"))
    await raw.post(CM, configmap("b"))
    await raw.post("/api/v1/namespaces/other/configmaps", configmap("a"))
    assert await names(raw, CM + "?fieldSelector=metadata.name%3Da") == ["a"]
    assert await names(raw, CM + "?fieldSelector=metadata.name!%3Da") == ["b"]
    every = await raw.get("/api/v1/configmaps?fieldSelector=metadata.namespace%3Dother")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in every.body["items"]] == [("other", "a")]


async def test_limit_and_continue_page_through_in_order(raw: RawClient) -> None:
    for i in range(7):
        await raw.post(CM, configmap(f"cm-{i}"))
    seen: list[str] = []
    path = CM + "?limit=3"
    pages = 0
    while True:
        reply = await raw.get(path)
        pages += 1
        seen += [i["metadata"]["name"] for i in reply.body["items"]]
        token = reply.body["metadata"].get("continue")
        if not token:
            break
        assert reply.body["metadata"]["remainingItemCount"] == 7 - len(seen)
        path = CM + f"?limit=3&continue={token}"
    assert pages == 3
    assert seen == [f"cm-{i}" for i in range(7)]


async def test_list_kind_and_empty_items(raw: RawClient) -> None:
    reply = await raw.get(CM)
    assert reply.body["kind"] == "ConfigMapList"
    assert reply.body["apiVersion"] == "v1"
    assert reply.body["items"] == []


async def test_watch_without_rv_sends_added_snapshot_then_live(raw: RawClient) -> None:
    await raw.post(CM, configmap("a"))
    resp, stream = await open_watch(raw, CM + "?watch=true")
    try:
        first = await stream.next()
        assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "a")
        await raw.post(CM, configmap("b"))
        second = await stream.next()
        assert (second["type"], second["object"]["metadata"]["name"]) == ("ADDED", "b")
    finally:
        resp.close()


async def test_watch_resumes_after_a_resource_version(raw: RawClient) -> None:
    first = (await raw.post(CM, configmap("a"))).body
    await raw.patch(CM + "/a", {"data": {"k": "v"}}, MERGE)
    await raw.delete(CM + "/a")
    resp, stream = await open_watch(raw, CM + f"?watch=1&resourceVersion={first['metadata']['resourceVersion']}")
    try:
        modified = await stream.next()
        deleted = await stream.next()
        assert modified["type"] == "MODIFIED"
        assert modified["object"]["data"] == {"k": "v"}
        assert deleted["type"] == "DELETED"
        assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(
            modified["object"]["metadata"]["resourceVersion"]
        )
    finally:
        resp.close()


async def test_compacted_history_gives_one_error_410_event(raw: RawClient, server: EmbeddedAPIServer) -> None:
    old = (await raw.post(CM, configmap("a"))).body["metadata"]["resourceVersion"]
    await raw.post(CM, configmap("b"))
    server.api.store.compact()
    _resp, stream = await open_watch(raw, CM + f"?watch=true&resourceVersion={old}")
    events = await stream.until_eof()
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith(f"too old resource version: {old} (")


async def test_history_keeps_the_last_75_seconds_of_a_kind_and_at_least_100_events(
    raw: RawClient, server: EmbeddedAPIServer
) -> None:
    # As the kube-apiserver's watch cache: a resume from an event older than that is 410 Expired, then a re-list.
    store = server.api.store
    store.compact()  # what the server made at its start is out of the way
    start = store.clock()
    now = [start]
    store.clock = lambda: now[0]
    created = [(await raw.post(CM, configmap(f"old-{i}"))).body for i in range(150)]
    now[0] = start + 60
    fresh = [(await raw.post(CM, configmap(f"fresh-{i}"))).body for i in range(120)]
    now[0] = start + 1.5 * HISTORY_SECONDS - 1  # everything kept: the oldest is not yet half as old again
    await raw.post(CM, configmap("later"))
    assert len(store.events_since(("", "configmaps"), 0)) == 271
    now[0] = start + 1.5 * HISTORY_SECONDS + 1  # the first 150 are stale; the fresh ones, 60 s younger, all stay
    await raw.post(CM, configmap("last"))
    kept = store.events_since(("", "configmaps"), 0)
    assert [e.obj["metadata"]["name"] for e in kept[:2]] == ["fresh-0", "fresh-1"] and len(kept) == 122

    old_rv = created[-2]["metadata"]["resourceVersion"]  # the last stale one is the floor: resumable
    _resp, stream = await open_watch(raw, CM + f"?watch=true&resourceVersion={old_rv}")
    expired = await stream.until_eof()
    assert [e["type"] for e in expired] == ["ERROR"] and expired[0]["object"]["code"] == 410
    resp, stream = await open_watch(raw, CM + f"?watch=true&resourceVersion={fresh[0]['metadata']['resourceVersion']}")
    try:
        assert (await stream.next())["object"]["metadata"]["name"] == "fresh-1"
    finally:
        resp.close()

    now[0] += 10 * HISTORY_SECONDS  # a quiet while, then one write: the newest 100 events stay whatever their age
    await raw.post(CM, configmap("after-a-while"))
    assert len(store.events_since(("", "configmaps"), 0)) == HISTORY_MIN_EVENTS


async def test_kubernetes_asyncio_raises_410_on_an_expired_watch(
    kube: k8s_client.ApiClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    old = (await raw.post(CM, configmap("a"))).body["metadata"]["resourceVersion"]
    await raw.post(CM, configmap("b"))
    server.api.store.compact()
    core = k8s_client.CoreV1Api(kube)
    watcher = k8s_watch.Watch()
    with pytest.raises(ApiException) as info:
        async for _ in watcher.stream(
            core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=5
        ):
            pass
    assert info.value.status == 410


async def test_bookmarks_only_when_asked(raw: RawClient, server: EmbeddedAPIServer) -> None:
    # server fixture uses a 0.2 s bookmark interval
    resp, stream = await open_watch(raw, CM + "?watch=True&allowWatchBookmarks=True&resourceVersion=1")
    try:
        event = await stream.next()
        assert event["type"] == "BOOKMARK"
        assert event["object"]["metadata"]["resourceVersion"] == str(server.api.store.rv)
        assert event["object"]["kind"] == "ConfigMap"
    finally:
        resp.close()
    resp, stream = await open_watch(raw, CM + "?watch=true&timeoutSeconds=1&resourceVersion=1")
    assert [e["type"] for e in await stream.until_eof()] == []  # no bookmark, clean EOF at the timeout


async def test_timeout_seconds_ends_the_stream_cleanly(raw: RawClient) -> None:
    _resp, stream = await open_watch(raw, CM + "?watch=true&timeoutSeconds=1")
    assert await stream.until_eof(timeout=5) == []


async def test_selector_transitions_become_added_and_deleted(raw: RawClient) -> None:
    await raw.post(CM, configmap("a", app="web"))
    rv = (await raw.get(CM)).body["metadata"]["resourceVersion"]
    resp, stream = await open_watch(raw, CM + f"?watch=true&labelSelector=app%3Dweb&resourceVersion={rv}")
    try:
        await raw.patch(CM + "/a", {"metadata": {"labels": {"app": "db"}}}, MERGE)
        left = await stream.next()
        assert left["type"] == "DELETED"
        await raw.patch(CM + "/a", {"metadata": {"labels": {"app": "web"}}}, MERGE)
        back = await stream.next()
        assert back["type"] == "ADDED"
        await raw.patch(CM + "/a", {"data": {"x": "1"}}, MERGE)
        changed = await stream.next()
        assert changed["type"] == "MODIFIED"
    finally:
        resp.close()


async def test_dropped_watches_end_and_resume_without_loss(raw: RawClient, server: EmbeddedAPIServer) -> None:
    rv = (await raw.get(CM)).body["metadata"]["resourceVersion"]
    _resp, stream = await open_watch(raw, CM + f"?watch=true&resourceVersion={rv}")
    await raw.post(CM, configmap("a"))
    seen = await stream.next()
    server.api.store.close_all_watches()
    assert await stream.until_eof() == []
    await raw.post(CM, configmap("b"))
    resp2, stream2 = await open_watch(
        raw, CM + f"?watch=true&resourceVersion={seen['object']['metadata']['resourceVersion']}"
    )
    try:
        resumed = await stream2.next()
        assert resumed["object"]["metadata"]["name"] == "b"
    finally:
        resp2.close()


async def test_watch_of_a_custom_resource_through_kubernetes_asyncio(
    kube: k8s_client.ApiClient, raw: RawClient
) -> None:
    await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
    api = k8s_client.CustomObjectsApi(kube)
    await raw.post(W, widget("w1"))
    watcher = k8s_watch.Watch()
    got: list[tuple[str, str, int]] = []
    async for event in watcher.stream(
        api.list_namespaced_custom_object, "example.com", "v1", "default", "widgets", timeout_seconds=10
    ):
        obj = event["object"]
        got.append((event["type"], obj["metadata"]["name"], obj["spec"]["size"]))
        if len(got) == 1:
            await raw.patch(W + "/w1", {"spec": {"size": 2}}, MERGE)
        else:
            watcher.stop()
    assert got == [("ADDED", "w1", 1), ("MODIFIED", "w1", 2)]
