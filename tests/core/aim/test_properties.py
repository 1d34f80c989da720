"""Properties over random inputs: precedence holds for any set of layers, merges are associative, env merges keep
first-seen order, rendered paths are always well-formed, propagation never touches a child's own labels."""

from __future__ import annotations

import re
import string
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.core.aim.env import merge_env
from omectl.core.aim.labels import matches, propagate
from omectl.core.aim.layers import is_unset, merge_config, merge_layers
from omectl.core.aim.paths import PathTemplateError, render_path

UNSET = st.sampled_from([None, "", [], {}])
SCALAR_FIELDS = {
    ("routing", "enabled"): st.booleans(),
    ("routing", "pathTemplate"): st.sampled_from(["/a", "/b/{.metadata.name}", "/c"]),
    ("routing", "requestTimeout"): st.sampled_from(["30s", "60s", "0s"]),
    ("routing", "gatewayRef", "name"): st.sampled_from(["gw-a", "gw-b"]),
    ("routing", "gatewayRef", "namespace"): st.sampled_from(["gateways", "other"]),
    ("storage", "defaultStorageClassName"): st.sampled_from(["fast-nvme", "team-ssd"]),
    ("storage", "pvcHeadroomPercent"): st.integers(min_value=0, max_value=3),
    ("labelPropagation", "enabled"): st.booleans(),
}
ENV_NAMES = ["A", "B", "C", "D"]
ANNOTATION_KEYS = ["x", "example.com/y", "z"]


@st.composite
def layers(draw: st.DrawFn) -> dict[str, Any]:
    """A runtime-config spec setting a random subset of fields, some to unset values."""
    spec: dict[str, Any] = {}
    for path, values in SCALAR_FIELDS.items():
        choice = draw(st.sampled_from(["absent", "unset", "value"]))
        if choice == "absent":
            continue
        node = spec
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = draw(UNSET if choice == "unset" else values)
    if draw(st.booleans()):
        spec.setdefault("routing", {})["annotations"] = draw(
            st.dictionaries(st.sampled_from(ANNOTATION_KEYS), st.sampled_from(["", "1", "2"]), max_size=3)
        )
    if draw(st.booleans()):
        spec.setdefault("labelPropagation", {})["match"] = draw(
            st.lists(st.sampled_from(["a/*", "b", "c?"]), max_size=3)
        )
    if draw(st.booleans()):
        spec["env"] = draw(
            st.lists(
                st.builds(
                    lambda n, v: {"name": n, "value": v}, st.sampled_from(ENV_NAMES), st.sampled_from(["1", "2", ""])
                ),
                max_size=5,
            )
        )
    return spec


