"""Lossless conversion of one object between AIM's two API versions, by field rules.

A kind's conversion is a list of rules, each pairing a path of v1alpha1 with a path of v1alpha2:

- `Field(v1, v2, to_v2, to_v1)` moves a value, through a function each way; a function may answer `UNHELD` for a value
  the other version cannot hold (a status value its enum lacks, a number where the other version takes a string).
  The two functions must be inverses of each other wherever neither answers `UNHELD`.
- `Field(v1, v2, to_v2, to_v1, lossy=True)` (`Field.lossy_both`) moves a value that the other version holds less
  precisely (several values of one version are one value of the other): the value is kept in the annotation too
  whenever converting it there and back does not give it back, and comes back from the annotation while the other
  version's value is still the one it converted to (a later change in the other version wins, and drops it).
- `Container(v1, v2)` says an object exists in both versions: when the object being converted has it, the converted
  one has it too (maybe empty), and the rules of its fields fill it.

Only `spec` and `status` are converted; everything else (metadata above all) is the same in both versions. What the
rules do not move, whatever it is, is kept in an annotation of the converted object, as JSON:
`aim.eai.amd.com/<version>-fields` names the version it came from (`{"spec": {...}, "status": {...}}`). Converting back
to that version reads the annotation, puts its fields back where the rules left nothing, and removes it. So every
object converts back to itself, as Kubernetes' own conversions keep what a version cannot hold in annotations.

An annotation that is not JSON of that shape is ignored (its fields are lost, not the conversion). A value the rules
moved wins over one the annotation holds: the annotation is older than anything written in the other version.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

GROUP: Final = "aim.eai.amd.com"
V1ALPHA1: Final = "v1alpha1"
V1ALPHA2: Final = "v1alpha2"
VERSIONS: Final = (V1ALPHA1, V1ALPHA2)
CONVERTED: Final = ("spec", "status")
"""The parts of an object that differ between the versions."""
WRITTEN_SPEC_ANNOTATION: Final = f"{GROUP}/v1alpha1-written-spec"
"""On a stored (v1alpha2) object of a kind that marks v1alpha1 writes: the digest of the spec its last v1alpha1 write
stored (`written_in_v1alpha1`). Written by every conversion to v1alpha2, removed by every conversion to v1alpha1."""

Path = tuple[str, ...]


class _Unheld:
    def __repr__(self) -> str:
        return "UNHELD"


UNHELD: Final = _Unheld()
"""What a value function answers for a value the other version cannot hold: it stays in the annotation."""
_MISSING: Final = object()


def carried_annotation(version: str) -> str:
    """The annotation that keeps, on an object of the other version, what `version` holds and it cannot."""
    return f"{GROUP}/{version}-fields"


def same(value: Any) -> Any:
    """The value as it is: both versions hold it alike."""
    return copy.deepcopy(value)


def same_if(*types: type) -> Callable[[Any], Any]:
    """The value as it is when it is one of `types` (bool is never an int here); else `UNHELD`."""

    def convert(value: Any) -> Any:
        if isinstance(value, bool) and bool not in types:
            return UNHELD
        return copy.deepcopy(value) if isinstance(value, types) else UNHELD

    return convert


@dataclass(frozen=True)
class Values:
    """A one-to-one renaming of values (an enum's): v1alpha1 value -> v1alpha2 value. Others are `UNHELD`."""

    v1_to_v2: Mapping[str, str]

    def __post_init__(self) -> None:
        if len(set(self.v1_to_v2.values())) != len(self.v1_to_v2):
            raise ValueError("a renaming of values must be one-to-one")

    def to_v2(self, value: Any) -> Any:
        return self.v1_to_v2.get(value, UNHELD) if isinstance(value, str) else UNHELD

    def to_v1(self, value: Any) -> Any:
        if not isinstance(value, str):
            return UNHELD
        return next((v1 for v1, v2 in self.v1_to_v2.items() if v2 == value), UNHELD)


@dataclass(frozen=True)
class Field:
    """A value at `v1` in v1alpha1 is the value at `v2` in v1alpha2."""

    v1: Path
    v2: Path
    to_v2: Callable[[Any], Any] = same
    to_v1: Callable[[Any], Any] = same
    lossy: bool = False
    """Whether several values of one version may convert to one of the other (module docstring)."""

    @classmethod
    def lossy_both(cls, path: Path, to_v2: Callable[[Any], Any], to_v1: Callable[[Any], Any]) -> Field:
        """`Field.lossy` with the same path in both versions."""
        return cls(path, path, to_v2, to_v1, lossy=True)

    @classmethod
    def both(cls, path: Path, to_v2: Callable[[Any], Any] = same, to_v1: Callable[[Any], Any] = same) -> Field:
        """The same path in both versions."""
        return cls(path, path, to_v2, to_v1)

    @classmethod
    def values(cls, v1: Path, v2: Path, renaming: Values) -> Field:
        return cls(v1, v2, renaming.to_v2, renaming.to_v1)


@dataclass(frozen=True)
class Container:
    """An object at `v1` in v1alpha1 is the object at `v2` in v1alpha2 (its fields have their own rules)."""

    v1: Path
    v2: Path

    @classmethod
    def both(cls, path: Path) -> Container:
        return cls(path, path)


Rule = Field | Container


@dataclass(frozen=True)
class KindConversion:
    """How one kind converts: its rules, `spec` and `status` always among the containers."""

    kind: str
    rules: Sequence[Rule]
    marks_v1alpha1_writes: bool = False
    """Whether a conversion to v1alpha2 always writes the annotation `aim.eai.amd.com/v1alpha1-fields` (`{}` when
    nothing waits in it) and the digest of the spec it stores (`WRITTEN_SPEC_ANNOTATION`), so that the stored object
    tells it was written in v1alpha1 until a write in v1alpha2 changes its spec (`written_in_v1alpha1`). The kinds
    whose reconciliation follows upstream for objects written in v1alpha1."""

    def convert(self, obj: Mapping[str, Any], to_version: str) -> dict[str, Any]:
        """`obj` (of either version) in `to_version`; an object already there is returned as it is (a copy)."""
        from_version = version_of(obj)
        out = copy.deepcopy(dict(obj))
        out["apiVersion"] = f"{GROUP}/{to_version}"
        if from_version == to_version:
            return out
        if from_version not in VERSIONS or to_version not in VERSIONS:
            raise ValueError(
                f"{self.kind} converts between {' and '.join(VERSIONS)}, not {from_version} -> {to_version}"
            )
        to_v2 = to_version == V1ALPHA2
        source: dict[str, Any] = {part: out.pop(part) for part in CONVERTED if part in out}
        rest = copy.deepcopy(source)
        target: dict[str, Any] = {}
        containers = [*(Container.both((part,)) for part in CONVERTED)]
        containers += [r for r in self.rules if isinstance(r, Container)]
        for container in containers:
            src, dst = (container.v1, container.v2) if to_v2 else (container.v2, container.v1)
            if isinstance(_get(source, src), dict):
                _ensure(target, dst)
        metadata = out.get("metadata")
        annotations = dict(metadata.get("annotations") or {}) if isinstance(metadata, Mapping) else {}
        carried = _read_carried(annotations.pop(carried_annotation(to_version), None))
        for field in (r for r in self.rules if isinstance(r, Field)):
            src, dst = (field.v1, field.v2) if to_v2 else (field.v2, field.v1)
            convert, back = (field.to_v2, field.to_v1) if to_v2 else (field.to_v1, field.to_v2)
            value = _get(source, src)
            if value is _MISSING:
                continue
            kept = _get(carried, dst) if field.lossy else _MISSING
            if kept is not _MISSING:
                _remove(carried, dst)  # stale, unless the other version still has what it converted to
                if _same(back(kept), value):
                    _set(target, dst, copy.deepcopy(kept))  # the precise value
                    _remove(rest, src)
                    continue
            converted = convert(value)
            if converted is UNHELD:
                continue
            _set(target, dst, converted)
            if field.lossy and not _same(back(converted), value):
                continue  # the precise value stays in the annotation
            _remove(rest, src)
        for container in sorted(containers, key=lambda c: -len(c.v1 if to_v2 else c.v2)):  # innermost first
            src = container.v1 if to_v2 else container.v2
            if _get(rest, src) == {} and isinstance(_get(source, src), dict):
                _remove(rest, src)
        _fill(target, carried)
        if self.marks_v1alpha1_writes:  # the digest is the stored object's own: a v1alpha1 client never sees it
            annotations.pop(WRITTEN_SPEC_ANNOTATION, None)
            if to_v2:
                annotations[WRITTEN_SPEC_ANNOTATION] = spec_digest(target.get("spec"))
        if rest or (to_v2 and self.marks_v1alpha1_writes):
            annotations[carried_annotation(from_version)] = json.dumps(rest, sort_keys=True, separators=(",", ":"))
        else:
            annotations.pop(carried_annotation(from_version), None)
        if isinstance(metadata, Mapping):
            metadata = dict(metadata)
            if annotations:
                metadata["annotations"] = annotations
            else:
                metadata.pop("annotations", None)
            out["metadata"] = metadata
        elif annotations:
            out["metadata"] = {"annotations": annotations}
        out.update(target)
        return out


def carried_fields(obj: Mapping[str, Any], version: str) -> dict[str, Any]:
    """What `obj` (of the other version) keeps of `version` in its annotation, `{"spec": ..., "status": ...}`; empty
    when it keeps nothing or the annotation is not such JSON."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return _read_carried(annotations.get(carried_annotation(version)) if isinstance(annotations, Mapping) else None)


def written_in_v1alpha1(obj: Mapping[str, Any]) -> bool:
    """Whether a stored (v1alpha2) object was last written in v1alpha1: it has the annotation `aim.eai.amd.com/
    v1alpha1-fields`, which every conversion from v1alpha1 writes for the kinds that mark it (`KindConversion.
    marks_v1alpha1_writes`), and its spec is still the one that write stored (`WRITTEN_SPEC_ANNOTATION`). A write in
    v1alpha2 converts nothing: one that changes the spec ends it (the annotation `aim.eai.amd.com/v1alpha1-fields`
    stays, with the fields it keeps for v1alpha1 clients), one that changes only metadata (a label) does not, nor one
    that sends the same spec again. Without the digest (a mark written before omectl recorded it, or the digest
    annotation removed) the first annotation alone marks it."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if not isinstance(annotations, Mapping) or not isinstance(annotations.get(carried_annotation(V1ALPHA1)), str):
        return False
    digest = annotations.get(WRITTEN_SPEC_ANNOTATION)
    return not isinstance(digest, str) or digest == spec_digest(obj.get("spec"))


def spec_digest(spec: Any) -> str:
    """16 hex digits of the SHA-256 of a spec as canonical JSON (`null` for none)."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def version_of(obj: Mapping[str, Any]) -> str:
    """The version of an object's `apiVersion` (`aim.eai.amd.com/v1alpha1` -> `v1alpha1`)."""
    return str(obj.get("apiVersion") or "").rpartition("/")[2]


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same, as JSON (`True` is not `1`)."""
    if a is UNHELD or b is UNHELD:
        return a is b
    return json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)


def _get(node: Any, path: Path) -> Any:
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return _MISSING
        node = node[key]
    return node


def _ensure(node: dict[str, Any], path: Path) -> dict[str, Any]:
    for key in path:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    return node


def _set(node: dict[str, Any], path: Path, value: Any) -> None:
    _ensure(node, path[:-1])[path[-1]] = value


def _remove(node: dict[str, Any], path: Path) -> None:
    """Remove the value at `path`, and each object above it that this leaves empty."""
    parents = [node]
    for key in path[:-1]:
        parents.append(parents[-1][key])
    del parents[-1][path[-1]]
    for depth in range(len(path) - 1, 0, -1):
        if parents[depth]:
            break
        del parents[depth - 1][path[depth - 1]]


def _read_carried(text: Any) -> dict[str, Any]:
    if not isinstance(text, str):
        return {}
    try:
        carried = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(carried, dict):
        return {}
    return {part: value for part, value in carried.items() if part in CONVERTED}


def _fill(target: dict[str, Any], carried: Mapping[str, Any]) -> None:
    """Put the carried fields where the target has nothing; objects merge, anything else the target has wins."""
    for key, value in carried.items():
        if key not in target:
            target[key] = copy.deepcopy(value)
        elif isinstance(target[key], dict) and isinstance(value, Mapping):
            _fill(target[key], value)
