"""`AIM_ENGINE_ARGS`: the engine's arguments as one JSON object in one env var, merged key by key across layers.

Upstream deep-merges it where env lists of the runtime-config layers and of the inference container meet (not in a
download Job's env); the spec is silent, so upstream's merge applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim import gojson

ENGINE_ARGS: Final = "AIM_ENGINE_ARGS"


def merge_engine_args(lower: Mapping[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    """The upper entry, its `value` deep-merged over the lower's when both are JSON objects (the upper wins per
    key, nested objects recurse); an empty value takes the other side's; anything else keeps the upper verbatim.
    The merged object is written as upstream's Go writes it (`gojson`: keys sorted, no spaces, numbers as
    float64)."""
    below, above = lower.get("value"), upper.get("value")
    if "valueFrom" in upper or "valueFrom" in lower or not isinstance(below, str) or not isinstance(above, str):
        return upper
    if not above:
        return {**upper, "value": below}
    if not below:
        return upper
    below_obj, above_obj = _json_object(below), _json_object(above)
    if below_obj is None or above_obj is None:
        return upper
    merged = _deep_merge(below_obj, above_obj)
    return {**upper, "value": gojson.marshal(merged)}


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = gojson.unmarshal(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _deep_merge(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    out = dict(lower)
    for key, value in upper.items():
        below = out.get(key)
        out[key] = _deep_merge(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
    return out
