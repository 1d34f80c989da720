"""Server-side apply over plain dicts: field sets, the FieldsV1 encoding, and managedFields ownership.

This mirrors what kube-apiserver's fieldmanager does on top of structured-merge-diff (SMD):

* a *field set* is a set of paths; a path is a tuple of serialized path elements exactly as they appear in
  FieldsV1 keys: ``f:<field>``, ``k:<json of the key fields>``, ``v:<json value>``, ``i:<index>``;
* ``server_side_apply`` merges an applied configuration into the live object, prunes the fields the applier
  dropped, detects conflicts with other managers and records an ``Apply`` entry;
* ``record_update`` records an ``Update`` entry for create/update/patch requests.

List semantics come from a ``ListTypes`` callback taking a schema path (field names, with ``"[]"`` for list
items) and answering ``("atomic", ())``, ``("set", ())`` or ``("map", (key, ...))``. ``builtin_list_types``
holds the defaults for built-in kinds; for custom resources pass a schema-derived callback
(``StructuralSchema.list_type``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

import orjson

from omectl.sim.apiserver.errors import APIError, FieldError, bad_request, invalid

SchemaPath = tuple[str, ...]
ListTypes = Callable[[SchemaPath], tuple[str, tuple[str, ...]]]
Path = tuple[str, ...]
FieldSet = frozenset[Path]

LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"
# The one manager whose applies upgrade client-side-apply ownership and sync last-applied (hard-coded upstream).
KUBECTL_MANAGER: Final = "kubectl"
BEFORE_FIRST_APPLY: Final = "before-first-apply"
FIELD_MANAGER_MAX_LENGTH: Final = 128


class _Missing:
    """Marks an absent value (as opposed to JSON null) while walking two objects side by side."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()

# Exact paths never recorded in any manager's set (upstream `stripmeta.go`); their children are kept.
_STRIPPED: Final[frozenset[Path]] = frozenset(
    {
        ("f:apiVersion",),
        ("f:kind",),
        ("f:metadata",),
        *(
            ("f:metadata", "f:" + name)
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        ),
    }
)


# --------------------------------------------------------------------------------------------- list types

_CONTAINER_LISTS: Final = frozenset({"containers", "initContainers", "ephemeralContainers"})
_NAMED_LISTS: Final = frozenset({"volumes", "env", "imagePullSecrets", "webhooks"})


def builtin_list_types(path: SchemaPath) -> tuple[str, tuple[str, ...]]:
    """List semantics of built-in kinds (their OpenAPI `x-kubernetes-list-type`); atomic otherwise."""
    if not path:
        return ("atomic", ())
    name = path[-1]
    if path == ("metadata", "finalizers"):
        return ("set", ())
    if path == ("metadata", "ownerReferences"):
        return ("map", ("uid",))
    if name in _CONTAINER_LISTS or name in _NAMED_LISTS:
        return ("map", ("name",))
    if name == "volumeMounts":
        return ("map", ("mountPath",))
    if name == "conditions":
        return ("map", ("type",))
    if name == "ports":
        if len(path) >= 3 and path[-2] == "[]" and path[-3] in _CONTAINER_LISTS:
            return ("map", ("containerPort", "protocol"))
        if path == ("spec", "ports"):
            return ("map", ("port", "protocol"))
    return ("atomic", ())


# --------------------------------------------------------------------------------------------- JSON helpers


def _go_float(value: float) -> str:
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return orjson.dumps(value).decode()


