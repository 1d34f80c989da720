"""A cluster with upstream OME's runtime CRDs (no status subresource): the controller says so in one line at start,
naming the fix, instead of failing every InheritanceReady write in silence."""

from __future__ import annotations

import asyncio
import gzip
import logging
from pathlib import Path

import pytest
import yaml

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.kube.crds import INSTALL_CRDS
from omectl.settings import Settings
from omectl.sim.fleet import EmbeddedFleet

pytestmark = pytest.mark.xdist_group("e2e")
ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_CRDS = ROOT / "tests" / "fixtures" / "upstream" / "ome" / "config" / "crd" / "full"


async def test_upstream_runtime_crds_are_named_once_at_start_with_the_fix(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    for path in (ROOT / "deploy" / "crds").glob("*.yaml"):
        if path.name != "ome.io_servingruntimes.yaml":
            (crds / path.name).write_text(path.read_text())
    upstream = gzip.decompress((UPSTREAM_CRDS / "ome.io_servingruntimes.yaml.gz").read_bytes()).decode()
    assert yaml.safe_load(upstream)["spec"]["versions"][0]["subresources"] == {}  # upstream's, unchanged
    (crds / "ome.io_servingruntimes.yaml").write_text(upstream)

    fleet = await EmbeddedFleet(1, name_prefix="crd-").start()
    try:
        await fleet.apply([crds])
        write_registrations(tmp_path / "clusters", fleet.write_kubeconfig(tmp_path / "kc"), ["crd-1"])
        settings = Settings.load(
            webhook_port=0, clusters_dir=tmp_path / "clusters", install_webhooks=False, metrics_port=-1
        )
        app = ControllerApp(settings)
        caplog.set_level(logging.ERROR, logger="omectl.controller.runtime.manager")
        await app.start()
        try:
            await app.wait_synced(60)
            cluster = app.controller.clusters["crd-1"]
            async with asyncio.timeout(30):
                while not cluster.crd_problems:  # noqa: ASYNC110 - a one-shot check task, polled under a deadline
                    await asyncio.sleep(0.05)
        finally:
            await app.stop()
    finally:
        await fleet.stop()

    assert cluster.crd_problems == [
        "servingruntimes.ome.io has no status subresource (upstream OME's CRD): every InheritanceReady write fails"
    ]
    lines = [r.getMessage() for r in caplog.records if "status subresource" in r.getMessage()]
    assert lines == [f"cluster crd-1: {cluster.crd_problems[0]}; apply omectl's CRDs: {INSTALL_CRDS}"]
