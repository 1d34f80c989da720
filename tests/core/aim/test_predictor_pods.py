"""The `InferenceServicePods` component read from an InferenceService's predictor pods, in upstream aim-engine's order
(its pods' health: image pulls, failures, readiness, then a pending pod's events)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from omectl.core.aim.predictor_pods import pods_component, slim_pod_status
from omectl.core.aim.status import Component, RollUp, roll_up

SCHEDULER = "0/4 nodes are available: 4 Insufficient amd.com/gpu."
READY_ISVC = Component("InferenceService", "Ready", "InferenceServiceReady", "")


def conditions(rolled: RollUp) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in rolled.conditions}


def pod(phase: str, *, uid: str = "u1", ready: bool = False, **status: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": "True" if ready else "False"}]
    return {
        "metadata": {"name": f"p-{uid}", "uid": uid},
        "status": {"phase": phase, "conditions": conditions, **status},
    }


def waiting(reason: str, message: str) -> list[dict[str, Any]]:
    return [{"name": "kserve-container", "state": {"waiting": {"reason": reason, "message": message}}}]


def event(reason: str, message: str, at: str) -> dict[str, Any]:
    return {"reason": reason, "message": message, "lastTimestamp": at}


def no_events(_: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return []


def test_an_inference_service_without_predictor_pods_is_progressing_with_no_pods_so_its_service_starts() -> None:
    pods = pods_component([], no_events)
    assert (pods.condition_type, pods.state, pods.reason, pods.message) == (
        "InferenceServicePodsReady",
        "Progressing",
        "NoPods",
        "No pods found",
    )
    rolled = roll_up([READY_ISVC, pods])
    assert rolled.status == "Starting", "a ready InferenceService without pods does not make the service Running"
    assert conditions(rolled)["InferenceServicePodsReady"] == ("False", "NoPods")
    assert conditions(rolled)["Ready"] == ("False", "Progressing")
    running = roll_up([READY_ISVC, pods_component([pod("Running", ready=True)], no_events)])
    assert running.status == "Running"
    assert conditions(running)["InferenceServicePodsReady"] == ("True", "PodsReady")


def test_a_pod_no_node_fits_makes_the_service_pending_with_the_schedulers_latest_event() -> None:
    events = [
        event("FailedScheduling", "0/4 nodes are available: earlier.", "2026-12-06T10:00:00Z"),
        event("Pulling", "Pulling image", "2026-12-06T10:00:05Z"),
        event("FailedScheduling", SCHEDULER, "2026-12-06T10:00:02Z"),
    ]
    pods = pods_component([pod("Pending")], lambda p: events if p["metadata"]["uid"] == "u1" else [])
    assert pods is not None
    assert (pods.condition_type, pods.state, pods.reason, pods.message) == (
        "InferenceServicePodsReady",
        "Pending",
        "FailedScheduling",
        SCHEDULER,
    )
    rolled = roll_up([pods])
    assert rolled.status == "Pending"
    assert rolled.conditions[-1]["reason"] == "Progressing"


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        ([event("Pulling", 'Pulling image "x"', "t1")], ("Progressing", "Pulling", 'Pulling image "x"')),
        ([event("Scheduled", "assigned", "t1")], ("Pending", "PodsPending", "Pods are pending")),
        ([], ("Pending", "PodsPending", "Pods are pending")),
    ],
)
def test_a_pending_pod_without_a_waiting_event_is_pending_or_progressing_while_it_pulls(
    events: list[dict[str, Any]], expected: tuple[str, str, str]
) -> None:
    pods = pods_component([pod("Pending")], lambda _: events)
    assert pods is not None
    assert (pods.state, pods.reason, pods.message) == expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ('failed to pull "x": 401 Unauthorized', ("Failed", "ImagePullAuthFailure")),
        ('failed to pull and unpack image "x": not found', ("Failed", "ImageNotFound")),
        ("dial tcp: i/o timeout", ("Degraded", "ImagePullBackOff")),
    ],
)
def test_an_image_pull_failure_ranks_first_and_is_categorized_by_its_message(
    message: str, expected: tuple[str, str]
) -> None:
    pulling = pod("Pending", uid="u2", containerStatuses=waiting("ErrImagePull", message))
    pods = pods_component([pod("Running", ready=True), pulling], no_events)
    assert pods is not None
    assert (pods.state, pods.reason, pods.message) == (*expected, f"Container kserve-container: {message}")


def test_a_failed_pod_fails_with_its_containers_exit() -> None:
    terminated = {"reason": "Error", "message": "boom", "exitCode": 3}
    statuses = [{"name": "kserve-container", "state": {"terminated": terminated}}]
    pods = pods_component([pod("Running", ready=True), pod("Failed", uid="u2", containerStatuses=statuses)], no_events)
    assert pods is not None
    assert (pods.state, pods.reason, pods.message) == (
        "Failed",
        "PodFailed",
        "Container kserve-container failed with exit code 3: boom",
    )
    evicted = pods_component([pod("Failed", reason="Evicted", message="low on memory")], no_events)
    assert evicted is not None and (evicted.reason, evicted.message) == ("PodEvicted", "low on memory")


def test_one_ready_pod_makes_the_pods_ready_and_running_ones_are_starting() -> None:
    ready = pods_component([pod("Pending"), pod("Running", uid="u2", ready=True)], no_events)
    assert ready is not None and (ready.state, ready.reason, ready.message) == ("Ready", "PodsReady", "Pods are ready")
    starting = pods_component([pod("Pending"), pod("Running", uid="u2")], no_events)
    assert starting is not None and (starting.state, starting.reason) == ("Starting", "PodsStarting")
    unknown = pods_component([pod("Unknown")], no_events)
    assert unknown is not None and (unknown.state, unknown.reason) == ("Progressing", "PodsProgressing")


def test_the_cache_keeps_only_the_status_fields_the_component_reads() -> None:
    status = {
        "phase": "Pending",
        "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": SCHEDULER},
            {"type": "Ready", "status": "False", "lastTransitionTime": "t"},
        ],
        "containerStatuses": [
            {
                "name": "c",
                "image": "i",
                "imageID": "d",
                "state": {"waiting": {"reason": "ErrImagePull", "message": "m"}},
            }
        ],
        "hostIP": "10.0.0.1",
        "podIPs": [{"ip": "10.244.0.2"}],
        "qosClass": "BestEffort",
    }
    assert slim_pod_status(status) == {
        "phase": "Pending",
        "conditions": [{"type": "Ready", "status": "False"}],
        "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ErrImagePull", "message": "m"}}}],
    }
