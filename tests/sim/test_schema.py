"""Tests for omectl.sim.apiserver.schema: unknown fields, pruning, defaulting, validation and CRD checks."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.sim.apiserver.errors import FieldError
from omectl.sim.apiserver.schema import StructuralSchema, default_crd, go_float, validate_crd


def spec_schema(**properties: Any) -> StructuralSchema:
    """A root schema whose `spec` has the given properties."""
    return StructuralSchema({"type": "object", "properties": {"spec": {"type": "object", "properties": properties}}})


def errors_for(schema: StructuralSchema, spec: Any) -> list[str]:
    return [str(e) for e in schema.validate({"apiVersion": "g/v1", "kind": "W", "spec": spec})]


# ------------------------------------------------------------------------------------------------ types

TYPE_CASES = [
    ("integer", "x", 'spec.f: Invalid value: "string": spec.f in body must be of type integer: "string"'),
    ("integer", 1.5, 'spec.f: Invalid value: "number": spec.f in body must be of type integer: "number"'),
    ("integer", True, 'spec.f: Invalid value: "boolean": spec.f in body must be of type integer: "boolean"'),
    ("number", "1", 'spec.f: Invalid value: "string": spec.f in body must be of type number: "string"'),
    ("string", 5, 'spec.f: Invalid value: "integer": spec.f in body must be of type string: "integer"'),
    ("boolean", "true", 'spec.f: Invalid value: "string": spec.f in body must be of type boolean: "string"'),
    ("object", [1], 'spec.f: Invalid value: "array": spec.f in body must be of type object: "array"'),
    ("array", {"a": 1}, 'spec.f: Invalid value: "object": spec.f in body must be of type array: "object"'),
    ("string", None, 'spec.f: Invalid value: "null": spec.f in body must be of type string: "null"'),
]


@pytest.mark.parametrize(("type_name", "value", "expected"), TYPE_CASES)
def test_type_mismatch_is_reported_with_apiserver_wording(type_name: str, value: Any, expected: str) -> None:
    assert errors_for(spec_schema(f={"type": type_name}), {"f": value}) == [expected]


@pytest.mark.parametrize(
    ("type_name", "value"),
    [
        ("integer", 3),
        ("integer", 3.0),
        ("number", 3),
        ("number", 2.5),
        ("string", ""),
        ("boolean", False),
        ("object", {}),
        ("array", []),
    ],
)
def test_matching_types_are_accepted(type_name: str, value: Any) -> None:
    assert errors_for(spec_schema(f={"type": type_name}), {"f": value}) == []


def test_type_error_is_a_type_invalid_field_error_with_type_name_as_value() -> None:
    [error] = spec_schema(size={"type": "integer"}).validate({"spec": {"size": "x"}})
    assert error == FieldError(
        kind="TypeInvalid",
        field="spec.size",
        value="string",
        detail='spec.size in body must be of type integer: "string"',
    )


def test_nullable_allows_null_and_non_nullable_rejects_it() -> None:
    schema = spec_schema(a={"type": "string", "nullable": True}, b={"type": "string"})
    assert errors_for(schema, {"a": None}) == []
    assert errors_for(schema, {"b": None}) == [
        'spec.b: Invalid value: "null": spec.b in body must be of type string: "null"'
    ]


# ---------------------------------------------------------------------------------------------- required


def test_required_is_reported_at_depth() -> None:
    schema = spec_schema(
        runner={"type": "object", "required": ["name", "image"], "properties": {"name": {"type": "string"}}}
    )
    errors = schema.validate({"spec": {"runner": {"image": "x"}}})
    assert errors == [FieldError(kind="Required", field="spec.runner.name", detail="")]
    assert str(errors[0]) == "spec.runner.name: Required value"


def test_required_inside_array_items_uses_index_paths() -> None:
    schema = spec_schema(
        items={
            "type": "array",
            "items": {"type": "object", "required": ["n"], "properties": {"n": {"type": "string"}}},
        }
    )
    assert errors_for(schema, {"items": [{"n": "a"}, {}]}) == ["spec.items[1].n: Required value"]


def test_required_at_root_names_the_field_without_a_leading_dot() -> None:
    schema = StructuralSchema({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}})
    assert [str(e) for e in schema.validate({"kind": "W"})] == ["spec: Required value"]


# ------------------------------------------------------------------------------------- value constraints

CONSTRAINT_CASES = [
    (
        {"type": "string", "enum": ["a", "b"]},
        "c",
        'spec.f: Unsupported value: "c": supported values: "a", "b"',
    ),
    ({"type": "integer", "enum": [1, 2]}, 3, 'spec.f: Unsupported value: 3: supported values: "1", "2"'),
    (
        {"type": "string", "pattern": "^[a-z]+$"},
        "abc1",
        "spec.f: Invalid value: \"abc1\": spec.f in body should match '^[a-z]+$'",
    ),
    (
        {"type": "integer", "maximum": 10},
        11,
        "spec.f: Invalid value: 11: spec.f in body should be less than or equal to 10",
    ),
    (
        {"type": "integer", "maximum": 10, "exclusiveMaximum": True},
        10,
        "spec.f: Invalid value: 10: spec.f in body should be less than 10",
    ),
    (
        {"type": "integer", "minimum": 1},
        0,
        "spec.f: Invalid value: 0: spec.f in body should be greater than or equal to 1",
    ),
    (
        {"type": "number", "minimum": 1.5, "exclusiveMinimum": True},
        1.5,
        "spec.f: Invalid value: 1.5: spec.f in body should be greater than 1.5",
    ),
    (
        {"type": "number", "maximum": 1000000},
        2000000.0,
        "spec.f: Invalid value: 2e+06: spec.f in body should be less than or equal to 1e+06",
    ),
    (
        {"type": "integer", "multipleOf": 5},
        7,
        "spec.f: Invalid value: 7: spec.f in body should be a multiple of 5",
    ),
    (
        {"type": "string", "minLength": 1},
        "",
        'spec.f: Invalid value: "": spec.f in body should be at least 1 chars long',
    ),
    ({"type": "string", "maxLength": 3}, "abcd", "spec.f: Too long: may not be more than 3 bytes"),
    ({"type": "string", "maxLength": 1}, "ab", "spec.f: Too long: may not be more than 1 byte"),
    (
        {"type": "array", "minItems": 1},
        [],
        "spec.f: Invalid value: 0: spec.f in body should have at least 1 items",
    ),
    (
        {"type": "object", "minProperties": 1},
        {},
        "spec.f: Invalid value: 0: spec.f in body should have at least 1 properties",
    ),
    (
        {"type": "string", "format": "date-time"},
        "yesterday",
        'spec.f: Invalid value: "yesterday": spec.f in body must be of type date-time: "yesterday"',
    ),
    (
        {"type": "array", "uniqueItems": True},
        [1, 1],
        'spec.f: Invalid value: "": spec.f in body shouldn\'t contain duplicates',
    ),
]


@pytest.mark.parametrize(("schema", "value", "expected"), CONSTRAINT_CASES)
def test_value_constraint_violations_use_apiserver_wording(schema: dict[str, Any], value: Any, expected: str) -> None:
    assert errors_for(spec_schema(f=schema), {"f": value}) == [expected]


@pytest.mark.parametrize(
    ("schema", "value"),
    [
        ({"type": "string", "enum": ["a", "b"]}, "b"),
        ({"type": "integer", "enum": [1, 2]}, 2.0),
        ({"type": "string", "pattern": "^[a-z]+$"}, "abc"),
        ({"type": "integer", "maximum": 10}, 10),
        ({"type": "integer", "minimum": 1}, 1),
        ({"type": "string", "minLength": 1, "maxLength": 3}, "abc"),
        ({"type": "array", "minItems": 1, "maxItems": 2}, [1, 2]),
        ({"type": "object", "minProperties": 1, "maxProperties": 1}, {"a": 1}),
        ({"type": "string", "format": "date-time"}, "2026-01-02T15:04:05Z"),
        ({"type": "string", "format": "int32"}, "anything"),  # unsupported formats are dropped
        ({"type": "integer", "multipleOf": 5}, 10),
    ],
)
def test_values_within_constraints_pass(schema: dict[str, Any], value: Any) -> None:
    assert errors_for(spec_schema(f=schema), {"f": value}) == []


def test_enum_does_not_treat_booleans_as_numbers() -> None:
    assert errors_for(spec_schema(f={"enum": [1]}), {"f": True}) == [
        'spec.f: Unsupported value: true: supported values: "1"'
    ]


def test_max_items_is_too_many_with_actual_count() -> None:
    [error] = spec_schema(f={"type": "array", "maxItems": 2}).validate({"spec": {"f": [1, 2, 3]}})
    assert (error.kind, error.field, error.value, error.detail) == (
        "TooMany",
        "spec.f",
        3,
        "must have at most 2 items",
    )


def test_max_properties_is_too_many_and_stops_checking_inside() -> None:
    schema = spec_schema(f={"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}})
    [error] = schema.validate({"spec": {"f": {"a": 1, "b": 2}}})
    assert (error.kind, error.value, error.detail) == ("TooMany", 2, "must have at most 1 item")


def test_type_and_enum_errors_are_both_reported_like_kube_openapi() -> None:
    assert errors_for(spec_schema(f={"type": "string", "enum": ["a"]}), {"f": 5}) == [
        'spec.f: Invalid value: "integer": spec.f in body must be of type string: "integer"',
        'spec.f: Unsupported value: 5: supported values: "a"',
    ]


@pytest.mark.parametrize("value", [8080, "http", "50%"])
def test_int_or_string_accepts_int_and_string(value: Any) -> None:
    assert errors_for(spec_schema(port={"x-kubernetes-int-or-string": True}), {"port": value}) == []


@pytest.mark.parametrize(("value", "kind"), [(True, "boolean"), ({"a": 1}, "object"), ([1], "array")])
def test_int_or_string_rejects_other_types(value: Any, kind: str) -> None:
    assert errors_for(spec_schema(port={"x-kubernetes-int-or-string": True}), {"port": value}) == [
        f'spec.port: Invalid value: "{kind}": spec.port in body must be of type integer,string: "{kind}"'
    ]


def test_additional_properties_values_are_validated_with_dotted_paths() -> None:
    schema = spec_schema(labels={"type": "object", "additionalProperties": {"type": "string", "maxLength": 2}})
    assert errors_for(schema, {"labels": {"ok": "ab", "bad": "abc", "worse": 3}}) == [
        "spec.labels.bad: Too long: may not be more than 2 bytes",
        'spec.labels.worse: Invalid value: "integer": spec.labels.worse in body must be of type string: "integer"',
    ]


def test_root_metadata_is_not_validated_here() -> None:
    schema = StructuralSchema(
        {
            "type": "object",
            "properties": {"metadata": {"type": "object", "properties": {"name": {"maxLength": 1}}}},
        }
    )
    assert schema.validate({"metadata": {"name": "long-name"}}) == []


def test_any_of_failure_reports_composite_and_first_alternative() -> None:
    schema = spec_schema(f={"anyOf": [{"type": "integer"}, {"type": "string"}]})
    assert errors_for(schema, {"f": True}) == [
        '<nil>: Invalid value: "": "spec.f" must validate at least one schema (anyOf)',
        'spec.f: Invalid value: "boolean": spec.f in body must be of type integer: "boolean"',
    ]
    assert errors_for(schema, {"f": "x"}) == []


def test_one_of_and_not() -> None:
    one_of = spec_schema(f={"oneOf": [{"minimum": 0}, {"maximum": 10}]})
    assert errors_for(one_of, {"f": 5}) == [
        '<nil>: Invalid value: "": "spec.f" must validate one and only one schema (oneOf). Found 2 valid alternatives'
    ]
    assert errors_for(one_of, {"f": 50}) == []
    negated = spec_schema(f={"not": {"enum": ["x"]}})
    assert errors_for(negated, {"f": "x"}) == ['<nil>: Invalid value: "": "spec.f" must not validate the schema (not)']
    assert errors_for(negated, {"f": "y"}) == []


# ------------------------------------------------------------------------------------------ list types


def test_list_type_set_reports_second_appearance_of_each_duplicate() -> None:
    schema = spec_schema(tags={"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}})
    assert errors_for(schema, {"tags": ["a", "b", "a", "a", "b"]}) == [
        'spec.tags[2]: Duplicate value: "a"',
        'spec.tags[4]: Duplicate value: "b"',
    ]
    assert errors_for(schema, {"tags": ["a", "b"]}) == []


def test_list_type_map_reports_duplicate_keys() -> None:
    schema = spec_schema(
        ports={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "protocol": {"type": "string"}},
            },
        }
    )
    errors = schema.validate(
        {
            "spec": {
                "ports": [
                    {"name": "a", "protocol": "TCP"},
                    {"name": "a", "protocol": "UDP"},
                    {"name": "a", "protocol": "TCP"},
                ]
            }
        }
    )
    assert [(e.kind, e.field, e.value) for e in errors] == [
        ("Duplicate", "spec.ports[2]", {"name": "a", "protocol": "TCP"})
    ]


def test_list_type_map_items_under_additional_properties_use_key_paths() -> None:
    schema = spec_schema(
        groups={
            "type": "object",
            "additionalProperties": {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "items": {"type": "integer"},
            },
        }
    )
    assert errors_for(schema, {"groups": {"g1": [1, 1]}}) == ["spec.groups[g1][1]: Duplicate value: 1"]


def test_list_type_lookup_for_server_side_apply() -> None:
    schema = spec_schema(
        conditions={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
            "items": {
                "type": "object",
                "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}},
            },
        },
        plain={"type": "array", "items": {"type": "string"}},
        selector={"type": "object", "x-kubernetes-map-type": "atomic"},
    )
    assert schema.list_type(("spec", "conditions")) == ("map", ("type",))
    assert schema.list_type(("spec", "conditions", "[]", "tags")) == ("set", ())
    assert schema.list_type(("spec", "plain")) == ("atomic", ())
    assert schema.list_type(("spec", "missing")) == ("atomic", ())
    assert schema.is_map_atomic(("spec", "selector")) is True
    assert schema.is_map_atomic(("spec",)) is False


# ------------------------------------------------------------------------------ unknown fields and pruning

NESTED = StructuralSchema(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "sub": {
                                    "type": "array",
                                    "items": {"type": "object", "properties": {"x": {"type": "integer"}}},
                                },
                            },
                        },
                    },
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "config": {
                        "type": "object",
                        "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}},
                    },
                    "free": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {"known": {"type": "object", "properties": {"k": {"type": "string"}}}},
                    },
                    "template": {
                        "type": "object",
                        "x-kubernetes-embedded-resource": True,
                        "properties": {"spec": {"type": "object"}},
                    },
                },
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }
)


def nested_object() -> dict[str, Any]:
    return {
        "apiVersion": "g/v1",
        "kind": "W",
        "metadata": {
            "name": "w",
            "labels": {"a": "b"},
            "bogus": 1,
            "ownerReferences": [{"uid": "u", "name": "o", "extra": True}],
        },
        "spec": {
            "foo": 1,
            "items": [{"name": "a", "bar": 2, "sub": [{"x": 1, "y": 2}]}, {"name": "b"}],
            "labels": {"k": "v"},
            "config": {"c1": {"v": "x", "w": "y"}},
            "free": {"anything": {"deep": 1}, "known": {"k": "a", "drop": 1}},
            "template": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "junk": 1},
                "spec": {},
                "odd": 1,
            },
        },
        "status": {"phase": "Ready", "extra": 1},
    }


def test_unknown_fields_are_reported_with_real_paths() -> None:
    assert NESTED.unknown_fields(nested_object()) == [
        "metadata.bogus",
        "metadata.ownerReferences[0].extra",
        "spec.foo",
        "spec.items[0].bar",
        "spec.items[0].sub[0].y",
        "spec.config.c1.w",
        "spec.free.known.drop",
        "spec.template.metadata.junk",
        "spec.template.odd",
        "status.extra",
    ]


def test_unknown_fields_does_not_modify_the_object() -> None:
    obj = nested_object()
    before = copy.deepcopy(obj)
    NESTED.unknown_fields(obj)
    assert obj == before


def test_prune_removes_unknown_fields_and_keeps_preserved_ones() -> None:
    obj = nested_object()
    NESTED.prune(obj)
    assert obj["metadata"] == {
        "name": "w",
        "labels": {"a": "b"},
        "ownerReferences": [{"uid": "u", "name": "o"}],
    }
    assert obj["spec"]["items"] == [{"name": "a", "sub": [{"x": 1}]}, {"name": "b"}]
    assert obj["spec"]["labels"] == {"k": "v"}
    assert obj["spec"]["config"] == {"c1": {"v": "x"}}
    assert obj["spec"]["free"] == {"anything": {"deep": 1}, "known": {"k": "a"}}
    assert obj["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {},
    }
    assert obj["status"] == {"phase": "Ready"}
    assert "foo" not in obj["spec"]
    assert NESTED.unknown_fields(obj) == []


def test_preserve_unknown_fields_at_root_keeps_everything_unknown() -> None:
    schema = StructuralSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    obj = {"apiVersion": "g/v1", "kind": "W", "metadata": {"name": "a"}, "spec": {"x": {"y": 1}}, "top": 1}
    assert schema.unknown_fields(obj) == []
    schema.prune(obj)
    assert obj["spec"] == {"x": {"y": 1}} and obj["top"] == 1


def test_root_metadata_keeps_only_object_meta_fields_even_when_root_preserves_unknown() -> None:
    schema = StructuralSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    obj = {"metadata": {"name": "a", "namespace": "n", "finalizers": ["f"], "nope": 1}}
    assert schema.unknown_fields(obj) == ["metadata.nope"]
    schema.prune(obj)
    assert obj["metadata"] == {"name": "a", "namespace": "n", "finalizers": ["f"]}


def test_object_without_properties_knows_no_fields() -> None:
    schema = spec_schema(empty={"type": "object"})
    assert schema.unknown_fields({"spec": {"empty": {"a": 1, "b": {"c": 2}}}}) == [
        "spec.empty.a",
        "spec.empty.b",
    ]


def test_null_schema_ok_empty_root_prunes_everything_but_meta() -> None:
    schema = StructuralSchema({"type": "object"})
    obj = {"apiVersion": "v", "kind": "K", "metadata": {"name": "n"}, "spec": {"a": 1}}
    assert schema.unknown_fields(obj) == ["spec"]
    schema.prune(obj)
    assert obj == {"apiVersion": "v", "kind": "K", "metadata": {"name": "n"}}


# --------------------------------------------------------------------------------------------- defaulting

DEFAULTS = StructuralSchema(
    {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "default": {},
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "mode": {"type": "string", "default": "auto", "nullable": True},
                    "strategy": {
                        "type": "object",
                        "default": {"type": "Rolling", "opts": {"max": 1}},
                        "properties": {
                            "type": {"type": "string"},
                            "opts": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    },
                    "containers": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"pull": {"type": "string", "default": "IfNotPresent"}},
                        },
                    },
                    "pools": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"size": {"type": "integer", "default": 3}},
                        },
                    },
                },
            }
        },
    }
)


def test_defaults_fill_absent_fields_recursively_into_arrays_and_maps() -> None:
    obj: dict[str, Any] = {"spec": {"containers": [{}, {"pull": "Always"}], "pools": {"a": {}, "b": {"size": 9}}}}
    DEFAULTS.apply_defaults(obj)
    assert obj["spec"] == {
        "containers": [{"pull": "IfNotPresent"}, {"pull": "Always"}],
        "pools": {"a": {"size": 3}, "b": {"size": 9}},
        "replicas": 1,
        "mode": "auto",
        "strategy": {"type": "Rolling", "opts": {"max": 1}},
    }


def test_defaults_do_not_override_present_values() -> None:
    obj: dict[str, Any] = {"spec": {"replicas": 5, "mode": "manual", "strategy": {"type": "Recreate"}}}
    DEFAULTS.apply_defaults(obj)
    assert obj["spec"]["replicas"] == 5
    assert obj["spec"]["mode"] == "manual"
    assert obj["spec"]["strategy"] == {"type": "Recreate"}


def test_defaults_apply_to_non_nullable_nulls_but_not_nullable_ones() -> None:
    obj: dict[str, Any] = {"spec": {"replicas": None, "mode": None}}
    DEFAULTS.apply_defaults(obj)
    assert obj["spec"]["replicas"] == 1
    assert obj["spec"]["mode"] is None


def test_defaults_apply_at_the_root_and_are_deep_copies() -> None:
    first: dict[str, Any] = {}
    second: dict[str, Any] = {}
    DEFAULTS.apply_defaults(first)
    DEFAULTS.apply_defaults(second)
    assert first["spec"]["strategy"] == {"type": "Rolling", "opts": {"max": 1}}
    first["spec"]["strategy"]["opts"]["max"] = 99
    assert second["spec"]["strategy"]["opts"]["max"] == 1
    assert DEFAULTS.raw["properties"]["spec"]["properties"]["strategy"]["default"]["opts"]["max"] == 1


def test_drop_nulls_removes_non_nullable_nulls_without_defaults() -> None:
    schema = spec_schema(
        a={"type": "string"}, b={"type": "string", "nullable": True}, c={"type": "string", "default": "x"}
    )
    obj: dict[str, Any] = {"spec": {"a": None, "b": None, "c": None, "unknown": None}}
    schema.drop_nulls(obj)
    assert obj == {"spec": {"b": None, "c": None, "unknown": None}}


def test_coerce_defaults_prunes_and_returns_unknown_fields() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "x", "zz": 1}, "spec": {"replicas": None, "bogus": 1}}
    unknown = DEFAULTS.coerce(obj)
    assert unknown == ["metadata.zz", "spec.bogus"]
    assert obj["spec"]["replicas"] == 1 and "bogus" not in obj["spec"]
    assert obj["metadata"] == {"name": "x"}


# ----------------------------------------------------------------------------------- hypothesis property

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(
            st.sampled_from(["name", "sub", "x", "y", "v", "k", "known", "kind", "metadata"]),
            children,
            max_size=4,
        ),
    ),
    max_leaves=12,
)
random_objects = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": json_values,
        "metadata": st.dictionaries(st.sampled_from(["name", "labels", "bogus", "ownerReferences"]), json_values),
        "spec": st.dictionaries(
            st.sampled_from(["items", "labels", "config", "free", "template", "foo"]), json_values, max_size=5
        ),
        "status": json_values,
        "other": json_values,
    },
)


@settings(max_examples=300, deadline=None)
@given(random_objects)
def test_prune_leaves_nothing_unknown_and_is_idempotent(obj: dict[str, Any]) -> None:
    NESTED.prune(obj)
    assert NESTED.unknown_fields(obj) == []
    once = copy.deepcopy(obj)
    NESTED.prune(obj)
    assert obj == once


@settings(max_examples=200, deadline=None)
@given(random_objects)
def test_unknown_fields_are_exactly_what_prune_removes(obj: dict[str, Any]) -> None:
    reported = NESTED.unknown_fields(obj)
    coerced = copy.deepcopy(obj)
    assert NESTED.coerce(coerced) == reported


# ----------------------------------------------------------------------------------------- go rendering


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (10.0, "10"),
        (1.5, "1.5"),
        (123456.0, "123456"),
        (1e6, "1e+06"),
        (1234567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (-3.0, "-3"),
        (0.0, "0"),
    ],
)
def test_go_float_matches_go_percent_v(value: float, text: str) -> None:
    assert go_float(value) == text


# ------------------------------------------------------------------------------------------------- CRDs


def valid_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "singular": "widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                },
            ],
        },
    }


def crd_errors(crd: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_crd(crd)]


def test_valid_crd_has_no_errors() -> None:
    assert crd_errors(valid_crd()) == []


def test_crd_name_must_be_plural_dot_group() -> None:
    crd = valid_crd()
    crd["metadata"]["name"] = "gadgets.example.com"
    assert crd_errors(crd) == [
        'metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group'
    ]


def test_crd_group_needs_a_dot_and_is_required() -> None:
    crd = valid_crd()
    crd["spec"]["group"] = "example"
    crd["metadata"]["name"] = "widgets.example"
    assert crd_errors(crd) == ['spec.group: Invalid value: "example": should be a domain with at least one dot']
    crd["spec"]["group"] = ""
    crd["metadata"]["name"] = "widgets."
    assert "spec.group: Required value" in crd_errors(crd)


def test_crd_scope_is_required_and_enumerated() -> None:
    crd = valid_crd()
    del crd["spec"]["scope"]
    assert crd_errors(crd) == ["spec.scope: Required value"]
    crd["spec"]["scope"] = "Global"
    assert crd_errors(crd) == ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']


def test_crd_needs_exactly_one_storage_version() -> None:
    crd = valid_crd()
    crd["spec"]["versions"].append(
        {"name": "v2", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object"}}}
    )
    [error] = validate_crd(crd)
    assert (error.field, error.detail) == (
        "spec.versions",
        "must have exactly one version marked as storage version",
    )
    assert str(error).startswith("spec.versions: Invalid value: [")


def test_crd_versions_are_required_and_unique() -> None:
    crd = valid_crd()
    crd["spec"]["versions"] = []
    assert [e.field for e in validate_crd(crd)] == ["spec.versions", "spec.versions"]
    crd = valid_crd()
    crd["spec"]["versions"].append(dict(crd["spec"]["versions"][0], storage=False))
    assert [e.detail for e in validate_crd(crd)] == ["must contain unique version names"]


def test_crd_version_needs_object_schema() -> None:
    crd = valid_crd()
    del crd["spec"]["versions"][0]["schema"]
    assert crd_errors(crd) == ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
    crd["spec"]["versions"][0]["schema"] = {"openAPIV3Schema": {"type": "string"}}
    assert crd_errors(crd) == [
        'spec.versions[0].schema.openAPIV3Schema.type: Invalid value: "string": must be object at the root'
    ]


def test_crd_names_follow_dns_label_rules() -> None:
    crd = valid_crd()
    crd["spec"]["names"]["plural"] = "Widgets"
    crd["metadata"]["name"] = "Widgets.example.com"
    errors = validate_crd(crd)
    plural_error = next(e for e in errors if e.field == "spec.names.plural")
    assert plural_error.detail.startswith("a DNS-1035 label must consist of lower case alphanumeric characters")
    assert "(e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')" in str(
        plural_error
    )
    assert any(e.field == "metadata.name" and "RFC 1123 subdomain" in e.detail for e in errors)


def test_crd_missing_names_are_required() -> None:
    crd = valid_crd()
    crd["spec"]["names"] = {}
    crd["metadata"]["name"] = ".example.com"
    fields = [str(e) for e in validate_crd(crd) if e.field.startswith("spec.names")]
    assert fields == [
        "spec.names.plural: Required value",
        "spec.names.singular: Required value",
        "spec.names.kind: Required value",
        "spec.names.listKind: Required value",
    ]


def test_default_crd_fills_singular_list_kind_and_conversion_but_not_scope() -> None:
    crd = valid_crd()
    crd["spec"]["names"] = {"plural": "widgets", "kind": "Widget"}
    del crd["spec"]["scope"]
    default_crd(crd)
    assert crd["spec"]["names"] == {
        "plural": "widgets",
        "kind": "Widget",
        "singular": "widget",
        "listKind": "WidgetList",
    }
    assert crd["spec"]["conversion"] == {"strategy": "None"}
    assert "scope" not in crd["spec"]


def test_default_crd_keeps_given_names() -> None:
    crd = valid_crd()
    crd["spec"]["names"]["singular"] = "wdg"
    crd["spec"]["conversion"] = {
        "strategy": "Webhook",
        "webhook": {"clientConfig": {"service": {"name": "s"}}},
    }
    default_crd(crd)
    assert crd["spec"]["names"]["singular"] == "wdg"
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["port"] == 443
