"""Server-side apply: FieldsV1 encoding, apply merge/prune/conflicts and Update bookkeeping (sim/apiserver/ssa.py)."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.ssa import (
    LAST_APPLIED_ANNOTATION,
    ApplyConflict,
    Path,
    builtin_list_types,
    default_manager,
    field_set,
    from_fields_v1,
    go_json,
    missing_field_manager_error,
    record_update,
    server_side_apply,
    to_fields_v1,
)

GV = "example.com/v1"
T0 = "2026-01-02T15:04:05Z"
T1 = "2026-01-02T15:05:05Z"
T2 = "2026-01-02T15:06:05Z"
T3 = "2026-01-02T15:07:05Z"


def widget(spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": GV,
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", **meta},
    }
    if spec is not None:
        obj["spec"] = spec
    return obj


def apply(
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    manager: str = "kubectl",
    *,
    force: bool = False,
    now: str = T0,
    **kw: Any,
) -> dict[str, Any]:
    return server_side_apply(
        live, applied, manager=manager, force=force, api_version=GV, list_types=builtin_list_types, now=now, **kw
    )


def update(
    old: dict[str, Any] | None, new: dict[str, Any], manager: str, *, now: str = T1, **kw: Any
) -> dict[str, Any]:
    return record_update(old, new, manager=manager, api_version=GV, list_types=builtin_list_types, now=now, **kw)


def entries(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """managedFields by `manager/operation`."""
    return {f"{e['manager']}/{e['operation']}": e for e in obj["metadata"].get("managedFields", [])}


def fields_of(obj: dict[str, Any], key: str) -> dict[str, Any]:
    fields: dict[str, Any] = entries(obj)[key]["fieldsV1"]
    return fields


def causes(error: APIError) -> list[dict[str, Any]]:
    assert error.details is not None
    result: list[dict[str, Any]] = error.details["causes"]
    return result


def edited(obj: dict[str, Any], change: Any) -> dict[str, Any]:
    new: dict[str, Any] = copy.deepcopy(obj)
    change(new)
    return new


# ------------------------------------------------------------------------------------------------ create/apply


def test_create_by_apply_writes_the_upstream_entry_shape() -> None:
    obj = apply(None, widget({"size": 3, "tags": ["a"]}, labels={"app": "x"}))
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": GV,
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:size": {}, "f:tags": {}}},
        }
    ]
    # Entry keys are in Go's struct order; fieldsV1 keys are sorted like SMD writes them.
    assert list(obj["metadata"]["managedFields"][0]) == [
        "manager",
        "operation",
        "apiVersion",
        "time",
        "fieldsType",
        "fieldsV1",
    ]
    assert obj["spec"] == {"size": 3, "tags": ["a"]}
    assert obj["metadata"]["labels"] == {"app": "x"}


def test_reapplying_the_same_config_changes_nothing() -> None:
    first = apply(None, widget({"size": 3}))
    again = apply(first, widget({"size": 3}), now=T2)
    assert again == first  # same body, same entry, time not bumped


def test_apply_result_shares_nothing_with_the_inputs() -> None:
    applied = widget({"nested": {"a": 1}})
    obj = apply(None, applied)
    obj["spec"]["nested"]["a"] = 2
    assert applied["spec"]["nested"]["a"] == 1


def test_applying_a_smaller_config_removes_the_dropped_fields() -> None:
    first = apply(None, widget({"size": 3, "color": "red", "nested": {"a": 1}}, labels={"app": "x", "tier": "y"}))
    second = apply(first, widget({"size": 3}, labels={"app": "x"}), now=T1)
    assert second["spec"] == {"size": 3}
    assert second["metadata"]["labels"] == {"app": "x"}
    assert fields_of(second, "kubectl/Apply") == {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:size": {}}}
    assert entries(second)["kubectl/Apply"]["time"] == T1


def test_dropping_every_field_of_a_struct_removes_the_struct() -> None:
    first = apply(None, widget({"size": 3}))
    second = apply(first, widget(), now=T1)
    assert "spec" not in second
    assert "managedFields" not in second["metadata"]  # the applier owns nothing that is tracked


def test_a_dropped_field_that_another_manager_also_owns_survives() -> None:
    first = apply(None, widget({"size": 3, "color": "red"}))
    shared = apply(first, widget({"color": "red"}), manager="other", now=T1)
    assert shared == {**shared, "spec": {"size": 3, "color": "red"}}
    dropped = apply(shared, widget({"size": 3}), now=T2)
    assert dropped["spec"] == {"size": 3, "color": "red"}
    assert fields_of(dropped, "kubectl/Apply") == {"f:spec": {"f:size": {}}}
    assert fields_of(dropped, "other/Apply") == {"f:spec": {"f:color": {}}}


def test_a_field_an_updater_took_is_not_pruned_when_the_applier_drops_it() -> None:
    first = apply(None, widget({"size": 3, "color": "red"}))
    taken = update(first, edited(first, lambda o: o["spec"].update(color="blue")), "kubectl-edit")
    dropped = apply(taken, widget({"size": 3}), now=T2)
    assert dropped["spec"] == {"size": 3, "color": "blue"}


# ------------------------------------------------------------------------------------------------ conflicts


def test_changing_a_field_an_updater_owns_conflicts_with_exact_status() -> None:
    created = update(None, widget({"size": 3}), "kubectl-client-side-apply", now=T0)
    with pytest.raises(ApplyConflict) as caught:
        apply(created, widget({"size": 5}), manager="ci")
    status = caught.value.status()
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using example.com/v1: '
        ".spec.size",
        "reason": "Conflict",
        "details": {
            "causes": [
                {
                    "reason": "FieldManagerConflict",
                    "message": 'conflict with "kubectl-client-side-apply" using example.com/v1',
                    "field": ".spec.size",
                }
            ]
        },
        "code": 409,
    }
    assert isinstance(caught.value, APIError)


def test_several_conflicts_are_grouped_by_sorted_manager() -> None:
    obj = update(None, widget({"a": 1, "b": 1, "c": 1}), "zeta", now=T0)
    obj = update(obj, edited(obj, lambda o: o["spec"].update(c=2)), "alpha", now=T1)
    obj = apply(obj, widget({"d": 1}), manager="applier", now=T1)
    obj = apply(obj, widget({"d": 1, "e": 1}), manager="applier", now=T1)
    with pytest.raises(ApplyConflict) as caught:
        apply(obj, widget({"a": 9, "b": 9, "c": 9, "d": 9}), manager="ci", now=T2)
    assert caught.value.message == (
        "Apply failed with 4 conflicts: "
        'conflicts with "alpha" using example.com/v1:\n- .spec.c\n'
        'conflicts with "applier":\n- .spec.d\n'
        'conflicts with "zeta" using example.com/v1:\n- .spec.a\n- .spec.b'
    )
    assert [c["field"] for c in causes(caught.value)] == [".spec.c", ".spec.d", ".spec.a", ".spec.b"]
    assert causes(caught.value)[1]["message"] == 'conflict with "applier"'


def test_force_takes_ownership_and_drops_managers_left_with_nothing() -> None:
    obj = apply(None, widget({"size": 3}), manager="first")
    forced = apply(obj, widget({"size": 5}), manager="ci", force=True, now=T2)
    assert forced["spec"] == {"size": 5}
    assert list(entries(forced)) == ["ci/Apply"]
    assert fields_of(forced, "ci/Apply") == {"f:spec": {"f:size": {}}}


def test_force_removes_only_the_conflicting_fields_from_the_loser() -> None:
    obj = update(None, widget({"size": 3, "color": "red"}), "editor", now=T0)
    forced = apply(obj, widget({"size": 5}), manager="ci", force=True, now=T2)
    assert fields_of(forced, "editor/Update") == {"f:spec": {".": {}, "f:color": {}}}
    assert fields_of(forced, "ci/Apply") == {"f:spec": {"f:size": {}}}


def test_two_appliers_setting_the_same_value_share_the_field() -> None:
    first = apply(None, widget({"size": 3}))
    second = apply(first, widget({"size": 3}), manager="other", now=T1)
    assert second["spec"] == {"size": 3}
    assert fields_of(second, "kubectl/Apply") == fields_of(second, "other/Apply") == {"f:spec": {"f:size": {}}}
    # The object did not change, so the newcomer's entry gets no time (upstream behaviour).
    assert "time" not in entries(second)["other/Apply"]
    with pytest.raises(ApplyConflict) as caught:
        apply(second, widget({"size": 4}), manager="third", now=T2)
    assert [c["message"] for c in causes(caught.value)] == [
        'conflict with "kubectl"',
        'conflict with "other"',
    ]


# ------------------------------------------------------------------------------------------------ list types


def test_map_list_items_merge_by_key_and_are_owned_per_item() -> None:
    def pod(*containers: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": GV, "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": list(containers)}}

    first = apply(None, pod({"name": "app", "image": "app:1"}))
    second = apply(first, pod({"name": "sidecar", "image": "side:1"}), manager="injector", now=T1)
    assert second["spec"]["containers"] == [{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "side:1"}]
    assert fields_of(second, "injector/Apply") == {
        "f:spec": {"f:containers": {'k:{"name":"sidecar"}': {".": {}, "f:image": {}, "f:name": {}}}}
    }
    # Changing another manager's item field conflicts, with the key in the path.
    with pytest.raises(ApplyConflict) as caught:
        apply(second, pod({"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "side:2"}), now=T2)
    assert causes(caught.value)[0]["field"] == '.spec.containers[name="sidecar"].image'
    # Dropping its own item removes only that item.
    third = apply(second, pod(), now=T2)
    assert third["spec"]["containers"] == [{"name": "sidecar", "image": "side:1"}]


def test_conditions_are_a_map_list_keyed_by_type() -> None:
    status = {"conditions": [{"type": "Ready", "status": "False"}]}
    obj = apply(None, {**widget(), "status": status}, manager="controller")
    obj = apply(
        obj, {**widget(), "status": {"conditions": [{"type": "Synced", "status": "True"}]}}, manager="syncer", now=T1
    )
    assert [c["type"] for c in obj["status"]["conditions"]] == ["Ready", "Synced"]
    assert fields_of(obj, "controller/Apply") == {
        "f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}}}}
    }
    flipped = apply(
        obj, {**widget(), "status": {"conditions": [{"type": "Ready", "status": "True"}]}}, manager="controller", now=T2
    )
    assert flipped["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Synced", "status": "True"},
    ]


def test_shared_items_follow_the_applied_order_and_live_only_items_keep_their_place() -> None:
    def pod(*names: str) -> dict[str, Any]:
        return {
            "apiVersion": GV,
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": n} for n in names]},
        }

    obj = apply(None, pod("a", "b", "c"), manager="m1")
    obj = apply(obj, pod("c", "x", "a"), manager="m2", now=T1)
    # SMD's order: "a" waits for its place in the applied order, "b" (live only) stays ahead of "c".
    assert [c["name"] for c in obj["spec"]["containers"]] == ["b", "c", "x", "a"]


def test_set_lists_union_across_managers_and_encode_values() -> None:
    obj = apply(None, widget(finalizers=["a.example.com/x"]), manager="m1")
    obj = apply(obj, widget(finalizers=["b.example.com/y"]), manager="m2", now=T1)
    assert obj["metadata"]["finalizers"] == ["a.example.com/x", "b.example.com/y"]
    assert fields_of(obj, "m2/Apply") == {"f:metadata": {"f:finalizers": {'v:"b.example.com/y"': {}}}}
    dropped = apply(obj, widget(), manager="m1", now=T2)
    assert dropped["metadata"]["finalizers"] == ["b.example.com/y"]


def test_atomic_lists_are_replaced_whole_and_owned_as_one_leaf() -> None:
    obj = apply(None, widget({"items": [1, 2, 3]}))
    replaced = apply(obj, widget({"items": [9]}), now=T1)
    assert replaced["spec"]["items"] == [9]
    assert fields_of(replaced, "kubectl/Apply") == {"f:spec": {"f:items": {}}}
    with pytest.raises(ApplyConflict) as caught:
        apply(replaced, widget({"items": [9, 10]}), manager="other", now=T2)
    assert causes(caught.value)[0]["field"] == ".spec.items"


def test_custom_list_types_come_from_the_callback() -> None:
    def list_types(path: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
        return ("map", ("port", "protocol")) if path == ("spec", "ports") else ("atomic", ())

    applied = widget({"ports": [{"port": 80, "protocol": "TCP", "name": "http"}]})
    obj = server_side_apply(None, applied, manager="m", force=False, api_version=GV, list_types=list_types, now=T0)
    assert fields_of(obj, "m/Apply") == {
        "f:spec": {
            "f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}}
        }
    }


# ------------------------------------------------------------------------------------------------ updates


def test_record_update_on_create_owns_everything_with_markers_for_new_maps() -> None:
    obj = update(None, widget({"size": 3}, labels={"app": "x"}), "kubectl-create", now=T0)
    assert obj["metadata"]["managedFields"] == [
        {
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": GV,
            "time": T0,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {".": {}, "f:size": {}}},
        }
    ]


def test_record_update_moves_ownership_from_an_applier_so_a_later_apply_conflicts() -> None:
    obj = apply(None, widget({"size": 3, "color": "red"}))
    edited_obj = update(obj, edited(obj, lambda o: o["spec"].update(size=4)), "kubectl-edit", now=T1)
    assert fields_of(edited_obj, "kubectl/Apply") == {"f:spec": {"f:color": {}}}
    assert fields_of(edited_obj, "kubectl-edit/Update") == {"f:spec": {"f:size": {}}}
    with pytest.raises(ApplyConflict) as caught:
        apply(edited_obj, widget({"size": 3, "color": "red"}), now=T2)
    assert caught.value.message == (
        'Apply failed with 1 conflict: conflict with "kubectl-edit" using example.com/v1: .spec.size'
    )


def test_record_update_merges_into_the_managers_entry_and_removed_fields_leave_everyone() -> None:
    obj = update(None, widget({"a": 1}), "editor", now=T0)
    obj = update(obj, edited(obj, lambda o: o["spec"].update(b=2)), "editor", now=T1)
    assert list(entries(obj)) == ["editor/Update"]
    assert fields_of(obj, "editor/Update") == {"f:spec": {".": {}, "f:a": {}, "f:b": {}}}
    assert entries(obj)["editor/Update"]["time"] == T1
    obj = apply(obj, widget({"c": 3}), manager="applier", now=T2)
    obj = update(obj, edited(obj, lambda o: o["spec"].pop("a")), "other", now=T3)
    assert obj["spec"] == {"b": 2, "c": 3}
    assert fields_of(obj, "editor/Update") == {"f:spec": {".": {}, "f:b": {}}}
    assert "other/Update" not in entries(obj)  # removing a field owns nothing


def test_record_update_without_changes_keeps_entries_and_times() -> None:
    obj = update(None, widget({"a": 1}), "editor", now=T0)
    again = update(obj, copy.deepcopy(obj), "someone-else", now=T3)
    assert again == obj
    assert again["metadata"]["managedFields"] is obj["metadata"]["managedFields"]  # the fast path copies nothing


def test_record_update_honours_a_reset_and_then_stops_tracking_until_an_apply() -> None:
    obj = update(None, widget({"a": 1}), "editor", now=T0)
    reset = update(obj, edited(obj, lambda o: o["metadata"].update(managedFields=[])), "editor", now=T1)
    assert "managedFields" not in reset["metadata"]
    changed = update(reset, edited(reset, lambda o: o["spec"].update(a=2)), "editor", now=T2)
    assert changed["spec"] == {"a": 2}
    assert "managedFields" not in changed["metadata"]


def test_record_update_uses_managed_fields_sent_by_the_client() -> None:
    obj = update(None, widget({"a": 1}), "editor", now=T0)
    sent = copy.deepcopy(obj["metadata"]["managedFields"])
    sent[0]["manager"] = "renamed"
    new = edited(obj, lambda o: o["metadata"].update(managedFields=sent))
    assert list(entries(update(obj, new, "editor", now=T1))) == ["renamed/Update"]


def test_subresource_updates_are_their_own_entries() -> None:
    obj = update(None, widget({"a": 1}), "creator", now=T0)
    obj = update(obj, {**obj, "status": {"phase": "Ready"}}, "controller", now=T1, subresource="status")
    entry = entries(obj)["controller/Update"]
    assert entry["subresource"] == "status"
    assert list(entry)[-1] == "subresource"
    with pytest.raises(ApplyConflict) as caught:
        apply(obj, {**widget(), "status": {"phase": "Failed"}}, manager="ci", subresource="status", now=T2)
    assert causes(caught.value)[0]["message"] == (
        'conflict with "controller" with subresource "status" using example.com/v1'
    )


def test_ignored_fields_are_neither_owned_nor_conflicted_on() -> None:
    obj = update(None, {**widget({"a": 1}), "status": {"phase": "x"}}, "creator", ignored_fields=[("status",)])
    assert fields_of(obj, "creator/Update") == {"f:spec": {".": {}, "f:a": {}}}
    applied = apply(obj, {**widget({"a": 1}), "status": {"phase": "y"}}, manager="ci", ignored_fields=[("status",)])
    assert fields_of(applied, "ci/Apply") == {"f:spec": {"f:a": {}}}


def test_apply_to_an_untracked_object_credits_existing_fields_to_before_first_apply() -> None:
    live = {**widget({"size": 3}), "metadata": {"name": "w1", "namespace": "default", "uid": "u"}}
    with pytest.raises(ApplyConflict) as caught:
        apply(live, widget({"size": 4}))
    assert causes(caught.value)[0]["message"] == 'conflict with "before-first-apply" using example.com/v1'


# ------------------------------------------------------------------------------------------------ CSA -> SSA


def _client_side_applied(spec: dict[str, Any]) -> dict[str, Any]:
    manifest = widget(spec)
    annotation = orjson.dumps({**manifest, "metadata": {**manifest["metadata"], "annotations": {}}}).decode() + "\n"
    created = widget(spec, annotations={LAST_APPLIED_ANNOTATION: annotation})
    return update(None, created, "kubectl-client-side-apply", now=T0)


def test_kubectl_server_side_apply_takes_over_client_side_applied_fields() -> None:
    live = _client_side_applied({"size": 3})
    taken = apply(live, widget({"size": 3, "color": "red"}), manager="kubectl", now=T1)
    assert taken["spec"] == {"size": 3, "color": "red"}
    assert fields_of(taken, "kubectl/Apply") == {"f:spec": {"f:color": {}, "f:size": {}}}
    # The annotation is re-encoded from the applied config (Go encoder: sorted keys, trailing newline).
    assert taken["metadata"]["annotations"][LAST_APPLIED_ANNOTATION] == (
        '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1","namespace":"default"},'
        '"spec":{"color":"red","size":3}}\n'
    )


def test_other_managers_get_no_client_side_apply_allowance() -> None:
    live = _client_side_applied({"size": 3})
    with pytest.raises(ApplyConflict):
        apply(live, widget({"size": 4}), manager="ci", now=T1)


def test_kubectl_still_conflicts_on_fields_changed_since_the_last_client_side_apply() -> None:
    live = _client_side_applied({"size": 3})
    drifted = update(live, edited(live, lambda o: o["spec"].update(size=7)), "kubectl-client-side-apply", now=T1)
    with pytest.raises(ApplyConflict) as caught:
        apply(drifted, widget({"size": 9}), manager="kubectl", now=T2)
    assert [c["field"] for c in causes(caught.value)] == [".spec.size"]


# ------------------------------------------------------------------------------------------------ bad requests


def test_apply_rejects_managed_fields_in_the_patch() -> None:
    with pytest.raises(APIError) as caught:
        apply(None, widget(managedFields=[]))
    assert (caught.value.code, caught.value.message) == (400, "metadata.managedFields must be nil")


def test_apply_rejects_a_different_version() -> None:
    with pytest.raises(APIError) as caught:
        apply(None, {**widget(), "apiVersion": "example.com/v2"})
    assert caught.value.code == 400
    assert caught.value.message == (
        "Incorrect version specified in apply patch. Specified patch version: example.com/v2, expected: example.com/v1"
    )


def test_apply_rejects_duplicate_map_list_keys() -> None:
    applied = {**widget(), "spec": {"containers": [{"name": "a"}, {"name": "a"}]}}
    with pytest.raises(APIError) as caught:
        apply(None, applied)
    assert caught.value.code == 500
    assert caught.value.message == (
        'failed to create typed patch object: .spec.containers: duplicate entries for key [name="a"]'
    )


def test_missing_field_manager_error_body() -> None:
    assert missing_field_manager_error().status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        "reason": "Invalid",
        "details": {
            "group": "meta.k8s.io",
            "kind": "PatchOptions",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value: is required for apply patch",
                    "field": "fieldManager",
                }
            ],
        },
        "code": 422,
    }


@pytest.mark.parametrize(
    ("agent", "manager"),
    [
        ("OpenAPI-Generator/36.1.0/python", "OpenAPI-Generator"),
        ("kubectl/v1.32.5 (linux/amd64) kubernetes/abc", "kubectl"),
        (None, ""),
        ("a\x00b/1", "ab"),
        ("x" * 200, "x" * 128),
    ],
)
def test_default_manager_is_the_user_agent_prefix(agent: str | None, manager: str) -> None:
    assert default_manager(agent) == manager


# ------------------------------------------------------------------------------------------------ field sets


def test_field_set_skips_system_metadata_and_type_fields() -> None:
    obj = widget({"size": 1}, uid="u", resourceVersion="5", generation=2, creationTimestamp=T0, labels={"a": "b"})
    obj["metadata"]["managedFields"] = [{"manager": "x"}]
    assert field_set(obj, builtin_list_types) == {("f:metadata", "f:labels", "f:a"), ("f:spec", "f:size")}


def test_fields_v1_orders_fields_then_keys_then_values_then_indexes() -> None:
    fs = {
        ("f:b",),
        ("f:a", "f:x"),
        ("f:a",),
        ("f:l", 'k:{"name":"z"}'),
        ("f:l", 'k:{"name":"b"}', "f:name"),
        ("f:s", 'v:"x"'),
        ("f:s", "v:2"),
        ("f:s", "v:true"),
        ("f:i", "i:10"),
        ("f:i", "i:2"),
    }
    encoded = to_fields_v1(fs)
    assert orjson.dumps(encoded).decode() == (
        '{"f:a":{".":{},"f:x":{}},"f:b":{},"f:i":{"i:2":{},"i:10":{}},'
        '"f:l":{"k:{\\"name\\":\\"b\\"}":{"f:name":{}},"k:{\\"name\\":\\"z\\"}":{}},'
        '"f:s":{"v:2":{},"v:\\"x\\"":{},"v:true":{}}}'
    )
    assert from_fields_v1(encoded) == fs


def test_from_fields_v1_normalizes_client_spelling_of_keys() -> None:
    parsed = from_fields_v1({'k:{"protocol": "TCP", "port": 80.0}': {}})
    assert parsed == {('k:{"port":80,"protocol":"TCP"}',)}


def test_from_fields_v1_rejects_unknown_elements() -> None:
    with pytest.raises(ValueError, match="unknown path element"):
        from_fields_v1({"x:y": {}})


_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.text(max_size=6),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)
_elements = st.one_of(
    st.text(min_size=1, max_size=8).map(lambda s: "f:" + s),
    st.dictionaries(st.text(min_size=1, max_size=4), _scalars, min_size=1, max_size=3).map(lambda d: "k:" + go_json(d)),
    _scalars.map(lambda v: "v:" + go_json(v)),
    st.integers(min_value=0, max_value=10_000).map(lambda i: f"i:{i}"),
)
_paths: st.SearchStrategy[Path] = st.lists(_elements, min_size=1, max_size=4).map(tuple)


@given(st.frozensets(_paths, max_size=25))
def test_fields_v1_round_trips(fs: frozenset[Path]) -> None:
    assert from_fields_v1(to_fields_v1(fs)) == fs


@given(st.frozensets(_paths, max_size=25))
def test_fields_v1_survives_a_json_round_trip(fs: frozenset[Path]) -> None:
    assert from_fields_v1(orjson.loads(orjson.dumps(to_fields_v1(fs)))) == fs
