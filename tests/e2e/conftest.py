"""A simulated fleet with the OME CRDs and the controller running on a background loop, driven by real kubectl.

With `OMECTL_E2E_KUBECONFIG` set (`make kind-e2e` sets it), the same tests run against a real fleet instead: the
controller installed there (kustomize) does the work, the members are that kubeconfig's contexts (those listed in
`OMECTL_E2E_CONTEXTS`, else every context but `OMECTL_E2E_HUB_CONTEXT`), and each gets an alias with the name the
tests use (`e2e-1`, ...) in a kubeconfig written for the run. Tests that need the embedded fleet's simulated GPU
nodes or the in-process controller's internals are skipped there, with that reason.

With `OMECTL_E2E_REAL=1` (tests/envtest/test_controller_e2e.py sets it), the clusters are local real kube-apiservers
with etcd (`omectl.envtest`) instead of embedded ones; everything else, the simulator and the in-process controller
included, stays as it is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.settings import Settings
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from omectl.sim.registry import SIMULATED_REGISTRY_HOSTS, SimulatedRegistry
from omectl.sim.simulator import SimulatorConfig
from tests.support import Kubectl, kubectl_path, real_kubectl_path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "deploy" / "samples" / "ome"


E2E_KUBECONFIG_ENV = "OMECTL_E2E_KUBECONFIG"
E2E_CONTEXTS_ENV = "OMECTL_E2E_CONTEXTS"
E2E_HUB_CONTEXT_ENV = "OMECTL_E2E_HUB_CONTEXT"
E2E_REAL_ENV = "OMECTL_E2E_REAL"  # "1": every running_fleet starts real kube-apiservers (omectl.envtest)


@dataclass
class ControlledFleet:
    bg: BackgroundFleet | None  # None on a real fleet
    app: ControllerApp | None  # None on a real fleet: the installed controller does the work
    kubectl: Kubectl
    clusters_dir: Path
    real_api_server: bool = False  # a real kube-apiserver (OMECTL_E2E_REAL=1 or an external fleet), not embedded

    def k(self, cluster: str, *args: str, **kw: object) -> str:
        return self.kubectl.run(f"--context={cluster}", *args, **kw).stdout  # type: ignore[arg-type]


@contextlib.contextmanager
def running_fleet(
    base: Path,
    count: int,
    prefix: str,
    *,
    simulator: SimulatorConfig | Mapping[str, SimulatorConfig] | None = None,
    real: bool | None = None,
    **settings: Any,
) -> Iterator[ControlledFleet]:
    """`count` embedded clusters with every CRD of `deploy/crds/` on a background thread, registered from a
    directory, and the controller running against them (its models' images read from the simulated registry,
    `SIMULATED_REGISTRY_HOSTS`); everything stops on exit. With `real` (default: the
    environment variable OMECTL_E2E_REAL=1), the clusters are real etcd + kube-apiserver processes
    (`omectl.envtest`, the binaries `make envtest` builds) and the simulator runs as their API client. On a real
    fleet (see the module docstring): its first `count` members under the names `<prefix>1..N`."""
    external = os.environ.get(E2E_KUBECONFIG_ENV)
    if external:
        if simulator is not None:
            pytest.skip(f"needs the embedded fleet's simulated GPU nodes ({E2E_KUBECONFIG_ENV} is set)")
        kubeconfig = aliased_kubeconfig(Path(external), base / "fleet.kubeconfig", count, prefix)
        yield ControlledFleet(None, None, Kubectl(kubectl_path(), kubeconfig, base / "kube-cache"), base, True)
        return
    binary = kubectl_path()
    registry: SimulatedRegistry | None = None
    if real is None:
        real = os.environ.get(E2E_REAL_ENV) == "1"
    if real:
        from omectl.envtest import RealFleet

        real_fleet = RealFleet(count, name_prefix=prefix, simulator=simulator)
        binary = real_kubectl_path(real_fleet.binaries.kube_version)
        bg = BackgroundFleet(real_fleet)  # type: ignore[arg-type]  # the same start/stop/apply surface
    else:
        bg = BackgroundFleet(EmbeddedFleet(count, name_prefix=prefix, simulator=simulator))
    bg.start()
    try:
        # a real server establishes the ~0.8 MB OME CRDs slowly on a loaded machine (tests/envtest allows as long)
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]), timeout=300 if real else 60)
        if real:
            bg.run(real_fleet.start_simulators())
        kubeconfig = bg.fleet.write_kubeconfig(base / "fleet.kubeconfig")
        clusters_dir = base / "clusters"
        write_registrations(clusters_dir, kubeconfig, [s.name for s in bg.fleet.servers])
        if "image_registry_mirrors" not in settings:  # models' images: the simulated registry's, never the internet's
            registry = SimulatedRegistry(anonymous_tokens=True)
            url = bg.run(registry.start())
            settings["image_registry_mirrors"] = {host: url for host in SIMULATED_REGISTRY_HOSTS}
        loaded = Settings.load(webhook_port=0, clusters_dir=clusters_dir, trace_file=base / "traces.jsonl", **settings)

        async def start() -> ControllerApp:
            app = ControllerApp(loaded)
            await app.start()
            await app.wait_synced(60)
            return app

        controlled = ControlledFleet(
            bg, bg.run(start()), Kubectl(binary, kubeconfig, base / "kube-cache"), clusters_dir, real
        )
        try:
            yield controlled
        finally:
            if controlled.app is not None:  # the one running now (`restart_controller` replaces it)
                bg.run(controlled.app.stop())
    finally:
        if registry is not None:
            bg.run(registry.stop())
        bg.stop()


def restart_controller(fleet: ControlledFleet, while_stopped: Callable[[], None]) -> None:
    """Stop the fleet's controller, run `while_stopped` (what happens while no controller runs), and start a new
    controller with the same settings, synced."""
    assert fleet.bg is not None and fleet.app is not None, "an embedded fleet's controller"
    bg, settings = fleet.bg, fleet.app.settings
    bg.run(fleet.app.stop())
    fleet.app = None
    while_stopped()

    async def start() -> ControllerApp:
        app = ControllerApp(settings)
        await app.start()
        await app.wait_synced(60)
        return app

    fleet.app = bg.run(start())


def aliased_kubeconfig(source: Path, out: Path, count: int, prefix: str) -> Path:
    """A copy of `source` with contexts `<prefix>1..N` aliasing its first `count` member contexts."""
    config = yaml.safe_load(source.read_text())
    contexts = {c["name"]: c for c in config.get("contexts") or []}
    listed = [name for name in os.environ.get(E2E_CONTEXTS_ENV, "").split(",") if name]
    hub = os.environ.get(E2E_HUB_CONTEXT_ENV)
    members = listed or [name for name in contexts if name != hub]
    if len(members) < count:
        pytest.fail(f"{E2E_KUBECONFIG_ENV}: {count} member contexts needed, found {members}")
    for index, name in enumerate(members[:count], 1):
        if name not in contexts:
            pytest.fail(f"{E2E_CONTEXTS_ENV}: no context {name!r} in {source}")
        config["contexts"].append({"name": f"{prefix}{index}", "context": dict(contexts[name]["context"])})
    out.write_text(yaml.safe_dump(config))
    return out


@pytest.fixture(scope="module")
def controlled_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledFleet]:
    with running_fleet(tmp_path_factory.mktemp("e2e"), 2, "e2e-", concurrency=8) as fleet:
        yield fleet


@contextlib.contextmanager
def serving(*registries: SimulatedRegistry) -> Iterator[list[str]]:
    """The simulated OCI registries served on a loop of their own thread (the controller's loop is another); their
    URLs, for the setting `image_registry_mirrors`."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield [asyncio.run_coroutine_threadsafe(r.start(), loop).result(10) for r in registries]
    finally:
        for registry in registries:
            asyncio.run_coroutine_threadsafe(registry.stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
