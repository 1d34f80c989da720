"""`omectl fleet status` picks clusters by their registration labels (`-l`) and names them (`-o name`), against two
embedded clusters on a background thread."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from omectl.cli.main import app
from omectl.fleet.registration import ClusterRegistration, to_yaml
from omectl.sim.fleet import BackgroundFleet


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
