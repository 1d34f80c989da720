"""CRD structural schemas: unknown fields, pruning, defaulting and validation of custom resources; CRD checks.

Worded like the real apiserver: kube-openapi's validator messages, converted to field errors the way
apiextensions-apiserver converts them (`kubeOpenAPIResultToFieldErrors`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
import ipaddress
import re
from decimal import Decimal
from typing import Any

import orjson

from omectl.sim.apiserver.cel import RuleValidator
from omectl.sim.apiserver.errors import FieldError, go_quote

# Fields the root (and every x-kubernetes-embedded-resource object) always knows.
_META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))

# ObjectMeta's fields. A value is either None (a leaf or an opaque map) or the known keys of each list item.
_OWNER_REFERENCE_FIELDS: dict[str, Any] = dict.fromkeys(
    ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
)
_MANAGED_FIELDS_ENTRY_FIELDS: dict[str, Any] = dict.fromkeys(
    ("manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource")
)
_OBJECT_META_FIELDS: dict[str, Any] = {
    **dict.fromkeys(
        (
            "name",
            "generateName",
            "namespace",
            "labels",
            "annotations",
            "finalizers",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        )
    ),
    "ownerReferences": _OWNER_REFERENCE_FIELDS,
    "managedFields": _MANAGED_FIELDS_ENTRY_FIELDS,
}

# The string formats apiextensions keeps (StripUnsupportedFormatsPostProcess drops every other format).
_SUPPORTED_FORMATS = frozenset(
    (
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
        "date-time",
    )
)
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_UUID = re.compile(r"^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$", re.IGNORECASE)
_UUID_VERSIONED = {
    v: re.compile(rf"^[0-9a-f]{{8}}-[0-9a-f]{{4}}-{v}[0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}-[0-9a-f]{{12}}$", re.I)
    for v in "345"
}
_HOSTNAME_LABEL = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_MAC = re.compile(r"^([0-9a-fA-F]{2}[:-]){5,19}[0-9a-fA-F]{2}$|^([0-9a-fA-F]{4}\.){2,9}[0-9a-fA-F]{4}$")
_DURATION = re.compile(r"^\s*([-+]?\d+(\.\d+)?\s*(ns|us|µs|ms|s|m|h|d|w)\s*)+$")
_BSON_OBJECT_ID = re.compile(r"^[0-9a-fA-F]{24}$")
_HEX_COLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_RGB_COLOR = re.compile(r"^rgb\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)$")

_DNS1123_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = re.compile(f"^{_DNS1035_LABEL_FMT}$")


# ---------------------------------------------------------------------------------------------------------
# Go-compatible rendering helpers


def go_float(value: float) -> str:
    """A float64 as Go's `%v` prints it: shortest digits, exponent form when the exponent is < -4 or >= 6."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    sign = "-" if value < 0 else ""
    digits_tuple, exponent = Decimal(repr(abs(value))).as_tuple()[1:]
    digits = "".join(str(d) for d in digits_tuple)
    assert isinstance(exponent, int)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped or "0"
    point = len(digits) + exponent  # digits before the decimal point
    exp10 = point - 1
    # Go's shortest %g switches to %e when the exponent is < -4 or >= 6 (the precision used for shortest).
    if exp10 < -4 or exp10 >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{sign}{digits}{'0' * (point - len(digits))}"
    return f"{sign}{digits[:point]}.{digits[point:]}"


def _go_number(value: float | int) -> str:
    return str(value) if isinstance(value, int) else go_float(value)


def _json_kind(value: Any) -> str:
    """The JSON type name kube-openapi infers for a decoded value."""
    kind = type(value)
    if kind is str:
        return "string"
    if kind is bool:
        return "boolean"
    if kind is int:
        return "integer"
    if kind is float:
        return "number"
    if kind is dict:
        return "object"
    if kind is list:
        return "array"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list | tuple) else "object"


