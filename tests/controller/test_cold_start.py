"""The controller's cold start on an embedded cluster that already holds its objects: the informers' first lists
queue their objects' reconciles as pages arrive, in the resync lane; none runs until every informer of the cluster
has listed (`omectl/controller/runtime/manager.py`, `ClusterRuntime.start`), and a live edit made meanwhile runs
before the startup backlog.

The order is read from the API server's request log: no wall-clock limit."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from omectl.controller.app import ControllerApp
from omectl.controller.ome.watch import OmeWatch
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.fleet import EmbeddedFleet
from tests.resilience.workload import CRDS, apply_all, isvc_names, single_cluster_settings, until, workload_documents

pytestmark = pytest.mark.xdist_group("e2e")


async def test_startup_reconciles_wait_in_the_resync_lane_until_every_informer_listed_and_a_live_edit_goes_first(
    tmp_path: Path,
) -> None:
    sim = await EmbeddedFleet(1, name_prefix="cs-").start()
    app: ControllerApp | None = None
    try:
        server = sim.servers[0]
        await sim.apply([CRDS])
        await apply_all(server, workload_documents())
        held = server.faults.hold_next(1, method="GET", path_contains="/deployments")  # one informer's first list
        settings = single_cluster_settings(
            server,
            tmp_path,
            concurrency=1,  # one reconcile at a time: the request log shows the order the queue hands keys out
        )
        app = ControllerApp(settings)
        await app.start()
        await app.wait_clusters({server.name})
        cluster = app.controller.clusters[server.name]
        queue = app.controller.queue
        deployments = cluster.watch(OmeWatch).deployments
        others = [i for i in cluster.informers if i is not deployments]
        await until([server], lambda: held.arrived.is_set() and all(i.synced.is_set() for i in others), 30, "lists")

        # every other informer has listed and queued its objects; the Deployments' list is still held
        lanes = queue.lane_depths()
        assert lanes["RESYNC"] >= len(isvc_names()) and lanes["EDIT"] == lanes["FANOUT"] == 0, lanes
        assert queue.is_held(server.name) and queue.in_flight == 0
        assert cluster.health.reconciles == 0
        start = server.request_log.total

        edited_ns, edited = isvc_names()[-1]  # the last one the InferenceService informer listed
        rt = server.api.types.lookup("ome.io", "v1beta1", "inferenceservices")
        assert rt is not None
        patch = orjson.dumps({"spec": {"engine": {"minReplicas": 2}}})
        await server.api.patch(rt, edited_ns, edited, "application/merge-patch+json", patch, WriteOptions())
        await until([server], lambda: queue.lane_depths()["EDIT"] == 1, 30, "the live edit queued")
        assert cluster.health.reconciles == 0  # still held

        assert held.release is not None
        held.release.set()
        await until([server], lambda: not queue.is_held(server.name), 30, "the cluster synced and released")

        def applies() -> list[str]:
            records = server.request_log.records(start)
            return [r.name for r in records if (r.verb, r.resource) == ("patch", "deployments")]

        await until([server], applies, 30, "a render applied")
        assert applies()[0] == f"{edited}-engine", applies()  # the live edit before the startup backlog
    finally:
        if app is not None:
            await app.stop()
        await sim.stop()
