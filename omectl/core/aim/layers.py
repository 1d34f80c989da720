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

The merge is `omectl.core.layering`'s with one keyed list, `env`, whose entries are replaced items. Provenance
keys are leaf paths written as it writes them: `routing.pathTemplate`, `routing.annotations["example.com/team"]`,
`labelPropagation.match` (a replaced list is one leaf), `env[name=HF_TOKEN].value` (each leaf of an entry; an entry
replaced whole drops the lower entry's leaves). Values are layer names such as `AIMRuntimeConfig ml-team/default`
(`layer_name`); a leaf set again by an upper layer moves to the end of the provenance.

Nothing here mutates its inputs, and results share no dict or list with them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from omectl.core.aim.engine_args import ENGINE_ARGS, merge_engine_args
from omectl.core.layering import KeyedList, ListRules, Recorder, lay

OPERATOR_DEFAULTS_LAYER: Final = "operator defaults"
"""Name of the lowest layer (values the operator applies when no config sets them)."""

DEPRECATED_STORAGE_FIELDS: Final = ("defaultStorageClassName", "pvcHeadroomPercent")
"""Top-level runtime-config fields that moved into `storage`."""


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
    config: dict[str, Any] | None = None
    provenance = _LastSetLast()
    counts: dict[str, int] = {}
    for name, spec in layers:
        if name in counts:
            raise ValueError(f"layer {name!r} given twice")
        counts[name] = 0
        config = lay(config, migrate_deprecated_fields(spec), _RULES, Recorder(name, provenance, counts))
    return LayeredConfig({} if config is None else config, dict(provenance), tuple(counts))


def _replace_env_entry(lower: dict[str, Any], upper: dict[str, Any]) -> dict[str, Any]:
    return merge_engine_args(lower, upper) if upper["name"] == ENGINE_ARGS else upper


_RULES: Final[ListRules] = MappingProxyType({"env": KeyedList("name", combine=_replace_env_entry)})


class _LastSetLast(dict[str, str]):
    """Provenance in which setting a path again moves it to the end."""

    __slots__ = ()

    def __setitem__(self, key: str, value: str) -> None:
        self.pop(key, None)
        super().__setitem__(key, value)