def _json_equal(a: Any, b: Any) -> bool:
    """Equality of decoded JSON values where booleans never equal numbers (unlike Python's `True == 1`)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _enum_label(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return orjson.dumps(value).decode()


def _raw(value: Any) -> str | None:
    """A preformatted bad value where Go prints it differently from `go_value` (floats)."""
    return go_float(value) if isinstance(value, float) else None


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---------------------------------------------------------------------------------------------------------
# Compiled schema nodes


class _Node:
    """One precompiled schema node (structural part plus value validations)."""

    __slots__ = (
        "_default",
        "_default_json",
        "additional",
        "additional_any",
        "all_of",
        "any_of",
        "default_below",
        "defaulted",
        "embedded",
        "enum",
        "enum_strings",
        "excl_max",
        "excl_min",
        "format",
        "has_default",
        "items",
        "list_checks_below",
        "list_map_keys",
        "list_type",
        "map_type",
        "max_items",
        "max_length",
        "max_props",
        "maximum",
        "min_items",
        "min_length",
        "min_props",
        "minimum",
        "multiple_of",
        "not_",
        "nullable",
        "one_of",
        "pattern",
        "pattern_error",
        "pattern_text",
        "preserve_unknown",
        "properties",
        "required",
        "type_label",
        "types",
        "unique_items",
    )

    def __init__(self, raw: dict[str, Any]) -> None:
        self.properties: dict[str, _Node] = {
            k: _Node(v) for k, v in (raw.get("properties") or {}).items() if isinstance(v, dict)
        }
        additional = raw.get("additionalProperties")
        self.additional: _Node | None = _Node(additional) if isinstance(additional, dict) else None
        self.additional_any = additional is True
        items = raw.get("items")
        self.items: _Node | None = _Node(items) if isinstance(items, dict) else None
        self.preserve_unknown = raw.get("x-kubernetes-preserve-unknown-fields") is True
        self.embedded = raw.get("x-kubernetes-embedded-resource") is True
        self.nullable = raw.get("nullable") is True

        type_name = raw.get("type") or ""
        if raw.get("x-kubernetes-int-or-string") is True:
            self.types: tuple[str, ...] = ("integer", "string")
        else:
            self.types = (type_name,) if type_name else ()
        self.type_label = ",".join(self.types)

        self.has_default = "default" in raw
        self._default = raw.get("default")
        self._default_json = orjson.dumps(self._default) if isinstance(self._default, dict | list) else None

        self.required: tuple[str, ...] = tuple(raw.get("required") or ())
        enum = raw.get("enum")
        self.enum: list[Any] | None = list(enum) if isinstance(enum, list) else None
        # A string matches only an equal string: those members answer a string value with one set lookup.
        self.enum_strings: frozenset[str] = frozenset(v for v in self.enum or () if type(v) is str)
        self.pattern_text: str = raw.get("pattern") or ""
        self.pattern: re.Pattern[str] | None = None
        self.pattern_error = ""
        if self.pattern_text:
            try:
                self.pattern = re.compile(self.pattern_text)
            except re.error as exc:
                self.pattern_error = str(exc)
        self.minimum: float | int | None = raw.get("minimum")
        self.maximum: float | int | None = raw.get("maximum")
        self.excl_min = raw.get("exclusiveMinimum") is True
        self.excl_max = raw.get("exclusiveMaximum") is True
        self.multiple_of: float | int | None = raw.get("multipleOf")
        self.min_length: int | None = raw.get("minLength")
        self.max_length: int | None = raw.get("maxLength")
        self.min_items: int | None = raw.get("minItems")
        self.max_items: int | None = raw.get("maxItems")
        self.unique_items = raw.get("uniqueItems") is True
        self.min_props: int | None = raw.get("minProperties")
        self.max_props: int | None = raw.get("maxProperties")
        fmt = raw.get("format") or ""
        self.format = fmt if self.types == ("string",) and fmt in _SUPPORTED_FORMATS else ""

        self.all_of = tuple(_Node(s) for s in raw.get("allOf") or () if isinstance(s, dict))
        self.any_of = tuple(_Node(s) for s in raw.get("anyOf") or () if isinstance(s, dict))
        self.one_of = tuple(_Node(s) for s in raw.get("oneOf") or () if isinstance(s, dict))
        not_schema = raw.get("not")
        self.not_: _Node | None = _Node(not_schema) if isinstance(not_schema, dict) else None

        self.list_type: str = raw.get("x-kubernetes-list-type") or "atomic"
        self.list_map_keys: tuple[str, ...] = tuple(raw.get("x-kubernetes-list-map-keys") or ())
        self.map_type: str = raw.get("x-kubernetes-map-type") or ""

        self.defaulted: tuple[tuple[str, _Node], ...] = tuple(
            (k, p) for k, p in self.properties.items() if p.has_default
        )
        children = [*self.properties.values(), self.additional, self.items]
        self.default_below: bool = bool(self.defaulted) or any(c is not None and c.default_below for c in children)
        # Whether a set or map list sits here or below (else the list-type uniqueness walk finds nothing).
        self.list_checks_below: bool = self.list_type in ("set", "map") or any(
            c is not None and c.list_checks_below for c in children
        )

    def default_copy(self) -> Any:
        """A fresh copy of the default (orjson round trip: a fast deep copy for JSON values)."""
        if self._default_json is not None:
            return orjson.loads(self._default_json)
        return self._default

    def child(self, key: str) -> _Node | None:
        prop = self.properties.get(key)
        return prop if prop is not None else self.additional


class StructuralSchema:
    """One CRD version's `openAPIV3Schema`, compiled once and applied on every write."""

    def __init__(self, openapi_v3_schema: dict[str, Any] | None) -> None:
        self.raw = openapi_v3_schema or {}
        self._root = _Node(self.raw)
        # The resource root always behaves like an embedded resource (apiVersion/kind/metadata are known).
        self._root.embedded = True
        self.rules = RuleValidator.build(self.raw)
        self._list_types: dict[tuple[str, ...], tuple[str, tuple[str, ...]]] = {}

    # -- unknown fields and pruning ------------------------------------------------------------------------

    def unknown_fields(self, obj: dict[str, Any]) -> list[str]:
        """Paths of the fields the schema does not know, as strict field validation reports them."""
        found: list[str] = []
        _prune(obj, self._root, "", found, False)
        return found

    def prune(self, obj: dict[str, Any]) -> None:
        """Remove, in place, every field `unknown_fields` reports."""
        _prune(obj, self._root, "", None, True)

    def drop_nulls(self, obj: dict[str, Any]) -> None:
        """Remove non-nullable nulls that have no default (PruneNonNullableNullsWithoutDefaults)."""
        _drop_nulls(obj, self._root)

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Structural defaulting, in place: absent fields (and non-nullable nulls) get their default."""
        if self._root.default_below:
            _default(obj, self._root)

    def coerce(self, obj: dict[str, Any]) -> list[str]:
        """What the decoder does to a custom resource: default, prune, drop nulls. Returns unknown fields."""
        self.apply_defaults(obj)
        found: list[str] = []
        _prune(obj, self._root, "", found, True)
        _drop_nulls(obj, self._root)
        return found

    # -- validation ---------------------------------------------------------------------------------------

    def validate(self, obj: dict[str, Any]) -> list[FieldError]:
        """Schema errors, then list-type set/map duplicates; root `metadata` is not checked here."""
        errors: list[FieldError] = []
        _validate(obj, self._root, "", errors, True)
        if self._root.list_checks_below:
            _validate_list_types(obj, self._root, "", errors)
        return errors

    def validate_status(self, obj: dict[str, Any]) -> list[FieldError]:
        """What a /status write checks: only `status`, against its own schema, the messages' paths relative to it
        (`count in body ...` at `status.count`), as the status strategy's validator does."""
        node = self._root.child("status")
        status = obj.get("status")
        if node is None or status is None:
            return []
        errors: list[FieldError] = []
        _validate(status, node, "", errors)
        if node.list_checks_below:
            _validate_list_types(status, node, "", errors)
        return [dataclasses.replace(e, field=f"status.{e.field}" if e.field else "status") for e in errors]

    # -- helpers for server-side apply ----------------------------------------------------------------------

    def _node_at(self, path: tuple[str, ...]) -> _Node | None:
        node: _Node | None = self._root
        for segment in path:
            if node is None:
                return None
            node = node.items if segment == "[]" else node.child(segment)
        return node

    def list_type(self, path: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        """("atomic", ()), ("set", ()) or ("map", keys) for the list at a schema path ("[]" = list item)."""
        cached = self._list_types.get(path)
        if cached is not None:
            return cached
        node = self._node_at(path)
        result: tuple[str, tuple[str, ...]] = ("atomic", ())
        if node is not None and node.list_type == "set":
            result = ("set", ())
        elif node is not None and node.list_type == "map":
            result = ("map", node.list_map_keys)
        self._list_types[path] = result
        return result

    def is_map_atomic(self, path: tuple[str, ...]) -> bool:
        """Whether the object at a schema path is `x-kubernetes-map-type: atomic`."""
        node = self._node_at(path)
        return node is not None and node.map_type == "atomic"


# ---------------------------------------------------------------------------------------------------------
# Pruning (pruning/algorithm.go semantics)


def _prune(value: Any, node: _Node | None, path: str, found: list[str] | None, remove: bool) -> None:
    if node is not None and node.preserve_unknown:
        _skip_prune(value, node, path, found, remove)
        return
    if isinstance(value, dict):
        if node is None:
            # No schema at all here: every key is unknown.
            for key in list(value):
                if found is not None:
                    found.append(_child(path, key))
            if remove:
                value.clear()
            return
        for key in list(value) if remove else value:
            if node.embedded and key in _META_FIELDS:
                if key == "metadata":
                    _prune_fixed(value[key], _OBJECT_META_FIELDS, _child(path, key), found, remove)
                continue
            prop = node.properties.get(key)
            if prop is not None:
                _prune(value[key], prop, _child(path, key), found, remove)
            elif node.additional is not None or node.additional_any:
                _prune(value[key], node.additional, _child(path, key), found, remove)
            else:
                if found is not None:
                    found.append(_child(path, key))
                if remove:
                    del value[key]
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                _prune(item, items, f"{path}[{index}]", found, remove)


def _skip_prune(value: Any, node: _Node | None, path: str, found: list[str] | None, remove: bool) -> None:
    """Under x-kubernetes-preserve-unknown-fields: keep unknown keys, still prune inside known ones."""
    if node is None:
        return
    if isinstance(value, dict):
        for key in list(value) if remove else value:
            if node.embedded and key in _META_FIELDS:
                if key == "metadata":
                    _prune_fixed(value[key], _OBJECT_META_FIELDS, _child(path, key), found, remove)
                continue
            prop = node.properties.get(key)
            if prop is not None:
                _prune(value[key], prop, _child(path, key), found, remove)
            elif node.additional is not None:
                _prune(value[key], node.additional, _child(path, key), found, remove)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _skip_prune(item, node.items, f"{path}[{index}]", found, remove)


def _prune_fixed(value: Any, fields: dict[str, Any], path: str, found: list[str] | None, remove: bool) -> None:
    """Prune an ObjectMeta-shaped value against its fixed fields (the server decodes it into ObjectMeta)."""
    if not isinstance(value, dict):
        return
    for key in list(value) if remove else value:
        if key not in fields:
            if found is not None:
                found.append(_child(path, key))
            if remove:
                del value[key]
            continue
        item_fields = fields[key]
        if item_fields is not None and isinstance(value[key], list):
            for index, item in enumerate(value[key]):
                _prune_fixed(item, item_fields, f"{_child(path, key)}[{index}]", found, remove)


def _drop_nulls(value: Any, node: _Node | None) -> None:
    if node is None:
        return
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None or isinstance(v, dict | list)]:
            child = node.child(key)
            if child is None:
                continue
            sub = value[key]
            if sub is None:
                if not child.nullable and not child.has_default:
                    del value[key]
            else:
                _drop_nulls(sub, child)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            if isinstance(item, dict | list):
                _drop_nulls(item, node.items)


