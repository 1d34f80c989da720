"""`omectl run` and `omectl dev up --controller` as real processes: sync, webhooks, status, traces, clean shutdown.

The clusters of the `omectl run` test are a `BackgroundFleet` in this process, so waiting for what the controller
writes into them is waiting for store commits. What the controller process itself writes (its status file) can
only be polled, with a deadline; `dev up`'s clusters are watched over HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from omectl.cli.dev import write_registrations
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
NAMESPACE = "default"
PROFILE = "sglang-profile"
CHILD = "sglang-llama-3-2-3b"
SR_WEBHOOK = 'admission webhook "servingruntime.ome-webhook-server.validator" denied the request: '
WEBHOOK_CONFIGURATION = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
SR = ("ome.io", "servingruntimes")
pytestmark = pytest.mark.xdist_group("cli-run")


def omectl_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OMECTL_"))}
    return dict(env, PYTHONPATH=str(ROOT), COLUMNS="400")


def omectl(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omectl", *args], capture_output=True, text=True, cwd=cwd, env=omectl_env(),
        timeout=timeout,
    )  # fmt: skip


def spawn(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "omectl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env=omectl_env(),
    )


def stop(proc: subprocess.Popen[str], timeout: float = 30) -> tuple[str, str]:
    """SIGTERM, then the process's output once it exits (killed, and the test failed, if it does not in time)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"did not exit within {timeout}s of SIGTERM:\n{err}") from None


def poll_until(
    proc: subprocess.Popen[str], check: Callable[[], Any], what: str, timeout: float = 60, interval: float = 0.05
) -> Any:
    """Another process's files can only be polled: re-check until `check` returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"exited ({proc.returncode}) before {what}:\n{out}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"never {what} within {timeout}s")
        time.sleep(interval)


def runtime(kind: str, name: str, parent: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if kind == "ServingRuntime":
        meta["namespace"] = NAMESPACE
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    else:
        meta["annotations"] = {"ome.io/runtime-profile": "true"}
    spec: dict[str, Any] = {"disabled": parent is None, "engineConfig": {"runner": {"name": "ome-container"}}}
    if parent is None:
        spec["engineConfig"]["runner"]["image"] = "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def post_runtime(base_url: str, token: str, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """Create a runtime over HTTP, as any client does; returns the status code and the body."""
    path = (
        f"/apis/ome.io/v1beta1/namespaces/{NAMESPACE}/servingruntimes"
        if obj["kind"] == "ServingRuntime"
        else "/apis/ome.io/v1beta1/clusterservingruntimes"
    )
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    request = urllib.request.Request(base_url + path, data=json.dumps(obj).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def inheritance_reason(obj: dict[str, Any] | None) -> str:
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    return next((c.get("reason", "") for c in conditions if c.get("type") == "InheritanceReady"), "")


async def until(servers: list[EmbeddedAPIServer], predicate: Callable[[], bool], timeout: float = 30) -> None:
    """On the fleet's loop: re-check `predicate` after every commit on any of the servers."""
    changed = asyncio.Event()

    def listener(_event: Any) -> None:
        changed.set()

    for server in servers:
        server.api.store.listeners.append(listener)
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                changed.clear()
                await changed.wait()
    finally:
        for server in servers:
            server.api.store.listeners.remove(listener)


# --- omectl run ------------------------------------------------------------------------------------------------


