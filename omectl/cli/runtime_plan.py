"""`omectl runtime plan -f EDITED_RUNTIME.yaml`: what a runtime edit would do, before it is applied.

Each cluster is read once (runtimes, InferenceServices, models); every InferenceService is then evaluated twice,
the way the engine-workload reconciler would (the same `omectl.core.ome.pipeline`), against the cluster as it is and
against the cluster with the edited runtime(s) in place. An InferenceService is *reached* when its runtime's chain
passes through an edited runtime or its outcome changes. For each reached one the plan says:

- `re-render` (autoSync): the engine workloads change; the plan prints a unified diff per object;
- `unchanged`: the edit reaches it but every field it changes is overridden further down the chain;
- `would drift`: pinned (`autoSync: false` or `spec.runtime.revision`), so the workload keeps its revision while
  `RuntimeDrifted` turns True — `omectl runtime rollout` applies the diff shown;
- `would break`: the chain or the model check fails after the edit; the controller leaves the workload as it is;
- `would recover`: it fails now and renders after the edit.

Nothing is written. It exits as `kubectl diff` does: 0 when the edit changes nothing (the runtimes are as live and
no InferenceService's outcome moves), 1 when it changes something, 2 on an error (a file it cannot use, a cluster
it cannot read).
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer
import yaml

from omectl.cli.errors import CommandError
from omectl.cli.reports import DOCUMENT_OUTPUT_OPTION as OUTPUT_OPTION
from omectl.cli.reports import DocumentFormat as OutputFormat
from omectl.cli.reports import emit as _emit
from omectl.cli.runtime import (
    EXIT_CLUSTER_FAILED,
    ClusterRead,
    ClusterTarget,
    _fail,
    _plural,
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
from omectl.controller.ome.revisions import revision_name, spec_hash
from omectl.core.ome.inheritance import ChainError, resolve_chain
from omectl.core.ome.pipeline import CachedModels, CachedRuntimes, choose, merge_named, model_of, render
from omectl.core.ome.render import RenderError
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeRef
from omectl.core.ome.selection import ModelError, NoRuntimeFound, RuntimeValidation
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.errors import BadRequest, Conflict, Forbidden, Invalid, NotFound
from omectl.kube.field_managers import PLAN_FIELD_MANAGER
from omectl.kube.resources import (
    BASE_MODELS,
    CLUSTER_BASE_MODELS,
    CLUSTER_SERVING_RUNTIMES,
    INFERENCE_SERVICES,
    SERVING_RUNTIMES,
    ResourceRef,
)
from omectl.observability.redact import redact_object

__all__ = ["EditedRuntime", "load_edits", "plan", "plan_cluster"]

RE_RENDER, UNCHANGED, WOULD_DRIFT, WOULD_BREAK, WOULD_RECOVER = (
    "re-render",
    "unchanged",
    "would drift",
    "would break",
    "would recover",
)
_KINDS = {SERVING_RUNTIME: SERVING_RUNTIMES, CLUSTER_SERVING_RUNTIME: CLUSTER_SERVING_RUNTIMES}


@dataclass(frozen=True)
class EditedRuntime:
    """One runtime document of the edit file; a ServingRuntime's namespace may come from `-n` or the context."""

    kind: str
    name: str
    namespace: str | None
    document: Mapping[str, Any]

    def placed(self, default_namespace: str) -> tuple[RuntimeRef, dict[str, Any]]:
        namespace = (self.namespace or default_namespace) if self.kind == SERVING_RUNTIME else ""
        metadata = dict(self.document.get("metadata") or {})
        if namespace:
            metadata["namespace"] = namespace
        return RuntimeRef(self.kind, namespace, self.name), {**self.document, "metadata": metadata}  # type: ignore[arg-type]


