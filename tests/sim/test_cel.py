"""CRD validation rules (omectl.sim.apiserver.cel): the evaluator, and 422s from the server over HTTP.

The expected texts are kube-apiserver 1.34's (the fidelity scenario `cel-rule-denial` compares them with the real
server).
"""

from __future__ import annotations

from typing import Any

import pytest

from omectl.sim.apiserver.cel import RuleValidator, normalize_field_path
from omectl.sim.apiserver.schema import StructuralSchema
from tests.support import RawClient, widget_crd


def validator(spec: dict[str, Any], root_rules: list[dict[str, Any]] | None = None) -> RuleValidator:
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": spec}}
    if root_rules:
        schema["x-kubernetes-validations"] = root_rules
    built = RuleValidator.build(schema)
    assert built is not None
    return built


def errors(v: RuleValidator, spec: Any, old_spec: Any = None, name: str = "w") -> list[str]:
    obj = {"apiVersion": "g/v1", "kind": "W", "metadata": {"name": name, "namespace": "ns"}, "spec": spec}
    old = None if old_spec is None else {**obj, "spec": old_spec}
    found, _ = v.validate(obj, old)
    return [str(e) for e in found]


EXACTLY_ONE = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "image": {"type": "string"}, "custom": {"type": "object"}},
    "x-kubernetes-validations": [
        {
            "rule": "(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) + (has(self.custom) ? 1 : 0) == 1",
            "message": "exactly one of name, image, or custom must be specified",
        },
        {"rule": "self == oldSelf", "message": "model selection is immutable after creation"},
    ],
}


def test_a_schema_without_rules_has_no_validator() -> None:
    assert RuleValidator.build({"type": "object", "properties": {"spec": {"type": "object"}}}) is None
    assert StructuralSchema({"type": "object"}).rules is None


def test_a_passing_rule_gives_no_error_and_a_failing_one_its_message_at_the_node() -> None:
    v = validator({"type": "object", "properties": {"model": EXACTLY_ONE}})
    assert errors(v, {"model": {"name": "m"}}) == []
    assert errors(v, {"model": {"name": "m", "image": "i"}}) == [
        'spec.model: Invalid value: "object": exactly one of name, image, or custom must be specified'
    ]
    assert errors(v, {"model": {}}) == [
        'spec.model: Invalid value: "object": exactly one of name, image, or custom must be specified'
    ]


def test_a_transition_rule_runs_only_on_update_with_an_old_value() -> None:
    v = validator({"type": "object", "properties": {"model": EXACTLY_ONE}})
    assert errors(v, {"model": {"name": "a"}}) == []  # create: no oldSelf
    assert errors(v, {"model": {"name": "b"}}, old_spec={"model": {"name": "a"}}) == [
        'spec.model: Invalid value: "object": model selection is immutable after creation'
    ]
    assert errors(v, {"model": {"name": "a"}}, old_spec={"model": {"name": "a"}}) == []
    assert errors(v, {"model": {"name": "a"}}, old_spec={}) == []  # the old object had no model


def test_a_string_field_rule_reports_the_string_type() -> None:
    spec = {
        "type": "object",
        "properties": {
            "sourceUri": {
                "type": "string",
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "sourceUri is immutable"}],
            }
        },
    }
    v = validator(spec)
    assert errors(v, {"sourceUri": "hf://b"}, old_spec={"sourceUri": "hf://a"}) == [
        'spec.sourceUri: Invalid value: "string": sourceUri is immutable'
    ]


def test_without_a_message_the_rule_itself_is_quoted() -> None:
    v = validator({"type": "object", "x-kubernetes-validations": [{"rule": "  size(self) < 2 "}]})
    assert errors(v, {"a": 1, "b": 2}) == ['spec: Invalid value: "object": failed rule: size(self) < 2']


