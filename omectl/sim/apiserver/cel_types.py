"""The CEL types a CRD schema declares, as protobuf messages, so that rules are type-checked as kube-apiserver checks
them when the CRD is written (`undefined field 'x'`, `found no matching overload for '_==_' applied to ...`).

apiextensions-apiserver derives a declared type from each structural schema node (`SchemaDeclType`): `object` with
properties is an object type whose fields are the properties (escaped, see `escape`), `object` with
`additionalProperties` is `map(string, T)`, `array` is `list(T)`, `integer` `int`, `number` `double`, `boolean`
`bool`, `string` `string` (with `format: date-time` or `date` a `timestamp`, `duration` a `duration`, `byte`
`bytes`, and the values converted so at evaluation), `x-kubernetes-int-or-string` `dyn`; a property without a
type is not declared at all, and the resource root (and each embedded resource) always declares `apiVersion`,
`kind` and `metadata` with only `name` and `generateName`. Object types become protobuf messages here (the CEL
checker resolves their fields); what protobuf cannot nest (a list of lists, a map of lists) becomes
`google.protobuf.ListValue` / `Struct` / `Value`, which the checker treats as `list(dyn)` / `map(string, dyn)` /
`dyn`.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
from typing import Any

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, duration_pb2, struct_pb2, timestamp_pb2

_F = descriptor_pb2.FieldDescriptorProto

# The reserved words of the CEL grammar; a property with such a name is `__<name>__` in a rule.
_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_ESCAPED = re.compile(r"__|[-./]|[^a-zA-Z0-9\-./_]")
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}

_SCALARS = {"integer": _F.TYPE_INT64, "number": _F.TYPE_DOUBLE, "boolean": _F.TYPE_BOOL, "string": _F.TYPE_STRING}
_CEL_SCALARS = {"integer": cel.Type.INT, "number": cel.Type.DOUBLE, "boolean": cel.Type.BOOL, "string": cel.Type.STRING}
# string formats with a CEL type of their own: (the CEL type, the protobuf field type, its message)
_FORMATS = {
    "date-time": (cel.Type.TIMESTAMP, _F.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
    "date": (cel.Type.TIMESTAMP, _F.TYPE_MESSAGE, ".google.protobuf.Timestamp"),
    "duration": (cel.Type.DURATION, _F.TYPE_MESSAGE, ".google.protobuf.Duration"),
    "byte": (cel.Type.BYTES, _F.TYPE_BYTES, ""),
}
_DYN = ".google.protobuf.Value"
_DYN_LIST = ".google.protobuf.ListValue"
_DYN_MAP = ".google.protobuf.Struct"


def escape(name: str) -> str | None:
    """A property name as a rule spells it (apiserver/pkg/cel's Escape); None when no rule can name it."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    unsupported = False

    def replace(match: re.Match[str]) -> str:
        nonlocal unsupported
        text = match.group(0)
        if text in _ESCAPES:
            return _ESCAPES[text]
        unsupported = True
        return ""

    escaped = _ESCAPED.sub(replace, name)
    return None if unsupported else escaped


def _with_type_and_object_meta(schema: dict[str, Any]) -> dict[str, Any]:
    properties = dict(schema.get("properties") or {})
    properties["apiVersion"] = {"type": "string"}
    properties["kind"] = {"type": "string"}
    properties["metadata"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
    }
    return {**schema, "type": "object", "properties": properties}


def _declared(schema: Any) -> bool:
    """Whether SchemaDeclType gives the node a type (a property without one is not visible to rules)."""
    if not isinstance(schema, dict):
        return False
    if schema.get("x-kubernetes-int-or-string"):
        return True
    kind = schema.get("type")
    if kind == "array":
        return _declared(schema.get("items"))
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return _declared(schema["additionalProperties"])
    return kind in ("object", "integer", "number", "boolean", "string")


class DeclaredTypes:
    """The message types of one CRD version's schema, in a descriptor pool of their own."""

    def __init__(self, package: str) -> None:
        self.package = package
        self.pool = descriptor_pool.DescriptorPool()
        for module in (struct_pb2, timestamp_pb2, duration_pb2):
            wkt = descriptor_pb2.FileDescriptorProto()
            module.DESCRIPTOR.CopyToProto(wkt)
            self.pool.Add(wkt)
        self._file = descriptor_pb2.FileDescriptorProto(
            name=f"{package}.proto",
            package=package,
            syntax="proto3",
            dependency=[
                "google/protobuf/struct.proto",
                "google/protobuf/timestamp.proto",
                "google/protobuf/duration.proto",
            ],
        )
        self._names: set[str] = set()
        self._sealed = False

    def cel_type(self, schema: dict[str, Any], path: str, *, resource_root: bool = False) -> Any:
        """The CEL type of a node (`path` names its message, when it is an object)."""
        if resource_root or schema.get("x-kubernetes-embedded-resource"):
            schema = _with_type_and_object_meta(schema)
        if schema.get("x-kubernetes-int-or-string") or not _declared(schema):
            return cel.Type.DYN
        kind = schema.get("type")
        if kind == "string" and schema.get("format") in _FORMATS:
            return _FORMATS[schema["format"]][0]
        if kind in _CEL_SCALARS:
            return _CEL_SCALARS[kind]
        if kind == "array":
            return cel.Type.List(self.cel_type(schema["items"], f"{path}.@idx"))
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            return cel.Type.Map(cel.Type.STRING, self.cel_type(additional, f"{path}.@elem"))
        return cel.Type(f"{self.package}.{self._message(schema, path)}")

    def seal(self) -> None:
        """Add the messages to the pool; call once, after every `cel_type`, before compiling."""
        if not self._sealed:
            self.pool.Add(self._file)
            self._sealed = True

    def _message(self, schema: dict[str, Any], path: str) -> str:
        name = re.sub(r"[^A-Za-z0-9]", "_", path) or "self"
        if not name[0].isalpha():
            name = f"T{name}"
        base, n = name, 1
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        message = self._file.message_type.add(name=name)
        number = 0
        for prop, sub in sorted((schema.get("properties") or {}).items()):
            field_name = escape(prop)
            if field_name is None or not _declared(sub):
                continue
            number += 1
            self._field(message, field_name, number, sub, f"{path}.{prop}")
        return name

    def _field(self, message: Any, name: str, number: int, schema: dict[str, Any], path: str) -> None:
        field = message.field.add(name=name, number=number, label=_F.LABEL_OPTIONAL)
        if schema.get("x-kubernetes-embedded-resource"):
            schema = _with_type_and_object_meta(schema)
        kind = schema.get("type")
        if schema.get("x-kubernetes-int-or-string"):
            field.type, field.type_name = _F.TYPE_MESSAGE, _DYN
        elif kind == "string" and schema.get("format") in _FORMATS:
            _, field.type, field.type_name = _FORMATS[schema["format"]]
        elif kind in _SCALARS:
            field.type = _SCALARS[kind]
        elif kind == "array":
            items = schema["items"]
            if _nests(items):
                field.type, field.type_name = _F.TYPE_MESSAGE, _DYN_LIST
            else:
                field.label = _F.LABEL_REPEATED
                self._element(field, items, f"{path}.@idx")
        elif isinstance(schema.get("additionalProperties"), dict):
            value = schema["additionalProperties"]
            if _nests(value):
                field.type, field.type_name = _F.TYPE_MESSAGE, _DYN_MAP
            else:
                entry = message.nested_type.add(name=f"{_camel(name)}Entry")
                entry.options.map_entry = True
                entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
                value_field = entry.field.add(name="value", number=2, label=_F.LABEL_OPTIONAL)
                self._element(value_field, value, f"{path}.@elem")
                field.label = _F.LABEL_REPEATED
                field.type = _F.TYPE_MESSAGE
                field.type_name = f".{self.package}.{message.name}.{entry.name}"
        else:
            field.type = _F.TYPE_MESSAGE
            field.type_name = f".{self.package}.{self._message(schema, path)}"

    def _element(self, field: Any, schema: dict[str, Any], path: str) -> None:
        """A repeated field's or a map value's type: a scalar, a message, or dyn."""
        kind = schema.get("type")
        if schema.get("x-kubernetes-embedded-resource"):
            schema = _with_type_and_object_meta(schema)
        if schema.get("x-kubernetes-int-or-string"):
            field.type, field.type_name = _F.TYPE_MESSAGE, _DYN
        elif kind == "string" and schema.get("format") in _FORMATS:
            _, field.type, field.type_name = _FORMATS[schema["format"]]
        elif kind in _SCALARS:
            field.type = _SCALARS[kind]
        else:
            field.type = _F.TYPE_MESSAGE
            field.type_name = f".{self.package}.{self._message(schema, path)}"


def _camel(name: str) -> str:
    """protobuf's name for a map field's entry message (it checks the name)."""
    out, upper = [], True
    for char in name:
        if char == "_":
            upper = True
        else:
            out.append(char.upper() if upper else char)
            upper = False
    return "".join(out)


def _nests(schema: dict[str, Any]) -> bool:
    """A list or a map, which protobuf cannot hold as a list item or a map value."""
    return schema.get("type") == "array" or (
        schema.get("type") == "object" and isinstance(schema.get("additionalProperties"), dict)
    )


def converts(schema: Any) -> bool:
    """Whether a rule sees some value below this node otherwise than stored: a property under another name
    (`namespace` as `__namespace__`), or a string of a format with a CEL type (`date-time` as a timestamp)."""
    if not isinstance(schema, dict):
        return False
    if schema.get("type") == "string" and schema.get("format") in _FORMATS:
        return True
    for name, sub in (schema.get("properties") or {}).items():
        if escape(name) not in (None, name) or converts(sub):
            return True
    return converts(schema.get("additionalProperties")) or converts(schema.get("items"))


_GO_DURATION = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|ms|s|m|h|d|w)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
    "d": 86400.0,
    "w": 604800.0,
}


