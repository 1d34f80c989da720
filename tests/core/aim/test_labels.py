"""Label patterns (the spec's table, `*` never crossing `/`, `?`, classes, escapes, malformed patterns) and
propagation (what propagates, the child's own keys, removal of keys we propagated, Jobs' pod templates)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.labels import (
    PROPAGATED_LABELS_ANNOTATION,
    matches,
    matches_any,
    propagate,
    propagate_to_job,
    propagate_to_object,
    read_propagated_keys,
    should_propagate,
    validate_pattern,
)


@pytest.mark.parametrize(
    ("pattern", "key", "expected"),
    [
        # the spec's table
        ("org.example/team", "org.example/team", True),
        ("org.example/team", "org.example/team2", False),
        ("org.example/team", "org-example/team", False),
        ("org.example/*", "org.example/team", True),
        ("org.example/*", "org.example/cost-center", True),
        ("org.example/*", "org.example/", True),
        ("org.example/*", "other.example/team", False),
        ("compliance.*/severity", "compliance.sec/severity", True),
        ("compliance.*/severity", "compliance.audit/severity", True),
        ("compliance.*/severity", "compliance.a.b/severity", True),
        ("compliance.*/severity", "compliance.sec/level", False),
        # `*` never crosses `/`
        ("*", "org.example/team", False),
        ("*", "team", True),
        ("org.example/*", "org.example/a/b", False),
        ("*/team", "a/b/team", False),
        # upstream's matchesAnyPattern table
        ("team-alpha", "team-alpha", True),
        ("team-*", "team-alpha", True),
        ("*-team", "alpha-team", True),
        ("my-*-label", "my-team-label", True),
        ("team-*", "other-label", False),
        # `?` is one character except `/`
        ("team-?", "team-1", True),
        ("team-?", "team-12", False),
        ("team-?", "team-", False),
        ("a?b", "a/b", False),
        # classes, ranges, negation
        ("team-[ab]", "team-a", True),
        ("team-[ab]", "team-c", False),
        ("team-[a-c]x", "team-bx", True),
        ("team-[!a-c]", "team-d", True),
        ("team-[!a-c]", "team-b", False),
        ("team-[^a-c]", "team-d", True),
        ("team-[^a-c]", "team-a", False),
        ("v[0-9][0-9]", "v42", True),
        ("a[/]b", "a/b", True),  # as in Go, a class may match `/`
        ("[z-a]", "m", False),  # a reversed range contains nothing
        ("[!z-a]", "m", True),
        # escapes
        (r"team\*", "team*", True),
        (r"team\*", "team-a", False),
        (r"a\?", "a?", True),
        (r"[\]]", "]", True),
        # the whole key must match
        ("team", "team-alpha", False),
        ("team-*", "my-team-alpha", False),
    ],
)
def test_pattern_matching(pattern: str, key: str, expected: bool) -> None:
    assert validate_pattern(pattern) is None
    assert matches(pattern, key) is expected


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("[invalid", "pattern '[invalid' has an unclosed character class at offset 0"),
        ("team-[", "pattern 'team-[' has an unclosed character class at offset 5"),
        ("[]", "pattern '[]' has an empty character class at offset 0"),
        ("[!]", "pattern '[!]' has an empty character class at offset 0"),
        ("[a-]", "pattern '[a-]' has a malformed range in the character class at offset 0"),
        ("[-a]", "pattern '[-a]' has a malformed range in the character class at offset 0"),
        ("team\\", "pattern 'team\\\\' ends with an unfinished escape '\\'"),
        ("", "pattern is empty"),
    ],
)
def test_malformed_patterns(pattern: str, reason: str) -> None:
    assert validate_pattern(pattern) == reason
    assert not matches(pattern, pattern)


def test_malformed_patterns_are_skipped_when_matching() -> None:
    assert matches_any(["[invalid", "test-*"], "test-label")
    assert not matches_any(["[invalid"], "[invalid")
    assert not matches_any([], "anything")
    assert matches_any(["team-*", "org-*"], "org-x")


ENABLED = {"labelPropagation": {"enabled": True, "match": ["org.example/*", "team"]}}


@pytest.mark.parametrize(
    ("key", "config", "expected"),
    [
        ("aim.eai.amd.com/service", {}, True),
        ("aim.eai.amd.com/anything", {"labelPropagation": {"enabled": False}}, True),
        ("org.example/cost-center", ENABLED, True),
        ("team", ENABLED, True),
        ("env", ENABLED, False),
        ("org.example/cost-center", {"labelPropagation": {"enabled": False, "match": ["org.example/*"]}}, False),
        ("org.example/cost-center", {"labelPropagation": {"match": ["org.example/*"]}}, False),
        ("org.example/cost-center", {"labelPropagation": {"enabled": True}}, False),
        ("org.example/cost-center", {"labelPropagation": {"enabled": True, "match": []}}, False),
        ("org.example/cost-center", {}, False),
    ],
)
def test_should_propagate(key: str, config: dict[str, Any], expected: bool) -> None:
    assert should_propagate(key, config) is expected


def test_spec_cost_tracking_example() -> None:
    config = {
        "labelPropagation": {
            "enabled": True,
            "match": ["org.example/cost-center", "org.example/department", "org.example/project"],
        }
    }
    parent = {
        "org.example/cost-center": "eng-ml",
        "org.example/department": "engineering",
        "org.example/project": "chatbot-v2",
        "app": "chat",
    }
    labels, keys = propagate(parent, {}, config, ())
    assert labels == {k: v for k, v in parent.items() if k != "app"}
    assert keys == ("org.example/cost-center", "org.example/department", "org.example/project")


def test_the_childs_own_labels_are_never_overwritten() -> None:
    labels, keys = propagate({"team": "alpha", "env": "x"}, {"team": "beta", "own": "1"}, ENABLED, ())
    assert labels == {"team": "beta", "own": "1"}
    assert keys == ()


def test_a_key_we_propagated_follows_the_parent() -> None:
    labels, keys = propagate({"team": "gamma"}, {"team": "alpha"}, ENABLED, ["team"])
    assert labels == {"team": "gamma"}
    assert keys == ("team",)


def test_keys_we_propagated_are_removed_when_the_parent_drops_them() -> None:
    labels, keys = propagate(
        {"org.example/a": "1"}, {"org.example/a": "1", "team": "alpha", "own": "x"}, ENABLED, ["org.example/a", "team"]
    )
    assert labels == {"org.example/a": "1", "own": "x"}
    assert keys == ("org.example/a",)


def test_keys_we_propagated_are_removed_when_they_stop_matching() -> None:
    disabled = {"labelPropagation": {"enabled": False, "match": ["team"]}}
    labels, keys = propagate(
        {"team": "alpha", "aim.eai.amd.com/x": "y"},
        {"team": "alpha", "aim.eai.amd.com/x": "y"},
        disabled,
        ["team", "aim.eai.amd.com/x"],
    )
    assert labels == {"aim.eai.amd.com/x": "y"}
    assert keys == ("aim.eai.amd.com/x",)


def test_a_childs_own_key_is_not_removed_even_if_the_parent_drops_it() -> None:
    labels, _ = propagate({}, {"team": "beta"}, ENABLED, ())
    assert labels == {"team": "beta"}


def test_propagate_to_object_records_the_keys() -> None:
    parent = {"metadata": {"labels": {"team": "alpha", "org.example/b": "2", "org.example/a": "1", "env": "test"}}}
    child = {"kind": "InferenceService", "metadata": {"name": "svc", "labels": {"own": "x"}, "annotations": {"k": "v"}}}
    out = propagate_to_object(parent, child, ENABLED)
    assert out["metadata"]["labels"] == {"own": "x", "team": "alpha", "org.example/b": "2", "org.example/a": "1"}
    assert out["metadata"]["annotations"] == {
        "k": "v",
        PROPAGATED_LABELS_ANNOTATION: "org.example/a,org.example/b,team",
    }
    assert read_propagated_keys(out) == {"team", "org.example/a", "org.example/b"}
    assert child["metadata"]["labels"] == {"own": "x"}  # input untouched

    parent["metadata"]["labels"] = {"env": "test"}
    again = propagate_to_object(parent, out, ENABLED)
    assert again["metadata"]["labels"] == {"own": "x"}
    assert again["metadata"]["annotations"] == {"k": "v"}


def test_propagate_to_job_labels_the_pod_template_too() -> None:
    parent = {"metadata": {"labels": {"team": "alpha", "aim.eai.amd.com/service.name": "svc", "env": "test"}}}
    job = {
        "kind": "Job",
        "metadata": {"name": "dl", "labels": {"aim.eai.amd.com/component": "download"}},
        "spec": {"template": {"metadata": {"labels": {"team": "pod-own"}}, "spec": {"containers": []}}},
    }
    out = propagate_to_job(parent, job, ENABLED)
    assert out["metadata"]["labels"] == {
        "aim.eai.amd.com/component": "download",
        "team": "alpha",
        "aim.eai.amd.com/service.name": "svc",
    }
    assert out["spec"]["template"]["metadata"]["labels"] == {"team": "pod-own", "aim.eai.amd.com/service.name": "svc"}
    assert out["spec"]["template"]["metadata"]["annotations"] == {
        PROPAGATED_LABELS_ANNOTATION: "aim.eai.amd.com/service.name"
    }
    assert out["metadata"]["annotations"] == {PROPAGATED_LABELS_ANNOTATION: "aim.eai.amd.com/service.name,team"}
    assert out["spec"]["template"]["spec"] == {"containers": []}

    parent["metadata"]["labels"] = {}
    again = propagate_to_job(parent, out, ENABLED)
    assert again["metadata"]["labels"] == {"aim.eai.amd.com/component": "download"}
    assert again["spec"]["template"]["metadata"]["labels"] == {"team": "pod-own"}


def test_propagate_to_job_without_a_template_creates_its_labels() -> None:
    out = propagate_to_job({"metadata": {"labels": {"team": "a"}}}, {"metadata": {}}, ENABLED)
    assert out["spec"]["template"]["metadata"]["labels"] == {"team": "a"}


def test_read_propagated_keys_tolerates_spaces_and_absence() -> None:
    assert read_propagated_keys({"metadata": {"annotations": {PROPAGATED_LABELS_ANNOTATION: " a, b ,,"}}}) == {"a", "b"}
    assert read_propagated_keys({}) == frozenset()