def _integral_floats_to_int(value: Any) -> Any:
    # Go decodes JSON numbers without a fraction as int64, so 1.0 re-encodes as 1.
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < 1e21 else value
    if isinstance(value, dict):
        return {k: _integral_floats_to_int(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral_floats_to_int(v) for v in value]
    return value


def _escape_html(text: str) -> str:
    # Go's encoding/json (and jsoniter's standard config) escape these even inside strings.
    if "<" in text or ">" in text or "&" in text or "\u2028" in text or "\u2029" in text:
        text = (
            text.replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")
        )
    return text


def go_json(value: Any) -> str:
    """Compact JSON as Go writes it: sorted map keys, HTML-escaped strings, integral floats as integers."""
    if isinstance(value, bool) or value is None:
        return orjson.dumps(value).decode()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return _escape_html(orjson.dumps(value).decode())
    try:
        text = orjson.dumps(_integral_floats_to_int(value), option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an integer beyond 64 bits
        return _go_json_slow(value)
    return _escape_html(text)


def _go_json_slow(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(go_json(str(k)) + ":" + go_json(value[k]) for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    return go_json(value)


def _go_quote(text: str) -> str:
    """Go's `%q` for ordinary strings (printable runes kept, quotes/backslashes/controls escaped)."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif not ch.isprintable():
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x80 else (f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _go_to_string(value: Any) -> str:
    """SMD's `value.ToString`, used in conflict paths such as `[name="nginx"]`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return _go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_go_to_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_go_to_string(v)}" for k, v in value.items())
    return "{{undefined}}"


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality that keeps booleans apart from numbers (Python has True == 1)."""
    if a is b:
        return True
    if isinstance(a, dict):
        if not isinstance(b, dict) or len(a) != len(b):
            return False
        for key, value in a.items():
            other = b.get(key, MISSING)
            if other is MISSING or not json_equal(value, other):
                return False
        return True
    if isinstance(a, list):
        if not isinstance(b, list) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(b, dict | list):
        return False
    return bool(a == b)


def _same_json(a: Any, b: Any) -> bool:
    """Whether two values serialize identically (then they are `json_equal`); False when orjson cannot tell."""
    try:
        return orjson.dumps(a) == orjson.dumps(b)
    except TypeError:
        return False


def _same(a: Any, b: Any) -> bool:
    """`json_equal`, with a fast path through orjson for the common case of identical serializations."""
    try:
        if orjson.dumps(a) == orjson.dumps(b):
            return True
    except TypeError:
        pass
    return json_equal(a, b)


def _copy(value: Any) -> Any:
    if isinstance(value, dict | list):
        try:
            return orjson.loads(orjson.dumps(value))
        except TypeError:  # integers beyond 64 bits
            if isinstance(value, dict):
                return {k: _copy(v) for k, v in value.items()}
            return [_copy(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------- path elements


class _TypedError(Exception):
    """A structural problem with an applied object (SMD validation error text, without the prefix)."""


def _key_element(fields: Iterable[tuple[str, Any]]) -> str:
    return "k:{" + ",".join(go_json(name) + ":" + go_json(value) for name, value in sorted(fields)) + "}"


def _item_element(item: Any, kind: str, keys: tuple[str, ...]) -> str:
    if kind == "set":
        if isinstance(item, dict):
            raise _TypedError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise _TypedError("not supported: associative list with lists as elements")
        if item is None:
            raise _TypedError("associative list without keys has an element that's an explicit null")
        return "v:" + go_json(item)
    if item is None:
        raise _TypedError("associative list with keys may not have a null element")
    if not isinstance(item, dict):
        raise _TypedError("associative list with keys may not have non-map elements")
    present = [(name, item[name]) for name in keys if name in item]
    if keys and not present:
        quoted = " ".join(_go_quote(k) for k in keys)
        raise _TypedError(
            f"associative list with keys has an element that omits all key fields [{quoted}] "
            "(and doesn't have default values for any key fields)"
        )
    return _key_element(present)


def _lenient_element(item: Any, kind: str, keys: tuple[str, ...]) -> str:
    """The element of a live item; malformed items still get a stable identity instead of an error."""
    try:
        return _item_element(item, kind, keys)
    except _TypedError:
        return "v:" + go_json(item)


def _value_order(value: Any) -> tuple[Any, ...]:
    # SMD's total order over values: numbers < strings < booleans < lists < maps < null.
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_value_order(v) for v in value))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(value[k])) for k in sorted(value)))
    return (5,)


@functools.lru_cache(maxsize=65536)
def _element_order(element: str) -> tuple[Any, ...]:
    """Sort key matching SMD's `PathElement.Compare`: field names, then keys, then values, then indexes."""
    tag, body = element[0], element[2:]
    if tag == "f":
        return (0, body)
    if tag == "k":
        fields = orjson.loads(body)
        return (1, tuple((name, _value_order(fields[name])) for name in sorted(fields)))
    if tag == "v":
        return (2, _value_order(orjson.loads(body)))
    return (3, int(body))


@functools.lru_cache(maxsize=65536)
def _canonical_element(element: str) -> str:
    """Normalize a FieldsV1 key read from a client (key order, number and string spelling)."""
    tag, sep, body = element.partition(":")
    if not sep or tag not in ("f", "k", "v", "i"):
        raise ValueError(f"unknown path element {element!r}")
    if tag == "f":
        return element
    if tag == "i":
        return "i:" + str(int(body))
    parsed = orjson.loads(body)
    if tag == "k":
        if not isinstance(parsed, dict):
            raise ValueError(f"key path element is not an object: {element!r}")
        return _key_element(parsed.items())
    return "v:" + go_json(parsed)


def _element_string(element: str) -> str:
    """One element of a conflict path, as SMD's `PathElement.String` renders it."""
    tag, body = element[0], element[2:]
    if tag == "f":
        return "." + body
    if tag == "k":
        fields = orjson.loads(body)
        return "[" + ",".join(f"{name}={_go_to_string(fields[name])}" for name in sorted(fields)) + "]"
    if tag == "v":
        return f"[={_go_to_string(orjson.loads(body))}]"
    return f"[{body}]"


def path_string(path: Path) -> str:
    """A path as the API server prints it in conflicts, e.g. `.spec.containers[name="app"].image`."""
    return "".join(_element_string(e) for e in path)


# --------------------------------------------------------------------------------------------- field sets


class _FieldSetWalker:
    """SMD's `ToFieldSet`: every leaf, list item, empty map and null; `strict` validates like an apply."""

    def __init__(self, list_types: ListTypes, strict: bool) -> None:
        self.list_types = list_types
        self.strict = strict
        self.paths: set[Path] = set()
        self.errors: list[str] = []

    def walk_map(self, obj: Mapping[str, Any], path: Path, schema_path: SchemaPath) -> None:
        for key, value in obj.items():
            child = (*path, "f:" + key)
            if isinstance(value, dict) and value:
                self.walk_map(value, child, (*schema_path, key))
            elif isinstance(value, list):
                self.walk_list(value, child, (*schema_path, key))
            else:
                self.paths.add(child)

    def walk_list(self, items: list[Any], path: Path, schema_path: SchemaPath) -> None:
        kind, keys = self.list_types(schema_path)
        if kind == "atomic":
            self.paths.add(path)
            return
        elements: list[str | None] = []
        seen: set[str] = set()
        duplicates: set[str] = set()
        for index, item in enumerate(items):
            try:
                element: str | None = _item_element(item, kind, keys)
            except _TypedError as exc:
                if self.strict:
                    self.errors.append(f"{path_string(path)}: element {index}: {exc}")
                    element = None
                else:
                    element = "v:" + go_json(item)
            elements.append(element)
            if element is None:
                continue
            if element in seen and element not in duplicates:
                duplicates.add(element)
                if self.strict:
                    self.errors.append(f"{path_string(path)}: duplicate entries for key {_element_string(element)}")
            seen.add(element)
        item_schema = (*schema_path, "[]")
        for element, item in zip(elements, items, strict=True):
            if element is None:
                continue
            child = (*path, element)
            self.paths.add(child)
            if element not in duplicates and kind == "map" and isinstance(item, dict):
                self.walk_map(item, child, item_schema)


def _raw_field_set(obj: Mapping[str, Any], list_types: ListTypes, *, strict: bool = False) -> set[Path]:
    walker = _FieldSetWalker(list_types, strict)
    walker.walk_map(obj, (), ())
    if walker.errors:
        text = walker.errors[0] if len(walker.errors) == 1 else "errors:\n" + "\n".join(f"  {e}" for e in walker.errors)
        raise _TypedError(text)
    return walker.paths


def field_set(obj: Mapping[str, Any], list_types: ListTypes) -> FieldSet:
    """The paths an object sets, without the system-owned ones (apiVersion, kind, metadata.name/uid/...)."""
    body = _without_managed_fields(obj)
    return frozenset(_raw_field_set(body, list_types) - _STRIPPED)


def _strip(paths: set[Path]) -> set[Path]:
    return paths - _STRIPPED


def _field_ancestors(paths: Iterable[Path]) -> set[Path]:
    """`paths` plus every ancestor reached through a field name (SMD's `EnsureNamedFieldsAreMembers`)."""
    out = set(paths)
    for path in paths:
        for end in range(1, len(path)):
            if path[end - 1][0] == "f":
                out.add(path[:end])
    return out


def _exclude_prefixes(paths: set[Path], prefixes: tuple[Path, ...]) -> set[Path]:
    if not prefixes:
        return paths
    return {p for p in paths if not any(p[: len(pre)] == pre for pre in prefixes)}


# --------------------------------------------------------------------------------------------- FieldsV1


_Trie = dict[str, "list[Any]"]  # element -> [is_member, child trie]


def _build_trie(paths: Iterable[Path]) -> _Trie:
    root: _Trie = {}
    for path in paths:
        level = root
        last = len(path) - 1
        for depth, element in enumerate(path):
            node = level.get(element)
            if node is None:
                node = level[element] = [False, {}]
            if depth == last:
                node[0] = True
            level = node[1]
    return root


def _emit_fields_v1(level: _Trie) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for element in sorted(level, key=_element_order):
        member, children = level[element]
        if children:
            node: dict[str, Any] = {".": {}} if member else {}
            node.update(_emit_fields_v1(children))
            out[element] = node
        else:
            out[element] = {}
    return out


def to_fields_v1(fs: Iterable[Path]) -> dict[str, Any]:
    """The FieldsV1 trie of a field set, with `"."` for owned maps/items and keys in SMD order."""
    return _emit_fields_v1(_build_trie(p for p in fs if p))


def from_fields_v1(d: Mapping[str, Any]) -> FieldSet:
    """Parse a FieldsV1 trie; raises ValueError for malformed input."""
    out: set[Path] = set()

    def walk(level: Mapping[str, Any], prefix: Path) -> None:
        if not isinstance(level, Mapping):
            raise ValueError("FieldsV1 nodes must be objects")
        for raw, child in level.items():
            if raw == ".":
                if prefix:
                    out.add(prefix)
                continue
            path = (*prefix, _canonical_element(raw))
            if not isinstance(child, Mapping):
                raise ValueError("FieldsV1 nodes must be objects")
            if child:
                walk(child, path)
            else:
                out.add(path)

    walk(d, ())
    return frozenset(out)


def _iteration_order(paths: Iterable[Path]) -> list[Path]:
    """SMD's `Set.Iterate` order: at each level the members (sorted), then each child subtree (sorted)."""
    result: list[Path] = []

    def walk(level: _Trie, prefix: Path) -> None:
        ordered = sorted(level, key=_element_order)
        result.extend((*prefix, e) for e in ordered if level[e][0])
        for element in ordered:
            if level[element][1]:
                walk(level[element][1], (*prefix, element))

    walk(_build_trie(paths), ())
    return result


# --------------------------------------------------------------------------------------------- comparison


@dataclass
class _Comparison:
    added: set[Path]
    modified: set[Path]
    removed: set[Path]

    def exclude(self, prefixes: tuple[Path, ...]) -> None:
        self.added = _exclude_prefixes(self.added, prefixes)
        self.modified = _exclude_prefixes(self.modified, prefixes)
        self.removed = _exclude_prefixes(self.removed, prefixes)


def _is_container(value: Any) -> bool:
    return isinstance(value, dict | list)


class _Comparer:
    """SMD's `Compare`: leaves/atomic lists are Added/Removed/Modified; maps and items only Added/Removed."""

    def __init__(self, list_types: ListTypes) -> None:
        self.list_types = list_types
        self.result = _Comparison(set(), set(), set())

    def leaf(self, lhs: Any, rhs: Any, path: Path) -> None:
        if lhs is MISSING:
            self.result.added.add(path)
        elif rhs is MISSING:
            self.result.removed.add(path)
        elif not json_equal(lhs, rhs):
            self.result.modified.add(path)

    def value(self, lhs: Any, rhs: Any, path: Path, schema_path: SchemaPath) -> None:
        lhs_map = isinstance(lhs, dict) or lhs is MISSING
        rhs_map = isinstance(rhs, dict) or rhs is MISSING
        lhs_list = isinstance(lhs, list) or lhs is MISSING
        rhs_list = isinstance(rhs, list) or rhs is MISSING
        if lhs_map and rhs_map:
            if (lhs is MISSING or not lhs) and (rhs is MISSING or not rhs):
                self.leaf(lhs, rhs, path)
                return
            if lhs is rhs or (lhs is not MISSING and rhs is not MISSING and _same_json(lhs, rhs)):
                return  # identical maps: nothing below them is added, removed or modified
            left: Mapping[str, Any] = lhs if isinstance(lhs, dict) else {}
            right: Mapping[str, Any] = rhs if isinstance(rhs, dict) else {}
            for key, value in left.items():
                other = right.get(key, MISSING)
                if (
                    other is not MISSING
                    and not isinstance(value, dict | list)
                    and not isinstance(other, dict | list)
                    and value is not MISSING
                ):
                    # Two scalars: what `leaf` does, without the walk's bookkeeping.
                    if not json_equal(value, other):
                        self.result.modified.add((*path, "f:" + key))
                    continue
                self.value(value, other, (*path, "f:" + key), (*schema_path, key))
            for key, value in right.items():
                if key not in left:
                    self.value(MISSING, value, (*path, "f:" + key), (*schema_path, key))
            self._node(lhs, rhs, path)
            return
        if lhs_list and rhs_list:
            kind, keys = self.list_types(schema_path)
            if kind == "atomic" or ((lhs is MISSING or not lhs) and (rhs is MISSING or not rhs)):
                self.leaf(lhs, rhs, path)
                return
            if lhs is rhs or (lhs is not MISSING and rhs is not MISSING and _same_json(lhs, rhs)):
                return  # identical lists: no item changed
            self._list(
                lhs if lhs is not MISSING else [],
                rhs if rhs is not MISSING else [],
                kind,
                keys,
                path,
                (*schema_path, "[]"),
            )
            self._node(lhs, rhs, path)
            return
        if lhs is MISSING or rhs is MISSING or not (_is_container(lhs) or _is_container(rhs)):
            self.leaf(lhs, rhs, path)
            return
        # The type changed (say a map became a string): everything below the old value went away.
        if _is_container(lhs):
            self.value(lhs, MISSING, path, schema_path)
        if _is_container(rhs):
            self.value(MISSING, rhs, path, schema_path)
        self.result.added.discard(path)
        self.result.removed.discard(path)
        self.result.modified.add(path)

    def _node(self, lhs: Any, rhs: Any, path: Path) -> None:
        if not path:
            return
        if lhs is MISSING:
            self.result.added.add(path)
        elif rhs is MISSING:
            self.result.removed.add(path)

    def _list(
        self,
        lhs: list[Any],
        rhs: list[Any],
        kind: str,
        keys: tuple[str, ...],
        path: Path,
        item_schema: SchemaPath,
    ) -> None:
        left: dict[str, list[Any]] = {}
        for item in lhs:
            left.setdefault(_lenient_element(item, kind, keys), []).append(item)
        right: dict[str, list[Any]] = {}
        for item in rhs:
            right.setdefault(_lenient_element(item, kind, keys), []).append(item)
        elements = list(left) + [e for e in right if e not in left]
        for element in elements:
            old_items = left.get(element, [])
            new_items = right.get(element, [])
            child = (*path, element)
            if len(old_items) <= 1 and len(new_items) <= 1:
                self.value(
                    old_items[0] if old_items else MISSING,
                    new_items[0] if new_items else MISSING,
                    child,
                    item_schema,
                )
            elif len(old_items) >= 2 and len(new_items) >= 2:
                if not json_equal(old_items, new_items):
                    self.result.modified.add(child)
            elif len(old_items) >= 2:
                if new_items:
                    self.value(MISSING, new_items[0], child, item_schema)
                self.result.removed.add(child)
            else:
                if old_items:
                    self.value(old_items[0], MISSING, child, item_schema)
                self.result.added.add(child)


def _compare(lhs: Mapping[str, Any], rhs: Mapping[str, Any], list_types: ListTypes) -> _Comparison:
    comparer = _Comparer(list_types)
    comparer.value(lhs, rhs, (), ())
    return comparer.result


def _add_all(
    value: Any,
    path: Path,
    schema_path: SchemaPath,
    list_types: ListTypes,
    excluded: frozenset[Path],
    out: set[Path],
) -> None:
    """What `_Comparer.value(MISSING, value, ...)` reports as added, in one walk (a create has no old side).

    Paths under an `excluded` prefix are left out (every excluded prefix is a path of field names).
    """
    if isinstance(value, dict):
        if not value:
            out.add(path)
            return
        for key, sub in value.items():
            child = (*path, "f:" + key)
            if excluded and child in excluded:
                continue
            if isinstance(sub, dict | list):
                _add_all(sub, child, (*schema_path, key), list_types, excluded, out)
            else:
                out.add(child)
        if path:
            out.add(path)
        return
    if isinstance(value, list):
        if not value:
            out.add(path)
            return
        kind, keys = list_types(schema_path)
        if kind == "atomic":
            out.add(path)
            return
        by_element: dict[str, list[Any]] = {}
        for item in value:
            by_element.setdefault(_lenient_element(item, kind, keys), []).append(item)
        item_schema = (*schema_path, "[]")
        for element, items in by_element.items():
            child = (*path, element)
            if len(items) == 1:
                _add_all(items[0], child, item_schema, list_types, excluded, out)
            else:
                out.add(child)
        if path:
            out.add(path)
        return
    out.add(path)


# --------------------------------------------------------------------------------------------- merge / remove


def _merge(lhs: Any, rhs: Any, schema_path: SchemaPath, list_types: ListTypes) -> Any:
    """SMD's `Merge` of an applied configuration (rhs) into the live value (lhs); shares subtrees."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    if isinstance(lhs, dict) and isinstance(rhs, dict):
        if not rhs:
            return lhs if lhs else rhs
        out = {}
        for key, value in lhs.items():
            other = rhs.get(key, MISSING)
            out[key] = value if other is MISSING else _merge(value, other, (*schema_path, key), list_types)
        for key, value in rhs.items():
            if key not in lhs:
                out[key] = value
        return out
    if isinstance(lhs, list) and isinstance(rhs, list):
        kind, keys = list_types(schema_path)
        if kind == "atomic" or (not lhs and not rhs):
            return rhs
        return _merge_list(lhs, rhs, kind, keys, (*schema_path, "[]"), list_types)
    return rhs


def _index(items: list[Any], kind: str, keys: tuple[str, ...]) -> tuple[list[str], dict[str, Any]]:
    order: list[str] = []
    first: dict[str, Any] = {}
    for item in items:
        element = _lenient_element(item, kind, keys)
        if element not in first:
            first[element] = item
            order.append(element)
    return order, first


def _merge_list(
    lhs: list[Any],
    rhs: list[Any],
    kind: str,
    keys: tuple[str, ...],
    item_schema: SchemaPath,
    list_types: ListTypes,
) -> list[Any]:
    """Associative list merge with SMD's ordering: live-only items keep their place, shared items follow the
    applied order, applied-only items are inserted where the applied list has them."""
    left_order, left = _index(lhs, kind, keys)
    right_order, right = _index(rhs, kind, keys)
    shared = [e for e in right_order if e in left]
    shared_at = 0
    next_shared = shared[0] if shared else None
    merged: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(left_order) or ri < len(right_order):
        if li < len(left_order) and ri < len(right_order):
            element = left_order[li]
            if element == right_order[ri]:
                out.append(_merge(left[element], right[element], item_schema, list_types))
                merged.add(element)
                li += 1
                ri += 1
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
                continue
            if element in right and next_shared is not None and next_shared != element:
                li += 1  # a shared item, emitted when the applied list reaches it
                continue
        if li < len(left_order):
            element = left_order[li]
            if element not in right:
                out.append(left[element])
                li += 1
                continue
            if element in merged:
                li += 1
                continue
        if ri < len(right_order):
            element = right_order[ri]
            merged.add(element)
            out.append(_merge(left.get(element, MISSING), right[element], item_schema, list_types))
            ri += 1
            if next_shared is not None and next_shared == element:
                shared_at += 1
                next_shared = shared[shared_at] if shared_at < len(shared) else None
    return out


def _remove(value: Any, trie: _Trie, schema_path: SchemaPath, list_types: ListTypes) -> Any:
    """Remove the trie's member paths (with their subtrees); containers emptied by the removal disappear."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, child in value.items():
            node = trie.get("f:" + key)
            if node is None:
                out[key] = child
                continue
            if node[0]:
                continue
            pruned = _remove(child, node[1], (*schema_path, key), list_types)
            if _is_container(child) and child and not pruned:
                continue
            out[key] = pruned
        return out
    if isinstance(value, list) and value:
        kind, keys = list_types(schema_path)
        if kind == "atomic":
            return value
        items: list[Any] = []
        for item in value:
            node = trie.get(_lenient_element(item, kind, keys))
            if node is None:
                items.append(item)
            elif not node[0]:
                items.append(_remove(item, node[1], (*schema_path, "[]"), list_types))
        return items
    return value


def _protected(path: Path) -> bool:
    return path in _STRIPPED or path[0] in ("f:apiVersion", "f:kind")


def _prune(merged: dict[str, Any], last: set[Path], owned: set[Path], list_types: ListTypes) -> dict[str, Any]:
    """Drop what the applier owned last time, no longer applies, and nobody else owns (upstream `prune`)."""
    if not last:
        return merged
    still_owned = _field_ancestors(owned)
    doomed = {p for p in _field_ancestors(last) if p not in still_owned and not _protected(p)}
    if not doomed:
        return merged
    result: dict[str, Any] = _remove(merged, _build_trie(doomed), (), list_types)
    return result


# --------------------------------------------------------------------------------------------- managers


@dataclass
class _Manager:
    manager: str
    operation: str  # "Apply" | "Update"
    api_version: str
    subresource: str
    fields: set[Path]
    time: str | None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return _manager_key(self.manager, self.operation, self.api_version, self.subresource)

    def identifier(self) -> str:
        """Upstream's manager identifier: the entry's JSON without fields and time (and apiVersion for Apply)."""
        text = '{"manager":' + go_json(self.manager) + ',"operation":' + go_json(self.operation)
        if self.operation == "Update" and self.api_version:
            text += ',"apiVersion":' + go_json(self.api_version)
        if self.subresource:
            text += ',"subresource":' + go_json(self.subresource)
        return text + "}"

    def printed(self) -> str:
        text = _go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {_go_quote(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


def _manager_key(manager: str, operation: str, api_version: str, subresource: str) -> tuple[str, str, str, str]:
    return (manager, operation, api_version if operation == "Update" else "", subresource)


_Managers = dict[tuple[str, str, str, str], _Manager]


def _decode_managed_fields(entries: Any) -> _Managers | None:
    """Decode `metadata.managedFields`; None when malformed (upstream then starts from scratch)."""
    if not isinstance(entries, list):
        return None
    managers: _Managers = {}
    try:
        for entry in entries:
            operation = entry.get("operation")
            api_version = entry.get("apiVersion")
            if operation not in ("Apply", "Update") or not api_version or entry.get("fieldsType") != "FieldsV1":
                return None
            fields = entry.get("fieldsV1")
            decoded = _Manager(
                manager=str(entry.get("manager", "")),
                operation=operation,
                api_version=str(api_version),
                subresource=str(entry.get("subresource", "")),
                fields=_decode_fields_v1(fields) if fields else set(),
                time=entry.get("time"),
            )
            managers[decoded.key] = decoded
    except (AttributeError, ValueError, TypeError, orjson.JSONDecodeError):
        return None
    return managers


@functools.lru_cache(maxsize=4096)
def _unix_seconds(timestamp: str) -> int:
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


# Emitted FieldsV1 tries by field set: objects of one shape share one trie (stored objects are never
# mutated in place, so sharing is safe), and a trie we emitted decodes without a walk.
_FIELDS_V1_CACHE_SIZE: Final = 8192
_fields_v1_by_set: dict[frozenset[Path], dict[str, Any]] = {}
_set_by_fields_v1: dict[int, tuple[dict[str, Any], frozenset[Path]]] = {}


def _shared_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    key = frozenset(fields)
    trie = _fields_v1_by_set.get(key)
    if trie is None:
        if len(_fields_v1_by_set) >= _FIELDS_V1_CACHE_SIZE:
            _fields_v1_by_set.clear()
            _set_by_fields_v1.clear()
        trie = to_fields_v1(key)
        _fields_v1_by_set[key] = trie
        # The entry keeps the trie alive, so its id cannot be reused while it is cached.
        _set_by_fields_v1[id(trie)] = (trie, frozenset(p for p in key if p))
    return trie


def _decode_fields_v1(trie: Mapping[str, Any]) -> set[Path]:
    hit = _set_by_fields_v1.get(id(trie))
    if hit is not None and hit[0] is trie:
        return set(hit[1])
    return set(from_fields_v1(trie))


def _encode_managed_fields(managers: _Managers) -> list[dict[str, Any]]:
    ordered = sorted(
        managers.values(),
        key=lambda m: (
            m.operation,
            _unix_seconds(m.time) if m.time else 0,
            m.manager,
            m.api_version,
            m.subresource,
        ),
    )
    out: list[dict[str, Any]] = []
    for m in ordered:
        entry: dict[str, Any] = {"manager": m.manager, "operation": m.operation, "apiVersion": m.api_version}
        if m.time is not None:
            entry["time"] = m.time
        entry["fieldsType"] = "FieldsV1"
        entry["fieldsV1"] = _shared_fields_v1(m.fields)
        if m.subresource:
            entry["subresource"] = m.subresource
        out.append(entry)
    return out


def _without_managed_fields(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow copy of `obj` without `metadata.managedFields` (the field manager never compares them)."""
    body = dict(obj)
    meta = body.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        meta = dict(meta)
        del meta["managedFields"]
        body["metadata"] = meta
    return body


def _with_managed_fields(obj: dict[str, Any], managers: _Managers) -> dict[str, Any]:
    encoded = _encode_managed_fields(managers)
    meta = obj.get("metadata")
    meta = dict(meta) if isinstance(meta, dict) else {}
    if encoded:
        meta["managedFields"] = encoded
    else:
        meta.pop("managedFields", None)
    obj["metadata"] = meta
    return obj


def _drop_empty(managers: _Managers) -> None:
    for key in [k for k, m in managers.items() if not m.fields]:
        del managers[key]


def _take_changes(managers: _Managers, me: tuple[str, str, str, str], comparison: _Comparison) -> None:
    """Every other manager loses the fields this operation changed or removed (upstream `update`, forced)."""
    changed = comparison.added | comparison.modified
    for key, entry in managers.items():
        if key != me:
            entry.fields -= changed
            entry.fields -= comparison.removed
    _drop_empty(managers)


def _field_prefixes(ignored_fields: Iterable[SchemaPath]) -> tuple[Path, ...]:
    return tuple(tuple("f:" + name for name in prefix) for prefix in ignored_fields if prefix)


# --------------------------------------------------------------------------------------------- errors


class ApplyConflict(APIError):
    """409 Conflict for an apply that would change fields other managers own."""

    def __init__(self, conflicts: list[tuple[_Manager, Path]]) -> None:
        self.conflicts = [(manager.manager, path_string(path)) for manager, path in conflicts]
        causes = [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {m.printed()}",
                "field": path_string(p),
            }
            for m, p in conflicts
        ]
        if len(conflicts) == 1:
            manager, path = conflicts[0]
            message = f"Apply failed with 1 conflict: conflict with {manager.printed()}: {path_string(path)}"
        else:
            lines: list[str] = []
            current: str | None = None
            for manager, path in conflicts:  # already grouped by sorted manager identifier
                if manager.identifier() != current:
                    current = manager.identifier()
                    lines.append(f"conflicts with {manager.printed()}:")
                lines.append(f"- {path_string(path)}")
            message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
        super().__init__(409, "Conflict", message, {"causes": causes})


def missing_field_manager_error() -> APIError:
    """422 for an apply patch without `fieldManager` (upstream `ValidatePatchOptions`)."""
    error = invalid(
        "PatchOptions",
        "meta.k8s.io",
        "",
        [FieldError("Required", "fieldManager", "is required for apply patch")],
    )
    if error.details is not None:
        error.details.pop("name", None)  # Go omits the empty name
    return error


def _typed_patch_error(detail: str) -> APIError:
    # A plain Go error in the apply path: the server answers 500 with an empty (Unknown) reason.
    return APIError(500, "", f"failed to create typed patch object: {detail}")


@functools.lru_cache(maxsize=256)
def default_manager(user_agent: str | None) -> str:
    """The manager name the API server derives from a User-Agent when no fieldManager is given."""
    prefix = (user_agent or "").split("/", 1)[0]
    out: list[str] = []
    size = 0
    for ch in prefix:
        if not ch.isprintable():
            continue
        width = len(ch.encode())
        if size + width > FIELD_MANAGER_MAX_LENGTH:
            break
        out.append(ch)
        size += width
    return "".join(out)


# --------------------------------------------------------------------------------------------- operations


def _sorted_conflicts(
    managers: _Managers, conflicts: dict[tuple[str, str, str, str], set[Path]]
) -> list[tuple[_Manager, Path]]:
    out: list[tuple[_Manager, Path]] = []
    for key in sorted(conflicts, key=lambda k: managers[k].identifier()):
        out.extend((managers[key], path) for path in _iteration_order(conflicts[key]))
    return out


def _allowed_by_last_applied(live: Mapping[str, Any], api_version: str, list_types: ListTypes) -> set[Path] | None:
    """Fields whose live value still equals the client-side-apply annotation (kubectl's CSA->SSA upgrade)."""
    annotations = (live.get("metadata") or {}).get("annotations") or {}
    text = annotations.get(LAST_APPLIED_ANNOTATION) if isinstance(annotations, dict) else None
    if not text or not isinstance(text, str):
        return None
    try:
        last_applied = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(last_applied, dict) or last_applied.get("apiVersion") != api_version:
        return None
    fields = _raw_field_set(last_applied, list_types)
    diff = _compare(last_applied, live, list_types)
    return fields - diff.modified - diff.added - diff.removed


def _last_applied_text(applied: Mapping[str, Any]) -> str:
    # Upstream re-encodes the applied object without the annotation, with Go's encoder (note the newline).
    body = _without_managed_fields(applied)
    meta = body.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations"), dict):
        meta = dict(meta)
        annotations = dict(meta["annotations"])
        annotations.pop(LAST_APPLIED_ANNOTATION, None)
        meta["annotations"] = annotations
        body["metadata"] = meta
    return go_json(body) + "\n"


def server_side_apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    list_types: ListTypes,
    now: str,
    subresource: str | None = None,
    ignored_fields: Iterable[SchemaPath] = (),
) -> dict[str, Any]:
    """Apply `applied` as `manager`'s complete intent over `live` (None = create) and return the new object.

    `ignored_fields` are field-name prefixes the strategy resets (e.g. `("status",)` on a main resource with a
    status subresource): they are neither owned nor conflicted on. Raises `ApplyConflict` (409) or `APIError`.
    The result shares no mutable state with the arguments.
    """
    if applied.get("apiVersion") != api_version:
        raise bad_request(
            "Incorrect version specified in apply patch. "
            f"Specified patch version: {applied.get('apiVersion') or ''}, expected: {api_version}"
        )
    applied_meta = applied.get("metadata")
    if isinstance(applied_meta, dict) and applied_meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    try:
        applied_fields = _raw_field_set(applied, list_types, strict=True)
    except _TypedError as exc:
        raise _typed_patch_error(str(exc)) from None
    prefixes = _field_prefixes(ignored_fields)
    applied_fields = _exclude_prefixes(applied_fields, prefixes)

    live_body = _without_managed_fields(live) if live is not None else {}
    managers: _Managers = {}
    if live is not None:
        managers = _decode_managed_fields((live.get("metadata") or {}).get("managedFields")) or {}
        if not managers:
            # An object nobody tracked yet: its current fields go to a placeholder updater first.
            managers = _record(
                {},
                live_body,
                {},
                manager=BEFORE_FIRST_APPLY,
                api_version=api_version,
                subresource="",
                list_types=list_types,
                now=now,
                prefixes=prefixes,
            )

    me = _manager_key(manager, "Apply", api_version, subresource or "")
    previous = managers.get(me)
    last = set(previous.fields) if previous is not None else set()

    merged = _merge(live_body, _without_managed_fields(applied), (), list_types)
    others_owned: set[Path] = set()
    for key, entry in managers.items():
        if key != me:
            others_owned |= entry.fields
    merged = _prune(merged, last, others_owned | applied_fields, list_types)

    comparison = _compare(live_body, merged, list_types)
    comparison.exclude(prefixes)
    changed = comparison.added | comparison.modified
    conflicts = {key: entry.fields & changed for key, entry in managers.items() if key != me}
    conflicts = {key: paths for key, paths in conflicts.items() if paths}
    if conflicts and not force:
        remaining = conflicts
        if manager == KUBECTL_MANAGER:
            allowed = _allowed_by_last_applied(live_body, api_version, list_types)
            if allowed is not None:
                remaining = {key: paths - allowed for key, paths in conflicts.items()}
                remaining = {key: paths for key, paths in remaining.items() if paths}
        if remaining:
            raise ApplyConflict(_sorted_conflicts(managers, remaining))

    managers[me] = _Manager(
        manager=manager,
        operation="Apply",
        api_version=api_version,
        subresource=subresource or "",
        fields=_strip(applied_fields),
        time=previous.time if previous is not None else None,
    )
    _take_changes(managers, me, comparison)
    object_changed = not _same(live_body, merged)
    if me in managers and object_changed:
        managers[me].time = now

    result: dict[str, Any] = _copy(merged)
    if manager == KUBECTL_MANAGER:
        annotations = (result.get("metadata") or {}).get("annotations")
        if isinstance(annotations, dict) and annotations.get(LAST_APPLIED_ANNOTATION):
            annotations[LAST_APPLIED_ANNOTATION] = _last_applied_text(applied)
    return _with_managed_fields(result, managers)


def _record(
    old_body: Mapping[str, Any],
    new_body: Mapping[str, Any],
    managers: _Managers,
    *,
    manager: str,
    api_version: str,
    subresource: str,
    list_types: ListTypes,
    now: str,
    prefixes: tuple[Path, ...],
) -> _Managers:
    comparison = _compare(old_body, new_body, list_types)
    comparison.exclude(prefixes)
    me = _manager_key(manager, "Update", api_version, subresource)
    changed = comparison.added | comparison.modified
    # Everyone loses what this operation changed or removed, this manager's own earlier entry included;
    # the entry then gets back what the operation changed (upstream's "current-operation" merge).
    for entry in managers.values():
        entry.fields -= changed
        entry.fields -= comparison.removed
    taken = _strip(changed)
    if taken:
        prior = managers.get(me)
        fields = (prior.fields if prior is not None else set()) | taken
        managers[me] = _Manager(manager, "Update", api_version, subresource, fields, now)
    _drop_empty(managers)
    return managers


def _record_create(
    new: dict[str, Any],
    sent: Any,
    *,
    manager: str,
    api_version: str,
    subresource: str,
    list_types: ListTypes,
    now: str,
    prefixes: tuple[Path, ...],
) -> dict[str, Any]:
    """`record_update` with no old object: every path of `new` is added, so no comparison is needed."""
    managers: _Managers
    if isinstance(sent, list) and (not sent or (len(sent) == 1 and sent[0] == {})):
        managers = {}
    else:
        managers = (_decode_managed_fields(sent) if sent else None) or {}
    new_body = _without_managed_fields(new)
    added: set[Path] = set()
    if new_body:  # the old side is {} rather than missing: an empty object adds nothing
        _add_all(new_body, (), (), list_types, frozenset(prefixes), added)
    for entry in managers.values():
        entry.fields -= added
    taken = _strip(added)
    if taken:
        me = _manager_key(manager, "Update", api_version, subresource)
        prior = managers.get(me)
        fields = (prior.fields | taken) if prior is not None else taken
        managers[me] = _Manager(manager, "Update", api_version, subresource, fields, now)
    _drop_empty(managers)
    return _with_managed_fields(new_body, managers)


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    list_types: ListTypes,
    now: str,
    subresource: str | None = None,
    ignored_fields: Iterable[SchemaPath] = (),
) -> dict[str, Any]:
    """Record a create/update/patch by `manager` (operation Update) and return `new` with its managedFields.

    Fields it added or changed become its own and leave every other manager; removed fields leave everyone.
    Like upstream, a main-resource write may carry its own `managedFields` (`[]` resets them); subresource
    writes always start from the old object's entries; an untracked object stays untracked until an apply.
    Only `metadata` is copied; the rest of `new` (and, when nothing changed, the old entries) is shared.
    """
    old_entries = (old.get("metadata") or {}).get("managedFields") if old is not None else None
    raw_meta = new.get("metadata")
    new_meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    sent = new_meta.get("managedFields") if subresource is None else None
    if old is None:
        return _record_create(
            new,
            sent,
            manager=manager,
            api_version=api_version,
            subresource=subresource or "",
            list_types=list_types,
            now=now,
            prefixes=_field_prefixes(ignored_fields),
        )
    old_body = _without_managed_fields(old)
    new_body = _without_managed_fields(new)
    # A write that sends the live entries back unchanged (a patch always does) decodes the live ones: the
    # same content, and the live entries may be tries this module emitted, which decode without a walk.
    sent_is_old = sent is None or sent is old_entries or _same(sent, old_entries)

    if sent_is_old and _same(old_body, new_body):
        result = dict(new)
        meta = dict(new_meta)
        if old_entries:
            meta["managedFields"] = old_entries
        else:
            meta.pop("managedFields", None)
        result["metadata"] = meta
        return result

    managers: _Managers | None
    if isinstance(sent, list) and (not sent or (len(sent) == 1 and sent[0] == {})):
        managers = {}
    else:
        managers = _decode_managed_fields(old_entries if sent_is_old else sent) if sent else None
        if not managers:
            managers = _decode_managed_fields(old_entries) or {}
    if not managers:
        # Upstream tracks an object from its creation or its first apply, never from a later update.
        return _with_managed_fields(new_body, {})

    managers = _record(
        old_body,
        new_body,
        managers,
        manager=manager,
        api_version=api_version,
        subresource=subresource or "",
        list_types=list_types,
        now=now,
        prefixes=_field_prefixes(ignored_fields),
    )
    return _with_managed_fields(new_body, managers)
