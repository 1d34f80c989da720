"""Fill `{{...}}` placeholders in a runner container from the InferenceService's metadata (OME's template rule).

Upstream OME renders the runner container as a Go template whose data is the InferenceService's `ObjectMeta`, so a
placeholder names an ObjectMeta field by its Go name. Supported actions, with optional `{{-`/`-}}` trimming:

- `{{.Name}}`, `{{.Namespace}}`, `{{.UID}}`, `{{.Generation}}`, ... — any ObjectMeta field (`METADATA_FIELDS`);
- `{{.Labels.key}}` / `{{.Annotations.key}}` — one label or annotation (key made of letters, digits and `_`);
- `{{index .Labels "key"}}` / `{{index .Annotations "key"}}` — one label or annotation, any key.

Values print as Go prints them: a missing label or annotation and an unset field are `""` (html/template's rule), a
map prints as `map[k1:v1 k2:v2]` with sorted keys, a timestamp as `2024-05-06 07:08:09 +0000 UTC`. Values are
inserted as they are: upstream HTML-escapes them only because it templates the container's JSON text; we
substitute inside each string, so no escaping is needed to keep the container valid.

An unknown field, a key on a field that is not a map, any other template syntax and an unclosed `{{` are errors
(`PlaceholderError`), as the Go template fails upstream; nothing is left half-filled. `$(VAR)` is not a placeholder:
the kubelet expands it from the container's env, so it stays literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

METADATA_FIELDS: Final[Mapping[str, str]] = {
    "Name": "name",
    "GenerateName": "generateName",
    "Namespace": "namespace",
    "SelfLink": "selfLink",
    "UID": "uid",
    "ResourceVersion": "resourceVersion",
    "Generation": "generation",
    "CreationTimestamp": "creationTimestamp",
    "DeletionTimestamp": "deletionTimestamp",
    "DeletionGracePeriodSeconds": "deletionGracePeriodSeconds",
    "Labels": "labels",
    "Annotations": "annotations",
    "OwnerReferences": "ownerReferences",
    "Finalizers": "finalizers",
    "ManagedFields": "managedFields",
}
"""Go name of each ObjectMeta field → its JSON name in the object's metadata."""

_MAP_FIELDS: Final = frozenset({"Labels", "Annotations"})
_TIMESTAMP_FIELDS: Final = frozenset({"CreationTimestamp", "DeletionTimestamp"})
_ACTION: Final = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_FIELD_ACTION: Final = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?")
_INDEX_ACTION: Final = re.compile(r'index\s+\.([A-Za-z_][A-Za-z0-9_]*)\s+("(?:[^"\\]|\\.)*")')


class PlaceholderError(ValueError):
    """A placeholder that cannot be filled from the InferenceService's metadata."""


def fill_placeholders(text: str, metadata: Mapping[str, Any]) -> str:
    """`text` with every placeholder replaced by its value from `metadata` (an object's `metadata` as JSON)."""
    if "{{" not in text:
        return text
    pieces: list[str] = []
    position = 0  # pragma: no mutate (text[None:] is text[0:])
    for match in _ACTION.finditer(text):
        literal = text[position : match.start()]
        if match.group(1):
            literal = literal.rstrip()
        pieces.append(literal)
        pieces.append(_evaluate(match.group(2).strip(), metadata))
        position = match.end()
        if match.group(3):
            rest = text[position:]
            position += len(rest) - len(rest.lstrip())
    tail = text[position:]
    if "{{" in tail:
        raise PlaceholderError(f"unclosed action in {text!r}")
    pieces.append(tail)
    return "".join(pieces)


def fill_in_value(value: Any, metadata: Mapping[str, Any]) -> Any:
    """A copy of a JSON-like value with placeholders filled in every string (keys stay as they are)."""
    if isinstance(value, str):
        return fill_placeholders(value, metadata)
    if isinstance(value, Mapping):
        return {key: fill_in_value(item, metadata) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [fill_in_value(item, metadata) for item in value]
    return value


def _evaluate(action: str, metadata: Mapping[str, Any]) -> str:
    field_match = _FIELD_ACTION.fullmatch(action)
    if field_match is not None:
        field, key = field_match.group(1), field_match.group(2)
        return _lookup(field, key, action, metadata)
    index_match = _INDEX_ACTION.fullmatch(action)
    if index_match is not None:
        field = index_match.group(1)
        key = json.loads(index_match.group(2))
        return _lookup(field, key, action, metadata)
    raise PlaceholderError(
        f"unsupported placeholder {{{{{action}}}}}: use {{{{.Field}}}}, {{{{.Labels.key}}}} or "
        f'{{{{index .Annotations "key"}}}} with a field of the InferenceService\'s metadata'
    )


def _lookup(field: str, key: str | None, action: str, metadata: Mapping[str, Any]) -> str:
    json_name = METADATA_FIELDS.get(field)
    if json_name is None:
        raise PlaceholderError(
            f"unknown placeholder {{{{{action}}}}}: the InferenceService's metadata has no field {field} "
            f"(known: {', '.join(METADATA_FIELDS)})"
        )
    value = metadata.get(json_name)
    if key is not None:
        if field not in _MAP_FIELDS:
            raise PlaceholderError(
                f"invalid placeholder {{{{{action}}}}}: {field} is not a map of labels or annotations"
            )
        entries = value if isinstance(value, Mapping) else {}
        return _format(entries.get(key), None)
    return _format(value, field)


def _format(value: Any, field: str | None) -> str:
    """`value` printed the way Go's template package prints the corresponding ObjectMeta field."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        if field in _TIMESTAMP_FIELDS and value:
            return _go_time(value)
        return value
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{_format(value[k], None)}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(_format(item, None) for item in value) + "]"
    return str(value)


def _go_time(text: str) -> str:
    try:
        moment = datetime.fromisoformat(text)  # Python 3.11 reads RFC 3339's `Z` itself
    except ValueError:
        return text
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")
