"""`omectl run` as an object: settings in; registry, ownership, controller, webhook server and tracing wired;
clean shutdown.

The controller runs only the clusters whose ownership Lease this process holds (`omectl.controller.runtime.ownership`);
for each, a `WebhookKeeper` installs and keeps its webhook configuration, and a `ConversionKeeper` points the AIM
CRDs served at two versions at this process's conversion webhook. The webhook server answers for every
*registered* cluster: from the informer caches for the clusters it runs, from the cluster's API server for the
others (so no replica ever denies a request because it is not the owner). Shutdown hands every cluster over
(webhook configuration re-pointed or deleted, Lease released) before the webhook server stops.

Also used in-process by `omectl dev up --controller`, the demo and the end-to-end tests.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from omectl.api.crdgen import conversion_webhook, converted_crds
from omectl.background import BackgroundTasks
from omectl.controller.aim.consumers import AimConsumerReconciler
from omectl.controller.aim.consumers_watch import CONSUMER_KEYS as AIM_CONSUMER_KEYS
from omectl.controller.aim.legacy import LegacyReconciler
from omectl.controller.aim.legacy_watch import LEGACY_KEYS as AIM_LEGACY_KEYS
from omectl.controller.aim.service import AimServiceReconciler
from omectl.controller.aim.watch import AIM_SERVICE_KEY, AimWatch
from omectl.controller.fleet_driver import ElectedFleetRuntimes
from omectl.controller.fleet_members import LocalMembers
from omectl.controller.fleet_runtime_stores.directory import DirectoryStore
from omectl.controller.fleet_runtime_stores.hub import HubStore
from omectl.controller.fleet_runtimes import FleetRuntimeApplier
from omectl.controller.ome.engine import EngineReconciler
from omectl.controller.ome.lookup import CacheLookup
from omectl.controller.ome.resolver import ChainResolver
from omectl.controller.ome.runtime_status import RuntimeStatusReconciler
from omectl.controller.ome.watch import CSR_KEY, ISVC_KEY, ISVC_STATUS_WORK, SR_KEY, OmeWatch
from omectl.controller.runtime.manager import ClusterRuntime, FleetController
from omectl.controller.runtime.observe import FleetObserver
from omectl.controller.runtime.registry import Domain, WorkKind, WorkKinds
from omectl.core.aim.meta import RECONCILIATION_PAUSED, reconciliation_paused
from omectl.core.aim.reachability import DEGRADATION_THRESHOLD_S
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME
from omectl.fleet.leases import Holder
from omectl.fleet.providers import RegistryChange, provider_from_settings
from omectl.fleet.runtime_state import default_state_dir
from omectl.fleet.sharding import (
    WEBHOOK_CA_ANNOTATION,
    WEBHOOK_URL_ANNOTATION,
    Replica,
    ShardedProvider,
)
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound
from omectl.kube.resources import CLUSTER_SERVING_RUNTIMES, SERVING_RUNTIMES
from omectl.observability.loop_lag import LoopLagMonitor
from omectl.observability.metrics import ControllerMetrics
from omectl.observability.redact import scrub
from omectl.observability.server import StatusServer
from omectl.observability.steps import SlowSteps
from omectl.oci.client import RegistryClient
from omectl.problems import output_problem
from omectl.settings import Settings
from omectl.tls import CertificateAuthority, server_ssl_context
from omectl.tracing.setup import configure_tracing
from omectl.webhook.conversion_keeper import ConversionKeeper
from omectl.webhook.keeper import RemoteEndpoint, WebhookKeeper
from omectl.webhook.server import ClusterAdmission, WebhookEndpoint, WebhookServer, webhook_configuration

log = logging.getLogger(__name__)


class Reconcilers:
    """Every reconciler of the controller, shared by all clusters, and the work kinds they handle."""

    def __init__(
        self,
        *,
        tracer: Any = None,
        resolver: ChainResolver | None = None,
        aim_operator_namespace: str | None = None,
        image_registry: RegistryClient | None = None,
        aim_degradation_threshold: float = DEGRADATION_THRESHOLD_S,
    ) -> None:
        self.resolver = resolver or ChainResolver()
        self.runtime_status = RuntimeStatusReconciler(self.resolver, tracer)
        self.engine = EngineReconciler(self.resolver)
        self.aim = AimServiceReconciler(operator_namespace=aim_operator_namespace)
        self.aim_consumers = AimConsumerReconciler(  # AIM v1alpha2
            operator_namespace=self.aim.operator_namespace,
            image_registry=image_registry or RegistryClient(),
            degradation_threshold=aim_degradation_threshold,
        )
        self.aim_legacy = LegacyReconciler(  # upstream's legacy template path
            operator_namespace=self.aim.operator_namespace, children=self.aim_consumers
        )
        self.tracer = tracer

    def work_kinds(self) -> WorkKinds:
        """The registry `FleetController` dispatches by: OME first, then AIM (the order their informers start)."""
        return WorkKinds([self._ome(), self._aim()])

    def _ome(self) -> Domain[OmeWatch]:
        runtime_status, engine = self.runtime_status, self.engine
        kinds: dict[str, WorkKind[OmeWatch]] = {
            SR_KEY: WorkKind(
                get=lambda ome, namespace, name: ome.serving.cache.get(namespace, name),
                reconcile=lambda ome, key, obj: runtime_status.reconcile(
                    ome, SERVING_RUNTIME, SERVING_RUNTIMES, key, obj
                ),
            ),
            CSR_KEY: WorkKind(
                get=lambda ome, namespace, name: ome.cluster_serving.cache.get(namespace, name),
                reconcile=lambda ome, key, obj: runtime_status.reconcile(
                    ome, CLUSTER_SERVING_RUNTIME, CLUSTER_SERVING_RUNTIMES, key, obj
                ),
            ),
            ISVC_KEY: WorkKind(
                get=lambda ome, namespace, name: ome.inference_services.cache.get(namespace, name),
                reconcile=lambda ome, key, obj: engine.reconcile(ome, obj),
            ),
            ISVC_STATUS_WORK: WorkKind(
                get=lambda ome, namespace, name: ome.inference_services.cache.get(namespace, name),
                reconcile=lambda ome, key, obj: engine.write_pending_status(ome, obj),
                traced=False,
            ),
        }
        forget = self.resolver.forget_runtime
        return Domain("ome", lambda cluster: OmeWatch(cluster, on_runtime_deleted=forget), kinds)

    def _aim(self) -> Domain[AimWatch]:
        service, consumers, tracer = self.aim, self.aim_consumers, self.tracer
        kinds: dict[str, WorkKind[AimWatch]] = {
            AIM_SERVICE_KEY: WorkKind(
                get=lambda aim, namespace, name: aim.services.cache.get(namespace, name),
                reconcile=lambda aim, key, obj: service.reconcile(aim, obj, tracer),
                paused=_aim_paused,
            )
        }
        for key_kind, kind in AIM_CONSUMER_KEYS.items():
            kinds[key_kind] = WorkKind(
                get=_consumer_cache(kind),
                reconcile=lambda aim, key, obj: consumers.reconcile(aim, key.kind, obj),
                paused=_aim_paused,
            )
        legacy = self.aim_legacy
        for key_kind, kind in AIM_LEGACY_KEYS.items():
            kinds[key_kind] = WorkKind(
                get=_legacy_cache(kind),
                reconcile=lambda aim, key, obj: legacy.reconcile(aim, key.kind, obj),
                paused=_aim_paused,
            )
        return Domain("aim", service.watch, kinds)


def _consumer_cache(kind: str) -> Callable[[AimWatch, str, str], dict[str, Any] | None]:
    def get(aim: AimWatch, namespace: str, name: str) -> dict[str, Any] | None:
        return aim.consumers.kinds[kind].cache.get(namespace, name)

    return get


def _legacy_cache(kind: str) -> Callable[[AimWatch, str, str], dict[str, Any] | None]:
    def get(aim: AimWatch, namespace: str, name: str) -> dict[str, Any] | None:
        return aim.legacy.kinds[kind].cache.get(namespace, name)

    return get


def _aim_paused(obj: Mapping[str, Any]) -> str | None:
    if reconciliation_paused(obj):
        return f"reconciliation paused by its {RECONCILIATION_PAUSED} annotation"
    return None


class StartError(Exception):
    """`omectl run` cannot start; the message is for people (one line each)."""

    def __init__(self, *lines: str) -> None:
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def _not_run(name: str, why: str) -> dict[str, Any]:
    """A status entry for a cluster this process wants but does not run (no Lease: not reached, or refused)."""
    return {
        "name": name,
        "server": "",
        "state": "waiting",
        "connected": False,
        "synced": False,
        "lastError": why,
        "objectsCached": 0,
        "reconciles": 0,
        "errors": 0,
        "queueDepth": 0,
    }


class ControllerApp:
    def __init__(self, settings: Settings, *, exporter: Any = None, status_file: Path | None = None) -> None:
        self.settings = settings
        self.tracing = configure_tracing(
            file_path=settings.trace_file,
            file_max_bytes=settings.trace_file_max_bytes or None,
            otlp_endpoint=settings.otlp_endpoint,
            exporter=exporter,
        )
        self.reconcilers = Reconcilers(
            tracer=self.tracing.tracer,
            aim_operator_namespace=settings.aim_system_namespace,
            aim_degradation_threshold=settings.aim_degradation_threshold_seconds,
            image_registry=RegistryClient(
                mirrors=settings.image_registry_mirrors, timeout=settings.image_registry_timeout_seconds
            ),
        )
        self.controller = FleetController(
            self.reconcilers.work_kinds(),
            self.reconcilers.resolver,
            concurrency=settings.concurrency,
            cluster_concurrency=settings.cluster_concurrency,
            edit_workers=settings.edit_workers,
            tracer=self.tracing.tracer,
            step_timing=settings.step_timing,
            slow_steps=SlowSteps(settings.slow_step_seconds) if settings.slow_step_seconds > 0 else None,
            freeze_heap=settings.freeze_heap,
        )
        self.webhook = self._webhook_server()
        self.status_file = status_file
        self.holder = Holder.for_this_process(settings.replica_id, ha=settings.ha, host=settings.pod_name)
        self.provider: ShardedProvider | None = None
        self.keepers: dict[str, WebhookKeeper] = {}
        self.conversion_keepers: dict[str, ConversionKeeper] = {}
        # with a hub (_start_fleet_runtimes): the applier, or under --ha the one run while holding the fleet Lease;
        # without a hub and without --ha, the applier over the FleetRuntime files (_start_fleet_runtimes_from_files)
        self.fleet_runtimes: FleetRuntimeApplier | ElectedFleetRuntimes | None = None
        self.failure: str | None = None  # set when the process must stop (another one took its replica id)
        self.failed = asyncio.Event()
        self._webhook_started = False
        self._stopping = False
        self._tasks = BackgroundTasks("controller")
        self.ready = asyncio.Event()
        self.registry_batches = 0
        self._registry_applied = asyncio.Condition()
        self.controller.on_cluster_removed.append(self._cluster_removed)
        # metrics, /healthz and /readyz (omectl.observability; the readiness rule: omectl.controller.runtime.observe)
        self.metrics = ControllerMetrics()
        self.controller.metrics = self.metrics
        self.observer = FleetObserver(
            self.controller,
            grace=settings.readiness_grace_seconds,
            registry_ready=lambda: self.ready.is_set(),
            unreached=lambda: self.provider.coordinator.unreached() if self.provider is not None else {},
            starting=self._starting_clusters,
        )
        self.metrics.watch_fleet(self.observer.sample)
        self.status_server: StatusServer | None = None
        if settings.metrics_port >= 0:
            self.status_server = StatusServer(
                settings.metrics_host,
                settings.metrics_port,
                self.metrics.registry,
                self.observer.readiness,
                status=self.status_document,
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

    # --- admission for every registered cluster --------------------------------------------------------

    def _registry_changed(self, change: RegistryChange) -> None:
        name = change.registration.name
        if self.fleet_runtimes is not None:  # a label change can place or unplace the cluster
            self.fleet_runtimes.mark_all()
        if change.kind == "removed":
            self.webhook.unregister(name)
            return
        self.webhook.register(name, lambda: self._admission(name))
        if change.kind == "changed" and name in self.keepers:  # rotated credentials: keep it with the new client
            self._tasks.spawn(self._restart_keeper(name), f"webhooks-restart-{name}")

    async def _restart_keeper(self, cluster: str) -> None:
        keeper = self.keepers.pop(cluster, None)
        if keeper is not None:
            await keeper.stop()
        conversion = self.conversion_keepers.pop(cluster, None)
        if conversion is not None:
            await conversion.stop()
        if self.provider is not None and cluster in self.provider.coordinator.held:
            self.acquired(cluster)

    async def _cluster_removed(self, cluster: ClusterRuntime) -> None:
        self.metrics.forget_cluster(cluster.name)

    def _admission(self, name: str) -> ClusterAdmission:
        """From the informer caches of a cluster this process runs; else every runtime is read from the cluster's
        API server (the ownership client), so any replica answers correctly for any registered cluster."""
        cluster = self.controller.clusters.get(name)
        client: ClusterClient | None
        if cluster is not None:
            lookup, client = cluster.watch(OmeWatch).lookup(), cluster.client
        else:
            lookup = CacheLookup(ObjectCache(), ObjectCache())
            client = self.provider.coordinator.client_for(name) if self.provider is not None else None

        async def live_get(kind: str, namespace: str, runtime: str) -> dict[str, Any] | None:
            if client is None:
                raise RuntimeError(f"cluster {name} cannot be reached: its registration has no usable kubeconfig")
            resource = SERVING_RUNTIMES if kind == "ServingRuntime" else CLUSTER_SERVING_RUNTIMES
            try:
                return await client.get(resource, runtime, namespace=namespace or None)
            except NotFound:
                return None

        return ClusterAdmission(lookup=lookup, live_get=live_get)

    # --- ownership: the webhook configuration of each cluster held (omectl.fleet.sharding listener) ------

    def _desired_webhooks(self, cluster: str) -> dict[str, Any]:
        return webhook_configuration(
            self.webhook, cluster, self.settings.webhook_failure_policy, owner=self.holder.identity
        )

    @staticmethod
    def _conversion(endpoint: WebhookEndpoint, cluster: str) -> dict[str, Any]:
        """The `spec.conversion` of the AIM CRDs served at two versions, through `endpoint`'s webhook server."""
        ca_bundle = base64.b64encode(endpoint.ca_pem).decode() if endpoint.ca_pem else None
        return conversion_webhook(endpoint.conversion_url(cluster), ca_bundle)

    def _advertise(self) -> dict[str, str]:
        """What other replicas need to hand a cluster over to this one (its membership Lease's annotations)."""
        if not self._webhook_started:
            return {}
        notes = {WEBHOOK_URL_ANNOTATION: self.webhook.base_url}
        if self.webhook.ca_pem:
            notes[WEBHOOK_CA_ANNOTATION] = base64.b64encode(self.webhook.ca_pem).decode()
        return notes

    def acquired(self, cluster: str) -> None:
        if not self.settings.install_webhooks or self.provider is None or cluster in self.keepers:
            return
        coordinator = self.provider.coordinator
        client = coordinator.client_for(cluster)
        if client is None:
            return
        keeper = WebhookKeeper(
            cluster, client, lambda: self._desired_webhooks(cluster), lambda: coordinator.writing(cluster)
        )
        self.keepers[cluster] = keeper
        conversion = ConversionKeeper(
            cluster,
            client,
            [d.name for d in converted_crds()],
            lambda: self._conversion(self.webhook, cluster),
            lambda: coordinator.writing(cluster),
        )
        self.conversion_keepers[cluster] = conversion
        if self._webhook_started:  # else once the server listens: the configuration needs its port
            keeper.start()
            conversion.start()

    async def handing_over(self, cluster: str, successor: Replica | None, removed: bool) -> None:
        keeper = self.keepers.pop(cluster, None)
        conversion = self.conversion_keepers.pop(cluster, None)
        if keeper is None or conversion is None:
            return
        endpoint = RemoteEndpoint.parse(successor.webhook_url, successor.ca_bundle) if successor else None
        if endpoint is not None and not removed:
            assert successor is not None
            config = webhook_configuration(
                endpoint, cluster, self.settings.webhook_failure_policy, owner=successor.identity
            )
            await conversion.finish(self._conversion(endpoint, cluster))
            await keeper.finish(config)
        elif successor is not None and not removed and not self._stopping:
            await keeper.stop()  # the next owner re-points it; this server answers meanwhile
            await conversion.stop()
        else:
            await keeper.finish(None)
            await conversion.finish(None)  # left pointing here: nobody else converts (docs/aim-versions.md)

    async def stopping(self, cluster: str) -> None:
        return None

    def lost(self, cluster: str) -> None:
        keeper = self.keepers.pop(cluster, None)
        if keeper is not None:
            self._tasks.spawn(keeper.stop(), f"webhooks-stop-{cluster}")
        conversion = self.conversion_keepers.pop(cluster, None)
        if conversion is not None:
            self._tasks.spawn(conversion.stop(), f"conversion-stop-{cluster}")

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Take the clusters this process may run, then serve; `StartError` when it may run none (every cluster
        held by another live process, or its replica id in use) or cannot listen for webhooks."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        from omectl.controller.runtime.ownership import describe, own_registry
        from omectl.fleet.sharding import ReplicaIdInUse

        inner = await provider_from_settings(
            self.settings.clusters_dir, self.settings.hub_kubeconfig, hub_namespace=self.settings.hub_namespace
        )
        self.provider = await own_registry(self.controller, inner, self.settings, self.holder)
        coordinator = self.provider.coordinator
        coordinator.listeners.append(self)
        coordinator.advertise = self._advertise
        self.provider.registry_listeners.append(self._registry_changed)
        if self.status_server is not None:
            await self.status_server.start()
        self._tasks.spawn(LoopLagMonitor(self.metrics.observe_loop_lag).run(), "loop-lag")
        if self.controller.slow_steps is not None:
            self.controller.slow_steps.start()
        coordinator.report_refusals = False  # decided below: one line each, or the reason to exit
        if self.settings.ha:  # listening before joining: the membership Lease advertises the webhook URL at once
            await self._start_webhook_server()
        try:
            await self.provider.start(wait_settled=not self.settings.ha)
        except ReplicaIdInUse as exc:
            raise StartError(str(exc)) from None
        refused = coordinator.refused()
        if not self.settings.ha and coordinator.registered and set(refused) == coordinator.registered:
            raise StartError(*(refused[c] for c in sorted(refused)))
        log.info("%s", describe(self.settings, coordinator))
        coordinator.report_refusals = True
        coordinator.log_refusals()
        if not self._webhook_started:  # without --ha only once there is a cluster to serve (no port taken to refuse)
            await self._start_webhook_server()
        self.observer.start()
        self.controller.start_workers()
        await self._start_fleet_runtimes()
        await self._start_fleet_runtimes_from_files()
        self._tasks.spawn(self._follow_registry(), "registry")
        self._tasks.spawn(self._watch_failure(), "ownership-failure")
        if self.status_file is not None:
            self._tasks.spawn(self._write_status_periodically(), "status-file")

    async def _start_fleet_runtimes(self) -> None:
        """The FleetRuntime applier (omectl.controller.fleet_runtimes) when the registry is a hub; under --ha only
        the replica holding the fleet Lease in the hub runs it (omectl.controller.fleet_driver)."""
        if self.settings.hub_kubeconfig is None or self.provider is None:
            return
        if self.settings.ha:
            self.fleet_runtimes = ElectedFleetRuntimes(
                self.settings.hub_kubeconfig,
                self.settings.hub_namespace,
                self.controller,
                self.provider.registrations,
                self.reconcilers.resolver,
                self.holder,
                timings=self.settings.lease_timings(),
                tracer=self.tracing.tracer,
            )
            await self.fleet_runtimes.start()
            return
        hub = await ClusterClient.from_kubeconfig(self.settings.hub_kubeconfig, name="hub")
        self.fleet_runtimes = FleetRuntimeApplier(
            HubStore(hub, self.settings.hub_namespace, owns_hub=True),
            LocalMembers(self.controller),
            self.provider.registrations,
            self.reconcilers.resolver,
            tracer=self.tracing.tracer,
        )
        await self.fleet_runtimes.start()

    async def _start_fleet_runtimes_from_files(self) -> None:
        """Without a hub: the FleetRuntime applier over the FleetRuntime files of the clusters directory, what a hub
        would hold of them kept in the state directory (omectl.controller.fleet_runtime_stores.directory); not under
        --ha either."""
        if self.settings.hub_kubeconfig is not None or self.provider is None:
            return
        if self.settings.ha:  # each replica has a directory of its own: none holds what the others wrote
            log.info(
                "fleet runtimes: not applied under --ha without a hub (the fleet Lease and their state are a hub's)"
            )
            return
        files = self.settings.clusters_dir
        state = self.settings.fleet_state_dir or default_state_dir(files)
        problem = output_problem(state, directory=True)
        if problem is not None:
            log.warning(
                "fleet runtimes: not applied: their state directory %s %s (setting fleet_state_dir)", state, problem
            )
            return
        self.fleet_runtimes = FleetRuntimeApplier(
            DirectoryStore(files, state),
            LocalMembers(self.controller),
            self.provider.registrations,
            self.reconcilers.resolver,
            tracer=self.tracing.tracer,
        )
        await self.fleet_runtimes.start()
        log.info("fleet runtimes: read from %s, their state kept in %s", files, state)

    async def _start_webhook_server(self) -> None:
        try:
            await self.webhook.start()
        except OSError as exc:
            raise StartError(
                f"webhook server: cannot listen on {self.webhook.host}:{self.webhook.port} ({exc.strerror or exc}); "
                "is another omectl running on this host? Pass --webhook-port"
            ) from None
        self._webhook_started = True
        for keeper in self.keepers.values():
            keeper.start()
        for conversion in self.conversion_keepers.values():
            conversion.start()

    async def _watch_failure(self) -> None:
        assert self.provider is not None
        coordinator = self.provider.coordinator
        await coordinator.failed.wait()
        self.failure = str(coordinator.failure)
        log.error("%s", self.failure)
        self.failed.set()

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

    def _starting_clusters(self) -> set[str]:
        """Reached clusters this process is taking, or holds without having started them yet."""
        if self.provider is None:
            return set()
        coordinator = self.provider.coordinator
        return coordinator.taking() | (set(coordinator.held) - set(self.controller.clusters))

    async def wait_registry_batches(self, count: int, timeout: float = 30) -> None:
        """Wait until `count` batches of registry changes have taken effect (tests and the CLI use it)."""
        async with asyncio.timeout(timeout), self._registry_applied:
            await self._registry_applied.wait_for(lambda: self.registry_batches >= count)

    async def wait_synced(self, timeout: float = 60) -> None:
        """Until every cluster this process wants is taken (its Lease held) and its caches have synced."""
        async with asyncio.timeout(timeout):
            await self.ready.wait()
            while self.provider is not None and self.provider.coordinator.unreached():
                await self.provider.coordinator.wait_rounds(self.provider.coordinator.rounds + 1)
            await self.wait_registry_applied()
            await asyncio.gather(*(c.wait_synced() for c in self.controller.clusters.values()))

    async def wait_clusters(self, names: set[str], timeout: float = 30) -> None:
        """Until the controller runs exactly the clusters `names` (taken, handed over, removed)."""
        async with asyncio.timeout(timeout), self._registry_applied:
            await self._registry_applied.wait_for(lambda: set(self.controller.clusters) == names)

    async def wait_registry_applied(self) -> None:
        """Until every cluster this process holds has been added to the controller."""
        assert self.provider is not None
        coordinator = self.provider.coordinator
        async with self._registry_applied:
            await self._registry_applied.wait_for(lambda: set(coordinator.held) <= set(self.controller.clusters))

    async def _write_status_periodically(self) -> None:
        assert self.status_file is not None
        while True:
            # the document is read on the loop, the file written off it: creating and renaming a file waits for the
            # filesystem's journal, 20-50 ms every second while the span exporter and the servers write too
            await asyncio.to_thread(self._write_status_text, self._status_text())
            await asyncio.sleep(1.0)

    def status_document(self) -> dict[str, Any]:
        """What `GET /status` serves and the status file keeps: the controller's state, per cluster and overall."""
        document = {
            "pid": os.getpid(),
            "identity": self.holder.identity,
            "observedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **self.controller.status(),
        }
        if self.provider is not None:
            coordinator = self.provider.coordinator
            document["ownership"] = coordinator.status()
            # the clusters it wants but does not run: not reached to take their Lease, or held by another process
            waiting = {**coordinator.refused(), **coordinator.unreached()}
            document["clusters"] += [_not_run(name, why) for name, why in sorted(waiting.items())]
        if isinstance(self.fleet_runtimes, ElectedFleetRuntimes):
            document["fleetRuntimes"] = self.fleet_runtimes.status()  # the fleet Lease: held here, or by whom
        if self.status_server is not None:
            document["metricsUrl"] = self.status_server.base_url
            document["statusUrl"] = f"{self.status_server.base_url}/status"
        # lastError and registry errors quote what servers and kubeconfig loaders said: no secret may reach the CLI
        scrubbed: dict[str, Any] = orjson.loads(scrub(orjson.dumps(document).decode()))
        return scrubbed

    def write_status_file(self) -> None:
        """The status document, rewritten every second: where the controller serves `/status` (`statusUrl`), and
        what it said last (`observedAt`), for `omectl cluster status` once the process is gone."""
        if self.status_file is not None:
            self._write_status_text(self._status_text())

    def _status_text(self) -> str:
        return orjson.dumps(self.status_document(), option=orjson.OPT_INDENT_2).decode()

    def _write_status_text(self, text: str) -> None:
        assert self.status_file is not None
        self.status_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.status_file.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # owner only, like the kubeconfig
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.replace(tmp, self.status_file)

    async def stop(self) -> None:
        """Finish in-flight reconciles, stop clusters, hand every cluster over (webhook configurations re-pointed or
        deleted, Leases released), and only then stop the webhook server; flush spans."""
        self._stopping = True
        if self.provider is not None:  # replicas stopping together must not take each other's released clusters
            self.provider.coordinator.stop_acquiring()
        await self._tasks.stop()
        if self.fleet_runtimes is not None:
            await self.fleet_runtimes.stop()
        await self.controller.stop()
        if self.controller.slow_steps is not None:
            self.controller.slow_steps.stop()
        if self.provider is not None:
            await self.provider.close()
        for keeper in self.keepers.values():
            await keeper.stop()
        self.keepers.clear()
        for conversion in self.conversion_keepers.values():
            await conversion.stop()
        self.conversion_keepers.clear()
        await self.webhook.stop()
        await self.observer.stop()
        if self.status_server is not None:
            await self.status_server.stop()
        self.tracing.shutdown()
        if self.status_file is not None:
            self.status_file.unlink(missing_ok=True)

    async def __aenter__(self) -> ControllerApp:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()