def test_message_expression_is_the_message_and_falls_back_to_message_when_it_fails() -> None:
    v = validator(
        {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.n < 3", "messageExpression": "'n is ' + string(self.n)", "message": "n too big"},
                {"rule": "self.n < 2", "messageExpression": "self.missing", "message": "fallback"},
                {"rule": "self.n < 1", "messageExpression": "'   '"},
            ],
        }
    )
    assert errors(v, {"n": 5}) == [
        'spec: Invalid value: "object": n is 5',
        'spec: Invalid value: "object": fallback',
        'spec: Invalid value: "object": failed rule: self.n < 1',
    ]


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (None, 'spec.size: Invalid value: "object": too big'),
        ("FieldValueInvalid", 'spec.size: Invalid value: "object": too big'),
        ("FieldValueForbidden", "spec.size: Forbidden: too big"),
        ("FieldValueRequired", "spec.size: Required value: too big"),
        ("FieldValueDuplicate", 'spec.size: Duplicate value: "object"'),
    ],
)
def test_reason_and_field_path_shape_the_error(reason: str | None, expected: str) -> None:
    rule: dict[str, Any] = {"rule": "self.size <= 10", "message": "too big", "fieldPath": ".size"}
    if reason:
        rule["reason"] = reason
    v = validator({"type": "object", "x-kubernetes-validations": [rule]})
    assert errors(v, {"size": 20}) == [expected]


def test_field_paths_are_printed_like_apimachinery_paths() -> None:
    assert normalize_field_path(".a.b") == "a.b"
    assert normalize_field_path(".a['b.c'][2]") == "a[b.c][2]"
    assert normalize_field_path("['x']") == "x"


def test_list_items_are_checked_each_at_their_index() -> None:
    spec = {
        "type": "object",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('t-')"}]},
            }
        },
    }
    assert errors(validator(spec), {"tags": ["bad", "t-2", "bad3"]}) == [
        "spec.tags[0]: Invalid value: \"string\": failed rule: self.startsWith('t-')",
        "spec.tags[2]: Invalid value: \"string\": failed rule: self.startsWith('t-')",
    ]


def test_atomic_list_items_do_not_correlate_and_map_list_items_correlate_by_key() -> None:
    immutable = {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "frozen"}]}
    item = {"type": "object", "properties": {"name": {"type": "string"}, "value": immutable}}
    atomic = validator({"type": "object", "properties": {"items": {"type": "array", "items": item}}})
    assert errors(atomic, {"items": [{"name": "a", "value": "2"}]}, {"items": [{"name": "a", "value": "1"}]}) == []
    keyed = validator(
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": item,
                }
            },
        }
    )
    old = {"items": [{"name": "a", "value": "1"}, {"name": "b", "value": "1"}]}
    assert errors(keyed, {"items": [{"name": "b", "value": "1"}, {"name": "a", "value": "2"}]}, old) == [
        'spec.items[1].value: Invalid value: "string": frozen'
    ]
    assert errors(keyed, {"items": [{"name": "c", "value": "9"}]}, old) == []


def test_map_values_are_checked_with_key_paths() -> None:
    spec = {
        "type": "object",
        "properties": {
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "size(self) < 3"}]},
            }
        },
    }
    assert errors(validator(spec), {"labels": {"ok": "a", "long": "abcd"}}) == [
        'spec.labels[long]: Invalid value: "string": failed rule: size(self) < 3'
    ]


def test_a_root_rule_sees_only_name_and_generate_name_of_metadata_and_reports_at_nil() -> None:
    v = validator(
        {"type": "object"},
        root_rules=[
            {"rule": "self.metadata.name.startsWith('c-')", "message": "names start with c-"},
            {"rule": "!has(self.metadata.namespace)", "message": "namespace is visible"},
        ],
    )
    assert errors(v, {}, name="c-1") == []
    assert errors(v, {}, name="x") == ['<nil>: Invalid value: "object": names start with c-']


def test_an_evaluation_error_is_reported_in_cel_go_words() -> None:
    v = validator(
        {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.low < self.high", "message": "low must be below high"}],
        }
    )
    assert errors(v, {"low": 1}) == [
        'spec: Invalid value: "object": no such key: high evaluating rule: low must be below high'
    ]


def test_an_unchanged_value_that_fails_a_rule_without_old_self_is_only_a_warning_on_update() -> None:
    v = validator({"type": "object", "x-kubernetes-validations": [{"rule": "self.n < 3", "message": "n < 3"}]})
    obj = {"apiVersion": "g/v1", "kind": "W", "metadata": {"name": "w"}, "spec": {"n": 5, "m": 1}}
    found, warnings = v.validate(obj, {**obj, "spec": {"n": 5, "m": 1}})
    assert found == []
    assert warnings == ['spec: Invalid value: "object": n < 3']
    found, _ = v.validate(obj, {**obj, "spec": {"n": 4, "m": 1}})
    assert [str(e) for e in found] == ['spec: Invalid value: "object": n < 3']


# --- through the server ---------------------------------------------------------------------------------------


