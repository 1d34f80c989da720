"""A simulated fleet with the OME CRDs and the controller running on a background loop, driven by real kubectl."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.embedded.fleet import BackgroundFleet, EmbeddedFleet
from omectl.embedded.simulator import SimulatorConfig
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


@contextlib.contextmanager
def running_fleet(
    base: Path,
    count: int,
    prefix: str,
    *,
    simulator: SimulatorConfig | Mapping[str, SimulatorConfig] | None = None,
    **settings: Any,
) -> Iterator[ControlledFleet]:
    """`count` embedded clusters with every CRD of `deploy/crds/` on a background thread, registered from a
    directory, and the controller running against them; everything stops on exit."""
    bg = BackgroundFleet(EmbeddedFleet(count, name_prefix=prefix, simulator=simulator))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))
        kubeconfig = bg.fleet.write_kubeconfig(base / "fleet.kubeconfig")
        clusters_dir = base / "clusters"
        write_registrations(clusters_dir, kubeconfig, [s.name for s in bg.fleet.servers])
        loaded = Settings.load(clusters_dir=clusters_dir, trace_file=base / "traces.jsonl", **settings)

        async def start() -> ControllerApp:
            app = ControllerApp(loaded)
            await app.start()
            await app.wait_synced(60)
            return app

        app = bg.run(start())
        try:
            yield ControlledFleet(bg, app, Kubectl(kubectl_path(), kubeconfig, base / "kube-cache"), clusters_dir)
        finally:
            bg.run(app.stop())
    finally:
        bg.stop()


@pytest.fixture(scope="module")
def controlled_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledFleet]:
    with running_fleet(tmp_path_factory.mktemp("e2e"), 2, "e2e-", concurrency=8) as fleet:
        yield fleet
