"""The `/openapi/v3` and `/openapi/v2` endpoints: kube-apiserver's entity tags, caching headers and negotiation."""

from __future__ import annotations

import hashlib

import orjson

from omectl.sim.apiserver.openapi_http import OPENAPI_V2_PROTOBUF
from tests.support import RawClient, widget_crd

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PROTOBUF_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what client-go sends


async def gv_url(raw: RawClient, gv_path: str) -> str:
    return str((await raw.get("/openapi/v3")).body["paths"][gv_path]["serverRelativeURL"])


async def test_a_document_with_its_current_hash_is_immutable_and_tagged_with_it(raw: RawClient) -> None:
    url = await gv_url(raw, "apis/apps/v1")
    digest = url.rsplit("hash=", 1)[1]
    reply = await raw.get(url)
    assert reply.status == 200
    assert reply.headers["ETag"] == f'"{digest}"'
    assert reply.headers["Cache-Control"] == "public, immutable"
    assert "Expires" in reply.headers
    assert reply.headers["Content-Type"] == "application/json"
    assert hashlib.sha512(orjson.dumps(reply.body, option=orjson.OPT_SORT_KEYS)).hexdigest().upper() == digest


async def test_without_a_hash_the_document_must_be_revalidated_and_if_none_match_gives_304(raw: RawClient) -> None:
    url = await gv_url(raw, "api/v1")
    etag = f'"{url.rsplit("hash=", 1)[1]}"'
    reply = await raw.get("/openapi/v3/api/v1")
    assert reply.status == 200
    assert (reply.headers["ETag"], reply.headers["Cache-Control"]) == (etag, "no-cache, private")
    unchanged = await raw.get("/openapi/v3/api/v1", headers={"If-None-Match": etag})
    assert unchanged.status == 304
    assert unchanged.body is None
    assert unchanged.headers["ETag"] == etag
    stale = await raw.get("/openapi/v3/api/v1", headers={"If-None-Match": '"0123"'})
    assert stale.status == 200


async def test_an_outdated_hash_redirects_to_the_current_document(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    url = await gv_url(raw, "apis/example.com/v1")
    async with raw.session.get(
        raw.base + "/openapi/v3/apis/example.com/v1?hash=OUTDATED", headers=raw.headers, allow_redirects=False
    ) as reply:
        assert reply.status == 301
        assert reply.headers["Location"] == url


async def test_a_crd_change_gives_its_group_version_a_new_document(raw: RawClient) -> None:
    await raw.post(CRDS, widget_crd())
    url = await gv_url(raw, "apis/example.com/v1")
    core = await gv_url(raw, "api/v1")
    crd = (await raw.get(CRDS + "/widgets.example.com")).body
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["colour"] = {"type": "string", "description": "The new field."}
    assert (await raw.put(CRDS + "/widgets.example.com", crd)).status == 200
    changed = await gv_url(raw, "apis/example.com/v1")
    assert changed != url
    assert await gv_url(raw, "api/v1") == core
    widget = (await raw.get(changed)).body["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["properties"]["spec"]["properties"]["colour"]["description"] == "The new field."
    await raw.delete(CRDS + "/widgets.example.com")
    assert "apis/example.com/v1" not in (await raw.get("/openapi/v3")).body["paths"]


async def test_an_unserved_group_version_is_a_404_with_no_body(raw: RawClient) -> None:
    for path in ("/openapi/v3/apis/nothing.example.com/v1", "/openapi/v3/apis/apps", "/openapi/v4"):
        reply = await raw.get(path)
        assert (reply.status, reply.body) == (404, None), path


async def test_the_v3_index_is_served_as_kube_openapi_serves_it(raw: RawClient) -> None:
    reply = await raw.get("/openapi/v3")
    assert reply.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert reply.headers["Cache-Control"] == "no-cache, private"
    assert set(reply.body) == {"paths"}


async def test_openapi_v2_is_json_or_protobuf_by_accept_with_one_etag(raw: RawClient) -> None:
    json_reply = await raw.get("/openapi/v2", headers={"Accept": "application/json"})
    assert json_reply.status == 200
    assert json_reply.headers["Content-Type"] == "application/json"
    assert json_reply.body["swagger"] == "2.0"
    async with raw.session.get(raw.base + "/openapi/v2", headers={**raw.headers, "Accept": PROTOBUF_ACCEPT}) as proto:
        assert proto.status == 200
        assert proto.headers["Content-Type"] == OPENAPI_V2_PROTOBUF
        assert proto.headers["ETag"] == json_reply.headers["ETag"]
        assert (await proto.read()).startswith(b"\x0a\x032.0")
    assert (await raw.get("/openapi/v2", headers={"Accept": "*/*"})).headers["Content-Type"] == "application/json"
    assert (await raw.get("/openapi/v2", headers={"Accept": "text/plain"})).status == 406
    again = await raw.get("/openapi/v2", headers={"Accept": PROTOBUF_ACCEPT, "If-None-Match": proto.headers["ETag"]})
    assert again.status == 304
