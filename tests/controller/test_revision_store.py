"""The runtime revisions a cluster's `RevisionStore` keeps in memory: one copy of each merged spec."""

from __future__ import annotations

import copy
from pathlib import Path

from omectl.controller.ome.revisions import RevisionStore
from omectl.kube.client import ClusterClient
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
