"""OpenTelemetry for omectl: provider setup, the OTLP-JSON-lines file exporter and reader, and the span vocabulary."""

from __future__ import annotations

from omectl.tracing.filelog import JsonLinesSpanExporter
from omectl.tracing.reader import MergeRecord, ObjectRef, SpanRecord, TraceStore
from omectl.tracing.setup import TracingHandle, configure_tracing, default_trace_file
from omectl.tracing.spans import merge_span, reconcile_span, set_result, watch_event_context

__all__ = [
    "JsonLinesSpanExporter",
    "MergeRecord",
    "ObjectRef",
    "SpanRecord",
    "TraceStore",
    "TracingHandle",
    "configure_tracing",
    "default_trace_file",
    "merge_span",
    "reconcile_span",
    "set_result",
    "watch_event_context",
]
