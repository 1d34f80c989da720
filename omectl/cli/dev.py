"""`omectl dev up`: a simulated fleet of embedded Kubernetes API servers on this machine."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from omectl.embedded.fleet import EmbeddedFleet, FleetSimulation
from omectl.embedded.simulator import NODES_HELP, parse_nodes_option

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
        help="Manifests (files or directories) to apply to every cluster. Default: deploy/crds/.",
    ),
    state_dir: Path | None = typer.Option(
        None, "--state-dir", help="Save each cluster's objects here on shutdown and load them on start."
    ),
    ready_file: Path | None = typer.Option(None, "--ready-file", help="Written once every cluster serves."),
    register: Path | None = typer.Option(
        None, "--register", help="Write a ClusterRegistration per cluster into this directory."
    ),
    controller: bool = typer.Option(False, "--controller", help="Also run the controller in this process."),
    simulate: bool = typer.Option(
        False,
        "--simulate",
        help="Run the workload simulator: GPU nodes (default 2x8 nvidia.com/gpu H100 per cluster), model labels, "
        "and Deployments, LeaderWorkerSets, KServe InferenceServices, Jobs and PVCs made ready when they fit.",
    ),
    nodes: list[str] = typer.Option(None, "--nodes", help=NODES_HELP),
) -> None:
    """Start N embedded clusters and serve them until SIGINT or SIGTERM."""
    simulation: FleetSimulation | None = None
    if simulate or nodes:
        try:
            simulation = parse_nodes_option(nodes or [])
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="--nodes") from None
    manifests = list(apply or [])
    if not manifests and DEFAULT_MANIFESTS.is_dir():
        manifests = [DEFAULT_MANIFESTS]
    for path in manifests:
        if not path.exists():
            raise typer.BadParameter(f"{path} does not exist", param_hint="--apply")
    try:
        if controller and register is None:
            register = Path(".omectl/clusters")
        asyncio.run(
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
            )
        )
    except ValueError as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None


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
) -> None:
    console = Console()
    fleet = await EmbeddedFleet(count, name_prefix=prefix, tls=tls, state_dir=state_dir, simulator=simulation).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        fleet.write_kubeconfig(kubeconfig_out)
        applied = await fleet.apply(manifests) if manifests else {}
        if register is not None:
            write_registrations(register, kubeconfig_out, [s.name for s in fleet.servers])
        app = None
        if controller:
            from omectl.controller.app import ControllerApp
            from omectl.settings import Settings

            app = ControllerApp(
                Settings.load(clusters_dir=register), status_file=Path(".omectl/controller-status.json")
            )
            await app.start()
            await app.wait_synced()
        table = Table(title=f"simulated fleet ({count} clusters)")
        columns = ["CLUSTER", "CONTEXT", "URL", "APPLIED"] + (["NODES"] if simulation is not None else [])
        for column in columns:
            table.add_column(column)
        for server in fleet.servers:
            row = [server.name, server.name, server.url, str(len(applied.get(server.name, [])))]
            if simulation is not None:
                config = server.simulator_config
                row.append(config.describe() if config is not None else "-")
            table.add_row(*row)
        console.print(table)
        console.print(f"kubeconfig: {kubeconfig_out}  (export KUBECONFIG={kubeconfig_out})")
        if ready_file is not None:
            _write_ready_file(ready_file, [f"{s.name} {s.url}" for s in fleet.servers])
        if app is not None:
            console.print(f"controller: running against {register}; webhooks on {app.webhook.base_url}")
        console.print("serving; press Ctrl-C to stop")
        await stop.wait()
        if app is not None:
            await app.stop()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
        await fleet.stop()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)  # noqa: ASYNC240 - a tiny local file at shutdown
        console.print("stopped")


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
