"""`omectl rollout plan NAME -f NEW.yaml`: what a FleetRuntime edit would re-render, wave by wave, before it is
applied (built on `omectl runtime plan`, omectl.cli.runtime_plan).

The hub is read once: the FleetRuntime's kept revisions (to number the new one as the controller would) and the
registration Secrets (the clusters, their labels and kubeconfigs); without a hub (`--clusters-dir`), the revisions
kept in the state directory and the registration files. The edited FleetRuntime's placement and waves
give each wave its clusters (`omectl.core.fleet_runtimes.plan_waves`); in each placed cluster the copy the
controller would apply (`desired_copy`) is planned as `runtime plan` plans an edited runtime: every InferenceService
it reaches, and the diff of each engine workload it would re-render. Nothing is written. Exits as `runtime plan`:
0 nothing changes, 1 something changes, 2 an error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer
import yaml

from omectl.api.fleet import API_VERSION, KIND, template_problem
from omectl.cli.errors import CommandError
from omectl.cli.reports import DOCUMENT_OUTPUT_OPTION, DocumentFormat, emit
from omectl.cli.rollout import (
    CLUSTERS_DIR,
    CONTEXT,
    FLEET_STATE_DIR,
    HUB_NAMESPACE,
    KUBECONFIG,
    NAME_ARGUMENT,
    TIMEOUT,
    FleetRuntimeHub,
    FleetRuntimes,
    _fleet_runtimes,
    _revisions,
)
from omectl.cli.rollout_files import FleetRuntimeDirectory
from omectl.cli.runtime import EXIT_CLUSTER_FAILED, _fail, _kubeconfig_target, _registered_target, _with_client
from omectl.cli.runtime_plan import EXIT_PLAN_CHANGES, EXIT_PLAN_ERROR, EditedRuntime, _plan_with, _print_plan
from omectl.core.fleet_runtimes import copy_targets, desired_copy, placed_clusters, plan_waves, template_hash
from omectl.fleet.providers import CLUSTER_LABEL, DirectoryProvider, registration_from_secret
from omectl.fleet.registration import ClusterRegistration, RegistrationError
from omectl.fleet.runtime_state import StateError
from omectl.kube.client import ClusterClient
from omectl.kube.resources import SECRETS

__all__ = ["plan", "revision_for"]


def load_fleet_runtime(path: Path, name: str) -> dict[str, Any]:
    """The edited FleetRuntime of the file (`-` for stdin): one document, of that kind and name, whose template the
    controller would accept."""
    try:
        text = typer.get_text_stream("stdin").read() if str(path) == "-" else path.read_text()
        documents = [doc for doc in yaml.safe_load_all(text) if doc]
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CommandError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if len(documents) != 1 or not isinstance(documents[0], Mapping):
        raise CommandError(f"{path}: expected one FleetRuntime document, found {len(documents)} documents")
    doc = dict(documents[0])
    if (doc.get("apiVersion"), doc.get("kind")) != (API_VERSION, KIND):
        raise CommandError(f"{path}: expected a {API_VERSION} {KIND}, got {doc.get('apiVersion')} {doc.get('kind')}")
    found = (doc.get("metadata") or {}).get("name")
    if found != name:
        raise CommandError(f"{path}: the FleetRuntime is {found!r}, not {name!r}")
    problem = template_problem(doc.get("spec") or {})
    if problem is not None:
        raise CommandError(f"{path}: {problem}")
    return doc


def revision_for(digest: str, kept: Mapping[str, int]) -> int:
    """The revision number the controller would give a template (`kept`: hash -> number): its own when it is the
    newest, else the next one (a template that comes back is renumbered as the newest)."""
    newest = max(kept.values(), default=0)
    return newest if kept.get(digest) == newest and newest else newest + 1


async def _read_hub(
    client: ClusterClient, name: str, namespace: str
) -> tuple[dict[str, int], dict[str, ClusterRegistration], list[str]]:
    revisions = await _revisions(client, name, namespace)
    kept = {(r.get("data") or {}).get("hash", ""): int(r.get("revision") or 0) for r in revisions}
    secrets = await client.list_all(SECRETS, namespace, label_selector=f"{CLUSTER_LABEL}=true")
    registrations: dict[str, ClusterRegistration] = {}
    errors = []
    for secret in secrets:
        try:
            reg = registration_from_secret(secret)
        except RegistrationError as exc:
            errors.append(str(exc))
            continue
        registrations[reg.name] = reg
    return kept, registrations, errors


def _read(
    fleet_runtimes: FleetRuntimes, name: str, timeout: float
) -> tuple[dict[str, int], dict[str, ClusterRegistration], list[str]]:
    """The kept revisions (hash -> number) and the registered clusters, from the hub or the clusters directory."""
    if not isinstance(fleet_runtimes, FleetRuntimeDirectory):
        assert isinstance(fleet_runtimes, FleetRuntimeHub)
        hub = _kubeconfig_target(fleet_runtimes.kubeconfig, fleet_runtimes.context, timeout)
        return asyncio.run(_with_client(hub, lambda c: _read_hub(c, name, fleet_runtimes.namespace)))
    kept = {(r.get("data") or {}).get("hash", ""): int(r.get("revision") or 0) for r in fleet_runtimes.revisions(name)}
    registrations, problems = DirectoryProvider(fleet_runtimes.files).scan()
    return kept, registrations, list(problems.values())


def plan(
    name: str = NAME_ARGUMENT,
    filename: Path = typer.Option(..., "-f", "--filename", help="The edited FleetRuntime, as you would apply it."),
    kubeconfig: Path | None = KUBECONFIG,
    context: str | None = CONTEXT,
    hub_namespace: str = HUB_NAMESPACE,
    output: DocumentFormat = DOCUMENT_OUTPUT_OPTION,
    timeout: float = TIMEOUT,
    clusters_dir: Path | None = CLUSTERS_DIR,
    fleet_state_dir: Path | None = FLEET_STATE_DIR,
) -> None:
    """Before applying a FleetRuntime edit: per wave, what each of its clusters would re-render (as `runtime plan`).
    Nothing is written. Exits as kubectl diff: 0 nothing changes, 1 something changes, 2 an error."""
    try:
        fleet_runtimes = _fleet_runtimes(kubeconfig, context, timeout, clusters_dir, fleet_state_dir, hub_namespace)
        fr = load_fleet_runtime(filename, name)
        kept, registrations, errors = _read(fleet_runtimes, name, timeout)
    except (RegistrationError, StateError) as exc:
        _fail(CommandError(str(exc), EXIT_PLAN_ERROR))
    except CommandError as exc:
        _fail(CommandError(exc.message, EXIT_PLAN_ERROR))
    spec = fr["spec"]
    revision = revision_for(template_hash(spec), kept)
    labels = {n: dict(r.labels) for n, r in registrations.items()}
    placed = placed_clusters(spec.get("placement"), labels)
    waves = plan_waves((spec.get("rollout") or {}).get("waves") or [], placed, labels)
    if not (spec.get("rollout") or {}).get("waves"):
        waves = [w for w in waves if w.clusters]  # no waves: every placed cluster at once, one "wave"
    edits = [
        EditedRuntime(spec["template"]["kind"], spec["template"]["metadata"]["name"], ns or None, copy)
        for ns in copy_targets(spec)
        for copy in [desired_copy(spec["template"], name, revision, ns)]
    ]
    outcomes = asyncio.run(_plan_clusters([registrations[c] for c in placed], edits, timeout))
    results = {o["cluster"]: o for o in outcomes if isinstance(o, dict)}
    errors += [o.message for o in outcomes if isinstance(o, CommandError)]
    wave_plans: list[dict[str, Any]] = [
        {"name": w.name, "clusters": [results[c] for c in w.clusters if c in results]} for w in waves if w.clusters
    ]
    document = {"name": name, "revision": revision, "waves": wave_plans, "errors": errors, "written": False}
    if output is DocumentFormat.table:
        typer.echo(f"fleetruntime.fleet.omectl.io/{name}: revision {revision} to {len(placed)} placed clusters")
        for index, wave in enumerate(wave_plans):
            typer.echo(f"\nwave {index + 1} ({wave['name']}):")
            if wave["clusters"]:
                _print_plan(wave["clusters"])
        for error in errors:
            typer.echo(f"error: {error}", err=True)
    else:
        emit(document, output)
    if errors:
        raise typer.Exit(EXIT_PLAN_ERROR)
    if any(r["changes"] for r in results.values()):
        raise typer.Exit(EXIT_PLAN_CHANGES)


async def _plan_clusters(
    registrations: list[ClusterRegistration], edits: list[EditedRuntime], timeout: float
) -> list[dict[str, Any] | CommandError]:
    async def one(reg: ClusterRegistration) -> dict[str, Any] | CommandError:
        try:
            result = await _with_client(_registered_target(reg, timeout), lambda client: _plan_with(client, edits))
        except CommandError as exc:
            return CommandError(exc.message, EXIT_CLUSTER_FAILED)
        return {**result, "cluster": reg.name}

    return list(await asyncio.gather(*(one(reg) for reg in registrations)))
