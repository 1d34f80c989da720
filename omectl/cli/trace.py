"""`omectl trace`: list recent reconciles, draw a trace's span tree, and explain where a runtime's fields came from."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

import orjson
import typer
from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from omectl.cli.reports import (
    OUTPUT_OPTION,
    Column,
    OutputFormat,
    emit,
    print_records,
    refuse_name,
    render_document,
    render_records,
    watch,
)
from omectl.tracing.reader import MergeRecord, SpanRecord, TraceStore, object_of
from omectl.tracing.setup import default_trace_file
from omectl.tracing.spans import (
    ATTR_CLUSTER,
    ATTR_FLEET_RUNTIME,
    ATTR_KIND,
    ATTR_MERGE_CACHE,
    ATTR_MERGE_CHAIN,
    ATTR_MERGE_LAYER_FIELDS,
    ATTR_MERGE_PROVENANCE,
    ATTR_NAME,
    ATTR_NAMESPACE,
    ATTR_QUEUE_WAIT_MS,
    ATTR_RESOURCE_VERSION,
    ATTR_RESULT,
    ATTR_RETRIES,
    ATTR_ROLLOUT_REVISION,
    ATTR_ROLLOUT_WAVE,
    RESULT_ERROR,
    RESULT_REQUEUE,
    RESULT_SUCCESS,
    RESULT_TERMINAL,
)

trace_app = typer.Typer(no_args_is_help=True, help="Inspect the reconcile and merge traces omectl recorded.")

STATUS_CODE_ERROR = 2
WIDE_CONSOLE = 200
RESULT_STYLES = {RESULT_SUCCESS: "green", RESULT_REQUEUE: "yellow", RESULT_ERROR: "red", RESULT_TERMINAL: "red"}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


FILE_HELP = "Trace file to read. Default: $OMECTL_TRACE_FILE or .omectl/traces.jsonl."


def _console() -> Console:
    # Piped output keeps whole trace ids and rows rather than wrapping them at 80 columns.
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(WIDE_CONSOLE, console.width))
    return console


def _fail(message: str) -> NoReturn:
    Console(stderr=True, highlight=False, soft_wrap=True).print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(1)


def _load(path: Path | None) -> tuple[TraceStore, Path]:
    path = path or default_trace_file()
    try:
        store = TraceStore.load(path)
    except FileNotFoundError:
        _fail(f"no trace file at {path}")
    except OSError as exc:
        _fail(f"cannot read trace file {path}: {exc.strerror or exc}")
    if not len(store) and store.skipped_lines:
        _fail(f"{path}: not a trace file (no line is an OTLP JSON export)")
    return store, path


def parse_since(text: str, now_ns: int) -> int:
    """`10m`, `1h30m`, `45s`, `2d` before `now_ns`, or an RFC 3339 time (UTC when it has no offset), in ns."""
    text = text.strip()
    if _DURATION.fullmatch(text):
        seconds = sum(float(amount) * _UNIT_SECONDS[unit] for amount, unit in _DURATION_PART.findall(text))
        return now_ns - int(seconds * 1e9)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a duration (10m, 1h) nor an RFC 3339 time", param_hint="--since"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(microseconds=1) * 1000  # exact, unlike float seconds


def parse_object(text: str) -> tuple[str, str | None, str]:
    """`KIND/NS/NAME`, or `KIND/NAME` for a cluster-scoped object."""
    parts = text.split("/")
    if len(parts) == 3 and all(parts):
        return parts[0], parts[1], parts[2]
    if len(parts) == 2 and all(parts):
        return parts[0], None, parts[1]
    raise typer.BadParameter(f"{text!r} is not KIND/NAMESPACE/NAME or KIND/NAME", param_hint="--object")


def _time(span: SpanRecord) -> str:
    return span.start.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _object_name(namespace: str | None, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _dump_json(value: Any) -> None:
    typer.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())


@trace_app.command("list")
def list_reconciles(
    file: Path | None = typer.Option(None, "--file", "-f", help=FILE_HELP),
    cluster: str | None = typer.Option(None, "--cluster", help="Only reconciles on this cluster."),
    object_ref: str | None = typer.Option(
        None, "--object", help="Only reconciles of KIND/NAMESPACE/NAME (KIND/NAME when cluster-scoped)."
    ),
    since: str | None = typer.Option(None, "--since", help="Only reconciles started since: 10m, 1h, or RFC 3339."),
    limit: int = typer.Option(50, "--limit", min=1, help="Show at most this many, newest first."),
    in_namespace: str | None = typer.Option(
        None, "-n", "--namespace", help="Only reconciles of objects in this namespace."
    ),
    all_namespaces: bool = typer.Option(
        False, "-A", "--all-namespaces", help="Reconciles in every namespace (the default; drops -n)."
    ),
    output: OutputFormat = OUTPUT_OPTION,
    watching: bool = typer.Option(
        False, "--watch", "-w", help="Read the file again every --interval seconds until Ctrl-C."
    ),
    interval: float = typer.Option(2.0, "--interval", min=0.1, help="Seconds between refreshes with --watch."),
) -> None:
    """Recent reconciles, newest first: one row per reconcile root span."""
    refuse_name(output, "a reconcile")
    if since:
        parse_since(since, time.time_ns())  # a bad --since is a usage error before anything is read
    kind, namespace, name = parse_object(object_ref) if object_ref else (None, None, None)
    if object_ref and namespace is None:
        namespace = ""  # KIND/NAME asks for the cluster-scoped object only
    if in_namespace is not None and not all_namespaces:
        if object_ref and namespace != in_namespace:
            raise typer.BadParameter(f"--object {object_ref} is not in namespace {in_namespace!r}", param_hint="-n")
        namespace = in_namespace

    def frame() -> str:
        since_ns = parse_since(since, time.time_ns()) if since else None  # --since 10m: of each frame's now
        store, path = _load(file)
        spans = store.reconciles(cluster=cluster, kind=kind, namespace=namespace, name=name, since_ns=since_ns)
        rows = [_reconcile_row(span) for span in spans[:limit]]
        if output is OutputFormat.json:
            return orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode()
        if output.is_document:
            return render_document(rows, output)
        if not rows:
            return f"No reconciles match in {path}."
        return render_records(rows, RECONCILE_COLUMNS, output)

    if watching:
        watch(frame, interval, clear=not output.is_document)
    else:
        typer.echo(frame())


def _or_dash(value: Any) -> str:
    return "-" if value is None or value == "" else str(value)


RECONCILE_COLUMNS: list[Column[dict[str, Any]]] = [
    Column("TIME", lambda row: row["time"]),
    Column("CLUSTER", lambda row: row["cluster"] or "-"),
    Column("KIND", lambda row: row["kind"]),
    Column("OBJECT", lambda row: _object_name(row["namespace"], row["name"])),
    Column("RESULT", lambda row: row["result"] or "-"),
    Column("DURATION (ms)", lambda row: f"{row['durationMs']:.1f}"),
    Column("TRACE ID", lambda row: row["traceId"]),
    Column("RESOURCE VERSION", lambda row: _or_dash(row["resourceVersion"]), wide=True),
    Column("QUEUE WAIT (ms)", lambda row: _or_dash(row["queueWaitMs"]), wide=True),
    Column("RETRIES", lambda row: _or_dash(row["retries"]), wide=True),
    Column("SPAN ID", lambda row: row["spanId"], wide=True),
]


def _reconcile_row(span: SpanRecord) -> dict[str, Any]:
    ref = object_of(span)
    return {
        "time": _time(span),
        "cluster": ref.cluster,
        "kind": ref.kind,
        "namespace": ref.namespace,
        "name": ref.name,
        "resourceVersion": span.attributes.get(ATTR_RESOURCE_VERSION),
        "result": span.attributes.get(ATTR_RESULT),
        "durationMs": round(span.duration_ms, 3),
        "queueWaitMs": span.attributes.get(ATTR_QUEUE_WAIT_MS),
        "retries": span.attributes.get(ATTR_RETRIES),
        "traceId": span.trace_id,
        "spanId": span.span_id,
    }


@trace_app.command("show")
def show(
    trace_id: str = typer.Argument(..., help="The trace id (or a unique prefix of it)."),
    file: Path | None = typer.Option(None, "--file", "-f", help=FILE_HELP),
) -> None:
    """Draw one trace as a span tree with durations and key attributes."""
    store, path = _load(file)
    found = store.find_trace(trace_id)
    if found is None:
        _fail(f"trace {trace_id} not found in {path}")
    tree = Tree(f"[bold]trace[/bold] {found}  ({len(store.spans(found))} spans)")
    for root in store.roots(found):
        _add_span(tree, store, root)
    _console().print(tree)


_SHOWN_ELSEWHERE = {
    ATTR_CLUSTER,
    ATTR_KIND,
    ATTR_NAMESPACE,
    ATTR_NAME,
    ATTR_RESULT,
    ATTR_RESOURCE_VERSION,
    ATTR_QUEUE_WAIT_MS,
    ATTR_RETRIES,
    ATTR_MERGE_CHAIN,
    ATTR_MERGE_CACHE,
    ATTR_MERGE_LAYER_FIELDS,
    ATTR_MERGE_PROVENANCE,
}


def _span_label(span: SpanRecord) -> str:
    parts = [f"[bold]{escape(span.name)}[/bold]", _ms(span.duration_ms)]
    attributes = span.attributes
    if span.is_reconcile:
        ref = object_of(span)
        parts.append(escape(f"{ref.cluster or '-'} {ref.kind} {_object_name(ref.namespace, ref.name)}"))
        result = str(attributes.get(ATTR_RESULT, "-"))
        parts.append(f"result=[{RESULT_STYLES.get(result, 'default')}]{escape(result)}[/]")
        parts.append(escape(f"rv={attributes.get(ATTR_RESOURCE_VERSION, '-')}"))
        queue_wait = attributes.get(ATTR_QUEUE_WAIT_MS)
        if isinstance(queue_wait, int | float):
            parts.append(f"queued {_ms(queue_wait)}")
        parts.append(f"retries={attributes.get(ATTR_RETRIES, 0)}")
    if span.is_merge:
        chain = " → ".join(str(item) for item in attributes.get(ATTR_MERGE_CHAIN) or ())
        parts.append(escape(f"chain: {chain}"))
        parts.append(escape(f"cache={attributes.get(ATTR_MERGE_CACHE, '-')}"))
        layers = attributes.get(ATTR_MERGE_LAYER_FIELDS) or ()
        if layers:
            parts.append(escape(f"fields: {' '.join(str(item) for item in layers)}"))
    for key, value in attributes.items():
        if key not in _SHOWN_ELSEWHERE:
            parts.append(escape(f"{key}={_short(value)}"))
    if span.status_code == STATUS_CODE_ERROR:
        parts.append(f"[red]error: {escape(span.status_message or 'unknown')}[/red]")
    return "  ".join(parts)


def _rollout_label(span: SpanRecord) -> str:
    """A rollout transition in one line: what happened, to which FleetRuntime, wave and revision, and its trace."""
    a = span.attributes
    return (
        f"{span.name} fleetruntime/{a.get(ATTR_FLEET_RUNTIME, '-')} wave {a.get(ATTR_ROLLOUT_WAVE, '-')} "
        f"revision {a.get(ATTR_ROLLOUT_REVISION, '-')} at {_time(span)} (trace {span.trace_id})"
    )


def _ms(milliseconds: float) -> str:
    return f"{milliseconds:.3f} ms" if milliseconds < 1 else f"{milliseconds:.1f} ms"


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(item) for item in value) if isinstance(value, list) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _add_span(parent: Tree, store: TraceStore, span: SpanRecord) -> None:
    node = parent.add(_span_label(span))
    for link in span.links:
        kind = link.attributes.get("ot-span-reference-type", "link")
        node.add(f"[dim]↳ {escape(str(kind))} {link.trace_id}/{link.span_id}[/dim]")
        if span.is_reconcile:
            for cause in store.rollouts_linked_to(link):
                node.add(f"[dim]↳ caused by[/dim] {escape(_rollout_label(cause))}")
    for event in span.events:
        offset_ms = (event.time_ns - span.start_ns) / 1e6
        details = " ".join(f"{key}={_short(value)}" for key, value in event.attributes.items())
        node.add(f"[italic]event[/italic] {escape(event.name)} +{offset_ms:.1f} ms {escape(details)}".rstrip())
    for child in store.children(span):
        _add_span(node, store, child)


@trace_app.command("explain")
def explain(
    kind: str = typer.Argument(..., help="The runtime's kind, e.g. ServingRuntime or ClusterServingRuntime."),
    ref: str = typer.Argument(..., help="NAMESPACE/NAME, or NAME for a cluster-scoped runtime."),
    cluster: str | None = typer.Option(None, "--cluster", help="Only merges on this cluster."),
    file: Path | None = typer.Option(None, "--file", "-f", help=FILE_HELP),
    output: OutputFormat = OUTPUT_OPTION,
) -> None:
    """Where each field of a runtime's merged spec came from, per its latest merge span."""
    refuse_name(output, "a field")
    namespace, _, name = ref.rpartition("/")
    if not name or "/" in namespace:
        raise typer.BadParameter(f"{ref!r} is not NAMESPACE/NAME or NAME", param_hint="REF")
    store, path = _load(file)
    merge = store.latest_merge(kind=kind, namespace=namespace or None, name=name, cluster=cluster)
    if merge is None:
        where = f" on cluster {cluster}" if cluster else ""
        _fail(f"no merge of {kind} {ref}{where} found in {path}")
    if output is OutputFormat.json:
        _dump_json(_explain_json(merge))
        return
    if output.is_document:
        emit(_explain_json(merge), output)
        return
    console = _console()
    runtime = merge.runtime
    console.print(
        f"[bold]{escape(runtime.kind)} {escape(_object_name(runtime.namespace, runtime.name))}[/bold]"
        f"  cluster {escape(runtime.cluster or '-')}  merged {_time(merge.span)}  cache {escape(merge.cache or '-')}"
        f"  trace {merge.span.trace_id}",
        highlight=False,
    )
    where = f", {merge.context}" if merge.context else ""
    chain = merge.chain_refs or merge.chain
    console.print(f"chain (root first{escape(where)}): {escape(' → '.join(chain) or '-')}", highlight=False)
    if not merge.provenance:
        console.print("No field provenance was recorded for this merge.")
        return
    # -o wide: the merge's other fields (chain, cache, trace) are in the lines above
    print_records(
        list(merge.provenance.items()),
        [
            Column("FIELD", lambda item: item[0]),
            Column("SET BY", lambda item: merge.set_by(item[1])),
        ],
        output,
    )


def _explain_json(merge: MergeRecord) -> dict[str, Any]:
    return {
        "kind": merge.runtime.kind,
        "namespace": merge.runtime.namespace,
        "name": merge.runtime.name,
        "cluster": merge.runtime.cluster,
        "time": _time(merge.span),
        "traceId": merge.span.trace_id,
        "spanId": merge.span.span_id,
        "cache": merge.cache,
        "chain": merge.chain,
        "chainRefs": merge.chain_refs,
        "context": merge.context,
        "layerFields": merge.layer_fields,
        "provenance": merge.provenance,
    }