def _default(value: Any, node: _Node) -> None:
    if isinstance(value, dict):
        for key, prop in node.defaulted:
            current = value.get(key, _default)
            if current is _default or (current is None and not prop.nullable):
                value[key] = prop.default_copy()
        for key, sub in value.items():
            if not isinstance(sub, dict | list):
                continue
            child = node.child(key)
            if child is not None and child.default_below:
                _default(sub, child)
    elif isinstance(value, list):
        items = node.items
        if items is not None and items.default_below:
            for item in value:
                _default(item, items)


# ---------------------------------------------------------------------------------------------------------
# Validation (kube-openapi semantics, apiextensions wording)


def _type_error(path: str, expected: str, actual: str) -> FieldError:
    return FieldError(
        "TypeInvalid",
        path,
        value=actual,
        detail=f"{path} in body must be of type {expected}: {go_quote(actual)}",
    )


def _composite(message: str) -> FieldError:
    # Not a *Validation error: apiextensions reports it against the nil path with an empty value.
    return FieldError("Invalid", "<nil>", value="", detail=message)


def _validate(value: Any, node: _Node, path: str, errors: list[FieldError], is_root: bool = False) -> None:
    kind = _json_kind(value)
    # type
    if value is None:
        if node.types and not node.nullable and "null" not in node.types:
            errors.append(_type_error(path, node.type_label, "null"))
    elif node.types and kind not in node.types:
        int_as_number = kind == "integer" and "number" in node.types
        float_as_int = kind == "number" and "integer" in node.types and float(value).is_integer()
        if not (int_as_number or float_as_int):
            errors.append(_type_error(path, node.type_label, kind))

    if node.all_of or node.any_of or node.one_of or node.not_ is not None:
        _validate_combinators(value, node, path, errors)

    if kind == "string":
        _validate_string(value, node, path, errors)
    elif kind in ("integer", "number"):
        _validate_number(value, node, path, errors)
    elif kind == "array":
        items = node.items
        if items is not None:
            for index, item in enumerate(value):
                _validate(item, items, f"{path}[{index}]", errors)
        size = len(value)
        if node.min_items is not None and size < node.min_items:
            errors.append(
                FieldError(
                    "Invalid",
                    path,
                    value=size,
                    detail=f"{path} in body should have at least {node.min_items} items",
                )
            )
        if node.max_items is not None and size > node.max_items:
            noun = "item" if node.max_items == 1 else "items"
            errors.append(FieldError("TooMany", path, value=size, detail=f"must have at most {node.max_items} {noun}"))
        if node.unique_items and _has_duplicates(value):
            errors.append(FieldError("Invalid", path, value="", detail=f"{path} in body shouldn't contain duplicates"))

    if (
        node.enum is not None
        and not (kind == "string" and type(value) is str and value in node.enum_strings)
        and not any(_json_equal(value, allowed) for allowed in node.enum)
    ):
        errors.append(
            FieldError(
                "NotSupported",
                path,
                value=value,
                supported=tuple(_enum_label(v) for v in node.enum),
                raw_value=_raw(value),
            )
        )

    if kind == "object":
        _validate_object(value, node, path, errors, is_root)


