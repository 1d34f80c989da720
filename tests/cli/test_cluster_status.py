"""`omectl cluster status` tells the truth (issue 19 §2), through the real CLI against a real `omectl run`.

The controller runs on one of two registered clusters (its own clusters directory names only that one); `cluster
status --clusters-dir` reads the directory naming both. The controller serves `GET /status` on its metrics port and
its status file records that address: the command asks the controller, so

- with it running: every registered cluster is listed (the one it does not serve as such), with an ERRORS column
  and the LAST ERROR of a reconcile that failed (a 403 injected on the runtime's status write);
- once it was SIGKILLed (its status file left behind): "not running", when it was last seen, exit 1, and the last
  error it reported still shown from the file;
- `--watch` redraws every `--interval` until Ctrl-C (130).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omectl.cli.dev import write_registrations
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.cli.test_run import CRDS, NAMESPACE, omectl, omectl_env, poll_until, post_runtime, runtime, spawn, stop

pytestmark = pytest.mark.xdist_group("cli-run")
FAILING = "failing-profile"


@dataclass
class Setup:
    bg: BackgroundFleet
    tmp: Path
    registered: Path  # both clusters
    served: Path  # the controller's: the first only
    status_file: Path

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.bg.fleet.servers]

    def run(self) -> subprocess.Popen[str]:
        return spawn(
            "run", "--clusters-dir", str(self.served), "--webhook-port", "0", "--metrics-port", "0",
            "--status-file", str(self.status_file), "--trace-file", str(self.tmp / "traces.jsonl"), cwd=self.tmp,
        )  # fmt: skip

    def status(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return omectl(
            "cluster", "status", "--clusters-dir", str(self.registered), "--status-file", str(self.status_file),
            "--timeout", "2", *extra, cwd=self.tmp,
        )  # fmt: skip

    def fail_status_write_once(self) -> None:
        """The controller's next status write of FAILING on the first cluster is refused with a 403."""
        server = self.bg.fleet.servers[0]

        async def inject() -> None:
            server.faults.fail_next(1, 403, path_contains=f"/servingruntimes/{FAILING}/status")

        self.bg.run(inject())
        assert post_runtime(server.url, server.token, runtime("ServingRuntime", FAILING))[0] == 201


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[Setup]:
    bg = BackgroundFleet(EmbeddedFleet(2, name_prefix="st-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([CRDS]))
        kubeconfig = bg.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
        names = [s.name for s in bg.fleet.servers]
        write_registrations(tmp_path / "registered", kubeconfig, names)
        write_registrations(tmp_path / "served", kubeconfig, names[:1])
        yield Setup(bg, tmp_path, tmp_path / "registered", tmp_path / "served", tmp_path / "status.json")
    finally:
        bg.stop()


def live_status(setup: Setup) -> dict[str, Any] | None:
    """What the controller serves at the address its status file records, once it has one."""
    try:
        url = json.loads(setup.status_file.read_text())["statusUrl"]
        with urllib.request.urlopen(url, timeout=5) as reply:
            document: dict[str, Any] = json.loads(reply.read())
    except (OSError, ValueError, KeyError):
        return None
    return document


def synced(setup: Setup) -> dict[str, Any] | None:
    """The live status once the served cluster is connected and its caches synced."""
    document = live_status(setup)
    clusters = {c["name"]: c for c in (document or {}).get("clusters", [])}
    entry = clusters.get(setup.names[0]) or {}
    return document if entry.get("connected") and entry.get("synced") else None


def failed_once(setup: Setup) -> dict[str, Any] | None:
    """The served cluster's entry once a reconcile failed and a later one succeeded (FAILING resolved)."""
    document = live_status(setup)
    clusters = {c["name"]: c for c in (document or {}).get("clusters", [])}
    entry = clusters.get(setup.names[0])
    if entry is None or not entry["errors"]:
        return None
    server = setup.bg.fleet.servers[0]

    async def resolved() -> bool:
        obj = server.api.store.get(("ome.io", "servingruntimes"), NAMESPACE, FAILING) or {}
        return bool((obj.get("status") or {}).get("conditions"))

    return entry if setup.bg.run(resolved()) else None


def rows_of(stdout: str) -> dict[str, list[str]]:
    """The cluster table's rows by name (the block after the `controller:` line), split on runs of 2+ spaces."""
    import re

    table = stdout.split("\n\n")[1].splitlines()
    return {re.split(r"\s{2,}", line)[0]: re.split(r"\s{2,}", line.strip()) for line in table[1:]}


def test_status_asks_the_running_controller_and_lists_every_registered_cluster(setup: Setup) -> None:
    proc = setup.run()
    try:
        document = poll_until(proc, lambda: synced(setup), "served /status, synced")
        assert document["pid"] == proc.pid
        assert document["statusUrl"].endswith("/status") and document["statusUrl"].startswith("http://127.0.0.1:")
        setup.fail_status_write_once()
        entry = poll_until(proc, lambda: failed_once(setup), "reported a failed reconcile", timeout=30)
        assert entry["state"] == "ready" and entry["lastReconcileTime"].endswith("Z"), json.dumps(entry)
        assert FAILING in entry["lastError"] and "Forbidden" in entry["lastError"], entry

        shown = setup.status()
        assert shown.returncode == 0, shown.stderr
        first, second = setup.names
        assert shown.stdout.startswith(f"controller: running (pid {proc.pid}, {document['statusUrl']})"), shown.stdout
        header = shown.stdout.split("\n\n")[1].splitlines()[0].split()
        assert header[:8] == ["NAME", "STATE", "CONNECTED", "SYNCED", "OBJECTS", "RECONCILES", "ERRORS", "QUEUE"]
        rows = rows_of(shown.stdout)
        assert rows[first][1:4] == ["ready", "yes", "yes"], shown.stdout
        assert int(rows[first][6]) >= 1 and FAILING in rows[first][-1] and "Forbidden" in rows[first][-1], shown.stdout
        assert rows[second][1] == "not served" and rows[second][-1] == "<none>", shown.stdout  # registered, not run

        as_json = json.loads(setup.status("-o", "json").stdout)
        assert as_json["controller"]["running"] is True and as_json["controller"]["source"] == "status"
        clusters = {c["name"]: c for c in as_json["clusters"]}
        assert clusters[first]["errors"] >= 1 and FAILING in clusters[first]["lastError"]
        assert clusters[second] == {"name": second, "registered": True, "state": "not served", "lastError": None}
    finally:
        _, err = stop(proc)
    assert proc.returncode == 0, err
    gone = setup.status()  # a clean stop removes the status file
    assert gone.returncode == 1 and gone.stderr.startswith("error: no running controller found"), gone.stderr
    assert "controller: not running" in gone.stdout


def test_a_sigkilled_controller_is_not_running_and_its_last_error_is_still_shown(setup: Setup) -> None:
    proc = setup.run()
    try:
        poll_until(proc, lambda: synced(setup), "served /status, synced")
        setup.fail_status_write_once()
        entry = poll_until(proc, lambda: failed_once(setup), "reported a failed reconcile", timeout=30)
        # the status file has caught up with the error (it is rewritten every second)
        poll_until(
            proc,
            lambda: any(c.get("errors") for c in json.loads(setup.status_file.read_text())["clusters"]),
            "wrote the error into its status file",
        )
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    assert setup.status_file.exists()  # left behind, saying "healthy" as of its last write

    shown = setup.status()
    assert shown.returncode == 1, shown.stdout
    lines = shown.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"error: the controller is not running (pid {proc.pid}, last seen 20"
    )
    assert "does not answer" in lines[0] and "omectl run" in lines[0], lines
    assert shown.stdout.startswith(f"controller: not running (pid {proc.pid}, last seen 20"), shown.stdout
    rows = rows_of(shown.stdout)
    first, second = setup.names
    assert rows[first][1:4] == ["not served", "-", "-"], shown.stdout  # nobody answers for it now
    assert int(rows[first][6]) >= 1 and rows[first][-1] == entry["lastError"], shown.stdout  # from the status file
    assert rows[second][1] == "not served", shown.stdout

    as_json = setup.status("-o", "json")
    assert as_json.returncode == 1
    document = json.loads(as_json.stdout)
    assert document["controller"]["running"] is False and document["controller"]["lastSeen"].endswith("Z")
    assert {c["name"]: c["lastError"] for c in document["clusters"]}[first] == entry["lastError"]


def test_watch_redraws_every_interval_until_ctrl_c(tmp_path: Path) -> None:
    (tmp_path / "clusters").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "omectl", "cluster", "status", "--watch", "--interval", "0.1",
         "--clusters-dir", str(tmp_path / "clusters"), "--status-file", str(tmp_path / "none.json")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=omectl_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    frames = 0
    try:
        for line in proc.stdout:  # each frame starts with the controller line
            if line.startswith("controller: not running"):
                frames += 1
                if frames == 3:
                    break
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert frames == 3
    assert proc.returncode == 130 and "Traceback" not in err, err
