"""Infrastructure errors of the AIM v1alpha2 consumers, wired (the decisions: `omectl.core.aim.reachability`).

- `is_write_failure` / `write_failed`: a child write that failed (a server error, a throttle or no answer) leaves
  the previous status with `DependenciesReachable` False, written before the error is raised on (the work queue's
  backoff): a v1alpha2 consumer's, a legacy template-path kind's (`failed_write_status`, stamped against the live
  status) and an AIMService's (its child writes wrapped in `child_write`, which raises `ChildWriteFailed`, so a
  failed write of its own status is not taken for one).
- `with_reachability`: an artifact's status as a reconcile computed it; a component with an infrastructure error has
  the grace period decide it, written before the artifact is retried with backoff (`RetryAfterStatus`).
- `with_recovery` (every status write): `DependenciesReachable` True once an object that had one meets no error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from omectl.controller.aim.model_templates import RetryAfterStatus
from omectl.core.aim.reachability import (
    DEPENDENCIES_REACHABLE,
    artifact_infrastructure_error,
    infrastructure_status,
    reachable_condition,
    write_failed_status,
)
from omectl.core.conditions import stamp_all
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
    """`own`, unless a component has an infrastructure error: then raises `RetryAfterStatus` with the grace period's
    status. `previous` is the live status the reconcile started from."""
    error = artifact_infrastructure_error(pvc, pods, check_pods)
    if error is None:
        return own
    status = infrastructure_status(own, previous, error, now=datetime.now(UTC), threshold=threshold)
    raise RetryAfterStatus(status, f"{error.component}: {error.reason}")


def with_recovery(conditions: list[dict[str, Any]], previous: Sequence[Any]) -> list[dict[str, Any]]:
    """`conditions` with `DependenciesReachable` True when they say nothing of it and the previous ones did."""
    if any(c.get("type") == DEPENDENCIES_REACHABLE for c in conditions):
        return conditions
    reachable = reachable_condition(previous, None)
    return conditions if reachable is None else [*conditions, reachable]


def is_write_failure(error: BaseException) -> bool:
    """A write to the API server that got a 5xx or 429 answer, or none (upstream's infrastructure errors)."""
    if isinstance(error, KubeConnectionError):
        return True
    return isinstance(error, KubeAPIError) and error.method != "GET" and (error.status >= 500 or error.status == 429)


def write_failed(obj: Mapping[str, Any], error: BaseException) -> dict[str, Any]:
    """The own status part written after a child write failed, before the error is raised on: `Failed to delete
    resources: ...` for a failed delete, else `Failed to apply resources: ...`, as upstream words them."""
    action = "delete" if isinstance(error, KubeAPIError) and error.method == "DELETE" else "apply"
    return write_failed_status(as_mapping(obj.get("status")), f"Failed to {action} resources: {error}")


def failed_write_status(live: Mapping[str, Any], error: BaseException, now: str) -> dict[str, Any] | None:
    """The whole status written after a child write failed (`write_failed`), its conditions stamped against the live
    ones; None when the live status already says it."""
    current = dict(as_mapping(live.get("status")))
    status = write_failed(live, error)
    status["conditions"] = stamp_all(status["conditions"], list(current.get("conditions") or ()), now)
    return None if status == current else status


class ChildWriteFailed(Exception):
    """A child write that failed as `is_write_failure` says (`error`): the object's status is to be written with
    `DependenciesReachable` False, then `error` raised on."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


@contextmanager
def child_write() -> Iterator[None]:
    """Around a child's write: a failure that `is_write_failure` counts is raised as `ChildWriteFailed`."""
    try:
        yield
    except Exception as error:
        if is_write_failure(error):
            raise ChildWriteFailed(error) from error
        raise
