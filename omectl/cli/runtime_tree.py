"""`omectl runtime tree RUNTIME` (also `kubectl ome runtime tree`): what an edit of a runtime reaches, or with
`--ancestors` the chain it resolves, one section per resolution context.

A ServingRuntime's chain looks every parent up in its namespace first, so one ClusterServingRuntime sits in
different chains per namespace: the tree of a ClusterServingRuntime shows its cluster-only descendants and, per
namespace whose ServingRuntimes reach it, that namespace's path with the InferenceServices each path reaches; a
namespace where a ServingRuntime of the same name shadows it is shown as shadowed (`omectl.core.ome.reach`).

The tree fails closed: when a list it needs fails or is forbidden, it says which and exits 2 without printing a
partial tree. Each node lists at most `--limit` InferenceServices and child runtimes, then "N more".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.text import Text
from rich.tree import Tree

from omectl.cli.errors import CommandError
from omectl.cli.progress import gather_with_progress
from omectl.cli.reports import OUTPUT_OPTION, OutputFormat, emit
from omectl.cli.runtime import (
    DRIFT_CONDITION,
    EXIT_CLUSTER_FAILED,
    INHERITANCE_CONDITION,
    ClusterRead,
    ClusterTarget,
    _condition,
    _console,
    _fail,
    _one_line,
    _pin_state,
    _plural,
    _ref_document,
    _registered_target,
    _registrations,
    _runtime_label,
    _single_target,
    _with_client,
)
from omectl.cli.targets import (
    ALL_CLUSTERS_OPTION,
    CLUSTER_OPTION,
    CLUSTERS_DIR_OPTION,
    CONTEXT_OPTION,
    KUBECONFIG_OPTION,
    TIMEOUT_OPTION,
)
from omectl.core.jsonish import as_mapping
from omectl.core.ome.inheritance import ChainError, ResolutionContext, inherit_from, resolve_chain
from omectl.core.ome.reach import ContextReach, reach
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, RUNTIME_PROFILE_ANNOTATION, SERVING_RUNTIME, RuntimeRef
from omectl.kube.client import ClusterClient, KubeError
from omectl.kube.resources import CLUSTER_SERVING_RUNTIMES, INFERENCE_SERVICES, SERVING_RUNTIMES, ResourceRef

__all__ = ["RuntimeKindChoice", "ancestors_report", "tree", "tree_report"]

DEFAULT_LIMIT = 50


class RuntimeKindChoice(StrEnum):
    ServingRuntime = SERVING_RUNTIME
    ClusterServingRuntime = CLUSTER_SERVING_RUNTIME


# --- which runtime ---------------------------------------------------------------------------------------------


def pick_runtime(read: ClusterRead, name: str, namespace: str, kind: str | None) -> RuntimeRef | None:
    """The runtime the command is about: `--kind` decides; without it the one of the two that exists (the
    namespace's ServingRuntime or the ClusterServingRuntime), and an error naming both when both do."""
    serving = RuntimeRef(SERVING_RUNTIME, namespace, name)
    cluster_serving = RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name)
    if kind is not None:
        ref = serving if kind == SERVING_RUNTIME else cluster_serving
        return ref if read.runtime(ref) is not None else None
    found = [ref for ref in (serving, cluster_serving) if read.runtime(ref) is not None]
    if len(found) == 2:
        raise CommandError(
            f'runtime "{name}" is ambiguous in cluster {read.cluster}: {_runtime_label(serving)} and '
            f"{_runtime_label(cluster_serving)} both exist; choose one with --kind ServingRuntime or "
            "--kind ClusterServingRuntime"
        )
    return found[0] if found else None


def _not_found(name: str, namespace: str, kind: str | None) -> str:
    if kind == CLUSTER_SERVING_RUNTIME:
        return f'ClusterServingRuntime "{name}" not found'
    if kind == SERVING_RUNTIME:
        return f'ServingRuntime "{name}" not found in namespace "{namespace}"'
    return f'no ServingRuntime "{name}" in namespace "{namespace}" and no ClusterServingRuntime "{name}"'


