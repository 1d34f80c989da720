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

Leaf paths (keys of `MergeResult.provenance` and `leaf_paths`) are written as `omectl.core.layering` writes them,
the merge this module's rules run on: `engineConfig.runner.image`,
`engineConfig.runner.resources.requests["nvidia.com/gpu"]`, `engineConfig.volumes[name=dshm].emptyDir.medium`,
`engineConfig.runner.ports[containerPort=8080].protocol`, `env[3]` (an item without a usable key).

Sharing (the results are cached and read-only by contract): `merge_layer` never mutates its inputs and never
shares anything with its `spec` argument (atomic lists are copied), but its result shares by reference every dict
and list of `base.spec` that the layer leaves untouched — `base.spec` itself when the layer sets nothing. So results
of `merge_chain` share nothing with the layers given to it, and a child's result shares with its parent's cached
result. `merge_spec` shares nothing with either argument. A caller that wants to modify a result copies it first
with `omectl.core.layering.copy_json`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from omectl.core import layering
from omectl.core.layering import KeyedList, ListRules, Recorder

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

_RULES: Final[ListRules] = MappingProxyType({field: KeyedList(key) for field, key in LIST_MERGE_KEYS.items()})


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
    return layering.lay(layering.lay(None, parent, _RULES, None), child, _RULES, None)


def merge_layer(base: MergeResult | None, name: str, spec: Mapping[str, Any]) -> MergeResult:
    """Lay runtime `name`'s `spec` over `base` (None: the root of a chain). See the module docstring for sharing."""
    parent_spec: dict[str, Any] | None = None
    provenance: dict[str, str] = {}
    counts: dict[str, int] = {}
    chain: tuple[str, ...] = ()
    if base is not None:
        if name in base.chain:
            raise ValueError(f"runtime {name!r} is already in the chain {list(base.chain)}")
        parent_spec, chain = base.spec, base.chain
        provenance, counts = dict(base.provenance), dict(base.layer_fields)
    counts[name] = 0
    merged = layering.lay(parent_spec, spec, _RULES, Recorder(name, provenance, counts))
    return MergeResult(merged, provenance, counts, (*chain, name))


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
    """Every leaf of `spec` by its path (syntax in `omectl.core.layering`), in document order."""
    return layering.leaf_paths(spec, _RULES)
