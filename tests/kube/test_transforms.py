"""What the informer transforms keep: identity, the named labels and annotations, the status fields asked for, and
one shared string object for the strings that repeat across objects."""

from __future__ import annotations

import copy
from typing import Any

from omectl.kube.transforms import (
    LAST_APPLIED,
    SharedStrings,
    condition_fields,
    rendered_object,
    strip_bookkeeping,
)


def deployment(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": "".join(namespace),  # a string object of its own, as a decoder makes one per object
            "uid": f"uid-{name}",
            "resourceVersion": "7",
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"ome.io/inferenceservice": name, "component": "engine"},
            "annotations": {"omectl.io/render-hash": "abc", "ome.io/runtime-revision": "r1", LAST_APPLIED: "{}"},
            "ownerReferences": [{"kind": "InferenceService", "name": name}],
            "managedFields": [{"manager": "omectl"}],
        },
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {
            "observedGeneration": 3,
            "replicas": 1,
            "conditions": [
                {"type": "Available", "status": "True", "reason": "R", "message": "M", "lastUpdateTime": "t"},
                {"type": "Progressing", "status": "True", "reason": "P", "message": "N"},
            ],
        },
    }


WORKLOAD = rendered_object(
    labels=("ome.io/inferenceservice",),
    annotations=("omectl.io/render-hash",),
    status=lambda status: condition_fields(status, ("Available",)),
)


def test_a_rendered_workload_keeps_its_identity_the_named_keys_and_the_status_asked_for() -> None:
    assert WORKLOAD(deployment("a-engine", "team-a")) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "a-engine",
            "namespace": "team-a",
            "uid": "uid-a-engine",
            "resourceVersion": "7",
            "generation": 3,
            "labels": {"ome.io/inferenceservice": "a-engine"},
            "annotations": {"omectl.io/render-hash": "abc"},
        },
        "status": {
            "observedGeneration": 3,
            "conditions": [{"type": "Available", "status": "True", "reason": "R", "message": "M"}],
        },
    }


def test_without_a_status_filter_a_rendered_object_keeps_metadata_only() -> None:
    kept = rendered_object(labels=("component",), annotations=())(deployment("s", "team-a"))
    assert set(kept) == {"apiVersion", "kind", "metadata"}
    assert kept["metadata"]["labels"] == {"component": "engine"}
    assert "annotations" not in kept["metadata"]


def test_namespaces_kinds_and_keys_are_one_string_object_across_objects() -> None:
    first, second = WORKLOAD(deployment("a", "team-a")), WORKLOAD(deployment("b", "team-a"))
    assert first["metadata"]["namespace"] is second["metadata"]["namespace"]
    assert first["kind"] is second["kind"]
    [key_a], [key_b] = first["metadata"]["labels"], second["metadata"]["labels"]
    assert key_a is key_b


def test_strip_bookkeeping_drops_managed_fields_and_the_last_applied_copy_and_keeps_the_rest() -> None:
    obj = deployment("a", "team-a")
    expected = copy.deepcopy(obj)
    del expected["metadata"]["managedFields"]
    del expected["metadata"]["annotations"][LAST_APPLIED]
    assert strip_bookkeeping(obj) == expected


def test_the_shared_pool_starts_afresh_at_its_limit_and_so_holds_at_most_limit_values() -> None:
    pool = SharedStrings(limit=2)
    values = ["".join(["v", str(i)]) for i in range(3)]
    assert [pool(v) for v in values] == values
    assert len(pool) == 1  # the third value found the pool full: it starts again from that value
    assert pool("".join(["v", "2"])) is values[2]  # pooled in the new generation
    assert pool("".join(["v", "0"])) is not values[0]  # let go with the old one
    assert len(pool) == 2


def isvc(name: str) -> dict[str, Any]:
    """An InferenceService as a decoder makes it: every string a new object."""

    def fresh(value: str) -> str:
        return "".join(list(value))

    return {
        "apiVersion": fresh("ome.io/v1beta1"),
        "kind": fresh("InferenceService"),
        "metadata": {"name": fresh(name), "namespace": fresh("team-a"), "uid": fresh(f"uid-{name}"), "generation": 1},
        "spec": {"runtime": {"name": fresh("sglang-child")}, "args": [fresh("--port"), fresh("8080")]},
        "status": {
            "conditions": [
                {"type": fresh("Ready"), "status": fresh("True"), "reason": fresh(""), "message": fresh("up")},
            ],
        },
    }


def test_objects_cached_whole_share_every_repeated_value_but_keep_their_own_identity_and_content() -> None:
    first, second = strip_bookkeeping(isvc("llama-a")), strip_bookkeeping(isvc("llama-b"))
    assert first == isvc("llama-a") and second == isvc("llama-b")  # equal content: sharing changes no value
    assert first["spec"]["runtime"]["name"] is second["spec"]["runtime"]["name"]
    assert first["spec"]["args"][1] is second["spec"]["args"][1]  # in lists too
    [ready_a], [ready_b] = first["status"]["conditions"], second["status"]["conditions"]
    assert all(ready_a[k] is ready_b[k] for k in ("type", "status", "message"))
    assert (
        first["apiVersion"] is second["apiVersion"]
        and first["metadata"]["namespace"] is second["metadata"]["namespace"]
    )
    # an object's own identity never enters the pool: no other object has it
    again = strip_bookkeeping(isvc("llama-a"))
    assert again["metadata"]["name"] is not first["metadata"]["name"]
    assert again["metadata"]["uid"] is not first["metadata"]["uid"]
