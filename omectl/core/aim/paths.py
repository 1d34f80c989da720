"""Render an AIMService's HTTP route path from its path template.

Which template: `AIMService.spec.routing.pathTemplate` > the runtime config's `routing.pathTemplate` > the default
`/{.metadata.namespace}/{.metadata.uid}` (`path_template`).

Rendering (`render_path`):

1. Each `{...}` is evaluated with kubectl-style JSONPath (`omectl.core.jsonpath`) against the AIMService. Exactly one
   result is required: no result (a missing field, label or annotation), several results, `null`, an object or a
   list, or an invalid expression fails the render. A `{` without its `}` (or a `}` without its `{`) is invalid
   too. Strings are used as they are; numbers and booleans as JSON writes them (`3`, `true`).
2. The text is split on `/` and empty segments are dropped: consecutive slashes collapse, a trailing slash goes,
   and a value that renders empty makes its segment vanish (not an error). A `/` inside a value starts a segment.
3. Each segment is lowercased, then percent-encoded per RFC 3986: the unreserved `A-Z a-z 0-9 - . _ ~` stay, every
   other character becomes `%XX` for each byte of its UTF-8 encoding (uppercase hex).
4. The path is `/` + the segments joined by `/`. Empty (no segment), longer than 200 characters, or holding a `.`
   or `..` segment fails the render. (Dot segments are our addition: Gateway API rejects such an HTTPRoute path,
   and a gateway would resolve them away.)

Every failure raises `PathTemplateError` (reason `PathTemplateInvalid`): the service degrades and no HTTPRoute is
created or updated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

from omectl.core.jsonpath import JSONPathError, compile_jsonpath

DEFAULT_PATH_TEMPLATE: Final = "/{.metadata.namespace}/{.metadata.uid}"
MAX_PATH_LENGTH: Final = 200
PATH_TEMPLATE_INVALID: Final = "PathTemplateInvalid"

# `.metadata.labels['k']`, `.metadata.labels["k"]`, `.metadata.labels.k` (and annotations): named in the message.
_METADATA_MAP_LOOKUP: Final = re.compile(
    r"""^\s*[$@]?\.?metadata\.(?P<map>labels|annotations)"""
    r"""(?:\[\s*(?P<quote>['"])(?P<quoted>.*)(?P=quote)\s*\]|\.(?P<bare>[^.\[\]\s]+))\s*$"""
)


class PathTemplateError(ValueError):
    """A path template that does not render. `detail` says why; the message also names the template."""

    reason: Final = PATH_TEMPLATE_INVALID

    def __init__(self, template: str, detail: str) -> None:
        super().__init__(f"path template {json.dumps(template)}: {detail}")
        self.template = template
        self.detail = detail


def path_template(service: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """The template in force: the service's `spec.routing.pathTemplate`, else the config's, else the default."""
    for routing in (_get(service, "spec", "routing"), config.get("routing")):
        template = routing.get("pathTemplate") if isinstance(routing, Mapping) else None
        if isinstance(template, str) and template:
            return template
    return DEFAULT_PATH_TEMPLATE


def render_path(template: str, service: Mapping[str, Any]) -> str:
    """The route path `template` renders to against `service`; raises `PathTemplateError`."""
    parts: list[str] = []
    for is_expression, text in _parse(template):
        parts.append(_evaluate(template, text, service) if is_expression else text)
    segments = [segment for segment in "".join(parts).split("/") if segment]
    if not segments:
        raise PathTemplateError(template, "route template produced an empty path")
    try:
        path = "/" + "/".join(encode_segment(segment) for segment in segments)
    except UnicodeEncodeError as error:
        raise PathTemplateError(template, f"rendered path is not valid Unicode: {error.reason}") from None
    if len(path) > MAX_PATH_LENGTH:
        raise PathTemplateError(
            template, f"route path {json.dumps(path)} exceeds {MAX_PATH_LENGTH} characters ({len(path)})"
        )
    if any(segment in (".", "..") for segment in path.split("/")):
        raise PathTemplateError(template, f'route path {json.dumps(path)} has a "." or ".." segment')
    return path


def service_path(service: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """`render_path` of the template in force (`path_template`)."""
    return render_path(path_template(service, config), service)


def encode_segment(segment: str) -> str:
    """One path segment lowercased and percent-encoded per RFC 3986 (unreserved characters stay)."""
    return quote(segment.lower(), safe="", encoding="utf-8", errors="strict")


def validate_path_template(template: str) -> str | None:
    """Why `template` can never render (unbalanced braces, an empty or invalid JSONPath expression), or None.

    For admission: it checks syntax only, not whether the fields exist on a particular service."""
    try:
        for is_expression, text in _parse(template):
            if is_expression:
                _compile(template, text)
    except PathTemplateError as error:
        return error.detail
    return None


def _parse(template: str) -> list[tuple[bool, str]]:
    """`(is_expression, text)` parts: literal text, and the inside of each `{...}`."""
    parts: list[tuple[bool, str]] = []
    literal_start = 0
    index = 0
    while index < len(template):
        char = template[index]
        if char == "{":
            end = template.find("}", index + 1)
            nested = template.find("{", index + 1)
            if end == -1 or (nested != -1 and nested < end):
                raise PathTemplateError(template, f'unmatched "{{" at offset {index}')
            parts.append((False, template[literal_start:index]))
            parts.append((True, template[index + 1 : end]))
            index = literal_start = end + 1
        elif char == "}":
            raise PathTemplateError(template, f'unmatched "}}" at offset {index}')
        else:
            index += 1
    parts.append((False, template[literal_start:]))
    return parts


def _compile(template: str, expression: str) -> Any:
    if not expression.strip():
        raise PathTemplateError(template, f"jsonpath expression {_shown(expression)} is empty")
    try:
        return compile_jsonpath(expression)
    except JSONPathError as error:
        raise PathTemplateError(template, f"invalid jsonpath expression {_shown(expression)}: {error.why}") from None


def _evaluate(template: str, expression: str, service: Mapping[str, Any]) -> str:
    results = _compile(template, expression).find(service)
    if not results:
        lookup = _METADATA_MAP_LOOKUP.match(expression)
        if lookup is not None:
            what = "label" if lookup["map"] == "labels" else "annotation"
            key = lookup["quoted"] if lookup["quoted"] is not None else lookup["bare"]
            raise PathTemplateError(template, f"{what} {json.dumps(key)} not found")
        raise PathTemplateError(template, f"field {_shown(expression)} not found")
    if len(results) > 1:
        raise PathTemplateError(template, f"jsonpath returned multiple results for {_shown(expression)}")
    value = results[0]
    if isinstance(value, str):
        return value
    if value is None:
        raise PathTemplateError(template, f"jsonpath returned null for {_shown(expression)}")
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    raise PathTemplateError(template, f"jsonpath returned an object or a list for {_shown(expression)}")


def _shown(expression: str) -> str:
    return json.dumps("{" + expression + "}")


def _get(obj: Mapping[str, Any], *keys: str) -> Any:
    value: Any = obj
    for key in keys:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value
