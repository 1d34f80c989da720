"""What the controller asks the API server for while it renders and rolls out: with its informers synced, a
rendered object it has not seen is applied without a GET first (the miss already says "absent"), and an edit that
changes a render is one apply per object, with no read before it. A new InferenceService costs three requests:
its Deployment applied, its Service applied, its status written."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from omectl.sim.apiserver.requestlog import RequestRecord
from tests.resilience.workload import apply_all, inference_service, mixed_fleet

pytestmark = pytest.mark.xdist_group("e2e")
RENDERED = {"deployments", "services", "leaderworkersets", "aimservices", "jobs", "httproutes"}


def controller_calls(records: list[RequestRecord]) -> Counter[tuple[str, str]]:
    """(verb, resource) of the controller's calls on rendered kinds, ignoring its informers' lists and watches."""
    return Counter(
        (r.verb, r.resource)
        for r in records
        if r.resource in RENDERED and r.verb not in ("list", "watch") and "omectl" in r.user_agent.lower()
    )


async def test_rendering_and_rolling_out_read_nothing_the_informers_hold(tmp_path: Path) -> None:
    async with mixed_fleet(tmp_path, "re-", count=1, seed=False) as fleet:
        server = fleet.servers[0]
        start = server.request_log.total
        await fleet.seed()
        await fleet.converged(60)
        render = controller_calls(server.request_log.records(start))
        assert render[("patch", "deployments")] > 0, render  # the engines were applied
        assert not [call for call in render if call[0] == "get"], f"reads before the applies: {render}"

        start = server.request_log.total
        await fleet.rollout("registry.example/sglang:rolled")
        await fleet.converged(60)
        rollout = controller_calls(server.request_log.records(start))
        assert rollout[("patch", "deployments")] > 0, rollout
        assert not [call for call in rollout if call[0] == "get"], f"reads before the applies: {rollout}"


async def test_a_new_inference_service_costs_two_applies_and_a_status_write(tmp_path: Path) -> None:
    async with mixed_fleet(tmp_path, "rn-", count=1) as fleet:
        server = fleet.servers[0]
        start = server.request_log.total
        await apply_all(server, [inference_service("isvc-new", "team-a")])
        await fleet.converged(60)  # the status records the render: it was written after the applies
        await fleet.healthy()
        calls = [
            (r.verb, r.resource, r.subresource, r.name, r.code)
            for r in server.request_log.records(start)
            # the cluster Lease's renewals run on their own timer, not for the InferenceService
            if r.verb not in ("list", "watch") and "omectl" in r.user_agent.lower() and r.resource != "leases"
        ]
        assert calls == [
            ("patch", "deployments", "", "isvc-new-engine", 201),
            ("patch", "services", "", "isvc-new-engine", 201),
            ("update", "inferenceservices", "status", "isvc-new", 200),
        ]
