"""Label and field selectors: grammar, validation messages and matching, as k8s.io/apimachinery does them."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.sim.apiserver.selectors import (
    SelectorError,
    label_selector_from_object,
    parse_field_selector,
    parse_label_selector,
)

QNAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)

LABELS = {"app": "web", "tier": "front", "n": "5", "empty": ""}

# (selector, labels, matches?)
LABEL_MATCHES: list[tuple[str, dict[str, str] | None, bool]] = [
    ("app", LABELS, True),
    ("missing", LABELS, False),
    ("!missing", LABELS, True),
    ("!app", LABELS, False),
    ("app=web", LABELS, True),
    ("app=db", LABELS, False),
    ("app==web", LABELS, True),
    ("app!=db", LABELS, True),
    ("app!=web", LABELS, False),
    ("missing!=x", LABELS, True),  # != also matches objects without the key
    ("app in (db,web)", LABELS, True),
    ("app in (db,cache)", LABELS, False),
    ("missing in (a)", LABELS, False),
    ("app notin (db)", LABELS, True),
    ("app notin (db,web)", LABELS, False),
    ("missing notin (a)", LABELS, True),  # notin matches absent keys
    ("n>4", LABELS, True),
    ("n>5", LABELS, False),
    ("n<6", LABELS, True),
    ("n<5", LABELS, False),
    ("app>1", LABELS, False),  # a non-integer label value never satisfies gt/lt
    ("missing>1", LABELS, False),
    ("empty=", LABELS, True),  # `k=` means the empty value, and the key must exist
    ("missing=", LABELS, False),
    ("empty in ()", LABELS, True),
    ("app=web,tier=front", LABELS, True),
    ("app=web,tier=back", LABELS, False),
    ("  app = web ,  tier  in ( front , back ) ", LABELS, True),
    ("app=web,!missing,n>1,tier notin (x)", LABELS, True),
    ("in=notin", {"in": "notin"}, True),  # keywords are plain identifiers where a key or value is expected
    ("example.com/app=web", {"example.com/app": "web"}, True),
    ("app", None, False),
    ("!app", None, True),
    ("app!=web", None, True),
    ("app", {}, False),
]


@pytest.mark.parametrize(("selector", "labels", "expected"), LABEL_MATCHES)
def test_label_selector_matches_as_the_grammar_says(
    selector: str, labels: dict[str, str] | None, expected: bool
) -> None:
    parsed = parse_label_selector(selector)
    assert not parsed.empty
    assert parsed.matches(labels) is expected


@pytest.mark.parametrize("selector", ["", "   ", "\t\n"])
def test_empty_label_selector_matches_everything(selector: str) -> None:
    parsed = parse_label_selector(selector)
    assert parsed.empty
    assert parsed.matches(None)
    assert parsed.matches({"any": "thing"})


def test_label_selector_is_an_and_of_all_requirements_in_any_order() -> None:
    parsed = parse_label_selector("tier=front,app=web,n>3")
    assert sorted(r.key for r in parsed.requirements) == ["app", "n", "tier"]
    assert parsed.matches(LABELS)
    assert not parsed.matches({**LABELS, "n": "1"})


def test_in_values_are_kept_as_a_sorted_set() -> None:
    (requirement,) = parse_label_selector("app in (b,a,b)").requirements
    assert requirement.operator == "in"
    assert requirement.values == ("a", "b")


LABEL_ERRORS: list[tuple[str, str]] = [
    ("app web", "unable to parse requirement: found 'web', expected: in, notin, =, ==, !=, gt, lt"),
    ("app=web db", "found 'db', expected: ',' or 'end of string'"),
    ("!app=web", "found '=', expected: ',' or 'end of string'"),
    ("app,", "found '', expected: identifier after ','"),
    ("app,,b", "found ',', expected: identifier after ','"),
    (",app", "found ',', expected: !, identifier, or 'end of string'"),
    ("(", "found '(', expected: !, identifier, or 'end of string'"),
    ("!", "unable to parse requirement: found '', expected: identifier"),
    ("app in web", "unable to parse requirement: found 'web' expected: '('"),
    ("app in (a b)", "unable to parse requirement: found 'b', expected: ',' or ')'"),
    ("app in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
    ("app in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
    ("app=(", "unable to parse requirement: found '(', expected: identifier"),
    (
        "app>x",
        'unable to parse requirement: values[0]: Invalid value: "x": '
        "for 'Gt', 'Lt' operators, the value must be an integer",
    ),
    ("app:web", f'unable to parse requirement: <nil>: Invalid value: "app:web": name part {QNAME_RULE}'),
    (
        "a/b/c=x",
        f'unable to parse requirement: <nil>: Invalid value: "a/b/c": a qualified name {QNAME_RULE} with an '
        "optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ),
    (
        "Example.com/app",
        'unable to parse requirement: <nil>: Invalid value: "Example.com/app": prefix part a lowercase RFC 1123 '
        "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
    ),
    ("/app", 'unable to parse requirement: <nil>: Invalid value: "/app": prefix part must be non-empty'),
    (
        "k" * 64,
        f'unable to parse requirement: <nil>: Invalid value: "{"k" * 64}": name part must be no more than 63 '
        "characters",
    ),
    (
        "app=" + "v" * 64,
        f'unable to parse requirement: values[0][app]: Invalid value: "{"v" * 64}": must be no more than 63 characters',
    ),
    (
        "app=-bad",
        'unable to parse requirement: values[0][app]: Invalid value: "-bad": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
]


@pytest.mark.parametrize(("selector", "message"), LABEL_ERRORS)
def test_label_selector_errors_carry_the_real_servers_text(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_label_selector(selector)
    assert str(caught.value) == message
    assert caught.value.message == message
    assert isinstance(caught.value, ValueError)


# --- metav1.LabelSelector objects ----------------------------------------------------------------------------

OBJECT_MATCHES: list[tuple[dict[str, Any] | None, dict[str, str] | None, bool]] = [
    (None, {"a": "1"}, True),
    ({}, None, True),
    ({"matchLabels": {"app": "web"}}, LABELS, True),
    ({"matchLabels": {"app": "db"}}, LABELS, False),
    ({"matchLabels": {"app": "web", "tier": "front"}}, LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}, LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, LABELS, False),
    ({"matchExpressions": [{"key": "missing", "operator": "NotIn", "values": ["web"]}]}, LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, LABELS, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, LABELS, False),
    ({"matchExpressions": [{"key": "x", "operator": "DoesNotExist", "values": []}]}, None, True),
    (
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]},
        LABELS,
        False,
    ),
]


@pytest.mark.parametrize(("selector", "labels", "expected"), OBJECT_MATCHES)
def test_label_selector_objects_match_like_label_selector_as_selector(
    selector: dict[str, Any] | None, labels: dict[str, str] | None, expected: bool
) -> None:
    assert label_selector_from_object(selector).matches(labels) is expected


OBJECT_ERRORS: list[tuple[dict[str, Any], str]] = [
    (
        {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
        "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
    ),
    (
        {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
        'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
    ),
    (
        {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
        '"Gt" is not a valid label selector operator',
    ),
    ({"matchLabels": {"a b": "x"}}, f'key: Invalid value: "a b": name part {QNAME_RULE}'),
    (
        {"matchLabels": {"a": "x" * 64}},
        f'values[0][a]: Invalid value: "{"x" * 64}": must be no more than 63 characters',
    ),
]


@pytest.mark.parametrize(("selector", "message"), OBJECT_ERRORS)
def test_invalid_label_selector_objects_raise_selector_error(selector: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        label_selector_from_object(selector)
    assert str(caught.value) == message


# --- field selectors -----------------------------------------------------------------------------------------

SUPPORTED = {"metadata.name", "metadata.namespace", "involvedObject.kind", "reason", "type", "source", "spec.x"}

POD = {"kind": "Pod", "metadata": {"name": "p1", "namespace": "ns1"}, "spec": {"x": 3}}
EVENT = {
    "kind": "Event",
    "apiVersion": "v1",
    "metadata": {"name": "e1", "namespace": "ns1"},
    "involvedObject": {"kind": "Widget", "name": "w1"},
    "reason": "Started",
    "type": "Normal",
    "source": {"component": "kubelet", "host": "n1"},
}

FIELD_MATCHES: list[tuple[str, dict[str, Any], bool]] = [
    ("metadata.name=p1", POD, True),
    ("metadata.name==p1", POD, True),
    ("metadata.name=p2", POD, False),
    ("metadata.name!=p2", POD, True),
    ("metadata.name!=p1", POD, False),
    ("metadata.name=p1,metadata.namespace=ns1", POD, True),
    ("metadata.name=p1,metadata.namespace=ns2", POD, False),
    ("metadata.namespace=", {"metadata": {"name": "c"}}, True),  # missing values compare as ""
    ("reason!=", POD, False),
    ("spec.x=3", POD, True),  # non-string values compare by their text
    ("involvedObject.kind=Widget", EVENT, True),
    ("involvedObject.kind=Pod", EVENT, False),
    ("reason=Started,type=Normal", EVENT, True),
    ("source=kubelet", EVENT, True),  # core Events: `source` is source.component
    ("source=kubelet", {"kind": "Thing", "source": {"component": "kubelet"}}, False),
    ("metadata.name=a\\,b", {"metadata": {"name": "a,b"}}, True),
    ("metadata.name=a\\=b", {"metadata": {"name": "a=b"}}, True),
    ("metadata.name=a\\\\b", {"metadata": {"name": "a\\b"}}, True),
    ("metadata.name=p1,", POD, True),  # empty terms are skipped
]


@pytest.mark.parametrize(("selector", "obj", "expected"), FIELD_MATCHES)
def test_field_selector_matches_values_taken_from_the_object(
    selector: str, obj: dict[str, Any], expected: bool
) -> None:
    parsed = parse_field_selector(selector, SUPPORTED)
    assert not parsed.empty
    assert parsed.matches(obj) is expected


def test_empty_field_selector_matches_everything() -> None:
    parsed = parse_field_selector("", ["metadata.name"])
    assert parsed.empty
    assert parsed.matches({})
    assert parsed.requirement_for("metadata.name") is None


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("metadata.name=x", "x"),
        ("metadata.name==x,metadata.namespace=y", "x"),
        ("metadata.name!=x", None),
        ("metadata.namespace=y", None),
        ("metadata.name=a\\,b", "a,b"),
    ],
)
def test_requirement_for_returns_the_equality_value(selector: str, expected: str | None) -> None:
    assert parse_field_selector(selector, SUPPORTED).requirement_for("metadata.name") == expected


FIELD_ERRORS: list[tuple[str, str]] = [
    ("status.phase=Running", "field label not supported: status.phase"),
    ("=x", "field label not supported: "),
    (" metadata.name=x", "field label not supported:  metadata.name"),  # no whitespace trimming in fields
    ("z=1,b=2", "field label not supported: b"),  # terms are sorted before they are checked
    ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
    ("metadata.name=x,bogus", "invalid selector: 'metadata.name=x,bogus'; can't understand 'bogus'"),
    ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61"),
    ("metadata.name!==b", "invalid field selector: unescaped character in value: 61"),
    ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x"),
    ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\"),
]


@pytest.mark.parametrize(("selector", "message"), FIELD_ERRORS)
def test_field_selector_errors_carry_the_real_servers_text(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_field_selector(selector, SUPPORTED)
    assert str(caught.value) == message


def test_field_selector_accepts_any_iterable_of_supported_labels() -> None:
    parsed = parse_field_selector("metadata.name=p1", iter(["metadata.name"]))
    assert parsed.matches(POD)
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.namespace=ns1", ("metadata.name",))
