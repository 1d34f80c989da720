"""Which revision an InferenceService renders (pinned, requested or live), its drift condition, and which runtime
revisions a collection deletes."""

from __future__ import annotations

from typing import Any

from omectl.core.ome.pinning import AUTO_SYNC, Pin, drift_from_live, pin_of
from omectl.core.ome.revisions import (
    KEEP_UNREFERENCED,
    Revision,
    next_number,
    referenced_revisions,
    revision_name,
    revision_object,
    spec_hash,
    stale_revisions,
)


def isvc(runtime: dict[str, Any], recorded: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "svc"}, "spec": {"runtime": runtime}, "status": {"runtime": recorded or {}}}


def revision(name: str, number: int, digest: str = "h") -> Revision:
    return Revision(name, "rt", "ServingRuntime", number, digest, ("rt",), {})


def test_an_inference_service_follows_the_live_revision_unless_it_pins_or_requests_one() -> None:
    assert pin_of(isvc({"name": "rt"}), "rt") == Pin(None, True, None)
    assert pin_of(isvc({"name": "rt"}), "rt").follows_live
    assert pin_of(isvc({"name": "rt", "revision": "rt-1"}), "rt") == Pin("rt-1", True, None)
    pinned = pin_of(isvc({"name": "rt", "autoSync": False}, {"name": "rt", "revision": "rt-1"}), "rt")
    assert pinned == Pin(None, False, "rt-1") and not pinned.follows_live
    # the revision recorded for another runtime pins nothing: the first reconcile on this one pins the live one
    assert pin_of(isvc({"name": "rt", "autoSync": False}, {"name": "old", "revision": "old-1"}), "rt").pinned is None
    assert AUTO_SYNC["reason"] == "AutoSync" and AUTO_SYNC["status"] == "False"


def test_a_pinned_revision_drifts_when_its_hash_is_not_the_live_ones() -> None:
    live, old = revision("rt-new", 2, "new"), revision("rt-old", 1, "old")
    drifted = drift_from_live(old, live)
    assert (drifted["status"], drifted["reason"]) == ("True", "RevisionMismatch")
    assert drifted["message"] == "pinned revision rt-old differs from the live revision rt-new"
    assert drift_from_live(live, live)["reason"] == "UpToDate"


def test_a_revision_object_is_named_by_its_spec_hash_and_counts_up() -> None:
    spec = {"engineConfig": {"runner": {"image": "a"}}}
    obj = revision_object("ns", "rt", "ServingRuntime", ["base", "rt"], ["1", "2"], spec, next_number([]))
    assert obj["metadata"]["name"] == revision_name("rt", spec_hash(spec)) == f"rt-{spec_hash(spec)}"
    assert obj["revision"] == 1
    parsed = Revision.from_object(obj)
    assert (parsed.runtime, parsed.kind, parsed.chain, parsed.spec) == ("rt", "ServingRuntime", ("base", "rt"), spec)
    assert next_number([parsed, revision("x", 7)]) == 8


def test_collection_keeps_the_referenced_and_the_newest_unreferenced_revisions() -> None:
    revisions = [revision(f"rt-{n}", n) for n in range(1, KEEP_UNREFERENCED + 4)]
    referenced = referenced_revisions(
        [isvc({"name": "rt", "revision": "rt-1"}), isvc({"name": "rt"}, {"name": "rt", "revision": "rt-2"})]
    )
    assert referenced == {"rt-1", "rt-2"}
    assert [r.name for r in stale_revisions(revisions, referenced)] == ["rt-3"]
