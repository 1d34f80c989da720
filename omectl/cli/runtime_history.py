"""`omectl runtime history RUNTIME` (also `kubectl ome runtime history`): the revisions of a runtime's merged spec.

A revision is the immutable ControllerRevision `<runtime>-<hash>` the controller snapshots in an InferenceService's
namespace (`omectl.controller.ome.revisions`). The history lists them newest first with age, hash, the chain and its
resourceVersions, which one the live chain resolves to now, and the InferenceServices pinned to each;
`--diff REV1 REV2` prints the merged-spec difference between two of them and exits like `diff`: 0 when they are
the same, 1 when they differ.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer
import yaml

from omectl.cli.errors import CommandError
from omectl.cli.reports import OUTPUT_OPTION, Column, OutputFormat, emit, print_records
from omectl.cli.runtime import (
    EXIT_CLUSTER_FAILED,
    ClusterRead,
    _fail,
    _one_line,
    _single_target,
    _with_client,
)
from omectl.cli.targets import CLUSTER_OPTION, CLUSTERS_DIR_OPTION, CONTEXT_OPTION, KUBECONFIG_OPTION, TIMEOUT_OPTION
from omectl.controller.ome.revisions import RUNTIME_KIND_LABEL, RUNTIME_LABEL, spec_hash
from omectl.core.jsonish import as_mapping
from omectl.core.ome.inheritance import ChainError, ResolutionContext, resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.kube.client import ClusterClient, KubeError
from omectl.kube.resources import (
    CLUSTER_SERVING_RUNTIMES,
    CONTROLLER_REVISIONS,
    INFERENCE_SERVICES,
    SERVING_RUNTIMES,
    ResourceRef,
)
from omectl.observability.redact import redact_object

__all__ = ["history", "history_report"]

EXIT_DIFFERENT = 1
REVISION_KIND = "controllerrevision.apps"  # `-o name` prints controllerrevision.apps/NAME
REVISION_COLUMNS: list[Column[Mapping[str, Any]]] = [
    Column("NAMESPACE", lambda r: r["namespace"]),
    Column("REVISION", lambda r: str(r["revision"])),
    Column("NAME", lambda r: r["name"]),
    Column("HASH", lambda r: r["hash"]),
    Column("AGE", lambda r: r["age"]),
    Column("LIVE", lambda r: "yes" if r["live"] else "-"),
    Column("PINNED BY", lambda r: ",".join(r["pinnedBy"]) or "-"),
    Column("CHAIN", lambda r: ",".join(r["chain"]) or "-"),
    Column("RESOURCEVERSIONS", lambda r: ",".join(r["resourceVersions"]) or "-"),
    Column("KIND", lambda r: r["kind"] or "-", wide=True),
    Column("CREATED", lambda r: r["created"] or "-", wide=True),
]


def _age(created: str | None, now: datetime) -> str:
    """kubectl's short age: 45s, 12m, 5h, 3d."""
    if not created:
        return "-"
    try:
        seconds = int((now - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    except ValueError:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _pinned_to(isvc: Mapping[str, Any]) -> str | None:
    """The revision an InferenceService is pinned to (`spec.runtime.revision`, or the one `autoSync: false` keeps)."""
    runtime = as_mapping(as_mapping(isvc.get("spec")).get("runtime"))
    if runtime.get("revision"):
        return str(runtime["revision"])
    if runtime.get("autoSync", True) is False:
        return as_mapping(as_mapping(isvc.get("status")).get("runtime")).get("revision") or None
    return None


def _live_hash(read: ClusterRead, runtime: str, namespace: str) -> tuple[str | None, str | None]:
    """(hash of the merged spec an InferenceService of `namespace` naming `runtime` would render now, error)."""
    found = ResolutionContext(namespace).find(runtime, read.lookup())
    if found is None:
        return None, f'runtime "{runtime}" not found'
    try:
        return spec_hash(merge_chain(spec_layers(resolve_chain(found[1], read.lookup()))).spec), None
    except ChainError as exc:
        return None, exc.message


def history_report(
    read: ClusterRead, runtime: str, revisions: list[dict[str, Any]], now: datetime | None = None
) -> dict[str, Any]:
    """The history document of one cluster: every revision of `runtime` in the namespaces read, newest first."""
    now = now or datetime.now(UTC)
    pinned: dict[tuple[str, str], list[str]] = {}
    for isvc in read.inference_services.list():
        revision = _pinned_to(isvc)
        if revision:
            meta = isvc["metadata"]
            pinned.setdefault((meta.get("namespace", ""), revision), []).append(meta["name"])
    live: dict[str, tuple[str | None, str | None]] = {}
    entries = []
    for obj in revisions:
        meta, data = obj["metadata"], as_mapping(obj.get("data"))
        namespace = meta.get("namespace", "")
        if namespace not in live:
            live[namespace] = _live_hash(read, runtime, namespace)
        entries.append(
            {
                "namespace": namespace,
                "name": meta["name"],
                "revision": int(obj.get("revision") or 0),
                "kind": (meta.get("labels") or {}).get(RUNTIME_KIND_LABEL, ""),
                "hash": data.get("hash", ""),
                "created": meta.get("creationTimestamp"),
                "age": _age(meta.get("creationTimestamp"), now),
                "chain": list(data.get("chain") or ()),
                "resourceVersions": list(data.get("resourceVersions") or ()),
                "live": bool(data.get("hash")) and data.get("hash") == live[namespace][0],
                "pinnedBy": sorted(pinned.get((namespace, meta["name"]), [])),
            }
        )
    entries.sort(key=lambda e: (e["namespace"], -e["revision"], e["name"]))
    return {
        "cluster": read.cluster,
        "runtime": runtime,
        "revisions": entries,
        "liveErrors": {ns: error for ns, (_, error) in sorted(live.items()) if error},
    }


async def _list(client: ClusterClient, resource: ResourceRef, namespace: str | None, **kw: Any) -> list[dict[str, Any]]:
    try:
        return await client.list_all(resource, namespace, **kw)
    except KubeError as exc:
        prefix = f"cluster {client.name}: "
        raise CommandError(
            f"{prefix}cannot list {resource.plural}: {_one_line(exc).removeprefix(prefix)}", EXIT_CLUSTER_FAILED
        ) from None


async def _read(client: ClusterClient, runtime: str, namespace: str | None) -> tuple[ClusterRead, list[dict[str, Any]]]:
    revisions, serving, cluster_serving, isvcs = await asyncio.gather(
        _list(client, CONTROLLER_REVISIONS, namespace, label_selector=f"{RUNTIME_LABEL}={runtime}"),
        _list(client, SERVING_RUNTIMES, namespace),
        _list(client, CLUSTER_SERVING_RUNTIMES, None),
        _list(client, INFERENCE_SERVICES, namespace),
    )
    return ClusterRead.from_lists(client.name, serving, cluster_serving, isvcs), revisions


def _find(report: Mapping[str, Any], wanted: str) -> Mapping[str, Any]:
    """A revision by name or by number (numbers count per namespace: with -A, name it)."""
    matches = [
        r for r in report["revisions"] if r["name"] == wanted or (wanted.isdigit() and r["revision"] == int(wanted))
    ]
    if not matches:
        raise CommandError(
            f'revision "{wanted}" of runtime "{report["runtime"]}" not found (cluster {report["cluster"]})'
        )
    if len(matches) > 1:
        where = ", ".join(f"{m['namespace']}/{m['name']}" for m in matches)
        raise CommandError(f'revision "{wanted}" is ambiguous ({where}): name it, or pick a namespace with -n')
    found: Mapping[str, Any] = matches[0]
    return found


def _spec_lines(spec: Mapping[str, Any]) -> list[str]:
    return yaml.safe_dump(redact_object(dict(spec)), sort_keys=True).splitlines(keepends=True)


def history(
    runtime: str = typer.Argument(..., help="Name of the runtime (ServingRuntime or ClusterServingRuntime)."),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Namespace of the revisions (default: the context's namespace)."
    ),
    all_namespaces: bool = typer.Option(False, "-A", "--all-namespaces", help="Revisions in every namespace."),
    diff: tuple[str, str] | None = typer.Option(
        None, "--diff", help="Print the merged-spec difference REV1 -> REV2 (names or numbers); exit 1 if they differ."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """The revisions of RUNTIME's merged spec, newest first: hash, chain, live, and who is pinned to each."""

    async def work(client: ClusterClient) -> tuple[dict[str, Any], dict[str, Mapping[str, Any]]]:
        scope = None if all_namespaces else (namespace or client.default_namespace)
        read, revisions = await _read(client, runtime, scope)
        specs = {
            f"{r['metadata'].get('namespace', '')}/{r['metadata']['name']}": as_mapping(
                as_mapping(r.get("data")).get("spec")
            )
            for r in revisions
        }
        return history_report(read, runtime, revisions) | {"namespace": scope}, specs

    try:
        target = _single_target(kubeconfig, context, cluster, clusters_dir, timeout)
        report, specs = asyncio.run(_with_client(target, work))
        if diff is not None:
            old, new = (_find(report, wanted) for wanted in diff)
    except CommandError as exc:
        _fail(exc)
    if diff is not None:
        _print_diff(old, new, specs)
        return
    if output.is_document:
        emit(report, output)
        return
    if not report["revisions"]:
        if output is not OutputFormat.name:
            scope = report["namespace"]
            where = "any namespace" if scope is None else f'namespace "{scope}"'
            typer.echo(f'No revisions of runtime "{runtime}" in {where} (cluster {report["cluster"]}).')
        return
    print_records(report["revisions"], REVISION_COLUMNS, output, kind=REVISION_KIND, name=lambda r: r["name"])
    for ns, error in report["liveErrors"].items():
        typer.echo(f"namespace {ns}: the live chain does not resolve: {error}", err=True)


def _print_diff(old: Mapping[str, Any], new: Mapping[str, Any], specs: Mapping[str, Mapping[str, Any]]) -> None:
    before = specs[f"{old['namespace']}/{old['name']}"]
    after = specs[f"{new['namespace']}/{new['name']}"]
    lines = list(
        difflib.unified_diff(
            _spec_lines(before),
            _spec_lines(after),
            fromfile=f"{old['name']} (revision {old['revision']})",
            tofile=f"{new['name']} (revision {new['revision']})",
        )
    )
    if not lines:
        typer.echo(f"{old['name']} and {new['name']} have the same merged spec")
        return
    typer.echo("".join(lines).rstrip("\n"))
    raise typer.Exit(EXIT_DIFFERENT)
