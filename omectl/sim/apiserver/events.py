"""core/v1 Event <-> events.k8s.io/v1 Event: two views of one stored object, as in the real server."""

from __future__ import annotations

from typing import Any

# (events.k8s.io/v1 field, core/v1 field)
_RENAMES = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
_SHARED = ("metadata", "related", "reason", "type", "action", "reportingInstance", "eventTime", "series")


def core_to_events_v1(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "events.k8s.io/v1", "kind": "Event"}
    for key in _SHARED:
        if key in obj:
            out[key] = obj[key]
    for new, old in _RENAMES:
        if old in obj:
            out[new] = obj[old]
    if "reportingController" not in out and (obj.get("source") or {}).get("component"):
        out["reportingController"] = obj["source"]["component"]
    if "reportingInstance" not in out and (obj.get("source") or {}).get("host"):
        out["reportingInstance"] = obj["source"]["host"]
    return out


def events_v1_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"apiVersion": "v1", "kind": "Event"}
    for key in _SHARED:
        if key in obj:
            out[key] = obj[key]
    for new, old in _RENAMES:
        if new in obj:
            out[old] = obj[new]
    return out
