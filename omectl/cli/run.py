"""`omectl run`: the central fleet controller, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console

from omectl.settings import Settings

DEFAULT_STATUS_FILE = Path(".omectl/controller-status.json")


def run(
    config: Path | None = typer.Option(None, "--config", help="YAML file of settings (keys as in `Settings`)."),
    clusters_dir: Path | None = typer.Option(
        None, "--clusters-dir", envvar="OMECTL_CLUSTERS_DIR", help="Directory of ClusterRegistration files."
    ),
    concurrency: int | None = typer.Option(None, "--concurrency", help="Reconciles running at once."),
    webhook_port: int | None = typer.Option(None, "--webhook-port", help="Port of the admission webhook server."),
    install_webhooks: bool | None = typer.Option(
        None, "--install-webhooks/--no-install-webhooks", help="Install ValidatingWebhookConfigurations."
    ),
    trace_file: Path | None = typer.Option(None, "--trace-file", help="OTLP-JSON lines file for spans."),
    status_file: Path = typer.Option(DEFAULT_STATUS_FILE, "--status-file", help="Where `omectl cluster status` reads."),
    log_level: str = typer.Option("INFO", "--log-level", help="DEBUG, INFO, WARNING or ERROR."),
) -> None:
    """Run the fleet controller against every registered cluster."""
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.load(
            config,
            clusters_dir=clusters_dir,
            concurrency=concurrency,
            webhook_port=webhook_port,
            install_webhooks=install_webhooks,
            trace_file=trace_file,
        )
    except (ValueError, ValidationError) as exc:
        Console(stderr=True).print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    asyncio.run(serve(settings, status_file))


async def serve(settings: Settings, status_file: Path | None) -> None:
    from omectl.controller.app import ControllerApp

    console = Console(stderr=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    app = ControllerApp(settings, status_file=status_file)
    await app.start()
    console.print(f"omectl: watching {settings.clusters_dir}; webhooks on {app.webhook.base_url}")
    try:
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
        console.print("omectl: shutting down (finishing in-flight reconciles)")
        await app.stop()
