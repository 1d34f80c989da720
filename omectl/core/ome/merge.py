"""Lay OME runtime specs over each other, root first, and record which runtime set each leaf of the result.

Merge rules (OME's "what merges" table), applied to a child's `spec` laid over the
merged spec of its parent:

- Single values (strings, numbers, booleans) replace the parent's.
- Objects merge field by field. Maps (`nodeSelector`, resource `requests`/`limits`, `labels`, `annotations`, any
  map of strings) are objects, so they merge by key.
- Lists whose field name is in `LIST_MERGE_KEYS` merge item by item on that key: `env`, `volumes`,
  `imagePullSecrets`, `containers`, `initContainers` by `name`; `ports` by `containerPort`; `volumeMounts` by
  `mountPath`; `topologySpreadConstraints` by `topologyKey` (the spec's table), plus the other keyed lists of a Pod
  under Kubernetes' strategic merge (`ephemeralContainers`, `schedulingGates`, `resourceClaims` by `name`,
  `volumeDevices` by `devicePath`, `hostAliases` by `ip`). The key goes by the field's name wherever it occurs
  (`engineConfig.runner.env`, `containers[name=x].env`, ...). Parent items keep their order and are updated in place,
  an item merging field by field with the child's item of the same key; the child's new items are appended in the
  child's order. A keyed list holding anything but objects is treated as atomic (below).
- Every other list (`command`, `args`, `tolerations`, `supportedModelFormats`, `protocolVersions`, ...) is atomic:
  the child's list replaces the parent's whole, and is taken verbatim (nothing inside it is dropped).
- `null`, `[]`, `{}` and `""` in the child count as unset and never delete a parent value; so does an object or a
  keyed list whose values are all unset. Explicit `false` and `0` are values.
- A child value of another shape than the parent's (an object over a string, a list over an object) replaces it.
- The result holds no unset values outside atomic lists, also none from the root: merging into nothing drops them.
  Items of a keyed list that share a key are merged into the first of them, so a result never repeats a key.

Leaf paths (keys of `MergeResult.provenance` and `leaf_paths`):

- A leaf is every scalar and every atomic list (one leaf for the whole list). Objects and keyed lists are not
  leaves, so an empty one contributes none.
- An object field is `.name` after its parent's path (no leading dot at the top): `engineConfig.runner.image`. A name
  with anything but ASCII letters, digits, `_` and `-` is written `["..."]` as a JSON string, without a dot:
  `engineConfig.runner.resources.requests["nvidia.com/gpu"]`.
- An item of a keyed list is `[key=value]`: `engineConfig.volumes[name=dshm].emptyDir.medium`,
  `engineConfig.runner.ports[containerPort=8080].protocol`. A string value is written bare unless it is empty or
  holds `[`, `]`, `"` or `\\`, then as a JSON string; other values as JSON (`8080`, `true`). An item without a usable
  key (missing, `null`, `""`, or not a scalar), or repeating an earlier item's key, is written by its index: `env[3]`.

Sharing (the results are cached and read-only by contract): `merge_layer` never mutates its inputs and never
shares anything with its `spec` argument (atomic lists are copied), but its result shares by reference every dict
and list of `base.spec` that the layer leaves untouched — `base.spec` itself when the layer sets nothing. So results
of `merge_chain` share nothing with the layers given to it, and a child's result shares with its parent's cached
result. `merge_spec` shares nothing with either argument. A caller that wants to modify a result copies it first
with `copy_json`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final

LIST_MERGE_KEYS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "containers": "name",
        "initContainers": "name",
        "ephemeralContainers": "name",
        "env": "name",
        "volumes": "name",
        "imagePullSecrets": "name",
        "schedulingGates": "name",
        "resourceClaims": "name",
        "ports": "containerPort",
        "volumeMounts": "mountPath",
        "volumeDevices": "devicePath",
        "hostAliases": "ip",
        "topologySpreadConstraints": "topologyKey",
    }
)
"""Field name of a list merged item by item → the item field that identifies an item."""


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


@dataclass(frozen=True)
class MergeResult:
    """A merged spec and where each of its leaves came from."""

    spec: dict[str, Any]
    provenance: dict[str, str]
    """Leaf path of `spec` → name of the runtime in `chain` that set it."""
    layer_fields: dict[str, int]
    """Runtime name → how many leaves of `spec` it set; every runtime of `chain`, root first, 0 included."""
    chain: tuple[str, ...]
    """Runtime names, root first."""


def merge_spec(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    """Lay `child` over `parent`; a new spec sharing nothing with either, without provenance."""
    base = _merge_object(_EMPTY, parent, "", None)  # pragma: no mutate (paths are read only with a recorder)
    merged = _merge_object(base, child, "", None)  # pragma: no mutate (paths are read only with a recorder)
    return {} if merged is _EMPTY else merged


def merge_layer(base: MergeResult | None, name: str, spec: Mapping[str, Any]) -> MergeResult:
    """Lay runtime `name`'s `spec` over `base` (None: the root of a chain). See the module docstring for sharing."""
    parent_spec: dict[str, Any] = _EMPTY
    provenance: dict[str, str] = {}
    counts: dict[str, int] = {}
    chain: tuple[str, ...] = ()
    if base is not None:
        if name in base.chain:
            raise ValueError(f"runtime {name!r} is already in the chain {list(base.chain)}")
        parent_spec, chain = base.spec, base.chain
        provenance, counts = dict(base.provenance), dict(base.layer_fields)
    counts[name] = 0
    merged = _merge_object(parent_spec, spec, "", _Recorder(name, provenance, counts))
    return MergeResult({} if merged is _EMPTY else merged, provenance, counts, (*chain, name))


