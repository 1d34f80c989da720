"""A runtime deleted from a cluster leaves nothing in the shared resolver: the watch's delete event makes it forget
every merge whose chain held the runtime (`ChainResolver.forget_runtime`), where before they stayed until the
LRU's bound pushed them out. The same runtime in another namespace keeps its merges."""

from __future__ import annotations

from pathlib import Path

import pytest

from omectl.controller.app import ControllerApp
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeRef
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.fleet import EmbeddedFleet
from tests.resilience.workload import (
    CHILD,
    CRDS,
    OME_NAMESPACES,
    apply_all,
    profile,
    single_cluster_settings,
    until,
    workload_documents,
)

pytestmark = pytest.mark.xdist_group("e2e")


async def test_deleting_a_runtime_drops_its_merges_from_the_resolver_and_keeps_the_others(tmp_path: Path) -> None:
    sim = await EmbeddedFleet(1, name_prefix="rd-").start()
    app: ControllerApp | None = None
    try:
        server = sim.servers[0]
        await sim.apply([CRDS])
        await apply_all(server, workload_documents())
        settings = single_cluster_settings(server, tmp_path)
        app = ControllerApp(settings)
        await app.start()
        await app.wait_clusters({server.name})
        resolver = app.reconcilers.resolver
        gone, kept = (RuntimeRef(SERVING_RUNTIME, ns, CHILD) for ns in OME_NAMESPACES)
        await until(
            [server], lambda: resolver.holds(server.name, gone) and resolver.holds(server.name, kept), 30, "merged"
        )
        entries = len(resolver)

        rt = server.api.types.lookup("ome.io", "v1beta1", "servingruntimes")
        assert rt is not None
        await server.api.delete(rt, gone.namespace, gone.name, {}, WriteOptions())
        await until([server], lambda: not resolver.holds(server.name, gone), 30, "the deleted runtime forgotten")

        assert resolver.holds(server.name, kept)
        assert resolver.holds(server.name, RuntimeRef(CLUSTER_SERVING_RUNTIME, "", profile()["metadata"]["name"]))
        assert len(resolver) == entries - 1  # the deleted child's own chain (the profile's prefix is shared)
    finally:
        if app is not None:
            await app.stop()
        await sim.stop()
