"""An InferenceService's readiness from its workloads: component conditions, Ready, URLs and revisions; the status
the engine reconciler writes from it."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.ome.engine_status import (
    desired_isvc_status,
    drift_condition,
    readiness,
    rendered_outline,
    rolled_out,
    service_url,
)


def workload(kind: str, name: str, component: str, revision: str = "rt-abc") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1" if kind == "Deployment" else "leaderworkerset.x-k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"component": component, "ome.io/inferenceservice": "svc"},
            "annotations": {"ome.io/runtime-revision": revision},
        },
    }


def service(name: str, component: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "ns", "labels": {"component": component}},
    }


def reported(available: str | None, *, generation: int = 1, observed: int = 1, message: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": observed}
    if available is not None:
        reason = "MinimumReplicasAvailable" if available == "True" else "MinimumReplicasUnavailable"
        status["conditions"] = [{"type": "Available", "status": available, "reason": reason, "message": message}]
    return {"metadata": {"generation": generation}, "status": status}


ENGINE = [workload("Deployment", "svc-engine", "engine"), service("svc-engine", "engine")]


def by_type(conditions: list[dict[str, str]]) -> dict[str, dict[str, str]]:
    return {c["type"]: c for c in conditions}


def test_an_available_engine_makes_the_service_ready_with_its_url_and_revisions() -> None:
    ready = readiness(ENGINE, lambda kind, name: reported("True"))
    conditions = by_type(ready.conditions)
    assert conditions["EngineReady"]["status"] == "True"
    assert conditions["EngineReady"]["reason"] == "MinimumReplicasAvailable"
    assert conditions["Ready"]["status"] == "True"
    assert ready.ready
    assert ready.url == "http://svc-engine.ns.svc.cluster.local" == service_url("svc-engine", "ns")
    assert ready.components == {
        "engine": {"url": ready.url, "latestCreatedRevision": "rt-abc", "latestReadyRevision": "rt-abc"}
    }


def test_a_deployment_still_rolling_out_is_ready_but_its_new_revision_is_not() -> None:
    # A real cluster's Deployment updated to an image that cannot be pulled (maxUnavailable 0, maxSurge 1): the old
    # pod still serves, so Available stays True; the new ReplicaSet's pod is not available.
    rolling = reported("True")
    rolling["status"].update(replicas=2, updatedReplicas=1, availableReplicas=1, unavailableReplicas=1)
    ready = readiness(ENGINE, lambda kind, name: rolling)
    assert by_type(ready.conditions)["EngineReady"]["status"] == "True" and ready.ready  # it serves
    assert ready.components["engine"] == {"url": ready.url, "latestCreatedRevision": "rt-abc"}
    assert not rolled_out("Deployment", rolling)
    done = reported("True")
    done["status"].update(replicas=1, updatedReplicas=1, availableReplicas=1)
    ready = readiness(ENGINE, lambda kind, name: done)
    assert ready.components["engine"]["latestReadyRevision"] == "rt-abc" and rolled_out("Deployment", done)
    # the new pods up but not yet available (minReadySeconds), or none of an old generation observed yet
    starting = reported("True")
    starting["status"].update(replicas=1, updatedReplicas=1)
    assert not rolled_out("Deployment", starting)
    assert not rolled_out("Deployment", reported("True", generation=2, observed=1))
    assert not rolled_out("Deployment", None)
    assert rolled_out("LeaderWorkerSet", reported("True")) and not rolled_out(
        "LeaderWorkerSet", reported("True", generation=2)
    )


def test_an_engine_that_does_not_fit_carries_the_schedulers_message_to_ready() -> None:
    message = "Deployment does not have minimum availability. 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    ready = readiness(ENGINE, lambda kind, name: reported("False", message=message))
    conditions = by_type(ready.conditions)
    assert conditions["EngineReady"] == {
        "type": "EngineReady",
        "status": "False",
        "reason": "MinimumReplicasUnavailable",
        "message": message,
    }
    assert conditions["Ready"] == {"type": "Ready", "status": "False", "reason": "EngineNotReady", "message": message}
    assert "latestReadyRevision" not in ready.components["engine"]
    assert not ready.ready


@pytest.mark.parametrize(
    "live",
    [
        None,  # not created yet
        reported(None),  # no Available condition yet
        reported("True", generation=2, observed=1),  # the newest spec is not observed yet
    ],
)
def test_a_workload_not_yet_reporting_is_initializing(live: dict[str, Any] | None) -> None:
    ready = readiness(ENGINE, lambda kind, name: live)
    conditions = by_type(ready.conditions)
    assert conditions["EngineReady"] == {
        "type": "EngineReady",
        "status": "Unknown",
        "reason": "Initializing",
        "message": "engine component initializing",
    }
    assert conditions["Ready"]["status"] == "Unknown"
    assert conditions["Ready"]["reason"] == "EngineNotReady"


def test_pd_disaggregated_needs_every_component_and_the_router_is_the_entry_point() -> None:
    rendered = [
        *ENGINE,
        workload("Deployment", "svc-decoder", "decoder"),
        service("svc-decoder", "decoder"),
        workload("Deployment", "svc-router", "router"),
        service("svc-router", "router"),
    ]
    states = {"svc-engine": "True", "svc-decoder": "False", "svc-router": "True"}
    ready = readiness(rendered, lambda kind, name: reported(states[name], message=f"{name} waits"))
    conditions = by_type(ready.conditions)
    assert [c["type"] for c in ready.conditions] == ["EngineReady", "DecoderReady", "RouterReady", "Ready"]
    assert conditions["Ready"]["reason"] == "DecoderNotReady"
    assert conditions["Ready"]["message"] == "svc-decoder waits"
    assert ready.url == "http://svc-router.ns.svc.cluster.local"
    states["svc-decoder"] = "True"
    assert readiness(rendered, lambda kind, name: reported(states[name])).ready


def test_the_outline_a_pending_status_keeps_gives_the_readiness_of_the_whole_render_without_its_spec() -> None:
    rendered = [
        workload("Deployment", "svc-engine", "engine", revision="rt-1"),
        service("svc-engine", "engine"),
        workload("LeaderWorkerSet", "svc-decoder", "decoder"),
        service("svc-decoder", "decoder"),
    ]
    for obj in rendered:
        obj["spec"] = {"template": {"spec": {"containers": [{"name": "ome-container", "image": "i"}]}}}
    outlines = [rendered_outline(obj) for obj in rendered]
    assert all("spec" not in o for o in outlines)
    for states in ({"svc-engine": "True", "svc-decoder": "False"}, {"svc-engine": "True", "svc-decoder": "True"}):
        live = lambda kind, name, states=states: reported(states[name])  # noqa: E731
        assert readiness(outlines, live) == readiness(rendered, live)


def test_a_leader_worker_set_is_read_by_its_own_kind_and_name() -> None:
    rendered = [workload("LeaderWorkerSet", "lws-svc-engine", "engine"), service("svc-engine", "engine")]
    asked: list[tuple[str, str]] = []

    def live(kind: str, name: str) -> dict[str, Any]:
        asked.append((kind, name))
        return reported("True")

    assert readiness(rendered, live).ready
    assert asked == [("LeaderWorkerSet", "lws-svc-engine")]


def test_a_false_component_wins_over_an_initializing_one_in_ready() -> None:
    rendered = [*ENGINE, workload("Deployment", "svc-decoder", "decoder")]
    states = {"svc-engine": None, "svc-decoder": "False"}
    ready = readiness(rendered, lambda kind, name: reported(states[name]) if states[name] else None)
    assert by_type(ready.conditions)["Ready"]["status"] == "False"
    assert by_type(ready.conditions)["Ready"]["reason"] == "DecoderNotReady"


def test_the_desired_status_keeps_an_unchanged_conditions_time_and_stamps_a_changed_one() -> None:
    rendered = [workload("Deployment", "svc-engine", "engine"), service("svc-engine", "engine")]
    ready = readiness(rendered, lambda kind, name: reported("True"))
    runtime = {"name": "rt", "kind": "ServingRuntime", "chain": ["rt"], "revision": "rt-abc", "hash": "abc"}
    drift = drift_condition("False", "AutoSync", "the workload follows the live runtime")
    isvc: dict[str, Any] = {"metadata": {"name": "svc", "generation": 3}, "status": {"conditions": [{"type": "Other"}]}}

    first = desired_isvc_status(isvc, runtime, drift, ready, "2026-01-01T00:00:00Z")
    assert first is not None
    assert first["observedGeneration"] == 3 and first["runtime"] == runtime
    assert first["url"] == service_url("svc-engine", "ns")
    assert [c["type"] for c in first["conditions"]] == ["Other", "EngineReady", "Ready", "RuntimeDrifted"]
    assert {c.get("lastTransitionTime") for c in first["conditions"][1:]} == {"2026-01-01T00:00:00Z"}
    assert desired_isvc_status({**isvc, "status": first}, runtime, drift, ready, "later") is None  # unchanged

    down = readiness(rendered, lambda kind, name: reported("False", message="0/1 nodes are available"))
    second = desired_isvc_status({**isvc, "status": first}, runtime, drift, down, "2026-01-02T00:00:00Z")
    assert second is not None
    times = {c["type"]: c["lastTransitionTime"] for c in second["conditions"][1:]}
    assert times == {
        "EngineReady": "2026-01-02T00:00:00Z",
        "Ready": "2026-01-02T00:00:00Z",
        "RuntimeDrifted": "2026-01-01T00:00:00Z",
    }