def _validate_string(value: str, node: _Node, path: str, errors: list[FieldError]) -> None:
    length_or_pattern = _length_or_pattern_error(value, node, path)
    if length_or_pattern is not None:
        errors.append(length_or_pattern)
    if node.format and not _format_ok(node.format, value):
        errors.append(
            FieldError(
                "Invalid",
                path,
                value=value,
                detail=f"{path} in body must be of type {node.format}: {go_quote(value)}",
            )
        )


def _length_or_pattern_error(value: str, node: _Node, path: str) -> FieldError | None:
    """The first of maxLength, minLength and pattern that `value` breaks: kube-apiserver's string validator stops
    there (an empty string under minLength 1 and a pattern is refused for its length alone)."""
    if node.max_length is not None and len(value) > node.max_length:
        unit = "byte" if node.max_length == 1 else "bytes"
        return FieldError("TooLong", path, detail=f"may not be more than {node.max_length} {unit}")
    if node.min_length is not None and len(value) < node.min_length:
        return FieldError(
            "Invalid", path, value=value, detail=f"{path} in body should be at least {node.min_length} chars long"
        )
    if node.pattern_text:
        if node.pattern is None:
            shown = f"{node.pattern_text}, but pattern is invalid: {node.pattern_error}"
            return FieldError("Invalid", path, value=value, detail=f"{path} in body should match '{shown}'")
        if node.pattern.search(value) is None:
            return FieldError("Invalid", path, value=value, detail=f"{path} in body should match '{node.pattern_text}'")
    return None


