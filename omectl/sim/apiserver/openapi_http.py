"""The `/openapi/v2` and `/openapi/v3` endpoints, answered with kube-apiserver's caching headers.

As kube-apiserver (kube-openapi's handlers) does: every document carries its hash as a quoted `ETag` and a
request whose `If-None-Match` names it gets 304; a v3 group-version document asked for with its current
`?hash=` is immutable (cached for a year), with an outdated hash it redirects (301) to the current one, and
without one it must be revalidated. An unknown group-version is a 404 with an empty body. `/openapi/v2` is JSON
or, when asked for, gnostic protobuf; any other `Accept` gets 406.
"""

from __future__ import annotations

import time
from email.utils import formatdate
from typing import Final

from aiohttp import hdrs, web

from omectl.sim.apiserver.openapi import OPENAPI_V3_PREFIX, OpenAPIDocuments, Served

OPENAPI_V2_PROTOBUF: Final = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
# How clients (client-go's discovery) ask for it: `@` where the response's media type has `.`.
_V2_PROTOBUF_ACCEPTED: Final = frozenset(
    {OPENAPI_V2_PROTOBUF, "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"}
)
_JSON_ACCEPTED: Final = frozenset({"application/json", "application/*", "*/*"})
_NO_CACHE: Final = "no-cache, private"
_YEAR: Final = 365 * 24 * 3600


def openapi_response(docs: OpenAPIDocuments, request: web.BaseRequest, parts: list[str]) -> web.StreamResponse:
    """`parts`: the path's segments, `openapi` first."""
    if parts[1:] == ["v2"]:
        return _v2(docs, request)
    if len(parts) < 2 or parts[1] != "v3":
        return web.Response(status=404)
    if len(parts) == 2:
        # kube-openapi serves the index as text/plain
        return _document(request, docs.v3_index(), "text/plain; charset=utf-8", _NO_CACHE)
    gv_path = "/".join(parts[2:])
    served = docs.v3(gv_path)
    if served is None:
        return web.Response(status=404, headers={hdrs.CACHE_CONTROL: _NO_CACHE})
    wanted = request.query.get("hash")
    if wanted is None:
        return _document(request, served, "application/json", _NO_CACHE)
    if wanted != served.etag:
        location = f"{OPENAPI_V3_PREFIX}{gv_path}?hash={served.etag}"
        headers = {hdrs.LOCATION: location, hdrs.ETAG: f'"{served.etag}"', hdrs.CACHE_CONTROL: _NO_CACHE}
        return web.Response(status=301, headers={**headers, hdrs.VARY: "Accept"}, content_type="application/json")
    response = _document(request, served, "application/json", "public, immutable")
    response.headers[hdrs.EXPIRES] = formatdate(time.time() + _YEAR, usegmt=True)
    return response


def _v2(docs: OpenAPIDocuments, request: web.BaseRequest) -> web.StreamResponse:
    accepted = _media_types(request.headers.get(hdrs.ACCEPT, "")) or ["application/json"]
    for media_type in accepted:
        if media_type in _JSON_ACCEPTED:
            return _document(request, docs.v2_json(), "application/json", _NO_CACHE)
        if media_type in _V2_PROTOBUF_ACCEPTED:
            return _document(request, docs.v2_protobuf(), OPENAPI_V2_PROTOBUF, _NO_CACHE)
    return web.Response(status=406, headers={hdrs.CACHE_CONTROL: _NO_CACHE, hdrs.VARY: "Accept"})


def _media_types(accept: str) -> list[str]:
    """The media types of an `Accept` header in the order given (kube's clients give no q-values)."""
    return [part.split(";")[0].strip().lower() for part in accept.split(",") if part.strip()]


def _document(request: web.BaseRequest, served: Served, content_type: str, cache_control: str) -> web.Response:
    etag = f'"{served.etag}"'
    headers = {hdrs.ETAG: etag, hdrs.CACHE_CONTROL: cache_control, hdrs.VARY: "Accept"}
    if etag in (tag.strip() for tag in request.headers.get(hdrs.IF_NONE_MATCH, "").split(",")):
        return web.Response(status=304, headers=headers)
    return web.Response(body=served.body, headers={**headers, hdrs.CONTENT_TYPE: content_type})