def _formatted(fmt: str, text: str) -> Any:
    """A formatted string as the CEL value kube-apiserver gives a rule; the string itself when it does not parse."""
    try:
        if fmt == "date-time":
            stamp = datetime.datetime.fromisoformat(text)
            return _timestamp(stamp if stamp.tzinfo else stamp.replace(tzinfo=datetime.UTC))
        if fmt == "date":
            day = datetime.date.fromisoformat(text)
            return _timestamp(datetime.datetime.combine(day, datetime.time(), datetime.UTC))
        if fmt == "byte":
            return base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error):
        return text
    sign, body = (-1, text[1:]) if text.startswith("-") else (1, text.removeprefix("+"))
    pos, seconds = 0, 0.0
    while pos < len(body):
        match = _GO_DURATION.match(body, pos)
        if match is None or match.group(1) in ("", "."):
            return text
        seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if not body:
        return text
    duration = duration_pb2.Duration()
    duration.FromTimedelta(datetime.timedelta(seconds=sign * seconds))
    return duration


def _timestamp(stamp: datetime.datetime) -> Any:
    """As a protobuf message: the CEL runtime takes a nested timestamp or duration only in that form."""
    message = timestamp_pb2.Timestamp()
    message.FromDatetime(stamp)
    return message


def cel_value(schema: Any, value: Any) -> Any:
    """A value as a rule sees it: object properties named as rules name them (a name no rule can name stays as it
    is), formatted strings as timestamps, durations or bytes."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, str) and schema.get("type") == "string" and schema.get("format") in _FORMATS:
        return _formatted(schema["format"], value)
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        if properties:
            out: dict[str, Any] = {}
            for key, sub in value.items():
                if key in properties:
                    out[escape(key) or key] = cel_value(properties[key], sub)
                else:
                    out[key] = sub
            return out
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            return {key: cel_value(additional, sub) for key, sub in value.items()}
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [cel_value(schema["items"], item) for item in value]
    return value
