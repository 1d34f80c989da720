"""`omectl fleet status` picks clusters by their registration labels (`-l`), names them (`-o name`) and redraws
(`--watch`), against two embedded clusters on a background thread."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omectl.cli.main import app
from omectl.fleet.registration import ClusterRegistration, to_yaml
from omectl.sim.fleet import BackgroundFleet
from tests.cli.test_run import omectl_env


@pytest.fixture
def clusters(bg_fleet: BackgroundFleet, tmp_path: Path) -> Path:
    kubeconfig = bg_fleet.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
    directory = tmp_path / "clusters"
    directory.mkdir()
    for name, context, labels in (("eu", "bg-1", {"region": "eu"}), ("us", "bg-2", {"region": "us", "gpu": "h200"})):
        reg = ClusterRegistration(name=name, kubeconfig_path=kubeconfig, context=context, labels=labels)
        (directory / f"{name}.yaml").write_text(to_yaml(reg))
    return directory


def fleet_status(clusters: Path, *args: str) -> list[str]:
    result = CliRunner().invoke(app, ["fleet", "status", "--clusters-dir", str(clusters), *args], prog_name="omectl")
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_fleet_status_names_every_cluster_and_selects_by_label(clusters: Path) -> None:
    assert fleet_status(clusters, "-o", "name") == ["cluster/eu", "cluster/us"]
    assert fleet_status(clusters, "-l", "region=us", "-o", "name") == ["cluster/us"]
    assert fleet_status(clusters, "-l", "gpu notin (h200)", "-o", "name") == ["cluster/eu"]
    header, row = fleet_status(clusters, "-l", "region=eu")
    assert header.split()[0] == "CLUSTER" and row.split()[:3] == ["eu", "0", "-"]
    assert fleet_status(clusters, "-o", "wide") == fleet_status(clusters)  # the table shows every field already


def test_watch_redraws_the_selected_clusters_until_ctrl_c(clusters: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "omectl", "fleet", "status", "--watch", "--interval", "0.1", "-l", "region=us",
         "--clusters-dir", str(clusters)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=omectl_env(),
    )  # fmt: skip
    assert proc.stdout is not None
    rows = []
    try:
        for line in proc.stdout:  # each frame is the header and one row, a blank line after it (not a terminal)
            if line.strip() and not line.startswith("CLUSTER"):
                rows.append(line.split()[0])
                if len(rows) == 3:
                    break
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert rows == ["us", "us", "us"]
    assert proc.returncode == 130 and "Traceback" not in err, err
