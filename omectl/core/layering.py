"""Lay JSON-like documents over each other, lowest first, and record which layer set each leaf of the result.

The one merge with provenance: OME's runtime chain (`omectl.core.ome.merge`) and AIM's runtime-config layers
(`omectl.core.aim.layers`) are this merge with their own `ListRules`. Rules, applied to an upper document laid over
the merge of the ones below it:

- Single values (strings, numbers, booleans) replace the lower value.
- Objects merge field by field (maps of strings are objects, so they merge by key).
- A list under a field named in the rules merges item by item on the rule's `KeyedList.key`; the key goes by the
  field's name wherever it occurs. Lower items keep their order, the upper list's new keys are appended in its
  order. What happens when two items of one key meet depends on the rule:
  - no `combine` (merged items): the upper item merges field by field into the lower one. A list holding anything
    but objects is atomic (below). An item without a usable key (missing, `null`, `""`, or not a scalar) is
    appended; items of a list that share a key are merged into the first of them.
  - a `combine` (replaced items): the upper item, taken verbatim, replaces the lower one, as
    `combine(lower, upper)` makes it. An item is named by a non-empty string key; anything else in the list is
    dropped, and a list without a named item counts as unset. An item whose key repeats within one document
    replaces the first of them.
- Every other list is atomic: the upper list replaces the lower one whole, taken verbatim.
- `null`, `[]`, `{}` and `""` in the upper document count as unset and never delete a lower value; so does an
  object or a keyed list whose values are all unset. Explicit `false` and `0` are values.
- An upper value of another shape than the lower one (an object over a string, a list over an object) replaces it.
- The result holds no unset values outside atomic lists and replaced items, also none from the lowest document.

Leaf paths (keys of the provenance, and of `leaf_paths`):

- A leaf is every scalar and every atomic list (one leaf for the whole list). Objects and keyed lists are not
  leaves, so an empty one contributes none. In a replaced item every value but a non-empty object is a leaf
  (`{}` and `""` included).
- An object field is `.name` after its parent's path (no leading dot at the top): `engineConfig.runner.image`. A name
  with anything but ASCII letters, digits, `_` and `-` is written `["..."]` as a JSON string, without a dot:
  `engineConfig.runner.resources.requests["nvidia.com/gpu"]`.
- An item of a keyed list is `[key=value]`: `engineConfig.volumes[name=dshm].emptyDir.medium`,
  `engineConfig.runner.ports[containerPort=8080].protocol`. A string value is written bare unless it is empty or
  holds `[`, `]`, `"` or `\\`, then as a JSON string; other values as JSON (`8080`, `true`). An item without a usable
  key, or repeating an earlier item's key, is written by its index: `env[3]`.

Sharing: `lay` never mutates its inputs and never shares anything with its `spec` argument (atomic lists and
replaced items are copied), but its result shares by reference every dict and list of `parent` that the document
leaves untouched — `parent` itself when the document sets nothing. A caller that wants to modify a result copies it
first with `copy_json`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

ItemCombine = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
"""(lower item, upper item) → the item that replaces the lower one."""


@dataclass(frozen=True)
class KeyedList:
    """How the items of a list under one field name meet: by `key`, merged (no `combine`) or replaced.

    `combine` returns an item with the upper item's fields (their values may come from the lower item): the
    provenance names the upper item's layer for each of its leaves."""

    key: str
    combine: ItemCombine | None = None


ListRules = Mapping[str, KeyedList]
"""Field name of a list merged item by item → its rule."""


class _Missing:
    __slots__ = ()


_MISSING: Final = _Missing()
# Stand-ins for "nothing in the parent"; never mutated (a merge copies before its first write) and never returned
# into a result.
_EMPTY: Final[dict[str, Any]] = {}
_EMPTY_LIST: Final[list[Any]] = []
_IMMUTABLE: Final = frozenset({str, int, float, bool, type(None)})
_BARE_NAME: Final = re.compile(r"[A-Za-z0-9_-]+")
_QUOTED_KEY_CHARS: Final = re.compile(r'[\[\]"\\]')


