"""Lay AIM runtime-config layers over each other and record which layer set each leaf of the result.

Layers go lowest first: operator defaults < AIMClusterRuntimeConfig < AIMRuntimeConfig < the AIMService's inline
`spec.runtimeConfig` < the AIMService's own `spec.routing` (see `omectl.core.aim.resolution`). Rules, applied to an
upper layer laid over the merge of the layers below it:

- A present value overrides, field by field, including `false` and `0`. `null`, `""`, `[]` and `{}` count as
  unset and never delete a lower value; so does an object all of whose values are unset.
- Objects merge by key, recursively: `routing`, `routing.gatewayRef`, `routing.annotations`, `storage`,
  `labelPropagation`, ...
- `env` merges by `name`: the lower layer's order is kept, an entry with a name already present replaces that
  entry whole, in place (so `valueFrom` never mixes with a lower `value`), new names are appended in the upper
  layer's order. An entry with no name is dropped; a name repeated within one layer is taken once, at its first
  position with its last entry.
- Every other list (`labelPropagation.match`, ...) is replaced whole.
- Deprecated top-level `defaultStorageClassName` / `pvcHeadroomPercent` move into `storage.*` when those are unset,
  in each layer before it is laid (upstream `migrateDeprecatedStorageFields`), so an upper layer's deprecated field
  beats a lower layer's `storage.*`. The result never holds the deprecated fields.
- The result holds no unset values, also none from the lowest layer.

Provenance keys are leaf paths written as `omectl.core.ome.merge` writes them: `routing.pathTemplate`,
`routing.annotations["example.com/team"]`, `labelPropagation.match` (a replaced list is one leaf),
`env[name=HF_TOKEN].value` (each leaf of an entry; an entry replaced whole drops the lower entry's leaves).
Values are layer names such as `AIMRuntimeConfig ml-team/default` (`layer_name`).

Nothing here mutates its inputs, and results share no dict or list with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.engine_args import ENGINE_ARGS, merge_engine_args

OPERATOR_DEFAULTS_LAYER: Final = "operator defaults"
"""Name of the lowest layer (values the operator applies when no config sets them)."""

DEPRECATED_STORAGE_FIELDS: Final = ("defaultStorageClassName", "pvcHeadroomPercent")
"""Top-level runtime-config fields that moved into `storage`."""

_BARE_NAME: Final = re.compile(r"[A-Za-z0-9_-]+")
_QUOTED_KEY_CHARS: Final = re.compile(r'[\[\]"\\]')


@dataclass(frozen=True)
class LayeredConfig:
    """An effective runtime config and where each of its leaves came from."""

    config: dict[str, Any]
    provenance: dict[str, str]
    """Leaf path → name of the layer that set it."""
    layers: tuple[str, ...]
    """Names of the layers merged, lowest first (also those that set nothing)."""


def layer_name(kind: str, namespace: str, name: str, field: str = "") -> str:
    """How provenance names a layer: `AIMRuntimeConfig ml-team/default`, `AIMClusterRuntimeConfig default`,
    `AIMService ml-team/qwen-chat spec.runtimeConfig`."""
    text = f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"
    return f"{text} {field}" if field else text


def is_unset(value: Any) -> bool:
    """`null`, `""`, `[]`, `{}`, or an object whose values are all unset."""
    if value is None:
        return True
    if isinstance(value, str | list | tuple):
        return len(value) == 0
    if isinstance(value, Mapping):
        return all(is_unset(child) for child in value.values())
    return False


def migrate_deprecated_fields(spec: Mapping[str, Any]) -> dict[str, Any]:
    """`spec` (a new dict) with the deprecated top-level storage fields moved into `storage` where that is unset."""
    out = dict(spec)
    deprecated = {field: out.pop(field, None) for field in DEPRECATED_STORAGE_FIELDS}
    storage_value = out.get("storage")
    storage = dict(storage_value) if isinstance(storage_value, Mapping) else {}
    moved = False
    for field, value in deprecated.items():
        if not is_unset(value) and is_unset(storage.get(field)):
            storage[field] = value
            moved = True
    if moved:
        out["storage"] = storage
    return out


def merge_config(lower: Mapping[str, Any], upper: Mapping[str, Any]) -> dict[str, Any]:
    """`upper` laid over `lower` (both migrated first), without provenance."""
    return merge_layers([("lower", lower), ("upper", upper)]).config


def merge_layers(layers: Sequence[tuple[str, Mapping[str, Any]]]) -> LayeredConfig:
    """Merge `(layer name, config spec)` pairs, lowest first. No layers: an empty config."""
    config: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    names: list[str] = []
    for name, spec in layers:
        if name in names:
            raise ValueError(f"layer {name!r} given twice")
        names.append(name)
        config = _merge_object(config, migrate_deprecated_fields(spec), "", _Recorder(name, provenance))
    return LayeredConfig(config, provenance, tuple(names))


def copy_json(value: Any) -> Any:
    """A copy of a JSON-like value sharing no dict or list with it (tuples become lists)."""
    if isinstance(value, Mapping):
        return {key: copy_json(child) for key, child in value.items()}
    if isinstance(value, list | tuple):
        return [copy_json(child) for child in value]
    return value


class _Recorder:
    __slots__ = ("name", "provenance")

    def __init__(self, name: str, provenance: dict[str, str]) -> None:
        self.name = name
        self.provenance = provenance

    def drop(self, path: str) -> None:
        """Forget every leaf at or under `path` (a lower value this layer replaces)."""
        for leaf in [p for p in self.provenance if p == path or p.startswith((path + ".", path + "["))]:
            del self.provenance[leaf]

    def set_leaves(self, value: Any, path: str) -> None:
        if isinstance(value, Mapping) and value:
            for key, child in value.items():
                self.set_leaves(child, _field_path(path, key))
        else:
            self.provenance[path] = self.name


def _field_path(path: str, key: str) -> str:
    segment = key if _BARE_NAME.fullmatch(key) else f"[{json.dumps(key)}]"
    if not path or segment[0] == "[":
        return path + segment
    return f"{path}.{segment}"


def _env_path(path: str, name: str) -> str:
    text = json.dumps(name) if _QUOTED_KEY_CHARS.search(name) else name
    return f"{path}[name={text}]"


def _merge_object(lower: Mapping[str, Any], upper: Mapping[str, Any], path: str, rec: _Recorder) -> dict[str, Any]:
    out = dict(lower)
    for key, value in upper.items():
        if is_unset(value):
            continue
        field_path = _field_path(path, key)
        below = out.get(key)
        if isinstance(value, Mapping):
            if not isinstance(below, dict):
                rec.drop(field_path)
                below = {}
            out[key] = _merge_object(below, value, field_path, rec)
        elif key == "env" and isinstance(value, list | tuple):
            if not any(_env_name(item) for item in value):
                continue
            if not isinstance(below, list):
                rec.drop(field_path)
                below = []
            out[key] = _merge_env(below, value, field_path, rec)
        else:
            rec.drop(field_path)
            out[key] = copy_json(value)
            rec.provenance[field_path] = rec.name
    return out


def _merge_env(lower: list[Any], upper: Sequence[Any], path: str, rec: _Recorder) -> list[Any]:
    out = list(lower)
    positions = {item["name"]: index for index, item in enumerate(out)}
    for item in upper:
        name = _env_name(item)
        if not name:
            continue
        entry = copy_json(item)
        item_path = _env_path(path, name)
        rec.drop(item_path)
        rec.set_leaves(entry, item_path)
        position = positions.get(name)
        if position is None:
            positions[name] = len(out)
            out.append(entry)
        else:
            out[position] = merge_engine_args(out[position], entry) if name == ENGINE_ARGS else entry
    return out


def _env_name(item: Any) -> str:
    """The entry's name, or `""` when it has none usable."""
    name = item.get("name") if isinstance(item, Mapping) else None
    return name if isinstance(name, str) else ""
