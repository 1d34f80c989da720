"""CRD validation rules (`x-kubernetes-validations`), evaluated the way kube-apiserver evaluates them.

Each rule is compiled once per CRD version (a `RuleValidator` per compiled structural schema) with Google's CEL
(cel-expr-python, the C++ runtime) and the CEL extension libraries Kubernetes also enables (strings, math,
optional types, encoders). A write is checked node by node, as apiextensions-apiserver's CEL validator walks it:

- a node's rules run before its children's; `self` is the node's value (at the resource root: `apiVersion`, `kind`
  and `metadata` with only `name` and `generateName`);
- a transition rule (one that names `oldSelf`) runs only on an update where the node has a correlated old value:
  object properties and map entries correlate by key, `x-kubernetes-list-type: map` items by their keys, `set`
  items by value; `atomic` list items do not correlate;
- a failed rule is a field error at the node's path (plus `fieldPath`), worded with `message`, the value of
  `messageExpression` (falling back to `message` when that fails), or `failed rule: <rule>`, and of the kind that
  `reason` names (default FieldValueInvalid, whose value is the node's schema type, e.g. `Invalid value: "object"`);
- an evaluation error is `<error> evaluating rule: <rule>` at the node's path (cel-go's error words);
- ratcheting: on an update, a failed rule without `oldSelf` on a value equal to its correlated old value is a
  warning, not an error.

Not modelled: the Kubernetes-specific CEL libraries (quantity, URL, IP/CIDR, regex `find`, lists' `isSorted`/`sum`,
format, semver, authz), typed schema declarations (values are dynamic, so a wrong-typed rule fails at evaluation,
not when the CRD is created), `optionalOldSelf`, cost budgets, and date-time strings as timestamps.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any

import orjson
from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_encoders, ext_math, ext_optional, ext_strings

from omectl.sim.apiserver import cel_library as library
from omectl.sim.apiserver.cel_types import cel_value, converts
from omectl.sim.apiserver.errors import FieldError

BLOCKED_DETAIL = (
    "some validation rules were not checked because the object was invalid; correct the existing errors to "
    "complete validation"
)

# Errors that stop the rules from running (they bound the values the rules' cost estimates assume); a missing
# required field is one too, as the real kube-apiserver answers (tests/e2e/test_aim_upstream_yaml.py on both servers).
BLOCKING_KINDS = frozenset(("TypeInvalid", "NotSupported", "Required", "TooLong", "TooMany"))

_ENV: Any = None
_OLD_SELF_PREFIX = "cel.bind(oldSelf, __oldSelfPresent ? optional.of(__oldSelf) : optional.none(), "
_SELECT_ON_SCALAR = re.compile(r"expression of type '([^']*)' cannot be the operand of a select operation")
_COMPILE_ERROR = re.compile(r"^(ERROR: <input>:)(\d+):(\d+): (.*)$")


def _extensions() -> list[Any]:
    return [
        ext_strings.ExtStrings(),
        ext_math.ExtMath(),
        ext_optional.ExtOptional(),
        ext_encoders.ExtEncoders(),
        ext_bindings.ExtBindings(),
    ]


def _env() -> Any:
    global _ENV
    if _ENV is None:
        _ENV = cel.NewEnv(
            descriptor_pool=library.pool(),
            variables={
                "self": cel.Type.DYN,
                "oldSelf": cel.Type.DYN,
                "__oldSelf": cel.Type.DYN,
                "__oldSelfPresent": cel.Type.BOOL,
            },
            extensions=_extensions(),
            functions=library.declarations(),
        )
    return _ENV


def typed_env(pool: Any, self_type: Any) -> Any:
    """An environment where `self` and `oldSelf` have a schema node's declared type (CRD write checks).

    `pool` must hold the Kubernetes library's message types too (`library.add_types`)."""
    return cel.NewEnv(
        descriptor_pool=pool,
        variables={
            "self": self_type,
            "oldSelf": self_type,
            "__oldSelf": self_type,
            "__oldSelfPresent": cel.Type.BOOL,
        },
        extensions=_extensions(),
        functions=library.declarations(),
    )


