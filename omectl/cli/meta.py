"""`omectl version` (the client and, with a kubeconfig, each server and the omectl CRDs it serves) and `omectl
completion SHELL` (the script that makes a shell complete omectl's commands and options)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from omectl.cli.progress import gather_with_progress
from omectl.cli.reports import OUTPUT_OPTION, Column, OutputFormat, emit, print_records, refuse_name

SHELLS = ("bash", "zsh", "fish")
# The API groups of the CRDs omectl works with: OME's and AMD AIM's.
CRD_GROUPS = ("ome.io", "aim.eai.amd.com")


def completion(
    ctx: typer.Context,
    shell: str = typer.Argument(..., help="bash, zsh or fish.", show_default=False),
) -> None:
    """Print the shell completion script: `source <(omectl completion bash)` (or put it in your shell's rc file)."""
    from typer._completion_classes import completion_init
    from typer._completion_shared import get_completion_script

    if shell not in SHELLS:
        typer.echo(f'error: unknown shell "{shell}": use one of {", ".join(SHELLS)}', err=True)
        raise typer.Exit(2)
    completion_init()
    prog_name = ctx.find_root().info_name or "omectl"
    complete_var = "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())
    typer.echo(get_completion_script(prog_name=prog_name, complete_var=complete_var, shell=shell))


def version(
    kubeconfig: Path | None = typer.Option(
        None, "--kubeconfig", help="Also ask each context's server for its version and the omectl CRDs it serves."
    ),
    context: str | None = typer.Option(None, "--context", help="Only this context of --kubeconfig."),
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = typer.Option(5.0, "--timeout", help="Seconds to wait for each server."),
) -> None:
    """Print omectl's version; with --kubeconfig also each server's version and the CRD versions installed there."""
    from omectl import __version__

    refuse_name(output, "a server")
    servers = asyncio.run(_servers(kubeconfig, context, timeout)) if kubeconfig is not None else []
    if not output.is_document and not servers:
        typer.echo(f"Client Version: {__version__}")
        return
    document: dict[str, Any] = {"clientVersion": __version__}
    if kubeconfig is not None:
        document["servers"] = servers
    if output.is_document:
        emit(document, output)
    else:
        typer.echo(f"Client Version: {__version__}")
        print_records(servers, SERVER_COLUMNS, output)
    if any("error" in s for s in servers):
        raise typer.Exit(1)


SERVER_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("CONTEXT", lambda s: s["context"]),
    Column("SERVER VERSION", lambda s: s.get("serverVersion") or f"error: {s['error']}"),
    Column("CRDS", lambda s: _crd_cell(s)),
]


def _crd_cell(server: dict[str, Any]) -> str:
    crds = server.get("crds") or {}
    return ",".join(f"{name}={'/'.join(versions)}" for name, versions in sorted(crds.items())) or "<none>"


def _contexts_of(kubeconfig: Path, context: str | None) -> list[str]:
    import yaml

    try:
        document = yaml.safe_load(kubeconfig.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        typer.echo(f"error: {kubeconfig}: {exc}", err=True)
        raise typer.Exit(1) from exc
    entries = document.get("contexts") if isinstance(document, dict) else None
    contexts = [str(c["name"]) for c in entries or [] if isinstance(c, dict) and c.get("name")]
    if not contexts:
        typer.echo(f"error: {kubeconfig}: not a kubeconfig with contexts", err=True)
        raise typer.Exit(1)
    if context is None:
        return contexts
    if context not in contexts:
        typer.echo(f'error: {kubeconfig}: no context "{context}"', err=True)
        raise typer.Exit(1)
    return [context]


async def _servers(kubeconfig: Path, context: str | None, timeout: float) -> list[dict[str, Any]]:
    from omectl.kube.client import ClusterClient
    from omectl.kube.errors import KubeError
    from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS

    contexts = _contexts_of(kubeconfig, context)

    async def one(name: str) -> dict[str, Any]:
        answer: dict[str, Any] = {"context": name}
        try:
            client = await ClusterClient.from_kubeconfig(
                kubeconfig, context=name, name=name, connect_timeout=timeout, request_timeout=timeout
            )
            async with client:
                body = await client.request("GET", "/version", timeout=timeout)
                answer["serverVersion"] = str(body.get("gitVersion", "unknown"))
                crds = await client.list(CUSTOM_RESOURCE_DEFINITIONS)
        except KubeError as exc:
            answer["error"] = str(exc).splitlines()[0]
            return answer
        answer["crds"] = {
            item["metadata"]["name"]: [v["name"] for v in item["spec"].get("versions", []) if v.get("served")]
            for item in crds.get("items", [])
            if item.get("spec", {}).get("group") in CRD_GROUPS
        }
        return answer

    return await gather_with_progress("asking the servers", [one(name) for name in contexts])
