"""A runtime's inheritance status: `status.inheritanceChain`, the `InheritanceReady` condition and
`observedGeneration` of a ServingRuntime or ClusterServingRuntime, as the runtime-status reconciler
(`omectl.controller.ome.runtime_status`) and the fleet-scale benchmark's kopf peer write it.

A resolved chain is written root first with `InheritanceReady=True/Resolved`; a broken one sets `InheritanceReady=False`
with the chain error's reason and message and keeps the last chain that resolved. An unchanged status is None: nothing
to write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.conditions import transition_time

CONDITION: Final = "InheritanceReady"
RESOLVED: Final = "Resolved"


def resolved_message(names: tuple[str, ...]) -> str:
    return f"inheritance chain resolved: [{' '.join(names)}]"


def desired_runtime_status(
    live: Mapping[str, Any], chain: tuple[str, ...] | None, reason: str, message: str, now: str
) -> dict[str, Any] | None:
    """The status of a runtime whose chain resolved to `chain` (None: broken, the last chain kept), or None when the
    live status already says it."""
    status = dict(live.get("status") or {})
    generation = int((live.get("metadata") or {}).get("generation", 0) or 0)
    new = dict(status)
    if chain is not None:
        new["inheritanceChain"] = list(chain)
    state = "True" if chain is not None else "False"
    conditions = [dict(c) for c in status.get("conditions") or []]
    prior = next((c for c in conditions if c.get("type") == CONDITION), None)
    condition = {
        "type": CONDITION,
        "status": state,
        "reason": reason,
        "message": message,
        "lastTransitionTime": transition_time(prior, state, now),
        "observedGeneration": generation,
    }
    if prior is None:
        conditions.append(condition)
    else:
        conditions[conditions.index(prior)] = condition
    new["conditions"] = conditions
    new["observedGeneration"] = generation
    return None if status == new else new
