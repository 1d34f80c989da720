"""Builds omectl's OpenTelemetry tracer provider and picks where its spans go.

The choice, first match wins: an exporter handed in (tests pass an `InMemorySpanExporter`); OTLP/HTTP when an
endpoint is given or `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set; else OTLP-JSON
lines appended to a file that `omectl trace` reads. `OTEL_SDK_DISABLED=true` turns tracing off entirely and
`OTEL_TRACES_EXPORTER=none` keeps spans from being exported; `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
`OTEL_TRACES_SAMPLER` and `OTEL_BSP_*` are honoured as the SDK defines them.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from omectl import __version__
from omectl.tracing.filelog import JsonLinesSpanExporter

TRACE_FILE_ENV = "OMECTL_TRACE_FILE"
DEFAULT_TRACE_FILE = Path(".omectl/traces.jsonl")
TRACES_PATH = "/v1/traces"
INSTRUMENTATION_NAME = "omectl"


def default_trace_file() -> Path:
    """Where traces are written and read when no path is given: `$OMECTL_TRACE_FILE` or `.omectl/traces.jsonl`."""
    configured = os.environ.get(TRACE_FILE_ENV, "").strip()
    return Path(configured) if configured else DEFAULT_TRACE_FILE


def sdk_disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


@dataclass
class TracingHandle:
    """A configured tracer provider; `shutdown()` (or `await ashutdown()`) flushes pending spans and stops it."""

    provider: TracerProvider
    tracer: trace.Tracer
    exporter: SpanExporter | None
    disabled: bool
    _shut_down: bool = field(default=False, init=False, repr=False)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Flush and stop; later calls do nothing."""
        if self._shut_down:
            return
        self._shut_down = True
        self.provider.force_flush()
        self.provider.shutdown()

    async def ashutdown(self) -> None:
        """Shut down without blocking the event loop (the flush may wait on the network or the disk)."""
        await asyncio.to_thread(self.shutdown)

    def __enter__(self) -> TracingHandle:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    async def __aenter__(self) -> TracingHandle:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.ashutdown()


def _resource(service_name: str) -> Resource:
    # The environment names the service when it says so; the argument is the fallback.
    from_env = os.environ.get("OTEL_SERVICE_NAME", "").strip() or any(
        item.split("=", 1)[0].strip() == SERVICE_NAME
        for item in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", "").split(",")
    )
    return Resource.create({} if from_env else {SERVICE_NAME: service_name})


def _otlp_exporter(otlp_endpoint: str | None) -> SpanExporter | None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    if otlp_endpoint:
        # Like OTEL_EXPORTER_OTLP_ENDPOINT, a base URL gets the traces path appended.
        endpoint = (
            otlp_endpoint
            if otlp_endpoint.rstrip("/").endswith(TRACES_PATH)
            else otlp_endpoint.rstrip("/") + TRACES_PATH
        )
        return OTLPSpanExporter(endpoint=endpoint)
    if (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    ):
        return OTLPSpanExporter()
    return None


def configure_tracing(
    *,
    service_name: str = "omectl",
    file_path: Path | None = None,
    otlp_endpoint: str | None = None,
    exporter: SpanExporter | None = None,
    file_max_bytes: int | None = None,
    set_global: bool = False,
) -> TracingHandle:
    """A tracer provider with a `BatchSpanProcessor` in front of the chosen exporter (see the module docstring).

    The provider is private to the handle unless `set_global` installs it as OpenTelemetry's global provider.
    """
    disabled = sdk_disabled()
    provider = TracerProvider(resource=_resource(service_name))
    chosen: SpanExporter | None = None
    if not disabled:
        if exporter is not None:
            chosen = exporter
        elif os.environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() != "none":
            chosen = _otlp_exporter(otlp_endpoint) or JsonLinesSpanExporter(
                file_path or default_trace_file(), max_bytes=file_max_bytes
            )
        if chosen is not None:
            provider.add_span_processor(BatchSpanProcessor(chosen))
    if set_global:
        trace.set_tracer_provider(provider)
    tracer = provider.get_tracer(INSTRUMENTATION_NAME, __version__)
    return TracingHandle(provider=provider, tracer=tracer, exporter=chosen, disabled=disabled)
