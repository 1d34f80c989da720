"""The pure part of the fleet applier (omectl.core.fleet_runtimes), without a server: placement, copies, the decision
per copy, the status roll-up, revision pruning; and the status the controller builds from them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from omectl.controller.fleet_runtimes import build_status, rolled_back_message, rollout_view
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
    assert stale.message == "revision 2 applied to 0 of 1 clusters (1 at another revision)"
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


# --- waves and gates ---------------------------------------------------------------------------------------------

FLEET = {
    "lab": {"gpu": "h200", "tier": "lab"},
    "a": {"gpu": "h200"},
    "b": {"gpu": "h200"},
    "c": {"gpu": "h200"},
    "d": {"gpu": "h200"},
    "e": {"gpu": "h200", "region": "eu"},
}


def test_waves_take_by_selector_name_and_rounded_up_share_of_the_rest_in_order() -> None:
    waves = [
        {"name": "lab", "clusterSelector": {"matchLabels": {"tier": "lab"}}, "soakSeconds": 30},
        {"name": "quarter", "percent": 25, "progressDeadlineSeconds": 60},
        {"name": "eu", "clusters": ["e", "lab"]},  # lab is in an earlier wave already: only e
    ]
    plan = fr.plan_waves(waves, sorted(FLEET), FLEET)
    assert [(w.name, w.clusters) for w in plan] == [
        ("lab", ("lab",)),
        ("quarter", ("a", "b")),  # 25% of the 5 left, rounded up
        ("eu", ("e",)),
        (fr.REMAINING_WAVE, ("c", "d")),  # placed, in no wave: after the last one
    ]
    assert (plan[0].soak_seconds, plan[0].progress_deadline_seconds) == (30, fr.DEFAULT_PROGRESS_DEADLINE_SECONDS)
    assert plan[1].progress_deadline_seconds == 60
    # Only placed clusters are in waves; a wave can be empty; nothing left: no remaining wave.
    plan = fr.plan_waves([{"name": "lab", "clusters": ["lab"]}, {"name": "all", "percent": 100}], ["a", "b"], FLEET)
    assert [(w.name, w.clusters) for w in plan] == [("lab", ()), ("all", ("a", "b"))]
    # A wave of the list named like the implicit one: the implicit one is named apart.
    plan = fr.plan_waves([{"name": "remaining", "clusters": ["a"]}], ["a", "b"], FLEET)
    assert [(w.name, w.clusters) for w in plan] == [("remaining", ("a",)), ("remaining-2", ("b",))]


def isvc(ready: bool | None, recorded: str | None, **runtime: Any) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if recorded is not None:
        status["runtime"] = {"hash": recorded}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": str(ready), "message": "engine starting"}]
    return {"spec": {"runtime": {"name": "rt", **runtime}}, "status": status}


def test_each_engine_is_pinned_behind_updated_or_ready() -> None:
    assert fr.engine_state(isvc(True, "new"), "new") == ("ready", "")
    assert fr.engine_state(isvc(False, "new"), "new") == ("updated", "not Ready: engine starting")
    assert fr.engine_state(isvc(True, "old"), "new")[0] == "behind"  # Ready, but the old render
    assert fr.engine_state(isvc(None, None), "new") == (
        "behind",
        "not at the new runtime revision yet (its status records none)",
    )
    assert fr.engine_state(isvc(True, "new"), "new", "chain broken") == ("behind", "chain broken")
    assert fr.engine_state(isvc(False, "old", autoSync=False), "new") == ("pinned", "")
    assert fr.engine_state(isvc(False, "old", revision="rt-1"), "new") == ("pinned", "")
    # Ready (its old pods serve) while its Deployment has not made the new revision available: it holds the gate
    rolling = isvc(True, "new")
    rolling["status"]["components"] = {"engine": {"latestCreatedRevision": "rt-2", "latestReadyRevision": "rt-1"}}
    assert fr.engine_state(rolling, "new") == (
        "updated",
        "not rolled out: its engine has not made revision rt-2 available yet",
    )
    rolling["status"]["components"]["engine"]["latestReadyRevision"] = "rt-2"
    assert fr.engine_state(rolling, "new") == ("ready", "")
    engines = fr.Engines.of(
        [("ns/a", "ready", ""), ("ns/b", "updated", "not Ready: x"), ("ns/c", "pinned", ""), ("ns/d", "behind", "y")]
    )
    assert engines.to_dict() == {"reached": 4, "updated": 2, "ready": 1, "pinned": 1}
    assert engines.waiting == ("ns/b: not Ready: x", "ns/d: y")
    assert (engines + fr.Engines(1, 1, 1)).to_dict() == {"reached": 5, "updated": 3, "ready": 2, "pinned": 1}


PLAN = [fr.WavePlan("lab", ("lab",), soak_seconds=30, progress_deadline_seconds=100), fr.WavePlan("rest", ("a", "b"))]
T0 = 1_800_000_000.0
GOOD = fr.Engines(1, 1, 1)
SLOW = fr.Engines(1, 1, 0, waiting=("ns/x: not Ready: starting",))


def started(stable: int | None = 1) -> fr.RolloutState:
    state, _ = fr.start_rollout(None, 2, "h2", T0, settled=(stable, "h1") if stable else None)
    return state


def test_a_wave_soaks_once_every_engine_is_ready_then_the_next_starts() -> None:
    state = started()
    assert (state.wave, state.phase, state.stable_revision) == (0, "Progressing", 1)
    assert fr.due_clusters(state, PLAN) == ["lab"]
    waiting = fr.step(state, PLAN, [fr.ClusterGate("lab", True, SLOW)], T0 + 5, paused=False, auto_rollback=False)
    assert waiting.state.phase == "Progressing" and waiting.wake_in == 95
    assert "lab: ns/x: not Ready: starting" in waiting.state.message
    soaking = fr.step(state, PLAN, [fr.ClusterGate("lab", True, GOOD)], T0 + 10, paused=False, auto_rollback=False)
    assert (soaking.state.phase, soaking.state.soak_start, soaking.wake_in) == ("Soaking", T0 + 10, 30)
    assert [e[1] for e in soaking.events] == ["Soaking"]
    # An engine falling back during the soak: Progressing again, and the soak starts over.
    fell = fr.step(soaking.state, PLAN, [fr.ClusterGate("lab", True, SLOW)], T0 + 20, paused=False, auto_rollback=False)
    assert (fell.state.phase, fell.state.soak_start) == ("Progressing", None)
    assert [e[1] for e in fell.events] == ["SoakInterrupted"]
    again = fr.step(fell.state, PLAN, [fr.ClusterGate("lab", True, GOOD)], T0 + 25, paused=False, auto_rollback=False)
    still = fr.step(again.state, PLAN, [fr.ClusterGate("lab", True, GOOD)], T0 + 54, paused=False, auto_rollback=False)
    assert still.state.phase == "Soaking" and not still.advanced
    passed = fr.step(still.state, PLAN, [fr.ClusterGate("lab", True, GOOD)], T0 + 55, paused=False, auto_rollback=False)
    assert passed.advanced and (passed.state.wave, passed.state.phase) == (1, "Progressing")
    assert [e[1] for e in passed.events] == ["WaveSucceeded", "WaveStarted"]
    assert fr.due_clusters(passed.state, PLAN) == ["lab", "a", "b"]
    assert fr.wave_phases(passed.state, PLAN) == ["Succeeded", "Progressing"]
    # The last wave (no soak) passes: Succeeded, and stays so.
    gates = [fr.ClusterGate("a", True, GOOD), fr.ClusterGate("b", True)]  # b: no engine reached, passes
    done = fr.step(passed.state, PLAN, gates, T0 + 56, paused=False, auto_rollback=False)
    assert done.state.phase == "Succeeded" and [e[1] for e in done.events] == ["WaveSucceeded", "RolloutSucceeded"]
    assert fr.wave_phases(done.state, PLAN) == ["Succeeded", "Succeeded"]
    assert fr.step(done.state, PLAN, [], T0 + 999, paused=False, auto_rollback=False).state == done.state


def test_a_copy_not_at_the_revision_holds_the_gate() -> None:
    gate = fr.ClusterGate("lab", False, message="the member's cache has not seen the copy yet")
    step = fr.step(started(), PLAN, [gate], T0 + 1, paused=False, auto_rollback=False)
    assert step.state.phase == "Progressing" and "lab: the member's cache has not seen" in step.state.message


def test_a_wave_past_its_deadline_fails_and_rolls_back_when_asked() -> None:
    gates = [fr.ClusterGate("lab", True, SLOW)]
    kept = fr.step(started(), PLAN, gates, T0 + 100, paused=False, auto_rollback=False)
    assert kept.state.phase == "Failed" and not kept.roll_back
    assert kept.events == [("Warning", "WaveFailed", kept.state.message)]
    assert "did not pass its gate within 100s (progressDeadlineSeconds): lab: ns/x" in kept.state.message
    assert fr.due_clusters(kept.state, PLAN) == ["lab"]  # the failed wave keeps the revision; later waves untouched
    assert fr.wave_phases(kept.state, PLAN) == ["Failed", "Pending"]
    back = fr.step(started(), PLAN, gates, T0 + 100, paused=False, auto_rollback=True)
    assert back.roll_back and back.state.stable_revision == 1
    # Nothing to roll back to (the first revision): Failed, and said so.
    first = fr.step(started(stable=None), PLAN, gates, T0 + 100, paused=False, auto_rollback=True)
    assert not first.roll_back and first.state.message.endswith("no earlier revision to roll back to")
    rolled = replace(back.state, phase="RolledBack")
    assert fr.wave_phases(rolled, PLAN) == ["RolledBack", "Pending"]


def test_pause_holds_the_wave_and_resume_restarts_its_deadline() -> None:
    gates = [fr.ClusterGate("lab", True, GOOD)]
    paused = fr.step(started(), PLAN, gates, T0 + 10, paused=True, auto_rollback=False)
    assert paused.state.phase == "Paused" and paused.events == [("Normal", "Paused", "paused at wave 1 (lab)")]
    held = fr.step(paused.state, PLAN, gates, T0 + 500, paused=True, auto_rollback=False)
    assert held.state == paused.state and not held.events  # past the deadline, but paused: no failure
    resumed = fr.step(
        paused.state, PLAN, [fr.ClusterGate("lab", True, SLOW)], T0 + 500, paused=False, auto_rollback=False
    )
    assert (resumed.state.phase, resumed.state.wave_start) == ("Progressing", T0 + 500)
    assert [e[1] for e in resumed.events] == ["Resumed"]


def test_a_new_revision_mid_rollout_starts_again_from_wave_one_keeping_the_stable_revision() -> None:
    mid = replace(started(), wave=1)
    newer, events = fr.start_rollout(mid, 3, "h3", T0 + 50)
    assert (newer.revision, newer.wave, newer.phase, newer.stable_revision) == (3, 0, "Progressing", 1)
    assert events[0][1] == "RolloutRestarted" and "replaces revision 2 mid-rollout" in events[0][2]
    done = replace(started(), phase="Succeeded")
    after, events = fr.start_rollout(done, 3, "h3", T0 + 50)
    assert (after.stable_revision, after.stable_hash) == (2, "h2") and events[0][1] == "RolloutStarted"
    # The state survives the status round trip (a restarted controller goes on from it).
    soaking = replace(mid, phase="Soaking", soak_start=T0 + 7, message="m")
    assert fr.RolloutState.from_dict(soaking.to_dict(PLAN)) == soaking
    assert soaking.to_dict(PLAN)["wave"] == "rest"
    assert fr.RolloutState.from_dict({"phase": "x"}) is None


def test_with_waves_the_status_carries_the_rollout_each_wave_and_each_clusters_wave() -> None:
    state = replace(started(), phase="Soaking", soak_start=T0 + 5, message="wave 1 (lab): soaking")
    gates = {"lab": fr.ClusterGate("lab", True, fr.Engines(2, 1, 1, 1))}
    view = rollout_view(state, PLAN, gates)
    results = [ClusterResult("a", "Applied", 1), ClusterResult("b", "Pending", message="waits for its wave (rest)")]
    results.append(ClusterResult("lab", "Applied", 2))
    status = build_status({}, 3, 2, results, None, view)
    assert status["phase"] == "Soaking"
    assert status["rollout"] == {
        "revision": 2,
        "hash": "h2",
        "stableRevision": 1,
        "stableHash": "h1",
        "wave": "lab",
        "waveIndex": 0,
        "phase": "Soaking",
        "waveStartTime": "2027-01-15T08:00:00Z",
        "soakStartTime": "2027-01-15T08:00:05Z",
        "message": "wave 1 (lab): soaking",
    }
    engines = {"reached": 2, "updated": 1, "ready": 1, "pinned": 1}
    assert status["waves"] == [
        {"name": "lab", "phase": "Soaking", "clusters": ["lab"], "revision": 2, "engines": engines},
        {"name": "rest", "phase": "Pending", "clusters": ["a", "b"]},
    ]
    by_name = {c["name"]: c for c in status["clusters"]}
    assert (by_name["lab"]["wave"], by_name["lab"]["rolloutPhase"], by_name["lab"]["engines"]) == (
        "lab",
        "Soaking",
        engines,
    )
    assert (by_name["a"]["wave"], by_name["a"]["rolloutPhase"], by_name["a"]["revision"]) == ("rest", "Pending", 1)
    assert "engines" not in by_name["a"]
    ready, progressing = status["conditions"]
    assert (ready["status"], ready["reason"]) == ("False", "Progressing")
    assert ready["message"] == "revision 2 applied to 1 of 3 clusters (1 Pending, 1 at another revision)"
    assert (progressing["type"], progressing["status"], progressing["reason"]) == ("Progressing", "True", "WaveSoaking")
    back = rollout_view(replace(state, phase="RolledBack", message="m"), PLAN, gates)
    rolled = build_status(status, 3, 2, results, None, back)
    assert rolled["phase"] == "RolledBack" and rolled["waves"][0]["revision"] == 1
    assert rolled["conditions"][1]["reason"] == "RolledBack" and rolled["conditions"][1]["status"] == "False"


def test_a_rollback_says_which_clusters_have_the_stable_revision_again_and_which_not_yet() -> None:
    state = replace(started(), wave=1, phase="RolledBack")
    results = {
        "lab": ClusterResult("lab", "Applied", 1),
        "a": ClusterResult("a", "Applied", 1),
        "b": ClusterResult("b", "Pending", 2, message="unreachable"),
    }
    assert rolled_back_message(state, PLAN, results) == (
        "revision 1 re-applied to a, lab after revision 2 failed its gate; not yet to b"
    )


@pytest.mark.parametrize(
    ("value", "clusters", "expected"),
    [(None, 4, 0), (1, 4, 1), ("2", 4, 2), ("50%", 3, 1), ("25%", 3, 0), ("100%", 3, 3), ("x", 4, 0), (-1, 4, 0)],
)
def test_max_unavailable_clusters_is_a_count_or_a_share_rounded_down(value: Any, clusters: int, expected: int) -> None:
    assert fr.max_unavailable(value, clusters) == expected


def test_a_wave_passes_with_up_to_max_unavailable_clusters_failing_its_gate() -> None:
    state = replace(started(), wave=1)
    gates = [fr.ClusterGate("a", True, GOOD), fr.ClusterGate("b", False, message="unreachable")]
    held = fr.step(state, PLAN, gates, T0 + 1, paused=False, auto_rollback=False)
    assert held.state.phase == "Progressing" and "b: unreachable" in held.state.message
    tolerated = fr.step(state, PLAN, gates, T0 + 1, paused=False, auto_rollback=False, max_unavailable=1)
    assert tolerated.state.phase == "Succeeded"
    both = [fr.ClusterGate("a", True, SLOW), fr.ClusterGate("b", False, message="unreachable")]
    over = fr.step(state, PLAN, both, T0 + 1, paused=False, auto_rollback=False, max_unavailable=1)
    assert over.state.phase == "Progressing"
    assert over.state.message.endswith("(2 of 2 clusters not passing, maxUnavailableClusters 1)")


def test_a_promote_passes_the_current_wave_now_soak_and_gate_skipped() -> None:
    gates = [fr.ClusterGate("lab", True, SLOW)]
    promoted = fr.step(started(), PLAN, gates, T0 + 1, paused=False, auto_rollback=False, promote=True)
    assert promoted.advanced and (promoted.state.wave, promoted.state.phase) == (1, "Progressing")
    assert [e[1] for e in promoted.events] == ["Promoted", "WaveSucceeded", "WaveStarted"]
    # Only the current wave: the next one reads its own gate.
    rest = [fr.ClusterGate("a", True, SLOW), fr.ClusterGate("b", True)]
    after = fr.step(promoted.state, PLAN, rest, T0 + 2, paused=False, auto_rollback=False)
    assert after.state.phase == "Progressing"


def request(kind: str, token: str = "t1", **kw: Any) -> fr.Request:
    return fr.Request(kind, token, **kw)  # type: ignore[arg-type]


def test_requests_are_read_from_the_annotations_once_each() -> None:
    state = started()
    annotations = {fr.PROMOTE_ANNOTATION: "p1", fr.ABORT_ANNOTATION: "a1", fr.ROLLBACK_ANNOTATION: "r1"}
    assert [r.kind for r in fr.pending_requests(annotations, state)] == ["abort", "rollback", "promote"]
    handled = state.with_handled("abort", "a1").with_handled("promote", "p1")
    assert fr.pending_requests(annotations, handled) == [fr.Request("rollback", "r1")]
    to = fr.pending_requests({fr.ROLLBACK_ANNOTATION: "r2", fr.ROLLBACK_TO_ANNOTATION: "3"}, handled)
    assert to == [fr.Request("rollback", "r2", 3)]
    (bad,) = fr.pending_requests({fr.ROLLBACK_ANNOTATION: "r2", fr.ROLLBACK_TO_ANNOTATION: "three"}, handled)
    assert bad.problem == "fleet.omectl.io/rollback-to 'three' is not a revision number"
    # Handled requests survive the status round trip and a new rollout (a stale annotation is not acted on again).
    assert fr.RolloutState.from_dict(handled.to_dict(PLAN)) == handled
    assert handled.to_dict(PLAN)["requests"] == {"abort": "a1", "promote": "p1"}
    newer, _ = fr.start_rollout(handled, 3, "h3", T0 + 9)
    assert newer.requests == handled.requests
    # The first rollout: requests made before it count as acted on.
    first, _ = fr.start_rollout(None, 2, "h2", T0, annotations={**annotations, "other": "x"})
    assert first.requests == (("abort", "a1"), ("promote", "p1"), ("rollback", "r1"))
    assert fr.pending_requests(annotations, first) == []


def test_an_abort_stops_the_rollout_where_it_is_and_keeps_the_changed_clusters() -> None:
    state = replace(started(), wave=1, phase="Soaking", soak_start=T0)
    aborted, events, go = fr.act_on(state, PLAN, request("abort"), paused=False)
    assert (aborted.phase, aborted.wave, aborted.soak_start, go) == ("Aborted", 1, None, False)
    assert aborted.message == (
        "aborted at wave 2 (rest): the clusters of waves 1-2 keep revision 2, later waves keep what they had"
    )
    assert events == [("Warning", "RolloutAborted", aborted.message)] and aborted.handled("abort") == "t1"
    assert fr.due_clusters(aborted, PLAN) == ["lab", "a", "b"]  # they keep revision 2
    assert fr.wave_phases(aborted, PLAN) == ["Succeeded", "Aborted"]
    assert fr.step(aborted, PLAN, [], T0 + 999, paused=False, auto_rollback=True).state == aborted  # stopped
    again, events, _ = fr.act_on(aborted, PLAN, request("abort", "t2"), paused=False)
    assert again.phase == "Aborted" and events == [
        ("Warning", "RequestRefused", "abort refused: the rollout of revision 2 is Aborted")
    ]
    assert again.handled("abort") == "t2"


def test_a_promote_is_refused_while_paused_or_once_the_rollout_stopped() -> None:
    state = started()
    ok, events, go = fr.act_on(state, PLAN, request("promote"), paused=False)
    assert go and not events and ok.handled("promote") == "t1"
    held, events, go = fr.act_on(state, PLAN, request("promote"), paused=True)
    assert not go and held.phase == "Progressing"
    assert events[0][2] == "promote refused: the rollout is paused at wave 1 (lab); resume it first"
    done = replace(state, phase="Succeeded")
    _, events, go = fr.act_on(done, PLAN, request("promote"), paused=False)
    assert not go and events[0][2] == "promote refused: the rollout of revision 2 is Succeeded"


def test_a_rollback_request_goes_back_to_the_stable_revision_or_the_one_named() -> None:
    state = replace(started(), phase="Soaking", soak_start=T0)
    back, events, go = fr.act_on(state, PLAN, request("rollback"), paused=False, target=(1, "h1"))
    assert go and (back.phase, back.stable_revision, back.stable_hash, back.soak_start) == ("RolledBack", 1, "h1", None)
    assert events == [("Normal", "RollbackRequested", "rollback of revision 2 to revision 1 requested at wave 1 (lab)")]
    assert fr.due_clusters(back, PLAN) == ["lab"]  # the changed clusters only
    # A Succeeded rollout rolled back: every wave's clusters get the stable revision.
    done = replace(state, wave=1, phase="Succeeded")
    back, _, go = fr.act_on(done, PLAN, request("rollback"), paused=False, target=(1, "h1"))
    assert go and fr.due_clusters(back, PLAN) == ["lab", "a", "b"]
    assert fr.wave_phases(back, PLAN) == ["RolledBack", "RolledBack"]
    # --to N: the revision named, if kept.
    older, _, go = fr.act_on(back, PLAN, request("rollback", "t2", to=7), paused=False, target=(7, "h7"))
    assert go and (older.stable_revision, older.stable_hash) == (7, "h7")

    def refused(st: fr.RolloutState, req: fr.Request, target: tuple[int, str] | None) -> str:
        after, events, go = fr.act_on(st, PLAN, req, paused=False, target=target)
        assert not go and after.phase == st.phase and after.handled("rollback") == req.token
        assert events[0][:2] == ("Warning", "RequestRefused")
        return events[0][2]

    assert refused(started(stable=None), request("rollback"), None) == (
        "rollback refused: no revision before 2 to roll back to"
    )
    assert refused(back, request("rollback", "t3"), (1, "h1")) == "rollback refused: already rolled back to revision 1"
    assert refused(state, request("rollback", to=9), None) == "rollback refused: revision 9 is no longer kept"
    assert refused(state, request("rollback", to=2), (2, "h2")) == (
        "rollback refused: revision 2 is the one being rolled out"
    )
    assert refused(state, request("rollback", problem="x"), None) == "rollback refused: x"


def test_an_aborted_or_requested_rollback_status() -> None:
    aborted = replace(started(), phase="Aborted", message="aborted at wave 1 (lab)")
    view = rollout_view(aborted, PLAN, {"lab": fr.ClusterGate("lab", True, GOOD)})
    status = build_status({}, 3, 2, [ClusterResult("lab", "Applied", 2)], None, view)
    assert status["phase"] == "Aborted" and [w["phase"] for w in status["waves"]] == ["Aborted", "Pending"]
    assert status["conditions"][1]["reason"] == "RolloutAborted" and status["conditions"][1]["status"] == "False"
    back = replace(started(), phase="RolledBack")
    results = {"lab": ClusterResult("lab", "Applied", 1)}
    message = rolled_back_message(back, PLAN, results, "a rollback was requested")
    assert message == "revision 1 re-applied to lab after a rollback was requested"
