"""The embedded server's fast paths give the same answers as the general paths they shortcut."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omectl.sim.apiserver import metadata, ssa
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.apiserver.store import ADDED, DELETED, MODIFIED, Store
from tests.support import RawClient

NOW = "2026-01-02T03:04:05Z"
EARLIER = "2025-06-07T08:09:10Z"
MERGE_PATCH = "application/merge-patch+json"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"

# --------------------------------------------------------------------------------------------- create path

_keys = st.sampled_from(["a", "b", "image", "name", "containers", "env", "ports", "conditions", "x.y"])
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "v", "w"]))


def _named_items(children: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    """Items of a list keyed by `name`, with duplicate and missing keys now and then."""
    item = st.fixed_dictionaries({"name": st.sampled_from(["c1", "c2", "c3"])}, optional={"image": children})
    return st.lists(st.one_of(item, st.just({}), _scalars), max_size=4)


_json = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(_keys, children, max_size=4),
        st.builds(lambda items: {"containers": items}, _named_items(children)),
    ),
    max_leaves=12,
)

_metadata = st.fixed_dictionaries(
    {"name": st.just("obj")},
    optional={
        "namespace": st.just("default"),
        "labels": st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["x", "y"]), max_size=2),
        "finalizers": st.lists(st.sampled_from(["f/a", "f/b"]), max_size=3),
        "resourceVersion": st.just("7"),
    },
)

_objects = st.fixed_dictionaries(
    {"apiVersion": st.just("v1"), "kind": st.just("Thing"), "metadata": _metadata},
    optional={"spec": _json, "data": st.dictionaries(_keys, _scalars, max_size=3), "status": _json},
)

_other_entry = st.builds(
    lambda fields: {
        "manager": "other",
        "operation": "Update",
        "apiVersion": "v1",
        "time": EARLIER,
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    },
    st.sampled_from(
        [{"f:spec": {}}, {"f:spec": {"f:a": {}}}, {"f:data": {".": {}, "f:a": {}}}, {"f:metadata": {"f:labels": {}}}]
    ),
)
_own_entry = st.just(
    {
        "manager": "me",
        "operation": "Update",
        "apiVersion": "v1",
        "time": EARLIER,
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {}},
    }
)
_sent_entries = st.one_of(
    st.none(),
    st.just([]),
    st.just([{}]),
    st.just("not a list"),
    st.lists(st.one_of(_other_entry, _own_entry), max_size=2),
)
_ignored = st.sampled_from([(), (("status",),), (("spec", "a"),), (("spec",), ("data",))])


def _general_create(new: dict[str, Any], ignored: tuple[tuple[str, ...], ...]) -> dict[str, Any]:
    """What the general update path records for a create: compare against an empty old object."""
    sent = (new.get("metadata") or {}).get("managedFields")
    managers: dict[Any, Any]
    if isinstance(sent, list) and (not sent or sent == [{}]):
        managers = {}
    else:
        managers = (ssa._decode_managed_fields(sent) if sent else None) or {}
    body = ssa._without_managed_fields(new)
    managers = ssa._record(
        {},
        body,
        managers,
        manager="me",
        api_version="v1",
        subresource="",
        list_types=ssa.builtin_list_types,
        now=NOW,
        prefixes=ssa._field_prefixes(ignored),
    )
    return ssa._with_managed_fields(body, managers)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(obj=_objects, sent=_sent_entries, ignored=_ignored)
def test_create_fast_path_records_what_the_general_compare_records(
    obj: dict[str, Any], sent: Any, ignored: tuple[tuple[str, ...], ...]
) -> None:
    if sent is not None:
        obj["metadata"]["managedFields"] = sent
    frozen = orjson.dumps(obj)

    fast = ssa.record_update(
        None, obj, manager="me", api_version="v1", list_types=ssa.builtin_list_types, now=NOW, ignored_fields=ignored
    )
    general = _general_create(orjson.loads(frozen), ignored)

    assert fast.get("metadata", {}).get("managedFields") == general.get("metadata", {}).get("managedFields")
    assert fast == general
    assert orjson.dumps(obj) == frozen  # the caller's object is not changed in place


def test_create_fast_path_leaves_the_ignored_subtree_unowned() -> None:
    obj = {"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "obj"}, "spec": {"a": 1}, "status": {"b": 2}}

    recorded = ssa.record_update(
        None,
        obj,
        manager="me",
        api_version="v1",
        list_types=ssa.builtin_list_types,
        now=NOW,
        ignored_fields=[("status",)],
    )

    (entry,) = recorded["metadata"]["managedFields"]
    assert entry["manager"] == "me"
    assert entry["time"] == NOW
    assert entry["fieldsV1"] == {"f:spec": {".": {}, "f:a": {}}}


# --------------------------------------------------------------------------------------------- store order

_namespaces = st.sampled_from(["a", "ab", "a-b", "b", "a\x00x", "default"])
_names = st.sampled_from(["n1", "n2", "n10", "x"])
_ops = st.lists(
    st.tuples(st.sampled_from(["put", "put", "delete", "read"]), _namespaces, _names),
    min_size=1,
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops=_ops)
def test_store_items_stay_sorted_and_sliced_by_namespace(ops: list[tuple[str, str, str]]) -> None:
    store = Store()
    kind = ("", "things")
    reference: dict[tuple[str, str], dict[str, Any]] = {}

    def check() -> None:
        assert list(store.items(kind)) == [reference[k] for k in sorted(reference)]
        for namespace in ("a", "ab", "a-b", "b", "a\x00x", "default", "zz"):
            expected = [reference[k] for k in sorted(reference) if k[0] == namespace]
            assert list(store.items(kind, namespace)) == expected

    for op, namespace, name in ops:
        key = (namespace, name)
        if op == "read":
            check()
            continue
        rv = str(store.next_rv())
        if op == "put":
            old = reference.get(key)
            uid = old["metadata"]["uid"] if old else f"{namespace}/{name}"
            obj = {"metadata": {"namespace": namespace, "name": name, "uid": uid, "resourceVersion": rv}}
            store.commit(MODIFIED if old else ADDED, kind, obj, old)
            reference[key] = obj
        elif key in reference:
            old = reference.pop(key)
            gone = {"metadata": dict(old["metadata"], resourceVersion=rv)}
            store.commit(DELETED, kind, gone, old)
    check()
    for obj in store.items(kind):
        assert obj is reference[(obj["metadata"]["namespace"], obj["metadata"]["name"])]  # the latest version


# --------------------------------------------------------------------------------------------- merge patches


async def _create_configmap(raw: RawClient) -> dict[str, Any]:
    created = await raw.post(
        CONFIGMAPS + "?fieldManager=creator",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"x": "1"}},
    )
    assert created.status == 201
    body: dict[str, Any] = created.body
    return body


def _entries_by_manager(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["manager"]: entry for entry in obj["metadata"].get("managedFields", [])}


async def test_merge_patch_without_managed_fields_keeps_the_live_entries(raw: RawClient) -> None:
    created = await _create_configmap(raw)

    patched = await raw.patch(CONFIGMAPS + "/cm?fieldManager=patcher", {"data": {"y": "2"}}, MERGE_PATCH)

    assert patched.status == 200
    entries = _entries_by_manager(patched.body)
    assert entries["creator"] == _entries_by_manager(created)["creator"]
    assert entries["patcher"]["fieldsV1"] == {"f:data": {"f:y": {}}}


async def test_merge_patch_with_null_managed_fields_keeps_the_live_entries(raw: RawClient) -> None:
    created = await _create_configmap(raw)

    patched = await raw.patch(
        CONFIGMAPS + "/cm?fieldManager=patcher",
        {"metadata": {"managedFields": None}, "data": {"y": "2"}},
        MERGE_PATCH,
    )

    assert patched.status == 200
    entries = _entries_by_manager(patched.body)
    assert set(entries) == {"creator", "patcher"}
    assert entries["creator"] == _entries_by_manager(created)["creator"]
    assert entries["patcher"]["fieldsV1"] == {"f:data": {"f:y": {}}}


async def test_merge_patch_with_empty_managed_fields_resets_them(raw: RawClient) -> None:
    await _create_configmap(raw)

    patched = await raw.patch(
        CONFIGMAPS + "/cm?fieldManager=patcher",
        {"metadata": {"managedFields": []}, "data": {"y": "2"}},
        MERGE_PATCH,
    )

    assert patched.status == 200
    assert "managedFields" not in patched.body["metadata"]
    assert patched.body["data"] == {"x": "1", "y": "2"}
    fetched = await raw.get(CONFIGMAPS + "/cm")
    assert "managedFields" not in fetched.body["metadata"]


async def test_merge_patch_with_explicit_managed_fields_replaces_the_live_entries(raw: RawClient) -> None:
    await _create_configmap(raw)
    sent = {
        "manager": "other",
        "operation": "Update",
        "apiVersion": "v1",
        "time": "2025-01-01T00:00:00Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:x": {}}},
    }

    patched = await raw.patch(
        CONFIGMAPS + "/cm?fieldManager=patcher",
        {"metadata": {"managedFields": [sent]}, "data": {"y": "2"}},
        MERGE_PATCH,
    )

    assert patched.status == 200
    entries = _entries_by_manager(patched.body)
    assert set(entries) == {"other", "patcher"}  # the creator's live entry is gone
    assert entries["other"] == sent
    assert entries["patcher"]["fieldsV1"] == {"f:data": {"f:y": {}}}


async def test_merge_patch_with_null_metadata_is_rejected_and_changes_nothing(raw: RawClient) -> None:
    created = await _create_configmap(raw)

    patched = await raw.patch(CONFIGMAPS + "/cm?fieldManager=patcher", {"metadata": None}, MERGE_PATCH)

    assert patched.status == 400
    assert patched.body["reason"] == "BadRequest"
    assert patched.body["message"] == (
        "the name of the object (cm based on URL) was undeterminable: name must be provided"
    )
    fetched = await raw.get(CONFIGMAPS + "/cm")
    assert fetched.body["metadata"] == created["metadata"]


async def test_merge_patch_renaming_the_object_is_rejected(raw: RawClient) -> None:
    await _create_configmap(raw)

    patched = await raw.patch(CONFIGMAPS + "/cm", {"metadata": {"name": "other"}}, MERGE_PATCH)

    assert patched.status == 400
    assert patched.body["message"] == "the name of the object (other) does not match the name on the URL (cm)"


# --------------------------------------------------------------------------------------------- Expect


async def test_request_with_expect_100_continue_is_answered(server: EmbeddedAPIServer) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "expected"}, "data": {"k": "v"}}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            server.url + CONFIGMAPS,
            data=orjson.dumps(body),
            headers={"Content-Type": "application/json", **server.auth_headers},
            expect100=True,
            timeout=aiohttp.ClientTimeout(total=10),
        ) as resp,
    ):
        assert resp.status == 201
        created = orjson.loads(await resp.read())

    assert created["metadata"]["name"] == "expected"
    assert created["data"] == {"k": "v"}


# --------------------------------------------------------------------------------------------- JSON responses


def _auth(server: EmbeddedAPIServer) -> bytes:
    return f"Authorization: Bearer {server.token}\r\n".encode()


async def _exchange(server: EmbeddedAPIServer, request: bytes) -> bytes:
    host, port = server.url.split("//", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout=10)  # the last request asks for Connection: close
    finally:
        writer.close()


def _split_responses(data: bytes) -> list[tuple[bytes, dict[str, str], bytes]]:
    """(status line, headers, body) of each Content-Length-framed response in `data`."""
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        status, *lines = head.split(b"\r\n")
        headers = {k.decode().lower(): v.decode() for k, _, v in (line.partition(b": ") for line in lines)}
        length = int(headers["content-length"])
        out.append((status, headers, rest[:length]))
        data = rest[length:]
    return out


async def test_json_responses_frame_pipelined_requests_and_close_when_asked(server: EmbeddedAPIServer) -> None:
    body = orjson.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "piped"}})
    request = (
        b"POST "
        + CONFIGMAPS.encode()
        + b" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        + _auth(server)
        + b"Content-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )
    request += b"GET " + CONFIGMAPS.encode() + b"/missing HTTP/1.1\r\nHost: t\r\n" + _auth(server)
    request += b"Connection: close\r\n\r\n"

    (created, missing) = _split_responses(await _exchange(server, request))

    assert created[0] == b"HTTP/1.1 201 Created"
    assert created[1]["content-type"] == "application/json"
    assert "connection" not in created[1]  # the connection stays open for the next request
    assert orjson.loads(created[2])["metadata"]["name"] == "piped"
    assert missing[0] == b"HTTP/1.1 404 Not Found"
    assert missing[1]["connection"] == "close"
    assert orjson.loads(missing[2])["reason"] == "NotFound"


async def test_json_response_to_http_1_0_is_complete_and_closes(server: EmbeddedAPIServer) -> None:
    reply = await _exchange(server, b"GET " + CONFIGMAPS.encode() + b"/missing HTTP/1.0\r\n" + _auth(server) + b"\r\n")

    ((status, headers, body),) = _split_responses(reply)
    assert status == b"HTTP/1.0 404 Not Found"
    assert headers["content-type"] == "application/json"
    assert orjson.loads(body)["details"]["name"] == "missing"


# --------------------------------------------------------------------------------------------- metadata checks

_meta_texts = st.sampled_from(["app", "App_1", "-bad", "a/b", "/x", "ex.com/ok", "Bad.Prefix/x", "", "v" * 64, "ok."])
_meta_values = st.one_of(_meta_texts, st.integers(0, 2))
_metas = st.fixed_dictionaries(
    {},
    optional={
        "labels": st.dictionaries(_meta_texts, _meta_values, max_size=3),
        "annotations": st.dictionaries(_meta_texts, st.sampled_from(["", "x"]), max_size=3),
        "finalizers": st.lists(st.one_of(_meta_texts, st.integers(0, 1)), max_size=3),
    },
)


def _cold_meta_errors(meta: dict[str, Any]) -> list[tuple[str, str, str]]:
    metadata._valid_keys.clear()
    metadata._valid_label_values.clear()
    return [(e.kind, e.field, e.detail) for e in metadata.meta_errors(meta)]


@settings(max_examples=300, deadline=None)
@given(first=_metas, second=_metas)
def test_meta_errors_remembered_valid_names_never_hide_an_error(first: dict[str, Any], second: dict[str, Any]) -> None:
    expected = _cold_meta_errors(second)
    metadata.meta_errors(first)  # warms the remembered-valid sets with whatever `first` holds

    warm = [(e.kind, e.field, e.detail) for e in metadata.meta_errors(second)]

    assert warm == expected
