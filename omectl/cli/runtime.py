"""`omectl runtime` (also `kubectl ome runtime`): what an InferenceService's runtime resolves to, and what a runtime
edit reaches, read straight from the clusters (no running controller needed).

- `effective ISVC`: the runtime an InferenceService names, its kind, revision, pin and drift, and its inheritance
  chain; `-o json|yaml` adds the chain (root first), the merged spec and which runtime set each field.
- `tree RUNTIME`: the runtimes that inherit from a runtime (any depth, every namespace) and the InferenceServices
  that name it or one of them; `--all-clusters` does this for every registered cluster.

kubectl hands a plugin every argument after its name and refuses global flags placed before it, so the commands
take `--kubeconfig`, `--context` and `-n/--namespace` themselves and read `KUBECONFIG` like kubectl. Exit codes:
0 success, 1 something asked for does not exist or does not resolve, 2 a cluster could not be read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
import yaml
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from omectl.controller.lookup import (
    INHERIT_INDEX,
    RUNTIME_INDEX,
    CacheLookup,
    descendants,
    inherit_index,
    runtime_index,
)
from omectl.core.inheritance import ChainError, inherit_from, resolve_chain, spec_layers
from omectl.core.merge import merge_chain
from omectl.core.runtimes import CLUSTER_SERVING_RUNTIME, RUNTIME_PROFILE_ANNOTATION, SERVING_RUNTIME, RuntimeRef
from omectl.core.selection import RuntimeValidation, lookup_named_runtime, named_runtime
from omectl.fleet.providers import CLUSTERS_DIR_ENV, DirectoryProvider, clusters_dir_from_env
from omectl.fleet.registration import ClusterRegistration, RegistrationError, open_client
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient, KubeAPIError, KubeConfigError, KubeError
from omectl.kube.resources import CLUSTER_SERVING_RUNTIMES, INFERENCE_SERVICES, SERVING_RUNTIMES, ResourceRef
from omectl.observability.redact import redact_object

__all__ = ["ClusterRead", "effective_report", "runtime_app", "runtime_tree"]

runtime_app = typer.Typer(
    no_args_is_help=True, help="Inspect OME runtime inheritance: effective runtimes and what a runtime edit reaches."
)

EXIT_NOT_FOUND = 1
EXIT_CLUSTER_FAILED = 2
WIDE_CONSOLE = 200
DRIFT_CONDITION = "RuntimeDrifted"
INHERITANCE_CONDITION = "InheritanceReady"
_UNKNOWN = "-"
_KUBECONFIG_CLIENT = "kubeconfig"  # names the client in messages until its context is known

T = TypeVar("T")


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    yaml = "yaml"


class CommandError(Exception):
    """A one-line failure for the operator; `code` is the exit status."""

    def __init__(self, message: str, code: int = EXIT_NOT_FOUND) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# --- options -----------------------------------------------------------------------------------------------

KUBECONFIG_OPTION = typer.Option(
    None, "--kubeconfig", help="Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).", show_default=False
)
CONTEXT_OPTION = typer.Option(None, "--context", help="Kubeconfig context (default: the current one).")
CLUSTER_OPTION = typer.Option(None, "--cluster", help="Read this registered cluster (see `omectl cluster list`).")
CLUSTERS_DIR_OPTION = typer.Option(
    None,
    "--clusters-dir",
    envvar=CLUSTERS_DIR_ENV,
    help="Directory of ClusterRegistration files (default: ./clusters).",
    show_default=False,
)
OUTPUT_OPTION = typer.Option(OutputFormat.table, "-o", "--output", help="table, json or yaml.")
TIMEOUT_OPTION = typer.Option(10.0, "--timeout", min=0.1, help="Seconds to wait for each request to a cluster.")


# --- reading clusters --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusterTarget:
    """A cluster to read, and how to connect to it."""

    name: str
    connect: Callable[[], Awaitable[ClusterClient]]


@dataclass
class ClusterRead:
    """What one cluster holds, as informer-style caches with the controller's indexes."""

    cluster: str
    serving: ObjectCache
    cluster_serving: ObjectCache
    inference_services: ObjectCache

    @classmethod
    def from_lists(
        cls,
        cluster: str,
        serving: list[dict[str, Any]],
        cluster_serving: list[dict[str, Any]],
        inference_services: list[dict[str, Any]] | None = None,
    ) -> ClusterRead:
        read = cls(cluster, ObjectCache(), ObjectCache(), ObjectCache())
        read.serving.add_index(INHERIT_INDEX, inherit_index)
        read.cluster_serving.add_index(INHERIT_INDEX, inherit_index)
        read.inference_services.add_index(RUNTIME_INDEX, runtime_index)
        for obj in serving:
            read.serving.upsert(_with_kind(obj, SERVING_RUNTIME))
        for obj in cluster_serving:
            read.cluster_serving.upsert(_with_kind(obj, CLUSTER_SERVING_RUNTIME))
        for obj in inference_services or []:
            read.inference_services.upsert(_with_kind(obj, INFERENCE_SERVICES.kind))
        return read

    def lookup(self) -> CacheLookup:
        return CacheLookup(self.serving, self.cluster_serving)

    def runtime(self, ref: RuntimeRef) -> dict[str, Any] | None:
        if ref.kind == SERVING_RUNTIME:
            return self.serving.get(ref.namespace, ref.name)
        return self.cluster_serving.get("", ref.name)


