"""`omectl rollout` (also `kubectl ome rollout`): watch and steer the wave rollout of a FleetRuntime
(docs/fleet-rollouts.md), in a hub or, without one, in the clusters directory.

`status` reads the FleetRuntime's status (one progress bar per wave, a row per cluster; `--watch` redraws it);
`plan -f` shows what an edit would re-render per wave (omectl.cli.rollout_plan); `history` lists its revisions
(the ControllerRevisions in the hub namespace); `pause` and `resume` set
`spec.rollout.paused`; `promote`, `abort` and `rollback [--to N]` write a request annotation with a fresh token
(`omectl.core.fleet_runtimes.REQUEST_ANNOTATIONS`), which the controller acts on once. Every command talks to the
hub only (`--kubeconfig`, `--context`); the controller does the rest. With `--clusters-dir` (no hub) the same
commands read the FleetRuntime files and the state `omectl run` keeps of them, and write the requests there
(omectl.cli.rollout_files). Importing this module costs typer and the pure rollout model: the client loads when a
command talks to a hub.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import typer

from omectl.cli.lazy import LazyCommand, LazyGroup
from omectl.cli.reports import DOCUMENT_OUTPUT_OPTION, OUTPUT_OPTION, Column, DocumentFormat, OutputFormat
from omectl.core.fleet_runtimes import (
    ABORT_ANNOTATION,
    FLEET_RUNTIME_LABEL,
    PROMOTE_ANNOTATION,
    ROLLBACK_ANNOTATION,
    ROLLBACK_TO_ANNOTATION,
)
from omectl.fleet.providers import CLUSTERS_DIR_ENV

if TYPE_CHECKING:
    from omectl.kube.client import ClusterClient

__all__ = ["progress_bar", "rollout_app", "status_report"]

T = TypeVar("T")


class RolloutCommands(LazyGroup):
    """`omectl rollout`: `plan` (which reads the members, through `runtime plan`) loads only when it runs."""

    lazy = {
        "plan": LazyCommand(
            "omectl.cli.rollout_plan",
            "plan",
            "Before applying a FleetRuntime edit: per wave, what each of its clusters would re-render (as `runtime "
            "plan`). Nothing is written. Exits as kubectl diff: 0 nothing changes, 1 something changes, 2 an error.",
        ),
    }


rollout_app = typer.Typer(
    cls=RolloutCommands,
    no_args_is_help=True,
    help="Watch and steer the wave rollout of a FleetRuntime (in the hub, or without one in --clusters-dir): "
    "status, plan, history, pause, resume, promote, abort, rollback.",
)

KIND = "fleetruntime.fleet.omectl.io"
BAR_WIDTH = 20
NAME_ARGUMENT = typer.Argument(..., help="Name of the FleetRuntime.")
KUBECONFIG = typer.Option(
    None, "--kubeconfig", help="Kubeconfig of the hub (default: $KUBECONFIG, else ~/.kube/config).", show_default=False
)
CONTEXT = typer.Option(None, "--context", help="Kubeconfig context of the hub (default: the current one).")
HUB_NAMESPACE = typer.Option(
    "omectl-system", "--hub-namespace", envvar="OMECTL_HUB_NAMESPACE", help="The controller's namespace in the hub."
)
TIMEOUT = typer.Option(10.0, "--timeout", min=0.1, help="Seconds to wait for each request to the hub.")
CLUSTERS_DIR = typer.Option(
    None,
    "--clusters-dir",
    help="Without a hub: the directory of the FleetRuntime files (and ClusterRegistrations) `omectl run "
    "--clusters-dir` reads (default: $OMECTL_CLUSTERS_DIR, when neither --kubeconfig nor --context is given).",
    show_default=False,
)
FLEET_STATE_DIR = typer.Option(
    None,
    "--fleet-state-dir",
    envvar="OMECTL_FLEET_STATE_DIR",
    help="Without a hub: where `omectl run` keeps the FleetRuntimes' state (default: <clusters-dir>/.omectl-state).",
    show_default=False,
)


# --- where the FleetRuntime is: a hub, or a directory ---------------------------------------------------------


class FleetRuntimes(Protocol):
    """Where the commands find FleetRuntimes: `FleetRuntimeHub`, or without a hub
    `omectl.cli.rollout_files.FleetRuntimeDirectory`. Each failure is a CommandError (one line)."""

    def get(self, name: str) -> dict[str, Any]:
        """The FleetRuntime, its status included."""
        ...

    def revisions(self, name: str) -> list[dict[str, Any]]:
        """Its kept revisions, newest first, as ControllerRevisions."""
        ...

    def steer(
        self,
        name: str,
        *,
        needs_waves: str,
        paused: bool | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        """Set `spec.rollout.paused` and/or request annotations (None removes one), after checking that the
        FleetRuntime has waves (`needs_waves`: what the command does, for the error)."""
        ...


def _fleet_runtimes(
    kubeconfig: Path | None,
    context: str | None,
    timeout: float,
    clusters_dir: Path | None,
    fleet_state_dir: Path | None,
    hub_namespace: str = "omectl-system",
) -> FleetRuntimes:
    """The hub `--kubeconfig`/`--context` name, or the directory `--clusters-dir` (or $OMECTL_CLUSTERS_DIR, when
    no hub is named) names; both at once is a usage error."""
    if clusters_dir is not None and (kubeconfig is not None or context is not None):
        raise typer.BadParameter(
            "--clusters-dir reads the FleetRuntime files of the hubless setup, --kubeconfig and --context a hub: "
            "give one or the other",
            param_hint="--clusters-dir",
        )
    if clusters_dir is None and kubeconfig is None and context is None and os.environ.get(CLUSTERS_DIR_ENV):
        clusters_dir = Path(os.environ[CLUSTERS_DIR_ENV])
    if clusters_dir is None:
        return FleetRuntimeHub(kubeconfig, context, timeout, hub_namespace)
    from omectl.cli.rollout_files import FleetRuntimeDirectory
    from omectl.fleet.providers import clusters_dir_to_read
    from omectl.fleet.runtime_state import default_state_dir

    files = clusters_dir_to_read(clusters_dir)
    return FleetRuntimeDirectory(files, fleet_state_dir or default_state_dir(files))


# --- talking to the hub ------------------------------------------------------------------------------------


class FleetRuntimeHub:
    """The FleetRuntimes of a hub, read and patched through its API server (one connection per call)."""

    def __init__(self, kubeconfig: Path | None, context: str | None, timeout: float, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        self.timeout = timeout
        self.namespace = namespace

    def get(self, name: str) -> dict[str, Any]:
        return _on_hub(self.kubeconfig, self.context, self.timeout, lambda client: _fleet_runtime(client, name))

    def revisions(self, name: str) -> list[dict[str, Any]]:
        return _on_hub(self.kubeconfig, self.context, self.timeout, lambda c: _revisions(c, name, self.namespace))

    def steer(
        self,
        name: str,
        *,
        needs_waves: str,
        paused: bool | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        body: dict[str, Any] = {}
        if paused is not None:
            body["spec"] = {"rollout": {"paused": paused}}
        if annotations:
            body["metadata"] = {"annotations": dict(annotations)}
        _on_hub(
            self.kubeconfig,
            self.context,
            self.timeout,
            lambda client: _patch(client, name, body, needs_waves=needs_waves),
        )


def _on_hub(kubeconfig: Path | None, context: str | None, timeout: float, work: Callable[..., Awaitable[T]]) -> T:
    """Run `work(client)` against the hub; a failure is one line on stderr and the exit status."""
    from omectl.cli.errors import CommandError
    from omectl.cli.runtime import _fail, _kubeconfig_target, _with_client

    try:
        return asyncio.run(_with_client(_kubeconfig_target(kubeconfig, context, timeout), work))
    except CommandError as exc:
        _fail(exc)


async def _fleet_runtime(client: ClusterClient, name: str) -> dict[str, Any]:
    from omectl.cli.errors import CommandError
    from omectl.cli.runtime import _get_or_none
    from omectl.kube.resources import FLEET_RUNTIMES

    found = await _get_or_none(client, FLEET_RUNTIMES, name)
    if found is None:
        raise CommandError(f'fleetruntime "{name}" not found (cluster {client.name})')
    return found


async def _revisions(client: ClusterClient, name: str, namespace: str) -> list[dict[str, Any]]:
    from omectl.cli.fleet_runtime_reads import newest_first
    from omectl.kube.resources import CONTROLLER_REVISIONS

    items = await client.list_all(CONTROLLER_REVISIONS, namespace, label_selector=f"{FLEET_RUNTIME_LABEL}={name}")
    return newest_first(items)


async def _patch(client: ClusterClient, name: str, body: dict[str, Any], *, needs_waves: str) -> None:
    """Merge-patch the FleetRuntime, after checking it exists and has waves (`needs_waves`: what the command does,
    for the error)."""
    from omectl.cli.fleet_runtime_reads import require_waves
    from omectl.kube.field_managers import ROLLOUT_FIELD_MANAGER
    from omectl.kube.resources import FLEET_RUNTIMES

    require_waves(await _fleet_runtime(client, name), name, needs_waves)
    await client.patch(FLEET_RUNTIMES, name, body, None, patch_type="merge", field_manager=ROLLOUT_FIELD_MANAGER)


# --- status ------------------------------------------------------------------------------------------------


def progress_bar(engines: Mapping[str, Any] | None, phase: str, width: int = BAR_WIDTH) -> str:
    """`[#####...............] 1/4`: the wave's engines Ready at its revision of those its gate waits for (pinned
    ones do not count); a wave that reaches no engine is full once it passed or soaks, empty before."""
    engines = engines or {}
    gated = max(int(engines.get("reached") or 0) - int(engines.get("pinned") or 0), 0)
    ready = min(int(engines.get("ready") or 0), gated)
    passed = phase in ("Succeeded", "Soaking")
    filled = round(width * ready / gated) if gated else (width if passed else 0)
    return f"[{'#' * filled}{'.' * (width - filled)}] {ready}/{gated}"


def status_report(fr: Mapping[str, Any]) -> dict[str, Any]:
    """The document `rollout status -o json|yaml` prints: the rollout, each wave, each cluster."""
    status = fr.get("status") or {}
    rollout = status.get("rollout") or {}
    return {
        "name": (fr.get("metadata") or {}).get("name"),
        "revision": status.get("revision"),
        "phase": status.get("phase"),
        "rollout": rollout,
        "waves": status.get("waves") or [],
        "clusters": status.get("clusters") or [],
    }


def _count(entry: Mapping[str, Any], key: str) -> str:
    engines = entry.get("engines")
    return str(engines.get(key, 0)) if isinstance(engines, Mapping) else "-"


CLUSTER_COLUMNS: list[Column[Mapping[str, Any]]] = [
    Column("CLUSTER", lambda c: str(c.get("name"))),
    Column("WAVE", lambda c: str(c.get("wave") or "-")),
    Column("WAVE PHASE", lambda c: str(c.get("rolloutPhase") or "-")),
    Column("PHASE", lambda c: str(c.get("phase"))),
    Column("REVISION", lambda c: str(c.get("revision") or "-")),
    Column("REACHED", lambda c: _count(c, "reached")),
    Column("UPDATED", lambda c: _count(c, "updated")),
    Column("READY", lambda c: _count(c, "ready")),
    Column("PINNED", lambda c: _count(c, "pinned")),
    Column("MESSAGE", lambda c: str(c.get("message") or "")),
]


def render_status(report: Mapping[str, Any]) -> str:
    """The human view: a headline, one progress bar per wave, the rollout's message, a table of clusters."""
    from omectl.cli.reports import render_records

    rollout = report["rollout"]
    stable = f", stable {rollout['stableRevision']}" if rollout.get("stableRevision") is not None else ""
    lines = [f"{KIND}/{report['name']}: revision {report['revision']} {report['phase']}{stable}"]
    waves = report["waves"]
    width = max((len(f"{i + 1} {w['name']}") for i, w in enumerate(waves)), default=0)
    for index, wave in enumerate(waves):
        label = f"{index + 1} {wave['name']}".ljust(width)
        revision = f"revision {wave['revision']}" if wave.get("revision") is not None else "-"
        bar = progress_bar(wave.get("engines"), wave["phase"])
        clusters = ", ".join(wave.get("clusters") or []) or "no cluster"
        lines.append(f"wave {label}  {wave['phase']:<11} {bar}  {revision:<11} {clusters}")
    if rollout.get("message"):
        lines.append(rollout["message"])
    clusters = report["clusters"]
    if clusters:
        lines += ["", render_records(clusters, CLUSTER_COLUMNS, OutputFormat.table)]
    return "\n".join(lines)


