"""A span exporter that appends OTLP/JSON `ExportTraceServiceRequest` lines to a file.

Each exported batch becomes one line in the shape an OpenTelemetry Collector `file` exporter writes (hex ids,
nanosecond times as strings, attributes as OTLP `AnyValue` JSON), so the file is readable by `omectl trace`
and by standard OpenTelemetry tooling alike.
"""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from opentelemetry.trace import SpanContext, TraceState

from omectl.observability.redact import known_secrets

# OTLP span flags (trace.proto): the low byte carries W3C trace flags; these two bits say whether the
# parent (or linked) context is known to be remote.
FLAG_HAS_IS_REMOTE = 0x100
FLAG_IS_REMOTE = 0x200

ROTATED_SUFFIX = ".1"


def encode_any_value(value: Any) -> dict[str, Any]:
    """One attribute value as OTLP/JSON `AnyValue`."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # int64 is a string in the protobuf JSON mapping
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes | bytearray):
        return {"bytesValue": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": encode_attributes(value)}}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [encode_any_value(item) for item in value]}}
    return {"stringValue": str(value)}


def encode_attributes(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Attributes as an OTLP/JSON list of `KeyValue`."""
    if not attributes:
        return []
    return [{"key": key, "value": encode_any_value(value)} for key, value in attributes.items()]


def _context_flags(context: SpanContext | None) -> int:
    if context is None:
        return 0
    return int(context.trace_flags) | FLAG_HAS_IS_REMOTE | (FLAG_IS_REMOTE if context.is_remote else 0)


def _with_optional(target: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Add fields that are set; protobuf JSON leaves out empty and zero values."""
    for key, value in fields.items():
        if value:
            target[key] = value
    return target


def _trace_state_header(state: TraceState) -> str:
    # nearly every span's trace state is empty; the SDK's to_header() costs several times this test
    return state.to_header() if state else ""


def encode_span(span: ReadableSpan) -> dict[str, Any]:
    """One SDK span as an OTLP/JSON `Span`."""
    context = span.get_span_context()
    assert context is not None
    encoded: dict[str, Any] = {
        "traceId": format(context.trace_id, "032x"),
        "spanId": format(context.span_id, "016x"),
    }
    _with_optional(encoded, traceState=_trace_state_header(context.trace_state))
    if span.parent is not None:
        encoded["parentSpanId"] = format(span.parent.span_id, "016x")
    parent_is_remote = span.parent is not None and span.parent.is_remote
    encoded["flags"] = int(context.trace_flags) | FLAG_HAS_IS_REMOTE | (FLAG_IS_REMOTE if parent_is_remote else 0)
    encoded["name"] = span.name
    encoded["kind"] = span.kind.value + 1  # SDK INTERNAL=0 … ; OTLP SPAN_KIND_INTERNAL=1 …
    encoded["startTimeUnixNano"] = str(span.start_time or 0)
    encoded["endTimeUnixNano"] = str(span.end_time or 0)
    _with_optional(
        encoded,
        attributes=encode_attributes(span.attributes),
        droppedAttributesCount=span.dropped_attributes,
        events=[
            _with_optional(
                {"timeUnixNano": str(event.timestamp), "name": event.name},
                attributes=encode_attributes(event.attributes),
                droppedAttributesCount=getattr(event, "dropped_attributes", 0),
            )
            for event in span.events
        ],
        droppedEventsCount=span.dropped_events,
        links=[
            _with_optional(
                {
                    "traceId": format(link.context.trace_id, "032x"),
                    "spanId": format(link.context.span_id, "016x"),
                },
                traceState=_trace_state_header(link.context.trace_state),
                attributes=encode_attributes(link.attributes),
                droppedAttributesCount=link.dropped_attributes,
                flags=_context_flags(link.context),
            )
            for link in span.links
        ],
        droppedLinksCount=span.dropped_links,
    )
    encoded["status"] = _with_optional({}, message=span.status.description, code=span.status.status_code.value)
    return encoded


def encode_request(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """A batch of spans as one OTLP/JSON `ExportTraceServiceRequest`, grouped by resource, then by scope."""
    by_resource: dict[int, tuple[Resource, dict[tuple[str, str, str], list[dict[str, Any]]]]] = {}
    scopes: dict[tuple[str, str, str], Any] = {}
    for span in spans:
        resource = span.resource
        _, by_scope = by_resource.setdefault(id(resource), (resource, {}))
        scope = span.instrumentation_scope
        scope_key = (scope.name, scope.version or "", scope.schema_url or "") if scope else ("", "", "")
        scopes[scope_key] = scope
        by_scope.setdefault(scope_key, []).append(encode_span(span))
    resource_spans = []
    for resource, by_scope in by_resource.values():
        scope_spans = []
        for scope_key, encoded_spans in by_scope.items():
            scope = scopes[scope_key]
            scope_json = _with_optional(
                {"name": scope_key[0]},
                version=scope_key[1],
                attributes=encode_attributes(getattr(scope, "attributes", None)),
            )
            scope_spans.append(_with_optional({"scope": scope_json, "spans": encoded_spans}, schemaUrl=scope_key[2]))
        resource_spans.append(
            _with_optional(
                {"resource": {"attributes": encode_attributes(resource.attributes)}, "scopeSpans": scope_spans},
                schemaUrl=resource.schema_url,
            )
        )
    return {"resourceSpans": resource_spans}


class JsonLinesSpanExporter(SpanExporter):
    """Appends one OTLP/JSON line per exported batch to `path`; thread-safe.

    With `max_bytes`, a line that would grow the file past that size first moves the file to `<path>.1`
    (replacing an older one), so at most one old file is kept.
    """

    def __init__(self, path: Path | str, *, max_bytes: int | None = None) -> None:
        self.path = Path(path)
        self.rotated_path = self.path.with_name(self.path.name + ROTATED_SUFFIX)
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._size = 0
        self._shut_down = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        line = orjson.dumps(encode_request(spans)) + b"\n"
        if len(known_secrets()):  # a credential the process knows never reaches the trace file
            line = known_secrets().scrub(line.decode()).encode()
        with self._lock:
            if self._shut_down:
                return SpanExportResult.FAILURE
            try:
                self._append(line)
            except OSError:
                self._close()
                return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _append(self, line: bytes) -> None:
        if self._fd is None:
            self._open()
        if self.max_bytes is not None and self._size > 0 and self._size + len(line) > self.max_bytes:
            self._close()
            os.replace(self.path, self.rotated_path)
            self._open()
        assert self._fd is not None
        # One write per line with O_APPEND, so concurrent writers never interleave inside a line.
        view = memoryview(line)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size += len(line)

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # spans quote object names, fields and server messages: readable by its owner only, like a kubeconfig
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.fchmod(self._fd, 0o600)  # also a file made before this rule
        self._size = os.fstat(self._fd).st_size

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is written straight to the file

    def shutdown(self) -> None:
        with self._lock:
            self._shut_down = True
            self._close()
