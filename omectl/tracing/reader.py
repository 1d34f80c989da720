"""Reads an OTLP/JSON-lines trace file back into spans grouped by trace, for `omectl trace`.

Tolerates a partial last line (a writer may be mid-append) and rotated files (`<path>.1` is read first).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from omectl.tracing.filelog import ROTATED_SUFFIX
from omectl.tracing.spans import (
    ATTR_CLUSTER,
    ATTR_KIND,
    ATTR_MERGE_CACHE,
    ATTR_MERGE_CHAIN,
    ATTR_MERGE_CHAIN_REFS,
    ATTR_MERGE_CONTEXT,
    ATTR_MERGE_LAYER_FIELDS,
    ATTR_MERGE_PROVENANCE,
    ATTR_MERGE_RUNTIME_KIND,
    ATTR_MERGE_RUNTIME_NAME,
    ATTR_MERGE_RUNTIME_NAMESPACE,
    ATTR_NAME,
    ATTR_NAMESPACE,
    MERGE_SPAN_NAME,
    RECONCILE_SPAN_PREFIX,
    ROLLOUT_SPAN_PREFIX,
    decode_layer_fields,
)


def decode_any_value(value: dict[str, Any]) -> Any:
    """An OTLP/JSON `AnyValue` as a Python value (arrays become lists, kvlists dicts)."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [decode_any_value(item) for item in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return decode_attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


def decode_attributes(attributes: Iterable[dict[str, Any]] | None) -> dict[str, Any]:
    return {item["key"]: decode_any_value(item.get("value", {})) for item in attributes or ()}


@dataclass(frozen=True)
class LinkRecord:
    trace_id: str
    span_id: str
    attributes: dict[str, Any]


