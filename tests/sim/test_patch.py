"""Merge, JSON and strategic merge patches: every rule, the server's errors, and that inputs stay untouched."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.patch import (
    MAX_JSON_PATCH_OPERATIONS,
    PATCH_CONTENT_TYPES,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
)

GENERIC_422 = "the server rejected our request due to an error in our request"


def test_patch_content_types_name_the_four_patch_types() -> None:
    assert set(PATCH_CONTENT_TYPES) == {
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    }


# --- RFC 7386 ------------------------------------------------------------------------------------------------

MERGE_CASES: list[tuple[str, Any, Any, Any]] = [
    ("adds a key", {"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ("replaces a value", {"a": 1}, {"a": 2}, {"a": 2}),
    ("null deletes", {"a": 1, "b": 2}, {"a": None}, {"b": 2}),
    ("null for a missing key is a no-op", {"a": 1}, {"x": None}, {"a": 1}),
    ("nested merge", {"s": {"a": 1, "b": {"c": 1}}}, {"s": {"b": {"d": 2}}}, {"s": {"a": 1, "b": {"c": 1, "d": 2}}}),
    ("nested null deletes", {"s": {"a": 1, "b": 2}}, {"s": {"a": None}}, {"s": {"b": 2}}),
    ("lists replace", {"l": [1, 2, 3]}, {"l": [4]}, {"l": [4]}),
    ("object replaces scalar", {"a": 1}, {"a": {"b": 1}}, {"a": {"b": 1}}),
    ("scalar replaces object", {"a": {"b": 1}}, {"a": "x"}, {"a": "x"}),
    ("nulls inside new objects are dropped", {}, {"a": {"b": None, "c": 1}}, {"a": {"c": 1}}),
    ("non-object patch replaces", {"a": 1}, ["x"], ["x"]),
    ("null patch replaces", {"a": 1}, None, None),
    ("object patch onto a scalar", "text", {"a": 1}, {"a": 1}),
    ("empty patch is a no-op", {"a": {"b": 1}}, {}, {"a": {"b": 1}}),
]


@pytest.mark.parametrize(("target", "patch", "expected"), [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES])
def test_merge_patch_follows_rfc_7386(target: Any, patch: Any, expected: Any) -> None:
    assert apply_merge_patch(target, patch) == expected


def test_merge_patch_does_not_mutate_or_alias_its_inputs() -> None:
    target = {"a": {"b": [1, {"c": 1}]}, "k": {"x": 1}}
    patch = {"k": {"y": {"z": [1]}}}
    target_before, patch_before = copy.deepcopy(target), copy.deepcopy(patch)
    result = apply_merge_patch(target, patch)
    result["a"]["b"][1]["c"] = 99
    result["k"]["y"]["z"].append(2)
    assert target == target_before
    assert patch == patch_before


def create_merge_patch(original: dict[str, Any], modified: dict[str, Any]) -> dict[str, Any]:
    """The smallest RFC 7386 patch that turns `original` into `modified`."""
    patch: dict[str, Any] = {}
    for key in original:
        if key not in modified:
            patch[key] = None
    for key, value in modified.items():
        old = original.get(key, _MISSING)
        if isinstance(old, dict) and isinstance(value, dict):
            nested = create_merge_patch(old, value)
            if nested:
                patch[key] = nested
        elif old is _MISSING or _canonical(old) != _canonical(value):
            patch[key] = value
    return patch


_MISSING = object()


def _canonical(value: Any) -> bytes:
    # Python says 1 == 1.0 == True; JSON does not.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


_scalars = st.one_of(
    st.booleans(), st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5)
)
_keys = st.text(alphabet="abcde", min_size=1, max_size=2)
# Merge patches cannot express a null member, so members are never null; list items may be.
_json_values = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(st.one_of(children, st.none()), max_size=3), st.dictionaries(_keys, children, max_size=4)
    ),
    max_leaves=12,
)
_json_objects = st.dictionaries(_keys, _json_values, max_size=5)


@settings(max_examples=300, deadline=None)
@given(original=_json_objects, modified=_json_objects)
def test_merge_patch_of_the_computed_difference_yields_the_target(
    original: dict[str, Any], modified: dict[str, Any]
) -> None:
    original_before = _canonical(original)
    patch = create_merge_patch(original, modified)
    assert _canonical(apply_merge_patch(original, patch)) == _canonical(modified)
    assert _canonical(original) == original_before


# --- RFC 6902 ------------------------------------------------------------------------------------------------

DOC: dict[str, Any] = {
    "metadata": {"name": "w1", "labels": {"app": "web"}},
    "spec": {"size": 1, "items": ["a", "b"], "flag": True},
}

JSON_PATCH_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = [
    (
        "add a member",
        [{"op": "add", "path": "/metadata/labels/tier", "value": "front"}],
        {**DOC, "metadata": {"name": "w1", "labels": {"app": "web", "tier": "front"}}},
    ),
    (
        "add replaces an existing member",
        [{"op": "add", "path": "/spec/size", "value": 3}],
        {**DOC, "spec": {**DOC["spec"], "size": 3}},
    ),
    (
        "add inserts into a list",
        [{"op": "add", "path": "/spec/items/1", "value": "x"}],
        {**DOC, "spec": {**DOC["spec"], "items": ["a", "x", "b"]}},
    ),
    (
        "add appends with -",
        [{"op": "add", "path": "/spec/items/-", "value": "c"}],
        {**DOC, "spec": {**DOC["spec"], "items": ["a", "b", "c"]}},
    ),
    (
        "add without value writes null",
        [{"op": "add", "path": "/spec/extra"}],
        {**DOC, "spec": {**DOC["spec"], "extra": None}},
    ),
    (
        "remove a member",
        [{"op": "remove", "path": "/metadata/labels/app"}],
        {**DOC, "metadata": {"name": "w1", "labels": {}}},
    ),
    (
        "remove a list item",
        [{"op": "remove", "path": "/spec/items/0"}],
        {**DOC, "spec": {**DOC["spec"], "items": ["b"]}},
    ),
    (
        "replace a member",
        [{"op": "replace", "path": "/spec/size", "value": 5}],
        {**DOC, "spec": {**DOC["spec"], "size": 5}},
    ),
    (
        "replace of a missing member adds it (evanphx/json-patch v4)",
        [{"op": "replace", "path": "/spec/new", "value": 1}],
        {**DOC, "spec": {**DOC["spec"], "new": 1}},
    ),
    (
        "move",
        [{"op": "move", "from": "/spec/size", "path": "/spec/count"}],
        {**DOC, "spec": {"items": ["a", "b"], "flag": True, "count": 1}},
    ),
    (
        "copy",
        [{"op": "copy", "from": "/metadata/labels", "path": "/spec/labels"}],
        {**DOC, "spec": {**DOC["spec"], "labels": {"app": "web"}}},
    ),
    (
        "test passing, then replace",
        [
            {"op": "test", "path": "/spec/size", "value": 1},
            {"op": "replace", "path": "/spec/size", "value": 2},
        ],
        {**DOC, "spec": {**DOC["spec"], "size": 2}},
    ),
    ("test of a whole subtree", [{"op": "test", "path": "/metadata/labels", "value": {"app": "web"}}], DOC),
    (
        "escaped pointer tokens",
        [{"op": "add", "path": "/metadata/labels/example.com~1a~0b", "value": "x"}],
        {**DOC, "metadata": {"name": "w1", "labels": {"app": "web", "example.com/a~b": "x"}}},
    ),
    ("empty patch", [], DOC),
]


@pytest.mark.parametrize(("patch", "expected"), [c[1:] for c in JSON_PATCH_CASES], ids=[c[0] for c in JSON_PATCH_CASES])
def test_json_patch_applies_rfc_6902_operations(patch: list[dict[str, Any]], expected: dict[str, Any]) -> None:
    before, patch_before = copy.deepcopy(DOC), copy.deepcopy(patch)
    assert apply_json_patch(DOC, patch) == expected
    assert before == DOC
    assert patch == patch_before


def test_json_patch_null_body_is_an_empty_patch() -> None:
    assert apply_json_patch(DOC, None) == DOC


def test_json_patch_result_shares_nothing_with_the_target() -> None:
    result = apply_json_patch(DOC, [{"op": "add", "path": "/x", "value": 1}])
    result["spec"]["items"].append("z")
    assert DOC["spec"]["items"] == ["a", "b"]


FAILING_OPS: list[tuple[str, list[Any]]] = [
    ("failing test", [{"op": "test", "path": "/spec/size", "value": 2}]),
    ("test true against 1", [{"op": "test", "path": "/spec/size", "value": True}]),
    ("test of a missing path", [{"op": "test", "path": "/spec/nope/x", "value": 1}]),
    ("remove a missing member", [{"op": "remove", "path": "/metadata/labels/nope"}]),
    ("remove through a missing parent", [{"op": "remove", "path": "/nope/x"}]),
    ("remove the whole document", [{"op": "remove", "path": ""}]),
    ("add below a missing parent", [{"op": "add", "path": "/nope/x", "value": 1}]),
    ("add outside a list", [{"op": "add", "path": "/spec/items/5", "value": 1}]),
    ("replace outside a list", [{"op": "replace", "path": "/spec/items/9", "value": 1}]),
    ("bad array index", [{"op": "remove", "path": "/spec/items/x"}]),
    ("pointer without leading slash", [{"op": "add", "path": "spec", "value": 1}]),
    ("move from a missing path", [{"op": "move", "from": "/nope", "path": "/x"}]),
    ("copy from a missing path", [{"op": "copy", "from": "/nope/deeper", "path": "/x"}]),
    ("move without from", [{"op": "move", "path": "/x"}]),
    ("missing path", [{"op": "add", "value": 1}]),
    ("unknown op", [{"op": "append", "path": "/metadata/name", "value": "x"}]),
    ("missing op", [{"path": "/x", "value": 1}]),
    ("null operation", [None]),
    ("replace the root with a list", [{"op": "replace", "path": "", "value": [1]}]),
    (
        "later op fails after earlier ones applied",
        [{"op": "add", "path": "/a", "value": 1}, {"op": "remove", "path": "/b"}],
    ),
]


@pytest.mark.parametrize("patch", [c[1] for c in FAILING_OPS], ids=[c[0] for c in FAILING_OPS])
def test_json_patch_failed_operation_is_the_generic_422(patch: list[Any]) -> None:
    before = copy.deepcopy(DOC)
    with pytest.raises(APIError) as caught:
        apply_json_patch(DOC, patch)
    error = caught.value
    assert error.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": GENERIC_422,
        "reason": "Invalid",
        "details": {},
        "code": 422,
    }
    assert error.__cause__ is not None  # the reason stays available for logs
    assert before == DOC


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"spec": {"size": 2}}, "json: cannot unmarshal object into Go value of type jsonpatch.Patch"),
        ("add", "json: cannot unmarshal string into Go value of type jsonpatch.Patch"),
        (3, "json: cannot unmarshal number into Go value of type jsonpatch.Patch"),
        (True, "json: cannot unmarshal bool into Go value of type jsonpatch.Patch"),
        ([1], "json: cannot unmarshal number into Go value of type jsonpatch.Operation"),
        ([[]], "json: cannot unmarshal array into Go value of type jsonpatch.Operation"),
        (["op"], "json: cannot unmarshal string into Go value of type jsonpatch.Operation"),
    ],
)
def test_json_patch_body_that_is_not_a_list_of_objects_is_400(body: Any, message: str) -> None:
    with pytest.raises(APIError) as caught:
        apply_json_patch(DOC, body)
    assert caught.value.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "BadRequest",
        "code": 400,
    }


def test_json_patch_with_too_many_operations_is_413() -> None:
    ops = [{"op": "test", "path": "/spec/size", "value": 1}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(APIError) as caught:
        apply_json_patch(DOC, ops)
    assert caught.value.code == 413
    assert caught.value.reason == "RequestEntityTooLarge"
    assert caught.value.message == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    )


def test_json_patch_with_exactly_the_maximum_operations_is_applied() -> None:
    ops = [{"op": "test", "path": "/spec/size", "value": 1}] * MAX_JSON_PATCH_OPERATIONS
    assert apply_json_patch(DOC, ops) == DOC


# --- strategic merge patch ------------------------------------------------------------------------------------

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {
        "name": "p1",
        "labels": {"app": "web", "tier": "front"},
        "finalizers": ["a.example.com/f", "b.example.com/f"],
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "X", "name": "o1", "uid": "u1"},
            {"apiVersion": "v1", "kind": "X", "name": "o2", "uid": "u2"},
        ],
    },
    "spec": {
        "containers": [
            {
                "name": "app",
                "image": "app:1",
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            },
            {"name": "sidecar", "image": "side:1"},
        ],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "tolerations": [{"key": "k1"}, {"key": "k2"}],
        "imagePullSecrets": [{"name": "s1"}],
        "nodeSelector": {"zone": "a", "disk": "ssd"},
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "Scheduled", "status": "True"}]},
}


def _containers(result: dict[str, Any]) -> list[dict[str, Any]]:
    return result["spec"]["containers"]  # type: ignore[no-any-return]


def test_smp_merges_maps_and_null_deletes() -> None:
    result = apply_strategic_merge_patch(POD, {"metadata": {"labels": {"tier": None, "new": "x"}}})
    assert result["metadata"]["labels"] == {"app": "web", "new": "x"}
    assert result["spec"] == POD["spec"]


def test_smp_finalizers_merge_as_an_ordered_set() -> None:
    result = apply_strategic_merge_patch(POD, {"metadata": {"finalizers": ["c.example.com/f", "a.example.com/f"]}})
    assert result["metadata"]["finalizers"] == ["a.example.com/f", "b.example.com/f", "c.example.com/f"]


def test_smp_finalizers_added_to_an_object_without_any() -> None:
    result = apply_strategic_merge_patch({"metadata": {"name": "x"}}, {"metadata": {"finalizers": ["f", "f"]}})
    assert result["metadata"]["finalizers"] == ["f"]


def test_smp_owner_references_merge_by_uid() -> None:
    patch = {"metadata": {"ownerReferences": [{"uid": "u2", "name": "o2-renamed"}, {"uid": "u3", "name": "o3"}]}}
    result = apply_strategic_merge_patch(POD, patch)
    assert [(r["uid"], r["name"]) for r in result["metadata"]["ownerReferences"]] == [
        ("u1", "o1"),
        ("u2", "o2-renamed"),
        ("u3", "o3"),
    ]
    assert result["metadata"]["ownerReferences"][1]["kind"] == "X"  # merged, not replaced


def test_smp_patch_delete_removes_a_keyed_list_item() -> None:
    patch = {"metadata": {"ownerReferences": [{"uid": "u1", "$patch": "delete"}]}}
    result = apply_strategic_merge_patch(POD, patch)
    assert [r["uid"] for r in result["metadata"]["ownerReferences"]] == ["u2"]


def test_smp_containers_merge_by_name_with_nested_keyed_lists() -> None:
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "app:2",
                    "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                    "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data", "readOnly": True}],
                },
                {"name": "new", "image": "new:1"},
            ]
        }
    }
    result = apply_strategic_merge_patch(POD, patch)
    app, sidecar, new = _containers(result)
    assert app["image"] == "app:2"
    assert app["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "20"}, {"name": "C", "value": "3"}]
    assert app["ports"] == [{"containerPort": 80, "protocol": "TCP", "name": "http"}, {"containerPort": 443}]
    assert app["volumeMounts"] == [{"name": "data", "mountPath": "/data", "readOnly": True}]
    assert sidecar == {"name": "sidecar", "image": "side:1"}
    assert new == {"name": "new", "image": "new:1"}


def test_smp_container_delete_directive() -> None:
    result = apply_strategic_merge_patch(POD, {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}})
    assert [c["name"] for c in _containers(result)] == ["app"]


@pytest.mark.parametrize(
    ("field", "patch_items", "expected"),
    [
        ("volumes", [{"name": "cache", "emptyDir": {}}], ["data", "cache"]),
        ("imagePullSecrets", [{"name": "s2"}], ["s1", "s2"]),
    ],
)
def test_smp_name_keyed_spec_lists_merge(field: str, patch_items: list[Any], expected: list[str]) -> None:
    result = apply_strategic_merge_patch(POD, {"spec": {field: patch_items}})
    assert [item["name"] for item in result["spec"][field]] == expected


def test_smp_conditions_merge_by_type() -> None:
    patch = {"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "True"}]}}
    result = apply_strategic_merge_patch(POD, patch)
    assert result["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Scheduled", "status": "True"},
        {"type": "Initialized", "status": "True"},
    ]


def test_smp_service_ports_merge_by_port() -> None:
    svc = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    result = apply_strategic_merge_patch(svc, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}})
    assert result["spec"]["ports"] == [{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}]


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"spec": {"tolerations": [{"key": "k1"}]}}, {"spec": {"tolerations": [{"key": "k3"}]}}, [{"key": "k3"}]),
        ({"spec": {"args": ["a", "b"]}}, {"spec": {"args": ["c"]}}, ["c"]),
        # a list whose items lack the merge key is replaced rather than merged
        ({"spec": {"env": [{"name": "A"}]}}, {"spec": {"env": [{"value": "x"}]}}, [{"value": "x"}]),
        ({"spec": {"finalizers": ["kubernetes"]}}, {"spec": {"finalizers": ["other"]}}, ["other"]),
    ],
)
def test_smp_other_lists_replace(target: dict[str, Any], patch: dict[str, Any], expected: list[Any]) -> None:
    result = apply_strategic_merge_patch(target, patch)
    (field,) = patch["spec"]
    assert result["spec"][field] == expected


def test_smp_replace_directive_in_a_keyed_list_replaces_the_list() -> None:
    patch = {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "o:1"}]}}
    result = apply_strategic_merge_patch(POD, patch)
    assert _containers(result) == [{"name": "only", "image": "o:1"}]


def test_smp_replace_directive_on_a_map_replaces_the_map() -> None:
    result = apply_strategic_merge_patch(POD, {"spec": {"nodeSelector": {"$patch": "replace", "zone": "b"}}})
    assert result["spec"]["nodeSelector"] == {"zone": "b"}


def test_smp_delete_directive_on_a_map_empties_it() -> None:
    result = apply_strategic_merge_patch(POD, {"spec": {"nodeSelector": {"$patch": "delete"}}})
    assert result["spec"]["nodeSelector"] == {}


def test_smp_delete_from_primitive_list() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/f"]}}
    result = apply_strategic_merge_patch(POD, patch)
    assert result["metadata"]["finalizers"] == ["b.example.com/f"]
    assert "$deleteFromPrimitiveList/finalizers" not in result["metadata"]


def test_smp_delete_from_primitive_list_then_merge_new_values() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/f"], "finalizers": ["c"]}}
    result = apply_strategic_merge_patch(POD, patch)
    assert result["metadata"]["finalizers"] == ["b.example.com/f", "c"]


def test_smp_deleting_every_primitive_drops_the_field() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/f", "b.example.com/f"]}}
    assert "finalizers" not in apply_strategic_merge_patch(POD, patch)["metadata"]


def test_smp_set_element_order_is_honoured_and_stripped() -> None:
    # What kubectl sends for a client-side apply that reorders containers and adds one.
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}, {"name": "extra"}],
            "containers": [{"name": "extra", "image": "e:1"}],
        },
        "metadata": {"$setElementOrder/finalizers": ["b.example.com/f", "a.example.com/f"]},
    }
    result = apply_strategic_merge_patch(POD, patch)
    assert [c["name"] for c in _containers(result)] == ["sidecar", "app", "extra"]
    assert result["metadata"]["finalizers"] == ["b.example.com/f", "a.example.com/f"]
    assert not any(k.startswith("$") for k in result["spec"])
    assert not any(k.startswith("$") for k in result["metadata"])


def test_smp_set_element_order_keeps_unnamed_items_in_their_slots() -> None:
    target = {"spec": {"containers": [{"name": "a"}, {"name": "server-only"}, {"name": "b"}]}}
    patch = {"spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}
    result = apply_strategic_merge_patch(target, patch)
    assert [c["name"] for c in _containers(result)] == ["b", "server-only", "a"]


def test_smp_retain_keys_clears_unlisted_keys() -> None:
    target = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert apply_strategic_merge_patch(target, patch) == {"spec": {"strategy": {"type": "Recreate"}}}


def test_smp_retain_keys_must_cover_the_patch_keys() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}}
    with pytest.raises(APIError) as caught:
        apply_strategic_merge_patch({"spec": {}}, patch)
    assert (caught.value.code, caught.value.reason, caught.value.message) == (422, "Invalid", GENERIC_422)


def test_smp_directives_inside_new_values_are_resolved() -> None:
    patch = {"spec": {"newMap": {"$retainKeys": ["a"], "a": 1}, "containers": [{"name": "c", "$patch": "delete"}]}}
    result = apply_strategic_merge_patch({"spec": {}}, patch)
    assert result == {"spec": {"newMap": {"a": 1}, "containers": []}}


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"metadata": {"$deleteFromPrimitiveList/finalizers": "x"}}, "invalid patch format of primitive list"),
        ({"spec": {"$setElementOrder/containers": {"name": "x"}}}, "invalid patch format of setElementOrder list"),
        ({"spec": {"$retainKeys": "x"}}, "invalid patch format of retainKeys"),
        ({"spec": {"$patch": "merge"}}, "unknown patch type: merge in map: map[$patch:merge]"),
        (["x"], "json: cannot unmarshal array into Go value of type map[string]interface {}"),
        ("x", "json: cannot unmarshal string into Go value of type map[string]interface {}"),
    ],
)
def test_smp_malformed_patches_are_400(patch: Any, message: str) -> None:
    with pytest.raises(APIError) as caught:
        apply_strategic_merge_patch(POD, patch)
    assert (caught.value.code, caught.value.reason, caught.value.message) == (400, "BadRequest", message)


def test_smp_null_body_changes_nothing() -> None:
    assert apply_strategic_merge_patch(POD, None) == POD


def test_smp_does_not_mutate_or_alias_its_inputs() -> None:
    patch = {
        "metadata": {"finalizers": ["z"], "$deleteFromPrimitiveList/finalizers": ["a.example.com/f"]},
        "spec": {"containers": [{"name": "app", "env": [{"name": "Z", "value": "26"}]}], "nodeSelector": None},
    }
    pod_before, patch_before = copy.deepcopy(POD), copy.deepcopy(patch)
    result = apply_strategic_merge_patch(POD, patch)
    result["spec"]["containers"][1]["image"] = "changed"
    result["spec"]["volumes"][0]["emptyDir"]["medium"] = "Memory"
    result["status"]["conditions"].clear()
    result["spec"]["containers"][0]["env"][-1]["value"] = "changed"
    assert pod_before == POD
    assert patch == patch_before