def with_optional_old_self(rule: str, raw: dict[str, Any]) -> str:
    """The expression to compile for a rule: with `optionalOldSelf`, `oldSelf` is an optional (none when absent)."""
    if raw.get("optionalOldSelf") is True:
        return f"{_OLD_SELF_PREFIX}{rule})"
    return rule


class CompileError(Exception):
    """A rule or messageExpression that CEL cannot compile."""


def compile_message(text: str) -> str:
    """cel-go's words for a compile error (the position and snippet are the rule's own, not the wrapper's)."""
    text = text.removeprefix("INVALID_ARGUMENT: ").split(" [INVALID_ARGUMENT]")[0]
    # cel-go reports neither the errors that follow from an earlier one nor a select on a scalar in C++'s words.
    blocks = [b for b in text.split("\nERROR: ") if "'*error*'" not in b]
    text = "\nERROR: ".join(blocks)
    text = _SELECT_ON_SCALAR.sub(r"type '\1' does not support field selection", text)
    if not text.startswith("ERROR: <input>:1:") or _OLD_SELF_PREFIX not in text:
        return text
    lines = text.split("\n")
    match = _COMPILE_ERROR.match(lines[0])
    if match is None:
        return text
    column = max(1, int(match.group(3)) - len(_OLD_SELF_PREFIX))
    snippet = lines[1].removeprefix(" | ").removeprefix(_OLD_SELF_PREFIX)[:-1] if len(lines) > 1 else ""
    return f"{match.group(1)}1:{column}: {match.group(4)}\n | {snippet}\n | {'.' * (column - 1)}^"


def compile_expression(expression: str) -> Any:
    """A compiled CEL program; CompileError with CEL's message when it does not compile."""
    try:
        return _env().compile(expression)
    except RuntimeError as exc:
        raise CompileError(compile_message(str(exc))) from exc


class EvalError(Exception):
    """A CEL runtime error, worded as cel-go words it."""


_NO_KEY = re.compile(r'Key not found in map : "?(.*?)"?$')
_INDEX = re.compile(r"Index error: index=(-?\d+) size=\d+")


def _go_error(text: str) -> str:
    text = re.sub(r"^[A-Z_]+: ", "", text)
    match = _NO_KEY.search(text)
    if match:
        return f"no such key: {match.group(1)}"
    match = _INDEX.search(text)
    if match:
        return f"index out of bounds: {match.group(1)}"
    if text.startswith("No matching overloads"):
        return "no such overload"
    if text == "divide by zero":
        return "division by zero"
    if text == "modulus by zero":
        return "modulus by zero"
    return text


def evaluate(program: Any, variables: dict[str, Any]) -> Any:
    """The plain value of a compiled program; EvalError on a CEL runtime error."""
    result = program.eval(data=variables)
    if result.type() == cel.Type.ERROR:
        raise EvalError(_go_error(str(result.value())))
    return result.plain_value()


_REASONS = {
    None: "Invalid",
    "FieldValueInvalid": "Invalid",
    "FieldValueForbidden": "Forbidden",
    "FieldValueRequired": "Required",
    "FieldValueDuplicate": "Duplicate",
}
_FIELD_PATH = re.compile(r"\.([A-Za-z_][A-Za-z0-9_]*)|\['((?:[^'\\]|\\.)*)'\]|\[(\d+)\]")


def normalize_field_path(field_path: str) -> str:
    """`.a.b['c.d'][0]` as apimachinery's field.Path prints it: `a.b[c.d][0]`."""
    out = ""
    pos = 0
    while pos < len(field_path):
        match = _FIELD_PATH.match(field_path, pos)
        if match is None:
            return field_path.lstrip(".")
        name, key, index = match.groups()
        if name is not None:
            out += f".{name}" if out else name
        elif key is not None:
            out += f"[{key}]" if out else key
        else:
            out += f"[{index}]"
        pos = match.end()
    return out


