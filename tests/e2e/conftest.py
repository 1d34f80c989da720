"""A simulated fleet with the OME CRDs and the controller running on a background loop, driven by real kubectl."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.embedded.fleet import BackgroundFleet, EmbeddedFleet
from omectl.settings import Settings
from tests.support import Kubectl, kubectl_path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "deploy" / "samples" / "ome"


@dataclass
class ControlledFleet:
    bg: BackgroundFleet
    app: ControllerApp
    kubectl: Kubectl
    clusters_dir: Path

    def k(self, cluster: str, *args: str, **kw: object) -> str:
        return self.kubectl.run(f"--context={cluster}", *args, **kw).stdout  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def controlled_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledFleet]:
    binary = kubectl_path()
    base = tmp_path_factory.mktemp("e2e")
    bg = BackgroundFleet(EmbeddedFleet(2, name_prefix="e2e-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))
        kubeconfig = bg.fleet.write_kubeconfig(base / "fleet.kubeconfig")
        clusters_dir = base / "clusters"
        write_registrations(clusters_dir, kubeconfig, [s.name for s in bg.fleet.servers])
        settings = Settings.load(clusters_dir=clusters_dir, trace_file=base / "traces.jsonl", concurrency=8)

        async def start() -> ControllerApp:
            app = ControllerApp(settings)
            await app.start()
            await app.wait_synced(60)
            return app

        app = bg.run(start())
        try:
            yield ControlledFleet(bg, app, Kubectl(binary, kubeconfig, base / "kube-cache"), clusters_dir)
        finally:
            bg.run(app.stop())
    finally:
        bg.stop()
