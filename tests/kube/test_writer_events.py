"""Status writes with conflict retry and minimal requests, and correlated Events, against an embedded API server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.events import EventRecorder
from omectl.kube.resources import ResourceRef
from omectl.kube.writer import (
    StatusWrite,
    apply_merge_patch,
    cache_behind_own_write,
    patch_status_merge,
    write_status,
)
from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.support import RawClient, widget, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WIDGETS = ResourceRef("example.com", "v1", "widgets", "Widget", True)
EVENTS_IN_DEFAULT = "/api/v1/namespaces/default/events"


@pytest.fixture
async def client(server: EmbeddedAPIServer, raw: RawClient, tmp_path: Path) -> AsyncIterator[ClusterClient]:
    created = await raw.post(CRDS, widget_crd())
    assert created.status == 201, created.body
    await server.controllers.wait_idle()
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    async with await ClusterClient.from_kubeconfig(path, name="test") as kube:
        yield kube


async def create_widget(raw: RawClient, name: str, **status: Any) -> dict[str, Any]:
    reply = await raw.post(WIDGETS.path("default"), widget(name))
    assert reply.status == 201, reply.body
    if status:
        reply = await raw.put(WIDGETS.path("default", name, "status"), {**reply.body, "status": status})
        assert reply.status == 200, reply.body
    body: dict[str, Any] = reply.body
    return body


def puts(server: EmbeddedAPIServer) -> int:
    return server.http.request_counts[("PUT", "widgets")]


# --- write_status ----------------------------------------------------------------------------------------------


async def test_write_status_replaces_the_status_and_keeps_the_spec(client: ClusterClient, raw: RawClient) -> None:
    before = await create_widget(raw, "w1")
    written = await write_status(client, WIDGETS, "default", "w1", lambda live: {"phase": "Ready"})
    assert written is StatusWrite.WRITTEN
    live = (await raw.get(WIDGETS.path("default", "w1"))).body
    assert live["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    assert live["status"] == {"phase": "Ready"}
    assert live["spec"] == before["spec"]


async def test_write_status_from_the_cache_writes_without_decoding_any_answer(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached = await create_widget(raw, "w1")
    decoded: list[str] = []
    request = ClusterClient.request

    async def counted(self: ClusterClient, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        decoded.append(f"{method} {path}")
        return await request(self, method, path, **kwargs)

    monkeypatch.setattr(ClusterClient, "request", counted)
    puts_before = puts(server)
    written = await write_status(client, WIDGETS, "default", "w1", lambda live: {"phase": "Ready"}, cached=cached)
    assert written is StatusWrite.WRITTEN
    assert decoded == []  # the controllers' path: no GET, and the PUT's answer left undecoded
    assert puts(server) == puts_before + 1
    assert (await raw.get(WIDGETS.path("default", "w1"))).body["status"] == {"phase": "Ready"}


async def test_write_status_retries_an_injected_conflict(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    await create_widget(raw, "w1")
    server.faults.fail_next(1, 409, method="PUT", path_contains="/status")
    calls: list[str] = []

    def mutate(live: dict[str, Any]) -> dict[str, Any]:
        calls.append(live["metadata"]["resourceVersion"])
        return {"phase": "Ready"}

    written = await write_status(client, WIDGETS, "default", "w1", mutate)
    assert written is StatusWrite.WRITTEN
    assert len(calls) == 2
    assert server.faults.injected == 1
    assert (await raw.get(WIDGETS.path("default", "w1"))).body["status"] == {"phase": "Ready"}


async def test_write_status_rereads_after_a_concurrent_writer_moves_the_resource_version(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    await create_widget(raw, "w1")
    # The first status PUT is held at the server, so the spec edit below commits before it with a newer RV.
    server.faults.delay_next(1, 0.3, method="PUT", path_contains="/status")
    first_read = asyncio.Event()
    seen_sizes: list[int] = []

    def mutate(live: dict[str, Any]) -> dict[str, Any]:
        seen_sizes.append(live["spec"]["size"])
        first_read.set()
        return {"phase": f"size-{live['spec']['size']}"}

    writing = asyncio.ensure_future(write_status(client, WIDGETS, "default", "w1", mutate))
    await asyncio.wait_for(first_read.wait(), 5.0)
    live = (await raw.get(WIDGETS.path("default", "w1"))).body
    edited = await raw.put(WIDGETS.path("default", "w1"), {**live, "spec": {"size": 7}})
    assert edited.status == 200
    written = await asyncio.wait_for(writing, 5.0)
    assert seen_sizes == [1, 7]
    assert written is StatusWrite.WRITTEN
    live = (await raw.get(WIDGETS.path("default", "w1"))).body
    assert live["status"] == {"phase": "size-7"}
    assert live["spec"]["size"] == 7


async def test_write_status_raises_the_conflict_after_max_retries(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    await create_widget(raw, "w1")
    server.faults.fail_next(10, 409, method="PUT", path_contains="/status")
    calls = 0

    def mutate(live: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"phase": "Ready"}

    with pytest.raises(KubeAPIError) as caught:
        await write_status(client, WIDGETS, "default", "w1", mutate, max_retries=2)
    assert caught.value.status == 409
    assert calls == 3
    assert server.faults.injected == 3


async def test_write_status_with_no_change_sends_no_write(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    before = await create_widget(raw, "w1", phase="Ready")
    puts_before = puts(server)
    unchanged = await write_status(client, WIDGETS, "default", "w1", lambda live: None)
    same = await write_status(client, WIDGETS, "default", "w1", lambda live: {"phase": "Ready"})

    def edit_in_place(live: dict[str, Any]) -> dict[str, Any]:
        live["status"]["phase"] = "Ready"  # mutating the live copy and returning it is allowed
        status: dict[str, Any] = live["status"]
        return status

    in_place = await write_status(client, WIDGETS, "default", "w1", edit_in_place)
    assert puts(server) == puts_before
    assert [unchanged, same, in_place] == [StatusWrite.UNCHANGED] * 3
    live = (await raw.get(WIDGETS.path("default", "w1"))).body
    assert live["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


async def test_write_status_notices_an_in_place_edit_that_changes_the_status(
    client: ClusterClient, raw: RawClient
) -> None:
    await create_widget(raw, "w1", phase="Pending")

    def edit_in_place(live: dict[str, Any]) -> dict[str, Any]:
        live["status"]["phase"] = "Ready"
        status: dict[str, Any] = live["status"]
        return status

    written = await write_status(client, WIDGETS, "default", "w1", edit_in_place)
    assert written is StatusWrite.WRITTEN
    assert (await raw.get(WIDGETS.path("default", "w1"))).body["status"] == {"phase": "Ready"}


async def test_write_status_does_not_trust_a_cached_copy_that_predates_its_own_last_write(
    client: ClusterClient, raw: RawClient
) -> None:
    """A reconcile that runs again before the watch delivers its own write must not find "nothing to write" in the
    older copy: it wanted the status back as it was, and the live one is what it wrote last."""
    stale = await create_widget(raw, "w1", phase="Ready")
    assert not cache_behind_own_write(client, WIDGETS, "default", "w1", stale)
    first = await write_status(client, WIDGETS, "default", "w1", lambda live: {"phase": "Progressing"}, cached=stale)
    assert first is StatusWrite.WRITTEN
    assert cache_behind_own_write(client, WIDGETS, "default", "w1", stale)
    # the informer has not delivered the write: its copy still says Ready, which is what is wanted again
    again = await write_status(client, WIDGETS, "default", "w1", lambda live: {"phase": "Ready"}, cached=stale)
    assert again is StatusWrite.WRITTEN
    fresh = (await raw.get(WIDGETS.path("default", "w1"))).body
    assert fresh["status"] == {"phase": "Ready"}
    # a copy that shows the write is trusted again, and the remembered write forgotten
    assert not cache_behind_own_write(client, WIDGETS, "default", "w1", fresh)
    assert WIDGETS.path("default", "w1") not in client.status_written_over
    unchanged = write_status(client, WIDGETS, "default", "w1", lambda live: {"phase": "Ready"}, cached=fresh)
    assert await unchanged is StatusWrite.UNCHANGED


async def test_write_status_of_a_missing_object_says_absent_without_calling_mutate(client: ClusterClient) -> None:
    calls: list[dict[str, Any]] = []

    def mutate(live: dict[str, Any]) -> dict[str, Any]:
        calls.append(live)
        return {"phase": "Ready"}

    assert await write_status(client, WIDGETS, "default", "absent", mutate) is StatusWrite.ABSENT
    assert calls == []


async def test_patch_status_merge_merges_into_the_live_status(client: ClusterClient, raw: RawClient) -> None:
    await create_widget(raw, "w1", phase="Pending", conditions=[{"type": "Ready", "status": "False"}])
    patched = await patch_status_merge(client, WIDGETS, "default", "w1", {"phase": "Ready"})
    assert patched is not None
    assert patched["status"] == {"phase": "Ready", "conditions": [{"type": "Ready", "status": "False"}]}
    assert await patch_status_merge(client, WIDGETS, "default", "absent", {"phase": "Ready"}) is None


async def test_patch_status_merge_against_an_equal_live_copy_sends_nothing(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    live = await create_widget(raw, "w1", phase="Ready")
    patches_before = server.http.request_counts[("PATCH", "widgets")]
    result = await patch_status_merge(client, WIDGETS, "default", "w1", {"phase": "Ready"}, live=live)
    assert result is live
    assert server.http.request_counts[("PATCH", "widgets")] == patches_before


async def test_patch_status_merge_with_a_stale_resource_version_conflicts(
    client: ClusterClient, raw: RawClient
) -> None:
    live = await create_widget(raw, "w1", phase="Pending")
    await patch_status_merge(client, WIDGETS, "default", "w1", {"phase": "Moved"})
    with pytest.raises(KubeAPIError) as caught:
        await patch_status_merge(
            client, WIDGETS, "default", "w1", {"phase": "Ready"}, resource_version=live["metadata"]["resourceVersion"]
        )
    assert caught.value.status == 409


def test_apply_merge_patch_follows_rfc_7386() -> None:
    target = {"a": {"b": 1, "c": 2}, "d": [1, 2], "e": "x"}
    patched = apply_merge_patch(target, {"a": {"b": None, "f": 3}, "d": [3], "e": None})
    assert patched == {"a": {"c": 2, "f": 3}, "d": [3]}
    assert target == {"a": {"b": 1, "c": 2}, "d": [1, 2], "e": "x"}


# --- EventRecorder ---------------------------------------------------------------------------------------------


class SteppingClock:
    """Wall-clock stand-in: each call is one minute after the previous one."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.moment += timedelta(minutes=1)
        return self.moment


