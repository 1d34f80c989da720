"""`/metrics`, `/healthz` and `/readyz` of a running `ControllerApp` on an embedded fleet.

The readiness rule under test (omectl.controller.runtime.observe): ready once every registered cluster is synced or
marked unhealthy (disconnected for `readiness_grace_seconds`); a partition after the sync does not make it unready.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.settings import Settings
from omectl.sim.fleet import EmbeddedFleet, manifest_documents
from tests.observability.support import (
    CRDS,
    OME_SAMPLES,
    apply_all,
    get,
    inference_service,
    namespace,
    scrape,
    serving_runtime,
    total,
    until,
    value,
)

pytestmark = pytest.mark.xdist_group("e2e")
SR = "ome.io/ServingRuntime"
CSR = "ome.io/ClusterServingRuntime"
ISVC = "ome.io/InferenceService"
NS = "llama-demo"
PROFILE = "sglang-profile"
RUNTIME = "sglang-llama-3-2-3b"


@dataclass
class Observed:
    fleet: EmbeddedFleet
    app: ControllerApp

    @property
    def url(self) -> str:
        assert self.app.status_server is not None
        return self.app.status_server.base_url


@pytest.fixture
async def observed(tmp_path: Path) -> AsyncIterator[Observed]:
    fleet = await EmbeddedFleet(2, name_prefix="ob-").start()
    try:
        await fleet.apply([CRDS])
        kubeconfig = fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
        write_registrations(tmp_path / "clusters", kubeconfig, ["ob-1", "ob-2"])
        await fleet["ob-2"].partition()  # unreachable from the start: never synced until healed
        settings = Settings.load(
            webhook_port=0,
            clusters_dir=tmp_path / "clusters",
            trace_file=tmp_path / "traces.jsonl",
            install_webhooks=False,
            metrics_port=0,
            readiness_grace_seconds=3600,
        )
        app = ControllerApp(settings)
        await app.start()
        try:
            await app.ready.wait()
            await app.controller.clusters["ob-1"].wait_synced(30)
            yield Observed(fleet, app)
        finally:
            await app.stop()
    finally:
        await fleet.stop()


async def test_readyz_waits_for_every_cluster_or_its_unhealthy_mark_and_survives_a_later_partition(
    observed: Observed,
) -> None:
    url, app = observed.url, observed.app
    assert await get(url + "/healthz") == (200, "ok\n")
    status, body = await get(url + "/readyz")
    assert status == 503
    assert "cluster ob-2: " in body and "not synced" in body and "ob-1" not in body

    # ob-2 stays unreachable past the grace period: it is marked unhealthy and no longer holds readiness back
    app.observer.grace = 0.2
    status, body = await until(lambda: _ready(url), "ready with ob-2 marked unhealthy")
    # never reached, so never taken: its ownership Lease (in ob-2) cannot be written, so no informer runs there
    assert "cluster ob-2: unhealthy (its ownership lease cannot be taken" in body
    samples = await scrape(url)
    assert value(samples, "omectl_cluster_healthy", cluster="ob-2") == 0
    assert value(samples, "omectl_cluster_synced", cluster="ob-2") == 0
    assert value(samples, "omectl_cluster_connected", cluster="ob-2") == 0
    assert value(samples, "omectl_cluster_healthy", cluster="ob-1") == 1

    app.observer.grace = 3600  # within the grace period again: unready until it syncs
    assert (await get(url + "/readyz"))[0] == 503
    await observed.fleet["ob-2"].heal()
    await until(lambda: _ready(url), "ready once ob-2 synced")
    samples = await scrape(url)
    assert value(samples, "omectl_cluster_synced", cluster="ob-2") == 1

    # a partition after the sync: the cluster shows disconnected, readiness stays (its caches keep serving)
    await observed.fleet["ob-2"].partition()

    async def disconnected() -> bool:
        return value(await scrape(url), "omectl_cluster_connected", cluster="ob-2") == 0

    await until(disconnected, "ob-2 disconnected")
    assert (await get(url + "/readyz"))[0] == 200
    samples = await scrape(url)
    assert value(samples, "omectl_cluster_synced", cluster="ob-2") == 1
    assert total(samples, "omectl_watch_restarts_total", cluster="ob-2") >= 1


async def test_readyz_waits_on_a_cluster_whose_lease_is_being_taken(observed: Observed) -> None:
    # reached again but its Lease write held up: neither unreached nor held, it must still hold readiness back
    server = observed.fleet["ob-2"]
    for method in ("POST", "PUT"):
        server.faults.delay_next(1, 2.0, method=method, path_contains="/leases")
    coordinator = observed.app.provider.coordinator  # type: ignore[union-attr]
    await server.heal()

    async def taking() -> bool:
        return "ob-2" in coordinator.taking() and "ob-2" not in coordinator.unreached()

    await until(taking, "ob-2 reached, its lease being taken")
    status, body = await get(observed.url + "/readyz")
    assert status == 503
    assert "cluster ob-2: not synced (its ownership lease is being taken, caches not started)" in body
    await until(lambda: _ready(observed.url), "ready once ob-2 synced")
    assert value(await scrape(observed.url), "omectl_cluster_synced", cluster="ob-2") == 1


async def _ready(url: str) -> tuple[int, str] | None:
    status, body = await get(url + "/readyz")
    return (status, body) if status == 200 else None


async def test_metrics_count_reconciles_queue_caches_resolver_and_api_errors(observed: Observed) -> None:
    await observed.fleet["ob-2"].heal()
    await observed.app.wait_synced(60)
    url, server = observed.url, observed.fleet["ob-1"]
    files = ["profile.yaml", "runtime.yaml", "clusterbasemodel.yaml"]  # the spec's runtime serves the model
    await apply_all(server, namespace(NS), *manifest_documents([OME_SAMPLES / name for name in files]))
    children = [serving_runtime(f"child-{i}", NS, PROFILE) for i in range(5)]
    await apply_all(server, *children)
    # the first two applies of the engine's workloads fail: a reconcile error, then a retry that succeeds
    server.faults.fail_next(2, 500, method="PATCH", path_contains="/deployments/")
    await apply_all(
        server,
        inference_service("served", NS, RUNTIME),
        inference_service("orphan", NS, "no-such-runtime"),  # retried later: requeue
    )

    async def reconciled() -> dict | None:
        samples = await scrape(url)
        done = (
            total(samples, "omectl_reconciles_total", cluster="ob-1", kind=SR, result="success") >= 6
            and total(samples, "omectl_reconciles_total", cluster="ob-1", kind=ISVC, result="success") >= 1
            and total(samples, "omectl_reconciles_total", cluster="ob-1", kind=ISVC, result="error") >= 1
            and total(samples, "omectl_reconciles_total", cluster="ob-1", kind=ISVC, result="requeue") >= 1
        )
        return samples if done else None

    samples = await until(reconciled, "the reconciles counted")
    assert total(samples, "omectl_reconciles_total", cluster="ob-1", kind=CSR, result="success") >= 1
    assert total(samples, "omectl_reconciles_total", cluster="ob-2") == 0  # nothing was created there
    reconciles = total(samples, "omectl_reconciles_total", cluster="ob-1", kind=SR)
    assert value(samples, "omectl_reconcile_duration_seconds_count", cluster="ob-1", kind=SR) == reconciles
    assert value(samples, "omectl_queue_wait_seconds_count", cluster="ob-1", kind=SR) == reconciles
    assert (value(samples, "omectl_reconcile_duration_seconds_sum", cluster="ob-1", kind=SR) or 0) > 0
    assert value(samples, "omectl_queue_wait_seconds_bucket", cluster="ob-1", kind=SR, le="+Inf") == reconciles
    for cluster in ("ob-1", "ob-2"):
        depth = value(samples, "omectl_queue_depth", cluster=cluster)
        assert depth is not None and depth >= 0
        assert value(samples, "omectl_cluster_connected", cluster=cluster) == 1
        assert value(samples, "omectl_cluster_synced", cluster=cluster) == 1
        assert value(samples, "omectl_cluster_healthy", cluster=cluster) == 1
    assert value(samples, "omectl_cache_objects", cluster="ob-1", kind=SR) == 6
    assert value(samples, "omectl_cache_objects", cluster="ob-1", kind=CSR) == 1
    assert value(samples, "omectl_cache_objects", cluster="ob-1", kind=ISVC) == 2
    assert value(samples, "omectl_cache_objects", cluster="ob-2", kind=SR) == 0
    assert value(samples, "omectl_watch_restarts_total", cluster="ob-1", kind=SR) is not None
    assert (value(samples, "omectl_api_errors_total", cluster="ob-1", code="500") or 0) >= 1
    assert value(samples, "omectl_events_dropped_total", cluster="ob-1") == 0  # the backlog was never full
    assert (value(samples, "omectl_resolver_misses_total") or 0) >= 1  # the profile and each child merged once
    assert (value(samples, "omectl_resolver_hits_total") or 0) >= 1  # the InferenceService re-used its runtime's
    assert (value(samples, "omectl_resolver_entries") or 0) >= 7
    assert value(samples, "omectl_clusters") == 2
    assert value(samples, "omectl_queue_in_flight") is not None
    # the loop-lag monitor has been waking every 50 ms since start (omectl.observability.loop_lag)
    assert (value(samples, "omectl_event_loop_lag_seconds_count") or 0) >= 1
    # and each reconcile's longest hold of the loop, by kind (omectl.observability.steps; told after the reconcile
    # is counted, so at least one of them by now)
    assert (value(samples, "omectl_reconcile_longest_step_seconds_count", kind=SR) or 0) >= 1
    assert (value(samples, "omectl_reconcile_longest_step_seconds_sum", kind=SR) or 0) > 0

    # an unregistered cluster's recorded series go with it
    await observed.app.controller.remove_cluster("ob-1")
    samples = await scrape(url)
    assert total(samples, "omectl_reconciles_total", cluster="ob-1") == 0
    assert value(samples, "omectl_queue_depth", cluster="ob-1") is None
