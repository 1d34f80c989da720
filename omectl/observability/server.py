"""A small aiohttp server for Prometheus, the kubelet and `omectl cluster status`: `/metrics`, `/healthz`,
`/readyz` and `/status`.

- `/healthz`: 200 `ok` while the process (its event loop) answers.
- `/readyz`: 200 when `readiness()` says ready, else 503; the body says why, one line per cluster waited on.
- `/metrics`: the registry in the Prometheus text format (OpenMetrics when the scraper asks for it).
- `/status`: the controller's own state as JSON (`status()`: per cluster its state, reconciles, errors, last error
  and last reconcile time), so a reader learns it from the running process, never from a file a dead one left.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

__all__ = ["Readiness", "StatusServer"]

log = logging.getLogger(__name__)

# (ready, lines of explanation)
Readiness = Callable[[], tuple[bool, list[str]]]
Status = Callable[[], dict[str, Any]]


class StatusServer:
    """Serves metrics and health on `host:port` (port 0: a free port, see `port` once started)."""

    def __init__(
        self, host: str, port: int, registry: CollectorRegistry, readiness: Readiness, status: Status | None = None
    ) -> None:
        self.host = host
        self.requested_port = port
        self.port = port
        self.registry = registry
        self.readiness = readiness
        self.status = status
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        if self.status is not None:
            app.router.add_get("/status", self._status)
        return app

    async def _metrics(self, request: web.Request) -> web.Response:
        encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
        body = encoder(self.registry)
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def _readyz(self, request: web.Request) -> web.Response:
        try:
            ready, lines = self.readiness()
        except Exception as exc:  # a readiness check that fails is "not ready", never a 500
            log.exception("readiness check failed")
            ready, lines = False, [f"readiness check failed: {type(exc).__name__}"]
        text = "\n".join(["ok" if ready else "not ready", *lines]) + "\n"
        return web.Response(status=200 if ready else 503, text=text)

    async def _status(self, request: web.Request) -> web.Response:
        assert self.status is not None
        try:
            document = self.status()
        except Exception as exc:  # a failing status callback is a logged JSON 500, never aiohttp's error page
            log.exception("status failed")
            return web.json_response({"error": f"status failed: {type(exc).__name__}"}, status=500)
        return web.Response(body=orjson.dumps(document), content_type="application/json")

    async def start(self) -> None:
        runner = web.AppRunner(self._app(), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.requested_port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()
