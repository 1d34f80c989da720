"""The span vocabulary of omectl: attribute names, the reconcile and merge spans, and watch-event contexts.

A reconcile is a root span of its own (`reconcile <kind>`), linked, not parented, to the watch events that
enqueued it. Watch events get no span; `watch_event_context` derives a deterministic, unsampled span context
from the event's identity that the reconcile links to. Each merge of a runtime chain is a child span `merge`.

A FleetRuntime rollout's transitions (a wave started, passed, failed, rolled back...) are root spans `rollout
<Reason>` of their own, linked (`caused`) to the watch events of the member copies they wrote: the same contexts
the members' reconciles of those copies, and of the InferenceServices they reach, link to. So a reconcile in a
member finds the transition that caused it by a shared link (`omectl trace show`).
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import orjson
from opentelemetry import context as otel_context
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags, Tracer

from omectl.observability.redact import scrub

ATTR_CLUSTER = "k8s.cluster.name"
ATTR_KIND = "omectl.kind"
ATTR_NAMESPACE = "k8s.namespace.name"
ATTR_NAME = "omectl.object.name"
ATTR_RESOURCE_VERSION = "omectl.resource_version"
ATTR_RESULT = "omectl.result"
ATTR_QUEUE_WAIT_MS = "omectl.queue_wait_ms"
ATTR_RETRIES = "omectl.retries"

ATTR_MERGE_CHAIN = "omectl.merge.chain"
"""The runtimes of the chain, root first."""
ATTR_MERGE_CHAIN_REFS = "omectl.merge.chain_refs"
"""The same runtimes as `Kind/name` or `Kind/namespace/name`: a name alone is ambiguous across contexts."""
ATTR_MERGE_CONTEXT = "omectl.merge.context"
"""Where the chain's parents were looked up: `cluster-only` or `namespace N`."""
ATTR_MERGE_CACHE = "omectl.merge.cache"
"""`hit` or `miss` in the shared resolver."""
ATTR_MERGE_LAYER_FIELDS = "omectl.merge.layer_fields"
"""How many fields each layer set, as a list of `name=count`, root first."""
ATTR_MERGE_PROVENANCE = "omectl.merge.provenance"
"""A JSON object: field path → the runtime that set it."""
ATTR_MERGE_RUNTIME_KIND = "omectl.merge.runtime.kind"
ATTR_MERGE_RUNTIME_NAMESPACE = "omectl.merge.runtime.namespace"
ATTR_MERGE_RUNTIME_NAME = "omectl.merge.runtime.name"

ATTR_LINK_REFERENCE_TYPE = "ot-span-reference-type"
LINK_FOLLOWS_FROM = "follows-from"

ATTR_FLEET_RUNTIME = "omectl.fleetruntime"
ATTR_ROLLOUT_REVISION = "omectl.rollout.revision"
ATTR_ROLLOUT_WAVE = "omectl.rollout.wave"
ATTR_ROLLOUT_CLUSTERS = "omectl.rollout.clusters"
"""The clusters the transition wrote a copy to."""
ATTR_ROLLOUT_MESSAGE = "omectl.rollout.message"
LINK_CAUSED = "caused"

RECONCILE_SPAN_PREFIX = "reconcile "
MERGE_SPAN_NAME = "merge"
ROLLOUT_SPAN_PREFIX = "rollout "

RESULT_SUCCESS = "success"
RESULT_REQUEUE = "requeue"
RESULT_ERROR = "error"
RESULT_TERMINAL = "terminal"

CACHE_HIT = "hit"
CACHE_MISS = "miss"


def watch_event_context(cluster: str, kind: str, ns: str | None, name: str, rv: str) -> SpanContext:
    """The span context of a watch event: the same event always gives the same ids; nothing is recorded for it."""
    digest = hashlib.sha256("\x00".join((cluster, kind, ns or "", name, rv)).encode()).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1  # an all-zero id would be invalid
    span_id = int.from_bytes(digest[16:24], "big") or 1
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.DEFAULT))


