"""The hubless FleetRuntime store (omectl.controller.fleet_runtime_stores.directory): the files handed out as a hub
stores them (generation, requests, status), a broken file deleting nothing, and everything read back by a new
store over the same directories, as after a restart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.controller.fleet_runtime_stores import RevisionExists
from omectl.controller.fleet_runtime_stores.directory import DirectoryStore

Seen = list[tuple[str, str, bool]]


def fleet_runtime(name: str, image: str = "a:1", **extra: Any) -> dict[str, Any]:
    template = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": name},
        "spec": {"engineConfig": {"runner": {"name": "ome-container", "image": image}}},
    }
    metadata: dict[str, Any] = {"name": name, **extra.pop("metadata", {})}
    spec = {"template": template, "placement": {"clusters": ["c1"]}, **extra}
    return {"apiVersion": "fleet.omectl.io/v1alpha1", "kind": "FleetRuntime", "metadata": metadata, "spec": spec}


class Files:
    def __init__(self, tmp_path: Path) -> None:
        self.directory = tmp_path / "clusters"
        self.directory.mkdir()
        self.state = tmp_path / "state"

    def write(self, filename: str, *documents: dict[str, Any]) -> None:
        (self.directory / filename).write_text(yaml.safe_dump_all(documents))

    def store(self) -> tuple[DirectoryStore, Seen]:
        store = DirectoryStore(self.directory, self.state)
        seen: Seen = []
        store.add_handler(lambda event, obj, old, initial: seen.append((event, obj["metadata"]["name"], initial)))
        return store, seen

    def kept(self, name: str) -> dict[str, Any]:
        return json.loads((self.state / "fleetruntimes" / name / "fleetruntime.json").read_text())  # type: ignore[no-any-return]

    def request(self, name: str, requests: dict[str, Any]) -> None:
        path = self.state / "fleetruntimes" / name / "requests.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(requests))


@pytest.fixture
def files(tmp_path: Path) -> Files:
    return Files(tmp_path)


async def test_a_file_is_handed_out_as_a_hub_stores_it_its_generation_moving_with_its_spec(files: Files) -> None:
    files.write("a.yaml", fleet_runtime("a", metadata={"labels": {"team": "ml"}}))
    store, seen = files.store()
    assert not store.synced.is_set()
    await store.refresh()
    assert store.synced.is_set() and store.served and seen == [("ADDED", "a", True)]
    obj = store.get("a")
    assert obj is not None and [o["metadata"]["name"] for o in store.objects()] == ["a"]
    assert (obj["metadata"]["generation"], obj["metadata"]["labels"]) == (1, {"team": "ml"})
    assert obj["metadata"]["uid"] and obj["metadata"]["creationTimestamp"]
    assert obj["spec"]["template"]["spec"]["engineConfig"]["runner"]["image"] == "a:1"
    assert files.kept("a")["source"]["file"] == str(files.directory / "a.yaml")

    await store.refresh()
    assert len(seen) == 1  # nothing changed, nothing said
    files.write("a.yaml", fleet_runtime("a", "a:2"))
    await store.refresh()
    assert seen[-1] == ("MODIFIED", "a", False) and store.get("a")["metadata"]["generation"] == 2  # type: ignore[index]
    files.write("a.yaml", fleet_runtime("a", "a:2", metadata={"annotations": {"note": "x"}}))
    await store.refresh()
    assert store.get("a")["metadata"]["generation"] == 2  # type: ignore[index]  # metadata is not the spec


async def test_requests_are_applied_a_pause_moving_the_generation_a_token_not(files: Files) -> None:
    files.write("a.yaml", fleet_runtime("a", rollout={"waves": [{"name": "lab", "clusters": ["c1"]}]}))
    store, seen = files.store()
    await store.refresh()
    files.request("a", {"annotations": {"fleet.omectl.io/promote": "t1"}})
    await store.refresh()
    obj = store.get("a")
    assert obj is not None and obj["metadata"]["annotations"] == {"fleet.omectl.io/promote": "t1"}
    assert obj["metadata"]["generation"] == 1 and seen[-1] == ("MODIFIED", "a", False)
    files.request("a", {"paused": {"value": True, "specValue": None}})
    await store.refresh()
    obj = store.get("a")
    assert obj is not None and obj["spec"]["rollout"]["paused"] is True and obj["metadata"]["generation"] == 2


async def test_the_status_is_kept_and_read_back_by_the_next_store_with_everything_else(files: Files) -> None:
    files.write("a.yaml", fleet_runtime("a"))
    store, _ = files.store()
    await store.refresh()
    first = store.get("a")
    assert first is not None
    await store.write_status(first, lambda live: {"revision": 1, "phase": "Succeeded", "seen": live.get("status")})
    assert files.kept("a")["status"] == {"revision": 1, "phase": "Succeeded", "seen": None}
    kept = files.state / "fleetruntimes" / "a" / "fleetruntime.json"
    written = kept.stat().st_mtime_ns
    await store.write_status(first, lambda live: dict(live["status"]))  # the same status: not written
    await store.write_status(first, lambda live: None)
    assert kept.stat().st_mtime_ns == written
    await store.create_revision(first, "a-1", 1, {"hash": "1", "template": {}})
    with pytest.raises(RevisionExists):
        await store.create_revision(first, "a-1", 2, {"hash": "1", "template": {}})
    await store.record_event(first, "Normal", "RolloutStarted", "rolling out revision 1 from wave 1")

    again, seen = files.store()  # a restart
    await again.refresh()
    back = again.get("a")
    assert back is not None and seen == [("ADDED", "a", True)]
    assert back["metadata"] == first["metadata"]  # uid, creation time and generation kept: the spec is the same
    assert back["status"]["phase"] == "Succeeded"
    assert [r["metadata"]["name"] for r in await again.list_revisions("a")] == ["a-1"]
    events = (files.state / "fleetruntimes" / "a" / "events.jsonl").read_text().splitlines()
    assert [json.loads(line)["reason"] for line in events] == ["RolloutStarted"]


async def test_a_broken_file_deletes_nothing_and_a_file_gone_deletes_its_fleet_runtime(files: Files) -> None:
    files.write("a.yaml", fleet_runtime("a"))
    files.write("b.yaml", fleet_runtime("b"))
    store, seen = files.store()
    await store.refresh()
    (files.directory / "a.yaml").write_text("kind: FleetRuntime\nmetadata: [a\n")
    (files.directory / "b.yaml").unlink()
    await store.refresh()
    assert sorted(o["metadata"]["name"] for o in store.objects()) == ["a", "b"]  # which one a.yaml held is not known
    assert any("a.yaml: invalid YAML" in message for message in store.errors.values())
    assert len(seen) == 2

    files.write("a.yaml", fleet_runtime("a", driftPolicy="Sometimes"))  # parses, refused: the accepted one stands
    await store.refresh()
    assert [o["metadata"]["name"] for o in store.objects()] == ["a"] and ("DELETED", "b", False) in seen
    assert store.get("a")["spec"].get("driftPolicy") is None  # type: ignore[index]
    assert not (files.state / "fleetruntimes" / "b").exists()
    problems = json.loads((files.state / "problems.json").read_text())
    assert list(problems.values()) == [
        f"{files.directory / 'a.yaml'}: fleetruntime a: spec.driftPolicy: must be one of 'Report' or 'Correct' "
        "(got 'Sometimes')"
    ]

    (files.directory / "a.yaml").unlink()
    await store.refresh()
    assert store.objects() == [] and seen[-1] == ("DELETED", "a", False) and store.errors == {}
    assert json.loads((files.state / "problems.json").read_text()) == {}


async def test_one_deleted_while_no_controller_ran_is_deleted_at_start(files: Files) -> None:
    files.write("a.yaml", fleet_runtime("a"))
    store, _ = files.store()
    await store.refresh()
    (files.directory / "a.yaml").unlink()
    again, seen = files.store()
    await again.refresh()
    assert again.objects() == [] and seen == [("DELETED", "a", True)]
    assert not (files.state / "fleetruntimes" / "a").exists()


async def test_a_missing_directory_serves_none_and_deletes_none(files: Files) -> None:
    files.write("a.yaml", fleet_runtime("a"))
    store, _ = files.store()
    await store.refresh()
    (files.directory / "a.yaml").unlink()
    files.directory.rmdir()
    await store.refresh()
    assert not store.served and [o["metadata"]["name"] for o in store.objects()] == ["a"]


async def test_a_template_the_controller_cannot_apply_is_handed_out_and_reported(files: Files) -> None:
    bad = fleet_runtime("a")
    bad["spec"]["template"]["kind"] = "ServingRuntime"
    files.write("a.yaml", bad)
    store, seen = files.store()
    await store.refresh()
    assert seen == [("ADDED", "a", True)]  # the applier marks it Invalid, as in a hub
    assert list(store.errors.values()) == [
        f"{files.directory / 'a.yaml'}: fleetruntime a: spec.namespaces is required for a ServingRuntime template "
        "(Invalid: nothing is applied or deleted)"
    ]