class Recorder:
    """Provenance bookkeeping for one layer: which leaves it sets, which of the lower layers' leaves it replaces.

    `provenance` (leaf path → layer name) and `counts` (layer name → how many leaves it holds, this layer's name
    included) are updated in place."""

    __slots__ = ("counts", "name", "provenance")

    def __init__(self, name: str, provenance: dict[str, str], counts: dict[str, int]) -> None:
        self.name = name
        self.provenance = provenance
        self.counts = counts

    def set(self, path: str) -> None:
        previous = self.provenance.get(path)
        if previous is not None:
            self.counts[previous] -= 1
        self.provenance[path] = self.name
        self.counts[self.name] += 1

    def drop(self, value: Any, field: str | None, path: str, rules: ListRules) -> None:
        leaves: dict[str, Any] = {}
        _collect_leaves(value, field, path, rules, leaves)
        self._forget(leaves)

    def replace_item(self, lower: Any, upper: Any, path: str) -> None:
        """A replaced item at `path`: `lower` (`_MISSING` when there was none) gives way to `upper`'s leaves."""
        leaves: dict[str, Any] = {}
        _collect_item_leaves(lower, path, leaves)
        self._forget(leaves)
        leaves.clear()
        _collect_item_leaves(upper, path, leaves)
        for leaf in leaves:
            self.set(leaf)

    def _forget(self, leaves: Mapping[str, Any]) -> None:
        for leaf in leaves:
            previous = self.provenance.pop(leaf, None)
            if previous is not None:
                self.counts[previous] -= 1


def lay(
    parent: dict[str, Any] | None, spec: Mapping[str, Any], rules: ListRules, recorder: Recorder | None
) -> dict[str, Any]:
    """`spec` laid over `parent` (None: nothing below), recording into `recorder` when one is given."""
    merged = _merge_object(_EMPTY if parent is None else parent, spec, "", rules, recorder)
    return {} if merged is _EMPTY else merged


def leaf_paths(spec: Mapping[str, Any], rules: ListRules) -> dict[str, Any]:
    """Every leaf of `spec` by its path (syntax in the module docstring), in document order."""
    leaves: dict[str, Any] = {}
    _collect_leaves(spec, None, "", rules, leaves)
    return leaves


def copy_json(value: Any) -> Any:
    """A copy of a JSON-like value sharing no dict or list with it (tuples become lists)."""
    if isinstance(value, Mapping):
        # immutable values are returned as they are, a shortcut: copy_json returns them unchanged anyway
        return {k: v if type(v) in _IMMUTABLE else copy_json(v) for k, v in value.items()}  # pragma: no mutate
    if isinstance(value, list | tuple):
        return [v if type(v) in _IMMUTABLE else copy_json(v) for v in value]  # pragma: no mutate
    return value


@lru_cache(maxsize=16384)
def _field_path(path: str, name: str) -> str:
    segment = _segment(name)
    if not path or segment[0] == "[":
        return path + segment
    return f"{path}.{segment}"


@lru_cache(maxsize=4096)
def _segment(name: str) -> str:
    return name if _BARE_NAME.fullmatch(name) else f"[{json.dumps(name)}]"


def _item_path(path: str, key: str, key_value: Any) -> str:
    if isinstance(key_value, str):
        text = json.dumps(key_value) if not key_value or _QUOTED_KEY_CHARS.search(key_value) else key_value
    else:
        text = json.dumps(key_value)
    return f"{path}[{key}={text}]"


def _key_value(item: Mapping[str, Any], key: str) -> Any:
    """The item's key, or None when it has none usable (then it never matches another item)."""
    value = item.get(key)
    if value is None or value == "" or isinstance(value, Mapping | list | tuple):
        return None
    return value


