"""The heap walks of the memory breakdown's probe: each Python object counted once, by field, holder and value."""

from __future__ import annotations

import sys
from typing import Any

from benchmarks.memory_probe import field_bytes, holder_bytes, string_sharing


def fresh(value: str) -> str:
    return "".join(list(value))  # a string object of its own, as a decoder makes one per value


def obj(name: str) -> dict[str, Any]:
    return {"metadata": {"name": fresh(name)}, "status": {"conditions": [{"type": fresh("Ready")}]}}


class Holder:
    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.memo = {"k": items}  # a second path to the same list: counted once, for the first path walked


def test_fields_count_each_object_once_under_the_field_that_holds_it() -> None:
    objects = [obj("llama-a"), obj("llama-b")]
    by_field, by_type = field_bytes(objects, set())
    names = sum(sys.getsizeof(o["metadata"]["name"]) for o in objects)
    assert by_field["metadata.name"] == names + sys.getsizeof("name")  # the key too, once: both dicts share it
    condition = objects[0]["status"]["conditions"]
    assert by_field["status.conditions"] >= sys.getsizeof(condition) + sys.getsizeof(condition[0])
    assert sum(by_field.values()) == sum(by_type.values())
    # a second walk with the same `seen` finds nothing left: nothing is counted twice
    again, _ = field_bytes(objects, set(map(id, _all(objects))))
    assert sum(again.values()) == 0


def _all(node: Any) -> list[Any]:
    found = [node]
    if isinstance(node, dict):
        for key, value in node.items():
            found += [key, *_all(value)]
    elif isinstance(node, list):
        for item in node:
            found += _all(item)
    return found


def test_holders_are_named_by_the_attribute_path_and_a_shared_object_counts_once() -> None:
    items = [fresh("x" * 100)]
    sizes = holder_bytes([("app", Holder(items))], set())
    assert sizes["app.items"] + sizes.get("app.memo", 0) + sizes.get("app.memo[]", 0) >= sys.getsizeof(items[0])
    assert sum(sizes.values()) < 2 * (sys.getsizeof(items) + sys.getsizeof(items[0])) + 1000


def test_string_sharing_says_what_one_object_per_value_would_save() -> None:
    objects = [obj("llama-a"), obj("llama-b")]
    shared = string_sharing(objects)
    ready = sys.getsizeof("Ready")
    assert shared["bytes"] - shared["bytes_if_shared"] == ready  # the second "Ready"; the names differ
    assert shared["saved_by_path"] == {".status.conditions[].type": ready}
