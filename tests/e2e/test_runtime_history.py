"""`omectl runtime history` over the revisions a running controller snapshots, and `--diff` between two of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from omectl.cli.main import app
from tests.e2e.conftest import DATA, ControlledFleet, running_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "hist-1"
RUNTIME = "sglang-llama-3-2-3b"
NEW_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6"


def isvc(name: str, **runtime: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((DATA / "isvc.yaml").read_text())
    doc["metadata"]["name"] = name
    doc["spec"]["runtime"].update(runtime)
    return doc


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledFleet]:
    with running_fleet(tmp_path_factory.mktemp("history"), 1, "hist-", concurrency=4) as running:
        running.k(CLUSTER, "create", "namespace", "llama-demo")
        for sample in ("clusterbasemodel.yaml", "profile.yaml", "runtime.yaml"):
            running.k(CLUSTER, "apply", "-f", str(DATA / sample))
        docs = [isvc("follows"), isvc("pinned", autoSync=False)]
        running.k(CLUSTER, "apply", "-f", "-", input=yaml.safe_dump_all(docs))
        wait_revisions(running, 1)
        profile = yaml.safe_load((DATA / "profile.yaml").read_text())
        profile["spec"]["engineConfig"]["runner"]["image"] = NEW_IMAGE
        running.k(CLUSTER, "apply", "-f", "-", input=yaml.safe_dump(profile))
        wait_revisions(running, 2)
        yield running


def wait_revisions(fleet: ControlledFleet, count: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = fleet.k(CLUSTER, "get", "controllerrevisions", "-n", "llama-demo", "-l", f"ome.io/runtime={RUNTIME}",
                      "-o", "name")  # fmt: skip
        pinned = fleet.k(
            CLUSTER, "get", "isvc", "pinned", "-n", "llama-demo", "-o", "jsonpath={.status.runtime.revision}"
        )
        if len(out.split()) == count and pinned:
            return
        time.sleep(0.05)
    raise AssertionError(f"never {count} revisions of {RUNTIME}")


def invoke(fleet: ControlledFleet, *args: str) -> Result:
    argv = ["runtime", "history", RUNTIME, *args, "--kubeconfig", str(fleet.kubectl.kubeconfig), "--context", CLUSTER]
    return CliRunner().invoke(app, argv)


def test_history_lists_revisions_newest_first_with_live_and_pinned(fleet: ControlledFleet) -> None:
    result = invoke(fleet, "-n", "llama-demo", "-o", "json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    newest, oldest = report["revisions"]
    assert (newest["revision"], oldest["revision"]) == (2, 1)
    assert (newest["live"], oldest["live"]) == (True, False)
    assert newest["pinnedBy"] == [] and oldest["pinnedBy"] == ["pinned"]
    assert newest["chain"] == ["sglang-profile", RUNTIME] and len(newest["resourceVersions"]) == 2
    assert newest["name"] == f"{RUNTIME}-{newest['hash']}" and newest["hash"] != oldest["hash"]
    # the table says the same, one row per revision
    table = invoke(fleet, "-n", "llama-demo").stdout.splitlines()
    assert table[0].split()[:4] == ["NAMESPACE", "REVISION", "NAME", "HASH"]
    assert [line.split()[1] for line in table[1:]] == ["2", "1"]
    assert " pinned " in table[2] and " yes " in table[1]


def test_history_name_and_wide_print_the_controller_revisions(fleet: ControlledFleet) -> None:
    report = json.loads(invoke(fleet, "-n", "llama-demo", "-o", "json").stdout)
    names = invoke(fleet, "-n", "llama-demo", "-o", "name")
    assert names.exit_code == 0, names.output
    assert names.stdout.splitlines() == [f"controllerrevision.apps/{r['name']}" for r in report["revisions"]]
    wide = invoke(fleet, "-n", "llama-demo", "-o", "wide").stdout.splitlines()
    assert wide[0].split()[-2:] == ["KIND", "CREATED"]
    assert [line.split()[-2:] for line in wide[1:]] == [[r["kind"], r["created"]] for r in report["revisions"]]


def test_diff_prints_the_merged_spec_change_and_exits_1(fleet: ControlledFleet) -> None:
    result = invoke(fleet, "-n", "llama-demo", "--diff", "1", "2")
    assert result.exit_code == 1, result.output
    assert f"+    image: {NEW_IMAGE}" in result.stdout
    assert "-    image: docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64" in result.stdout
    same = invoke(fleet, "-n", "llama-demo", "--diff", "2", "2")
    assert same.exit_code == 0 and "have the same merged spec" in same.stdout


def test_an_unknown_revision_is_a_one_line_error(fleet: ControlledFleet) -> None:
    result = invoke(fleet, "-n", "llama-demo", "--diff", "1", "9")
    assert result.exit_code == 1
    assert result.stderr == f'error: revision "9" of runtime "{RUNTIME}" not found (cluster {CLUSTER})\n'


def test_kubectl_ome_runtime_history_runs_as_a_plugin(fleet: ControlledFleet) -> None:
    env = fleet.kubectl.env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = [fleet.kubectl.binary, "ome", "runtime", "history", RUNTIME, "-A", "-o", "json",
            "--kubeconfig", str(fleet.kubectl.kubeconfig), "--context", CLUSTER]  # fmt: skip
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [r["revision"] for r in json.loads(proc.stdout)["revisions"]] == [2, 1]
