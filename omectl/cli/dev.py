"""`omectl dev up`: a simulated fleet of embedded Kubernetes API servers on this machine.

`omectl dev up --real` starts a real etcd and kube-apiserver per cluster instead (the binaries `make envtest`
builds; `omectl.envtest`), with the same kubeconfig, ready file, registrations, manifests and simulator, so
every tool and test can point at either.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from omectl.cli.errors import CommandError, require_writable
from omectl.cli.progress import progress
from omectl.cli.signals import StopSignals
from omectl.envtest.fleet import RealFleet
from omectl.fleet.registration import validate_cluster_name
from omectl.sim.fleet import EmbeddedFleet, FleetSimulation, simulator_for
from omectl.sim.heap import freeze_periodically
from omectl.sim.registry import SimulatedRegistry
from omectl.sim.simulator import NODES_HELP, ImageRegistry, parse_nodes_option

dev_app = typer.Typer(no_args_is_help=True, help="Run a simulated fleet for development and demos.")
DEFAULT_MANIFESTS = Path("deploy/crds")


@dev_app.command("up")
def up(
    clusters: int = typer.Option(3, "--clusters", min=1, max=64, help="How many clusters to start."),
    name_prefix: str = typer.Option("sim-", "--name-prefix", help="Cluster names are <prefix>1..<prefix>N."),
    tls: bool = typer.Option(False, "--tls", help="Serve HTTPS with a generated CA (in the kubeconfig)."),
    kubeconfig_out: Path = typer.Option(
        Path(".omectl/fleet.kubeconfig"), "--kubeconfig-out", help="Where to write the fleet's kubeconfig."
    ),
    apply: list[Path] = typer.Option(
        None,
        "--apply",
        help="Manifests (files or directories) to apply to every cluster. Default: ./deploy/crds/ when it exists, "
        "else the CRDs omectl carries.",
    ),
    state_dir: Path | None = typer.Option(
        None, "--state-dir", help="Save each cluster's objects here on shutdown and load them on start."
    ),
    ready_file: Path | None = typer.Option(None, "--ready-file", help="Written once every cluster serves."),
    register: Path | None = typer.Option(
        None, "--register", help="Write a ClusterRegistration per cluster into this directory."
    ),
    controller: bool = typer.Option(False, "--controller", help="Also run the controller in this process."),
    webhook_port: int | None = typer.Option(
        None, "--webhook-port", help="Port of the controller's webhook server (default 9443; 0: any free port)."
    ),
    simulate: bool = typer.Option(
        False,
        "--simulate",
        help="Run the workload simulator: GPU nodes (default 2x8 nvidia.com/gpu H100 per cluster), model labels, "
        "and Deployments, LeaderWorkerSets, KServe InferenceServices, Jobs and PVCs made ready when they fit; "
        "and the simulated OCI registry of AIM images (ghcr.io's, Docker Hub's and quay.io's, for --controller).",
    ),
    nodes: list[str] = typer.Option(None, "--nodes", help=NODES_HELP),
    missing_images: list[str] = typer.Option(
        None,
        "--missing-image",
        metavar="PATTERN",
        help="An image the simulated registry does not have (a glob, e.g. '*:v0.0.0-typo'): pods that use one "
        "stay in ImagePullBackOff. Repeatable; turns the workload simulator on.",
    ),
    real: bool = typer.Option(
        False,
        "--real",
        help="A real etcd + kube-apiserver per cluster (built by `make envtest`) instead of the embedded server; "
        "always HTTPS with a generated CA and an admin token. With --state-dir, etcd's data stays there.",
    ),
) -> None:
    """Start N embedded (or, with --real, real) clusters and serve them until SIGINT or SIGTERM."""
    names = [f"{name_prefix}{index}" for index in range(1, clusters + 1)]
    for name in names:
        problem = validate_cluster_name(name)
        if problem is not None:
            raise typer.BadParameter(problem, param_hint="--name-prefix")
    simulation: FleetSimulation | None = None
    if simulate or nodes or missing_images:
        registry = ImageRegistry(missing=tuple(missing_images or ()))
        try:
            simulation = parse_nodes_option(nodes or [], clusters=names, registry=registry)
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--nodes") from None
    manifests = list(apply or [])
    for path in manifests:
        if not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint="--apply")
    if controller and register is None:
        register = Path(".omectl/clusters")
    require_writable(kubeconfig_out, "--kubeconfig-out")
    require_writable(ready_file, "--ready-file")
    require_writable(register, "--register", directory=True)
    require_writable(state_dir, "--state-dir", directory=True)
    carried: tempfile.TemporaryDirectory[str] | None = None
    if not manifests and DEFAULT_MANIFESTS.is_dir():
        manifests = [DEFAULT_MANIFESTS]
    elif not manifests:  # only once every option is known good: a usage error stays one line
        carried = tempfile.TemporaryDirectory(prefix="omectl-crds-")
        manifests = [_write_carried_crds(Path(carried.name))]
    try:
        code = asyncio.run(
            _serve(
                clusters,
                name_prefix,
                tls,
                kubeconfig_out,
                manifests,
                state_dir,
                ready_file,
                register,
                controller,
                simulation,
                real,
                webhook_port,
                crds_note=_carried_crds_note() if carried is not None else None,
            )
        )
    except _ClusterCrashed as exc:  # its report ends with the tail of the process's log, line by line
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    finally:
        if carried is not None:
            carried.cleanup()
    if code:
        raise typer.Exit(code)


def _write_carried_crds(directory: Path) -> Path:
    """Outside a checkout (no ./deploy/crds): the CRDs this omectl carries, generated as deploy/crds holds them."""
    from omectl.api import crdgen

    crdgen.write_files(directory)
    return directory


def _carried_crds_note() -> str:
    from omectl import __version__

    return f"no {DEFAULT_MANIFESTS}/ here: applied the CRDs omectl {__version__} carries"


async def _serve(
    count: int,
    prefix: str,
    tls: bool,
    kubeconfig_out: Path,
    manifests: list[Path],
    state_dir: Path | None,
    ready_file: Path | None,
    register: Path | None = None,
    controller: bool = False,
    simulation: FleetSimulation | None = None,
    real: bool = False,
    webhook_port: int | None = None,
    crds_note: str | None = None,
) -> int:
    """Serve until SIGTERM (0) or SIGINT (130)."""
    console = Console()
    fleet: EmbeddedFleet | RealFleet
    if real:
        fleet = await _start_real_fleet(console, count, prefix, state_dir, simulation)
    else:
        with progress(f"starting {count} simulated cluster(s)"):
            fleet = await EmbeddedFleet(
                count, name_prefix=prefix, tls=tls, state_dir=state_dir, simulator=simulation
            ).start()
    signals = StopSignals().install()
    image_registry: SimulatedRegistry | None = None
    try:
        if simulation is not None:  # the AIM images' labels (omectl/sim/registry.py)
            image_registry = SimulatedRegistry(anonymous_tokens=True)
            await image_registry.start()
        applied = await fleet.apply(manifests) if manifests else {}
        try:
            fleet.write_kubeconfig(kubeconfig_out)
        except OSError as exc:
            raise CommandError(f"--kubeconfig-out {kubeconfig_out}: cannot write it: {exc.strerror}") from None
        if isinstance(fleet, RealFleet):
            await fleet.start_simulators()  # after the CRDs: it watches the kinds they serve
        if register is not None:
            write_registrations(register, kubeconfig_out, [s.name for s in fleet.servers])
        app = None
        if controller:
            from omectl.controller.app import ControllerApp, StartError
            from omectl.settings import Settings
            from omectl.sim.registry import SIMULATED_REGISTRY_HOSTS

            mirrors: dict[str, Any] = {}
            if image_registry is not None:
                mirrors["image_registry_mirrors"] = {host: image_registry.url for host in SIMULATED_REGISTRY_HOSTS}
            app = ControllerApp(
                Settings.load(clusters_dir=register, webhook_port=webhook_port, **mirrors),
                status_file=Path(".omectl/controller-status.json"),
            )
            with progress("starting the controller and syncing its caches"):
                try:
                    await app.start()
                except StartError as exc:
                    raise CommandError("; ".join(exc.lines)) from None
                await app.wait_synced()
        table = Table(title=f"{'real' if real else 'simulated'} fleet ({count} clusters)")
        columns = ["CLUSTER", "CONTEXT", "URL", "APPLIED"] + (["NODES"] if simulation is not None else [])
        for column in columns:
            table.add_column(column)
        for server in fleet.servers:
            row = [server.name, server.name, server.url, str(len(applied.get(server.name, [])))]
            if simulation is not None:
                config = simulator_for(simulation, server.name)
                row.append(config.describe() if config is not None else "-")
            table.add_row(*row)
        console.print(table)
        console.print(f"kubeconfig: {kubeconfig_out}  (export KUBECONFIG={kubeconfig_out})")
        if crds_note is not None:
            console.print(crds_note)
        if image_registry is not None:
            console.print(f"image registry: {image_registry.url} (the simulated AIM images)")
        if ready_file is not None:
            _write_ready_file(ready_file, [f"{s.name} {s.url}" for s in fleet.servers])
        if app is not None:
            console.print(f"controller: running against {register}; webhooks on {app.webhook.base_url}")
        if isinstance(fleet, RealFleet):
            for server in fleet.servers:
                console.print(f"{server.name}: logs in {server.dir} (etcd.log, kube-apiserver.log)")
        console.print("serving; press Ctrl-C to stop")
        freezer = None if (app is not None or real) else asyncio.create_task(freeze_periodically())
        try:
            crash = await _wait_stop_or_crash(signals.stopped, fleet)
        finally:
            if freezer is not None:
                freezer.cancel()
        if app is not None:
            await app.stop()
        if crash is not None:
            raise _ClusterCrashed(crash)
    finally:
        signals.release()
        if image_registry is not None:
            await image_registry.stop()
        await fleet.stop()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)  # noqa: ASYNC240 - a tiny local file at shutdown
        console.print("stopped")
    return signals.exit_code


class _ClusterCrashed(Exception):
    """A real cluster's etcd or kube-apiserver died; the message has its log tail."""


