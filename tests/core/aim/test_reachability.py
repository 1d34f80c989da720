"""An AIMArtifact's infrastructure errors (omectl/core/aim/reachability.py), as upstream's state engine decides
them: `DependenciesReachable`, the grace period within and after it, a failed write, and the error clearing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from omectl.core.aim.reachability import (
    DEGRADATION_THRESHOLD_S,
    ComponentError,
    artifact_infrastructure_error,
    infrastructure_status,
    reachable_condition,
    within_grace,
    write_failed_status,
)
from omectl.settings import Settings

NOW = datetime(2026, 12, 6, 12, 0, 0, tzinfo=UTC)
LOST = ComponentError("CachePvc", "PvcLost", "PVC lost its underlying volume")


def stamp(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def unreachable_since(seconds_ago: float) -> dict[str, str]:
    return {
        "type": "DependenciesReachable",
        "status": "False",
        "reason": "InfrastructureError",
        "message": "Cannot reach dependencies",
        "lastTransitionTime": stamp(seconds_ago),
    }


def ready_status(*extra: dict[str, str]) -> dict[str, Any]:
    return {
        "status": "Ready",
        "persistentVolumeClaim": "a-cache",
        "conditions": [
            {"type": "StorageReady", "status": "True", "reason": "PVCBound", "message": "PVC a-cache"},
            {
                "type": "Ready",
                "status": "True",
                "reason": "ArtifactReady",
                "message": "Complete",
                "lastTransitionTime": stamp(3600),
            },
            *extra,
        ],
    }


def by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status["conditions"]}


def test_the_threshold_is_upstreams_ten_seconds_and_the_settings_default() -> None:
    assert DEGRADATION_THRESHOLD_S == 10.0
    assert Settings.model_fields["aim_degradation_threshold_seconds"].default == DEGRADATION_THRESHOLD_S


def test_an_error_just_met_and_one_younger_than_the_threshold_are_within_the_grace() -> None:
    assert within_grace([], NOW, 10.0), "no DependenciesReachable yet: the error appears now"
    assert within_grace([{**unreachable_since(0), "status": "True"}], NOW, 10.0), "reachable before"
    assert within_grace([unreachable_since(9)], NOW, 10.0)
    assert not within_grace([unreachable_since(10)], NOW, 10.0)
    assert not within_grace([unreachable_since(2)], NOW, 1.5), "a shorter threshold (the setting)"


def test_a_ready_artifact_keeps_its_status_within_the_grace_with_dependencies_unreachable() -> None:
    previous = ready_status()
    observed = {
        "status": "Ready",
        "conditions": [{"type": "StorageReady", "status": "False", "reason": "PVCPending", "message": "PVC a-cache"}],
    }
    held = infrastructure_status(observed, previous, LOST, now=NOW, threshold=10.0)
    assert held["status"] == "Ready"
    conditions = by_type(held)
    assert conditions["Ready"]["status"] == "True" and conditions["StorageReady"]["reason"] == "PVCBound"
    assert conditions["DependenciesReachable"] == {
        "type": "DependenciesReachable",
        "status": "False",
        "reason": "InfrastructureError",
        "message": "Cannot reach dependencies",
    }
    # the second reconcile, 5 s later, is still within it
    later = infrastructure_status(observed, ready_status(unreachable_since(5)), LOST, now=NOW, threshold=10.0)
    assert later["status"] == "Ready"


def test_after_the_grace_the_artifact_is_degraded_as_upstream_words_it() -> None:
    previous = ready_status(unreachable_since(11))
    observed = {
        "status": "Ready",
        "download": {"message": "Complete"},
        "conditions": [
            {"type": "DownloadReady", "status": "True", "reason": "DownloadComplete", "message": "Complete"},
            {"type": "Ready", "status": "True", "reason": "ArtifactReady", "message": "Complete"},
        ],
    }
    degraded = infrastructure_status(observed, previous, LOST, now=NOW, threshold=10.0)
    assert degraded["status"] == "Degraded"
    assert degraded["download"] == {"message": "Complete"}, "what the observations give stays"
    conditions = by_type(degraded)
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"], conditions["Ready"]["message"]) == (
        "False",
        "PvcLost",
        "Component CachePvc is not ready: PVC lost its underlying volume",
    )
    assert (conditions["CachePvcReady"]["status"], conditions["CachePvcReady"]["reason"]) == ("False", "PvcLost")
    assert (conditions["DependenciesReachable"]["status"], conditions["DependenciesReachable"]["message"]) == (
        "False",
        "Cannot reach dependencies",
    )
    assert conditions["DownloadReady"]["status"] == "True"


def test_an_artifact_that_was_not_ready_is_degraded_at_once() -> None:
    """Upstream's grace keeps a component's previous status: only a Ready one keeps the object Ready."""
    previous = {"status": "Downloading", "conditions": []}
    evicted = ComponentError("DownloadJobPods", "PodEvicted", "The node was low on resource: memory.")
    status = infrastructure_status({"status": "Failed", "conditions": []}, previous, evicted, now=NOW, threshold=10.0)
    assert status["status"] == "Degraded"
    assert by_type(status)["Ready"]["reason"] == "PodEvicted"


def test_the_error_clearing_makes_dependencies_reachable_and_one_never_met_adds_nothing() -> None:
    assert reachable_condition([unreachable_since(30)], None) == {
        "type": "DependenciesReachable",
        "status": "True",
        "reason": "Reachable",
        "message": "All dependencies are reachable",
    }
    assert reachable_condition([], None) is None


def test_a_failed_write_keeps_the_previous_status_and_says_what_failed() -> None:
    previous = {
        "status": "Pending",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "DownloadPending",
                "message": "m",
                "lastTransitionTime": "t",
            },
        ],
    }
    status = write_failed_status(previous, "Failed to apply resources: 503 ServiceUnavailable")
    assert status["status"] == "Pending"
    assert by_type(status)["Ready"]["reason"] == "DownloadPending"
    assert by_type(status)["DependenciesReachable"] == {
        "type": "DependenciesReachable",
        "status": "False",
        "reason": "InfrastructureError",
        "message": "Failed to apply resources: 503 ServiceUnavailable",
    }


def pod(name: str, status: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": status}


def test_a_lost_claim_and_an_evicted_pod_are_infrastructure_errors_a_failed_container_is_not() -> None:
    assert artifact_infrastructure_error({"status": {"phase": "Lost"}}) == LOST
    assert artifact_infrastructure_error({"status": {"phase": "Bound"}}) is None
    evicted = pod("d", {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."})
    found = artifact_infrastructure_error(None, pods=[evicted])
    assert found == ComponentError("DownloadJobPods", "PodEvicted", "The node was low on resource: memory.")
    check = artifact_infrastructure_error(None, check_pods=[evicted])
    assert check is not None and check.component == "CheckSizeJobPods"
    rbac = pod(
        "d",
        {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "x",
                    "state": {
                        "terminated": {
                            "exitCode": 1,
                            "reason": "Error",
                            "message": 'pods is forbidden: User "x" cannot patch resource "pods"',
                        }
                    },
                }
            ],
        },
    )
    assert artifact_infrastructure_error(None, pods=[rbac]) is None, "upstream fails it: PodFailed, InvalidSpec"