@pytest.fixture
def clock() -> Iterator[SteppingClock]:
    yield SteppingClock()


async def events_about(raw: RawClient, name: str, namespace: str = "default") -> list[dict[str, Any]]:
    reply = await raw.get(f"/api/v1/namespaces/{namespace}/events?fieldSelector=involvedObject.name%3D{name}")
    assert reply.status == 200, reply.body
    items: list[dict[str, Any]] = reply.body["items"]
    return items


async def test_repeated_event_increments_count_on_one_event(
    client: ClusterClient, raw: RawClient, clock: SteppingClock
) -> None:
    obj = await create_widget(raw, "w1")
    recorder = EventRecorder(client, component="omectl", host="node-1", now=clock)
    for _ in range(3):
        stored = await recorder.record(obj, "Warning", "ParentNotFound", "parent base-rt not found")
        assert stored is not None
    events = await events_about(raw, "w1")
    assert len(events) == 1
    event = events[0]
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-05-01T12:01:00Z"
    assert event["lastTimestamp"] == "2026-05-01T12:03:00Z"
    assert event["type"] == "Warning"
    assert event["reason"] == "ParentNotFound"
    assert event["message"] == "parent base-rt not found"
    assert event["metadata"]["namespace"] == "default"
    assert event["involvedObject"] == {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "name": "w1",
        "namespace": "default",
        "uid": obj["metadata"]["uid"],
        "resourceVersion": obj["metadata"]["resourceVersion"],
    }
    assert event["source"] == {"component": "omectl", "host": "node-1"}
    assert event["reportingComponent"] == "omectl"
    assert event["reportingInstance"] == "node-1"