def _validate_number(value: float | int, node: _Node, path: str, errors: list[FieldError]) -> None:
    is_int = isinstance(value, int)
    raw = _raw(value)
    if node.multiple_of is not None and node.multiple_of > 0:
        factor: float | int = int(node.multiple_of) if is_int else node.multiple_of
        if factor and not _is_multiple(value, factor):
            errors.append(
                FieldError(
                    "Invalid",
                    path,
                    value=value,
                    raw_value=raw,
                    detail=f"{path} in body should be a multiple of {_go_number(factor)}",
                )
            )
    if node.maximum is not None:
        # Integers are compared against the bound truncated to int64, as kube-openapi does.
        bound: float | int = int(node.maximum) if is_int else float(node.maximum)
        if value > bound or (node.excl_max and value >= bound):
            relation = "less than" if node.excl_max else "less than or equal to"
            errors.append(
                FieldError(
                    "Invalid",
                    path,
                    value=value,
                    raw_value=raw,
                    detail=f"{path} in body should be {relation} {_go_number(bound)}",
                )
            )
    if node.minimum is not None:
        bound = int(node.minimum) if is_int else float(node.minimum)
        if value < bound or (node.excl_min and value <= bound):
            relation = "greater than" if node.excl_min else "greater than or equal to"
            errors.append(
                FieldError(
                    "Invalid",
                    path,
                    value=value,
                    raw_value=raw,
                    detail=f"{path} in body should be {relation} {_go_number(bound)}",
                )
            )