def dig(spec: dict[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = spec
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


@settings(max_examples=300, deadline=None)
@given(st.lists(layers(), max_size=5))
def test_precedence_holds_for_any_layers(specs: list[dict[str, Any]]) -> None:
    names = [f"layer-{i}" for i in range(len(specs))]
    merged = merge_layers(list(zip(names, specs, strict=True)))

    for path in SCALAR_FIELDS:
        setters = [i for i, spec in enumerate(specs) if not is_unset(dig(spec, path))]
        leaf = ".".join(path)
        if setters:
            assert dig(merged.config, path) == dig(specs[setters[-1]], path)
            assert merged.provenance[leaf] == names[setters[-1]]
        else:
            assert dig(merged.config, path) is None
            assert leaf not in merged.provenance

    for key in ANNOTATION_KEYS:
        setters = [i for i, spec in enumerate(specs) if (dig(spec, ("routing", "annotations")) or {}).get(key)]
        value = (dig(merged.config, ("routing", "annotations")) or {}).get(key)
        assert value == (specs[setters[-1]]["routing"]["annotations"][key] if setters else None)

    match_setters = [i for i, spec in enumerate(specs) if dig(spec, ("labelPropagation", "match"))]
    expected_match = specs[match_setters[-1]]["labelPropagation"]["match"] if match_setters else None
    assert dig(merged.config, ("labelPropagation", "match")) == expected_match

    order: list[str] = []
    values: dict[str, str] = {}
    for spec in specs:
        for entry in spec.get("env", []):
            if entry["name"] not in order:
                order.append(entry["name"])
            values[entry["name"]] = entry["value"]
    assert merged.config.get("env", []) == [{"name": n, "value": values[n]} for n in order]

    assert not any(_holds_unset(value) for value in merged.config.values())


def _holds_unset(value: Any) -> bool:
    if isinstance(value, dict):
        return not value or any(_holds_unset(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return value is None or value == ""


@settings(max_examples=200, deadline=None)
@given(layers(), layers(), layers())
def test_merging_is_associative(a: dict[str, Any], b: dict[str, Any], c: dict[str, Any]) -> None:
    assert merge_config(merge_config(a, b), c) == merge_config(a, merge_config(b, c))


@settings(max_examples=200, deadline=None)
@given(layers())
def test_a_layer_over_itself_changes_nothing(a: dict[str, Any]) -> None:
    once = merge_config({}, a)
    assert merge_config(once, a) == once


ENV_ENTRY = st.builds(lambda n, v: {"name": n, "value": v}, st.sampled_from(ENV_NAMES), st.text(max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(ENV_ENTRY, max_size=4), max_size=5))
def test_env_merge_highest_layer_wins_in_first_seen_order(env_layers: list[list[dict[str, Any]]]) -> None:
    merged = merge_env(*env_layers)
    first_seen = list(dict.fromkeys(e["name"] for layer in env_layers for e in layer))
    assert [e["name"] for e in merged] == first_seen
    for entry in merged:
        last = [e for layer in env_layers for e in layer if e["name"] == entry["name"]][-1]
        assert entry == last


SEGMENT_OK = re.compile(r"(?:[a-z0-9._~-]|%[0-9A-F]{2})+")


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60), st.text(alphabet="/ab", max_size=8))
def test_rendered_paths_are_well_formed(label: str, name: str, literal: str) -> None:
    service = {"metadata": {"name": name, "labels": {"team": label}}}
    try:
        path = render_path(literal + "/{.metadata.labels['team']}/x{.metadata.name}" + literal, service)
    except PathTemplateError as error:
        assert error.reason == "PathTemplateInvalid"
        return
    assert path.startswith("/")
    assert len(path) <= 200
    assert not path.endswith("/")
    segments = path[1:].split("/")
    assert all(SEGMENT_OK.fullmatch(segment) and segment not in (".", "..") for segment in segments)


LABEL_KEYS = st.sampled_from(["team", "env", "org.example/a", "org.example/b", "aim.eai.amd.com/x", "own"])
LABELS = st.dictionaries(LABEL_KEYS, st.sampled_from(["1", "2"]), max_size=6)


@settings(max_examples=300, deadline=None)
@given(LABELS, LABELS, st.sets(LABEL_KEYS), st.booleans())
def test_propagation_never_touches_the_childs_own_labels(
    parent: dict[str, str], child: dict[str, str], previous: set[str], enabled: bool
) -> None:
    config = {"labelPropagation": {"enabled": enabled, "match": ["org.example/*", "team"]}}
    labels, keys = propagate(parent, child, config, previous)
    own = {k: v for k, v in child.items() if k not in previous}
    assert {k: labels[k] for k in own} == own
    assert set(keys) <= set(parent)
    assert all(labels[k] == parent[k] for k in keys)
    assert all(k in labels for k in keys)
    assert all(k not in labels for k in previous - set(keys) - set(own))
    assert list(keys) == sorted(keys)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + "-._/*?[]!^\\", min_size=1, max_size=12))
def test_an_escaped_key_matches_exactly_itself(key: str) -> None:
    pattern = "".join("\\" + char for char in key)
    assert matches(pattern, key)
    assert not matches(pattern, key + "x")