@rollout_app.command("status")
def status(
    name: str = NAME_ARGUMENT,
    watch_: bool = typer.Option(False, "--watch", "-w", help="Redraw every --interval seconds until Ctrl-C."),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Seconds between redraws with --watch."),
    output: DocumentFormat = DOCUMENT_OUTPUT_OPTION,
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Where the rollout of a FleetRuntime is: one progress bar per wave, engines per cluster."""
    from omectl.cli.reports import render_document, watch

    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir)

    def frame() -> str:
        fr = fleet_runtimes.get(name)
        report = status_report(fr)
        return render_status(report) if output is DocumentFormat.table else render_document(report, output)

    if watch_:
        watch(frame, interval, clear=output is DocumentFormat.table)
    typer.echo(frame())


# --- history -----------------------------------------------------------------------------------------------


def _image(template: Any) -> str:
    try:
        return str(template["spec"]["engineConfig"]["runner"]["image"])
    except (KeyError, TypeError):
        return "-"


def history_rows(fr: Mapping[str, Any], revisions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    status = fr.get("status") or {}
    stable = (status.get("rollout") or {}).get("stableRevision")
    rows = []
    for item in revisions:
        data = item.get("data") or {}
        number = int(item.get("revision") or 0)
        rows.append(
            {
                "revision": number,
                "name": item["metadata"]["name"],
                "hash": data.get("hash", ""),
                "created": item["metadata"].get("creationTimestamp"),
                "current": number == status.get("revision"),
                "stable": number == stable,
                "image": _image(data.get("template")),
            }
        )
    return rows


HISTORY_COLUMNS: list[Column[Mapping[str, Any]]] = [
    Column("REVISION", lambda r: str(r["revision"])),
    Column("NAME", lambda r: r["name"]),
    Column("HASH", lambda r: r["hash"]),
    Column("CURRENT", lambda r: "yes" if r["current"] else "-"),
    Column("STABLE", lambda r: "yes" if r["stable"] else "-"),
    Column("IMAGE", lambda r: r["image"]),
    Column("CREATED", lambda r: r["created"] or "-", wide=True),
]


@rollout_app.command("history")
def history(
    name: str = NAME_ARGUMENT,
    output: OutputFormat = OUTPUT_OPTION,
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    hub_namespace: str = HUB_NAMESPACE,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """The kept revisions of a FleetRuntime, newest first: which is current, which is stable (`rollback --to N`)."""
    from omectl.cli.reports import print_records

    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir, hub_namespace)
    rows = history_rows(fleet_runtimes.get(name), fleet_runtimes.revisions(name))
    print_records(
        rows,
        HISTORY_COLUMNS,
        output,
        kind="controllerrevision.apps",
        name=lambda r: r["name"],
        document={"name": name, "revisions": rows},
    )


# --- steering ----------------------------------------------------------------------------------------------


def _token() -> str:
    """A fresh request token: the time, to the microsecond (the controller acts on a token it has not seen)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _steer(fleet_runtimes: FleetRuntimes, name: str, verb: str, said: str, **request: Any) -> None:
    fleet_runtimes.steer(name, needs_waves=verb, **request)
    typer.echo(f"{KIND}/{name} {said}")


@rollout_app.command("pause")
def pause(
    name: str = NAME_ARGUMENT,
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Hold the rollout at its current wave (`spec.rollout.paused: true`)."""
    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir)
    _steer(fleet_runtimes, name, "pause", "paused", paused=True)


@rollout_app.command("resume")
def resume(
    name: str = NAME_ARGUMENT,
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Let a paused rollout go on (`spec.rollout.paused: false`); the wave's deadline counts from now."""
    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir)
    _steer(fleet_runtimes, name, "resume", "resumed", paused=False)


@rollout_app.command("promote")
def promote(
    name: str = NAME_ARGUMENT,
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Pass the current wave now, its gate and soak skipped; the next wave has its own gate."""
    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir)
    _steer(fleet_runtimes, name, "promote", "promote requested", annotations={PROMOTE_ANNOTATION: _token()})


@rollout_app.command("abort")
def abort(
    name: str = NAME_ARGUMENT,
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Stop the rollout where it is (Aborted): the clusters it changed keep the new revision."""
    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir)
    _steer(fleet_runtimes, name, "abort", "abort requested", annotations={ABORT_ANNOTATION: _token()})


@rollout_app.command("rollback")
def rollback(
    name: str = NAME_ARGUMENT,
    to: int | None = typer.Option(
        None, "--to", min=1, help="The kept revision to go back to (`omectl rollout history`; default: the stable one)."
    ),
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    hub_namespace: str = HUB_NAMESPACE,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Give the clusters the rollout changed the stable revision again (or --to N), the last wave's first."""
    from omectl.cli.errors import CommandError

    fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir, hub_namespace)
    if to is not None:
        kept = [int(r.get("revision") or 0) for r in fleet_runtimes.revisions(name)]
        if to not in kept:
            listed = ", ".join(str(n) for n in sorted(kept)) or "none"
            raise CommandError(f"revision {to} of fleetruntime {name} is not kept (kept: {listed})")
    target = f"revision {to}" if to is not None else "the stable revision"
    annotations = {ROLLBACK_ANNOTATION: _token(), ROLLBACK_TO_ANNOTATION: str(to) if to is not None else None}
    _steer(fleet_runtimes, name, "roll back", f"rollback to {target} requested", annotations=annotations)
