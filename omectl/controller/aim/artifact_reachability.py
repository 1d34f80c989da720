"""An AIMArtifact's infrastructure errors, wired (the decisions: `omectl.core.aim.reachability`).

- `with_reachability`: the status a reconcile computed, with `DependenciesReachable` as the artifact's components say;
  a component with an infrastructure error has the grace period decide the status, written before the artifact is
  retried with backoff (`RetryAfterStatus`).
- `is_write_failure` / `write_failed`: a child write that failed (a server error, a throttle or no answer) leaves the
  previous status with `DependenciesReachable` False, written before the retry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from omectl.controller.aim.model_templates import RetryAfterStatus
from omectl.core.aim.reachability import (
    artifact_infrastructure_error,
    infrastructure_status,
    reachable_condition,
    write_failed_status,
)
from omectl.core.jsonish import as_mapping
from omectl.kube.errors import KubeAPIError, KubeConnectionError


def with_reachability(
    previous: Mapping[str, Any],
    own: dict[str, Any],
    threshold: float,
    *,
    pvc: Mapping[str, Any] | None = None,
    pods: Sequence[Mapping[str, Any]] = (),
    check_pods: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """`own` with `DependenciesReachable` True after an infrastructure error; raises `RetryAfterStatus` with the
    grace period's status while a component has one. `previous` is the live status the reconcile started from."""
    error = artifact_infrastructure_error(pvc, pods, check_pods)
    if error is not None:
        status = infrastructure_status(own, previous, error, now=datetime.now(UTC), threshold=threshold)
        raise RetryAfterStatus(status, f"{error.component}: {error.reason}")
    reachable = reachable_condition(list(previous.get("conditions") or ()), None)
    if reachable is None:
        return own
    return {**own, "conditions": [*(own.get("conditions") or ()), reachable]}


def is_write_failure(error: BaseException) -> bool:
    """A write to the API server that got a 5xx or 429 answer, or none (upstream's infrastructure errors)."""
    if isinstance(error, KubeConnectionError):
        return True
    return isinstance(error, KubeAPIError) and error.method != "GET" and (error.status >= 500 or error.status == 429)


def write_failed(artifact: Mapping[str, Any], error: BaseException) -> dict[str, Any]:
    """The own status part written after a child write failed, before the retry."""
    return write_failed_status(as_mapping(artifact.get("status")), f"Failed to apply resources: {error}")
