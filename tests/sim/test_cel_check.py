"""Type-checking a CRD's validation rules when the CRD is written (omectl.sim.apiserver.cel_check).

The expected texts are kube-apiserver 1.34's, taken from the real server (the fidelity scenario `cel-rule-compile`
compares them).
"""

from __future__ import annotations

import copy
from typing import Any

from omectl.sim.apiserver.cel_check import rule_compile_errors
from omectl.sim.apiserver.cel_types import escape
from tests.support import RawClient

SPEC_PATH = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def crd(spec_rules: list[dict[str, Any]], root_rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec = {
        "type": "object",
        "x-kubernetes-validations": spec_rules,
        "properties": {
            "a": {"type": "string"},
            "n": {"type": "integer"},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "lst": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "ios": {"x-kubernetes-int-or-string": True},
            "namespace": {"type": "string"},
            "a-b": {"type": "string"},
            "pu": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": spec}}
    if root_rules:
        schema["x-kubernetes-validations"] = root_rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "bads.cel.example.com"},
        "spec": {
            "group": "cel.example.com",
            "scope": "Namespaced",
            "names": {"plural": "bads", "singular": "bad", "kind": "Bad"},
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}],
        },
    }


def texts(spec_rules: list[dict[str, Any]], root_rules: list[dict[str, Any]] | None = None) -> list[str]:
    return [str(e) for e in rule_compile_errors(crd(spec_rules, root_rules), None)]


def go(rule: str, message_expression: str = "") -> str:
    return (
        f'{{"Rule":"{rule}","Message":"","MessageExpression":"{message_expression}","Reason":null,'
        '"FieldPath":"","OptionalOldSelf":null}'
    )


def test_rules_that_type_check_give_no_error() -> None:
    assert (
        texts(
            [
                {"rule": "self.a == 'x' && self.n > 2 && self.m['k'] == 'v' && self.lst.all(i, i.x > 0)"},
                {"rule": "self.ios == 1 || self.ios == 'a'"},
                {"rule": "self.__namespace__ == 'x' && self.a__dash__b == 'y'"},
                {"rule": "self == oldSelf", "messageExpression": "'a is ' + self.a"},
                {"rule": "!oldSelf.hasValue() || oldSelf.value().a == self.a", "optionalOldSelf": True},
                {"rule": "quantity('1Gi').isGreaterThan(quantity('1M')) && isURL('https://x') && [1, 2].sum() == 3"},
            ],
            [{"rule": "self.metadata.name.startsWith('c-') && self.kind == 'Bad'"}],
        )
        == []
    )


def test_an_undefined_field_is_a_compile_error_at_the_rule() -> None:
    assert texts([{"rule": "self.nope == 1"}]) == [
        f"{SPEC_PATH}[0].rule: Invalid value: {go('self.nope == 1')}: compilation failed: ERROR: <input>:1:5: "
        "undefined field 'nope'\n | self.nope == 1\n | ....^"
    ]


def test_a_type_mismatch_and_an_unknown_function_are_compile_errors() -> None:
    assert texts([{"rule": "self.m.x == 1"}, {"rule": "self.a.frob()"}]) == [
        f"{SPEC_PATH}[0].rule: Invalid value: {go('self.m.x == 1')}: compilation failed: ERROR: <input>:1:10: "
        "found no matching overload for '_==_' applied to '(string, int)'\n | self.m.x == 1\n | .........^",
        f"{SPEC_PATH}[1].rule: Invalid value: {go('self.a.frob()')}: compilation failed: ERROR: <input>:1:12: "
        "undeclared reference to 'frob' (in container '')\n | self.a.frob()\n | ...........^",
    ]


def test_the_root_sees_only_name_and_generate_name_of_metadata() -> None:
    rule = "self.metadata.labels.size() > 0"
    assert texts([{"rule": "true"}], [{"rule": rule}]) == [
        "spec.validation.openAPIV3Schema.x-kubernetes-validations[0].rule: Invalid value: "
        f"{go(rule.replace('>', chr(92) + 'u003e'))}: compilation failed: ERROR: <input>:1:14: undefined field "
        f"'labels'\n | {rule}\n | .............^"
    ]


def test_a_preserve_unknown_fields_object_without_properties_declares_no_fields() -> None:
    assert texts([{"rule": "self.pu.foo == 1"}])[0].endswith("undefined field 'foo'\n | self.pu.foo == 1\n | .......^")


def test_a_rule_must_be_a_bool_and_a_message_expression_a_string() -> None:
    assert texts([{"rule": "self.a"}, {"rule": "true", "messageExpression": "1"}]) == [
        f"{SPEC_PATH}[0].rule: Invalid value: {go('self.a')}: cel expression must evaluate to a bool",
        f"{SPEC_PATH}[1].messageExpression: Invalid value: {go('true', '1')}: "
        "messageExpression must evaluate to a string",
    ]