# --- descendants -----------------------------------------------------------------------------------------------


def _runtime_node(ref: RuntimeRef, runtime: Mapping[str, Any] | None) -> dict[str, Any]:
    runtime = runtime or {}
    annotations = as_mapping(as_mapping(runtime.get("metadata")).get("annotations"))
    ready = _condition(runtime, INHERITANCE_CONDITION)
    return {
        **_ref_document(ref),
        "inheritFrom": inherit_from(runtime),
        "profile": annotations.get(RUNTIME_PROFILE_ANNOTATION) == "true",
        "disabled": as_mapping(runtime.get("spec")).get("disabled") is True,
        "inheritanceReady": None
        if ready is None
        else {"status": ready.get("status"), "reason": ready.get("reason"), "message": ready.get("message")},
        "inferenceServices": [],
        "children": [],
    }


def _isvc_entry(isvc: Mapping[str, Any]) -> dict[str, Any]:
    meta = as_mapping(isvc.get("metadata"))
    pinned, auto_sync, pinned_revision = _pin_state(isvc)
    drift = _condition(isvc, DRIFT_CONDITION)
    return {
        "namespace": meta.get("namespace"),
        "name": meta.get("name"),
        "pinned": pinned,
        "autoSync": auto_sync,
        "pinnedRevision": pinned_revision,
        "revision": as_mapping(as_mapping(isvc.get("status")).get("runtime")).get("revision") or None,
        "drifted": None if drift is None else drift.get("status") == "True",
    }


def _bounded(node: dict[str, Any], key: str, items: list[dict[str, Any]], limit: int) -> None:
    if limit and len(items) > limit:
        node[key] = items[:limit]
        node["more" + key[0].upper() + key[1:]] = len(items) - limit
    else:
        node[key] = items


def _section(read: ClusterRead, found: ContextReach, limit: int) -> dict[str, Any]:
    nodes = {found.root: _runtime_node(found.root, read.runtime(found.root))}
    for ref in found.parents:
        nodes[ref] = _runtime_node(ref, read.runtime(ref))
    children: dict[RuntimeRef, list[dict[str, Any]]] = {ref: [] for ref in nodes}
    for ref, parent in found.parents.items():
        children[parent].append(nodes[ref])
    # An InferenceService hangs below the runtime its own lookup found: in a namespace section a ServingRuntime
    # (or the root), in the cluster-only section a ClusterServingRuntime; names are unique within a section.
    by_name = {ref.name: ref for ref in nodes if found.context.is_head(ref) or ref == found.root}
    users: dict[RuntimeRef, list[dict[str, Any]]] = {ref: [] for ref in nodes}
    for isvc in found.inference_services:
        named = str(as_mapping(as_mapping(isvc.get("spec")).get("runtime")).get("name") or "")
        if named in by_name:
            users[by_name[named]].append(_isvc_entry(isvc))
    for ref, node in nodes.items():
        _bounded(node, "children", sorted(children[ref], key=_node_order), limit)
        _bounded(node, "inferenceServices", users[ref], limit)
    return {
        "context": str(found.context),
        "namespace": found.context.namespace,
        "root": nodes[found.root],
        "runtimes": len(found.parents),
        "inferenceServices": len(found.inference_services),
    }


def _node_order(node: Mapping[str, Any]) -> tuple[bool, str, str]:
    return (node["kind"] != CLUSTER_SERVING_RUNTIME, node.get("namespace", ""), node["name"])


