"""The pure part of the fleet applier (omectl.core.fleet_runtimes), without a server: placement, copies, the decision
per copy, the status roll-up, revision pruning; and the status the controller builds from them."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.controller.fleet_runtimes import build_status
from omectl.core import fleet_runtimes as fr
from omectl.core.fleet_runtimes import ClusterResult

CLUSTERS = {
    "lab": {"gpu": "h200", "tier": "lab"},
    "east": {"gpu": "h200", "region": "us-east"},
    "west": {"gpu": "mi300x", "region": "us-west"},
}


@pytest.mark.parametrize(
    ("placement", "expected"),
    [
        (None, []),
        ({}, []),
        ({"clusterSelector": {}}, ["east", "lab", "west"]),  # an empty selector selects every cluster
        ({"clusterSelector": {"matchLabels": {"gpu": "h200"}}}, ["east", "lab"]),
        ({"clusterSelector": {"matchLabels": {"gpu": "h200", "tier": "lab"}}}, ["lab"]),
        ({"clusterSelector": {"matchExpressions": [{"key": "region", "operator": "Exists"}]}}, ["east", "west"]),
        ({"clusterSelector": {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}}, ["east", "west"]),
        (
            {"clusterSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["us-west"]}]}},
            ["west"],
        ),
        (
            {"clusterSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us-west"]}]}},
            ["east", "lab"],  # NotIn selects clusters without the label too, as Kubernetes does
        ),
        ({"clusterSelector": {"matchExpressions": [{"key": "gpu", "operator": "Gt", "values": ["1"]}]}}, []),
        ({"clusters": ["west", "gone"]}, ["west"]),  # a name that is not registered places nothing
        ({"clusters": ["west"], "clusterSelector": {"matchLabels": {"tier": "lab"}}}, ["lab", "west"]),
    ],
)
def test_placement_selects_by_name_or_label(placement: dict[str, Any] | None, expected: list[str]) -> None:
    assert fr.placed_clusters(placement, CLUSTERS) == expected


TEMPLATE = {
    "apiVersion": "ome.io/v1beta1",
    "kind": "ServingRuntime",
    "metadata": {"name": "vllm", "labels": {"team": "ml"}, "annotations": {"note": "x"}},
    "spec": {"engineConfig": {"runner": {"name": "ome-container", "image": "vllm:1"}}},
}


def test_a_copy_is_the_template_marked_as_the_fleet_runtimes() -> None:
    copy = fr.desired_copy(TEMPLATE, "owner", 3, "team-a")
    assert copy == {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {
            "name": "vllm",
            "namespace": "team-a",
            "labels": {"team": "ml", fr.FLEET_RUNTIME_LABEL: "owner", fr.MANAGED_BY_LABEL: fr.MANAGED_BY},
            "annotations": {"note": "x", fr.REVISION_ANNOTATION: "3"},
        },
        "spec": TEMPLATE["spec"],
    }
    assert "namespace" not in fr.desired_copy({**TEMPLATE, "kind": "ClusterServingRuntime"}, "o", 1, "")["metadata"]
    assert fr.copy_owner(copy) == "owner" and fr.copy_revision(copy) == 3
    assert fr.copy_owner({"metadata": {}}) is None and fr.copy_revision({"metadata": {}}) is None


def test_copy_targets_are_the_namespaces_of_a_serving_runtime_only() -> None:
    assert fr.copy_targets({"template": TEMPLATE, "namespaces": ["b", "a", "b"]}) == ["a", "b"]
    assert fr.copy_targets({"template": {**TEMPLATE, "kind": "ClusterServingRuntime"}}) == [""]


def test_the_template_hash_follows_the_template_and_the_namespaces_only() -> None:
    base = fr.template_hash({"template": TEMPLATE, "namespaces": ["a", "b"]})
    assert base == fr.template_hash({"template": TEMPLATE, "namespaces": ["b", "a"], "driftPolicy": "Correct"})
    assert base != fr.template_hash({"template": TEMPLATE, "namespaces": ["a"]})
    bumped = {**TEMPLATE, "spec": {"engineConfig": {"runner": {"name": "ome-container", "image": "vllm:2"}}}}
    assert base != fr.template_hash({"template": bumped, "namespaces": ["a", "b"]})
    assert len(base) == 10


def live(owner: str | None, revision: int | None, generation: int) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "vllm", "namespace": "team-a", "generation": generation, "labels": {}}
    if owner:
        meta["labels"][fr.FLEET_RUNTIME_LABEL] = owner
    if revision is not None:
        meta["annotations"] = {fr.REVISION_ANNOTATION: str(revision)}
    return {"kind": "ServingRuntime", "metadata": meta}


def decide(obj: dict[str, Any] | None, **kw: Any) -> fr.Decision:
    args: dict[str, Any] = {
        "owner": "me",
        "revision": 2,
        "recorded_generation": 4,
        "recorded_revision": 2,
        "drift_policy": "Report",
    }
    return fr.decide(obj, **{**args, **kw})


def test_what_is_done_with_the_copy_found() -> None:
    assert decide(None).action == "apply"
    users = decide(live(None, None, 1))
    assert users.action == "conflict"
    assert users.message == "ServingRuntime team-a/vllm exists and is not made by this FleetRuntime"
    other = decide(live("other", 2, 4))
    assert other.action == "conflict" and "FleetRuntime other's copy" in other.message
    assert decide(live("me", 1, 4)).action == "apply"  # an older revision: roll it
    assert decide(live("me", 2, 4)).action == "in-sync"
    drifted = decide(live("me", 2, 5))
    assert drifted.action == "drifted" and "generation 4 -> 5" in drifted.message
    assert decide(live("me", 2, 5), drift_policy="Correct").action == "correct"
    # Nothing recorded for this revision yet (the status was lost, or the apply's status not written yet): in sync.
    assert decide(live("me", 2, 5), recorded_generation=None).action == "in-sync"
    assert decide(live("me", 2, 5), recorded_revision=1).action == "in-sync"


def test_a_clusters_copies_combine_to_the_worst() -> None:
    applied = ClusterResult("c", "Applied", 2, {"a": 1})
    drifted = ClusterResult("c", "Drifted", 2, {"b": 3}, "b edited")
    combined = fr.combine("c", [applied, drifted])
    assert combined == ClusterResult("c", "Drifted", 2, {"a": 1, "b": 3}, "b edited")
    failed = fr.combine("c", [ClusterResult("c", "Failed", message="x"), ClusterResult("c", "Failed", message="y")])
    assert (failed.phase, failed.message, failed.revision) == ("Failed", "x; y", None)
    assert fr.combine("c", [ClusterResult("c", "Applied", 1), ClusterResult("c", "Applied", 2)]).revision is None
    assert fr.combine("c", []).phase == "Pending"


def test_the_roll_up() -> None:
    assert fr.roll_up([], 1) == fr.RollUp(
        "Pending", 0, 0, False, "NoClusterPlaced", "the placement selects no registered cluster"
    )
    done = fr.roll_up([ClusterResult("a", "Applied", 2), ClusterResult("b", "Applied", 2)], 2)
    assert (done.phase, done.applied, done.ready, done.reason) == ("Succeeded", 2, True, "Applied")
    going = fr.roll_up([ClusterResult("a", "Applied", 2), ClusterResult("b", "Pending")], 2)
    assert (going.phase, going.ready, going.reason) == ("Progressing", False, "Progressing")
    assert going.message == "revision 2 applied to 1 of 2 clusters (1 Pending)"
    stale = fr.roll_up([ClusterResult("a", "Applied", 1)], 2)  # applied, but an older revision
    assert (stale.phase, stale.applied) == ("Progressing", 0)
    bad = fr.roll_up(
        [ClusterResult("a", "Conflict"), ClusterResult("b", "Failed"), ClusterResult("c", "Drifted", 2)], 2
    )
    assert (bad.phase, bad.reason) == ("Degraded", "Failed")
    assert bad.message == "revision 2 applied to 0 of 3 clusters (1 Failed, 1 Conflict, 1 Drifted)"


def test_revisions_beyond_the_newest_are_pruned_but_never_the_current() -> None:
    revisions = {f"r{n}": n for n in range(1, 13)}
    assert fr.revisions_to_prune(revisions, 10, "r12") == ["r1", "r2"]
    assert fr.revisions_to_prune(revisions, 10, "r1") == ["r2"]
    assert fr.revisions_to_prune({"a": 1}, 10, "a") == []
    assert fr.next_revision([]) == 1 and fr.next_revision([3, 1]) == 4


def test_the_status_keeps_transition_times_and_says_why() -> None:
    results = [ClusterResult("a", "Applied", 2, {"": 3}), ClusterResult("b", "Conflict", message="theirs")]
    first = build_status({}, 5, 2, results, None)
    assert first["observedGeneration"] == 5 and first["revision"] == 2
    assert (first["placed"], first["applied"], first["phase"]) == (2, 1, "Degraded")
    a, b = first["clusters"]
    assert a["copies"] == [{"generation": 3}] and a["revision"] == 2 and "message" not in a
    assert b == {"name": "b", "phase": "Conflict", "message": "theirs", "lastTransitionTime": b["lastTransitionTime"]}
    old = {**first, "clusters": [{**a, "lastTransitionTime": "then"}, b]}
    old["conditions"] = [{**first["conditions"][0], "lastTransitionTime": "then"}]
    again = build_status(old, 5, 2, results, None)
    assert again["clusters"][0]["lastTransitionTime"] == "then"
    assert again["conditions"][0]["lastTransitionTime"] == "then"
    invalid = build_status(again, 6, None, [], "spec.template is missing")
    assert invalid["phase"] == "Invalid" and invalid["observedGeneration"] == 6
    assert invalid["clusters"] == again["clusters"]  # what was applied is still reported
    assert invalid["conditions"][0]["reason"] == "InvalidTemplate"
