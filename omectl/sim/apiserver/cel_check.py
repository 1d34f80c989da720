"""Type-checking a CRD's validation rules when the CRD is written, as apiextensions-apiserver does.

Each rule and messageExpression is compiled against the declared type of its schema node (omectl/sim/apiserver/
cel_types.py); a rule that does not compile, or does not evaluate to a bool (a messageExpression: to a string),
makes the CRD write a 422 at `...x-kubernetes-validations[i].rule` (`.messageExpression`), its value the rule as
Go prints the struct. On an update a rule text the old CRD already had is not reported (kube-apiserver tolerates
pre-existing expressions). The path is `spec.validation.openAPIV3Schema` when every version has the same schema
(the internal API then holds one top-level schema), else `spec.versions[i].schema.openAPIV3Schema`.

The checks on each entry's shape (cel_rule_shape.py) come first: while one fails, nothing is compiled.

Not modelled: the cost estimate (a rule whose worst-case cost exceeds the budget is refused by kube-apiserver).
"""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson
from cel_expr_python import cel

from omectl.sim.apiserver import cel as cel_runtime
from omectl.sim.apiserver import cel_library as library
from omectl.sim.apiserver.cel_rule_shape import rule_shape_errors
from omectl.sim.apiserver.cel_types import DeclaredTypes
from omectl.sim.apiserver.errors import FieldError

_NO_OLD_SELF = "may not be set if oldSelf is not used in rule"
_UNDEFINED_FIELD = re.compile(r"undefined field '([^']*)' not found in struct '[^']*'")


def rule_compile_errors(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """The 422 causes for the rules of a CRD being created (old None) or updated."""
    versions = [v for v in (crd.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]
    preexisting = _expressions(old) if old is not None else frozenset()
    schemas = [(v.get("schema") or {}).get("openAPIV3Schema") for v in versions]
    if not schemas:
        return []
    same = all(
        v.get("schema") == versions[0].get("schema")
        and v.get("subresources") == versions[0].get("subresources")
        and v.get("additionalPrinterColumns") == versions[0].get("additionalPrinterColumns")
        for v in versions
    )
    targets = (
        [("spec.validation.openAPIV3Schema", schemas[0])]
        if same
        else [(f"spec.versions[{i}].schema.openAPIV3Schema", s) for i, s in enumerate(schemas)]
    )
    errors: list[FieldError] = []
    for path, schema in targets:
        if isinstance(schema, dict):
            found = _schema_errors(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS), path)
            errors.extend(error for error, expression in found if expression not in preexisting)
    return errors


def _expressions(crd: dict[str, Any]) -> frozenset[str]:
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for rule in node.get("x-kubernetes-validations") or ():
                if isinstance(rule, dict):
                    found.update(str(rule[k]) for k in ("rule", "messageExpression") if rule.get(k))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk((crd.get("spec") or {}).get("versions"))
    return frozenset(found)


@functools.lru_cache(maxsize=256)
def _schema_errors(schema_json: bytes, path: str) -> tuple[tuple[FieldError, str | None], ...]:
    """Each error with the expression it is about (None: not one an update may keep); cached by schema."""
    schema = orjson.loads(schema_json)
    shape = rule_shape_errors(schema, path)
    if shape:
        return tuple((error, None) for error in shape)
    return tuple(
        (FieldError("Invalid", f"{path}{field}", detail, raw_value=raw), expression)
        for field, detail, raw, expression in _compile_errors(schema)
    )


def _compile_errors(schema: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(path under the schema, detail, Go value, the expression) per rule or messageExpression that does not
    compile."""
    types = DeclaredTypes("selfType")
    library.add_types(types.pool)
    nodes: list[tuple[str, dict[str, Any], Any]] = []
    _collect(schema, "", types, nodes, resource_root=True)
    if not nodes:
        return []
    try:
        types.seal()
    except TypeError:
        return []  # a schema protobuf cannot declare (e.g. two properties with one JSON name): not checked
    found: list[tuple[str, str, str, str]] = []
    for path, node, self_type in nodes:
        env = cel_runtime.typed_env(types.pool, self_type)
        for index, raw in enumerate(node.get("x-kubernetes-validations") or ()):
            if not isinstance(raw, dict):
                continue
            at = f"{path}.x-kubernetes-validations[{index}]"
            rule = str(raw.get("rule") or "")
            rule_detail = ""
            if rule.strip():
                rule_detail = _check(env, cel_runtime.with_optional_old_self(rule, raw), cel.Type.BOOL)
                if rule_detail:
                    bad_type = "cel expression must evaluate to a bool"
                    text = bad_type if rule_detail == "type" else f"compilation failed: {rule_detail}"
                    found.append((f"{at}.rule", text, _go_rule(raw), rule))
            message_expression = str(raw.get("messageExpression") or "")
            if message_expression.strip():
                detail = _check(env, message_expression, cel.Type.STRING)
                if detail:
                    bad_type = "messageExpression must evaluate to a string"
                    text = bad_type if detail == "type" else f"messageExpression compilation failed: {detail}"
                    found.append((f"{at}.messageExpression", text, _go_rule(raw), message_expression))
            if raw.get("optionalOldSelf") is True and (rule_detail or not re.search(r"\boldSelf\b", rule)):
                # A rule that does not compile does not use oldSelf either.
                found.append((f"{at}.optionalOldSelf", _NO_OLD_SELF, "true", rule))
    return found


def _check(env: Any, expression: str, want: Any) -> str:
    """'' when it compiles to `want`, 'type' when to another type, else cel-go's words for the compile error."""
    try:
        program = env.compile(expression)
    except RuntimeError as exc:
        text = cel_runtime.compile_message(str(exc))
        return _UNDEFINED_FIELD.sub(r"undefined field '\1'", text)
    return "" if program.return_type() == want else "type"


def _collect(
    schema: dict[str, Any],
    path: str,
    types: DeclaredTypes,
    out: list[tuple[str, dict[str, Any], Any]],
    *,
    resource_root: bool = False,
) -> None:
    """Nodes with rules, children before their parent (the order kube-apiserver reports them in)."""
    for key, sub in sorted((schema.get("properties") or {}).items()):
        if isinstance(sub, dict):
            _collect(sub, f"{path}.properties[{key}]", types, out)
    for key in ("items", "additionalProperties"):
        sub = schema.get(key)
        if isinstance(sub, dict):
            _collect(sub, f"{path}.{key}", types, out)
    if schema.get("x-kubernetes-validations"):
        out.append((path, schema, types.cel_type(schema, path or "self", resource_root=resource_root)))


def _go_rule(raw: dict[str, Any]) -> str:
    """The ValidationRule struct as the server's field error prints it (encoding/json, HTML-escaped)."""
    optional = raw.get("optionalOldSelf")
    value = {
        "Rule": str(raw.get("rule") or ""),
        "Message": str(raw.get("message") or ""),
        "MessageExpression": str(raw.get("messageExpression") or ""),
        "Reason": raw.get("reason"),
        "FieldPath": str(raw.get("fieldPath") or ""),
        "OptionalOldSelf": optional if isinstance(optional, bool) else None,
    }
    text = orjson.dumps(value).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