def tree_report(read: ClusterRead, root: RuntimeRef, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """The descendants document of one cluster: a section per resolution context (see the module docstring)."""
    reached = reach(root, read.graph())
    sections = [_section(read, found, limit) for found in reached.contexts]
    return {
        "cluster": read.cluster,
        "runtime": _runtime_node(root, read.runtime(root)) | {"children": [], "inferenceServices": []},
        "sections": [s for s in sections if s["runtimes"] or s["inferenceServices"]],
        "shadowedIn": [
            {"namespace": namespace, "by": _ref_document(RuntimeRef(SERVING_RUNTIME, namespace, root.name))}
            for namespace in reached.shadowed_in
        ],
        "runtimes": len({ref for section in reached.contexts for ref in section.parents}),
        "inferenceServices": len({_isvc_key(isvc) for isvc in reached.inference_services}),
    }


def _isvc_key(isvc: Mapping[str, Any]) -> tuple[str, str]:
    meta = as_mapping(isvc.get("metadata"))
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


# --- ancestors -------------------------------------------------------------------------------------------------


def ancestors_report(read: ClusterRead, ref: RuntimeRef) -> dict[str, Any]:
    """The chain `ref` resolves, root first, in each context it is resolved in: its own, and for a
    ClusterServingRuntime every namespace whose chains pass through it."""
    contexts = [ResolutionContext.of(ref)]
    if ref.kind == CLUSTER_SERVING_RUNTIME:
        contexts += [found.context for found in reach(ref, read.graph()).contexts if found.context.namespace]
    runtime = read.runtime(ref)
    assert runtime is not None
    chains = []
    for context in contexts:
        entry: dict[str, Any] = {"context": str(context), "namespace": context.namespace, "chain": [], "error": None}
        try:
            resolved = resolve_chain(runtime, read.lookup(), context)
            entry["chain"] = [_ref_document(hop) for hop in resolved.refs]
        except ChainError as exc:
            entry["error"] = {"reason": exc.reason, "message": exc.message}
        chains.append(entry)
    return {"cluster": read.cluster, "runtime": _ref_document(ref), "ancestors": chains}


# --- reading ---------------------------------------------------------------------------------------------------


async def _list(client: ClusterClient, resource: ResourceRef) -> list[dict[str, Any]]:
    try:
        return await client.list_all(resource)
    except KubeError as exc:
        # Fails closed: a tree missing one list would look whole and be wrong.
        raise CommandError(
            f"cluster {client.name}: cannot list {resource.plural}: "
            + _one_line(exc).removeprefix(f"cluster {client.name}: "),
            EXIT_CLUSTER_FAILED,
        ) from None


async def _read(
    client: ClusterClient, name: str, namespace: str | None, kind: str | None, ancestors: bool, limit: int
) -> dict[str, Any]:
    serving, cluster_serving, isvcs = await asyncio.gather(
        _list(client, SERVING_RUNTIMES), _list(client, CLUSTER_SERVING_RUNTIMES), _list(client, INFERENCE_SERVICES)
    )
    read = ClusterRead.from_lists(client.name, serving, cluster_serving, isvcs)
    namespace = namespace or client.default_namespace
    ref = pick_runtime(read, name, namespace, kind)
    if ref is None:
        return {"cluster": client.name, "runtime": None, "notFound": _not_found(name, namespace, kind)}
    return ancestors_report(read, ref) if ancestors else tree_report(read, ref, limit)


# --- printing --------------------------------------------------------------------------------------------------


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


def _fill(tree: Tree, node: Mapping[str, Any]) -> None:
    for entry in node["inferenceServices"]:
        tree.add(_isvc_text(entry))
    if node.get("moreInferenceServices"):
        tree.add(Text(f"… {_plural(node['moreInferenceServices'], 'more InferenceService')}", style="dim"))
    for child in node["children"]:
        _fill(tree.add(_node_text(child)), child)
    if node.get("moreChildren"):
        tree.add(Text(f"… {_plural(node['moreChildren'], 'more runtime')}", style="dim"))


def _reach_line(runtimes: int, isvcs: int) -> str:
    return f"{_plural(runtimes, 'runtime')} and {_plural(isvcs, 'InferenceService')}"


def _print_descendants(result: Mapping[str, Any], prefix: str) -> None:
    console = _console()
    root = result["runtime"]
    tree = Tree(Text.assemble(Text(prefix, style="magenta"), _node_text(root)))
    for section in result["sections"]:
        _fill(tree.add(Text(section["context"], style="magenta")), section["root"])
    for shadow in result["shadowedIn"]:
        tree.add(
            Text(
                f"namespace {shadow['namespace']}: shadowed by {_runtime_label(_ref(shadow['by']))}",
                style="dim",
            )
        )
    if not result["sections"] and not result["shadowedIn"]:
        tree.add(Text("nothing inherits from it and no InferenceService names it", style="dim"))
    console.print(tree)
    label = _runtime_label(RuntimeRef(root["kind"], root.get("namespace", ""), root["name"]))
    console.print(f"{_reach_line(result['runtimes'], result['inferenceServices'])} below {label}")


def _print_ancestors(result: Mapping[str, Any], prefix: str) -> None:
    console = _console()
    ref = result["runtime"]
    tree = Tree(
        Text.assemble(
            Text(prefix, style="magenta"), Text(f"{_runtime_label(_ref(ref))}: chain, root first", style="bold")
        )
    )
    for entry in result["ancestors"]:
        if entry["error"] is not None:
            line = f"{entry['context']}: {entry['error']['reason']}: {entry['error']['message']}"
            tree.add(Text(line, style="yellow"))
        else:
            tree.add(Text(f"{entry['context']}: " + " -> ".join(_runtime_label(_ref(hop)) for hop in entry["chain"])))
    console.print(tree)


def _ref(document: Mapping[str, Any]) -> RuntimeRef:
    return RuntimeRef(document["kind"], document.get("namespace", ""), document["name"])


def _object_names(result: Mapping[str, Any]) -> list[str]:
    """`-o name`: the runtime, then every runtime and InferenceService its tree reaches (or the chain it resolves),
    as `<kind>.ome.io/NAME`."""
    if result.get("runtime") is None:
        return []
    refs: list[Mapping[str, Any]] = [result["runtime"]]
    isvcs: list[Mapping[str, Any]] = []
    pending = [section["root"] for section in result.get("sections", ())]
    while pending:
        node = pending.pop(0)
        refs.append(node)
        isvcs += node["inferenceServices"]
        pending += node["children"]
    refs += [hop for entry in result.get("ancestors", ()) for hop in entry["chain"]]
    names = [f"{ref['kind'].lower()}.ome.io/{ref['name']}" for ref in refs]
    return names + [f"inferenceservice.ome.io/{isvc['name']}" for isvc in isvcs]


def _print_names(results: Sequence[Mapping[str, Any]]) -> None:
    names = dict.fromkeys(name for result in results for name in _object_names(result))
    if names:
        typer.echo("\n".join(names))


def _print(result: Mapping[str, Any], fleet: bool) -> None:
    prefix = f"cluster {result['cluster']}: " if fleet else ""
    if result.get("runtime") is None:
        _console().print(Text(f"{prefix}{result['notFound']}", style="dim"))
    elif "ancestors" in result:
        _print_ancestors(result, prefix)
    else:
        _print_descendants(result, prefix)


# --- the command -----------------------------------------------------------------------------------------------


def tree(
    runtime: str = typer.Argument(
        ..., help="Runtime name: a ServingRuntime of the namespace or a ClusterServingRuntime."
    ),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Namespace of the ServingRuntime (default: the context's namespace)."
    ),
    kind: RuntimeKindChoice | None = typer.Option(
        None,
        "--kind",
        help="ServingRuntime or ClusterServingRuntime, when both of that name exist.",
        case_sensitive=False,
    ),
    ancestors: bool = typer.Option(
        False, "--ancestors", help="The chain the runtime resolves (per context), root first."
    ),
    limit: int = typer.Option(
        DEFAULT_LIMIT, "--limit", min=0, help="At most this many InferenceServices and runtimes per node (0: all)."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    all_clusters: bool = ALL_CLUSTERS_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """What an edit of RUNTIME reaches, per resolution context: the runtimes whose chains pass through it and the
    InferenceServices built on them; with --ancestors, the chain it resolves."""
    kind_name = kind.value if kind is not None else None

    async def work(client: ClusterClient) -> dict[str, Any]:
        return await _read(client, runtime, namespace, kind_name, ancestors, limit)

    if all_clusters:
        if cluster is not None or kubeconfig is not None or context is not None:
            _fail(
                CommandError("--all-clusters reads every registered cluster: drop --cluster, --kubeconfig, --context")
            )
        _tree_fleet(runtime, work, clusters_dir, output, timeout)
        return
    try:
        target = _single_target(kubeconfig, context, cluster, clusters_dir, timeout)
        result = asyncio.run(_with_client(target, work))
    except CommandError as exc:
        _fail(exc)
    if result["runtime"] is None:
        _fail(CommandError(f"{result['notFound']} (cluster {result['cluster']})"))
    if output.is_document:
        emit({"clusters": [result], "errors": []}, output)
    elif output is OutputFormat.name:
        _print_names([result])
    else:  # -o wide: a tree has no columns to add
        _print(result, fleet=False)


def _tree_fleet(
    name: str,
    work: Callable[[ClusterClient], Awaitable[dict[str, Any]]],
    clusters_dir: Path | None,
    output: OutputFormat,
    timeout: float,
) -> None:
    directory, registrations, registry_errors = _registrations(clusters_dir)
    if not registrations and not registry_errors:
        _fail(CommandError(f"no clusters registered in {directory}"))
    targets = [_registered_target(registrations[cluster], timeout) for cluster in sorted(registrations)]
    outcomes = asyncio.run(_read_fleet(work, targets))
    results = [outcome for outcome in outcomes if isinstance(outcome, dict)]
    errors = [{"source": source, "message": message} for source, message in sorted(registry_errors.items())]
    for target, outcome in zip(targets, outcomes, strict=True):
        if isinstance(outcome, CommandError):
            errors.append({"cluster": target.name, "message": outcome.message})
    found = [r for r in results if r.get("runtime") is not None]
    if output is OutputFormat.name:
        _print_names(results)
        for error in errors:
            typer.echo(f"error: {error['message']}", err=True)
    elif not output.is_document:
        for index, result in enumerate(results):
            if index:
                _console().print()
            _print(result, fleet=True)
        if found and "sections" in found[0]:
            label = _runtime_label(_ref(found[0]["runtime"]))
            typer.echo(
                f"\nfleet: {_reach_line(sum(r['runtimes'] for r in found), sum(r['inferenceServices'] for r in found))}"
                " "
                f"below {label} in {len(found)} of {_plural(len(targets), 'cluster')}"
                + (f"; {_plural(len(errors), 'cluster')} could not be read" if errors else "")
            )
        for error in errors:
            typer.echo(f"error: {error['message']}", err=True)
    else:
        emit({"clusters": results, "errors": errors}, output)
    if errors:
        raise typer.Exit(EXIT_CLUSTER_FAILED)
    if not found:
        _fail(CommandError(f'runtime "{name}" was found in no registered cluster'))


async def _read_fleet(
    work: Callable[[ClusterClient], Awaitable[dict[str, Any]]], targets: list[ClusterTarget]
) -> list[dict[str, Any] | CommandError]:
    async def one(target: ClusterTarget) -> dict[str, Any] | CommandError:
        try:
            result: dict[str, Any] = await _with_client(target, work)
            return result
        except CommandError as exc:
            return CommandError(exc.message, EXIT_CLUSTER_FAILED)

    return await gather_with_progress("reading the clusters", [one(target) for target in targets])