def merge_chain(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> MergeResult:
    """Merge `(name, spec)` layers, root first."""
    if not layers:
        raise ValueError("a chain holds at least one runtime")
    result: MergeResult | None = None
    for name, spec in layers:
        result = merge_layer(result, name, spec)
    assert result is not None
    return result


def leaf_paths(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Every leaf of `spec` by its path (syntax in the module docstring), in document order."""
    leaves: dict[str, Any] = {}
    _collect_leaves(spec, None, "", leaves)
    return leaves


def copy_json(value: Any) -> Any:
    """A copy of a JSON-like value sharing no dict or list with it (tuples become lists)."""
    if isinstance(value, Mapping):
        # immutable values are returned as they are, a shortcut: copy_json returns them unchanged anyway
        return {k: v if type(v) in _IMMUTABLE else copy_json(v) for k, v in value.items()}  # pragma: no mutate
    if isinstance(value, list | tuple):
        return [v if type(v) in _IMMUTABLE else copy_json(v) for v in value]  # pragma: no mutate
    return value


class _Recorder:
    """Provenance bookkeeping for one layer: which leaves it sets, which of its parent's leaves it replaces."""

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

    def drop(self, value: Any, field: str | None, path: str) -> None:
        leaves: dict[str, Any] = {}
        _collect_leaves(value, field, path, leaves)
        for leaf in leaves:
            previous = self.provenance.pop(leaf, None)  # pragma: no mutate (every parent leaf has an owner)
            if previous is not None:
                self.counts[previous] -= 1


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


def _is_keyed_list(field: str | None, items: Sequence[Any]) -> bool:
    return field in LIST_MERGE_KEYS and all(isinstance(item, Mapping) for item in items)


def _collect_leaves(value: Any, field: str | None, path: str, leaves: dict[str, Any]) -> None:
    if isinstance(value, Mapping):
        for name, child in value.items():
            _collect_leaves(child, name, _field_path(path, name), leaves)
    elif isinstance(value, list | tuple) and _is_keyed_list(field, value):
        key = LIST_MERGE_KEYS[field]  # type: ignore[index]  # _is_keyed_list checked the field
        seen: set[Any] = set()
        for index, item in enumerate(value):
            key_value = _key_value(item, key)
            if key_value is None or key_value in seen:
                item_path = f"{path}[{index}]"
            else:
                seen.add(key_value)
                item_path = _item_path(path, key, key_value)
            _collect_leaves(item, None, item_path, leaves)
    else:
        leaves[path] = value


def _has_value(value: Any, field: str | None) -> bool:
    """Whether merging `value` into nothing leaves something (the unset rule, applied all the way down)."""
    if value is None:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, Mapping):
        return any(_has_value(child, name) for name, child in value.items())
    if isinstance(value, list | tuple):
        if not value:
            return False
        if _is_keyed_list(field, value):
            return any(_has_value(item, None) for item in value)
        return True
    return True


def _merge_value(parent: Any, child: Any, field: str | None, path: str, rec: _Recorder | None) -> Any:
    """The merged value at one field; `parent` itself (maybe `_MISSING`) when the child leaves it as it is."""
    child_type = type(child)
    if child_type is list or child_type is tuple:
        return _merge_list(parent, child, field, path, rec)
    if child_type is dict or (child_type is not str and isinstance(child, Mapping)):
        if type(parent) is dict:
            return _merge_object(parent, child, path, rec)
        if parent is not _MISSING:
            if not _has_value(child, None):
                return parent
            if rec is not None:
                rec.drop(parent, field, path)
        merged = _merge_object(_EMPTY, child, path, rec)
        return parent if merged is _EMPTY else merged
    if child is None or (child_type is str and not child):
        return parent
    # A scalar (string, number, bool): the child's value replaces whatever the parent had there.
    if rec is not None:
        if type(parent) is dict or type(parent) is list:
            rec.drop(parent, field, path)
        rec.set(path)
    return child


def _merge_list(parent: Any, child: Sequence[Any], field: str | None, path: str, rec: _Recorder | None) -> Any:
    if not child:
        return parent
    key = LIST_MERGE_KEYS.get(field or "")  # pragma: no mutate (no field is named "" or "XXXX")
    if key is not None and all(isinstance(item, Mapping) for item in child):
        if type(parent) is list and all(type(item) is dict for item in parent):
            return _merge_keyed(parent, child, key, path, rec)
        if parent is not _MISSING:
            if not _has_value(child, field):
                return parent
            if rec is not None:
                rec.drop(parent, None, path)  # a scalar, an object or a list of scalars: no keyed items
        merged_list = _merge_keyed(_EMPTY_LIST, child, key, path, rec)
        return parent if merged_list is _EMPTY_LIST else merged_list
    if rec is not None:
        if parent is not _MISSING:
            rec.drop(parent, field, path)
        rec.set(path)
    return copy_json(child)


def _merge_object(parent: dict[str, Any], child: Mapping[str, Any], path: str, rec: _Recorder | None) -> dict[str, Any]:
    """`parent` with `child` laid over it: `parent` itself when nothing changes, else a shallow copy updated."""
    merged: dict[str, Any] | None = None
    for name, child_value in child.items():
        parent_value = parent.get(name, _MISSING)  # pragma: no mutate (None in a spec is unset, like missing)
        # paths are read only with a recorder: without one, any string does
        item_path = _field_path(path, name) if rec is not None else ""  # pragma: no mutate
        value = _merge_value(parent_value, child_value, name, item_path, rec)
        if value is not parent_value:
            if merged is None:
                merged = dict(parent)
            merged[name] = value
    return parent if merged is None else merged


def _merge_keyed(
    parent: list[Any], child: Sequence[Mapping[str, Any]], key: str, path: str, rec: _Recorder | None
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
                updated = _merge_object(items[position], item, item_path, rec)
                if updated is not items[position]:
                    if merged is None:
                        merged = items = list(parent)
                    items[position] = updated
                continue
        new_item = _merge_object(_EMPTY, item, item_path, rec)
        if new_item is _EMPTY:
            continue
        if merged is None:
            merged = list(parent)
        if key_value is not None:
            positions[key_value] = len(merged)
        merged.append(new_item)
    return parent if merged is None else merged
