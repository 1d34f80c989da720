"""Priority lanes on an embedded cluster: a user's edit made while a profile edit fans out to hundreds of
InferenceServices is reconciled before that fan-out has finished, and so are the statuses of a profile's children
(`omectl/controller/runtime/queue.py`, `Lane`).

The order is read from the API server's commits: no wall-clock limit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.fleet import apply_document
from tests.resilience.workload import (
    CHILD,
    DEPLOYMENTS,
    OME_NAMESPACES,
    PROFILE,
    SERVING_RUNTIMES,
    apply_all,
    child,
    inference_service,
    isvc_names,
    mixed_fleet,
    profile,
    set_profile_image,
    until,
)

pytestmark = pytest.mark.xdist_group("e2e")

BULK = 120  # InferenceServices below the profile beyond the workload's own
ROLLED = "registry.example/sglang:rolled"
ISVC_LABEL = "ome.io/inferenceservice"


def independent_runtime() -> list[dict[str, Any]]:
    """A second profile and its child in team-b: what is built on them is not reached by an edit of the first."""
    other_profile = profile()
    other_profile["metadata"]["name"] = "other-profile"
    other_child = child("team-b")
    other_child["metadata"]["name"] = "other-runtime"
    other_child["metadata"]["annotations"]["ome.io/inherit-from"] = "other-profile"
    return [other_profile, other_child]


def independent_isvc(min_replicas: int) -> dict[str, Any]:
    doc = inference_service("independent", "team-b")
    doc["spec"]["runtime"]["name"] = "other-runtime"
    doc["spec"]["engine"]["minReplicas"] = min_replicas
    return doc


async def test_a_user_edit_during_a_fan_out_of_hundreds_of_keys_is_reconciled_before_the_fan_out_ends(
    tmp_path: Path,
) -> None:
    # two workers: the fan-out takes hundreds of reconciles, so the edit lands while most of it still waits
    async with mixed_fleet(tmp_path, "ln-", count=1, seed=False, concurrency=2) as fleet:
        server = fleet.servers[0]
        await fleet.seed()
        await apply_all(server, independent_runtime())
        await apply_all(server, [inference_service(f"bulk-{i}", "team-a") for i in range(BULK)])
        await apply_all(server, [independent_isvc(1)])
        await fleet.converged(180)
        below_profile = BULK + len(isvc_names())

        rolled: set[str] = set()  # InferenceServices whose engine Deployment was committed with the rolled image
        rolled_when_edit_landed: list[int] = []
        fan_out_started = asyncio.Event()

        def on_commit(event: WatchEvent) -> None:
            if event.key != DEPLOYMENTS or event.type == "DELETED":
                return
            owner = (event.obj["metadata"].get("labels") or {}).get(ISVC_LABEL)
            if owner == "independent":
                if event.obj["spec"]["replicas"] == 3 and not rolled_when_edit_landed:
                    rolled_when_edit_landed.append(len(rolled))
                return
            if event.obj["spec"]["template"]["spec"]["containers"][0]["image"] == ROLLED:
                rolled.add(f"{event.obj['metadata']['namespace']}/{owner}")
                fan_out_started.set()

        server.api.store.listeners.append(on_commit)
        try:
            await set_profile_image(server, ROLLED)
            await asyncio.wait_for(fan_out_started.wait(), 60)
            await apply_document(server, independent_isvc(3))
            await fleet.converged(180)
        finally:
            server.api.store.listeners.remove(on_commit)

        assert len(rolled) == below_profile  # the whole fan-out was done, every engine rolled
        assert rolled_when_edit_landed, "the edited InferenceService's Deployment never got 3 replicas"
        assert rolled_when_edit_landed[0] < below_profile, (
            f"the edit was applied only after all {below_profile} engines of the fan-out had rolled"
        )


def inheritance_reason(runtime: dict[str, Any]) -> str | None:
    conditions = (runtime.get("status") or {}).get("conditions") or []
    return next((c.get("reason") for c in conditions if c.get("type") == "InheritanceReady"), None)


async def test_a_profile_made_again_while_its_delete_still_fans_out_resolves_its_children_before_those_renders(
    tmp_path: Path,
) -> None:
    """The children's statuses wait in their own lane: not behind the renders the delete queued before them."""
    async with mixed_fleet(tmp_path, "lc-", count=1, seed=False, concurrency=2) as fleet:
        server = fleet.servers[0]
        await fleet.seed()
        await apply_all(server, [inference_service(f"bulk-{i}", "team-a") for i in range(BULK)])
        await fleet.converged(180)
        health = fleet.app.controller.clusters[server.name].health
        wanted = {"ParentNotFound": set(OME_NAMESPACES), "Resolved": set(OME_NAMESPACES)}
        seen: dict[str, set[str]] = {"ParentNotFound": set(), "Resolved": set()}
        reconciles_when_resolved: list[int] = []
        recreated = False

        def on_commit(event: WatchEvent) -> None:
            meta = event.obj["metadata"]
            if event.key != SERVING_RUNTIMES or meta["name"] != CHILD or event.type == "DELETED":
                return
            reason = inheritance_reason(event.obj)
            if reason == "ParentNotFound" or (reason == "Resolved" and recreated):
                seen[reason].add(meta["namespace"])
            if recreated and seen["Resolved"] == wanted["Resolved"] and not reconciles_when_resolved:
                reconciles_when_resolved.append(health.reconciles)

        server.api.store.listeners.append(on_commit)
        try:
            profiles = server.api.types.lookup("ome.io", "v1beta1", "clusterservingruntimes")
            assert profiles is not None
            await server.api.delete(profiles, "", PROFILE, {}, WriteOptions())
            await until([server], lambda: seen["ParentNotFound"] == wanted["ParentNotFound"], 60, "ParentNotFound")
            recreated = True
            reconciles_at_recreate = health.reconciles
            await apply_document(server, profile())
            await fleet.converged(180)
        finally:
            server.api.store.listeners.remove(on_commit)

        assert reconciles_when_resolved, "the children were never Resolved again"
        before = reconciles_when_resolved[0] - reconciles_at_recreate
        after = health.reconciles - reconciles_when_resolved[0]
        # the delete left its renders of the InferenceServices queued; the children were resolved ahead of them
        assert before < after, f"{before} reconciles before every child was Resolved again, {after} after"
