"""The admin plane of one embedded API server: `POST /_omectl/faults` (inject faults, drop watches, compact,
partition, restart), `GET /_omectl/state` and `GET /_omectl/requests` (the request log, `requestlog.py`).

It lives beside the injector rather than in `omectl/sim/apiserver/`: it is no Kubernetes API, it drives the
server it belongs to (restart, partition) and the injector the REST surface consults, and the REST surface
(`omectl/sim/apiserver/http.py`) only hands it the requests under `/_omectl/` once they are authenticated.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

import orjson
from aiohttp import web

from omectl.sim.apiserver import errors
from omectl.sim.apiserver.api import ClusterAPI
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.http import ClusterHTTP
from omectl.sim.apiserver.requestlog import RequestLog
from omectl.sim.apiserver.responses import error_response, json_response
from omectl.sim.faults.injector import FaultInjector


class AdministeredServer(Protocol):
    """What the admin plane reads and drives of its server, on each request (a restart replaces `api` and
    `http`). `EmbeddedAPIServer` (omectl/sim/apiserver/server.py) is one; this module does not import it."""

    @property
    def api(self) -> ClusterAPI: ...
    @property
    def http(self) -> ClusterHTTP: ...
    @property
    def faults(self) -> FaultInjector: ...
    @property
    def request_log(self) -> RequestLog: ...
    async def partition_for(self, seconds: float) -> None: ...
    async def restart(self, *, keep_data: bool = True) -> None: ...


class AdminPlane:
    """The `/_omectl/` endpoints of one server; the REST surface passes `handle` the requests under that path."""

    def __init__(self, server: AdministeredServer) -> None:
        self.server = server

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        if request.path != "/_omectl/faults" or request.method != "POST":
            if request.path == "/_omectl/requests" and request.method == "GET":
                return self._request_log(request)
            if request.path == "/_omectl/state" and request.method == "GET":
                return json_response(
                    {
                        "name": self.server.api.name,
                        "resourceVersion": str(self.server.api.store.rv),
                        "faults": len(self.server.faults.rules),
                        "requests": {f"{m} {r}": n for (m, r), n in self.server.http.request_counts.items()},
                    }
                )
            return error_response(errors.unknown_resource())
        try:
            body = orjson.loads(await request.read() or b"{}")
            action = body.get("action")
            handlers: dict[str, Callable[[], Awaitable[None] | None]] = {
                "drop-watches": self.server.api.store.close_all_watches,
                "compact": self.server.api.store.compact,
                "clear": self.server.faults.clear,
            }
            if action in handlers:
                result = handlers[action]()
                if result is not None:
                    await result
            elif action == "fail":
                self.server.faults.fail_next(
                    int(body.get("count", 1)),
                    int(body.get("status", 500)),
                    method=body.get("method"),
                    path_contains=body.get("pathContains"),
                    retry_after=body.get("retryAfter"),
                    delay=float(body.get("delay", 0.0)),
                    include_watches=bool(body.get("includeWatches", False)),
                )
            elif action == "delay":
                self.server.faults.delay_next(
                    int(body.get("count", 1)),
                    float(body.get("seconds", 1.0)),
                    method=body.get("method"),
                    path_contains=body.get("pathContains"),
                )
            elif action == "partition":
                seconds = float(body.get("seconds", 0))
                if seconds <= 0:
                    raise errors.bad_request("partition over the admin endpoint needs seconds > 0 to heal itself")
                asyncio.get_running_loop().create_task(self.server.partition_for(seconds))
            elif action == "restart":
                asyncio.get_running_loop().create_task(self.server.restart(keep_data=bool(body.get("keepData", True))))
            else:
                raise errors.bad_request(
                    "action must be one of drop-watches, compact, clear, fail, delay, partition, restart"
                )
        except APIError as exc:
            return error_response(exc)
        except (ValueError, TypeError) as exc:
            return error_response(errors.bad_request(f"bad fault request: {exc}"))
        return json_response({"ok": True, "action": action})

    def _request_log(self, request: web.BaseRequest) -> web.StreamResponse:
        """`GET /_omectl/requests?since=N[&limit=M]`: the request log from entry N on (see `requestlog.py`)."""
        try:
            since = int(request.query.get("since", "0") or 0)
            limit_raw = request.query.get("limit")
            limit = int(limit_raw) if limit_raw else None
        except ValueError:
            return error_response(errors.bad_request("since and limit must be integers"))
        return json_response(self.server.request_log.read(since, limit))
