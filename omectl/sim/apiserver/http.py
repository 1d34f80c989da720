"""The Kubernetes REST surface over aiohttp: authentication, path parsing, content negotiation, watch streaming.

Requests under `ADMIN_PREFIX` go to the admin plane the server hands in (`omectl/sim/faults/admin_http.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import orjson
from aiohttp import HttpVersion11, hdrs, web

from omectl.sim.apiserver import discovery, errors, protobuf
from omectl.sim.apiserver.api import ClusterAPI, WriteOptions, parse_bool
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.openapi import OpenAPIDocuments
from omectl.sim.apiserver.openapi_http import openapi_response
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.requestlog import CLIENT_IDENTITY_HEADER, RequestLog
from omectl.sim.apiserver.responses import JSON, JSONBytesResponse, error_response, json_response
from omectl.sim.apiserver.selectors import SelectorError, parse_field_selector, parse_label_selector
from omectl.sim.apiserver.store import ADDED, DELETED, MODIFIED, Subscriber, WatchEvent
from omectl.sim.apiserver.tables import table_for
from omectl.sim.faults.injector import FaultInjector, status_reason

log = logging.getLogger(__name__)

# kube-apiserver's MaxRequestBodyBytes: a larger body is refused with 413 before it is decoded.
MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
_CLIENT_MAX_SIZE = MAX_REQUEST_BODY_BYTES
# kube-apiserver's answer to a request it cannot authenticate.
UNAUTHORIZED_BODY: Final = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized",'
    b'"reason":"Unauthorized","code":401}'
)
# What kube-apiserver's default RBAC (system:public-info-viewer) lets an anonymous request GET.
PUBLIC_PATHS: Final = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
# The admin plane's paths: they always need the token and are not recorded in the request log.
ADMIN_PREFIX: Final = "/_omectl/"
# A watch whose next event cannot be converted (its CRD's conversion webhook fails) tries again after these.
_CONVERSION_RETRY_FIRST = 0.1
_CONVERSION_RETRY_MAX = 2.0

AdminHandler = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


class ServedCluster(Protocol):
    """What the REST surface reads of the server it fronts, on each request (a restart replaces `api`).
    `EmbeddedAPIServer` (server.py) is one; it builds its `ClusterHTTP`, so this module does not import it."""

    @property
    def api(self) -> ClusterAPI: ...
    @property
    def faults(self) -> FaultInjector: ...
    @property
    def request_log(self) -> RequestLog: ...
    @property
    def token(self) -> str: ...
    @property
    def tls(self) -> bool: ...
    @property
    def partitioned(self) -> bool: ...
    @property
    def address(self) -> str: ...
    @property
    def bookmark_interval(self) -> float: ...


def _wants_table(request: web.BaseRequest) -> str | None:
    """The Table version kubectl asked for, or None for plain JSON."""
    accept = request.headers.get("Accept", "")
    if "as=Table" not in accept:
        return None
    for part in accept.split(","):
        if "as=Table" in part and "g=meta.k8s.io" in part:
            return "v1beta1" if "v=v1beta1" in part else "v1"
    return None


def _include_object(request: web.BaseRequest) -> str:
    return request.query.get("includeObject", "") or "Metadata"


class ClusterHTTP:
    """One aiohttp application in front of one `ClusterAPI`; `admin` answers the requests under `ADMIN_PREFIX`."""

    def __init__(self, server: ServedCluster, *, admin: AdminHandler) -> None:
        self.server = server
        self._admin = admin
        self.faults: FaultInjector = server.faults
        self.request_counts: Counter[tuple[str, str]] = Counter()
        self._discovery_cache: dict[Any, tuple[bytes, str]] = {}
        self._cache_revision = -1
        self._openapi: tuple[int, OpenAPIDocuments] | None = None  # the type set's revision, its documents

    @property
    def api(self) -> ClusterAPI:
        return self.server.api

    def app(self) -> web.Application:
        """The same surface as an aiohttp Application (the server itself uses the leaner `web_server`)."""
        app = web.Application(client_max_size=_CLIENT_MAX_SIZE)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app

    def web_server(self) -> web.Server:
        """aiohttp's low-level server around `handle`: every path is ours, so no router and no app layer."""
        loop = asyncio.get_running_loop()

        def make_request(
            message: Any, payload: Any, protocol: Any, writer: Any, task: asyncio.Task[None]
        ) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=_CLIENT_MAX_SIZE)

        return web.Server(self.handle, request_factory=make_request, access_log=None)

    # --- entry point -----------------------------------------------------------------------------------

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        """Serve one request and record it in the server's request log (admin paths are not recorded)."""
        arrived = time.time()
        status = 0
        try:
            response = await self._handle(request)
            status = response.status
            return response
        finally:
            path = request.path
            if not path.startswith(ADMIN_PREFIX):
                method = request.method
                headers = request.headers
                self.server.request_log.append(
                    arrived,
                    time.time(),
                    method,
                    path,
                    method == "GET" and parse_bool_safe(request.query.get("watch")),
                    status,
                    headers.get("User-Agent"),
                    headers.get(CLIENT_IDENTITY_HEADER),
                    request.query.get("fieldSelector") if method == "GET" else None,
                )

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        path = request.path
        if self.server.partitioned and request.transport is not None:
            request.transport.abort()  # a partitioned cluster answers nothing
            return web.Response(status=503)
        if not self._authenticated(request):
            return JSONBytesResponse(UNAUTHORIZED_BODY, 401)
        expect = request.headers.get("Expect")
        if expect:
            await _expect_continue(request, expect)
        if path.startswith(ADMIN_PREFIX):
            return await self._admin(request)
        is_watch = request.method == "GET" and parse_bool_safe(request.query.get("watch"))
        fault = self.faults.take(request.method, path, is_watch) if self.faults.rules else None
        if fault is not None:
            if fault.release is not None:
                fault.arrived.set()
                await fault.release.wait()
            if fault.delay:
                await asyncio.sleep(fault.delay)
            if fault.status:
                reason, message = status_reason(fault.status)
                headers = {"Retry-After": str(fault.retry_after)} if fault.retry_after is not None else None
                body = APIError(fault.status, reason, message, {}).status()
                if fault.retry_after is not None:
                    body["details"] = {"retryAfterSeconds": fault.retry_after}
                return json_response(body, fault.status, headers)
        try:
            return await self._route(request, path)
        except APIError as exc:
            return error_response(exc)
        except SelectorError as exc:
            return error_response(errors.bad_request(str(exc)))
        except web.HTTPRequestEntityTooLarge:
            message = f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"
            return error_response(APIError(413, "RequestEntityTooLarge", message, {}))
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            log.exception("cluster %s: %s %s failed", self.api.name, request.method, path)
            return error_response(errors.internal_error(str(exc)))

    def _authenticated(self, request: web.BaseRequest) -> bool:
        """kube-apiserver's bearer-token check: a wrong token is refused on every path; a request without one
        (or with another scheme) is anonymous and may only GET `PUBLIC_PATHS`. Over plain HTTP anonymous may
        use the API too, as on kube-apiserver's old insecure port: kubectl (client-go) sends a kubeconfig's
        credentials only over TLS. The fault plane always needs the token."""
        parts = request.headers.get(hdrs.AUTHORIZATION, "").strip().split(" ", 2)
        if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1]:
            presented = parts[1].encode("utf-8", "surrogateescape")
            return hmac.compare_digest(presented, self.server.token.encode())
        path = request.path
        if path.startswith(ADMIN_PREFIX):
            return False
        return not self.server.tls or (request.method == "GET" and path in PUBLIC_PATHS)

    async def _route(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return json_response({"paths": ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]})
        head = parts[0]
        if head == "version" and len(parts) == 1:
            return json_response(discovery.version_info())
        if head in ("healthz", "readyz", "livez"):
            return web.Response(text="ok")
        if head == "openapi":
            return openapi_response(self._openapi_documents(), request, parts)
        if head == "api":
            if len(parts) == 1:
                return self._discovery_root(request, core=True)
            if parts[1] != "v1":
                raise errors.unknown_resource()
            if len(parts) == 2:
                return self._cached(("rl", "", "v1"), lambda: discovery.api_resource_list(self._types(), "", "v1"))
            return await self._resource(request, "", "v1", parts[2:])
        if head == "apis":
            if len(parts) == 1:
                return self._discovery_root(request, core=False)
            if len(parts) == 2:
                return self._cached(("g", parts[1]), lambda: discovery.api_group(self._types(), parts[1]))
            if len(parts) == 3:
                return self._cached(
                    ("rl", parts[1], parts[2]),
                    lambda: discovery.api_resource_list(self._types(), parts[1], parts[2]),
                )
            return await self._resource(request, parts[1], parts[2], parts[3:])
        raise errors.unknown_resource()

    # --- discovery and openapi -------------------------------------------------------------------------

    def _types(self) -> list[ResourceType]:
        return self.api.types.all()

    def _cached(self, key: Any, build: Callable[[], Any], content_type: str = JSON) -> web.StreamResponse:
        if self._cache_revision != self.api.types.revision:
            self._discovery_cache.clear()
            self._cache_revision = self.api.types.revision
        hit = self._discovery_cache.get(key)
        if hit is None:
            doc = build()
            if doc is None:
                raise errors.unknown_resource()
            hit = (orjson.dumps(doc), content_type)
            self._discovery_cache[key] = hit
        return web.Response(body=hit[0], headers={"Content-Type": hit[1]})

    def _discovery_root(self, request: web.BaseRequest, core: bool) -> web.StreamResponse:
        aggregated = discovery.wants_aggregated(request.headers.get("Accept", ""))
        if aggregated:
            ctype = f"application/json;g=apidiscovery.k8s.io;v={aggregated};as=APIGroupDiscoveryList"
            return self._cached(
                ("agg", core, aggregated),
                lambda: discovery.aggregated_discovery(self._types(), core, aggregated),
                ctype,
            )
        if core:
            return self._cached(("api",), lambda: discovery.legacy_api_versions(self.server.address))
        return self._cached(("apis",), lambda: discovery.legacy_api_group_list(self._types()))

    def _openapi_documents(self) -> OpenAPIDocuments:
        revision = self.api.types.revision
        if self._openapi is None or self._openapi[0] != revision:
            self._openapi = (revision, OpenAPIDocuments(self._types()))
        return self._openapi[1]

    # --- resources -------------------------------------------------------------------------------------

    async def _resource(
        self, request: web.BaseRequest, group: str, version: str, rest: list[str]
    ) -> web.StreamResponse:
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
            namespace = rest[1]
            rest = rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3:
            raise errors.unknown_resource()
        rt = self.api.types.lookup(group, version, plural)
        if rt is None:
            raise errors.unknown_resource()
        if namespace and not rt.namespaced:
            raise errors.unknown_resource()
        if subresource:
            allowed = {"status"} if rt.has_status else set()
            if rt.plural == "namespaces":
                allowed.add("finalize")
            if subresource not in allowed:
                raise errors.unknown_resource()
        self.request_counts[(request.method, rt.plural)] += 1
        method = request.method
        query = request.query
        ua = request.headers.get("User-Agent")
        if name is None:
            if method == "GET":
                if parse_bool(query.get("watch"), "watch"):
                    return await self._watch(request, rt, namespace)
                return await self._list(request, rt, namespace)
            if method == "POST":
                opts = WriteOptions.from_query(query, ua)
                result = await self.api.create(rt, namespace, await _read_json(request, rt), opts)
                return self._write_response(request, rt, result.obj, result.code, result.warnings)
            if method == "DELETE":
                opts = WriteOptions.from_query(query, ua)
                options = await _delete_options(request)
                body = await self.api.delete_collection(rt, namespace, query, options, opts)
                return json_response(body)
            raise errors.method_not_allowed()
        if rt.namespaced and not namespace:
            raise errors.unknown_resource()
        if method == "GET":
            obj = await self.api.get(rt, namespace, name)
            return self._object_response(request, rt, obj)
        opts = WriteOptions.from_query(query, ua)
        if method == "PUT":
            result = await self.api.update(rt, namespace, name, await _read_json(request, rt), opts, subresource)
        elif method == "PATCH":
            raw = await request.read()
            result = await self.api.patch(
                rt, namespace, name, request.headers.get("Content-Type", ""), raw, opts, subresource
            )
        elif method == "DELETE" and not subresource:
            options = await _delete_options(request)
            if "All" in (options.get("dryRun") or []):
                opts.dry_run = True
            result = await self.api.delete(rt, namespace, name, options, opts)
        else:
            raise errors.method_not_allowed()
        return self._write_response(request, rt, result.obj, result.code, result.warnings)

    def _write_response(
        self, request: web.BaseRequest, rt: ResourceType, obj: dict[str, Any], code: int, warnings: list[str]
    ) -> web.StreamResponse:
        headers = None
        if warnings:
            headers = {"Warning": ", ".join(f'299 - "{_escape_warning(w)}"' for w in warnings)}
        if obj.get("kind") == "Status":
            return json_response(obj, code, headers)
        return self._object_response(request, rt, obj, code, headers)

    def _object_response(
        self,
        request: web.BaseRequest,
        rt: ResourceType,
        obj: dict[str, Any],
        code: int = 200,
        headers: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        if _wants_table(request):
            table = table_for(
                rt,
                [obj],
                resource_version=obj["metadata"].get("resourceVersion", ""),
                include_object=_include_object(request),
            )
            return json_response(table, code, headers)
        return json_response(obj, code, headers)

    async def _list(self, request: web.BaseRequest, rt: ResourceType, namespace: str) -> web.StreamResponse:
        items, rv, token, remaining = await self.api.list_objects(rt, namespace, request.query)
        if _wants_table(request):
            table = table_for(
                rt, items, resource_version=rv, continue_token=token, include_object=_include_object(request)
            )
            return json_response(table)
        meta: dict[str, Any] = {"resourceVersion": rv}
        if token:
            meta["continue"] = token
            if remaining is not None:
                meta["remainingItemCount"] = remaining
        return json_response({"kind": rt.list_kind, "apiVersion": rt.group_version, "metadata": meta, "items": items})

    # --- watch -----------------------------------------------------------------------------------------

    async def _watch(self, request: web.BaseRequest, rt: ResourceType, namespace: str) -> web.StreamResponse:
        query = request.query
        labels = parse_label_selector(query.get("labelSelector", "") or "")
        fields = parse_field_selector(
            query.get("fieldSelector", "") or "", ("metadata.name", "metadata.namespace", *rt.field_labels)
        )
        bookmarks = parse_bool(query.get("allowWatchBookmarks"), "allowWatchBookmarks")
        timeout_raw = query.get("timeoutSeconds")
        timeout = float(timeout_raw) if timeout_raw else random.uniform(1800, 3600)
        table = _wants_table(request)
        include = _include_object(request) if table else "Object"
        rv_param = query.get("resourceVersion", "") or ""
        ns_filter = namespace if rt.namespaced else ""

        def matches(obj: dict[str, Any] | None) -> bool:
            if obj is None:
                return False
            meta = obj["metadata"]
            if ns_filter and meta.get("namespace") != ns_filter:
                return False
            if not labels.empty and not labels.matches(meta.get("labels")):
                return False
            return fields.empty or fields.matches(obj)

        after = int(rv_param) if rv_param.isdigit() and rv_param != "0" else 0

        def accept(event: WatchEvent) -> str | None:
            if event.rv <= after:
                return None  # a resume from a future resourceVersion waits for it
            now = matches(event.obj)
            if event.type == ADDED:
                return ADDED if now else None
            if event.type == DELETED:
                return DELETED if (now or matches(event.old)) else None
            before = matches(event.old)
            if now and before:
                return MODIFIED
            if now:
                return ADDED
            if before:
                return DELETED
            return None

        if not ns_filter and labels.empty and fields.empty:
            # No selector: every event with a newer resourceVersion goes out as it is (objects are never None).
            def accept_all(event: WatchEvent) -> str | None:
                return event.type if event.rv > after else None

            sub = Subscriber(accept_all)
        else:
            sub = Subscriber(accept)
        store = self.api.store
        # Subscribe and take the backlog in the same synchronous step, so no event falls in between.
        store.subscribe(rt.storage_key, sub)
        initial: list[tuple[str, WatchEvent]] = []
        expired: APIError | None = None
        if rv_param in ("", "0"):
            for obj in store.items(rt.storage_key, ns_filter or None):
                if matches(obj):
                    initial.append(
                        (
                            ADDED,
                            WatchEvent(ADDED, obj, None, int(obj["metadata"]["resourceVersion"]), rt.storage_key),
                        )
                    )
        else:
            try:
                since = int(rv_param)
            except ValueError:
                store.unsubscribe(rt.storage_key, sub)
                raise errors.bad_request(f'invalid resource version "{rv_param}"') from None
            floor = store.history_floor(rt.storage_key)
            if since < floor:
                expired = errors.expired(f"too old resource version: {since} ({floor + 1})")
            else:
                for event in store.events_since(rt.storage_key, since):
                    delivered = accept(event)
                    if delivered is not None:
                        initial.append((delivered, event))
        response = web.StreamResponse(status=200, headers={"Content-Type": JSON})
        response.enable_chunked_encoding()
        try:
            await response.prepare(request)
            if expired is not None:
                await response.write(orjson.dumps({"type": "ERROR", "object": expired.status()}) + b"\n")
                return response
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            if self.api.converter(rt) is not None:

                def watching() -> bool:
                    transport = request.transport
                    gone = transport is None or transport.is_closing()
                    return not (sub.closed or gone or loop.time() >= deadline)

                encode = self._converting_encoder(rt, table, include, watching)
            else:
                plain = self._encoder(rt, table, include)

                async def encode(batch: list[tuple[str, WatchEvent]]) -> bytes:
                    return b"".join(plain(t, e) for t, e in batch)

            if initial:
                await response.write(await encode(initial))
            interval = self.server.bookmark_interval
            next_bookmark = loop.time() + interval
            while not sub.closed:
                now = loop.time()
                wait_until = min(deadline, next_bookmark) if bookmarks else deadline
                if now >= deadline:
                    if bookmarks:
                        await response.write(self._bookmark(rt))
                    break
                if bookmarks and now >= next_bookmark:
                    await response.write(self._bookmark(rt))
                    next_bookmark = now + interval
                    continue
                if not sub.pending:
                    sub.wakeup.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait_until - now):
                            await sub.wakeup.wait()
                    if sub.pending:
                        # Let the writers already scheduled commit too, so one write carries their events.
                        await asyncio.sleep(0)
                if sub.pending:
                    batch, sub.pending = sub.pending, []
                    await response.write(await encode(batch))
        except (ConnectionResetError, asyncio.CancelledError, _WatchOver):
            pass
        finally:
            store.unsubscribe(rt.storage_key, sub)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            await response.write_eof()
        return response

    def _bookmark(self, rt: ResourceType) -> bytes:
        return (
            orjson.dumps(
                {
                    "type": "BOOKMARK",
                    "object": {
                        "kind": rt.kind,
                        "apiVersion": rt.group_version,
                        "metadata": {"resourceVersion": str(self.api.store.rv)},
                    },
                }
            )
            + b"\n"
        )

    def _converting_encoder(
        self, rt: ResourceType, table: str | None, include: str, watching: Callable[[], bool]
    ) -> Callable[[list[tuple[str, WatchEvent]]], Awaitable[bytes]]:
        """Watch lines of a kind converted through a webhook: each object in the watch's version. A conversion
        that fails is tried again until it succeeds, holding back the events after it, as kube-apiserver's watch
        cache holds back an event it cannot convert; the watch ends meanwhile when `watching()` turns false (its
        timeout, its client gone, the server stopping)."""

        async def served(event: WatchEvent) -> dict[str, Any]:
            delay = _CONVERSION_RETRY_FIRST
            while True:
                try:
                    return await self.api.served(rt, event.obj)
                except APIError as exc:
                    log.info("cluster %s: watch of %s waits for a conversion: %s", self.api.name, rt.plural, exc)
                if not watching():
                    raise _WatchOver
                await asyncio.sleep(delay)
                delay = min(delay * 2, _CONVERSION_RETRY_MAX)

        async def encode(batch: list[tuple[str, WatchEvent]]) -> bytes:
            lines = []
            for type_, event in batch:
                obj: Any = await served(event)
                if table:
                    rv = str(event.rv)
                    obj = table_for(rt, [obj], resource_version=rv, include_object=include, with_columns=False)
                lines.append(orjson.dumps({"type": type_, "object": obj}) + b"\n")
            return b"".join(lines)

        return encode

    def _encoder(self, rt: ResourceType, table: str | None, include: str) -> Callable[[str, WatchEvent], bytes]:
        if table:

            def encode_table(type_: str, event: WatchEvent) -> bytes:
                obj = self.api._view(rt, event.obj)
                row = table_for(rt, [obj], resource_version=str(event.rv), include_object=include, with_columns=False)
                return orjson.dumps({"type": type_, "object": row}) + b"\n"

            return encode_table

        def encode_json(type_: str, event: WatchEvent) -> bytes:
            if event.obj.get("apiVersion") != rt.group_version:
                return orjson.dumps({"type": type_, "object": self.api._view(rt, event.obj)}) + b"\n"
            return event.json_line(type_)

        return encode_json