def test_a_message_expression_that_does_not_compile_is_reported_at_its_own_field() -> None:
    assert texts([{"rule": "oldSelf == self", "messageExpression": "self.a + 1"}]) == [
        f"{SPEC_PATH}[0].messageExpression: Invalid value: {go('oldSelf == self', 'self.a + 1')}: "
        "messageExpression compilation failed: ERROR: <input>:1:8: found no matching overload for '_+_' applied to "
        "'(string, int)'\n | self.a + 1\n | .......^"
    ]


def test_an_optional_old_self_rule_reports_its_own_columns() -> None:
    text, _ = texts([{"rule": "self.nope == 1", "optionalOldSelf": True}])
    assert text.endswith("compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope == 1\n | ....^")
    assert '"OptionalOldSelf":true}' in text


def test_on_update_a_rule_the_old_crd_had_is_tolerated_and_a_new_one_is_not() -> None:
    old = crd([{"rule": "self.nope == 1"}])
    new = copy.deepcopy(old)
    assert rule_compile_errors(new, old) == []
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"].append(
        {"rule": "self.other == 1"}
    )
    assert [e.field for e in rule_compile_errors(new, old)] == [f"{SPEC_PATH}[1].rule"]


def test_versions_with_different_schemas_are_reported_per_version() -> None:
    doc = crd([{"rule": "self.nope == 1"}])
    second = copy.deepcopy(doc["spec"]["versions"][0])
    second.update(name="v2", storage=False)
    second["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["nope"] = {"type": "integer"}
    doc["spec"]["versions"].append(second)
    assert [e.field for e in rule_compile_errors(doc, None)] == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    ]


def test_property_names_escape_as_kubernetes_escapes_them() -> None:
    assert escape("namespace") == "__namespace__"
    assert escape("a-b.c/d") == "a__dash__b__dot__c__slash__d"
    assert escape("a__b") == "a__underscores__b"
    assert escape("1x") is None
    assert escape("a b") is None


async def test_a_crd_whose_rule_does_not_compile_is_refused_with_422(raw: RawClient) -> None:
    denied = await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd([{"rule": "self.nope"}]))
    assert denied.status == 422
    assert denied.body["message"].startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "bads.cel.example.com" is invalid: '
        f"{SPEC_PATH}[0].rule: Invalid value: "
    )
    assert denied.body["details"]["causes"][0]["field"] == f"{SPEC_PATH}[0].rule"
    assert (await raw.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/bads.cel.example.com")).status == 404


def test_errors_that_follow_from_an_undefined_field_are_not_reported_and_a_select_on_a_string_is() -> None:
    rule = "self.b.c.d == 1 && self.a.x == 'y'"
    (text,) = texts([{"rule": rule}])
    assert text.endswith(
        f"compilation failed: ERROR: <input>:1:5: undefined field 'b'\n | {rule}\n | ....^\n"
        f"ERROR: <input>:1:26: type 'string' does not support field selection\n | {rule}\n | {'.' * 25}^"
    )


def test_optional_old_self_on_a_rule_that_does_not_use_old_self_is_refused() -> None:
    assert texts([{"rule": "self.a == 'x'", "optionalOldSelf": True}]) == [
        f"{SPEC_PATH}[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
    ]
    (compile_error, not_used) = texts([{"rule": "oldSelf.hasValue() || self.nope", "optionalOldSelf": True}])
    assert compile_error.startswith(f"{SPEC_PATH}[0].rule: ")
    assert (
        not_used
        == f"{SPEC_PATH}[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
    )


def test_an_entry_of_the_wrong_shape_is_reported_and_then_nothing_is_compiled() -> None:
    assert texts(
        [
            {"rule": "self.nope == 1"},
            {"rule": "  "},
            {"rule": "true", "message": "two\nlines"},
            {"rule": "true", "reason": "FieldValueOdd"},
            {"rule": "true", "fieldPath": ".missing"},
            {"rule": "true", "fieldPath": ".lst[0].x"},
            {"rule": "true", "fieldPath": ".m['any.key']"},
        ]
    ) == [
        f"{SPEC_PATH}[1].rule: Required value: rule is not specified",
        f'{SPEC_PATH}[2].message: Invalid value: "two\\nlines": must not contain line breaks',
        f'{SPEC_PATH}[3].reason: Unsupported value: "FieldValueOdd": supported values: "FieldValueDuplicate", '
        '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"',
        f'{SPEC_PATH}[4].fieldPath: Invalid value: ".missing": must be a valid path',
    ]


def test_optional_old_self_is_judged_by_the_rule_even_when_its_message_expression_is_wrong() -> None:
    rule = {"rule": "oldSelf.hasValue() || self.a == 'x'", "optionalOldSelf": True, "messageExpression": "1"}
    assert [e.split(": ")[0] for e in texts([rule])] == [f"{SPEC_PATH}[0].messageExpression"]
