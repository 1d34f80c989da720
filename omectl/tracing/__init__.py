"""OpenTelemetry for omectl: provider setup, the OTLP-JSON-lines file exporter and reader, and the span vocabulary."""

from __future__ import annotations

from .filelog import JsonLinesSpanExporter
from .reader import MergeRecord, ObjectRef, SpanRecord, TraceStore
from .setup import TracingHandle, configure_tracing, default_trace_file
from .spans import merge_span, reconcile_span, set_result, watch_event_context

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