def _is_multiple(value: float | int, factor: float | int) -> bool:
    if isinstance(value, int) and isinstance(factor, int):
        return value % factor == 0
    ratio = (1 / factor) * value if factor < 1 else value / factor
    return float(ratio).is_integer()


def _validate_object(value: dict[str, Any], node: _Node, path: str, errors: list[FieldError], is_root: bool) -> None:
    count = len(value)
    # kube-openapi stops at a property-count failure and does not look inside.
    if node.min_props is not None and count < node.min_props:
        errors.append(
            FieldError(
                "Invalid",
                path,
                value=count,
                detail=f"{path} in body should have at least {node.min_props} properties",
            )
        )
        return
    if node.max_props is not None and count > node.max_props:
        noun = "item" if node.max_props == 1 else "items"
        errors.append(FieldError("TooMany", path, value=count, detail=f"must have at most {node.max_props} {noun}"))
        return
    additional = node.additional
    if additional is not None:
        for key, sub in value.items():
            if key not in node.properties:
                _validate(sub, additional, _child(path, key), errors)
    for key, prop in node.properties.items():
        if key in value and not (is_root and key == "metadata"):
            _validate(value[key], prop, _child(path, key), errors)
    for key in node.required:
        if key not in value:
            errors.append(FieldError("Required", _child(path, key)))


def _validate_combinators(value: Any, node: _Node, path: str, errors: list[FieldError]) -> None:
    quoted = go_quote(path)
    if node.any_of:
        first_failure: list[FieldError] | None = None
        for alternative in node.any_of:
            found: list[FieldError] = []
            _validate(value, alternative, path, found)
            if not found:
                first_failure = None
                break
            if first_failure is None:
                first_failure = found
        if first_failure is not None:
            errors.append(_composite(f"{quoted} must validate at least one schema (anyOf)"))
            errors.extend(first_failure)
    if node.one_of:
        valid = 0
        first_failure = None
        for alternative in node.one_of:
            found = []
            _validate(value, alternative, path, found)
            if not found:
                valid += 1
            elif first_failure is None:
                first_failure = found
        if valid != 1:
            extra = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
            errors.append(_composite(f"{quoted} must validate one and only one schema (oneOf). {extra}"))
            if valid == 0 and first_failure is not None:
                errors.extend(first_failure)
    if node.all_of:
        valid = 0
        for alternative in node.all_of:
            found = []
            _validate(value, alternative, path, found)
            valid += not found
            errors.extend(found)
        if valid != len(node.all_of):
            extra = ". None validated" if valid == 0 else ""
            errors.append(_composite(f"{quoted} must validate all the schemas (allOf){extra}"))
    if node.not_ is not None:
        found = []
        _validate(value, node.not_, path, found)
        if not found:
            errors.append(_composite(f"{quoted} must not validate the schema (not)"))


def _has_duplicates(items: list[Any]) -> bool:
    seen: set[bytes] = set()
    for item in items:
        key = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
        if key in seen:
            return True
        seen.add(key)
    return False


