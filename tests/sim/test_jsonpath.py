"""kubectl-style JSONPath: every construct, filters on conditions, missing fields, invalid expressions."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.jsonpath import JSONPathError, compile_jsonpath

DOC: dict[str, Any] = {
    "kind": "Widget",
    "metadata": {
        "name": "w1",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"example.com/owner": "team-a", "plain": "x"},
    },
    "spec": {"replicas": 3, "ports": [80, 443, 8080, 9090], "empty": None},
    "status": {
        "conditions": [
            {"type": "Ready", "status": "True", "priority": 2, "ratio": 0.5},
            {"type": "Synced", "status": "False", "priority": 7, "reason": "Backoff"},
            {"type": "Degraded", "status": "False", "priority": 7, "observed": True},
        ],
        "nested": {"deeper": {"type": "inner"}},
    },
}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("{.metadata.name}", ["w1"]),
        (".metadata.name", ["w1"]),
        ("$.metadata.name", ["w1"]),
        ("metadata.name", ["w1"]),
        ("{$.spec.replicas}", [3]),
        ("{.}", [DOC]),
        ("$", [DOC]),
        (".metadata.annotations['example.com/owner']", ["team-a"]),
        ('.metadata.annotations["example.com/owner"]', ["team-a"]),
        (r".metadata.annotations.example\.com/owner", ["team-a"]),
        (".spec.ports[0]", [80]),
        (".spec.ports[-1]", [9090]),
        (".spec.ports[-4]", [80]),
        (".spec.ports[1:3]", [443, 8080]),
        (".spec.ports[2:]", [8080, 9090]),
        (".spec.ports[:2]", [80, 443]),
        (".spec.ports[::2]", [80, 8080]),
        (".spec.ports[-2:]", [8080, 9090]),
        (".spec.ports[*]", [80, 443, 8080, 9090]),
        (".metadata.labels[*]", ["web", "front"]),
        (".metadata.labels.*", ["web", "front"]),
        (".status.conditions[*].type", ["Ready", "Synced", "Degraded"]),
        ("..type", ["Ready", "Synced", "Degraded", "inner"]),
        ("$..reason", ["Backoff"]),
        (".status..deeper.type", ["inner"]),
        (".spec.ports[0,2]", [80, 8080]),
        (".metadata['name','kind']", ["w1"]),
        ("['kind','metadata']['name']", ["w1"]),
        (".status.conditions[0]['type','status']", ["Ready", "True"]),
        (".status.conditions[*]['type','status']", ["Ready", "Synced", "Degraded", "True", "False", "False"]),
        (".spec.empty", [None]),
    ],
)
def test_constructs_find_every_match(expression: str, expected: list[Any]) -> None:
    assert compile_jsonpath(expression).find(DOC) == expected


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        ("{.status.conditions[?(@.type=='Synced')].reason}", ["Backoff"]),
        ('.status.conditions[?(@.status!="True")].type', ["Synced", "Degraded"]),
        (".status.conditions[?(@.priority>2)].type", ["Synced", "Degraded"]),
        (".status.conditions[?(@.priority>=7)].type", ["Synced", "Degraded"]),
        (".status.conditions[?(@.priority<7)].type", ["Ready"]),
        (".status.conditions[?(@.priority<=2)].type", ["Ready"]),
        (".status.conditions[?(@.priority == 7)].type", ["Synced", "Degraded"]),
        (".status.conditions[?(@.ratio==0.5)].type", ["Ready"]),
        (".status.conditions[?(@.ratio<1)].type", ["Ready"]),
        ('.status.conditions[?(@.type<"S")].type', ["Ready", "Degraded"]),
        (".status.conditions[?(@.observed==true)].type", ["Degraded"]),
        (".status.conditions[?(@.reason)].type", ["Synced"]),
        ("$.status.conditions[?(@.priority==@.priority)].type", ["Ready", "Synced", "Degraded"]),
        # A string never equals a number, and ordering never applies to booleans.
        ('.status.conditions[?(@.priority=="7")].type', []),
        (".status.conditions[?(@.observed>false)].type", []),
        ('.status.conditions[?(@.type=="Missing")].status', []),
    ],
)
def test_filters_select_matching_elements(expression: str, expected: list[Any]) -> None:
    assert compile_jsonpath(expression).find(DOC) == expected


@pytest.mark.parametrize(
    "expression",
    [
        ".metadata.missing",
        ".nope.deeper.still",
        ".spec.ports[10]",
        ".spec.ports[-5]",
        ".spec.replicas[0]",  # indexing a number
        ".spec.ports.name",  # a field of a list
        ".metadata.labels[0]",  # an index into a map
        ".spec.replicas[?(@.x)]",  # a filter over a non-list
        ".spec.empty.below",
        "..missing",
        ".metadata['absent','also-absent']",
    ],
)
def test_missing_paths_give_no_result(expression: str) -> None:
    assert compile_jsonpath(expression).find(DOC) == []


@pytest.mark.parametrize(
    ("expression", "reason"),
    [
        (".a[", "unterminated array"),
        ("{.a", "unclosed action"),
        (".a}", "unexpected '}'"),
        ("{.a}{.b}", "only one"),
        (".a]", "unrecognized character"),
        (".a[1:2:3:4]", "invalid array index"),
        (".a[1x]", "invalid array index"),
        (".a[@]", "invalid array index"),
        (".a[]", "empty brackets"),
        (".a[::0]", "slice step must be positive"),
        ('.a[?(@.b=="x"', "unterminated filter"),
        (".a[?(@.b==1)", "expected ']'"),
        (".a[?(@.b=<1)]", "unsupported filter operator"),
        (".a[?(b==1)]", "must be a path"),
        (".a[?()]", "empty filter"),
        ("....a", "invalid multiple recursive descent"),
        (".a..", "must be followed"),
        (".a['b]", "unterminated"),
        (".a.b c", "unrecognized character"),
    ],
)
def test_invalid_expressions_raise_clear_errors(expression: str, reason: str) -> None:
    with pytest.raises(JSONPathError, match="invalid JSONPath") as caught:
        compile_jsonpath(expression)
    assert reason in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_compiled_expressions_are_cached() -> None:
    assert compile_jsonpath(".status.conditions[0].type") is compile_jsonpath(".status.conditions[0].type")


def test_first_returns_default_when_nothing_matches() -> None:
    path = compile_jsonpath(".metadata.labels.app")
    assert path.first(DOC) == "web"
    assert compile_jsonpath(".metadata.labels.none").first(DOC, "fallback") == "fallback"