@dataclass
class Rule:
    """One `x-kubernetes-validations` entry, compiled."""

    rule: str
    message: str
    field_path: str
    kind: str
    program: Any
    message_program: Any
    uses_old_self: bool
    optional_old_self: bool = False
    compile_error: str = ""

    @classmethod
    def build(cls, raw: dict[str, Any]) -> Rule:
        text = str(raw.get("rule") or "")
        message = str(raw.get("message") or "").strip()
        kind = _REASONS.get(raw.get("reason"), "Invalid")
        rule = cls(
            rule=text,
            message=message,
            field_path=normalize_field_path(str(raw.get("fieldPath") or "")),
            kind=kind,
            program=None,
            message_program=None,
            uses_old_self=re.search(r"\boldSelf\b", text) is not None,
            optional_old_self=raw.get("optionalOldSelf") is True,
        )
        if text.strip():
            try:
                rule.program = compile_expression(with_optional_old_self(text, raw))
            except CompileError as exc:
                rule.compile_error = str(exc)
        message_expression = str(raw.get("messageExpression") or "")
        if message_expression.strip():
            try:
                rule.message_program = compile_expression(message_expression)
            except CompileError:
                rule.message_program = None
        return rule

    def default_message(self) -> str:
        return self.message or f"failed rule: {self.rule.strip()}"

    def error_subject(self) -> str:
        return self.message or self.rule.strip()

    def failure_message(self, variables: dict[str, Any]) -> str:
        if self.message_program is not None:
            try:
                text = evaluate(self.message_program, variables)
            except EvalError:
                text = None
            if isinstance(text, str):
                text = text.strip()
                if text and "\n" not in text and "\r" not in text and len(text) <= 5120:
                    return text
        return self.default_message()


_ROOT_META = ("name", "generateName")
_ABSENT = object()


class _RuleNode:
    """The rules of one schema node and the children that have rules at or below them."""

    __slots__ = ("additional", "converting", "items", "list_keys", "list_type", "properties", "rules", "type_label")

    def __init__(self, raw: dict[str, Any]) -> None:
        self.rules = [Rule.build(r) for r in raw.get("x-kubernetes-validations") or () if isinstance(r, dict)]
        self.type_label = str(raw.get("type") or "")
        # The schema, when a rule here sees some value below otherwise than stored (cel_types.cel_value).
        self.converting: dict[str, Any] | None = raw if self.rules and converts(raw) else None
        self.list_type = str(raw.get("x-kubernetes-list-type") or "atomic")
        self.list_keys = tuple(raw.get("x-kubernetes-list-map-keys") or ())
        self.properties: dict[str, _RuleNode] = {}
        for key, sub in (raw.get("properties") or {}).items():
            node = _RuleNode.build(sub)
            if node is not None:
                self.properties[key] = node
        additional = raw.get("additionalProperties")
        self.additional = _RuleNode.build(additional)
        self.items = _RuleNode.build(raw.get("items"))

    @classmethod
    def build(cls, raw: Any) -> _RuleNode | None:
        """The node, or None when neither it nor anything below it has a rule."""
        if not isinstance(raw, dict):
            return None
        node = cls(raw)
        if node.rules or node.properties or node.additional is not None or node.items is not None:
            return node
        return None


class RuleValidator:
    """The validation rules of one CRD version's schema, compiled once."""

    def __init__(self, root: _RuleNode) -> None:
        self._root = root

    @classmethod
    def build(cls, openapi_v3_schema: dict[str, Any] | None) -> RuleValidator | None:
        """None when the schema has no rules (nothing to evaluate on a write); one per schema in the process."""
        return _built(orjson.dumps(openapi_v3_schema or {}, option=orjson.OPT_SORT_KEYS))

    def validate(self, obj: dict[str, Any], old: dict[str, Any] | None) -> tuple[list[FieldError], list[str]]:
        """Errors and (ratcheted) warnings for a write of `obj` over `old` (None on create)."""
        errors: list[FieldError] = []
        warnings: list[str] = []
        _walk(self._root, obj, _ABSENT if old is None else old, "", errors, warnings, root=True)
        return errors, warnings


@functools.lru_cache(maxsize=512)
def _built(schema_json: bytes) -> RuleValidator | None:
    """Compiled once per distinct schema: every simulated cluster with the same CRD version shares the programs."""
    root = _RuleNode.build(orjson.loads(schema_json))
    return RuleValidator(root) if root is not None else None


