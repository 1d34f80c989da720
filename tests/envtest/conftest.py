"""The real-server suite: one real cluster (etcd + kube-apiserver from `make envtest`) shared by the package.

Without the binaries every test here skips with one reason (and `make test` prints it in one line at the end);
in CI (`CI=true`) that is an error instead, as a missing kubectl is.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from omectl.envtest import BinariesMissing, EnvtestBinaries, RealFleet, find_binaries
from omectl.sim.fleet import BackgroundFleet
from omectl.sim.simulator import parse_nodes_option
from tests.support import Kubectl, real_kubectl_path

ROOT = Path(__file__).resolve().parents[2]
CRDS = ROOT / "deploy" / "crds"
CRD_APPLY_TIMEOUT = 300.0


def envtest_binaries_or_skip() -> EnvtestBinaries:
    try:
        return find_binaries()
    except BinariesMissing as exc:
        reason = f"real-server suite skipped: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI must run it: .ci/run builds them with `make envtest`)", pytrace=False)
        pytest.skip(reason)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line at the end of `make test` when this suite skipped (here, not in an xdist worker: the reports
    of every worker reach the controller's stats)."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if r.nodeid.startswith("tests/envtest/")]
    if not skipped:
        return
    try:
        find_binaries()
    except BinariesMissing as exc:
        terminalreporter.write_line(f"real-server suite skipped ({len(skipped)} tests): {exc}", yellow=True, bold=True)


@pytest.fixture(scope="session")
def envtest_binaries() -> EnvtestBinaries:
    return envtest_binaries_or_skip()


@pytest.fixture(scope="session")
def real_fleet(envtest_binaries: EnvtestBinaries) -> Iterator[BackgroundFleet]:
    """One real cluster `envtest-1` with our CRDs and the workload simulator (2 nodes x 8 H100), on a thread."""
    fleet = RealFleet(1, name_prefix="envtest-", binaries=envtest_binaries, simulator=parse_nodes_option([]))
    background = BackgroundFleet(fleet)  # type: ignore[arg-type]  # the same start/stop surface
    background.start()
    try:
        # Each CRD must become Established; on a loaded shared machine that can take minutes, not seconds.
        background.run(fleet.apply([CRDS]), timeout=CRD_APPLY_TIMEOUT)
        background.run(fleet.start_simulators())
        yield background
    finally:
        background.stop()


@pytest.fixture(scope="session")
def real_kubectl(
    real_fleet: BackgroundFleet, envtest_binaries: EnvtestBinaries, tmp_path_factory: pytest.TempPathFactory
) -> Kubectl:
    base = tmp_path_factory.mktemp("real-kubectl")
    path = real_fleet.fleet.write_kubeconfig(base / "kubeconfig")
    return Kubectl(real_kubectl_path(envtest_binaries.kube_version), path, base / "kube-cache")


@pytest.fixture
def fresh_workdir(tmp_path: Path) -> Iterator[Path]:
    """A work directory for a cluster of a test's own (removed after, logs and all)."""
    path = tmp_path / "clusters"
    path.mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)