def _with_kind(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    # List items carry no kind on a real API server.
    if obj.get("kind") != kind:
        obj = {**obj, "kind": kind}
    return obj


def _kubeconfig_target(kubeconfig: Path | None, context: str | None, timeout: float) -> ClusterTarget:
    async def connect() -> ClusterClient:
        try:
            client = await ClusterClient.from_kubeconfig(
                kubeconfig, context=context, name=_KUBECONFIG_CLIENT, connect_timeout=timeout, request_timeout=timeout
            )
        except KubeConfigError as exc:
            raise CommandError(str(exc).removeprefix(f"cluster {_KUBECONFIG_CLIENT}: ")) from None
        loader_context = getattr(client._loader, "current_context", None) or {}
        client.name = str(loader_context.get("name") or context or _KUBECONFIG_CLIENT)
        return client

    return ClusterTarget(context or "", connect)


def _registered_target(reg: ClusterRegistration, timeout: float) -> ClusterTarget:
    async def connect() -> ClusterClient:
        try:
            return await open_client(reg, connect_timeout=timeout, request_timeout=timeout)
        except RegistrationError as exc:
            raise CommandError(f"cluster {reg.name}: {exc}", EXIT_CLUSTER_FAILED) from None

    return ClusterTarget(reg.name, connect)


def _registrations(clusters_dir: Path | None) -> tuple[Path, dict[str, ClusterRegistration], dict[str, str]]:
    directory = clusters_dir_from_env(clusters_dir)
    registrations, errors = DirectoryProvider(directory).scan()
    return directory, registrations, errors


def _single_target(
    kubeconfig: Path | None, context: str | None, cluster: str | None, clusters_dir: Path | None, timeout: float
) -> ClusterTarget:
    if cluster is None:
        return _kubeconfig_target(kubeconfig, context, timeout)
    if kubeconfig is not None or context is not None:
        raise CommandError("--cluster reads a registered cluster: it cannot be combined with --kubeconfig or --context")
    directory, registrations, errors = _registrations(clusters_dir)
    reg = registrations.get(cluster)
    if reg is None:
        for suffix in (".yaml", ".yml"):
            problem = errors.get(str(directory / f"{cluster}{suffix}"))
            if problem is not None:
                raise CommandError(problem)
        raise CommandError(f'cluster "{cluster}" is not registered in {directory}')
    return _registered_target(reg, timeout)


async def _with_client(target: ClusterTarget, work: Callable[[ClusterClient], Awaitable[T]]) -> T:
    """Connect, run `work`, close; every cluster failure becomes one CommandError line with exit status 2."""
    client: ClusterClient | None = None
    try:
        client = await target.connect()
        return await work(client)
    except KubeAPIError as exc:
        if exc.status == 404:
            raise CommandError(
                f"cluster {exc.cluster}: {exc.path} is not served (are the OME CRDs installed?)", EXIT_CLUSTER_FAILED
            ) from None
        raise CommandError(_one_line(exc), EXIT_CLUSTER_FAILED) from None
    except KubeError as exc:
        raise CommandError(_one_line(exc), EXIT_CLUSTER_FAILED) from None
    finally:
        if client is not None:
            await client.close()


async def _get_or_none(
    client: ClusterClient, ref: ResourceRef, name: str, namespace: str | None = None
) -> dict[str, Any] | None:
    try:
        return await client.get(ref, name, namespace)
    except KubeAPIError as exc:
        details = (exc.body or {}).get("details") if isinstance(exc.body, dict) else None
        if exc.status == 404 and isinstance(details, dict) and details.get("name") == name:
            return None
        raise


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# --- effective ---------------------------------------------------------------------------------------------


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _condition(obj: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    for condition in _mapping(obj.get("status")).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return dict(condition)
    return None


def _ref_document(ref: RuntimeRef) -> dict[str, Any]:
    document: dict[str, Any] = {"kind": ref.kind, "name": ref.name}
    if ref.kind == SERVING_RUNTIME:
        document["namespace"] = ref.namespace
    return document


def _runtime_label(ref: RuntimeRef) -> str:
    if ref.kind == SERVING_RUNTIME:
        return f"ServingRuntime {ref.namespace}/{ref.name}"
    return f"ClusterServingRuntime {ref.name}"


def _pin_state(isvc: Mapping[str, Any]) -> tuple[bool | None, Any, Any]:
    """(pinned, autoSync, pinned revision) from `spec.runtime`; pinned is None when neither field is set."""
    runtime = _mapping(_mapping(isvc.get("spec")).get("runtime"))
    auto_sync = runtime.get("autoSync")
    revision = runtime.get("revision") or None
    if revision is not None:
        return True, auto_sync, revision
    if isinstance(auto_sync, bool):
        return not auto_sync, auto_sync, None
    return None, auto_sync, None


def effective_report(read: ClusterRead, isvc: Mapping[str, Any]) -> dict[str, Any]:
    """What `runtime effective` prints for one InferenceService, as a JSON-ready document.

    Raises CommandError when the named runtime is missing or its chain does not resolve.
    """
    meta = _mapping(isvc.get("metadata"))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    status_runtime = _mapping(_mapping(isvc.get("status")).get("runtime"))
    pinned, auto_sync, pinned_revision = _pin_state(isvc)
    drift = _condition(isvc, DRIFT_CONDITION)
    report: dict[str, Any] = {
        "cluster": read.cluster,
        "inferenceService": {"namespace": namespace, "name": name},
        "namedRuntime": None,
        "runtime": None,
        "revision": status_runtime.get("revision") or None,
        "pinned": pinned,
        "autoSync": auto_sync,
        "pinnedRevision": pinned_revision,
        "drifted": None if drift is None else drift.get("status") == "True",
        "runtimeDriftedCondition": drift,
        "chain": [],
        "effectiveSpec": None,
        "provenance": {},
    }
    runtime_name = named_runtime(isvc)
    if runtime_name is None:
        selected = status_runtime.get("name")
        report["selectedRuntime"] = (
            {"kind": status_runtime.get("kind"), "name": selected} if isinstance(selected, str) and selected else None
        )
        return report
    report["namedRuntime"] = runtime_name
    lookup = read.lookup()
    try:
        ref, runtime = lookup_named_runtime(namespace, runtime_name, lookup)
    except RuntimeValidation as exc:
        raise CommandError(f"InferenceService {namespace}/{name}: {exc.message}") from None
    report["runtime"] = _ref_document(ref)
    try:
        chain = resolve_chain(runtime, lookup)
    except ChainError as exc:
        raise CommandError(
            f"InferenceService {namespace}/{name}: the chain of {_runtime_label(ref)} does not resolve "
            f"({exc.reason}): {exc.message}"
        ) from None
    merged = merge_chain(spec_layers(chain))
    report["chain"] = [
        {**_ref_document(hop), "resourceVersion": version}
        for hop, version in zip(chain.refs, chain.resource_versions, strict=True)
    ]
    report["effectiveSpec"] = redact_object(merged.spec)  # secret-looking env values print as <redacted>
    report["provenance"] = merged.provenance
    return report


def _yes_no(value: bool | None) -> str:
    return _UNKNOWN if value is None else ("yes" if value else "no")


def _print_table(headers: list[str], rows: list[list[str]]) -> None:
    """kubectl-style columns: left-aligned, three spaces apart, no wrapping (safe to pipe into grep/awk)."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    for line in [headers, *rows]:
        typer.echo("   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())


def _print_effective_table(report: Mapping[str, Any]) -> None:
    runtime = report["runtime"]
    isvc = report["inferenceService"]
    if runtime is None:
        selected = report.get("selectedRuntime")
        name = selected["name"] if selected else "<none>"
        kind = (selected.get("kind") or _UNKNOWN) if selected else _UNKNOWN
        chain = name if selected else _UNKNOWN
    else:
        name, kind = runtime["name"], runtime["kind"]
        chain = ",".join(hop["name"] for hop in report["chain"])
    _print_table(
        ["NAME", "RUNTIME", "KIND", "REVISION", "PINNED", "DRIFTED", "CHAIN"],
        [
            [
                isvc["name"],
                name,
                kind,
                report["revision"] or _UNKNOWN,
                _yes_no(report["pinned"]),
                _yes_no(report["drifted"]),
                chain,
            ]
        ],
    )
    if runtime is None:
        how = f"automatic selection chose {name}" if report.get("selectedRuntime") else "OME selects one automatically"
        typer.echo(
            f"\nInferenceService {isvc['namespace']}/{isvc['name']} names no runtime: {how}, "
            "from each runtime's own spec without inheritance."
        )


@runtime_app.command("effective")
def effective(
    name: str = typer.Argument(..., help="Name of the InferenceService."),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Namespace of the InferenceService (default: the context's namespace)."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """The runtime an InferenceService uses: kind, revision, pinned, drifted and its inheritance chain."""
    try:
        target = _single_target(kubeconfig, context, cluster, clusters_dir, timeout)
        report = asyncio.run(_with_client(target, lambda client: _read_effective(client, namespace, name)))
    except CommandError as exc:
        _fail(exc)
    if output is OutputFormat.table:
        _print_effective_table(report)
    else:
        _emit(report, output)


async def _read_effective(client: ClusterClient, namespace: str | None, name: str) -> dict[str, Any]:
    namespace = namespace or client.default_namespace
    isvc = await _get_or_none(client, INFERENCE_SERVICES, name, namespace)
    if isvc is None:
        raise CommandError(f'InferenceService "{name}" not found in namespace "{namespace}" (cluster {client.name})')
    serving: list[dict[str, Any]] = []
    cluster_serving: list[dict[str, Any]] = []
    if named_runtime(isvc) is not None:
        serving, cluster_serving = await asyncio.gather(
            client.list_all(SERVING_RUNTIMES, namespace), client.list_all(CLUSTER_SERVING_RUNTIMES)
        )
    return effective_report(ClusterRead.from_lists(client.name, serving, cluster_serving), isvc)


# --- tree --------------------------------------------------------------------------------------------------


def _parent_of(read: ClusterRead, ref: RuntimeRef) -> RuntimeRef | None:
    """The runtime `ref`'s parent resolves to (DESIGN §3 decision 1), or None."""
    runtime = read.runtime(ref)
    parent = inherit_from(runtime) if runtime is not None else None
    if parent is None:
        return None
    if ref.kind == SERVING_RUNTIME and read.serving.get(ref.namespace, parent) is not None:
        return RuntimeRef(SERVING_RUNTIME, ref.namespace, parent)
    return RuntimeRef(CLUSTER_SERVING_RUNTIME, "", parent)


def _named_ref(read: ClusterRead, isvc: Mapping[str, Any]) -> RuntimeRef | None:
    """The runtime an InferenceService's `spec.runtime.name` resolves to, or None."""
    name = named_runtime(isvc)
    if name is None:
        return None
    namespace = str(_mapping(isvc.get("metadata")).get("namespace") or "")
    if read.serving.get(namespace, name) is not None:
        return RuntimeRef(SERVING_RUNTIME, namespace, name)
    if read.cluster_serving.get("", name) is not None:
        return RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name)
    return None


def _sort_key(ref: RuntimeRef) -> tuple[bool, str, str]:
    return (ref.kind != CLUSTER_SERVING_RUNTIME, ref.namespace, ref.name)


def _runtime_node(ref: RuntimeRef, runtime: Mapping[str, Any]) -> dict[str, Any]:
    annotations = _mapping(_mapping(runtime.get("metadata")).get("annotations"))
    ready = _condition(runtime, INHERITANCE_CONDITION)
    return {
        **_ref_document(ref),
        "inheritFrom": inherit_from(runtime),
        "profile": annotations.get(RUNTIME_PROFILE_ANNOTATION) == "true",
        "disabled": _mapping(runtime.get("spec")).get("disabled") is True,
        "inheritanceReady": None
        if ready is None
        else {"status": ready.get("status"), "reason": ready.get("reason"), "message": ready.get("message")},
        "inferenceServices": [],
        "children": [],
    }


def _isvc_entry(isvc: Mapping[str, Any]) -> dict[str, Any]:
    meta = _mapping(isvc.get("metadata"))
    pinned, auto_sync, pinned_revision = _pin_state(isvc)
    drift = _condition(isvc, DRIFT_CONDITION)
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "pinned": pinned,
        "autoSync": auto_sync,
        "pinnedRevision": pinned_revision,
        "revision": _mapping(_mapping(isvc.get("status")).get("runtime")).get("revision") or None,
        "drifted": None if drift is None else drift.get("status") == "True",
    }