async def _start_real_fleet(
    console: Console, count: int, prefix: str, state_dir: Path | None, simulation: FleetSimulation | None
) -> RealFleet:
    from omectl.envtest import BinariesMissing, ControlPlaneError

    try:
        fleet = RealFleet(count, name_prefix=prefix, workdir=state_dir, simulator=simulation)
    except BinariesMissing as exc:
        raise CommandError(f"--real needs the real binaries: {exc}") from None
    console.print(
        f"starting {count} real cluster(s): kube-apiserver {fleet.binaries.kube_version}, "
        f"etcd {fleet.binaries.etcd_version} ({fleet.binaries.directory})"
    )
    try:
        with progress(f"starting {count} real cluster(s)"):
            return await fleet.start()
    except ControlPlaneError as exc:
        raise _ClusterCrashed(str(exc)) from None


async def _wait_stop_or_crash(stop: asyncio.Event, fleet: EmbeddedFleet | RealFleet) -> str | None:
    """Until SIGINT/SIGTERM (None) or, for a real fleet, a process that died unasked (its report)."""
    if not isinstance(fleet, RealFleet):
        await stop.wait()
        return None
    stopped = asyncio.ensure_future(stop.wait())
    crashed = asyncio.ensure_future(fleet.wait_crashed())
    try:
        await asyncio.wait([stopped, crashed], return_when=asyncio.FIRST_COMPLETED)
        return crashed.result() if crashed.done() else None
    finally:
        stopped.cancel()
        crashed.cancel()


def _write_ready_file(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def write_registrations(directory: Path, kubeconfig: Path, contexts: list[str]) -> list[Path]:
    """One ClusterRegistration file per simulated cluster, each pointing at its context of the fleet kubeconfig."""
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for context in contexts:
        doc = {
            "apiVersion": "omectl.io/v1alpha1",
            "kind": "ClusterRegistration",
            "metadata": {"name": context, "labels": {"omectl.io/simulated": "true"}},
            "spec": {"kubeconfig": {"path": str(kubeconfig.resolve())}, "context": context},
        }
        path = directory / f"{context}.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        written.append(path)
    return written