def _format_ok(fmt: str, value: str) -> bool:
    """Loose checks for the formats apiextensions keeps; unlisted ones always pass."""
    try:
        if fmt in ("date-time", "datetime"):
            return _DATE_TIME.match(value) is not None
        if fmt == "date":
            datetime.date.fromisoformat(value)
            return len(value) == 10
        if fmt == "uuid":
            return _UUID.match(value) is not None
        if fmt in ("uuid3", "uuid4", "uuid5"):
            return _UUID_VERSIONED[fmt[-1]].match(value) is not None
        if fmt == "byte":
            base64.b64decode(value, validate=True)
            return True
        if fmt == "ipv4":
            return isinstance(ipaddress.ip_address(value), ipaddress.IPv4Address)
        if fmt == "ipv6":
            return isinstance(ipaddress.ip_address(value), ipaddress.IPv6Address)
        if fmt == "cidr":
            return "/" in value and ipaddress.ip_network(value, strict=False) is not None
        if fmt == "hostname":
            return len(value) <= 255 and all(_HOSTNAME_LABEL.match(p) for p in value.rstrip(".").split("."))
        if fmt == "email":
            return _EMAIL.match(value) is not None
        if fmt == "mac":
            return _MAC.match(value) is not None
        if fmt == "duration":
            return _DURATION.match(value) is not None
        if fmt == "bsonobjectid":
            return _BSON_OBJECT_ID.match(value) is not None
        if fmt == "hexcolor":
            return _HEX_COLOR.match(value) is not None
        if fmt == "rgbcolor":
            return _RGB_COLOR.match(value) is not None
    except (ValueError, binascii.Error):
        return False
    return True


# ---------------------------------------------------------------------------------------------------------
# x-kubernetes-list-type set/map uniqueness (listtype/validation.go: field paths use [key] for map values)


def _validate_list_types(value: Any, node: _Node | None, path: str, errors: list[FieldError]) -> None:
    if node is None:
        return
    if isinstance(value, dict):
        additional = node.additional
        for key, sub in value.items():
            if not isinstance(sub, dict | list):
                continue
            prop = node.properties.get(key)
            if prop is not None:
                _validate_list_types(sub, prop, _child(path, key), errors)
            elif additional is not None:
                _validate_list_types(sub, additional, f"{path}[{key}]", errors)
    elif isinstance(value, list):
        if node.list_type == "set":
            for index in _first_repeats([_identity(v) for v in value]):
                errors.append(
                    FieldError("Duplicate", f"{path}[{index}]", value=value[index], raw_value=_raw(value[index]))
                )
        elif node.list_type == "map":
            _validate_list_map(value, node, path, errors)
        if node.items is not None:
            for index, item in enumerate(value):
                if isinstance(item, dict | list):
                    _validate_list_types(item, node.items, f"{path}[{index}]", errors)


_UNSPECIFIED = b"\x00unspecified"


def _identity(value: Any) -> bytes:
    # Booleans and numbers stay distinct; 1 and 1.0 are the same JSON number.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _first_repeats(keys: list[bytes]) -> list[int]:
    """The index of each value's second appearance (later repeats are not reported again)."""
    counts: dict[bytes, int] = {}
    repeats: list[int] = []
    for index, key in enumerate(keys):
        counts[key] = counts.get(key, 0) + 1
        if counts[key] == 2:
            repeats.append(index)
    return repeats


def _validate_list_map(value: list[Any], node: _Node, path: str, errors: list[FieldError]) -> None:
    for index, item in enumerate(value):
        if item is not None and not isinstance(item, dict):
            errors.append(
                FieldError(
                    "Invalid",
                    f"{path}[{index}]",
                    value=item,
                    detail="must be an object for an array of list-type map",
                )
            )
            return
    if len(value) <= 1:
        return
    key_fields = node.list_map_keys
    keys: list[dict[str, Any]] = []
    for item in value:
        item = item or {}
        keys.append({k: item[k] for k in key_fields if k in item})
    for index in _first_repeats([_identity(k) if k else _UNSPECIFIED for k in keys]):
        errors.append(FieldError("Duplicate", f"{path}[{index}]", value=keys[index]))


# ---------------------------------------------------------------------------------------------------------
# CustomResourceDefinition defaulting and validation (apiextensions v1)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _dns1123_subdomain_errors(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _DNS1123_SUBDOMAIN.match(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def dns1035_label_problems(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.match(value):
        errs.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


def default_crd(crd: dict[str, Any]) -> None:
    """apiextensions v1 defaulting, in place (scope has no default in v1)."""
    spec = crd.setdefault("spec", {})
    names = spec.setdefault("names", {})
    kind = names.get("kind") or ""
    if not names.get("singular"):
        names["singular"] = kind.lower()
    if not names.get("listKind") and kind:
        names["listKind"] = kind + "List"
    conversion = spec.get("conversion")
    if conversion is None:
        spec["conversion"] = {"strategy": "None"}
    else:
        service = ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443