def runtime_tree(read: ClusterRead, root: RuntimeRef) -> dict[str, Any] | None:
    """The runtimes below `root` (any depth, every namespace) and the InferenceServices that name any of them,
    as a nested node document; None when `root` does not exist in the cluster."""
    root_runtime = read.runtime(root)
    if root_runtime is None:
        return None
    below = descendants(root.kind, root.namespace, root.name, read.serving, read.cluster_serving)
    nodes: dict[RuntimeRef, dict[str, Any]] = {root: _runtime_node(root, root_runtime)}
    refs = [RuntimeRef(kind, namespace, name) for kind, namespace, name in below]  # type: ignore[arg-type]
    for ref in refs:
        runtime = read.runtime(ref)
        if runtime is not None:
            nodes[ref] = _runtime_node(ref, runtime)
    for ref in sorted(refs, key=_sort_key):
        parent = _parent_of(read, ref)
        if parent is not None and ref in nodes and parent in nodes:
            nodes[parent]["children"].append(nodes[ref])
    isvc_count = 0
    for ref, node in nodes.items():
        users = [
            isvc for isvc in read.inference_services.by_index(RUNTIME_INDEX, ref.name) if _named_ref(read, isvc) == ref
        ]
        users.sort(key=lambda isvc: (isvc["metadata"].get("namespace", ""), isvc["metadata"]["name"]))
        node["inferenceServices"] = [_isvc_entry(isvc) for isvc in users]
        isvc_count += len(users)
    return {
        "cluster": read.cluster,
        "root": nodes[root],
        "runtimes": len(nodes) - 1,
        "inferenceServices": isvc_count,
    }


