"""Informer and ObjectCache against a real embedded API server: sync, live events, resume, relist, faults."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from omectl.kube import Backoff, ClusterClient, Informer, ObjectCache, ResourceRef
from omectl.kube.informer import WATCH_SHARE_PER_TURN_S
from omectl.kube.resources import CONFIG_MAPS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES
from omectl.kube.transforms import LAST_APPLIED, metadata_and_status
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.faults.injector import RequestFault
from tests.support import LoopTurns, spin, widget, widget_crd

NS = "default"
WIDGETS = ResourceRef("example.com", "v1", "widgets", "Widget", True)
PARENT = "ome.io/inherit-from"


def configmap(
    name: str, namespace: str = NS, *, annotations: dict[str, str] | None = None, **data: str
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


class Recorder:
    """A handler and health listener that records events and wakes `eventually` waiters."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, bool]] = []  # (type, name, resourceVersion, initial)
        self.olds: list[dict[str, Any] | None] = []
        self._changed = asyncio.Event()

    def __call__(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        self.events.append((type_, obj["metadata"]["name"], obj["metadata"]["resourceVersion"], initial))
        self.olds.append(old)
        self._changed.set()

    def poke(self, *_: Any) -> None:
        self._changed.set()

    async def eventually(self, predicate: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
        """Wait, with a deadline, until `predicate` holds; re-checked on every handler or health notification."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not predicate():
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"condition not met within {timeout} s: {what or predicate}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def since(self, index: int) -> list[tuple[str, str]]:
        return [(t, n) for t, n, _, _ in self.events[index:]]


class RecordingClock:
    """Loop time, but sleeps are recorded and skipped."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await asyncio.sleep(0)


class ManualClock:
    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
async def client(server: EmbeddedAPIServer, tmp_path: Path) -> AsyncIterator[ClusterClient]:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    async with await ClusterClient.from_kubeconfig(path, name="east") as kube:
        yield kube


def new_informer(client: ClusterClient, recorder: Recorder, resource: ResourceRef = CONFIG_MAPS, **kw: Any) -> Informer:
    kw.setdefault("namespace", NS if resource.namespaced else None)
    kw.setdefault("backoff", (0.01, 0.05))
    return Informer(client, resource, handlers=[recorder], health_listeners=[recorder.poke], **kw)


@contextlib.asynccontextmanager
async def running(informer: Informer, *, wait_synced: bool = True) -> AsyncIterator[Informer]:
    informer.start()
    try:
        if wait_synced:
            await informer.wait_synced(10)
        yield informer
    finally:
        await informer.stop()


def server_state(server: EmbeddedAPIServer, namespace: str = NS) -> dict[str, str]:
    return {
        o["metadata"]["name"]: o["metadata"]["resourceVersion"]
        for o in server.api.store.items(("", "configmaps"), namespace)
    }


def cache_state(informer: Informer) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in informer.cache.list()}


def configmap_type(server: EmbeddedAPIServer) -> Any:
    rt = server.api.types.lookup("", "v1", "configmaps")
    assert rt is not None
    return rt


# --- initial list ------------------------------------------------------------------------------------------


async def test_initial_list_is_paged_fills_the_cache_and_sets_synced(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    for i in range(7):
        await client.create(CONFIG_MAPS, configmap(f"cm-{i}", v=str(i)))
    await client.create(CONFIG_MAPS, configmap("elsewhere", "kube-system"))
    recorder = Recorder()
    before = server.http.request_counts[("GET", "configmaps")]
    informer = new_informer(client, recorder, page_size=3)
    assert not informer.synced.is_set()
    async with running(informer):
        assert cache_state(informer) == server_state(server)
        assert sorted(n for _, n, _, _ in recorder.events) == [f"cm-{i}" for i in range(7)]
        assert all(t == "ADDED" and initial for t, _, _, initial in recorder.events)
        # seven objects in pages of three: three list requests (a watch may follow)
        assert server.http.request_counts[("GET", "configmaps")] - before >= 3
        cached = informer.cache.get(NS, "cm-3")
        assert cached is not None
        assert (cached["apiVersion"], cached["kind"], cached["data"]) == ("v1", "ConfigMap", {"v": "3"})
        assert informer.cache.get("kube-system", "elsewhere") is None
        assert informer.connected


async def test_informers_listing_together_apply_their_pages_in_loop_turns_of_their_own(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    namespaces = [f"team-{i}" for i in range(4)]
    for namespace in namespaces:
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for i in range(12):
            await client.create(CONFIG_MAPS, configmap(f"cm-{i}", namespace))
    applied_in: dict[int, set[str]] = {}  # loop turn -> the namespaces whose listed objects were applied in it

    def page_recorder(namespace: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None, bool], None]:
        def record(type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
            applied_in.setdefault(turns.now, set()).add(namespace)

        return record

    informers = [
        Informer(client, CONFIG_MAPS, namespace=ns, page_size=2, handlers=[page_recorder(ns)]) for ns in namespaces
    ]
    turns = LoopTurns()
    for informer in informers:
        informer.start()
    try:
        await asyncio.wait_for(asyncio.gather(*(i.wait_synced() for i in informers)), 10)
    finally:
        turns.stop()
        for informer in informers:
            await informer.stop()
    assert all(len(informer.cache) == 12 for informer in informers)
    # four informers' pages of two, answered together: never two pages applied in one turn (the loop answers
    # /healthz and everything else between them)
    assert sum(len(applied) for applied in applied_in.values()) >= 4
    assert [sorted(applied) for applied in applied_in.values() if len(applied) > 1] == []


async def test_a_burst_of_watch_events_is_handled_in_shares_of_a_loop_turn(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    namespaces = [f"burst-{i}" for i in range(8)]
    for namespace in namespaces:
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    handled_in: dict[int, list[float]] = {}  # loop turn -> the seconds each handler call in it took, in order

    def heavy_handler(type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        handled_in.setdefault(turns.now, []).append(spin(0.002))  # a handler that fans an edit out to many keys

    informers = [Informer(client, CONFIG_MAPS, namespace=ns, handlers=[heavy_handler]) for ns in namespaces]
    for informer in informers:
        informer.start()
    try:
        await asyncio.wait_for(asyncio.gather(*(i.wait_synced() for i in informers)), 10)
        turns = LoopTurns()
        rt = configmap_type(server)
        for namespace in namespaces:  # in one step of this task: the lines go out together
            for i in range(12):
                await server.api.create(rt, namespace, configmap(f"cm-{i}", namespace), WriteOptions())
        deadline = time.monotonic() + 10
        while not all(len(informer.cache) == 12 for informer in informers):
            assert time.monotonic() < deadline, "the burst never reached every cache"
            await asyncio.sleep(0.01)
        turns.stop()
    finally:
        for informer in informers:
            await informer.stop()
    # 96 events of 2 ms each for eight informers: in every turn, each event but the last began within the share
    assert sum(len(calls) for calls in handled_in.values()) == 96
    assert len(handled_in) > 1
    assert max(sum(calls[:-1]) for calls in handled_in.values()) < WATCH_SHARE_PER_TURN_S


class PageHolder:
    """A handler that, on the first event it sees, holds the informer's next list request at the server: the first
    page is then handled and the next one asked for, and the test acts while it waits (`next_page_asked`)."""

    def __init__(self, server: EmbeddedAPIServer) -> None:
        self.server = server
        self.held: RequestFault | None = None
        self.holding = asyncio.Event()
        self.synced_at_events: list[bool] = []
        self.informer: Informer | None = None

    def __call__(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        assert self.informer is not None
        self.synced_at_events.append(self.informer.synced.is_set())
        if self.held is None:
            self.held = self.server.faults.hold_next(1, method="GET", path_contains="/configmaps")
            self.holding.set()

    async def next_page_asked(self) -> None:
        await asyncio.wait_for(self.holding.wait(), 10)
        assert self.held is not None
        await asyncio.wait_for(self.held.arrived.wait(), 10)

    def release(self) -> None:
        assert self.held is not None and self.held.release is not None
        self.held.release.set()


def paged_informer(client: ClusterClient, server: EmbeddedAPIServer, recorder: Recorder) -> tuple[Informer, PageHolder]:
    holder = PageHolder(server)
    informer = new_informer(client, recorder, page_size=3)
    informer.add_handler(holder)
    holder.informer = informer
    return informer, holder


async def test_the_first_list_is_cached_and_delivered_a_page_at_a_time_and_synced_after_the_last(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    for i in range(7):
        await client.create(CONFIG_MAPS, configmap(f"cm-{i}", v=str(i)))
    recorder = Recorder()
    informer, holder = paged_informer(client, server, recorder)
    async with running(informer, wait_synced=False):
        await holder.next_page_asked()
        # the second page is asked for and not answered yet: the first is cached and its events delivered
        assert cache_state(informer) == {f"cm-{i}": server_state(server)[f"cm-{i}"] for i in range(3)}
        assert [(t, n, initial) for t, n, _, initial in recorder.events] == [
            ("ADDED", f"cm-{i}", True) for i in range(3)
        ]
        assert not informer.synced.is_set() and not informer.cache.complete
        holder.release()
        await informer.wait_synced(10)
        assert cache_state(informer) == server_state(server)
        assert [(t, n, initial) for t, n, _, initial in recorder.events] == [
            ("ADDED", f"cm-{i}", True) for i in range(7)
        ]
        assert holder.synced_at_events == [False] * 7  # synced only once the last page was in
        assert informer.cache.complete and informer.relists == 0


async def test_a_continue_token_expired_mid_list_starts_the_list_again_and_deletes_what_is_gone(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    for i in range(7):
        await client.create(CONFIG_MAPS, configmap(f"cm-{i}", v=str(i)))
    recorder = Recorder()
    informer, holder = paged_informer(client, server, recorder)
    async with running(informer, wait_synced=False):
        await holder.next_page_asked()
        # between the first page and the second: one object of the first page deleted, one changed, one created,
        # and the history compacted, so the second page's continue token has expired (a real 410)
        await client.delete(CONFIG_MAPS, "cm-0", NS)
        await client.patch(CONFIG_MAPS, "cm-1", {"data": {"v": "changed"}}, NS)
        await client.create(CONFIG_MAPS, configmap("cm-new", v="new"))
        server.api.store.compact()
        holder.release()
        await informer.wait_synced(10)
        assert cache_state(informer) == server_state(server)
        assert sorted(recorder.since(3)) == sorted(
            [("DELETED", "cm-0"), ("MODIFIED", "cm-1"), ("ADDED", "cm-new")]
            + [("ADDED", f"cm-{i}") for i in range(3, 7)]
        )
        changed = informer.cache.get(NS, "cm-1")
        assert changed is not None and changed["data"] == {"v": "changed"}
        assert holder.synced_at_events == [False] * len(recorder.events)
        assert informer.relists == 0 and informer.restarts >= 1  # the first list started again, no relist
        # and the watch runs from the new list's resourceVersion
        await client.create(CONFIG_MAPS, configmap("after"))
        await recorder.eventually(lambda: informer.cache.get(NS, "after") is not None, what="watched after the list")


async def test_a_relist_after_410_is_applied_whole_once_its_last_page_is_in(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    for i in range(7):
        await client.create(CONFIG_MAPS, configmap(f"cm-{i}", v=str(i)))
    recorder = Recorder()
    lists_answered_at_event: list[int] = []

    def lists_answered() -> int:
        records = server.request_log.records(since)
        return sum(1 for r in records if (r.verb, r.resource, r.code) == ("list", "configmaps", 200))

    async with running(new_informer(client, recorder, page_size=3)) as informer:
        start = len(recorder.events)
        since = server.request_log.total
        informer.add_handler(lambda *_: lists_answered_at_event.append(lists_answered()))
        await server.partition()  # changed while the informer cannot watch; the history compacted: a 410
        rt = configmap_type(server)
        await server.api.delete(rt, NS, "cm-0", {}, WriteOptions())
        await server.api.create(rt, NS, configmap("cm-new"), WriteOptions())
        await server.api.patch(
            rt, NS, "cm-4", "application/merge-patch+json", orjson.dumps({"data": {"v": "2"}}), WriteOptions()
        )
        server.api.store.compact()
        await server.heal()
        await recorder.eventually(lambda: cache_state(informer) == server_state(server), what="cache == server")
        assert sorted(recorder.since(start)) == [("ADDED", "cm-new"), ("DELETED", "cm-0"), ("MODIFIED", "cm-4")]
        assert informer.relists == 1
        # seven objects in pages of three: the relist's three pages were all in before its first event
        assert lists_answered_at_event[0] == lists_answered() >= 3


async def test_live_create_update_delete_reach_handlers_in_order(client: ClusterClient) -> None:
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        start = len(recorder.events)
        await client.create(CONFIG_MAPS, configmap("live", a="1"))
        await client.patch(CONFIG_MAPS, "live", {"data": {"a": "2"}}, NS)
        await client.delete(CONFIG_MAPS, "live", NS)
        await recorder.eventually(lambda: len(recorder.events) - start >= 3, what="three live events")
        assert recorder.since(start) == [("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "live")]
        assert not any(initial for *_, initial in recorder.events[start:])
        modified_old = recorder.olds[start + 1]
        assert modified_old is not None and modified_old["data"] == {"a": "1"}
        assert informer.cache.get(NS, "live") is None


async def test_managed_fields_are_stripped_from_listed_and_watched_objects(client: ClusterClient) -> None:
    apply_body = configmap("applied-before", a="1")
    applied = await client.patch(
        CONFIG_MAPS, "applied-before", apply_body, NS, patch_type="apply", field_manager="test", force=True
    )
    assert applied["metadata"]["managedFields"]
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        await client.patch(
            CONFIG_MAPS, "applied-after", configmap("applied-after"), NS, patch_type="apply", field_manager="test"
        )
        await recorder.eventually(lambda: informer.cache.get(NS, "applied-after") is not None)
        for name in ("applied-before", "applied-after"):
            cached = informer.cache.get(NS, name)
            assert cached is not None and "managedFields" not in cached["metadata"]


async def test_kubectls_last_applied_copy_is_stripped_and_other_annotations_kept(client: ClusterClient) -> None:
    annotations = {LAST_APPLIED: '{"kind":"ConfigMap"}', "team": "a"}
    await client.create(CONFIG_MAPS, configmap("listed", annotations=annotations, a="1"))
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        await client.create(CONFIG_MAPS, configmap("watched", annotations=annotations, a="1"))
        await recorder.eventually(lambda: informer.cache.get(NS, "watched") is not None)
        for name in ("listed", "watched"):
            cached = informer.cache.get(NS, name)
            assert cached is not None and cached["metadata"]["annotations"] == {"team": "a"}, name


async def test_a_metadata_and_status_transform_caches_no_spec_and_hands_handlers_what_it_caches(
    client: ClusterClient,
) -> None:
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, widget_crd())
    await client.create(WIDGETS, widget("before", size=1))
    recorder = Recorder()
    seen: list[dict[str, Any]] = []
    informer = new_informer(client, recorder, WIDGETS, transform=metadata_and_status)
    informer.add_handler(lambda _t, obj, _old, _initial: seen.append(obj))
    async with running(informer):
        created = await client.create(WIDGETS, widget("after", size=2))
        await client.patch(WIDGETS, "after", {"status": {"phase": "Ready"}}, NS, subresource="status")
        await recorder.eventually(lambda: (informer.cache.get(NS, "after") or {}).get("status") == {"phase": "Ready"})
        before, after = informer.cache.get(NS, "before"), informer.cache.get(NS, "after")
        assert before is not None and set(before) == {"apiVersion", "kind", "metadata"}, before
        assert after is not None and set(after) == {"apiVersion", "kind", "metadata", "status"}, after
        assert "managedFields" not in after["metadata"]
        assert after["metadata"]["uid"] == created["metadata"]["uid"]
        assert all("spec" not in obj for obj in seen) and seen[-1] is after


async def test_an_annotation_index_follows_updates_and_deletes(client: ClusterClient) -> None:
    await client.create(CONFIG_MAPS, configmap("a", annotations={PARENT: "p1"}))
    recorder = Recorder()
    informer = new_informer(client, recorder)
    informer.cache.add_index(
        "parent", lambda o: [v] if (v := (o["metadata"].get("annotations") or {}).get(PARENT)) else []
    )

    def children(parent: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in informer.cache.by_index("parent", parent))

    async with running(informer):
        assert children("p1") == ["a"]
        await client.create(CONFIG_MAPS, configmap("b", annotations={PARENT: "p1"}))
        await recorder.eventually(lambda: children("p1") == ["a", "b"])
        await client.patch(CONFIG_MAPS, "b", {"metadata": {"annotations": {PARENT: "p2"}}}, NS)
        await recorder.eventually(lambda: children("p2") == ["b"])
        assert children("p1") == ["a"]
        await client.delete(CONFIG_MAPS, "a", NS)
        await recorder.eventually(lambda: children("p1") == [])
        assert informer.cache.index_values("parent") == ["p2"]


async def test_a_label_selector_turns_leaving_the_selection_into_deleted(client: ClusterClient) -> None:
    recorder = Recorder()
    async with running(new_informer(client, recorder, label_selector="tier=gpu")) as informer:
        start = len(recorder.events)
        body = configmap("sel")
        body["metadata"]["labels"] = {"tier": "gpu"}
        await client.create(CONFIG_MAPS, body)
        await client.create(CONFIG_MAPS, configmap("unselected"))
        await client.patch(CONFIG_MAPS, "sel", {"metadata": {"labels": {"tier": "cpu"}}}, NS)
        await recorder.eventually(lambda: len(recorder.events) - start >= 2)
        assert recorder.since(start) == [("ADDED", "sel"), ("DELETED", "sel")]
        assert len(informer.cache) == 0


# --- reconnects, expiry and faults -------------------------------------------------------------------------


async def test_cache_converges_after_watches_are_dropped_repeatedly_while_writing(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        for i in range(30):
            await client.create(CONFIG_MAPS, configmap(f"churn-{i}", n="0"))
            if i % 3 == 1:
                await client.patch(CONFIG_MAPS, f"churn-{i - 1}", {"data": {"n": "1"}}, NS)
            if i % 5 == 4:
                await client.delete(CONFIG_MAPS, f"churn-{i - 2}", NS)
            if i % 2 == 0:
                server.api.store.close_all_watches()
        await recorder.eventually(lambda: cache_state(informer) == server_state(server), what="cache == server")
        assert informer.restarts >= 5
        assert informer.relists == 0  # every reconnect resumed from the history


async def test_after_compaction_the_informer_relists_and_reports_what_it_missed(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    for name in ("keep", "gone", "changed"):
        await client.create(CONFIG_MAPS, configmap(name, v="1"))
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        start = len(recorder.events)
        await server.partition()  # watches cut, connections refused
        rt = configmap_type(server)
        await server.api.delete(rt, NS, "gone", {}, WriteOptions())
        await server.api.create(rt, NS, configmap("new"), WriteOptions())
        await server.api.patch(
            rt, NS, "changed", "application/merge-patch+json", orjson.dumps({"data": {"v": "2"}}), WriteOptions()
        )
        server.api.store.compact()
        await server.heal()
        await recorder.eventually(lambda: cache_state(informer) == server_state(server), what="cache == server")
        assert sorted(recorder.since(start)) == [("ADDED", "new"), ("DELETED", "gone"), ("MODIFIED", "changed")]
        assert informer.relists == 1
        changed = informer.cache.get(NS, "changed")
        assert changed is not None and changed["data"] == {"v": "2"}


async def test_a_partition_then_heal_resumes_the_watch_without_a_relist(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        await server.partition()
        rt = configmap_type(server)
        await server.api.create(rt, NS, configmap("written-while-apart"), WriteOptions())
        await recorder.eventually(lambda: informer.failures >= 2, what="failed reconnects while partitioned")
        assert not informer.connected
        assert informer.last_error is not None and informer.last_error.startswith("cluster east: ")
        await server.heal()
        await recorder.eventually(lambda: cache_state(informer) == server_state(server), what="cache == server")
        await recorder.eventually(lambda: informer.connected)
        assert informer.relists == 0
        assert recorder.events[-1][:2] == ("ADDED", "written-while-apart")


async def test_http_410_on_a_watch_relists(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        server.faults.fail_next(1, 410, method="GET", path_contains="/configmaps", include_watches=True)
        server.api.store.close_all_watches()
        await recorder.eventually(lambda: informer.relists == 1, what="a relist")
        await client.create(CONFIG_MAPS, configmap("after-410"))
        await recorder.eventually(lambda: informer.cache.get(NS, "after-410") is not None)


async def test_a_server_restart_with_data_kept_is_survived(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    await client.create(CONFIG_MAPS, configmap("survivor"))
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        await client.create(CONFIG_MAPS, configmap("before-restart"))
        await recorder.eventually(lambda: informer.cache.get(NS, "before-restart") is not None, what="watch is live")
        await server.restart(keep_data=True)
        await client.create(CONFIG_MAPS, configmap("after-restart"))
        await recorder.eventually(lambda: cache_state(informer) == server_state(server), what="cache == server")
        assert informer.restarts >= 1


async def test_a_burst_of_500s_on_the_list_is_retried(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    await client.create(CONFIG_MAPS, configmap("present"))
    server.faults.fail_next(3, 500, method="GET", path_contains="/configmaps")
    recorder = Recorder()
    async with running(new_informer(client, recorder)) as informer:
        assert informer.failures == 3
        assert informer.last_error is not None and "500 InternalError" in informer.last_error
        assert informer.cache.get(NS, "present") is not None


async def test_a_429_on_the_list_waits_at_least_retry_after(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    server.faults.fail_next(1, 429, method="GET", path_contains="/configmaps", retry_after=3)
    clock = RecordingClock()
    recorder = Recorder()
    async with running(new_informer(client, recorder, clock=clock)):
        assert len(clock.sleeps) == 1
        assert clock.sleeps[0] >= 3.0


async def test_repeated_410s_relist_at_once_the_first_time_then_back_off(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    server.faults.fail_next(3, 410, method="GET", path_contains="/configmaps", include_watches=True)
    clock = RecordingClock()
    recorder = Recorder()
    async with running(new_informer(client, recorder, clock=clock)) as informer:
        assert len(clock.sleeps) == 2  # the first expiry re-lists at once; the next two wait
        assert informer.last_error is not None and "410 Expired" in informer.last_error


async def test_a_silent_stream_is_reconnected_after_the_inactivity_timeout(tmp_path: Path) -> None:
    async with EmbeddedAPIServer("quiet", bookmark_interval=60) as srv:
        path = srv.write_kubeconfig(tmp_path / "kubeconfig")
        async with await ClusterClient.from_kubeconfig(path, name="quiet") as kube:
            recorder = Recorder()
            async with running(new_informer(kube, recorder, inactivity_timeout=0.3)) as informer:
                await recorder.eventually(lambda: informer.failures >= 1, what="inactivity detected")
                assert informer.last_error is not None and "presumed dead" in informer.last_error
                await kube.create(CONFIG_MAPS, configmap("after-silence"))
                await recorder.eventually(lambda: informer.cache.get(NS, "after-silence") is not None)


async def test_a_failing_informer_does_not_affect_another(client: ClusterClient) -> None:
    broken_recorder, healthy_recorder = Recorder(), Recorder()
    widgets = new_informer(client, broken_recorder, WIDGETS)  # the CRD does not exist yet: 404 on every list
    async with running(widgets, wait_synced=False), running(new_informer(client, healthy_recorder)) as configmaps:
        await client.create(CONFIG_MAPS, configmap("unaffected"))
        await healthy_recorder.eventually(lambda: configmaps.cache.get(NS, "unaffected") is not None)
        await broken_recorder.eventually(lambda: widgets.failures >= 2, what="widget list failures")
        assert not widgets.synced.is_set()
        assert widgets.last_error is not None and "404" in widgets.last_error
        await client.create(CUSTOM_RESOURCE_DEFINITIONS, widget_crd())
        await client.create(WIDGETS, widget("w1"))
        await widgets.wait_synced(10)
        await broken_recorder.eventually(lambda: widgets.cache.get(NS, "w1") is not None)
        assert configmaps.connected


async def test_an_optional_kind_not_served_is_synced_and_empty_until_its_crd_is_installed(
    client: ClusterClient,
) -> None:
    recorder = Recorder()
    widgets = new_informer(client, recorder, WIDGETS, optional=True)
    async with running(widgets):  # synced although every list is a 404
        assert not widgets.served and len(widgets.cache) == 0
        assert widgets.failures == 0 and widgets.connected
        await client.create(CUSTOM_RESOURCE_DEFINITIONS, widget_crd())
        await client.create(WIDGETS, widget("w1"))
        await recorder.eventually(lambda: widgets.cache.get(NS, "w1") is not None, what="w1 after the CRD appears")
        assert widgets.served
        assert recorder.since(0) == [("ADDED", "w1")]


async def test_a_handler_that_raises_does_not_stop_delivery(client: ClusterClient) -> None:
    def explode(*_: Any) -> None:
        raise RuntimeError("handler bug")

    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=NS, handlers=[explode, recorder])
    async with running(informer):
        await client.create(CONFIG_MAPS, configmap("one"))
        await client.create(CONFIG_MAPS, configmap("two"))
        await recorder.eventually(lambda: [n for _, n, _, _ in recorder.events] == ["one", "two"])
        assert informer.handler_errors == 2


async def test_stop_cancels_the_informer_and_marks_it_disconnected(client: ClusterClient) -> None:
    informer = new_informer(client, Recorder())
    task = informer.start()
    await informer.wait_synced(10)
    await informer.stop()
    assert task.cancelled()
    assert not informer.connected


# --- backoff and cache units -------------------------------------------------------------------------------


def test_backoff_doubles_to_the_cap_and_resets_after_a_healthy_period() -> None:
    clock = ManualClock()
    backoff = Backoff(0.8, 30.0, clock=clock, rng=lambda: 0.0)
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.now += 121
    assert backoff.next_delay() == 0.8


def test_backoff_jitter_stays_between_the_base_and_twice_it_and_under_the_cap() -> None:
    backoff = Backoff(0.8, 30.0, clock=ManualClock(), rng=lambda: 0.999)
    delays = [backoff.next_delay() for _ in range(8)]
    assert 0.8 < delays[0] < 1.6
    assert max(delays) == 30.0


def test_cache_indexes_track_upsert_and_delete() -> None:
    cache = ObjectCache()
    cache.add_index("color", lambda o: [o["spec"]["color"]])
    cache.upsert({"metadata": {"name": "x", "namespace": "a", "managedFields": [{}]}, "spec": {"color": "red"}})
    cache.upsert({"metadata": {"name": "y", "namespace": "b"}, "spec": {"color": "red"}})
    assert sorted(o["metadata"]["name"] for o in cache.by_index("color", "red")) == ["x", "y"]
    old = cache.upsert({"metadata": {"name": "x", "namespace": "a"}, "spec": {"color": "blue"}})
    assert old is not None and "managedFields" not in old["metadata"]
    assert [o["metadata"]["name"] for o in cache.by_index("color", "red")] == ["y"]
    assert [o["metadata"]["name"] for o in cache.list("a")] == ["x"]
    cache.delete("b", "y")
    assert cache.by_index("color", "red") == []
    assert cache.index_values("color") == ["blue"]
    assert len(cache) == 1
    cache.add_index("late", lambda o: [o["metadata"]["namespace"]])
    assert [o["metadata"]["name"] for o in cache.by_index("late", "a")] == ["x"]
    with pytest.raises(KeyError, match="no index named 'missing'"):
        cache.by_index("missing", "x")


def test_cache_reads_hand_out_the_stored_dict() -> None:
    cache = ObjectCache()
    obj = {"metadata": {"name": "n"}}
    cache.upsert(obj)
    assert cache.get(None, "n") is obj
    assert cache.get("", "n") is obj


def test_cache_lists_one_namespace_through_upserts_moves_and_deletes() -> None:
    cache = ObjectCache()
    for namespace, name in (("a", "x"), ("a", "y"), ("b", "x"), ("", "cluster-wide")):
        cache.upsert(configmap(name, namespace))
    assert sorted(o["metadata"]["name"] for o in cache.list("a")) == ["x", "y"]
    assert [o["metadata"]["name"] for o in cache.list("b")] == ["x"]
    cache.upsert(configmap("y", "a", data="new"))
    assert sorted(o["metadata"]["name"] for o in cache.list("a")) == ["x", "y"]
    cache.delete("a", "x")
    cache.delete("b", "x")
    assert [o["metadata"]["name"] for o in cache.list("a")] == ["y"]
    assert cache.list("b") == [] and cache.list("missing") == []
    assert len(cache.list()) == 2
