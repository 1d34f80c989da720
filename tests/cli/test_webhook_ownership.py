"""Issue 19 part 1, as a user meets it: `omectl run` processes, signals, and the real kubectl.

The clusters are a `BackgroundFleet` in this process (so the test reads their stores directly); the controllers are
real `omectl run` processes with 3 s ownership leases; every ServingRuntime is applied with the real `kubectl`, so
the API server calls whatever webhook configuration the cluster holds, as it would in production.

- SIGTERM: the webhook configuration goes with its server, and `kubectl apply` works afterwards;
- a second controller without --ha refuses clusters held by a live one (one line each, exit 1), and the first
  keeps validating;
- SIGKILL: writes fail closed (failurePolicy Fail, as upstream OME's), `omectl cluster status` says why and how to
  fix it, and a new controller takes the clusters over once the Lease has expired; or `omectl cluster
  uninstall-webhooks` cleans the member;
- `omectl cluster remove` while a controller runs: that controller removes the cluster's webhook configuration and
  Lease.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.cli.dev import write_registrations
from omectl.fleet.leases import LeaseRecord
from omectl.fleet.sharding import LEASE_NAME
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from omectl.webhook.server import OWNER_LABEL, WEBHOOK_CONFIGURATION_NAME
from tests.cli.test_run import omectl, poll_until, spawn, stop
from tests.support import Kubectl, kubectl_path

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
VWC = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
LEASE = ("coordination.k8s.io", "leases")
NS = "omectl-system"
LEASE_SECONDS = 3
WEBHOOK_DENIAL = 'admission webhook "servingruntime.ome-webhook-server.validator" denied the request'
pytestmark = [pytest.mark.xdist_group("cli-run"), pytest.mark.kubectl]


@dataclass
class Fleet:
    bg: BackgroundFleet
    tmp: Path
    clusters_dir: Path
    config: Path
    kubectl: Kubectl

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.bg.fleet.servers]

    def server(self, name: str) -> EmbeddedAPIServer:
        return self.bg.fleet[name]

    def read(self, fn: Callable[[], Any]) -> Any:
        async def call() -> Any:
            return fn()

        return self.bg.run(call())

    def webhooks(self, cluster: str) -> dict[str, Any] | None:
        result: dict[str, Any] | None = self.read(
            lambda: self.server(cluster).api.store.get(VWC, "", WEBHOOK_CONFIGURATION_NAME)
        )
        return result

    def lease(self, cluster: str) -> LeaseRecord | None:
        obj = self.read(lambda: self.server(cluster).api.store.get(LEASE, NS, LEASE_NAME))
        return LeaseRecord.from_object(obj) if obj is not None else None

    def run(self, name: str, *extra: str) -> subprocess.Popen[str]:
        return spawn(
            "run", "--config", str(self.config), "--webhook-port", "0", "--metrics-port", "-1",
            "--status-file", str(self.status_file(name)), "--trace-file", str(self.tmp / f"{name}.jsonl"), *extra,
            cwd=self.tmp,
        )  # fmt: skip

    def status_file(self, name: str) -> Path:
        return self.tmp / f"{name}.status.json"

    def apply(self, cluster: str, obj: dict[str, Any]) -> subprocess.CompletedProcess[str]:
        return self.kubectl.run(f"--context={cluster}", "apply", "-f", "-", input=yaml.safe_dump(obj), check=False)

    def installed_by(self, cluster: str) -> str | None:
        """The owner label of the cluster's webhook configuration (the holder identity that installed it)."""
        return ((self.webhooks(cluster) or {}).get("metadata") or {}).get("labels", {}).get(OWNER_LABEL)


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[Fleet]:
    bg = BackgroundFleet(EmbeddedFleet(2, name_prefix="wo-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([CRDS]))
        kubeconfig = bg.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
        clusters_dir = tmp_path / "clusters"
        write_registrations(clusters_dir, kubeconfig, [s.name for s in bg.fleet.servers])
        config = tmp_path / "omectl.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "clusters_dir": str(clusters_dir),
                    "lease_duration": LEASE_SECONDS,
                    "lease_renew_deadline": 2,
                    "lease_retry_period": 0.5,
                }
            )
        )
        yield Fleet(bg, tmp_path, clusters_dir, config, Kubectl(kubectl_path(), kubeconfig, tmp_path / "kube-cache"))
    finally:
        bg.stop()