def _walk(node: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield node
    for child in node["children"]:
        yield from _walk(child)


async def _read_tree(client: ClusterClient, root: RuntimeRef) -> dict[str, Any]:
    serving, cluster_serving, isvcs = await asyncio.gather(
        client.list_all(SERVING_RUNTIMES),
        client.list_all(CLUSTER_SERVING_RUNTIMES),
        client.list_all(INFERENCE_SERVICES),
    )
    read = ClusterRead.from_lists(client.name, serving, cluster_serving, isvcs)
    found = runtime_tree(read, root)
    if found is None:
        return {"cluster": client.name, "root": None, "runtimes": 0, "inferenceServices": 0}
    return found


def _node_text(node: Mapping[str, Any]) -> Text:
    ref = RuntimeRef(node["kind"], node.get("namespace", ""), node["name"])
    text = Text(_runtime_label(ref), style="bold")
    tags = [tag for tag, on in (("profile", node["profile"]), ("disabled", node["disabled"])) if on]
    ready = node["inheritanceReady"]
    if ready is not None and ready.get("status") != "True":
        tags.append(f"InheritanceReady={ready.get('status')} {ready.get('reason') or ''}".rstrip())
    if tags:
        text.append(f"  ({', '.join(tags)})", style="yellow" if ready and ready.get("status") != "True" else "dim")
    return text


def _isvc_text(entry: Mapping[str, Any]) -> Text:
    text = Text(f"InferenceService {entry['namespace']}/{entry['name']}", style="cyan")
    if entry["pinnedRevision"]:
        how = f"pinned to {entry['pinnedRevision']}"
    elif entry["pinned"]:
        how = f"pinned to {entry['revision']}" if entry["revision"] else "pinned (autoSync: false)"
    else:
        how = "autoSync: follows edits"
    if entry["drifted"]:
        how += ", drifted"
    text.append(f"  ({how})", style="dim")
    return text


def _rich_tree(label: Text, node: Mapping[str, Any]) -> Tree:
    tree = Tree(label)
    _fill(tree, node)
    return tree


def _fill(tree: Tree, node: Mapping[str, Any]) -> None:
    for entry in node["inferenceServices"]:
        tree.add(_isvc_text(entry))
    for child in node["children"]:
        _fill(tree.add(_node_text(child)), child)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _reach(runtimes: int, isvcs: int) -> str:
    return f"{_plural(runtimes, 'runtime')} and {_plural(isvcs, 'InferenceService')}"


def _console() -> Console:
    # Piped output (kubectl plugins, grep) keeps whole lines rather than wrapping them at 80 columns.
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(WIDE_CONSOLE, console.width))
    return console


