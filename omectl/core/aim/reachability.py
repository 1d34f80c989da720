"""Infrastructure errors of an AIMArtifact's reconcile, as upstream's state engine treats them
(docs/aim-resources.md, "AIMArtifact"; upstream's `internal/controller/utils/reconciler.go`).

Two kinds, decided differently, as upstream does:

- A write the controller must make (a child's apply or delete) that fails with a server error or no answer: the
  object's status stays what its observations last gave (a failed write changes nothing observed) with
  `DependenciesReachable` False / `InfrastructureError` / `Failed to apply resources: <error>`, and the object is
  retried with backoff (`write_failed_status`). Upstream's write failures never degrade the object.
- A component whose health is an infrastructure error (the claim `Lost`: `CachePvc` / `PvcLost`; a Job pod the
  kubelet evicted: `PodEvicted`; `artifact_infrastructure_error`): `DependenciesReachable` False /
  `InfrastructureError` / `Cannot reach dependencies` at once, and the grace period (`DEGRADATION_THRESHOLD_S` from
  the time that condition turned False, its `lastTransitionTime`) keeps an artifact that was Ready as it was; after
  the grace, or at once for one that was not Ready, the artifact is `Degraded`, `Ready` False with the component's
  reason and `Component <name> is not ready: <message>` (`infrastructure_status`). Either way it is retried with
  backoff, so the reconcile after the grace degrades it.

Once a reconcile meets no infrastructure error, a `DependenciesReachable` the status had turns True / `Reachable` /
`All dependencies are reachable` (`reachable_condition`); an object that never had one gets none.

The time the error appeared is kept in the condition's `lastTransitionTime` (it changes only when the condition's
status does), as upstream keeps it: it survives a restart of the controller and a reconcile by another replica.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from omectl.core.aim.artifact_pods import INFRASTRUCTURE, first_failure, pod_phase
from omectl.core.jsonish import as_mapping

DEGRADATION_THRESHOLD_S: Final = 10.0
"""Upstream's `degradationThreshold`: how long an infrastructure error may last before a Ready object degrades."""

DEPENDENCIES_REACHABLE: Final = "DependenciesReachable"
INFRASTRUCTURE_ERROR: Final = "InfrastructureError"
CANNOT_REACH: Final = "Cannot reach dependencies"
REACHABLE: Final = "Reachable"
ALL_REACHABLE: Final = "All dependencies are reachable"
DEGRADED: Final = "Degraded"


@dataclass(frozen=True)
class ComponentError:
    """A component's infrastructure error: upstream's component name, its reason and message."""

    component: str
    reason: str
    message: str


def artifact_infrastructure_error(
    pvc: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]] = (),
    check_pods: Sequence[Mapping[str, Any]] = (),
) -> ComponentError | None:
    """The first of the artifact's components whose health is an infrastructure error (module docstring)."""
    if pvc is not None and as_mapping(pvc.get("status")).get("phase") == "Lost":
        return ComponentError("CachePvc", "PvcLost", "PVC lost its underlying volume")
    for component, group in (("CheckSizeJobPods", check_pods), ("DownloadJobPods", pods)):
        failure = first_failure([p for p in group if pod_phase(p) == "Failed"])
        if failure is not None and failure.category == INFRASTRUCTURE:
            return ComponentError(component, failure.reason, failure.message)
    return None


def condition(condition_type: str, status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": condition_type, "status": "True" if status else "False", "reason": reason, "message": message}


def _previous(conditions: Sequence[Any], condition_type: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == condition_type), None)


def reachable_condition(previous_conditions: Sequence[Any], failure: str | None) -> dict[str, str] | None:
    """`DependenciesReachable`: False with `failure` while there is one; True once a status that had the condition
    meets none; None for a status that never had it."""
    if failure is not None:
        return condition(DEPENDENCIES_REACHABLE, False, INFRASTRUCTURE_ERROR, failure)
    if _previous(previous_conditions, DEPENDENCIES_REACHABLE) is None:
        return None
    return condition(DEPENDENCIES_REACHABLE, True, REACHABLE, ALL_REACHABLE)


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def within_grace(previous_conditions: Sequence[Any], now: datetime, threshold: float) -> bool:
    """Whether an infrastructure error met now is within its grace period: it just appeared (the previous
    `DependenciesReachable` is not False), or that condition turned False less than `threshold` seconds ago."""
    previous = _previous(previous_conditions, DEPENDENCIES_REACHABLE)
    if previous is None or previous.get("status") != "False":
        return True
    since = _parse_time(previous.get("lastTransitionTime"))
    return since is None or (now - since).total_seconds() < threshold


def _with(conditions: Sequence[Any], *replacing: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`conditions` (without timestamps: the writer stamps them again) with `replacing` laid over them by type."""
    types = {c["type"] for c in replacing}
    kept = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"}
        for c in conditions
        if isinstance(c, Mapping) and c.get("type") not in types
    ]
    return [*kept, *(dict(c) for c in replacing)]


def write_failed_status(previous_status: Mapping[str, Any], failure: str) -> dict[str, Any]:
    """The own status part after a failed write: the previous status, `DependenciesReachable` False with `failure`
    (`Failed to apply resources: ...` or `Failed to delete resources: ...`)."""
    out = dict(previous_status)
    dependencies = reachable_condition((), failure)
    assert dependencies is not None
    out["conditions"] = _with(out.get("conditions") or (), dependencies)
    return out


def infrastructure_status(
    own: Mapping[str, Any],
    previous_status: Mapping[str, Any],
    error: ComponentError,
    *,
    now: datetime,
    threshold: float = DEGRADATION_THRESHOLD_S,
) -> dict[str, Any]:
    """The own status part while a component has an infrastructure error (module docstring): `own` (what the
    observations give) becomes the previous status within the grace of an artifact that was Ready, else Degraded."""
    previous_conditions = list(previous_status.get("conditions") or ())
    unreachable = condition(DEPENDENCIES_REACHABLE, False, INFRASTRUCTURE_ERROR, CANNOT_REACH)
    if previous_status.get("status") == "Ready" and within_grace(previous_conditions, now, threshold):
        return {**previous_status, "conditions": _with(previous_conditions, unreachable)}
    message = f"Component {error.component} is not ready: {error.message}"
    return {
        **own,
        "status": DEGRADED,
        "conditions": _with(
            own.get("conditions") or (),
            unreachable,
            condition(f"{error.component}Ready", False, error.reason, error.message),
            condition("Ready", False, error.reason, message),
        ),
    }