def rule_crd() -> dict[str, Any]:
    crd = widget_crd()
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = schema["properties"]["spec"]
    spec["properties"]["color"]["x-kubernetes-validations"] = [
        {"rule": "self == oldSelf", "message": "color is immutable"}
    ]
    spec["x-kubernetes-validations"] = [{"rule": "!has(self.size) || self.size < 50", "message": "size under 50"}]
    return crd


async def test_the_server_answers_422_with_the_rules_message_and_checks_transitions(raw: RawClient) -> None:
    assert (await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", rule_crd())).status == 201
    path = "/apis/example.com/v1/namespaces/default/widgets"
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 60}}
    denied = await raw.post(path, body)
    assert denied.status == 422
    assert denied.body["reason"] == "Invalid"
    assert denied.body["message"] == 'Widget.example.com "w" is invalid: spec: Invalid value: "object": size under 50'
    assert denied.body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "object": size under 50', "field": "spec"}
    ]
    body["spec"] = {"size": 1, "color": "red"}
    assert (await raw.post(path, body)).status == 201
    changed = await raw.patch(f"{path}/w", {"spec": {"color": "blue"}}, "application/merge-patch+json")
    assert changed.status == 422
    assert changed.body["message"] == (
        'Widget.example.com "w" is invalid: spec.color: Invalid value: "string": color is immutable'
    )
    assert (await raw.patch(f"{path}/w", {"spec": {"size": 2}}, "application/merge-patch+json")).status == 200
    typed = await raw.patch(f"{path}/w", {"spec": {"size": "x", "color": "blue"}}, "application/merge-patch+json")
    assert typed.status == 422
    assert typed.body["message"].endswith(
        "<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; "
        "correct the existing errors to complete validation]"
    )


def test_an_optional_old_self_rule_runs_on_create_with_old_self_none() -> None:
    v = validator(
        {
            "type": "object",
            "properties": {
                "o": {
                    "type": "string",
                    "x-kubernetes-validations": [
                        {
                            "rule": "oldSelf.hasValue() || self == 'first'",
                            "optionalOldSelf": True,
                            "message": "created as first",
                        }
                    ],
                }
            },
        }
    )
    assert errors(v, {"o": "second"}) == ['spec.o: Invalid value: "string": created as first']
    assert errors(v, {"o": "first"}) == []
    assert errors(v, {"o": "changed"}, old_spec={"o": "first"}) == []


@pytest.mark.parametrize(
    ("field", "schema", "rule", "good", "bad"),
    [
        ("q", {"type": "string"}, "quantity(self).isLessThan(quantity('10Gi'))", "1Gi", "20Gi"),
        ("q", {"type": "string"}, "isQuantity(self) && quantity(self).asInteger() == 1500", "1.5k", "1"),
        ("u", {"type": "string"}, "isURL(self) && url(self).getScheme() == 'https'", "https://x.example/p", "ftp"),
        (
            "u",
            {"type": "string"},
            "url(self).getHostname() == 'x.example' && url(self).getPort() == '8443'",
            "https://x.example:8443/",
            "https://x.example/",
        ),
        ("l", {"type": "array", "items": {"type": "integer"}}, "self.isSorted() && self.sum() < 10", [1, 2, 3], [3, 1]),
        ("l", {"type": "array", "items": {"type": "integer"}}, "self.min() == 1 && self.max() == 3", [3, 1, 2], [2]),
        ("f", {"type": "string"}, "self.find('[0-9]+') == '42' && self.findAll('[a-z]').size() == 2", "a42b7", "a7b"),
        ("ip", {"type": "string"}, "isIP(self) && ip(self).family() == 4 && !ip(self).isLoopback()", "10.0.0.1", "::1"),
        ("ip", {"type": "string"}, "isIP(self)", "fe80::1", "::ffff:1.2.3.4"),
        (
            "net",
            {"type": "string"},
            "isCIDR(self) && cidr('10.0.0.0/8').containsCIDR(self)",
            "10.2.0.0/16",
            "11.0.0.0/8",
        ),
        (
            "net",
            {"type": "string"},
            "cidr(self).containsIP('10.1.2.3') && cidr(self).prefixLength() == 8",
            "10.0.0.0/8",
            "10.0.0.0/16",
        ),
    ],
)
def test_the_kubernetes_cel_libraries_evaluate(
    field: str, schema: dict[str, Any], rule: str, good: Any, bad: Any
) -> None:
    v = validator({"type": "object", "properties": {field: {**schema, "x-kubernetes-validations": [{"rule": rule}]}}})
    assert errors(v, {field: good}) == []
    assert errors(v, {field: bad}) == [f'spec.{field}: Invalid value: "{schema["type"]}": failed rule: {rule}']


