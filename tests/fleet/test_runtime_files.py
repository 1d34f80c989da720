"""FleetRuntime files of the hubless setup (omectl.fleet.runtime_files): which documents are FleetRuntimes, what is
refused in one line and keeps the version accepted before, and what makes a scan unable to tell a deletion."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from omectl.api.fleet import document_problem
from omectl.fleet.runtime_files import FleetRuntimeFiles, name_problem


def fleet_runtime(name: Any, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "fleet.omectl.io/v1alpha1", "kind": "FleetRuntime", "metadata": {"name": name}, "spec": spec}


def write(directory: Path, filename: str, *documents: Any) -> Path:
    path = directory / filename
    path.write_text(yaml.safe_dump_all(documents))
    return path


def test_the_fleet_runtimes_of_every_yaml_file_other_kinds_ignored(tmp_path: Path) -> None:
    registration = {"apiVersion": "omectl.io/v1alpha1", "kind": "ClusterRegistration", "metadata": {"name": "c1"}}
    write(tmp_path, "c1.yaml", registration)
    both = write(tmp_path, "both.yml", fleet_runtime("a", driftPolicy="Report"), fleet_runtime("b"))
    (tmp_path / "notes.txt").write_text("kind: FleetRuntime\nmetadata: {name: c}\n")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", "d.yaml", fleet_runtime("d"))
    with_status = fleet_runtime("e")
    with_status["status"] = {"phase": "Succeeded"}
    write(tmp_path, "e.yaml", with_status)

    scan = FleetRuntimeFiles(tmp_path).scan()
    assert sorted(scan.runtimes) == ["a", "b", "e"]
    assert scan.runtimes["a"].file == both and scan.runtimes["a"].document["spec"] == {"driftPolicy": "Report"}
    assert "status" not in scan.runtimes["e"].document  # the controller owns it
    assert (scan.errors, scan.refused, scan.complete, scan.served) == ({}, set(), True, True)


def test_what_a_hub_would_refuse_is_one_line_each_and_keeps_the_name_refused(tmp_path: Path) -> None:
    wrong_version = {**fleet_runtime("v", template={}), "apiVersion": "fleet.omectl.io/v1"}
    bad = write(tmp_path, "bad.yaml", fleet_runtime("s", template={}, driftPolicy="Sometimes"), wrong_version)
    write(tmp_path, "names.yaml", fleet_runtime("Not_A_Name", template={}))
    first = write(tmp_path, "a.yaml", fleet_runtime("twice", template={}))
    second = write(tmp_path, "b.yaml", fleet_runtime("twice", template={}, driftPolicy="Correct"))

    scan = FleetRuntimeFiles(tmp_path, check=document_problem).scan()
    assert sorted(scan.runtimes) == ["twice"] and scan.runtimes["twice"].file == first
    assert scan.refused == {"s", "v", "Not_A_Name"}
    assert scan.errors[f"{bad}: s"] == (
        f"{bad}: fleetruntime s: spec.driftPolicy: must be one of 'Report' or 'Correct' (got 'Sometimes')"
    )
    assert scan.errors[f"{bad}: v"] == (
        f"{bad}: fleetruntime v: apiVersion must be fleet.omectl.io/v1alpha1, not 'fleet.omectl.io/v1'"
    )
    assert scan.errors[f"{second}: twice"] == f'{second}: duplicate FleetRuntime "twice" (first in a.yaml): ignored'
    assert 'invalid name "Not_A_Name"' in scan.errors[f"{tmp_path / 'names.yaml'}: Not_A_Name"]
    assert all("\n" not in message for message in scan.errors.values())
    assert scan.complete  # every FleetRuntime there is named: one not found is deleted


def test_a_file_that_does_not_parse_or_a_nameless_fleet_runtime_leaves_the_scan_unable_to_tell(tmp_path: Path) -> None:
    write(tmp_path, "ok.yaml", fleet_runtime("ok"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("kind: FleetRuntime\nmetadata: {name: x\n")
    scan = FleetRuntimeFiles(tmp_path).scan()
    assert sorted(scan.runtimes) == ["ok"] and not scan.complete
    assert scan.errors[str(broken)].startswith(f"{broken}: invalid YAML: ") and "line" in scan.errors[str(broken)]

    broken.write_bytes(b"\xff\xfe")
    assert FleetRuntimeFiles(tmp_path).scan().errors[str(broken)] == f"{broken}: not UTF-8 text"

    broken.unlink()
    write(tmp_path, "nameless.yaml", fleet_runtime(None))
    scan = FleetRuntimeFiles(tmp_path).scan()
    assert not scan.complete and scan.refused == set()
    assert list(scan.errors.values()) == [f"{tmp_path / 'nameless.yaml'}: a FleetRuntime: metadata.name is missing"]


def test_a_missing_directory_serves_nothing_and_an_edit_is_read_at_the_next_scan(tmp_path: Path) -> None:
    files = FleetRuntimeFiles(tmp_path / "clusters")
    scan = files.scan()
    assert (scan.served, scan.complete, scan.runtimes) == (False, False, {})
    (tmp_path / "clusters").mkdir()
    path = write(tmp_path / "clusters", "a.yaml", fleet_runtime("a", driftPolicy="Report"))
    assert files.scan().runtimes["a"].document["spec"] == {"driftPolicy": "Report"}
    path.write_text(yaml.safe_dump(fleet_runtime("a", driftPolicy="Correct")))  # same size: the bytes are compared
    assert files.scan().runtimes["a"].document["spec"] == {"driftPolicy": "Correct"}
    path.unlink()
    assert files.scan().runtimes == {}


def test_a_name_is_a_label_value_and_a_directory_name() -> None:
    assert name_problem("sglang-h200.v2") is None
    for name in ("", None, "a/b", "..", "A", "-a", "a" * 64):
        problem = name_problem(name)
        assert problem is not None, name


def check_of(problems: Mapping[str, str]) -> Any:
    return lambda document: problems.get(document["metadata"]["name"])


def test_the_check_is_the_callers(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", fleet_runtime("a"), fleet_runtime("b"))
    scan = FleetRuntimeFiles(tmp_path, check=check_of({"b": "no b today"})).scan()
    assert sorted(scan.runtimes) == ["a"] and scan.refused == {"b"}
    assert scan.errors == {f"{tmp_path / 'a.yaml'}: b": f"{tmp_path / 'a.yaml'}: fleetruntime b: no b today"}
