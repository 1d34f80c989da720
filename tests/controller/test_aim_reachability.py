"""A failed child write, wired (omectl/controller/aim/reachability.py): which errors count, the status written after
one (upstream's wording for a failed apply and a failed delete, the other conditions' times kept), and an AIMService's
status turning `DependenciesReachable` True once a reconcile meets none."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.controller.aim.reachability import (
    ChildWriteFailed,
    child_write,
    failed_write_status,
    is_write_failure,
)
from omectl.controller.aim.service import desired_status
from omectl.core.aim.resolution import resolve
from omectl.core.aim.status import Component, roll_up
from omectl.kube.errors import KubeAPIError, KubeConnectionError

NOW = "2026-12-06T22:00:00Z"
EARLIER = "2026-12-06T21:00:00Z"


def api_error(status: int, method: str) -> KubeAPIError:
    return KubeAPIError(status, "ServiceUnavailable", "unavailable", method=method, path="/x")


def unreachable(message: str, since: str = EARLIER) -> dict[str, str]:
    return {
        "type": "DependenciesReachable",
        "status": "False",
        "reason": "InfrastructureError",
        "message": message,
        "lastTransitionTime": since,
    }


def service(*conditions: dict[str, Any]) -> dict[str, Any]:
    ready = {
        "type": "Ready",
        "status": "True",
        "reason": "AllComponentsReady",
        "message": "",
        "lastTransitionTime": EARLIER,
    }
    return {
        "metadata": {"name": "s", "namespace": "ns", "generation": 2},
        "spec": {"model": {"name": "m"}},
        "status": {"status": "Running", "observedGeneration": 1, "conditions": [ready, *conditions]},
    }


def test_server_errors_throttles_and_no_answer_on_a_write_count_a_refusal_or_a_read_does_not() -> None:
    assert is_write_failure(api_error(503, "PATCH"))
    assert is_write_failure(api_error(429, "POST"))
    assert is_write_failure(api_error(500, "DELETE"))
    assert is_write_failure(KubeConnectionError("c", "connection refused"))
    assert not is_write_failure(api_error(422, "PATCH"))
    assert not is_write_failure(api_error(503, "GET"))
    assert not is_write_failure(ValueError("x"))


def test_the_status_after_a_failed_write_is_the_live_one_with_dependencies_unreachable_as_upstream_words_it() -> None:
    live = service()
    status = failed_write_status(live, api_error(503, "PATCH"), NOW)
    assert status is not None
    ready, reachable = status["conditions"]
    assert ready == live["status"]["conditions"][0], "kept, its time too"
    assert reachable["message"].startswith("Failed to apply resources: ") and "PATCH /x: 503" in reachable["message"]
    assert (reachable["status"], reachable["reason"], reachable["lastTransitionTime"]) == (
        "False",
        "InfrastructureError",
        NOW,
    )
    assert {k: v for k, v in status.items() if k != "conditions"} == {"status": "Running", "observedGeneration": 1}

    deleted = failed_write_status(live, api_error(503, "DELETE"), NOW)
    assert deleted is not None and deleted["conditions"][-1]["message"].startswith("Failed to delete resources: ")
    again = {**live, "status": status}
    assert failed_write_status(again, api_error(503, "PATCH"), "2026-12-06T23:00:00Z") is None, "already says it"


def test_child_write_raises_a_write_failure_as_child_write_failed_and_anything_else_as_it_is() -> None:
    error = api_error(503, "PATCH")
    with pytest.raises(ChildWriteFailed) as failed, child_write():
        raise error
    assert failed.value.error is error
    with pytest.raises(KubeAPIError), child_write():
        raise api_error(409, "PATCH")


def test_a_services_status_turns_dependencies_reachable_true_once_a_reconcile_meets_no_failed_write() -> None:
    live = service(unreachable("Failed to apply resources: 503"))
    resolution = resolve(live, lambda namespace, name: None)
    rolled = roll_up([Component("InferenceService", "Ready", "Ready", "")], previous_conditions=[])
    status = desired_status(live, rolled, resolution, None)
    assert status is not None
    reachable = [c for c in status["conditions"] if c["type"] == "DependenciesReachable"]
    assert [(c["status"], c["reason"], c["message"]) for c in reachable] == [
        ("True", "Reachable", "All dependencies are reachable")
    ]
    never = desired_status(service(), rolled, resolution, None)
    assert never is not None
    assert all(c["type"] != "DependenciesReachable" for c in never["conditions"]), "none for one that never met one"
