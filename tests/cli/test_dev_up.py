"""`omectl dev up`: a real process serving a fleet, driven by kubectl, stopped by SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.support import Kubectl, kubectl_path

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("kubectl")]
ROOT = Path(__file__).resolve().parents[2]


def wait_for_file(path: Path, proc: subprocess.Popen[str], timeout: float = 180) -> None:
    # a deadline for start-up, not a figure: on two loaded cores with coverage it has taken over a minute
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"dev up exited early: {proc.communicate()}")
        assert time.monotonic() < deadline, "dev up never became ready"
        time.sleep(0.05)


def test_dev_up_serves_a_fleet_and_stops_cleanly(tmp_path: Path) -> None:
    kubectl = kubectl_path()
    kubeconfig = tmp_path / "fleet.kubeconfig"
    ready = tmp_path / "ready"
    state = tmp_path / "state"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "omectl",
            "dev",
            "up",
            "--clusters",
            "2",
            "--name-prefix",
            "t-",
            "--kubeconfig-out",
            str(kubeconfig),
            "--ready-file",
            str(ready),
            "--state-dir",
            str(state),
            "--apply",
            str(ROOT / "deploy" / "samples" / "modelcache-crd.yaml"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        wait_for_file(ready, proc)
        lines = ready.read_text().split()
        assert lines[0] == "t-1" and lines[2] == "t-2"
        contexts = [c["name"] for c in yaml.safe_load(kubeconfig.read_text())["contexts"]]
        assert contexts == ["t-1", "t-2"]
        k = Kubectl(kubectl, kubeconfig, tmp_path / "cache")
        for ctx in contexts:
            out = k.run(f"--context={ctx}", "get", "crd", "modelcaches.demo.omectl.io", "-o", "name").stdout
            assert out.strip() == "customresourcedefinition.apiextensions.k8s.io/modelcaches.demo.omectl.io"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "t-1" in out and "t-2" in out
    assert not ready.exists()
    assert sorted(p.name for p in state.iterdir()) == ["t-1.json", "t-2.json"]


def test_dev_up_rejects_a_missing_manifest(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "omectl", "dev", "up", "--apply", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400"),
        timeout=60,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr


def typo_deployment() -> str:
    container = {"name": "app", "image": "registry.example/app:v1-typo"}
    return yaml.safe_dump(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "typo", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "typo"}},
                "template": {"metadata": {"labels": {"app": "typo"}}, "spec": {"containers": [container]}},
            },
        }
    )


def test_dev_up_nodes_turns_on_the_simulator_per_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "fleet.kubeconfig"
    ready = tmp_path / "ready"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "omectl",
            "dev",
            "up",
            "--clusters",
            "2",
            "--name-prefix",
            "n-",
            "--kubeconfig-out",
            str(kubeconfig),
            "--ready-file",
            str(ready),
            "--apply",
            str(ROOT / "deploy" / "samples" / "modelcache-crd.yaml"),
            "--nodes",
            "2x8:amd:MI300X",
            "--nodes",
            "n-2=none",
            "--missing-image",
            "*-typo",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="200"),
    )
    try:
        wait_for_file(ready, proc)
        k = Kubectl(kubectl_path(), kubeconfig, tmp_path / "cache")
        jsonpath = "{range .items[*]}{.metadata.name} {.status.allocatable.amd\\.com/gpu}{'\\n'}{end}"
        out = k.run("--context=n-1", "get", "nodes", "-o", f"jsonpath={jsonpath}").stdout
        assert out.split("\n")[:2] == ["n-1-gpu-node-1 8", "n-1-gpu-node-2 8"]
        assert k.run("--context=n-2", "get", "nodes", "-o", "name").stdout.strip() == ""
        k.run("--context=n-1", "apply", "-f", "-", input=typo_deployment())
        k.run("--context=n-1", "wait", "deployment/typo", "--for=condition=Available=False", "--timeout=30s")
        pods = k.run("--context=n-1", "get", "pods", "-l", "app=typo", "--no-headers").stdout.split()
        assert pods[1:3] == ["0/1", "ImagePullBackOff"]  # the registry --missing-image describes lacks its image
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "2x8 amd.com/gpu MI300X; registry lacks *-typo" in out
    assert "image registry: http://127.0.0.1:" in out, "the simulator serves the AIM images' registry"


def test_dev_up_rejects_a_malformed_nodes_option(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "omectl", "dev", "up", "--nodes", "lots"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="400"),
        timeout=60,
    )
    assert proc.returncode == 2
    assert "COUNTxGPUS" in proc.stderr


def test_dev_up_outside_a_checkout_applies_the_crds_omectl_carries(tmp_path: Path) -> None:
    """No ./deploy/crds in the working directory: every CRD of deploy/crds is served all the same."""
    kubeconfig, ready, temp = tmp_path / "fleet.kubeconfig", tmp_path / "ready", tmp_path / "tmp"
    temp.mkdir()
    outputs = ["--kubeconfig-out", str(kubeconfig), "--ready-file", str(ready)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "omectl", "dev", "up", "--clusters", "1", "--name-prefix", "away-", *outputs],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TMPDIR=str(temp)),
    )
    try:
        wait_for_file(ready, proc)
        k = Kubectl(kubectl_path(), kubeconfig, tmp_path / "cache")
        served = set(k.run("--context=away-1", "get", "crd", "-o", "name").stdout.split())
        shipped = {
            f"customresourcedefinition.apiextensions.k8s.io/{doc['metadata']['name']}"
            for path in (ROOT / "deploy" / "crds").rglob("*.yaml")
            for doc in yaml.safe_load_all(path.read_text())
            if doc
        }
        assert shipped and shipped <= served
        assert [p.name[:12] for p in temp.iterdir()] == ["omectl-crds-"]  # generated into a temporary directory
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "no deploy/crds/ here: applied the CRDs omectl" in out
    assert not list(temp.iterdir())  # and not left behind