@dataclass(frozen=True)
class EventRecord:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class SpanRecord:
    """One span as read from the file; ids are lowercase hex."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    links: list[LinkRecord] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    status_code: int = 0
    status_message: str = ""
    resource: dict[str, Any] = field(default_factory=dict)
    scope: str = ""

    @property
    def duration_ms(self) -> float:
        return max(self.end_ns - self.start_ns, 0) / 1e6

    @property
    def start(self) -> datetime:
        return datetime.fromtimestamp(self.start_ns / 1e9, tz=UTC)

    @property
    def is_reconcile(self) -> bool:
        return self.parent_span_id is None and self.name.startswith(RECONCILE_SPAN_PREFIX)

    @property
    def is_merge(self) -> bool:
        return self.name == MERGE_SPAN_NAME

    @classmethod
    def from_otlp(cls, span: dict[str, Any], resource: dict[str, Any], scope: str) -> SpanRecord:
        status = span.get("status") or {}
        return cls(
            trace_id=span["traceId"].lower(),
            span_id=span["spanId"].lower(),
            parent_span_id=(span.get("parentSpanId") or "").lower() or None,
            name=span.get("name", ""),
            kind=int(span.get("kind", 0)),
            start_ns=int(span.get("startTimeUnixNano", 0)),
            end_ns=int(span.get("endTimeUnixNano", 0)),
            attributes=decode_attributes(span.get("attributes")),
            links=[
                LinkRecord(link["traceId"].lower(), link["spanId"].lower(), decode_attributes(link.get("attributes")))
                for link in span.get("links") or ()
            ],
            events=[
                EventRecord(
                    event.get("name", ""), int(event.get("timeUnixNano", 0)), decode_attributes(event.get("attributes"))
                )
                for event in span.get("events") or ()
            ],
            status_code=int(status.get("code", 0)),
            status_message=status.get("message", ""),
            resource=resource,
            scope=scope,
        )


@dataclass(frozen=True)
class ObjectRef:
    """What a span is about: the cluster and the Kubernetes object."""

    cluster: str | None
    kind: str
    namespace: str | None
    name: str

    def matches(self, *, cluster: str | None, kind: str | None, namespace: str | None, name: str | None) -> bool:
        """Whether this is the object asked for; `None` asks for anything, kinds compare case-insensitively."""
        return (
            (cluster is None or self.cluster == cluster)
            and (kind is None or self.kind.lower() == kind.lower())
            and (namespace is None or (self.namespace or "") == namespace)
            and (name is None or self.name == name)
        )


@dataclass(frozen=True)
class MergeRecord:
    """A merge span with its decoded attributes and the runtime it merged."""

    span: SpanRecord
    runtime: ObjectRef
    chain: list[str]
    cache: str
    layer_fields: dict[str, int]
    provenance: dict[str, str]
    chain_refs: list[str] = field(default_factory=list)
    """The chain's runtimes as `Kind/name` or `Kind/namespace/name` (spans written before they were recorded
    have none)."""
    context: str | None = None

    def set_by(self, name: str) -> str:
        """The runtime a provenance entry names, with its kind and namespace when the span recorded them (names
        are unique within a chain)."""
        refs = dict(zip(self.chain, self.chain_refs, strict=False))
        return refs.get(name, name)


def object_of(span: SpanRecord) -> ObjectRef:
    attributes = span.attributes
    return ObjectRef(
        cluster=attributes.get(ATTR_CLUSTER),
        kind=str(attributes.get(ATTR_KIND, "")),
        namespace=attributes.get(ATTR_NAMESPACE) or None,
        name=str(attributes.get(ATTR_NAME, "")),
    )


class TraceStore:
    """Spans of a trace file, grouped by trace id, in file order."""

    def __init__(self) -> None:
        self._traces: dict[str, dict[str, SpanRecord]] = {}
        self.skipped_lines = 0

    @classmethod
    def load(cls, path: Path | str, *, include_rotated: bool = True) -> TraceStore:
        """Read `path` (and `<path>.1` before it); raises `FileNotFoundError` when `path` is missing."""
        path = Path(path)
        store = cls()
        rotated = path.with_name(path.name + ROTATED_SUFFIX)
        if include_rotated and rotated.is_file():
            store.add_lines(rotated.read_bytes().splitlines())
        store.add_lines(path.read_bytes().splitlines())
        return store

    def add_lines(self, lines: Iterable[bytes | str]) -> None:
        """Add export requests, one per line; a line that does not parse (a torn write) is counted and skipped."""
        for line in lines:
            if not line.strip():
                continue
            try:
                self.add_request(orjson.loads(line))
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
                self.skipped_lines += 1

    def add_request(self, request: dict[str, Any]) -> None:
        records: list[SpanRecord] = []
        for resource_spans in request.get("resourceSpans") or ():
            resource = decode_attributes((resource_spans.get("resource") or {}).get("attributes"))
            for scope_spans in resource_spans.get("scopeSpans") or ():
                scope = (scope_spans.get("scope") or {}).get("name", "")
                records.extend(SpanRecord.from_otlp(span, resource, scope) for span in scope_spans.get("spans") or ())
        # Decode the whole line before keeping any of it, so a malformed line adds nothing.
        for record in records:
            self._traces.setdefault(record.trace_id, {})[record.span_id] = record

    def __len__(self) -> int:
        return sum(len(spans) for spans in self._traces.values())

    def trace_ids(self) -> list[str]:
        return list(self._traces)

    def spans(self, trace_id: str | None = None) -> list[SpanRecord]:
        if trace_id is not None:
            return list(self._traces.get(trace_id, {}).values())
        return [span for spans in self._traces.values() for span in spans.values()]

    def span(self, trace_id: str, span_id: str) -> SpanRecord | None:
        return self._traces.get(trace_id, {}).get(span_id)

    def rollouts_linked_to(self, link: LinkRecord) -> list[SpanRecord]:
        """The rollout transitions (`rollout <Reason>` spans) that link the same context as `link` does: the
        FleetRuntime transition whose copy write caused the watch event a reconcile links to."""
        return sorted(
            (
                span
                for span in self.spans()
                if span.name.startswith(ROLLOUT_SPAN_PREFIX)
                and any((o.trace_id, o.span_id) == (link.trace_id, link.span_id) for o in span.links)
            ),
            key=lambda span: span.start_ns,
        )

    def find_trace(self, trace_id_or_prefix: str) -> str | None:
        """The trace id given, or the only one that starts with the given prefix."""
        wanted = trace_id_or_prefix.strip().lower()
        if wanted in self._traces:
            return wanted
        matches = [trace_id for trace_id in self._traces if wanted and trace_id.startswith(wanted)]
        return matches[0] if len(matches) == 1 else None

    def roots(self, trace_id: str) -> list[SpanRecord]:
        """Spans without a parent in this trace (a parent missing from the file makes its child a root)."""
        spans = self._traces.get(trace_id, {})
        roots = [span for span in spans.values() if span.parent_span_id is None or span.parent_span_id not in spans]
        return sorted(roots, key=lambda span: span.start_ns)

    def children(self, span: SpanRecord) -> list[SpanRecord]:
        spans = self._traces.get(span.trace_id, {}).values()
        return sorted((child for child in spans if child.parent_span_id == span.span_id), key=lambda s: s.start_ns)

    def ancestors(self, span: SpanRecord) -> Iterator[SpanRecord]:
        seen = {span.span_id}
        current = span
        while current.parent_span_id is not None and current.parent_span_id not in seen:
            parent = self.span(current.trace_id, current.parent_span_id)
            if parent is None:
                return
            seen.add(parent.span_id)
            yield parent
            current = parent

    def reconciles(
        self,
        *,
        cluster: str | None = None,
        kind: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        since_ns: int | None = None,
    ) -> list[SpanRecord]:
        """Root reconcile spans that match, newest first."""
        found = [
            span
            for span in self.spans()
            if span.is_reconcile
            and (since_ns is None or span.start_ns >= since_ns)
            and object_of(span).matches(cluster=cluster, kind=kind, namespace=namespace, name=name)
        ]
        return sorted(found, key=lambda span: span.start_ns, reverse=True)

    def merge_record(self, span: SpanRecord) -> MergeRecord:
        """A merge span decoded; the runtime is the one it names, else the reconcile it belongs to."""
        reconcile = next((parent for parent in self.ancestors(span) if parent.is_reconcile), None)
        owner = object_of(reconcile) if reconcile is not None else ObjectRef(None, "", None, "")
        attributes = span.attributes
        runtime = ObjectRef(
            cluster=attributes.get(ATTR_CLUSTER) or owner.cluster,
            kind=attributes.get(ATTR_MERGE_RUNTIME_KIND) or owner.kind,
            namespace=(
                attributes.get(ATTR_MERGE_RUNTIME_NAMESPACE) or None
                if attributes.get(ATTR_MERGE_RUNTIME_KIND)
                else owner.namespace
            ),
            name=attributes.get(ATTR_MERGE_RUNTIME_NAME) or owner.name,
        )
        provenance_json = attributes.get(ATTR_MERGE_PROVENANCE) or "{}"
        try:
            provenance = {str(path): str(source) for path, source in orjson.loads(provenance_json).items()}
        except (orjson.JSONDecodeError, AttributeError):
            provenance = {}
        return MergeRecord(
            span=span,
            runtime=runtime,
            chain=[str(item) for item in attributes.get(ATTR_MERGE_CHAIN) or ()],
            cache=str(attributes.get(ATTR_MERGE_CACHE, "")),
            layer_fields=decode_layer_fields([str(item) for item in attributes.get(ATTR_MERGE_LAYER_FIELDS) or ()]),
            provenance=provenance,
            chain_refs=[str(item) for item in attributes.get(ATTR_MERGE_CHAIN_REFS) or ()],
            context=str(attributes[ATTR_MERGE_CONTEXT]) if ATTR_MERGE_CONTEXT in attributes else None,
        )

    def latest_merge(
        self, *, kind: str, namespace: str | None, name: str, cluster: str | None = None
    ) -> MergeRecord | None:
        """The newest merge of that runtime that records provenance (`namespace` None for a cluster-scoped one).

        Merge spans of cache hits carry no provenance: the hit reuses the merge whose span recorded it.
        """
        merges = [
            self.merge_record(span)
            for span in self.spans()
            if span.is_merge and ATTR_MERGE_PROVENANCE in span.attributes
        ]
        matching = [
            merge
            for merge in merges
            if merge.runtime.matches(cluster=cluster, kind=kind, namespace=namespace or "", name=name)
        ]
        return max(matching, key=lambda merge: (merge.span.end_ns, merge.span.start_ns), default=None)