def _print_tree(root: RuntimeRef, results: list[dict[str, Any]], fleet: bool) -> None:
    console = _console()
    for index, result in enumerate(results):
        if index:
            console.print()
        node = result["root"]
        if node is None:
            console.print(Text(f"cluster {result['cluster']}: {_runtime_label(root)} not found", style="dim"))
            continue
        label = _node_text(node)
        if fleet:
            label = Text.assemble(Text(f"cluster {result['cluster']}: ", style="magenta"), label)
        console.print(_rich_tree(label, node))
        console.print(f"{_reach(result['runtimes'], result['inferenceServices'])} below {_runtime_label(root)}")


@runtime_app.command("tree")
def tree(
    runtime: str = typer.Argument(..., help="Runtime name: a ClusterServingRuntime, or with -n a ServingRuntime."),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Start at the ServingRuntime in this namespace instead."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    all_clusters: bool = typer.Option(False, "--all-clusters", help="Every registered cluster (see --clusters-dir)."),
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """What an edit of RUNTIME reaches: the runtimes that inherit from it and the InferenceServices using them."""
    root = (
        RuntimeRef(SERVING_RUNTIME, namespace, runtime)
        if namespace
        else RuntimeRef(CLUSTER_SERVING_RUNTIME, "", runtime)
    )
    if all_clusters:
        if cluster is not None or kubeconfig is not None or context is not None:
            _fail(
                CommandError("--all-clusters reads every registered cluster: drop --cluster, --kubeconfig, --context")
            )
        _tree_fleet(root, clusters_dir, output, timeout)
        return
    try:
        target = _single_target(kubeconfig, context, cluster, clusters_dir, timeout)
        result = asyncio.run(_with_client(target, lambda client: _read_tree(client, root)))
    except CommandError as exc:
        _fail(exc)
    if result["root"] is None:
        where = f' in namespace "{root.namespace}"' if root.kind == SERVING_RUNTIME else ""
        _fail(CommandError(f'{root.kind} "{root.name}" not found{where} (cluster {result["cluster"]})'))
    if output is OutputFormat.table:
        _print_tree(root, [result], fleet=False)
    else:
        _emit({"runtime": _ref_document(root), "clusters": [result], "errors": []}, output)


async def _read_fleet(root: RuntimeRef, targets: list[ClusterTarget]) -> list[dict[str, Any] | CommandError]:
    async def one(target: ClusterTarget) -> dict[str, Any] | CommandError:
        try:
            return await _with_client(target, lambda client: _read_tree(client, root))
        except CommandError as exc:
            return CommandError(exc.message, EXIT_CLUSTER_FAILED)

    return list(await asyncio.gather(*(one(target) for target in targets)))


def _tree_fleet(root: RuntimeRef, clusters_dir: Path | None, output: OutputFormat, timeout: float) -> None:
    directory, registrations, registry_errors = _registrations(clusters_dir)
    if not registrations and not registry_errors:
        _fail(CommandError(f"no clusters registered in {directory}"))
    targets = [_registered_target(registrations[name], timeout) for name in sorted(registrations)]
    outcomes = asyncio.run(_read_fleet(root, targets))
    results = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    errors = [{"source": source, "message": message} for source, message in sorted(registry_errors.items())]
    for target, outcome in zip(targets, outcomes, strict=True):
        if isinstance(outcome, CommandError):
            errors.append({"cluster": target.name, "message": outcome.message})
    if output is OutputFormat.table:
        if results:
            _print_tree(root, results, fleet=True)
            found = [r for r in results if r["root"] is not None]
            typer.echo(
                f"\nfleet: {_reach(sum(r['runtimes'] for r in found), sum(r['inferenceServices'] for r in found))} "
                f"below {_runtime_label(root)} in {len(found)} of {_plural(len(targets), 'cluster')}"
                + (f"; {_plural(len(errors), 'cluster')} could not be read" if errors else "")
            )
        for error in errors:
            typer.echo(f"error: {error['message']}", err=True)
    else:
        _emit({"runtime": _ref_document(root), "clusters": results, "errors": errors}, output)
    if errors:
        raise typer.Exit(EXIT_CLUSTER_FAILED)
    if not any(r["root"] is not None for r in results):
        _fail(CommandError(f"{_runtime_label(root)} not found in any registered cluster"))


# --- output ------------------------------------------------------------------------------------------------


def _emit(document: Mapping[str, Any], output: OutputFormat) -> None:
    if output is OutputFormat.json:
        typer.echo(json.dumps(document, indent=2))
    else:
        typer.echo(yaml.safe_dump(dict(document), sort_keys=False).rstrip())


def _fail(exc: CommandError) -> NoReturn:
    typer.echo(f"error: {exc.message}", err=True)
    raise typer.Exit(exc.code)


# --- rollout -----------------------------------------------------------------------------------------------

ROLLOUT_ANNOTATION = "omectl.io/rollout-requested"


@runtime_app.command("rollout")
def rollout(
    name: str = typer.Argument(..., help="Name of the pinned InferenceService."),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Namespace of the InferenceService (default: the context's namespace)."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Move an InferenceService pinned with `autoSync: false` to the live revision of its runtime."""
    try:
        target = _single_target(kubeconfig, context, cluster, clusters_dir, timeout)
        message = asyncio.run(_with_client(target, lambda client: _request_rollout(client, namespace, name)))
    except CommandError as exc:
        _fail(exc)
    typer.echo(message)


async def _request_rollout(client: ClusterClient, namespace: str | None, name: str) -> str:
    namespace = namespace or client.default_namespace
    isvc = await _get_or_none(client, INFERENCE_SERVICES, name, namespace)
    if isvc is None:
        raise CommandError(f'InferenceService "{name}" not found in namespace "{namespace}" (cluster {client.name})')
    runtime_spec = _mapping(_mapping(isvc.get("spec")).get("runtime"))
    if runtime_spec.get("revision"):
        raise CommandError(
            f"inferenceservice {name} is pinned by spec.runtime.revision={runtime_spec['revision']}; "
            "edit the spec to move it"
        )
    if runtime_spec.get("autoSync", True) is not False:
        return f"inferenceservice.ome.io/{name} follows its live runtime (autoSync); nothing to roll out"
    # Forget the pinned revision; the controller pins the live one on its next reconcile, which the annotation
    # triggers.
    await client.patch(
        INFERENCE_SERVICES,
        name,
        {"status": {"runtime": {"revision": None}}},
        namespace,
        patch_type="merge",
        subresource="status",
        field_manager="omectl-rollout",
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    await client.patch(
        INFERENCE_SERVICES,
        name,
        {"metadata": {"annotations": {ROLLOUT_ANNOTATION: stamp}}},
        namespace,
        patch_type="merge",
        field_manager="omectl-rollout",
    )
    return f"inferenceservice.ome.io/{name} rolling out to the live revision"
