"""`EmbeddedAPIServer`: one simulated cluster's API server on 127.0.0.1 (HTTP or HTTPS), with its lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from omectl.problems import read_problem
from omectl.sim.apiserver.api import ClusterAPI
from omectl.sim.apiserver.controllers import ClusterControllers
from omectl.sim.apiserver.conversion import DEFAULT_TIMEOUT_SECONDS as DEFAULT_CONVERSION_TIMEOUT
from omectl.sim.apiserver.http import ClusterHTTP
from omectl.sim.apiserver.requestlog import DEFAULT_CAPACITY as DEFAULT_REQUEST_LOG_CAPACITY
from omectl.sim.apiserver.requestlog import RequestLog
from omectl.sim.apiserver.store import HISTORY_SECONDS, Store
from omectl.sim.faults.admin_http import AdminPlane
from omectl.sim.faults.injector import FaultInjector
from omectl.sim.kubeconfig import KubeconfigEntry, write_kubeconfig
from omectl.sim.simulator import SimulatorConfig, WorkloadSimulator
from omectl.tls import CertificateAuthority, server_ssl_context

log = logging.getLogger(__name__)


class StateError(ValueError):
    """A state file that cannot be loaded; `str(exc)` names it (the one-line message for the operator)."""


class EmbeddedAPIServer:
    """A Kubernetes API server for one simulated cluster.

    `await start()` serves on `url`; `stop()` closes it; `restart()` comes back on the same port with its data
    (or empty); `partition()`/`heal()` refuse and accept connections; `faults` injects request failures.
    `token` (random unless given; in `kubeconfig_entry()` and `auth_headers`) is checked as kube-apiserver does:
    a wrong one is refused everywhere, the fault plane needs it, and over HTTPS every path but `/healthz`,
    `/livez`, `/readyz` and `/version` does too (see `ClusterHTTP._authenticated`).
    A CRD's conversion webhook gets `conversion_webhook_timeout` seconds (kube-apiserver's fixed 30 unless
    given). With `state_dir`, the store is saved on a clean stop and loaded on start. With `simulator`, simulated GPU
    nodes make workloads ready (`omectl.sim.simulator`); it starts, stops and restarts with the server.
    """

    def __init__(
        self,
        name: str = "sim-1",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: bool = False,
        ca: CertificateAuthority | None = None,
        state_dir: Path | str | None = None,
        history_window: int = 50_000,
        history_seconds: float | None = HISTORY_SECONDS,
        bookmark_interval: float = 60.0,
        allow_http_webhooks: bool = False,
        conversion_webhook_timeout: float = DEFAULT_CONVERSION_TIMEOUT,
        simulator: SimulatorConfig | None = None,
        request_log_capacity: int = DEFAULT_REQUEST_LOG_CAPACITY,
        token: str | None = None,
    ) -> None:
        self.name = name
        self.token = token or secrets.token_hex(24)
        self.host = host
        self.port = port
        self.tls = tls
        self.ca = ca if ca is not None else (CertificateAuthority.generate() if tls else None)
        self.state_dir = Path(state_dir) if state_dir else None
        self.history_window = history_window
        self.history_seconds = history_seconds
        self.bookmark_interval = bookmark_interval
        self.allow_http_webhooks = allow_http_webhooks
        self.conversion_webhook_timeout = conversion_webhook_timeout
        self.faults = FaultInjector()
        self.admin = AdminPlane(self)
        # Every API request, kept across restarts (GET /_omectl/requests).
        self.request_log = RequestLog(request_log_capacity)
        self.api = self._new_api(self._load_store())
        self.controllers = ClusterControllers(self.api)
        self.simulator_config = simulator
        self.simulator = self._new_simulator()
        self.http = ClusterHTTP(self, admin=self.admin.handle)
        self._runner: web.ServerRunner | None = None
        self._site: web.BaseSite | None = None
        self._socket: socket.socket | None = None
        self.partitioned = False

    # --- construction ----------------------------------------------------------------------------------

    def _new_store(self) -> Store:
        return Store(history_window=self.history_window, history_seconds=self.history_seconds)

    def _new_api(self, store: Store) -> ClusterAPI:
        return ClusterAPI(
            self.name,
            store,
            allow_http_webhooks=self.allow_http_webhooks,
            conversion_timeout=self.conversion_webhook_timeout,
        )

    def _new_simulator(self) -> WorkloadSimulator | None:
        if self.simulator_config is None:
            return None
        return WorkloadSimulator(self.api, self.simulator_config, cluster=self.name)

    @property
    def _state_file(self) -> Path | None:
        return self.state_dir / f"{self.name}.json" if self.state_dir else None

    def _load_store(self) -> Store:
        store = self._new_store()
        path = self._state_file
        if path is not None and path.exists():
            try:
                store.restore(orjson.loads(path.read_bytes()))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                problem = read_problem(exc) if isinstance(exc, OSError) else "not a saved cluster state"
                raise StateError(f"{path}: {problem}") from None
            log.info("cluster %s: loaded %s (resourceVersion %s)", self.name, path, store.rv)
        return store

    def save_state(self) -> Path | None:
        path = self._state_file
        if path is None:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(self.api.store.snapshot()))
        os.replace(tmp, path)
        return path

    # --- addresses -------------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    @property
    def auth_headers(self) -> dict[str, str]:
        """The header a direct HTTP client sends (one that does not go through a kubeconfig)."""
        return {"Authorization": f"Bearer {self.token}"}

    def kubeconfig_entry(self, *, namespace: str = "default") -> KubeconfigEntry:
        return KubeconfigEntry(
            name=self.name,
            server=self.url,
            ca_pem=self.ca.cert_pem if self.ca is not None and self.tls else None,
            token=self.token,
            namespace=namespace,
        )

    def write_kubeconfig(self, path: Path | str) -> Path:
        return write_kubeconfig(Path(path), [self.kubeconfig_entry()], current=self.name)

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> EmbeddedAPIServer:
        if self._runner is not None:
            return self
        self.controllers.start()
        if self.simulator is not None:
            await self.simulator.start()
        self._runner = web.ServerRunner(self.http.web_server(), handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        await self._listen()
        return self

    async def _listen(self) -> None:
        assert self._runner is not None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        sock.listen(1024)
        sock.setblocking(False)
        self.port = sock.getsockname()[1]
        self._socket = sock
        ssl_context = None
        if self.tls:
            assert self.ca is not None
            ssl_context = server_ssl_context(self.ca.issue([self.host, "localhost"]))
        self._site = web.SockSite(self._runner, sock, ssl_context=ssl_context)
        await self._site.start()

    async def _unlisten(self) -> None:
        self.api.store.close_all_watches()
        if self._site is not None:
            await self._site.stop()
            self._site = None
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.close()
            self._socket = None

    async def stop(self) -> None:
        """Stop serving; with a state dir the store is saved first."""
        if self._runner is None:
            return
        await self._unlisten()
        await self._runner.cleanup()
        self._runner = None
        if self.simulator is not None:
            await self.simulator.stop()
        await self.controllers.stop()
        await self.api.webhooks.close()
        self.save_state()

    async def restart(self, *, keep_data: bool = True) -> None:
        """Stop and come back on the same port, with the same objects and resourceVersions or empty."""
        store = self.api.store
        await self.stop()
        if keep_data:
            snapshot = store.snapshot()
            fresh = self._new_store()
            fresh.restore(snapshot)
            self.api = self._new_api(fresh)
        else:
            self.api = self._new_api(self._new_store())
        self.controllers = ClusterControllers(self.api)
        self.simulator = self._new_simulator()
        self.http = ClusterHTTP(self, admin=self.admin.handle)
        await self.start()

    async def partition(self) -> None:
        """Refuse connections (the listening socket is closed, open watches are cut) until `heal()`."""
        if self.partitioned or self._runner is None:
            return
        self.partitioned = True
        await self._unlisten()
        if self._runner is not None and self._runner.server is not None:
            for connection in list(self._runner.server.connections):
                connection.force_close()

    async def heal(self) -> None:
        if not self.partitioned:
            return
        self.partitioned = False
        await self._listen()

    async def partition_for(self, seconds: float) -> None:
        await self.partition()
        await asyncio.sleep(seconds)
        await self.heal()

    async def __aenter__(self) -> EmbeddedAPIServer:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
