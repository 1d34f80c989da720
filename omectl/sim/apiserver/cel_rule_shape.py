"""The checks on each `x-kubernetes-validations` entry that apiextensions-apiserver runs before compiling any rule:
a rule is given, `message`, `messageExpression` and `fieldPath` are not blank when set and hold no line break, a
multi-line rule has a message, `reason` is one of the four supported, and `fieldPath` names a field of the schema.

While any of these fails, kube-apiserver reports only these (no compile errors); `cel_check.rule_compile_errors`
does the same. The fidelity scenario `cel-rule-compile` compares a missing rule, a message with a line break, an
unknown reason and a fieldPath outside the schema with the real server; the other texts are not compared there.
"""

from __future__ import annotations

import re
from typing import Any

from omectl.sim.apiserver.errors import FieldError

REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def rule_shape_errors(schema: dict[str, Any], path: str) -> list[FieldError]:
    """Every node's entries, children before their parent (the order of the compile errors too)."""
    errors: list[FieldError] = []
    _walk(schema, path, errors)
    return errors


def _walk(schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    for key, sub in sorted((schema.get("properties") or {}).items()):
        if isinstance(sub, dict):
            _walk(sub, f"{path}.properties[{key}]", errors)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            _walk(sub, f"{path}.{key}", errors)
    for index, raw in enumerate(schema.get("x-kubernetes-validations") or ()):
        if isinstance(raw, dict):
            errors.extend(_entry_errors(schema, raw, f"{path}.x-kubernetes-validations[{index}]"))


def _entry_errors(schema: dict[str, Any], raw: dict[str, Any], at: str) -> list[FieldError]:
    errors: list[FieldError] = []
    rule = str(raw.get("rule") or "")
    message = str(raw.get("message") or "")
    message_expression = str(raw.get("messageExpression") or "")
    if not rule.strip():
        errors.append(FieldError("Required", f"{at}.rule", "rule is not specified"))
    elif message and not message.strip():
        errors.append(FieldError("Invalid", f"{at}.message", "message must be non-empty if specified", message))
    elif _has_newline(message.strip()):
        errors.append(FieldError("Invalid", f"{at}.message", "must not contain line breaks", message))
    elif _has_newline(rule.strip()) and not message.strip() and not message_expression.strip():
        errors.append(FieldError("Required", f"{at}.message", "message must be specified if rule contains line breaks"))
    if message_expression and not message_expression.strip():
        errors.append(
            FieldError("Required", f"{at}.messageExpression", "messageExpression must be non-empty if specified")
        )
    reason = raw.get("reason")
    if reason is not None and reason not in REASONS:
        errors.append(FieldError("NotSupported", f"{at}.reason", value=reason, supported=REASONS))
    field_path = str(raw.get("fieldPath") or "")
    if field_path and not field_path.strip():
        errors.append(FieldError("Invalid", f"{at}.fieldPath", "fieldPath must be non-empty if specified", field_path))
    if _has_newline(field_path):
        errors.append(FieldError("Invalid", f"{at}.fieldPath", "must not contain line breaks", field_path))
    if field_path.strip() and not _path_valid(schema, field_path):
        errors.append(FieldError("Invalid", f"{at}.fieldPath", "must be a valid path", field_path))
    return errors


def _has_newline(text: str) -> bool:
    return "\n" in text or "\r" in text


def _path_valid(schema: dict[str, Any], field_path: str) -> bool:
    """Whether `.a['b.c'][0]` walks the schema: properties (or a map's values) by name, list items by index."""
    node: Any = schema
    pos = 0
    while pos < len(field_path):
        match = _SEGMENT.match(field_path, pos)
        if match is None or not isinstance(node, dict):
            return False
        name, key, index = match.groups()
        if index is not None:
            node = node.get("items") if node.get("type") == "array" else None
        else:
            child = name if name is not None else re.sub(r"\\(.)", r"\1", key)
            properties = node.get("properties") or {}
            node = properties.get(child) if child in properties else node.get("additionalProperties")
        if not isinstance(node, dict):
            return False
        pos = match.end()
    return True
