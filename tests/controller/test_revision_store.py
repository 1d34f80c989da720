"""The runtime revisions a cluster's `RevisionStore` keeps in memory: one copy of each merged spec."""

from __future__ import annotations

import copy
from pathlib import Path

from omectl.controller.ome.revisions import RevisionStore
from omectl.core.ome.revisions import KEEP_UNREFERENCED
from omectl.kube.client import ClusterClient
from omectl.kube.resources import CONTROLLER_REVISIONS, NAMESPACES
from omectl.sim.apiserver.server import EmbeddedAPIServer


async def test_a_revision_holds_the_merged_spec_it_was_ensured_with_and_reads_by_name_the_servers_copy(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    spec = {"containers": [{"name": "ome-container", "image": "sglang:1", "args": ["--port", "8080"]}]}
    async with await ClusterClient.from_kubeconfig(server.write_kubeconfig(tmp_path / "kc"), name="c") as client:
        created = await RevisionStore(client).ensure("default", "rt", "ServingRuntime", ["rt"], ["1"], spec, set)
        assert created.spec is spec  # not the server's answer: the resolver holds this one anyway
        # a restarted controller finds the revision on the server, and keeps the spec it ensured it with
        equal = copy.deepcopy(spec)
        store = RevisionStore(client)
        found = await store.ensure("default", "rt", "ServingRuntime", ["rt"], ["2"], equal, set)
        assert (found.name, found.number) == (created.name, created.number)
        assert found.spec is equal
        assert await store.get("default", created.name) is found
        # a revision read by name alone (an InferenceService pinned to it) is the server's copy, equal in content
        read = await RevisionStore(client).get("default", created.name)
        assert read is not None and read.spec == spec and read.spec is not spec


async def test_old_unreferenced_revisions_are_collected_and_the_namespace_is_scanned_only_when_one_may_go(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    asked: list[int] = []
    pinned: set[str] = set()

    def referenced() -> set[str]:
        asked.append(1)
        return set(pinned)

    async with await ClusterClient.from_kubeconfig(server.write_kubeconfig(tmp_path / "kc"), name="c") as client:
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gc"}})
        store = RevisionStore(client)
        made = []
        for n in range(KEEP_UNREFERENCED + 3):
            spec = {"containers": [{"name": "ome-container", "image": f"sglang:{n}"}]}
            made.append(await store.ensure("gc", "rt", "ServingRuntime", ["rt"], [str(n)], spec, referenced))
            if n == 0:
                pinned.add(made[0].name)  # an InferenceService pins the first
        # the new revision stays, and while a runtime had at most KEEP_UNREFERENCED older ones none of them can go:
        # asked only for the last 2
        assert len(asked) == 2
        left = {obj["metadata"]["name"] for obj in await client.list_all(CONTROLLER_REVISIONS, "gc")}
        # the pinned one stays, the newest, and the KEEP_UNREFERENCED unreferenced ones before it
        assert left == {made[0].name, *(r.name for r in made[-(KEEP_UNREFERENCED + 1) :])}