def runtime(name: str, parent: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    meta["annotations"] = {"ome.io/inherit-from": parent} if parent else {"ome.io/runtime-profile": "true"}
    spec: dict[str, Any] = {"disabled": parent is None, "engineConfig": {"runner": {"name": "ome-container"}}}
    return {"apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime", "metadata": meta, "spec": spec}


def holding(fleet: Fleet, proc: subprocess.Popen[str], timeout: float = 30, other_than: str = "") -> str:
    """Wait until one process (not `other_than`) holds every cluster and its webhooks are installed; its holder
    identity."""

    def check() -> str | None:
        leases = [fleet.lease(c) for c in fleet.names]
        holders = {r.holder for r in leases if r is not None}
        if len(holders) != 1 or not all(r is not None and r.holder for r in leases):
            return None
        (holder,) = holders
        if holder == other_than:
            return None
        return holder if all(fleet.installed_by(c) == holder for c in fleet.names) else None

    identity: str = poll_until(proc, check, "held every cluster with its webhooks installed", timeout)
    return identity


def test_sigterm_takes_the_webhooks_away_and_kubectl_apply_works_afterwards(fleet: Fleet) -> None:
    proc = fleet.run("first")
    try:
        identity = holding(fleet, proc)
        denied = fleet.apply(fleet.names[0], runtime("orphan", "no-such-parent"))
        assert denied.returncode == 1 and WEBHOOK_DENIAL in denied.stderr, denied.stderr  # its webhooks are live
    finally:
        _, err = stop(proc)
    assert proc.returncode == 0, err
    for cluster in fleet.names:
        assert fleet.webhooks(cluster) is None
        lease = fleet.lease(cluster)
        assert lease is not None and lease.holder == "", lease  # released: the next controller takes it at once
        applied = fleet.apply(cluster, runtime("after-stop"))
        assert applied.returncode == 0, applied.stderr
        assert "servingruntime.ome.io/after-stop created" in applied.stdout
    assert identity.split("_")[0]  # the holder identity: <replica id>_<nonce>


def test_a_second_controller_refuses_the_clusters_a_live_one_holds(fleet: Fleet) -> None:
    first = fleet.run("first")
    try:
        identity = holding(fleet, first)
        before = {c: fleet.webhooks(c) for c in fleet.names}
        second = fleet.run("second")
        _, err = second.communicate(timeout=30)
        assert second.returncode == 1, err
        lines = err.strip().splitlines()  # one line per cluster, nothing else
        assert len(lines) == len(fleet.names) and all(line.startswith("error: ") for line in lines), err
        for cluster, line in zip(sorted(fleet.names), lines, strict=True):
            lease = fleet.lease(cluster)
            assert lease is not None
            assert line.startswith(f"error: cluster {cluster} is held by another omectl: {identity} on host "), line
            assert f"(pid {first.pid})" in line and " since 20" in line and "--ha" in line, line
        # the first one's webhooks were never touched, and still validate
        assert {c: fleet.webhooks(c) for c in fleet.names} == before
        denied = fleet.apply(fleet.names[1], runtime("orphan", "no-such-parent"))
        assert denied.returncode == 1 and WEBHOOK_DENIAL in denied.stderr, denied.stderr
        assert all(fleet.installed_by(c) == identity for c in fleet.names)
    finally:
        stop(first)


def test_after_a_sigkill_writes_fail_closed_status_says_why_and_a_new_controller_takes_over(fleet: Fleet) -> None:
    first = fleet.run("first")
    identity = holding(fleet, first)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    killed = time.monotonic()
    cluster = fleet.names[0]
    refused = fleet.apply(cluster, runtime("while-dead"))
    assert refused.returncode == 1 and "failed calling webhook" in refused.stderr, refused.stderr  # fail closed

    shown = omectl(
        "cluster", "status", "--clusters-dir", str(fleet.clusters_dir), "--status-file",
        str(fleet.status_file("first")), cwd=fleet.tmp,
    )  # fmt: skip
    assert shown.returncode == 1, shown.stderr  # the controller is gone: its pid is (it serves no /status here)
    assert shown.stderr.startswith(f"error: the controller is not running (pid {first.pid}"), shown.stderr
    problems = shown.stdout.split("PROBLEMS", 1)[1]
    line = next(x for x in problems.splitlines() if x.strip().startswith(f"{cluster}:"))
    assert "points at https://127.0.0.1:" in line and "which does not answer" in line, line
    assert "every create and update of OME and AIM objects" in line, line
    assert f"its owner {identity}" in line, line
    assert f"omectl cluster uninstall-webhooks {cluster}" in line, line
    as_json = omectl(
        "cluster", "status", "-o", "json", "--clusters-dir", str(fleet.clusters_dir), "--status-file",
        str(fleet.status_file("first")), cwd=fleet.tmp,
    )  # fmt: skip
    members = {m["cluster"]: m for m in json.loads(as_json.stdout)["members"]}
    assert members[cluster]["webhooks"] == "failing" and members[cluster]["fix"], members

    started = time.monotonic()
    second = fleet.run("second")
    try:
        taken = holding(fleet, second, timeout=LEASE_SECONDS + 20, other_than=identity)
        took = time.monotonic() - killed
        print(
            f"taken over {took:.2f} s after the SIGKILL, {time.monotonic() - started:.2f} s after the new controller "
            f"started (lease {LEASE_SECONDS} s)"
        )
        assert took >= LEASE_SECONDS  # only once the dead holder's lease expired
        denied = fleet.apply(cluster, runtime("orphan", "no-such-parent"))
        assert denied.returncode == 1 and WEBHOOK_DENIAL in denied.stderr, denied.stderr
        created = fleet.apply(cluster, runtime("after-takeover"))
        assert created.returncode == 0, created.stderr
        # and the member cannot be cleaned under a live controller
        held = omectl(
            "cluster", "uninstall-webhooks", cluster, "--clusters-dir", str(fleet.clusters_dir), cwd=fleet.tmp
        )
        assert held.returncode == 1 and len(held.stderr.strip().splitlines()) == 1, held.stderr
        assert f"held by a running omectl: {taken} on host" in held.stderr
        assert fleet.installed_by(cluster) == taken
    finally:
        _, err = stop(second)
    assert second.returncode == 0, err


def test_after_a_sigkill_uninstall_webhooks_leaves_the_member_clean(fleet: Fleet) -> None:
    first = fleet.run("first")
    holding(fleet, first)
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    cluster = fleet.names[0]
    deadline = time.monotonic() + LEASE_SECONDS + 5

    def uninstalled() -> subprocess.CompletedProcess[str] | None:
        done = omectl(
            "cluster", "uninstall-webhooks", cluster, "--clusters-dir", str(fleet.clusters_dir), cwd=fleet.tmp
        )
        if done.returncode == 0 or time.monotonic() > deadline:
            return done
        assert "held by a running omectl" in done.stderr  # until the dead holder's lease runs out
        time.sleep(0.5)
        return None

    result = None
    while result is None:
        result = uninstalled()
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f'cluster "{cluster}": deleted validatingwebhookconfiguration {WEBHOOK_CONFIGURATION_NAME}, '
        f"lease {NS}/{LEASE_NAME}"
    )
    assert fleet.webhooks(cluster) is None and fleet.lease(cluster) is None
    assert fleet.apply(cluster, runtime("after-uninstall")).returncode == 0
    again = omectl("cluster", "uninstall-webhooks", cluster, "--clusters-dir", str(fleet.clusters_dir), cwd=fleet.tmp)
    assert again.returncode == 0 and again.stdout.strip() == f'cluster "{cluster}": nothing to remove'
    other = fleet.names[1]  # not touched: still the dead controller's, still failing closed
    assert fleet.webhooks(other) is not None
    usage = omectl("cluster", "uninstall-webhooks", cwd=fleet.tmp)
    assert usage.returncode == 2 and "--kubeconfig" in usage.stderr


