"""The state directory of the hubless setup (omectl.fleet.runtime_state): what `omectl run` keeps of a FleetRuntime,
written whole and atomically, and the requests of `omectl rollout` applied as a hub's object has them."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from omectl.fleet.runtime_state import EVENTS_KEPT, FleetRuntimeState, StateError, default_state_dir, with_requests


def fleet_runtime(paused: bool | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    rollout: dict[str, Any] = {"waves": [{"name": "lab"}]}
    if paused is not None:
        rollout["paused"] = paused
    metadata: dict[str, Any] = {"name": "a"}
    if annotations:
        metadata["annotations"] = annotations
    return {"metadata": metadata, "spec": {"rollout": rollout}}


def test_requests_are_annotations_over_the_files_own_and_none_removes_one() -> None:
    obj = fleet_runtime(annotations={"team": "ml", "fleet.omectl.io/rollback-to": "3"})
    requests = {"annotations": {"fleet.omectl.io/rollback": "t1", "fleet.omectl.io/rollback-to": None}}
    made = with_requests(obj, requests)
    assert made["metadata"]["annotations"] == {"team": "ml", "fleet.omectl.io/rollback": "t1"}
    assert obj["metadata"]["annotations"]["fleet.omectl.io/rollback-to"] == "3"  # the file's version is untouched
    assert "annotations" not in with_requests(fleet_runtime(), {"annotations": {"x": None}})["metadata"]


def test_a_pause_holds_until_the_files_own_paused_changes() -> None:
    pause = {"paused": {"value": True, "specValue": None}}
    assert with_requests(fleet_runtime(), pause)["spec"]["rollout"]["paused"] is True
    assert with_requests(fleet_runtime(paused=False), pause)["spec"]["rollout"]["paused"] is False  # the file's edit
    resume = {"paused": {"value": False, "specValue": True}}  # resumed while the file says paused
    assert with_requests(fleet_runtime(paused=True), resume)["spec"]["rollout"]["paused"] is False
    assert "rollout" not in with_requests({"metadata": {"name": "a"}, "spec": {}}, pause)["spec"]


def test_the_object_revisions_and_events_are_kept_and_removed_with_it(tmp_path: Path) -> None:
    state = FleetRuntimeState(default_state_dir(tmp_path))
    assert state.root == tmp_path / ".omectl-state"
    assert (state.names(), state.read("a"), state.revisions("a"), state.events("a")) == ([], None, [], [])
    state.write("a", {"metadata": {"name": "a"}, "status": {"revision": 1}})
    assert state.names() == ["a"] and state.read("a") == {"metadata": {"name": "a"}, "status": {"revision": 1}}
    assert [p.name for p in (state.root / "fleetruntimes" / "a").iterdir()] == ["fleetruntime.json"]  # no temp left

    revision = {"metadata": {"name": "a-1234"}, "revision": 1, "data": {"hash": "1234"}}
    assert state.create_revision("a", revision)
    assert not state.create_revision("a", {**revision, "revision": 9})  # a create: the kept one stays
    state.renumber_revision("a", "a-1234", 3)
    assert state.revisions("a") == [{**revision, "revision": 3}]
    state.delete_revision("a", "a-1234")
    state.delete_revision("a", "a-1234")
    assert state.revisions("a") == []

    for number in range(EVENTS_KEPT + 5):
        state.append_event("a", {"reason": f"R{number}"})
    events = state.events("a")
    assert len(events) == EVENTS_KEPT
    assert (events[0], events[-1]) == ({"reason": "R5"}, {"reason": f"R{EVENTS_KEPT + 4}"})

    state.remove("a")
    assert not (state.root / "fleetruntimes" / "a").exists() and state.names() == []


def test_requests_from_two_commands_at_once_both_count(tmp_path: Path) -> None:
    state = FleetRuntimeState(tmp_path)
    barrier = threading.Barrier(8)

    def request(number: int) -> None:
        barrier.wait()
        state.update_requests("a", lambda r: r.setdefault("annotations", {}).update({f"k{number}": "v"}))

    threads = [threading.Thread(target=request, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(state.requests("a")["annotations"]) == [f"k{n}" for n in range(8)]


def test_problems_are_kept_only_once_there_are_some(tmp_path: Path) -> None:
    state = FleetRuntimeState(tmp_path / "state")
    state.write_problems({})
    assert not (tmp_path / "state").exists()  # a setup without problems or FleetRuntimes gets no state directory
    state.write_problems({"f.yaml": "f.yaml: invalid YAML"})
    assert state.problems() == {"f.yaml": "f.yaml: invalid YAML"}
    state.write_problems({})
    assert state.problems() == {}


def test_a_state_file_that_is_not_json_is_one_line_naming_it(tmp_path: Path) -> None:
    state = FleetRuntimeState(tmp_path)
    (tmp_path / "fleetruntimes" / "a").mkdir(parents=True)
    path = tmp_path / "fleetruntimes" / "a" / "requests.json"
    path.write_text("{not json")
    with pytest.raises(StateError) as caught:
        state.requests("a")
    assert str(caught.value).startswith(f"{path}: not valid JSON: ") and "\n" not in str(caught.value)
    path.write_text(json.dumps(["a list"]))
    assert state.requests("a") == {}
