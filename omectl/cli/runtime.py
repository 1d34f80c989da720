"""`omectl runtime` (also `kubectl ome runtime`): what an InferenceService's runtime resolves to, and what a runtime
edit reaches, read straight from the clusters (no running controller needed).

- `effective ISVC`: the runtime an InferenceService names, its kind, revision, pin and drift, and its inheritance
  chain; `-o json|yaml` adds the chain (root first), the merged spec and which runtime set each field. Without
  ISVC, every InferenceService of the namespace (`-A`: of every namespace), as `kubectl get` lists.
- `tree RUNTIME` (`omectl.cli.runtime_tree`): what an edit of a runtime reaches, per resolution context, or with
  `--ancestors` the chain it resolves; `--all-clusters` does this for every registered cluster.

kubectl hands a plugin every argument after its name and refuses global flags placed before it, so the commands
take `--kubeconfig`, `--context` and `-n/--namespace` themselves and read `KUBECONFIG` like kubectl. Exit codes:
0 success, 1 something asked for does not exist or does not resolve, 2 a cluster could not be read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console

from omectl.cli.errors import CommandError
from omectl.cli.reports import OUTPUT_OPTION, Column, OutputFormat, emit, print_records
from omectl.cli.targets import CLUSTER_OPTION, CLUSTERS_DIR_OPTION, CONTEXT_OPTION, KUBECONFIG_OPTION, TIMEOUT_OPTION
from omectl.controller.ome.lookup import (
    INHERIT_INDEX,
    RUNTIME_INDEX,
    CacheGraph,
    CacheLookup,
    inherit_index,
    runtime_index,
)
from omectl.core.jsonish import as_mapping
from omectl.core.ome.inheritance import ChainError, resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeRef
from omectl.core.ome.selection import RuntimeValidation, lookup_named_runtime, named_runtime
from omectl.fleet.providers import DirectoryProvider, clusters_dir_to_read
from omectl.fleet.registration import ClusterRegistration, RegistrationError, open_client
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient, KubeConfigError, KubeError
from omectl.kube.errors import NotFound
from omectl.kube.field_managers import ROLLOUT_FIELD_MANAGER
from omectl.kube.resources import CLUSTER_SERVING_RUNTIMES, INFERENCE_SERVICES, SERVING_RUNTIMES, ResourceRef
from omectl.observability.redact import redact_object

__all__ = ["ClusterRead", "effective_report", "runtime_app"]

runtime_app = typer.Typer(
    no_args_is_help=True, help="Inspect OME runtime inheritance: effective runtimes and what a runtime edit reaches."
)

EXIT_CLUSTER_FAILED = 2
WIDE_CONSOLE = 200
DRIFT_CONDITION = "RuntimeDrifted"
INHERITANCE_CONDITION = "InheritanceReady"
_UNKNOWN = "-"
_KUBECONFIG_CLIENT = "kubeconfig"  # names the client in messages until its context is known

T = TypeVar("T")


# --- options -----------------------------------------------------------------------------------------------


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

    def graph(self) -> CacheGraph:
        return CacheGraph(self.serving, self.cluster_serving, self.inference_services)

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
    directory = clusters_dir_to_read(clusters_dir)
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
    except NotFound as exc:
        raise CommandError(
            f"cluster {exc.cluster}: {exc.path} is not served (are the OME CRDs installed?)", EXIT_CLUSTER_FAILED
        ) from None
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
    except NotFound as exc:
        details = (exc.body or {}).get("details") if isinstance(exc.body, dict) else None
        if isinstance(details, dict) and details.get("name") == name:
            return None
        raise


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# --- effective ---------------------------------------------------------------------------------------------


def _condition(obj: Mapping[str, Any], condition_type: str) -> dict[str, Any] | None:
    for condition in as_mapping(obj.get("status")).get("conditions") or []:
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
    runtime = as_mapping(as_mapping(isvc.get("spec")).get("runtime"))
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
    meta = as_mapping(isvc.get("metadata"))
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    status_runtime = as_mapping(as_mapping(isvc.get("status")).get("runtime"))
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


INFERENCE_SERVICE_KIND = "inferenceservice.ome.io"  # `-o name` prints inferenceservice.ome.io/NAME


def _effective_runtime(report: Mapping[str, Any]) -> tuple[str, str, str]:
    """(runtime, kind, chain) cells of a report: the named runtime's, or automatic selection's."""
    runtime = report["runtime"]
    if runtime is None:
        selected = report.get("selectedRuntime")
        name = selected["name"] if selected else "<none>"
        kind = (selected.get("kind") or _UNKNOWN) if selected else _UNKNOWN
        return name, kind, name if selected else _UNKNOWN
    return runtime["name"], runtime["kind"], ",".join(hop["name"] for hop in report["chain"])


EFFECTIVE_COLUMNS: list[Column[Mapping[str, Any]]] = [
    Column("NAME", lambda r: r["inferenceService"]["name"]),
    Column("RUNTIME", lambda r: _effective_runtime(r)[0]),
    Column("KIND", lambda r: _effective_runtime(r)[1]),
    Column("REVISION", lambda r: r["revision"] or _UNKNOWN),
    Column("PINNED", lambda r: _yes_no(r["pinned"])),
    Column("DRIFTED", lambda r: _yes_no(r["drifted"])),
    Column("CHAIN", lambda r: _effective_runtime(r)[2]),
    Column("AUTOSYNC", lambda r: _yes_no(r["autoSync"] if isinstance(r["autoSync"], bool) else None), wide=True),
    Column("PINNED REVISION", lambda r: r["pinnedRevision"] or _UNKNOWN, wide=True),
    Column("RESOURCEVERSIONS", lambda r: ",".join(str(hop["resourceVersion"]) for hop in r["chain"]), wide=True),
    Column("CLUSTER", lambda r: r["cluster"] or _UNKNOWN, wide=True),
]


def _print_effective(report: Mapping[str, Any], output: OutputFormat) -> None:
    isvc = report["inferenceService"]
    print_records([report], EFFECTIVE_COLUMNS, output, kind=INFERENCE_SERVICE_KIND, name=lambda r: isvc["name"])
    if report["runtime"] is None and output in (OutputFormat.table, OutputFormat.wide):
        name = _effective_runtime(report)[0]
        how = f"automatic selection chose {name}" if report.get("selectedRuntime") else "OME selects one automatically"
        typer.echo(
            f"\nInferenceService {isvc['namespace']}/{isvc['name']} names no runtime: {how}, "
            "from each runtime's own spec without inheritance."
        )


@runtime_app.command("effective")
def effective(
    name: str | None = typer.Argument(
        None,
        help="Name of the InferenceService; without it, every InferenceService of the namespace (or with -A, of "
        "every namespace).",
        show_default=False,
    ),
    namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Namespace of the InferenceService (default: the context's namespace)."
    ),
    all_namespaces: bool = typer.Option(
        False, "-A", "--all-namespaces", help="Every InferenceService in every namespace."
    ),
    kubeconfig: Path | None = KUBECONFIG_OPTION,
    context: str | None = CONTEXT_OPTION,
    cluster: str | None = CLUSTER_OPTION,
    clusters_dir: Path | None = CLUSTERS_DIR_OPTION,
    output: OutputFormat = OUTPUT_OPTION,
    timeout: float = TIMEOUT_OPTION,
) -> None:
    """The runtime an InferenceService uses: kind, revision, pinned, drifted and its inheritance chain."""
    if name is not None and all_namespaces:
        raise typer.BadParameter("an InferenceService is named within one namespace: drop NAME or -A", param_hint="-A")
    try:
        target = _single_target(kubeconfig, context, cluster, clusters_dir, timeout)
        if name is None:
            listing = asyncio.run(
                _with_client(target, lambda client: _read_all_effective(client, namespace, all_namespaces))
            )
        else:
            report = asyncio.run(_with_client(target, lambda client: _read_effective(client, namespace, name)))
    except CommandError as exc:
        _fail(exc)
    if name is None:
        _print_listing(listing, output, all_namespaces)
    elif output.is_document:
        emit(report, output)
    else:
        _print_effective(report, output)


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


async def _read_all_effective(client: ClusterClient, namespace: str | None, all_namespaces: bool) -> dict[str, Any]:
    """The report of every InferenceService of a namespace (the context's without one), or of every namespace; one
    whose runtime is missing or does not resolve is an entry of `errors`, not the command's end."""
    scope = None if all_namespaces else (namespace or client.default_namespace)
    isvcs, serving, cluster_serving = await asyncio.gather(
        client.list_all(INFERENCE_SERVICES, scope),
        client.list_all(SERVING_RUNTIMES, scope),
        client.list_all(CLUSTER_SERVING_RUNTIMES),
    )
    read = ClusterRead.from_lists(client.name, serving, cluster_serving)
    reports, errors = [], []
    for isvc in sorted(isvcs, key=lambda obj: (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])):
        try:
            reports.append(effective_report(read, isvc))
        except CommandError as exc:
            errors.append(exc.message)
    return {"cluster": client.name, "namespace": scope, "inferenceServices": reports, "errors": errors}


