"""`omectl run` as an object: settings in; registry, controller, webhook server and tracing wired; clean shutdown.

Also used in-process by `omectl dev up --controller`, the demo and the end-to-end tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from omectl.controller.manager import ClusterRuntime, FleetController
from omectl.controller.observe import FleetObserver
from omectl.fleet.providers import RegistrationProvider, provider_from_settings
from omectl.kube.client import KubeAPIError
from omectl.kube.resources import SERVING_RUNTIMES, VALIDATING_WEBHOOK_CONFIGURATIONS
from omectl.observability.metrics import ControllerMetrics
from omectl.observability.redact import scrub
from omectl.observability.server import StatusServer
from omectl.settings import Settings
from omectl.tls import CertificateAuthority, server_ssl_context
from omectl.tracing.setup import configure_tracing
from omectl.webhook.server import ClusterAdmission, WebhookServer, webhook_configuration

log = logging.getLogger(__name__)


class ControllerApp:
    def __init__(self, settings: Settings, *, exporter: Any = None, status_file: Path | None = None) -> None:
        self.settings = settings
        self.tracing = configure_tracing(
            file_path=settings.trace_file, otlp_endpoint=settings.otlp_endpoint, exporter=exporter
        )
        self.controller = FleetController(concurrency=settings.concurrency, tracer=self.tracing.tracer)
        self.webhook = self._webhook_server()
        self.status_file = status_file
        self.provider: RegistrationProvider | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self.ready = asyncio.Event()
        self.registry_batches = 0
        self._registry_applied = asyncio.Condition()
        self.controller.on_cluster_added.append(self._cluster_added)
        self.controller.on_cluster_removed.append(self._cluster_removed)
        # metrics, /healthz and /readyz (omectl.observability; the readiness rule is in omectl.controller.observe)
        self.metrics = ControllerMetrics()
        self.controller.metrics = self.metrics
        self.observer = FleetObserver(
            self.controller, grace=settings.readiness_grace_seconds, registry_ready=lambda: self.ready.is_set()
        )
        self.metrics.watch_fleet(self.observer.sample)
        self.status_server: StatusServer | None = None
        if settings.metrics_port >= 0:
            self.status_server = StatusServer(
                settings.metrics_host, settings.metrics_port, self.metrics.registry, self.observer.readiness
            )

    def _webhook_server(self) -> WebhookServer:
        s = self.settings
        if s.webhook_cert_file and s.webhook_key_file:
            import ssl

            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.load_cert_chain(str(s.webhook_cert_file), str(s.webhook_key_file))
            ca_pem = s.webhook_ca_file.read_bytes() if s.webhook_ca_file else None
            return WebhookServer(s.webhook_host, s.webhook_port, context, ca_pem, s.webhook_url)
        ca = CertificateAuthority.generate("omectl-webhook-ca")
        hosts = [s.webhook_host, "localhost"]
        if s.webhook_url:
            hosts.append(urlsplit(s.webhook_url).hostname or s.webhook_host)
        cert = ca.issue(hosts)
        return WebhookServer(s.webhook_host, s.webhook_port, server_ssl_context(cert), ca.cert_pem, s.webhook_url)

    # --- cluster hooks ---------------------------------------------------------------------------------

    async def _cluster_added(self, cluster: ClusterRuntime) -> None:
        self.webhook.register(cluster.name, lambda: self._admission(cluster))
        if self.settings.install_webhooks:
            self._tasks.append(asyncio.create_task(self._install_webhooks(cluster)))

    async def _cluster_removed(self, cluster: ClusterRuntime) -> None:
        self.webhook.unregister(cluster.name)
        self.metrics.forget_cluster(cluster.name)

    def _admission(self, cluster: ClusterRuntime) -> ClusterAdmission:
        async def live_get(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
            from omectl.kube.resources import CLUSTER_SERVING_RUNTIMES

            resource = SERVING_RUNTIMES if kind == "ServingRuntime" else CLUSTER_SERVING_RUNTIMES
            try:
                return await cluster.client.get(resource, name, namespace=namespace or None)
            except KubeAPIError as exc:
                if exc.status == 404:
                    return None
                raise

        return ClusterAdmission(lookup=cluster.lookup(), live_get=live_get)

    async def _install_webhooks(self, cluster: ClusterRuntime) -> None:
        """Server-side apply the ValidatingWebhookConfiguration, retrying while the cluster is unreachable."""
        config = webhook_configuration(self.webhook, cluster.name, self.settings.webhook_failure_policy)
        delay = 0.5
        while cluster.name in self.controller.clusters:
            try:
                await cluster.client.patch(
                    VALIDATING_WEBHOOK_CONFIGURATIONS,
                    config["metadata"]["name"],
                    config,
                    patch_type="apply",
                    field_manager="omectl",
                    force=True,
                )
                return
            except Exception as exc:
                log.warning("cluster %s: installing webhooks failed (%s); retrying", cluster.name, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30)

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        self.provider = await provider_from_settings(
            self.settings.clusters_dir, self.settings.hub_kubeconfig, hub_namespace=self.settings.hub_namespace
        )
        if self.settings.ha:  # only the clusters whose Leases this replica holds (omectl.controller.ha)
            from omectl.controller.ha import shard_registry

            self.provider = await shard_registry(self.controller, self.provider, self.settings)
        await self.webhook.start()
        if self.status_server is not None:
            await self.status_server.start()
        self.observer.start()
        self.controller.start_workers()
        self._tasks.append(asyncio.create_task(self._follow_registry(), name="registry"))
        if self.status_file is not None:
            self._tasks.append(asyncio.create_task(self._write_status_periodically(), name="status-file"))

    async def _follow_registry(self) -> None:
        assert self.provider is not None
        first = True
        async for changes in self.provider.watch():
            await self.controller.apply_changes(changes)
            self.controller.registry_errors.update(self.provider.errors)
            if first:
                first = False
                self.ready.set()
            async with self._registry_applied:
                self.registry_batches += 1
                self._registry_applied.notify_all()

    async def wait_registry_batches(self, count: int, timeout: float = 30) -> None:
        """Wait until `count` batches of registry changes have taken effect (tests and the CLI use it)."""
        async with asyncio.timeout(timeout), self._registry_applied:
            await self._registry_applied.wait_for(lambda: self.registry_batches >= count)

    async def wait_synced(self, timeout: float = 60) -> None:
        await asyncio.wait_for(self.ready.wait(), timeout)
        await asyncio.gather(*(c.wait_synced(timeout) for c in self.controller.clusters.values()))

    async def _write_status_periodically(self) -> None:
        assert self.status_file is not None
        while True:
            self.write_status_file()
            await asyncio.sleep(1.0)

    def write_status_file(self) -> None:
        if self.status_file is None:
            return
        self.status_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.status_file.with_suffix(".tmp")
        document = {"pid": os.getpid(), **self.controller.status()}
        if self.status_server is not None:
            document["metricsUrl"] = self.status_server.base_url
        # lastError and registry errors quote what servers and kubeconfig loaders said: no secret may reach the CLI
        tmp.write_text(scrub(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode()))
        os.replace(tmp, self.status_file)

    async def stop(self) -> None:
        """Finish in-flight reconciles, stop clusters and the webhook server, flush spans."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self.controller.stop()
        await self.webhook.stop()
        await self.observer.stop()
        if self.status_server is not None:
            await self.status_server.stop()
        if self.provider is not None:
            await self.provider.close()
        self.tracing.shutdown()
        if self.status_file is not None:
            self.status_file.unlink(missing_ok=True)

    async def __aenter__(self) -> ControllerApp:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
