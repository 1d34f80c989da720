"""`omectl run`: the central fleet controller, until SIGINT or SIGTERM (exit 130 after a Ctrl-C, as a shell expects)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import typer
from rich.console import Console

from omectl.cli.errors import require_writable
from omectl.cli.signals import StopSignals
from omectl.fleet.providers import clusters_dir_to_read
from omectl.malloc import hold_mmap_threshold
from omectl.settings import Settings

DEFAULT_STATUS_FILE = Path(".omectl/controller-status.json")


def run(
    config: Path | None = typer.Option(None, "--config", help="YAML file of settings (keys as in `Settings`)."),
    clusters_dir: Path | None = typer.Option(
        None,
        "--clusters-dir",
        envvar="OMECTL_CLUSTERS_DIR",
        help="Directory of ClusterRegistration files (and, without a hub, FleetRuntime files).",
    ),
    fleet_state_dir: Path | None = typer.Option(
        None,
        "--fleet-state-dir",
        help="Without a hub: where FleetRuntimes' status, revisions and requests are kept "
        "(default: <clusters-dir>/.omectl-state).",
    ),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Reconciles running at once."),
    webhook_port: int | None = typer.Option(
        None, "--webhook-port", help="Port of the admission webhook server (default 9443; 0: any free port)."
    ),
    install_webhooks: bool | None = typer.Option(
        None, "--install-webhooks/--no-install-webhooks", help="Install ValidatingWebhookConfigurations."
    ),
    trace_file: Path | None = typer.Option(None, "--trace-file", help="OTLP-JSON lines file for spans."),
    status_file: Path = typer.Option(DEFAULT_STATUS_FILE, "--status-file", help="Where `omectl cluster status` reads."),
    log_level: str | None = typer.Option(None, "--log-level", help="DEBUG, INFO (default), WARNING or ERROR."),
    log_format: str | None = typer.Option(None, "--log-format", help="text (default) or json: one object a line."),
    metrics_port: int | None = typer.Option(
        None, "--metrics-port", help="Port of /metrics, /healthz and /readyz (0: any free port, -1: off)."
    ),
    metrics_host: str | None = typer.Option(None, "--metrics-host", help="Address the metrics server listens on."),
    ha: bool | None = typer.Option(
        None, "--ha/--no-ha", help="Shard clusters across replicas with Leases (off: this replica runs every cluster)."
    ),
    replica_id: str | None = typer.Option(None, "--replica-id", help="This replica's id (default: <host>-<random>)."),
) -> None:
    """Run the fleet controller against every registered cluster."""
    settings = Settings.load(
        config,
        clusters_dir=clusters_dir,
        fleet_state_dir=fleet_state_dir,
        concurrency=concurrency,
        webhook_port=webhook_port,
        install_webhooks=install_webhooks,
        trace_file=trace_file,
        log_level=log_level,
        log_format=log_format,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        ha=ha,
        replica_id=replica_id,
    )
    if clusters_dir is not None and settings.hub_kubeconfig is None:
        clusters_dir_to_read(settings.clusters_dir)
    require_writable(status_file, "--status-file")
    if settings.hub_kubeconfig is None:  # a state directory asked for must be usable (the default one: a warning)
        require_writable(settings.fleet_state_dir, "--fleet-state-dir", directory=True)
    if settings.otlp_endpoint is None:
        require_writable(settings.trace_file, "--trace-file")
    from omectl.observability.logs import configure_logging

    configure_logging(settings.log_level, "json" if settings.log_format == "json" else "text")
    hold_mmap_threshold()
    code = asyncio.run(serve(settings, status_file))
    if code:
        raise typer.Exit(code)


async def serve(settings: Settings, status_file: Path | None) -> int:
    """Run until SIGTERM (0) or SIGINT (130); 1 when it cannot start or must stop (each reason one line on stderr)."""
    from omectl.controller.app import ControllerApp, StartError

    console = Console(stderr=True, soft_wrap=True)  # whole lines: stderr is often a log file
    app = ControllerApp(settings, status_file=status_file)
    with StopSignals() as signals:
        starting = asyncio.create_task(app.start())
        stopped = asyncio.create_task(signals.stopped.wait())
        await asyncio.wait([starting, stopped], return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():  # a signal while deciding which clusters to take (start cleans up after itself)
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError, StartError):
                await starting
            return signals.exit_code
        try:
            starting.result()
        except StartError as exc:
            stopped.cancel()
            for line in exc.lines:
                typer.echo(f"error: {line}", err=True)
            return 1
        failed = asyncio.create_task(app.failed.wait())
        source = f"hub {settings.hub_kubeconfig}" if settings.hub_kubeconfig else str(settings.clusters_dir)
        console.print(f"omectl: clusters from {source}; webhooks on {app.webhook.base_url}")
        if app.status_server is not None:
            console.print(f"omectl: metrics and health on {app.status_server.base_url} (/metrics, /healthz, /readyz)")
        try:
            await show_sync_progress(app, console, signals.stopped)
            await asyncio.wait([failed, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            failed.cancel()
            stopped.cancel()
            signals.release()
            console.print("omectl: shutting down (finishing in-flight reconciles, handing clusters over)")
            await app.stop()
    if app.failure is not None:
        typer.echo(f"error: {app.failure}", err=True)
        return 1
    return signals.exit_code


async def show_sync_progress(app: object, console: Console, stop: asyncio.Event) -> None:
    """While caches sync, show how many clusters are ready; unreachable ones are reported, never waited on forever."""
    from rich.progress import Progress, SpinnerColumn, TextColumn

    from omectl.controller.app import ControllerApp

    assert isinstance(app, ControllerApp)
    waits = [asyncio.ensure_future(app.ready.wait()), asyncio.ensure_future(stop.wait())]
    await asyncio.wait(waits, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    for waiting in waits:
        waiting.cancel()
    if stop.is_set():
        return
    clusters = list(app.controller.clusters.values())
    if not clusters:
        console.print("omectl: no clusters registered yet; waiting for registrations")
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), console=console, transient=True) as progress:
        task = progress.add_task("syncing caches", total=len(clusters))
        while not stop.is_set() and loop.time() < deadline:
            synced = [c for c in clusters if all(i.synced.is_set() for i in c.informers)]
            progress.update(task, completed=len(synced), description=f"syncing caches: {len(synced)}/{len(clusters)}")
            if len(synced) == len(clusters):
                break
            await asyncio.sleep(0.2)
    for cluster in clusters:
        ready = all(i.synced.is_set() for i in cluster.informers)
        errors = [i.last_error for i in cluster.informers if i.last_error]
        state = "synced" if ready else f"not synced yet ({errors[0] if errors else 'waiting'})"
        console.print(f"  {cluster.name}: {state}")