def test_cluster_remove_while_running_takes_its_webhooks_and_lease_away(fleet: Fleet) -> None:
    proc = fleet.run("first")
    try:
        identity = holding(fleet, proc)
        gone, kept = fleet.names
        removed = omectl("cluster", "remove", gone, "--clusters-dir", str(fleet.clusters_dir), cwd=fleet.tmp)
        assert removed.returncode == 0, removed.stderr
        assert removed.stdout.splitlines() == [
            f'cluster "{gone}" removed ({fleet.clusters_dir / f"{gone}.yaml"})',
            f'cluster "{gone}": its controller removed its webhook configuration and lease',
        ]
        assert fleet.webhooks(gone) is None and fleet.lease(gone) is None
        applied = fleet.apply(gone, runtime("unmanaged", "no-such-parent"))
        assert applied.returncode == 0, applied.stderr  # no omectl webhook there any more, and no denial
        assert fleet.installed_by(kept) == identity  # the other cluster is still served
        denied = fleet.apply(kept, runtime("orphan", "no-such-parent"))
        assert denied.returncode == 1 and WEBHOOK_DENIAL in denied.stderr, denied.stderr
    finally:
        _, err = stop(proc)
    assert proc.returncode == 0, err
    # with no controller running, `cluster remove` cleans the member itself (here: the released Lease)
    removed = omectl("cluster", "remove", kept, "--clusters-dir", str(fleet.clusters_dir), cwd=fleet.tmp)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout.splitlines()[-1] == f'cluster "{kept}": deleted lease {NS}/{LEASE_NAME}'
    assert fleet.webhooks(kept) is None and fleet.lease(kept) is None
