"""Stamping a status condition: its `lastTransitionTime` changes only when its status does.

A condition carries `type`, `status` ("True", "False", "Unknown"), `reason`, `message`; the writer adds the time
the status last changed, kept from the condition of that type it replaces while the status is the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["by_type", "stamp_all", "stamped", "transition_time"]


def transition_time(previous: Mapping[str, Any] | None, state: object, now: str, *, field: str = "status") -> Any:
    """The `lastTransitionTime` of something now in `state`: `previous`'s while its `field` is the same and it
    has one, else `now`."""
    if previous and previous.get(field) == state:
        return previous.get("lastTransitionTime") or now
    return now


def stamped(condition: Mapping[str, Any], previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
    """`condition` with its `lastTransitionTime`, `previous` being the condition of its type it replaces."""
    return {**condition, "lastTransitionTime": transition_time(previous, condition.get("status"), now)}


def by_type(conditions: Iterable[Any]) -> dict[Any, Mapping[str, Any]]:
    """The conditions that are mappings, by type (of two of a type, the later)."""
    return {c.get("type"): c for c in conditions if isinstance(c, Mapping)}


def stamp_all(wanted: Iterable[Mapping[str, Any]], previous: Iterable[Any], now: str) -> list[dict[str, Any]]:
    """Each of `wanted` stamped against the condition of its type in `previous`."""
    prior = by_type(previous)
    return [stamped(condition, prior.get(condition.get("type")), now) for condition in wanted]