def object_event_context(cluster: str, kind: str, obj: Mapping[str, Any]) -> SpanContext:
    """`watch_event_context` of a watch event about `obj`, from its metadata (absent fields count as empty)."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    return watch_event_context(cluster, kind, namespace, name, str(meta.get("resourceVersion") or ""))


def record_error(span: Span, exc: BaseException) -> None:
    """The `exception` event and error status OpenTelemetry would record, with secrets scrubbed from the text
    (an API server's error may quote an env value; a kubeconfig loader's, a credential)."""
    if not span.is_recording():
        return
    message = scrub(str(exc))
    span.add_event(
        "exception",
        {
            "exception.type": type(exc).__qualname__,
            "exception.message": message,
            "exception.stacktrace": scrub("".join(traceback.format_exception(exc))),
            "exception.escaped": "False",
        },
    )
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))


def set_result(span: Span, result: str) -> None:
    """Record how the reconcile ended: `success`, `requeue`, `error` or `terminal`."""
    span.set_attribute(ATTR_RESULT, result)


@contextmanager
def reconcile_span(
    tracer: Tracer,
    *,
    cluster: str,
    kind: str,
    namespace: str | None,
    name: str,
    resource_version: str,
    queue_wait: float,
    retries: int,
    links: Sequence[SpanContext],
) -> Iterator[Span]:
    """A root span `reconcile <kind>` around one reconcile, linked to the watch events that triggered it.

    `queue_wait` is in seconds. The result defaults to `success`, or `error` when the body raises; call
    `set_result` for `requeue` or `terminal`.
    """
    attributes: dict[str, str | int | float] = {
        ATTR_CLUSTER: cluster,
        ATTR_KIND: kind,
        ATTR_NAME: name,
        ATTR_RESOURCE_VERSION: resource_version,
        ATTR_QUEUE_WAIT_MS: queue_wait * 1000.0,
        ATTR_RETRIES: retries,
    }
    if namespace:
        attributes[ATTR_NAMESPACE] = namespace
    # Several coalesced watch events may be the same one; link each once.
    unique_links = list({(link.trace_id, link.span_id): link for link in links}.values())
    with tracer.start_as_current_span(
        RECONCILE_SPAN_PREFIX + kind,
        context=otel_context.Context(),  # always a root, whatever span is current
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        links=[Link(link, {ATTR_LINK_REFERENCE_TYPE: LINK_FOLLOWS_FROM}) for link in unique_links],
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            set_result(span, RESULT_ERROR)
            record_error(span, exc)
            raise
        if span.is_recording() and ATTR_RESULT not in (getattr(span, "attributes", None) or {}):
            set_result(span, RESULT_SUCCESS)


def encode_layer_fields(layer_fields: Mapping[str, int]) -> list[str]:
    return [f"{layer}={count}" for layer, count in layer_fields.items()]


def decode_layer_fields(encoded: Sequence[str]) -> dict[str, int]:
    decoded: dict[str, int] = {}
    for item in encoded:
        layer, _, count = item.rpartition("=")
        decoded[layer] = int(count) if count.isdigit() else 0
    return decoded


@contextmanager
def merge_span(
    tracer: Tracer,
    *,
    chain: Sequence[str],
    cache_hit: bool,
    layer_fields: Mapping[str, int],
    provenance: Mapping[str, str],
    chain_refs: Sequence[str] = (),
    context: str | None = None,
    runtime_kind: str | None = None,
    runtime_namespace: str | None = None,
    runtime_name: str | None = None,
) -> Iterator[Span]:
    """A child span `merge` of the current span for one chain merge (chain root first).

    The merged runtime defaults to the reconciled object; a reconcile that merges another object's chain
    (an InferenceService merging its runtime's) names that runtime with `runtime_kind/namespace/name`.
    """
    attributes: dict[str, str | Sequence[str]] = {
        ATTR_MERGE_CHAIN: list(chain),
        ATTR_MERGE_CACHE: CACHE_HIT if cache_hit else CACHE_MISS,
        ATTR_MERGE_LAYER_FIELDS: encode_layer_fields(layer_fields),
    }
    if provenance:
        attributes[ATTR_MERGE_PROVENANCE] = orjson.dumps(dict(provenance)).decode()
    if chain_refs:
        attributes[ATTR_MERGE_CHAIN_REFS] = list(chain_refs)
    if context:
        attributes[ATTR_MERGE_CONTEXT] = context
    if runtime_kind:
        attributes[ATTR_MERGE_RUNTIME_KIND] = runtime_kind
    if runtime_namespace:
        attributes[ATTR_MERGE_RUNTIME_NAMESPACE] = runtime_namespace
    if runtime_name:
        attributes[ATTR_MERGE_RUNTIME_NAME] = runtime_name
    with tracer.start_as_current_span(
        MERGE_SPAN_NAME,
        kind=SpanKind.INTERNAL,
        attributes=attributes,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            yield span
        except BaseException as exc:
            record_error(span, exc)
            raise


def rollout_span(
    tracer: Tracer,
    *,
    reason: str,
    fleet_runtime: str,
    revision: int,
    wave: str,
    message: str,
    clusters: Sequence[str],
    caused: Sequence[SpanContext],
) -> None:
    """A root span `rollout <reason>` for one transition of a FleetRuntime's rollout, linked to the watch events of
    the copies it wrote (`caused`); it has no duration worth measuring, so it ends at once."""
    unique = list({(link.trace_id, link.span_id): link for link in caused}.values())
    span = tracer.start_span(
        ROLLOUT_SPAN_PREFIX + reason,
        context=otel_context.Context(),
        kind=SpanKind.INTERNAL,
        attributes={
            ATTR_FLEET_RUNTIME: fleet_runtime,
            ATTR_ROLLOUT_REVISION: revision,
            ATTR_ROLLOUT_WAVE: wave,
            ATTR_ROLLOUT_CLUSTERS: list(clusters),
            ATTR_ROLLOUT_MESSAGE: scrub(message),
        },
        links=[Link(link, {ATTR_LINK_REFERENCE_TYPE: LINK_CAUSED}) for link in unique],
    )
    span.end()