async def test_different_messages_and_reasons_make_different_events(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    obj = await create_widget(raw, "w1")
    recorder = EventRecorder(client)
    await recorder.record(obj, "Warning", "ParentNotFound", "parent a not found")
    await recorder.record(obj, "Warning", "ParentNotFound", "parent b not found")
    await recorder.record(obj, "Warning", "CycleDetected", "parent a not found")
    await recorder.record(obj, "Warning", "ParentNotFound", "parent a not found")
    events = await events_about(raw, "w1")
    counts = sorted((e["reason"], e["message"], e["count"]) for e in events)
    assert counts == [
        ("CycleDetected", "parent a not found", 1),
        ("ParentNotFound", "parent a not found", 2),
        ("ParentNotFound", "parent b not found", 1),
    ]
    assert server.http.request_counts[("POST", "events")] == 3
    assert server.http.request_counts[("PATCH", "events")] == 1


async def test_field_selector_returns_only_events_about_the_named_object(client: ClusterClient, raw: RawClient) -> None:
    first, second = await create_widget(raw, "w1"), await create_widget(raw, "w2")
    recorder = EventRecorder(client)
    await recorder.record(first, "Normal", "Resolved", "chain [w1]")
    await recorder.record(second, "Normal", "Resolved", "chain [w2]")
    assert [e["message"] for e in await events_about(raw, "w1")] == ["chain [w1]"]
    assert [e["message"] for e in await events_about(raw, "w2")] == ["chain [w2]"]


async def test_events_about_cluster_scoped_objects_go_to_default(client: ClusterClient, raw: RawClient) -> None:
    namespace = (await raw.get("/api/v1/namespaces/kube-system")).body
    recorder = EventRecorder(client)
    stored = await recorder.record(namespace, "Normal", "Seen", "looked at it", api_version="v1", kind="Namespace")
    assert stored is not None
    events = await events_about(raw, "kube-system")
    assert len(events) == 1
    assert events[0]["metadata"]["namespace"] == "default"
    assert "namespace" not in events[0]["involvedObject"]
    assert events[0]["involvedObject"]["kind"] == "Namespace"


async def test_a_deleted_event_is_created_again_keeping_its_count(client: ClusterClient, raw: RawClient) -> None:
    obj = await create_widget(raw, "w1")
    recorder = EventRecorder(client)
    first = await recorder.record(obj, "Warning", "Broken", "chain broke")
    assert first is not None
    await recorder.record(obj, "Warning", "Broken", "chain broke")
    deleted = await raw.delete(f"{EVENTS_IN_DEFAULT}/{first['metadata']['name']}")
    assert deleted.status == 200
    await recorder.record(obj, "Warning", "Broken", "chain broke")
    events = await events_about(raw, "w1")
    assert [e["count"] for e in events] == [3]
    assert events[0]["metadata"]["name"] != first["metadata"]["name"]


async def test_a_failed_event_write_is_not_raised(
    client: ClusterClient, raw: RawClient, server: EmbeddedAPIServer
) -> None:
    obj = await create_widget(raw, "w1")
    recorder = EventRecorder(client)
    server.faults.fail_next(1, 500, method="POST", path_contains="/events")
    assert await recorder.record(obj, "Warning", "Broken", "chain broke") is None
    assert await recorder.record(obj, "Warning", "Broken", "chain broke") is not None
    assert [e["count"] for e in await events_about(raw, "w1")] == [1]


async def test_recorder_remembers_a_bounded_number_of_occurrences(client: ClusterClient, raw: RawClient) -> None:
    obj = await create_widget(raw, "w1")
    recorder = EventRecorder(client, max_keys=2)
    for message in ("one", "two", "three"):
        await recorder.record(obj, "Normal", "Step", message)
    assert len(recorder) == 2
    await recorder.record(obj, "Normal", "Step", "one")  # forgotten, so a new Event
    await recorder.record(obj, "Normal", "Step", "three")  # remembered, so a repeat
    counts = sorted((e["message"], e["count"]) for e in await events_about(raw, "w1"))
    assert counts == [("one", 1), ("one", 1), ("three", 2), ("two", 1)]


async def test_concurrent_repeats_create_one_event(client: ClusterClient, raw: RawClient) -> None:
    obj = await create_widget(raw, "w1")
    recorder = EventRecorder(client)
    await asyncio.gather(*(recorder.record(obj, "Warning", "Broken", "chain broke") for _ in range(5)))
    assert [e["count"] for e in await events_about(raw, "w1")] == [5]


async def test_unknown_event_type_is_refused(client: ClusterClient) -> None:
    recorder = EventRecorder(client)
    with pytest.raises(ValueError, match="Normal or Warning"):
        await recorder.record({"metadata": {"name": "x"}}, "Error", "Bad", "bad")  # type: ignore[arg-type]