def validate_crd(crd: dict[str, Any]) -> list[FieldError]:
    """The checks the server runs on CRD create/update, in its field paths and wording."""
    errors: list[FieldError] = []
    meta = crd.get("metadata") or {}
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group") or ""
    plural = names.get("plural") or ""

    name = meta.get("name") or ""
    if not name:
        if not meta.get("generateName"):
            errors.append(FieldError("Required", "metadata.name", detail="name or generateName is required"))
    else:
        messages = _dns1123_subdomain_errors(name)
        if name != f"{plural}.{group}":
            messages.append('must be spec.names.plural+"."+spec.group')
        errors.extend(FieldError("Invalid", "metadata.name", value=name, detail=m) for m in messages)

    if not group:
        errors.append(FieldError("Required", "spec.group"))
    elif group_errors := _dns1123_subdomain_errors(group):
        errors.append(FieldError("Invalid", "spec.group", value=group, detail=",".join(group_errors)))
    elif "." not in group:
        errors.append(
            FieldError("Invalid", "spec.group", value=group, detail="should be a domain with at least one dot")
        )

    scope = spec.get("scope") or ""
    if not scope:
        errors.append(FieldError("Required", "spec.scope"))
    elif scope not in ("Cluster", "Namespaced"):
        errors.append(FieldError("NotSupported", "spec.scope", value=scope, supported=("Cluster", "Namespaced")))

    versions = spec.get("versions") or []
    if not versions:
        errors.append(FieldError("Required", "spec.versions", detail="must have at least one version"))
    seen_names: set[str] = set()
    unique_names = True
    storage_count = 0
    for index, version in enumerate(versions):
        version_path = f"spec.versions[{index}]"
        version = version if isinstance(version, dict) else {}
        version_name = version.get("name") or ""
        if version_name in seen_names:
            unique_names = False
        seen_names.add(version_name)
        if version.get("storage") is True:
            storage_count += 1
        if label_errors := dns1035_label_problems(version_name):
            errors.append(
                FieldError("Invalid", f"{version_path}.name", value=version_name, detail=",".join(label_errors))
            )
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        schema_path = f"{version_path}.schema.openAPIV3Schema"
        if not isinstance(schema, dict):
            errors.append(FieldError("Required", schema_path, detail="schemas are required"))
        else:
            root_type = schema.get("type") or ""
            if not root_type:
                errors.append(FieldError("Required", f"{schema_path}.type", detail="must not be empty at the root"))
            elif root_type != "object":
                errors.append(
                    FieldError("Invalid", f"{schema_path}.type", value=root_type, detail="must be object at the root")
                )
    if not unique_names:
        errors.append(
            FieldError("Invalid", "spec.versions", value=versions, detail="must contain unique version names")
        )
    if storage_count != 1:
        errors.append(
            FieldError(
                "Invalid",
                "spec.versions",
                value=versions,
                detail="must have exactly one version marked as storage version",
            )
        )

    errors.extend(_validate_names(names))
    for field_name in ("plural", "singular", "kind", "listKind"):
        if not names.get(field_name):
            errors.append(FieldError("Required", f"spec.names.{field_name}"))
    return errors


def _validate_names(names: dict[str, Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    for field_name in ("plural", "singular"):
        value = names.get(field_name) or ""
        if value and (errs := dns1035_label_problems(value)):
            errors.append(FieldError("Invalid", f"spec.names.{field_name}", value=value, detail=",".join(errs)))
    for field_name in ("kind", "listKind"):
        value = names.get(field_name) or ""
        if value and (errs := dns1035_label_problems(value.lower())):
            errors.append(
                FieldError(
                    "Invalid",
                    f"spec.names.{field_name}",
                    value=value,
                    detail="may have mixed case, but should otherwise match: " + ",".join(errs),
                )
            )
    for field_name in ("shortNames", "categories"):
        for index, value in enumerate(names.get(field_name) or []):
            if errs := dns1035_label_problems(str(value)):
                errors.append(
                    FieldError("Invalid", f"spec.names.{field_name}[{index}]", value=value, detail=",".join(errs))
                )
    kind = names.get("kind") or ""
    if kind and kind == names.get("listKind"):
        errors.append(
            FieldError("Invalid", "spec.names.listKind", value=kind, detail="kind and listKind may not be the same")
        )
    return errors