def _print_listing(listing: Mapping[str, Any], output: OutputFormat, all_namespaces: bool) -> None:
    reports = listing["inferenceServices"]
    if output.is_document:
        emit(listing, output)
    elif reports or output is OutputFormat.name:
        columns = EFFECTIVE_COLUMNS
        if all_namespaces:  # as kubectl get -A: the namespace first
            columns = [Column("NAMESPACE", lambda r: r["inferenceService"]["namespace"]), *columns]
        print_records(
            reports, columns, output, kind=INFERENCE_SERVICE_KIND, name=lambda r: r["inferenceService"]["name"]
        )
    elif not listing["errors"]:
        where = "any namespace" if listing["namespace"] is None else f'namespace "{listing["namespace"]}"'
        typer.echo(f"No InferenceServices in {where} (cluster {listing['cluster']}).")
    if not output.is_document:
        for message in listing["errors"]:
            typer.echo(f"error: {message}", err=True)
    if listing["errors"]:
        raise typer.Exit(1)


# --- output ------------------------------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _console() -> Console:
    # Piped output (kubectl plugins, grep) keeps whole lines rather than wrapping them at 80 columns.
    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=max(WIDE_CONSOLE, console.width))
    return console


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
    runtime_spec = as_mapping(as_mapping(isvc.get("spec")).get("runtime"))
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
        field_manager=ROLLOUT_FIELD_MANAGER,
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    await client.patch(
        INFERENCE_SERVICES,
        name,
        {"metadata": {"annotations": {ROLLOUT_ANNOTATION: stamp}}},
        namespace,
        patch_type="merge",
        field_manager=ROLLOUT_FIELD_MANAGER,
    )
    return f"inferenceservice.ome.io/{name} rolling out to the live revision"