def status_crd() -> dict[str, Any]:
    crd = widget_crd()
    version = crd["spec"]["versions"][0]
    version["subresources"] = {"status": {}}
    version["schema"]["openAPIV3Schema"]["properties"]["status"] = {
        "type": "object",
        "x-kubernetes-validations": [{"rule": "!has(self.phase) || self.phase != 'Bad'", "message": "not Bad"}],
        "properties": {
            "phase": {
                "type": "string",
                "x-kubernetes-validations": [
                    {"rule": "self != 'Done' || oldSelf == 'Running'", "message": "Done only after Running"}
                ],
            },
            "count": {"type": "integer", "maximum": 5},
        },
    }
    return crd


async def test_a_status_write_is_checked_by_the_rules_transitions_included(raw: RawClient) -> None:
    assert (await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", status_crd())).status == 201
    path = "/apis/example.com/v1/namespaces/default/widgets"
    body = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    assert (await raw.post(path, body)).status == 201
    merge = "application/merge-patch+json"
    bad = await raw.patch(f"{path}/w/status", {"status": {"phase": "Bad"}}, merge)
    assert bad.status == 422
    assert bad.body["message"] == 'Widget.example.com "w" is invalid: status: Invalid value: "object": not Bad'
    # The schema checks status alone on a status write, its messages' paths relative to status (as kube-apiserver).
    over = await raw.patch(f"{path}/w/status", {"status": {"count": 9}}, merge)
    assert over.status == 422
    assert over.body["message"] == (
        'Widget.example.com "w" is invalid: status.count: Invalid value: 9: count in body should be less than or '
        "equal to 5"
    )
    assert (await raw.patch(f"{path}/w/status", {"status": {"phase": "Done"}}, merge)).status == 200
    assert (await raw.patch(f"{path}/w/status", {"status": {"phase": "Running"}}, merge)).status == 200
    assert (await raw.patch(f"{path}/w/status", {"status": {"phase": "Done"}}, merge)).status == 200
    # A transition rule is not ratcheted: an unchanged Done over Done fails on any later write.
    denied = await raw.patch(f"{path}/w", {"spec": {"size": 2}}, merge)
    assert denied.status == 422
    assert denied.body["message"] == (
        'Widget.example.com "w" is invalid: status.phase: Invalid value: "string": Done only after Running'
    )


def test_a_rule_names_escaped_properties_by_their_escaped_names() -> None:
    v = validator(
        {
            "type": "object",
            "properties": {"namespace": {"type": "string"}, "a-b": {"type": "string"}, "x": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.__namespace__ == self.a__dash__b", "message": "same"}],
        }
    )
    assert errors(v, {"namespace": "n", "a-b": "n"}) == []
    assert errors(v, {"namespace": "n", "a-b": "m"}) == ['spec: Invalid value: "object": same']


def test_formatted_strings_are_timestamps_durations_and_bytes_to_a_rule() -> None:
    v = validator(
        {
            "type": "object",
            "properties": {
                "ts": {"type": "string", "format": "date-time"},
                "day": {"type": "string", "format": "date"},
                "dur": {"type": "string", "format": "duration"},
                "b": {"type": "string", "format": "byte"},
            },
            "x-kubernetes-validations": [
                {"rule": "!has(self.ts) || self.ts > timestamp('2020-01-01T00:00:00Z')", "message": "after 2020"},
                {"rule": "!has(self.day) || self.day.getFullYear() == 2024", "message": "in 2024"},
                {"rule": "!has(self.dur) || self.dur < duration('1h')", "message": "under an hour"},
                {"rule": "!has(self.b) || self.b.size() == 2", "message": "two bytes"},
            ],
        }
    )
    assert errors(v, {"ts": "2021-05-01T00:00:00Z", "day": "2024-02-29", "dur": "30m", "b": "YWI="}) == []
    assert errors(v, {"ts": "2019-05-01T00:00:00Z"}) == ['spec: Invalid value: "object": after 2020']
    assert errors(v, {"day": "2023-01-01"}) == ['spec: Invalid value: "object": in 2024']
    assert errors(v, {"dur": "1h30m"}) == ['spec: Invalid value: "object": under an hour']
    assert errors(v, {"b": "YWJj"}) == ['spec: Invalid value: "object": two bytes']