def _replaced_item_name(item: Any, key: str) -> str:
    """A replaced item's name, or `""` when it has none (then it is dropped)."""
    name = item.get(key) if isinstance(item, Mapping) else None
    return name if isinstance(name, str) else ""


def _is_keyed_list(field: str | None, items: Sequence[Any], rules: ListRules) -> bool:
    return field in rules and all(isinstance(item, Mapping) for item in items)


def _collect_leaves(value: Any, field: str | None, path: str, rules: ListRules, leaves: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for name, child in value.items():
            _collect_leaves(child, name, _field_path(path, name), rules, leaves)
    elif isinstance(value, list | tuple) and _is_keyed_list(field, value, rules):
        rule = rules[field]  # type: ignore[index]  # _is_keyed_list checked the field
        seen: set[Any] = set()
        for index, item in enumerate(value):
            key_value = _key_value(item, rule.key)
            if key_value is None or key_value in seen:
                item_path = f"{path}[{index}]"
            else:
                seen.add(key_value)
                item_path = _item_path(path, rule.key, key_value)
            if rule.combine is None:
                _collect_leaves(item, None, item_path, rules, leaves)
            else:
                _collect_item_leaves(item, item_path, leaves)
    else:
        leaves[path] = value


def _collect_item_leaves(value: Any, path: str, leaves: dict[str, Any]) -> None:
    """The leaves of a replaced item: every value but a non-empty object is one."""
    if isinstance(value, Mapping) and value:
        for name, child in value.items():
            _collect_item_leaves(child, _field_path(path, name), leaves)
    else:
        leaves[path] = value


def _has_value(value: Any, field: str | None, rules: ListRules) -> bool:
    """Whether merging `value` into nothing leaves something (the unset rule, applied all the way down)."""
    if value is None:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, Mapping):
        return any(_has_value(child, name, rules) for name, child in value.items())
    if isinstance(value, list | tuple):
        rule = rules.get(field or "")  # pragma: no mutate (no field is named "" or "XXXX")
        if rule is not None and rule.combine is not None:
            return any(_replaced_item_name(item, rule.key) for item in value)
        if not value:
            return False
        if _is_keyed_list(field, value, rules):
            return any(_has_value(item, None, rules) for item in value)
        return True
    return True


def _merge_value(parent: Any, child: Any, field: str | None, path: str, rules: ListRules, rec: Recorder | None) -> Any:
    """The merged value at one field; `parent` itself (maybe `_MISSING`) when the child leaves it as it is."""
    child_type = type(child)
    if child_type is list or child_type is tuple:
        return _merge_list(parent, child, field, path, rules, rec)
    if child_type is dict or (child_type is not str and isinstance(child, Mapping)):
        if type(parent) is dict:
            return _merge_object(parent, child, path, rules, rec)
        if parent is not _MISSING:
            if not _has_value(child, None, rules):
                return parent
            if rec is not None:
                rec.drop(parent, field, path, rules)
        merged = _merge_object(_EMPTY, child, path, rules, rec)
        return parent if merged is _EMPTY else merged
    if child is None or (child_type is str and not child):
        return parent
    # A scalar (string, number, bool): the child's value replaces whatever the parent had there.
    if rec is not None:
        if type(parent) is dict or type(parent) is list:
            rec.drop(parent, field, path, rules)
        rec.set(path)
    return child


def _merge_list(
    parent: Any, child: Sequence[Any], field: str | None, path: str, rules: ListRules, rec: Recorder | None
) -> Any:
    if not child:
        return parent
    rule = rules.get(field or "")  # pragma: no mutate (no field is named "" or "XXXX")
    if rule is not None and (rule.combine is not None or all(isinstance(item, Mapping) for item in child)):
        if type(parent) is list and all(type(item) is dict for item in parent):
            return _merge_items(parent, child, rule, path, rules, rec)
        if parent is not _MISSING:
            if not _has_value(child, field, rules):
                return parent
            if rec is not None:
                rec.drop(parent, None, path, rules)  # a scalar, an object or a list of scalars: no keyed items
        merged_list = _merge_items(_EMPTY_LIST, child, rule, path, rules, rec)
        return parent if merged_list is _EMPTY_LIST else merged_list
    if rec is not None:
        if parent is not _MISSING:
            rec.drop(parent, field, path, rules)
        rec.set(path)
    return copy_json(child)


