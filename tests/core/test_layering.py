"""The shared merge's replaced-items rule: items taken whole by name, what a list without a named item does, what a
value of another shape drops, and their leaf paths. The merged-items rule is OME's (tests/core/test_merge.py); AIM's
`env` is a replaced-items list (tests/core/aim/test_layers.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omectl.core.layering import KeyedList, ListRules, Recorder, lay, leaf_paths


def _upper(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    return upper


def _summed(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    return {**upper, "v": lower["v"] + upper["v"]}


REPLACED: ListRules = {"items": KeyedList("id", combine=_upper)}


def _layers(
    *docs: Mapping[str, Any], rules: ListRules = REPLACED
) -> tuple[dict[str, Any], dict[str, str], dict[str, int]]:
    spec: dict[str, Any] | None = None
    provenance: dict[str, str] = {}
    counts: dict[str, int] = {}
    for index, doc in enumerate(docs):
        name = f"L{index}"
        counts[name] = 0
        spec = lay(spec, doc, rules, Recorder(name, provenance, counts))
    assert spec is not None
    return spec, provenance, counts


def test_an_item_replaces_the_lower_item_of_its_name_whole() -> None:
    spec, provenance, counts = _layers(
        {"items": [{"id": "a", "v": 1, "w": 2}, {"id": "b", "v": 3}]},
        {"items": [{"id": "a", "v": 9}, {"id": "c", "v": ""}]},
    )
    assert spec == {"items": [{"id": "a", "v": 9}, {"id": "b", "v": 3}, {"id": "c", "v": ""}]}
    assert provenance == {
        "items[id=b].id": "L0",
        "items[id=b].v": "L0",
        "items[id=a].id": "L1",
        "items[id=a].v": "L1",
        "items[id=c].id": "L1",
        "items[id=c].v": "L1",
    }
    assert counts == {"L0": 2, "L1": 4}


def test_an_item_without_a_string_name_is_dropped() -> None:
    spec, provenance, _ = _layers({"items": [{"v": 1}, {"id": 5, "v": 2}, {"id": "", "v": 3}, "x", {"id": "a"}]})
    assert spec == {"items": [{"id": "a"}]}
    assert provenance == {"items[id=a].id": "L0"}


def test_a_list_naming_no_item_leaves_the_lower_value() -> None:
    spec, provenance, counts = _layers(
        {"items": "kept", "o": "kept too"}, {"items": [{"v": 1}], "o": {"items": [{"v": 1}, "x"]}}
    )
    assert spec == {"items": "kept", "o": "kept too"}
    assert provenance == {"items": "L0", "o": "L0"}
    assert counts == {"L0": 2, "L1": 0}


def test_a_list_naming_an_item_replaces_a_value_of_another_shape() -> None:
    spec, provenance, counts = _layers(
        {"o": "scalar", "items": {"x": 1}}, {"o": {"items": [{"id": "a"}]}, "items": [{"id": "b"}]}
    )
    assert spec == {"o": {"items": [{"id": "a"}]}, "items": [{"id": "b"}]}
    assert provenance == {"o.items[id=a].id": "L1", "items[id=b].id": "L1"}
    assert counts == {"L0": 0, "L1": 2}


def test_a_value_of_another_shape_drops_every_leaf_of_the_items() -> None:
    spec, provenance, counts = _layers({"items": [{"id": "a", "v": {}}]}, {"items": {"x": 1}})
    assert spec == {"items": {"x": 1}}
    assert provenance == {"items.x": "L1"}
    assert counts == {"L0": 0, "L1": 1}


def test_combine_makes_the_item_of_a_repeated_name_from_the_one_it_replaces() -> None:
    rules: ListRules = {"items": KeyedList("id", combine=_summed)}
    spec, provenance, counts = _layers(
        {"items": [{"id": "a", "v": 1}]}, {"items": [{"id": "a", "v": 2}, {"id": "a", "v": 4}]}, rules=rules
    )
    assert spec == {"items": [{"id": "a", "v": 7}]}
    assert provenance == {"items[id=a].id": "L1", "items[id=a].v": "L1"}
    assert counts == {"L0": 0, "L1": 2}


def test_every_value_of_a_replaced_item_but_a_non_empty_object_is_a_leaf() -> None:
    spec = {"items": [{"id": "a", "v": {}, "w": "", "o": {"p": [1], "q": None}}]}
    assert leaf_paths(spec, REPLACED) == {
        "items[id=a].id": "a",
        "items[id=a].v": {},
        "items[id=a].w": "",
        "items[id=a].o.p": [1],
        "items[id=a].o.q": None,
    }
