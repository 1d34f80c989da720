"""`omectl fleet status`: per registered cluster, its GPUs (total and requested) and its engines (ready and total).

Read straight from the clusters (no running controller needed): GPU capacity is the sum of the nodes'
`status.allocatable` for every `*/gpu` resource; GPUs requested are those of the workloads rendered for
InferenceServices (Deployments and LeaderWorkerSets labelled `ome.io/inferenceservice`, every replica counted, placed
or not); an engine is an InferenceService, ready when its `Ready` condition is True.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from omectl.cli.errors import CommandError
from omectl.cli.progress import gather_with_progress
from omectl.cli.reports import OUTPUT_OPTION, Column, OutputFormat, render, render_document, watch
from omectl.cli.runtime import (
    EXIT_CLUSTER_FAILED,
    ClusterTarget,
    _fail,
    _registered_target,
    _registrations,
    _with_client,
)
from omectl.cli.selectors import SELECTOR_OPTION, LabelSelector, parse_selector
from omectl.cli.targets import CLUSTERS_DIR_OPTION, TIMEOUT_OPTION
from omectl.core.ome.workloads import gpu_requests, is_gpu_resource, parse_count
from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound
from omectl.kube.resources import DEPLOYMENTS, INFERENCE_SERVICES, LEADER_WORKER_SETS, ResourceRef

__all__ = ["cluster_gpu_report", "fleet_app"]

fleet_app = typer.Typer(no_args_is_help=True, help="The fleet at a glance: GPUs and engines per cluster.")

NODES = ResourceRef("", "v1", "nodes", "Node", False)
ISVC_LABEL = "ome.io/inferenceservice"


def _ready(obj: Mapping[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, Mapping))


def cluster_gpu_report(
    cluster: str,
    nodes: list[dict[str, Any]],
    workloads: list[dict[str, Any]],
    inference_services: list[dict[str, Any]],
) -> dict[str, Any]:
    """The status document of one cluster from its nodes, engine workloads and InferenceServices."""
    total: dict[str, int] = {}
    for node in nodes:
        for resource, quantity in ((node.get("status") or {}).get("allocatable") or {}).items():
            if is_gpu_resource(resource):
                total[resource] = total.get(resource, 0) + parse_count(quantity)
    requested: dict[str, int] = {}
    for workload in workloads:
        for resource, count in gpu_requests(workload).items():
            requested[resource] = requested.get(resource, 0) + count
    gpus = {
        resource: {"total": total.get(resource, 0), "requested": requested.get(resource, 0)}
        for resource in sorted(total.keys() | requested.keys())
    }
    return {
        "cluster": cluster,
        "nodes": len(nodes),
        "gpus": gpus,
        "engines": {"ready": sum(1 for isvc in inference_services if _ready(isvc)), "total": len(inference_services)},
    }


async def _list_or_empty(client: ClusterClient, ref: ResourceRef, **query: Any) -> list[dict[str, Any]]:
    try:
        return await client.list_all(ref, **query)
    except NotFound:
        return []  # the kind is not installed in this cluster


async def _read_cluster(client: ClusterClient, name: str) -> dict[str, Any]:
    nodes, deployments, groups, isvcs = await asyncio.gather(
        client.list_all(NODES),
        client.list_all(DEPLOYMENTS, label_selector=ISVC_LABEL),
        _list_or_empty(client, LEADER_WORKER_SETS, label_selector=ISVC_LABEL),
        _list_or_empty(client, INFERENCE_SERVICES),
    )
    for objects, ref in ((deployments, DEPLOYMENTS), (groups, LEADER_WORKER_SETS)):
        for obj in objects:  # list items carry no apiVersion or kind
            obj.setdefault("apiVersion", ref.api_version)
            obj.setdefault("kind", ref.kind)
    return cluster_gpu_report(name, nodes, [*deployments, *groups], isvcs)


async def _read_fleet(targets: list[ClusterTarget]) -> list[dict[str, Any] | CommandError]:
    async def one(target: ClusterTarget) -> dict[str, Any] | CommandError:
        try:
            return await _with_client(target, lambda client: _read_cluster(client, target.name))
        except CommandError as exc:
            return CommandError(exc.message, EXIT_CLUSTER_FAILED)

    return await gather_with_progress("reading the clusters", [one(target) for target in targets])


@dataclass(frozen=True)
class GpuRow:
    """One row of the table: a cluster's report and one of its GPU resources."""

    report: Mapping[str, Any]
    resource: str
    counts: Mapping[str, int]

    @property
    def free(self) -> str:
        free = self.counts["total"] - self.counts["requested"]
        return str(free) if free >= 0 else f"0 (over by {-free})"


GPU_COLUMNS: list[Column[GpuRow]] = [
    Column("CLUSTER", lambda row: row.report["cluster"]),
    Column("NODES", lambda row: str(row.report["nodes"])),
    Column("GPU", lambda row: row.resource),
    Column("REQUESTED/TOTAL", lambda row: f"{row.counts['requested']}/{row.counts['total']}"),
    Column("FREE", lambda row: row.free),
    Column("ENGINES READY/TOTAL", lambda row: f"{row.report['engines']['ready']}/{row.report['engines']['total']}"),
]


@fleet_app.command("status")
def status(
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
    selector: str | None = SELECTOR_OPTION,
    watching: bool = typer.Option(False, "--watch", "-w", help="Refresh every --interval seconds until Ctrl-C."),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Seconds between refreshes with --watch."),
) -> None:
    """GPUs total and requested, and engines ready of total, for every registered cluster."""
    selected = parse_selector(selector)
    if watching:  # each frame says what failed in it: the screen is redrawn, stderr would scroll away
        watch(lambda: _frame(*_read_status(clusters_dir, timeout, selected), output, inline=True), interval,
              clear=not output.is_document)  # fmt: skip
        return
    results, errors = _read_status(clusters_dir, timeout, selected)
    text = _frame(results, errors, output, inline=False)
    if text:
        typer.echo(text)
    if not output.is_document:
        for error in errors:
            typer.echo(f"error: {error}", err=True)
    if errors:
        raise typer.Exit(EXIT_CLUSTER_FAILED)


def _read_status(
    clusters_dir: Path | None, timeout: float, selected: LabelSelector | None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Every selected cluster's report, and what could not be read."""
    directory, registrations, registry_errors = _registrations(clusters_dir)
    if not registrations and not registry_errors:
        _fail(CommandError(f"no clusters registered in {directory}"))
    if selected is not None:
        registrations = {name: reg for name, reg in registrations.items() if selected.matches(reg.labels)}
    targets = [_registered_target(registrations[name], timeout) for name in sorted(registrations)]
    outcomes = asyncio.run(_read_fleet(targets))
    results = [o for o in outcomes if isinstance(o, dict)]
    errors = [f"{source}: {message}" for source, message in sorted(registry_errors.items())]
    errors += [o.message for o in outcomes if isinstance(o, CommandError)]
    return results, errors


def _frame(results: list[dict[str, Any]], errors: list[str], output: OutputFormat, *, inline: bool) -> str:
    """The report as `output` asks; with `inline`, followed by an `error:` line per failure."""
    if output.is_document:
        return render_document({"clusters": results, "errors": errors}, output)
    rows = [
        GpuRow(result, resource, counts)
        for result in results
        for resource, counts in result["gpus"].items() or [("-", {"total": 0, "requested": 0})]
    ]
    text = render(rows, GPU_COLUMNS, output, kind="cluster", name=lambda row: row.report["cluster"])
    return "\n".join([text, *(f"error: {error}" for error in errors)] if inline else [text]).strip("\n")