def load_edits(path: Path, namespace: str | None) -> list[EditedRuntime]:
    """The runtimes in an edit file (`-` for stdin); anything else in it is an error."""
    try:
        text = typer.get_text_stream("stdin").read() if str(path) == "-" else path.read_text()
        documents = [doc for doc in yaml.safe_load_all(text) if doc]
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise CommandError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    edits: list[EditedRuntime] = []
    for index, doc in enumerate(documents, 1):
        where = f"{path} document {index}"
        if not isinstance(doc, Mapping) or doc.get("kind") not in _KINDS:
            kind = doc.get("kind") if isinstance(doc, Mapping) else type(doc).__name__
            raise CommandError(f"{where}: expected a ServingRuntime or ClusterServingRuntime, got {kind or 'no kind'}")
        if doc.get("apiVersion") != SERVING_RUNTIMES.api_version:
            raise CommandError(f"{where}: apiVersion must be {SERVING_RUNTIMES.api_version}")
        metadata: Mapping[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), Mapping) else {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise CommandError(f"{where}: metadata.name is required")
        doc_namespace = metadata.get("namespace")
        if doc["kind"] == SERVING_RUNTIME and namespace and doc_namespace and doc_namespace != namespace:
            raise CommandError(f"{where}: namespace {doc_namespace} does not match -n {namespace}")
        edits.append(EditedRuntime(doc["kind"], name, doc_namespace or namespace, doc))
    if not edits:
        raise CommandError(f"{path}: no runtime to plan")
    return edits


# --- evaluation --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What the engine-workload reconciler would do with one InferenceService in one state of the cluster."""

    ok: bool
    message: str = ""
    runtime: RuntimeRef | None = None
    chain: tuple[RuntimeRef, ...] = ()
    spec_hash: str | None = None
    objects: list[dict[str, Any]] = field(default_factory=list)


def evaluate(read: ClusterRead, models: CachedModels, isvc: Mapping[str, Any]) -> Outcome:
    """The render the controller would apply for `isvc` (autoSync), from this view of the cluster."""
    chain: tuple[RuntimeRef, ...]
    try:
        choice = choose(isvc, model_of(isvc, models), CachedRuntimes(read.serving, read.cluster_serving))
        if choice.own_spec is not None:
            merged, chain = choice.own_spec, (choice.ref,)  # own spec: no inheritance
        else:
            merged, chain = merge_named(choice, read.lookup())
        digest = spec_hash(merged)
        revision = revision_name(choice.ref.name, digest) if not choice.automatic else None
        objects = render(isvc, choice, merged, revision=revision)
    except (ModelError, ChainError, RuntimeValidation, NoRuntimeFound, RenderError) as exc:
        return Outcome(False, exc.message)
    return Outcome(True, runtime=choice.ref, chain=chain, spec_hash=digest, objects=objects)


def _pinned(isvc: Mapping[str, Any]) -> str | None:
    """The revision a pinned InferenceService keeps, or '' when it pins on its first reconcile; None: autoSync."""
    runtime = (isvc.get("spec") or {}).get("runtime") or {}
    if runtime.get("revision"):
        return str(runtime["revision"])
    if runtime.get("autoSync", True) is False:
        return str(((isvc.get("status") or {}).get("runtime") or {}).get("revision") or "")
    return None


def _object_key(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind', '').lower()}/{obj['metadata']['name']}"


def render_diff(before: Iterable[Mapping[str, Any]], after: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """A unified diff per object whose render changes (added and removed objects included)."""
    old = {_object_key(o): o for o in before}
    new = {_object_key(o): o for o in after}
    diffs: dict[str, str] = {}
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) == new.get(key):
            continue
        lines = difflib.unified_diff(
            _yaml_lines(old.get(key)),
            _yaml_lines(new.get(key)),
            fromfile=f"{key} (now)" if key in old else "/dev/null",
            tofile=f"{key} (after the edit)" if key in new else "/dev/null",
            n=2,
        )
        diffs[key] = "".join(lines)
    return diffs


def _yaml_lines(obj: Mapping[str, Any] | None) -> list[str]:
    # secret-looking env values print as <redacted> (a rotated secret shows as an unchanged line)
    return [] if obj is None else yaml.safe_dump(redact_object(obj), sort_keys=True).splitlines(keepends=True)


def _with_edits(read: ClusterRead, edits: list[tuple[RuntimeRef, dict[str, Any]]]) -> ClusterRead:
    serving = read.serving.list()
    cluster_serving = read.cluster_serving.list()
    for ref, doc in edits:
        if ref.kind == SERVING_RUNTIME:
            key = (ref.namespace, ref.name)
            serving = [o for o in serving if (o["metadata"].get("namespace"), o["metadata"]["name"]) != key]
            serving.append(doc)
        else:
            cluster_serving = [o for o in cluster_serving if o["metadata"]["name"] != ref.name]
            cluster_serving.append(doc)
    return ClusterRead.from_lists(read.cluster, serving, cluster_serving, read.inference_services.list())


def plan_cluster(
    read: ClusterRead, models: CachedModels, edits: list[tuple[RuntimeRef, dict[str, Any]]]
) -> dict[str, Any]:
    """The plan for one cluster as a JSON-ready document (see the module docstring)."""
    after = _with_edits(read, edits)
    edited_refs = {ref for ref, _ in edits}
    runtimes = []
    for ref, doc in edits:
        live = read.runtime(ref)
        entry: dict[str, Any] = {"kind": ref.kind, "name": ref.name, "exists": live is not None}
        if ref.kind == SERVING_RUNTIME:
            entry["namespace"] = ref.namespace
        try:
            entry["chainAfter"] = [hop.name for hop in resolve_chain(doc, after.lookup()).refs]
        except ChainError as exc:
            entry["chainError"] = exc.message
        entry["changed"] = live is None or _differs_from_live(doc, live)
        runtimes.append(entry)
    reached: list[dict[str, Any]] = []
    for isvc in sorted(
        read.inference_services.list(), key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"])
    ):
        now, then = evaluate(read, models, isvc), evaluate(after, models, isvc)
        through_edit = bool(edited_refs & (set(now.chain) | set(then.chain)))
        if not through_edit and now.objects == then.objects and now.ok == then.ok and now.message == then.message:
            continue
        reached.append(_entry(isvc, now, then))
    counts: dict[str, int] = {}
    for entry in reached:
        counts[entry["action"]] = counts.get(entry["action"], 0) + 1
    changes = any(r["changed"] for r in runtimes) or any(e["action"] != UNCHANGED for e in reached)
    return {
        "cluster": read.cluster,
        "runtimes": runtimes,
        "inferenceServices": reached,
        "summary": counts,
        "changes": changes,
    }


def _differs_from_live(edited: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    """Whether applying the edit would change the live runtime: its spec, or a label or annotation it sets."""
    if edited.get("spec") != live.get("spec"):
        return True
    edited_meta, live_meta = edited.get("metadata") or {}, live.get("metadata") or {}
    return any(
        (live_meta.get(field) or {}).get(key) != value
        for field in ("labels", "annotations")
        for key, value in (edited_meta.get(field) or {}).items()
    )


def _entry(isvc: Mapping[str, Any], now: Outcome, then: Outcome) -> dict[str, Any]:
    meta = isvc["metadata"]
    entry: dict[str, Any] = {
        "namespace": meta.get("namespace", ""),
        "name": meta["name"],
        "runtime": then.runtime.name if then.runtime else (now.runtime.name if now.runtime else None),
    }
    pinned = _pinned(isvc)
    if not then.ok:
        entry.update(action=WOULD_BREAK if now.ok else UNCHANGED, reason=then.message)
        return entry
    diff = render_diff(now.objects, then.objects)
    if pinned is not None:
        entry["pinnedRevision"] = pinned or None
        if then.spec_hash != now.spec_hash:
            entry.update(action=WOULD_DRIFT, liveRevisionAfter=revision_name(then.runtime.name, then.spec_hash or ""))  # type: ignore[union-attr]
            entry["diffOnRollout"] = diff
        else:
            entry["action"] = UNCHANGED
        return entry
    entry["action"] = WOULD_RECOVER if not now.ok else (RE_RENDER if diff else UNCHANGED)
    if not now.ok:
        entry["reasonNow"] = now.message
    entry["diff"] = diff
    return entry


# --- reading and printing ----------------------------------------------------------------------------------


async def _list_or_empty(client: ClusterClient, ref: ResourceRef) -> list[dict[str, Any]]:
    try:
        return await client.list_all(ref)
    except NotFound:
        return []  # the kind is not installed: nothing of it exists


async def _plan_with(client: ClusterClient, edits: list[EditedRuntime]) -> dict[str, Any]:
    serving, cluster_serving, isvcs, base, cluster_base = await asyncio.gather(
        client.list_all(SERVING_RUNTIMES),
        client.list_all(CLUSTER_SERVING_RUNTIMES),
        client.list_all(INFERENCE_SERVICES),
        _list_or_empty(client, BASE_MODELS),
        _list_or_empty(client, CLUSTER_BASE_MODELS),
    )
    read = ClusterRead.from_lists(client.name, serving, cluster_serving, isvcs)
    base_models, cluster_base_models = ObjectCache(), ObjectCache()
    for obj in base:
        base_models.upsert({**obj, "kind": "BaseModel"})
    for obj in cluster_base:
        cluster_base_models.upsert({**obj, "kind": "ClusterBaseModel"})
    models = CachedModels(base_models, cluster_base_models)
    placed = [await _checked_by_the_server(client, *edit.placed(client.default_namespace)) for edit in edits]
    return plan_cluster(read, models, placed)


async def _checked_by_the_server(
    client: ClusterClient, ref: RuntimeRef, doc: dict[str, Any]
) -> tuple[RuntimeRef, dict[str, Any]]:
    """The edited runtime as the API server would store it (a server-side apply with dryRun=All: its schema, its
    defaults, the admission webhooks); a runtime it would refuse is an error naming the field. Nothing is written.
    Without the right to patch runtimes the file is planned as written."""
    kind_ref = SERVING_RUNTIMES if ref.kind == SERVING_RUNTIME else CLUSTER_SERVING_RUNTIMES
    try:
        stored = await client.patch(
            kind_ref,
            ref.name,
            doc,
            ref.namespace or None,
            patch_type="apply",
            field_manager=PLAN_FIELD_MANAGER,
            force=True,
            dry_run=True,
        )
    except KubeAPIError as exc:
        if isinstance(exc, Forbidden):
            typer.echo(
                f"warning: cluster {client.name}: {_runtime_label(ref)} not checked by the server: {exc.message}",
                err=True,
            )
            return ref, doc
        if isinstance(exc, BadRequest | Conflict | Invalid):
            raise CommandError(
                f"cluster {client.name}: the API server would reject {_runtime_label(ref)}: {exc.message}",
                EXIT_PLAN_ERROR,
            ) from None
        raise
    return ref, stored


EXCLUSIONS_SHOWN = 3
_EXCLUDED = ". Excluded runtimes: "


def bounded_reason(message: str, shown: int = EXCLUSIONS_SHOWN) -> str:
    """A reason for one table line: automatic selection's list of excluded runtimes (one entry per runtime of the
    cluster, so tens of KB on a large one) cut to its first few; `-o json|yaml` keep the whole message."""
    head, found, tail = message.partition(_EXCLUDED)
    excluded = tail.split("; ") if found else []
    if len(excluded) <= shown:
        return message
    return f"{head}{_EXCLUDED}{'; '.join(excluded[:shown])}; ... {len(excluded) - shown} more (see -o json)"


def _print_plan(results: list[dict[str, Any]]) -> None:
    for result in results:
        typer.echo(f"cluster {result['cluster']}:")
        for runtime in result["runtimes"]:
            ref = RuntimeRef(runtime["kind"], runtime.get("namespace", ""), runtime["name"])
            state = "edited" if runtime["exists"] else "new"
            if "chainError" in runtime:
                typer.echo(f"  {_runtime_label(ref)} ({state}): chain would not resolve: {runtime['chainError']}")
            else:
                typer.echo(f"  {_runtime_label(ref)} ({state}): chain {' -> '.join(runtime['chainAfter'])}")
        if not result["inferenceServices"]:
            typer.echo("  no InferenceService is reached")
        for entry in result["inferenceServices"]:
            line = f"  InferenceService {entry['namespace']}/{entry['name']}: {entry['action']}"
            if entry["action"] == WOULD_DRIFT:
                pinned = entry.get("pinnedRevision") or "its first revision"
                line += f" (pinned to {pinned}; live revision becomes {entry['liveRevisionAfter']})"
            if entry.get("reason"):
                line += f": {bounded_reason(entry['reason'])}"
            typer.echo(line)
            for diff in (entry.get("diff") or {}).values():
                typer.echo("    " + diff.rstrip("\n").replace("\n", "\n    "))
    totals: dict[str, int] = {}
    for result in results:
        for action, count in result["summary"].items():
            totals[action] = totals.get(action, 0) + count
    order = [RE_RENDER, WOULD_DRIFT, WOULD_BREAK, WOULD_RECOVER, UNCHANGED]
    summary = ", ".join(f"{totals[a]} {a}" for a in order if totals.get(a)) or "nothing reached"
    typer.echo(f"\nplan: {summary} in {_plural(len(results), 'cluster')}; nothing was written")


# as `kubectl diff`: 0 nothing changes, 1 something changes, more an error
EXIT_PLAN_CHANGES = 1
EXIT_PLAN_ERROR = 2


def plan(
    filename: Path = typer.Option(..., "-f", "--filename", help="The edited runtime(s), as you would apply them."),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Namespace of an edited ServingRuntime that names none."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    all_clusters: bool = ALL_CLUSTERS_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """Before applying a runtime edit: every InferenceService it would reach and the diff of each engine workload
    it would re-render (pinned ones listed as "would drift"). Nothing is written. Exits as kubectl diff: 0 nothing
    changes, 1 something changes, 2 an error."""
    try:
        edits = load_edits(filename, namespace)
        if all_clusters:
            if cluster is not None or kubeconfig is not None or context is not None:
                raise CommandError(
                    "--all-clusters reads every registered cluster: drop --cluster, --kubeconfig, --context"
                )
            directory, registrations, registry_errors = _registrations(clusters_dir)
            if not registrations and not registry_errors:
                raise CommandError(f"no clusters registered in {directory}")
            targets = [_registered_target(registrations[name], timeout) for name in sorted(registrations)]
            errors = [f"{source}: {message}" for source, message in sorted(registry_errors.items())]
        else:
            targets = [_single_target(kubeconfig, context, cluster, clusters_dir, timeout)]
            errors = []
    except CommandError as exc:
        _fail(CommandError(exc.message, EXIT_PLAN_ERROR))
    outcomes = asyncio.run(_plan_fleet(targets, edits))
    results = [o for o in outcomes if isinstance(o, dict)]
    errors += [o.message for o in outcomes if isinstance(o, CommandError)]
    if output is OutputFormat.table:
        if results:
            _print_plan(results)
        for error in errors:
            typer.echo(f"error: {error}", err=True)
    else:
        _emit({"clusters": results, "errors": errors, "written": False}, output)
    if errors:
        raise typer.Exit(EXIT_PLAN_ERROR)
    if any(result["changes"] for result in results):
        raise typer.Exit(EXIT_PLAN_CHANGES)


async def _plan_fleet(targets: list[ClusterTarget], edits: list[EditedRuntime]) -> list[dict[str, Any] | CommandError]:
    async def one(target: ClusterTarget) -> dict[str, Any] | CommandError:
        try:
            return await _with_client(target, lambda client: _plan_with(client, edits))
        except CommandError as exc:
            return CommandError(exc.message, EXIT_CLUSTER_FAILED)

    return list(await asyncio.gather(*(one(target) for target in targets)))
