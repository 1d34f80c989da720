"""Structured logs: `text` or `json` lines carrying the object being reconciled and its trace, with secrets scrubbed.

The fields of the reconcile in progress (`cluster`, `kind`, `namespace`, `name`) live in a context variable that the
work queue binds around each reconcile (`bind` / `unbind`, about a microsecond); the trace id and span id come from
the current OpenTelemetry span. A record's own `extra={"cluster": ..., "object_name": ...}` wins over the context.
Every line goes through `omectl.observability.redact.scrub`, exception text included.
"""

from __future__ import annotations

import contextvars
import datetime
import logging
import sys
from typing import IO, Any, Literal

import orjson
from opentelemetry import trace

from omectl.observability.redact import scrub

__all__ = [
    "CONTEXT_FIELDS",
    "JsonFormatter",
    "LogFormat",
    "TextFormatter",
    "bind",
    "configure_logging",
    "current_fields",
    "note_span",
    "set_field",
    "unbind",
]

LogFormat = Literal["text", "json"]
CONTEXT_FIELDS = ("cluster", "kind", "namespace", "name")

_EXTRA_FIELDS = (("cluster", "cluster"), ("kind", "kind"), ("namespace", "namespace"), ("trace_id", "trace_id"))

_fields: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar("omectl_log_fields", default=None)


def bind(**fields: str) -> contextvars.Token[dict[str, str] | None]:
    """Set the log fields of the work in progress (a fresh dict); give the token back to `unbind`."""
    return _fields.set(fields)


def unbind(token: contextvars.Token[dict[str, str] | None]) -> None:
    _fields.reset(token)


def set_field(key: str, value: str) -> None:
    """Add one field to the bound fields (visible to whoever bound them); binds a new dict when none is bound."""
    current = _fields.get()
    if current is None:
        _fields.set({key: value})
    else:
        current[key] = value


def current_fields() -> dict[str, str]:
    """The bound fields plus the current span's `trace_id` and `span_id`, when there is a span."""
    fields = dict(_fields.get() or {})
    context = trace.get_current_span().get_span_context()
    if context.is_valid:
        fields["trace_id"] = format(context.trace_id, "032x")
        fields["span_id"] = format(context.span_id, "016x")
    return fields


def _record_fields(record: logging.LogRecord) -> dict[str, str]:
    fields = current_fields()
    # extra={...} of the record (`object_name`: a LogRecord has a `name` of its own, the logger's)
    for key, extra in (*_EXTRA_FIELDS, ("name", "object_name")):
        value = record.__dict__.get(extra)
        if value is not None:
            fields[key] = str(value)
    return {key: value for key, value in fields.items() if value}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, the context fields, `exc` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        document: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": scrub(record.getMessage()),
        }
        document.update(_record_fields(record))
        if record.exc_info:
            document["exc"] = scrub(self.formatException(record.exc_info))
        elif record.exc_text:
            document["exc"] = scrub(record.exc_text)
        if record.stack_info:
            document["stack"] = scrub(self.formatStack(record.stack_info))
        return orjson.dumps(document).decode()


class TextFormatter(logging.Formatter):
    """`time LEVEL logger: message [cluster=.. kind=.. object=ns/name trace=..]`, scrubbed."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = _record_fields(record)
        if fields:
            parts = [f"{key}={fields[key]}" for key in ("cluster", "kind") if key in fields]
            if "name" in fields:
                where = f"{fields['namespace']}/{fields['name']}" if fields.get("namespace") else fields["name"]
                parts.append(f"object={where}")
            if "trace_id" in fields:
                parts.append(f"trace={fields['trace_id']}")
            if parts:
                first, newline, rest = line.partition("\n")
                line = f"{first} [{' '.join(parts)}]{newline}{rest}"
        return scrub(line)


_HANDLER_MARK = "_omectl_handler"


def configure_logging(level: str = "INFO", fmt: LogFormat = "text", stream: IO[str] | None = None) -> logging.Handler:
    """Send the root logger's records at `level` and above to `stream` (stderr) as `fmt` lines.

    Replaces the handler an earlier call installed (and nothing else), so it may be called again.
    """
    if fmt not in ("text", "json"):
        raise ValueError(f"log format must be text or json, not {fmt!r}")
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    setattr(handler, _HANDLER_MARK, True)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler


def note_span(span: Any) -> None:
    """Bind the trace id of `span` to the work in progress, for log lines written after the span has ended."""
    bound = _fields.get()
    if bound is None:
        return  # nothing bound: the current span gives the trace id while it lasts
    context = span.get_span_context()
    if context.is_valid:
        bound["trace_id"] = format(context.trace_id, "032x")
