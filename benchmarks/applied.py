"""What a field manager last applied to an object, read back from the object's `managedFields` (as client-go's
`Extract<Kind>` functions do): the fields its `Apply` entry owns, with their live values.

A server-side apply makes its manager own exactly the fields it sent, so this is the body of that apply (with
`force`, every value is the applied one), whoever applied it: the fleet-scale benchmark rebuilds the writes of a
controller that ran in another process from the objects it left on the servers, to replay them as its same-writes
baseline. Lists are matched the way FieldsV1 names their items: `k:{...}` by the item's key fields, `v:...` by the
item's value, `i:N` by position; a leaf (`{}`) owns the whole value, an atomic list included.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["applied_configuration"]

_IDENTITY = ("name", "namespace")  # never in managedFields, always in an apply body


def applied_configuration(live: Mapping[str, Any], manager: str) -> dict[str, Any] | None:
    """The configuration `manager` applied to `live` (None when it never applied it), as a new dict."""
    entry = next(
        (
            e
            for e in live["metadata"].get("managedFields") or []
            if e.get("manager") == manager and e.get("operation") == "Apply" and not e.get("subresource")
        ),
        None,
    )
    if entry is None:
        return None
    body: dict[str, Any] = _owned(live, entry.get("fieldsV1") or {})
    body["apiVersion"], body["kind"] = live["apiVersion"], live["kind"]
    meta = body.setdefault("metadata", {})
    for name in _IDENTITY:
        if name in live["metadata"]:
            meta[name] = live["metadata"][name]
    return copy.deepcopy(body)


def _owned(value: Any, fields: Mapping[str, Any]) -> Any:
    """The part of `value` that the FieldsV1 node `fields` owns."""
    children = {element: child for element, child in fields.items() if element != "."}
    if not children:
        return value  # a leaf: the whole value
    if isinstance(value, dict):
        return {
            element[2:]: _owned(value[element[2:]], child)
            for element, child in children.items()
            if element.startswith("f:") and element[2:] in value
        }
    if isinstance(value, list):
        items = []
        for position, item in enumerate(value):
            matched = _item_fields(item, position, children)
            if matched is not None:
                key_fields, child = matched
                owned = _owned(item, child)
                items.append({**key_fields, **owned} if isinstance(owned, dict) else owned)
        return items
    return value


def _item_fields(item: Any, position: int, elements: Mapping[str, Any]) -> tuple[dict[str, Any], Any] | None:
    """(the item's key fields, its FieldsV1 node) when one of `elements` names this list item."""
    for element, child in elements.items():
        kind, _, text = element.partition(":")
        if kind == "k":
            keys = orjson.loads(text)
            if isinstance(item, dict) and all(item.get(name) == value for name, value in keys.items()):
                return keys, child
        elif kind == "v":
            if orjson.loads(text) == item:
                return {}, child
        elif kind == "i" and int(text) == position:
            return {}, child
    return None
