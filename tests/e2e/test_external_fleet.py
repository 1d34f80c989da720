"""The end-to-end suite against a fleet it did not start (as `make kind-e2e` runs it): `OMECTL_E2E_KUBECONFIG`.

Here the "real" fleet is `omectl dev up --controller` in a process of its own (API servers, the controller and
its webhooks, as an installed controller would be), with contexts named unlike the tests' clusters; the spec's
kubectl walk-through then runs in a pytest subprocess through the aliases, and the simulator-bound modules say
why they skip.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import kubectl_path

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("external-fleet"), pytest.mark.long(45)]
ROOT = Path(__file__).resolve().parents[2]


def test_the_walk_through_runs_against_a_fleet_named_by_its_kubeconfig(tmp_path: Path) -> None:
    kubectl_path()  # skips (an error in CI) without kubectl
    kubeconfig, ready = tmp_path / "fleet.kubeconfig", tmp_path / "ready"
    argv = [sys.executable, "-m", "omectl", "dev", "up", "--clusters", "3", "--name-prefix", "real-"]
    argv += ["--kubeconfig-out", str(kubeconfig), "--ready-file", str(ready), "--controller"]
    argv += ["--webhook-port", "0"]  # any free port: other tests on this host run controllers too
    argv += ["--register", str(tmp_path / "clusters"), "--apply", str(ROOT / "deploy" / "crds")]
    log = tmp_path / "dev-up.log"
    with log.open("w") as out:  # a file, not a pipe nobody reads: the controller logs a lot
        fleet = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(ROOT))
        )
    try:
        deadline = time.monotonic() + 90
        while not ready.exists():
            assert fleet.poll() is None, f"dev up exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "dev up never became ready"
            time.sleep(0.1)
        env = dict(
            os.environ,
            PYTHONPATH=str(ROOT),
            OMECTL_E2E_KUBECONFIG=str(kubeconfig),
            OMECTL_E2E_HUB_CONTEXT="real-3",  # the members are real-1 and real-2
        )
        modules = ["tests/e2e/test_runtime_inheritance.py", "tests/e2e/test_engine_readiness.py"]
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs", *modules],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            timeout=300,
        )
    finally:
        fleet.send_signal(signal.SIGTERM)
        fleet.wait(timeout=30)
    summary = run.stdout.strip().splitlines()[-1]
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
    assert "needs the embedded fleet's simulated GPU nodes (OMECTL_E2E_KUBECONFIG is set)" in run.stdout