def _merge_items(
    parent: list[Any], child: Sequence[Any], rule: KeyedList, path: str, rules: ListRules, rec: Recorder | None
) -> list[Any]:
    if rule.combine is None:
        return _merge_keyed(parent, child, rule.key, path, rules, rec)
    return _replace_keyed(parent, child, rule.key, rule.combine, path, rec)


def _merge_object(
    parent: dict[str, Any], child: Mapping[str, Any], path: str, rules: ListRules, rec: Recorder | None
) -> dict[str, Any]:
    """`parent` with `child` laid over it: `parent` itself when nothing changes, else a shallow copy updated."""
    merged: dict[str, Any] | None = None
    for name, child_value in child.items():
        parent_value = parent.get(name, _MISSING)  # pragma: no mutate (None in a spec is unset, like missing)
        # paths are read only with a recorder: without one, any string does
        item_path = _field_path(path, name) if rec is not None else ""  # pragma: no mutate
        value = _merge_value(parent_value, child_value, name, item_path, rules, rec)
        if value is not parent_value:
            if merged is None:
                merged = dict(parent)
            merged[name] = value
    return parent if merged is None else merged


def _merge_keyed(
    parent: list[Any],
    child: Sequence[Mapping[str, Any]],
    key: str,
    path: str,
    rules: ListRules,
    rec: Recorder | None,
) -> list[Any]:
    """`parent` with `child`'s items merged in by `key`: `parent` itself when nothing changes, else a new list."""
    # paths are read only with a recorder: without one, any string does (hence the pragmas below)
    merged: list[Any] | None = None
    positions: dict[Any, int] = {}
    for index, existing in enumerate(parent):
        existing_key = _key_value(existing, key)
        if existing_key is not None:
            positions.setdefault(existing_key, index)
    for item in child:
        items = parent if merged is None else merged
        key_value = _key_value(item, key)
        if key_value is None:
            item_path = f"{path}[{len(items)}]" if rec is not None else ""  # pragma: no mutate (see above)
        else:
            item_path = _item_path(path, key, key_value) if rec is not None else ""  # pragma: no mutate
            position = positions.get(key_value)
            if position is not None:
                updated = _merge_object(items[position], item, item_path, rules, rec)
                if updated is not items[position]:
                    if merged is None:
                        merged = items = list(parent)
                    items[position] = updated
                continue
        new_item = _merge_object(_EMPTY, item, item_path, rules, rec)
        if new_item is _EMPTY:
            continue
        if merged is None:
            merged = list(parent)
        if key_value is not None:
            positions[key_value] = len(merged)
        merged.append(new_item)
    return parent if merged is None else merged


def _replace_keyed(
    parent: list[Any], child: Sequence[Any], key: str, combine: ItemCombine, path: str, rec: Recorder | None
) -> list[Any]:
    """`parent` with `child`'s named items laid in by `key`, each replacing the lower item of its name: `parent`
    itself when `child` names none, else a new list."""
    merged: list[Any] | None = None
    # a list under a replaced-items field was made here: its items are dicts with distinct names
    positions = {existing[key]: index for index, existing in enumerate(parent)}
    for item in child:
        name = _replaced_item_name(item, key)
        if not name:
            continue
        if merged is None:
            merged = list(parent)
        entry = copy_json(item)
        position = positions.get(name)
        if rec is not None:
            rec.replace_item(_MISSING if position is None else merged[position], entry, _item_path(path, key, name))
        if position is None:
            positions[name] = len(merged)
            merged.append(entry)
        else:
            merged[position] = combine(merged[position], entry)
    return parent if merged is None else merged
