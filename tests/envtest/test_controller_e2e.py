"""The controller's whole e2e suite (tests/e2e) against real kube-apiservers instead of embedded ones.

`OMECTL_E2E_REAL=1` makes every `running_fleet` of tests/e2e start real etcd + kube-apiserver processes
(`omectl.envtest`), with our CRDs, the workload simulator as their API client, and the controller in-process with
its admission webhooks registered through a real ValidatingWebhookConfiguration (TLS, `caBundle`); the tests drive
it with the real kubectl. So the OME inheritance walk-through (a profile edit, chains breaking and healing, the
webhook denials), engine readiness, the AIM flows and the fleet registry run against both servers.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from omectl.envtest import EnvtestBinaries

from .conftest import ROOT

# One test per e2e file and no xdist group, so the suite's workers share the ~10 minutes this takes.
pytestmark = [pytest.mark.kubectl]
E2E_FILES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests" / "e2e").glob("test_*.py"))


@pytest.mark.parametrize("e2e_file", E2E_FILES)
def test_the_controller_e2e_suite_passes_against_real_api_servers(
    envtest_binaries: EnvtestBinaries, e2e_file: str
) -> None:
    """(The fixture only makes the test skip, or fail in CI, without the binaries; the run finds them itself.)"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    env["OMECTL_E2E_REAL"] = "1"
    result = subprocess.run(
        # niced, with every kube-apiserver and etcd it starts: the timing-sensitive tests beside it (HA leases) keep
        # their share of the two cores
        [
            "nice",
            "-n",
            "10",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            e2e_file,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-80:])
    assert result.returncode == 0, f"{e2e_file} against real kube-apiservers failed:\n{tail}"
    assert " passed" in tail, tail