class _WatchOver(Exception):
    """A watch ended while it waited for an event's conversion."""


async def _expect_continue(request: web.BaseRequest, expect: str) -> None:
    """What aiohttp's router does with `Expect`: answer 100 Continue, or 417 for anything else."""
    if request.version == HttpVersion11:
        if expect.lower() != "100-continue":
            raise web.HTTPExpectationFailed(text=f"Unknown Expect: {expect}")
        await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        request.writer.output_size = 0  # the interim response is not part of the response's byte count
    await request.writer.drain()


def parse_bool_safe(value: str | None) -> bool:
    try:
        return parse_bool(value, "watch")
    except APIError:
        return False


def _escape_warning(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


async def _read_json(request: web.BaseRequest, rt: ResourceType) -> Any:
    raw = await request.read()
    ctype = request.headers.get("Content-Type", JSON).split(";")[0].strip()
    if ctype in ("application/yaml", "application/apply-patch+yaml"):
        import yaml

        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from None
    if ctype == protobuf.CONTENT_TYPE:
        try:
            return protobuf.decode(raw)
        except protobuf.ProtobufError:
            raise errors.unsupported_media_type([JSON, "application/yaml"]) from None
    if ctype not in (JSON, "", "*/*"):
        raise errors.unsupported_media_type([JSON, "application/yaml", protobuf.CONTENT_TYPE])
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {exc}'
        ) from None


async def _delete_options(request: web.BaseRequest) -> dict[str, Any]:
    raw = await request.read()
    options: dict[str, Any] = {}
    if raw.strip():
        try:
            options = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise errors.bad_request(f"error decoding DeleteOptions: {exc}") from None
        if not isinstance(options, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
    query = request.query
    if query.get("propagationPolicy"):
        options["propagationPolicy"] = query["propagationPolicy"]
    if query.get("orphanDependents"):
        options["orphanDependents"] = parse_bool(query["orphanDependents"], "orphanDependents")
    return options