@dataclass
class Fleet:
    bg: BackgroundFleet
    clusters_dir: Path

    @property
    def servers(self) -> list[EmbeddedAPIServer]:
        return self.bg.fleet.servers

    def wait(self, predicate: Callable[[], bool], timeout: float = 30) -> None:
        self.bg.run(until(self.servers, predicate, timeout), timeout + 5)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    bg = BackgroundFleet(EmbeddedFleet(2, name_prefix="run-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([CRDS]))
        kubeconfig = bg.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
        clusters_dir = tmp_path / "clusters"
        write_registrations(clusters_dir, kubeconfig, [s.name for s in bg.fleet.servers])
        yield Fleet(bg, clusters_dir)
    finally:
        bg.stop()


def synced_status(status_file: Path, names: list[str]) -> dict[str, Any] | None:
    """The status document once it shows every cluster connected and synced."""
    try:
        document: dict[str, Any] = json.loads(status_file.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    clusters = {c["name"]: c for c in document.get("clusters", [])}
    if sorted(clusters) == sorted(names) and all(c["synced"] and c["connected"] for c in clusters.values()):
        return document
    return None


def test_run_serves_the_fleet_reports_status_and_stops_cleanly_on_sigterm(fleet: Fleet, tmp_path: Path) -> None:
    status_file = tmp_path / "state" / "status.json"
    trace_file = tmp_path / "traces.jsonl"
    names = [s.name for s in fleet.servers]
    proc = spawn(
        "run",
        "--webhook-port",
        "0",
        "--clusters-dir",
        str(fleet.clusters_dir),
        "--status-file",
        str(status_file),
        "--trace-file",
        str(trace_file),
        cwd=tmp_path,
    )
    try:
        document = poll_until(proc, lambda: synced_status(status_file, names), "reported both clusters synced")
        assert document["pid"] == proc.pid

        # it installs its webhooks into every cluster, and they answer with the spec's reasons
        fleet.wait(lambda: all(s.api.store.items(WEBHOOK_CONFIGURATION) for s in fleet.servers))
        first = fleet.servers[0]
        status, body = post_runtime(first.url, first.token, runtime("ServingRuntime", CHILD, PROFILE))
        assert status == 403, body
        assert body["message"] == (SR_WEBHOOK + f'inherit-from parent "{PROFILE}" not found (chain so far: [{CHILD}])')

        # a runtime created through HTTP gets its status from the controller
        for server in fleet.servers:
            assert post_runtime(server.url, server.token, runtime("ClusterServingRuntime", PROFILE))[0] == 201
            status, body = post_runtime(server.url, server.token, runtime("ServingRuntime", CHILD, PROFILE))
            assert status == 201, body
        fleet.wait(
            lambda: all(inheritance_reason(s.api.store.get(SR, NAMESPACE, CHILD)) == "Resolved" for s in fleet.servers)
        )
        chains = {
            s.name: (s.api.store.get(SR, NAMESPACE, CHILD) or {})["status"]["inheritanceChain"] for s in fleet.servers
        }
        assert chains == {name: [PROFILE, CHILD] for name in names}

        shown = omectl("cluster", "status", "--status-file", str(status_file), cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith(f"controller: running (pid {proc.pid}, http://127.0.0.1:"), shown.stdout
        controller_table = shown.stdout.split("\n\n")[1]  # then the resolver line, and what the members say
        rows = {line.split()[0]: line.split() for line in controller_table.splitlines() if line.strip()}
        for name in names:
            assert rows[name][1:4] == ["ready", "yes", "yes"], shown.stdout  # STATE, CONNECTED, SYNCED
    finally:
        _, err = stop(proc)
    assert proc.returncode == 0, err
    assert not status_file.exists()
    assert trace_file.stat().st_size > 0

    listed = omectl("trace", "list", "--file", str(trace_file), "-o", "json", "--limit", "1000", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    reconciles = json.loads(listed.stdout)
    resolved = {(r["cluster"], r["name"]) for r in reconciles if r["result"] == "success"}
    assert {(name, CHILD) for name in names} <= resolved
    table = omectl("trace", "list", "--file", str(trace_file), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert f"{NAMESPACE}/{CHILD}" in table.stdout


def test_run_with_an_unknown_config_key_exits_1_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("clusters_dir: clusters\nbogus_key: 1\n")
    proc = omectl("run", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 1
    assert "bogus_key" in proc.stderr
    assert proc.stderr.startswith("error:")


def test_run_with_an_unknown_config_key_exits_1_with_a_one_line_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("clusters_dir: clusters\nbogus_key: 1\n")
    proc = omectl("run", "--config", str(config), cwd=tmp_path)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error:") and "bogus_key" in lines[0]


# --- omectl dev up --controller --------------------------------------------------------------------------------


async def watch_until_resolved(base_url: str, token: str, name: str, timeout: float = 30) -> dict[str, Any]:
    """Watch one ServingRuntime over HTTP until its InheritanceReady reason is Resolved; returns that object."""
    path = f"/apis/ome.io/v1beta1/namespaces/{NAMESPACE}/servingruntimes"
    query = {"watch": "1", "fieldSelector": f"metadata.name={name}", "timeoutSeconds": str(int(timeout))}
    async with (
        asyncio.timeout(timeout),
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session,
        session.get(base_url + path, params=query) as reply,
    ):
        assert reply.status == 200
        async for line in reply.content:
            event = json.loads(line)
            obj: dict[str, Any] = event["object"]
            if inheritance_reason(obj) == "Resolved":
                return obj
    raise AssertionError(f"the watch of {name} ended before it resolved")


def test_dev_up_with_the_controller_resolves_runtimes_and_stops_on_sigterm(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    proc = spawn(
        "dev",
        "up",
        "--clusters",
        "1",
        "--name-prefix",
        "dev-",
        "--controller",
        "--webhook-port",
        "0",
        "--register",
        str(tmp_path / "clusters"),
        "--ready-file",
        str(ready),
        "--kubeconfig-out",
        str(tmp_path / "fleet.kubeconfig"),
        "--apply",
        str(CRDS),
        cwd=tmp_path,
    )
    try:
        poll_until(proc, ready.exists, "wrote the ready file")
        name, url = ready.read_text().split()
        assert name == "dev-1"
        assert (tmp_path / "clusters" / "dev-1.yaml").exists()
        token = yaml.safe_load((tmp_path / "fleet.kubeconfig").read_text())["users"][0]["user"]["token"]
        assert post_runtime(url, token, runtime("ClusterServingRuntime", PROFILE))[0] == 201
        status, body = post_runtime(url, token, runtime("ServingRuntime", CHILD, PROFILE))
        assert status == 201, body
        resolved = asyncio.run(watch_until_resolved(url, token, CHILD))
        assert resolved["status"]["inheritanceChain"] == [PROFILE, CHILD]
    finally:
        _, err = stop(proc)
    assert proc.returncode == 0, err
    assert not ready.exists()
    assert not (tmp_path / ".omectl" / "controller-status.json").exists()