def _root_view(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    view = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        view["metadata"] = {k: meta[k] for k in _ROOT_META if k in meta}
    return view


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _walk(
    node: _RuleNode,
    value: Any,
    old: Any,
    path: str,
    errors: list[FieldError],
    warnings: list[str],
    *,
    root: bool = False,
) -> None:
    if value is None:
        return
    if node.rules:
        _check_rules(node, value, old, path, errors, warnings, root)
    if isinstance(value, dict):
        old_map = old if isinstance(old, dict) else {}
        for key, sub in value.items():
            if root and key == "metadata":
                continue
            child = node.properties.get(key)
            if child is not None:
                _walk(child, sub, old_map.get(key, _ABSENT), _child(path, key), errors, warnings)
            elif node.additional is not None and key not in node.properties:
                _walk(node.additional, sub, old_map.get(key, _ABSENT), f"{path}[{key}]", errors, warnings)
    elif isinstance(value, list) and node.items is not None:
        correlate = _correlator(node, old)
        for index, item in enumerate(value):
            _walk(node.items, item, correlate(item), f"{path}[{index}]", errors, warnings)


def _correlator(node: _RuleNode, old: Any) -> Any:
    if not isinstance(old, list) or node.list_type == "atomic":
        return lambda item: _ABSENT
    if node.list_type == "set":
        return lambda item: item if item in old else _ABSENT
    keys = node.list_keys

    def key_of(item: Any) -> tuple[Any, ...] | None:
        if not isinstance(item, dict):
            return None
        return tuple(repr(item.get(k)) for k in keys)

    by_key = {key_of(item): item for item in old if key_of(item) is not None}
    return lambda item: by_key.get(key_of(item), _ABSENT)


def _check_rules(
    node: _RuleNode,
    value: Any,
    old: Any,
    path: str,
    errors: list[FieldError],
    warnings: list[str],
    root: bool,
) -> None:
    field_path = path or "<nil>"
    seen = _root_view(value) if root else value
    if node.converting is not None:
        seen = cel_value(node.converting, seen)
    variables: dict[str, Any] = {"self": seen, "__oldSelfPresent": False}
    if old is not _ABSENT:
        seen_old = _root_view(old) if root else old
        if node.converting is not None:
            seen_old = cel_value(node.converting, seen_old)
        variables["oldSelf"] = variables["__oldSelf"] = seen_old
        variables["__oldSelfPresent"] = True
    unchanged = old is not _ABSENT and old == value
    for rule in node.rules:
        if rule.compile_error:
            errors.append(
                FieldError("Invalid", field_path, f"rule compile error: {rule.compile_error}", node.type_label)
            )
            continue
        if rule.program is None:
            continue
        if rule.uses_old_self and old is _ABSENT and not rule.optional_old_self:
            continue
        try:
            result = evaluate(rule.program, variables)
        except EvalError as exc:
            text = str(exc)
            if text.startswith("no such overload"):
                detail = (
                    f"'{text}': call arguments did not match a supported operator, function or macro signature "
                    f"for rule: {rule.error_subject()}"
                )
            else:
                detail = f"{text} evaluating rule: {rule.error_subject()}"
            errors.append(FieldError("Invalid", field_path, detail, node.type_label))
            continue
        if result is True:
            continue
        at = field_path
        if rule.field_path:
            at = _child(path, rule.field_path)
        error = _rule_error(rule, at, node.type_label, rule.failure_message(variables))
        if unchanged and not rule.uses_old_self:
            warnings.append(str(error))
        else:
            errors.append(error)


def _rule_error(rule: Rule, at: str, type_label: str, message: str) -> FieldError:
    if rule.kind in ("Forbidden", "Required"):
        return FieldError(rule.kind, at, message)
    if rule.kind == "Duplicate":
        return FieldError("Duplicate", at, value=type_label)
    return FieldError("Invalid", at, message, type_label)


def blocked_error() -> FieldError:
    """Added instead of the rules' errors when the object has a type error (apiextensions' hasBlockingErr)."""
    return FieldError("Invalid", "<nil>", BLOCKED_DETAIL, None)
