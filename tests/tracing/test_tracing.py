"""Tracing plumbing: provider setup and exporter choice, the reconcile/merge spans, and the OTLP-JSON-lines file."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest
from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode, TraceFlags, Tracer

from omectl.tracing import (
    JsonLinesSpanExporter,
    TraceStore,
    configure_tracing,
    merge_span,
    reconcile_span,
    set_result,
    watch_event_context,
)
from omectl.tracing import spans as names

OTEL_ENV = [
    "OTEL_SDK_DISABLED",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_TRACES_EXPORTER",
    "OTEL_TRACES_SAMPLER",
    "OMECTL_TRACE_FILE",
]


@pytest.fixture(autouse=True)
def clean_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in OTEL_ENV:
        monkeypatch.delenv(variable, raising=False)


def reconcile_with_merge(tracer: Tracer, *, cluster: str = "c1", rv: str = "7") -> None:
    events = [
        watch_event_context(cluster, "ServingRuntime", "default", "rt", "6"),
        watch_event_context(cluster, "ServingRuntime", "default", "rt", rv),
    ]
    with (
        reconcile_span(
            tracer,
            cluster=cluster,
            kind="ServingRuntime",
            namespace="default",
            name="rt",
            resource_version=rv,
            queue_wait=0.0125,
            retries=2,
            links=events,
        ),
        merge_span(
            tracer,
            chain=["base", "profile", "rt"],
            cache_hit=True,
            layer_fields={"base": 4, "profile": 2, "rt": 1},
            provenance={"spec.containers[name=ome-container].image": "base", "spec.replicas": "rt"},
        ) as span,
    ):
        span.add_event("layer-applied", {"layer": "profile", "fields": 2})


# --- spans -----------------------------------------------------------------------------------------------------


def test_reconcile_and_merge_spans_carry_attributes_parent_and_watch_links() -> None:
    memory = InMemorySpanExporter()
    handle = configure_tracing(exporter=memory)
    reconcile_with_merge(handle.tracer)
    handle.shutdown()

    by_name = {span.name: span for span in memory.get_finished_spans()}
    assert set(by_name) == {"reconcile ServingRuntime", "merge"}
    reconcile, merge = by_name["reconcile ServingRuntime"], by_name["merge"]
    assert reconcile.parent is None
    assert dict(reconcile.attributes or {}) == {
        names.ATTR_CLUSTER: "c1",
        names.ATTR_KIND: "ServingRuntime",
        names.ATTR_NAMESPACE: "default",
        names.ATTR_NAME: "rt",
        names.ATTR_RESOURCE_VERSION: "7",
        names.ATTR_QUEUE_WAIT_MS: 12.5,
        names.ATTR_RETRIES: 2,
        names.ATTR_RESULT: "success",
    }
    assert merge.parent is not None and merge.parent.span_id == reconcile.context.span_id
    assert merge.context.trace_id == reconcile.context.trace_id
    merge_attributes = dict(merge.attributes or {})
    assert merge_attributes[names.ATTR_MERGE_CHAIN] == ("base", "profile", "rt")
    assert merge_attributes[names.ATTR_MERGE_CACHE] == "hit"
    assert merge_attributes[names.ATTR_MERGE_LAYER_FIELDS] == ("base=4", "profile=2", "rt=1")
    assert orjson.loads(str(merge_attributes[names.ATTR_MERGE_PROVENANCE])) == {
        "spec.containers[name=ome-container].image": "base",
        "spec.replicas": "rt",
    }
    expected_links = [
        watch_event_context("c1", "ServingRuntime", "default", "rt", "6"),
        watch_event_context("c1", "ServingRuntime", "default", "rt", "7"),
    ]
    assert [(link.context.trace_id, link.context.span_id) for link in reconcile.links] == [
        (context.trace_id, context.span_id) for context in expected_links
    ]
    assert all(link.attributes == {"ot-span-reference-type": "follows-from"} for link in reconcile.links)


def test_watch_event_context_is_deterministic_valid_and_unsampled() -> None:
    first = watch_event_context("c1", "ServingRuntime", "default", "rt", "7")
    again = watch_event_context("c1", "ServingRuntime", "default", "rt", "7")
    other_rv = watch_event_context("c1", "ServingRuntime", "default", "rt", "8")
    other_cluster = watch_event_context("c2", "ServingRuntime", "default", "rt", "7")
    assert (first.trace_id, first.span_id) == (again.trace_id, again.span_id)
    assert len({(c.trace_id, c.span_id) for c in (first, other_rv, other_cluster)}) == 3
    assert first.is_valid
    assert first.trace_flags == TraceFlags.DEFAULT  # nothing was recorded for the event


def test_reconcile_span_is_a_root_even_inside_another_span() -> None:
    memory = InMemorySpanExporter()
    handle = configure_tracing(exporter=memory)
    with handle.tracer.start_as_current_span("outer"):
        reconcile_with_merge(handle.tracer)
    handle.shutdown()
    spans = {span.name: span for span in memory.get_finished_spans()}
    assert spans["reconcile ServingRuntime"].parent is None
    assert spans["reconcile ServingRuntime"].context.trace_id != spans["outer"].context.trace_id


def test_reconcile_span_marks_error_when_body_raises_and_keeps_an_explicit_result() -> None:
    memory = InMemorySpanExporter()
    handle = configure_tracing(exporter=memory)
    common: dict[str, Any] = {
        "cluster": "c1",
        "kind": "ClusterServingRuntime",
        "namespace": None,
        "resource_version": "1",
        "queue_wait": 0.0,
        "retries": 0,
        "links": [],
    }
    with pytest.raises(RuntimeError), reconcile_span(handle.tracer, name="broken", **common):
        raise RuntimeError("boom")
    with reconcile_span(handle.tracer, name="later", **common) as span:
        set_result(span, names.RESULT_REQUEUE)
    handle.shutdown()
    spans = {dict(span.attributes or {})[names.ATTR_NAME]: span for span in memory.get_finished_spans()}
    assert spans["broken"].attributes is not None and spans["broken"].attributes[names.ATTR_RESULT] == "error"
    assert spans["broken"].status.status_code is StatusCode.ERROR
    assert spans["later"].attributes is not None and spans["later"].attributes[names.ATTR_RESULT] == "requeue"
    assert names.ATTR_NAMESPACE not in (spans["later"].attributes or {})  # cluster-scoped: no namespace


def test_the_same_watch_event_twice_is_linked_once() -> None:
    memory = InMemorySpanExporter()
    handle = configure_tracing(exporter=memory)
    event = watch_event_context("c1", "ServingRuntime", "default", "rt", "9")
    with reconcile_span(
        handle.tracer,
        cluster="c1",
        kind="ServingRuntime",
        namespace="default",
        name="rt",
        resource_version="9",
        queue_wait=0.0,
        retries=0,
        links=[event, event],
    ):
        pass
    handle.shutdown()
    (span,) = memory.get_finished_spans()
    assert len(span.links) == 1


async def test_merge_in_a_task_is_a_child_and_async_shutdown_flushes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    handle = configure_tracing(file_path=path)

    async def merge_elsewhere() -> None:
        with merge_span(handle.tracer, chain=["rt"], cache_hit=False, layer_fields={"rt": 1}, provenance={}):
            await asyncio.sleep(0)

    with reconcile_span(
        handle.tracer,
        cluster="c1",
        kind="ServingRuntime",
        namespace="default",
        name="rt",
        resource_version="3",
        queue_wait=0.0,
        retries=0,
        links=[],
    ) as root:
        await asyncio.create_task(merge_elsewhere())
    await handle.ashutdown()

    store = TraceStore.load(path)
    trace_id = format(root.get_span_context().trace_id, "032x")
    (merge,) = [span for span in store.spans(trace_id) if span.name == "merge"]
    assert merge.parent_span_id == format(root.get_span_context().span_id, "016x")


# --- setup -----------------------------------------------------------------------------------------------------


def test_otel_sdk_disabled_produces_no_spans(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    memory = InMemorySpanExporter()
    handle = configure_tracing(exporter=memory, file_path=tmp_path / "t.jsonl")
    reconcile_with_merge(handle.tracer)
    handle.shutdown()
    assert handle.disabled
    assert memory.get_finished_spans() == ()
    assert not (tmp_path / "t.jsonl").exists()


def test_service_name_defaults_to_omectl_and_the_environment_overrides_it(monkeypatch: pytest.MonkeyPatch) -> None:
    default = configure_tracing(exporter=InMemorySpanExporter())
    assert default.provider.resource.attributes["service.name"] == "omectl"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "fleet-controller")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging")
    named = configure_tracing(exporter=InMemorySpanExporter())
    assert named.provider.resource.attributes["service.name"] == "fleet-controller"
    assert named.provider.resource.attributes["deployment.environment"] == "staging"
    default.shutdown()
    named.shutdown()


def test_file_exporter_is_the_default_and_follows_omectl_trace_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OMECTL_TRACE_FILE", str(tmp_path / "env" / "traces.jsonl"))
    handle = configure_tracing()
    assert isinstance(handle.exporter, JsonLinesSpanExporter)
    assert handle.exporter.path == tmp_path / "env" / "traces.jsonl"
    handle.shutdown()
    explicit = configure_tracing(file_path=tmp_path / "given.jsonl")
    assert isinstance(explicit.exporter, JsonLinesSpanExporter)
    assert explicit.exporter.path == tmp_path / "given.jsonl"
    explicit.shutdown()


def test_otlp_is_chosen_by_argument_or_by_the_standard_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    by_argument = configure_tracing(otlp_endpoint="http://collector:4318", file_path=tmp_path / "unused.jsonl")
    assert isinstance(by_argument.exporter, OTLPSpanExporter)
    assert by_argument.exporter._endpoint == "http://collector:4318/v1/traces"
    by_argument.shutdown()
    for variable in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.setenv(variable, "http://collector:4318/v1/traces")
        by_env = configure_tracing(file_path=tmp_path / "unused.jsonl")
        assert isinstance(by_env.exporter, OTLPSpanExporter), variable
        by_env.shutdown()
        monkeypatch.delenv(variable)
    assert not (tmp_path / "unused.jsonl").exists()


class _Collector(BaseHTTPRequestHandler):
    received: list[tuple[str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, bytes]]]]:
    received: list[tuple[str, bytes]] = []
    handler = type("Collector", (_Collector,), {"received": received})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_otlp_http_exporter_delivers_spans_to_a_collector(collector: tuple[str, list[tuple[str, bytes]]]) -> None:
    url, received = collector
    handle = configure_tracing(otlp_endpoint=url)
    reconcile_with_merge(handle.tracer)
    handle.shutdown()  # flushes: the request has been answered when this returns
    assert [path for path, _ in received] == ["/v1/traces"]
    request = ExportTraceServiceRequest.FromString(received[0][1])
    span_names = {span.name for rs in request.resource_spans for ss in rs.scope_spans for span in ss.spans}
    assert span_names == {"reconcile ServingRuntime", "merge"}


# --- file exporter and reader ----------------------------------------------------------------------------------


def tee_provider(path: Path, **exporter_options: Any) -> tuple[TracerProvider, InMemorySpanExporter]:
    """The same spans go to memory and to the file, so the file can be compared with what the SDK recorded."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(path, **exporter_options)))
    return provider, memory


def as_plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def test_spans_round_trip_through_the_file(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "traces.jsonl"  # parents are created
    provider, memory = tee_provider(path)
    tracer = provider.get_tracer("test")
    reconcile_with_merge(tracer)
    with pytest.raises(ValueError), tracer.start_as_current_span("failing"):
        raise ValueError("bad input")
    provider.shutdown()

    store = TraceStore.load(path)
    recorded: list[ReadableSpan] = list(memory.get_finished_spans())
    assert len(store) == len(recorded) == 3
    for span in recorded:
        context = span.get_span_context()
        assert context is not None
        loaded = store.span(format(context.trace_id, "032x"), format(context.span_id, "016x"))
        assert loaded is not None, span.name
        assert loaded.name == span.name
        assert loaded.parent_span_id == (format(span.parent.span_id, "016x") if span.parent else None)
        assert loaded.attributes == {key: as_plain(value) for key, value in (span.attributes or {}).items()}
        assert (loaded.start_ns, loaded.end_ns) == (span.start_time, span.end_time)
        assert [(link.trace_id, link.span_id, link.attributes) for link in loaded.links] == [
            (format(link.context.trace_id, "032x"), format(link.context.span_id, "016x"), dict(link.attributes or {}))
            for link in span.links
        ]
        assert [(event.name, event.time_ns, event.attributes) for event in loaded.events] == [
            (event.name, event.timestamp, dict(event.attributes or {})) for event in span.events
        ]
        assert (loaded.status_code, loaded.status_message) == (
            span.status.status_code.value,
            span.status.description or "",
        )


def test_a_partial_trailing_line_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider, _ = tee_provider(path)
    reconcile_with_merge(provider.get_tracer("test"))
    provider.shutdown()
    complete = TraceStore.load(path)
    whole_line = path.read_bytes().splitlines()[0]
    with path.open("ab") as file:
        file.write(whole_line[: len(whole_line) // 2])  # a writer stopped mid-append
    torn = TraceStore.load(path)
    assert [(s.span_id, s.name) for s in torn.spans()] == [(s.span_id, s.name) for s in complete.spans()]
    assert torn.skipped_lines == 1


def _ids_to_base64(value: Any) -> Any:
    """OTLP/JSON spells ids in hex where protobuf's JSON mapping expects base64; translate to check the rest."""
    if isinstance(value, dict):
        return {
            key: base64.b64encode(bytes.fromhex(item)).decode()
            if key in {"traceId", "spanId", "parentSpanId"}
            else _ids_to_base64(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_ids_to_base64(item) for item in value]
    return value


def test_each_batch_is_one_line_in_otlp_json_shape(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider, memory = tee_provider(path)
    reconcile_with_merge(provider.get_tracer("test", "1.2.3"))
    provider.shutdown()

    lines = path.read_bytes().splitlines()
    assert len(lines) == len(memory.get_finished_spans())  # SimpleSpanProcessor: one batch per span
    for line in lines:
        request = orjson.loads(line)
        (resource_spans,) = request["resourceSpans"]
        (scope_spans,) = resource_spans["scopeSpans"]
        assert scope_spans["scope"] == {"name": "test", "version": "1.2.3"}
        (span,) = scope_spans["spans"]
        assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
        int(span["traceId"], 16), int(span["spanId"], 16)
        assert isinstance(span["startTimeUnixNano"], str) and span["startTimeUnixNano"].isdigit()
        assert isinstance(span["endTimeUnixNano"], str) and span["endTimeUnixNano"].isdigit()
        assert span["kind"] == 1  # SPAN_KIND_INTERNAL
        # Every key and value type must be what the OTLP protobuf schema defines; unknown keys fail here.
        parsed = json_format.Parse(orjson.dumps(_ids_to_base64(request)), ExportTraceServiceRequest())
        parsed_span = parsed.resource_spans[0].scope_spans[0].spans[0]
        assert parsed_span.trace_id.hex() == span["traceId"]
        assert parsed_span.name == span["name"]
    merge_line = next(orjson.loads(line) for line in lines if b'"name":"merge"' in line)
    merge = merge_line["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert "parentSpanId" in merge and len(merge["parentSpanId"]) == 16
    chain = next(a for a in merge["attributes"] if a["key"] == names.ATTR_MERGE_CHAIN)
    assert chain["value"] == {"arrayValue": {"values": [{"stringValue": n} for n in ("base", "profile", "rt")]}}
    assert {"key": "fields", "value": {"intValue": "2"}} in merge["events"][0]["attributes"]


def test_rotation_keeps_one_old_file_and_the_reader_reads_both(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider, memory = tee_provider(path, max_bytes=1)  # every line after the first rotates the file
    tracer = provider.get_tracer("test")
    for index in range(3):
        with tracer.start_as_current_span(f"span-{index}"):
            pass
    provider.shutdown()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.jsonl", "traces.jsonl.1"]
    store = TraceStore.load(path)
    assert [span.name for span in store.spans()] == ["span-1", "span-2"]
    assert len(memory.get_finished_spans()) == 3


def test_concurrent_exports_never_interleave_lines(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("test")
    for index in range(4):
        with tracer.start_as_current_span(f"span-{index}", attributes={"payload": "x" * 5000}):
            pass
    spans = memory.get_finished_spans()
    exporter = JsonLinesSpanExporter(path)

    def export_many() -> None:
        for _ in range(25):
            assert exporter.export(spans) is SpanExportResult.SUCCESS

    threads = [threading.Thread(target=export_many) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    exporter.shutdown()
    lines = path.read_bytes().splitlines()
    assert len(lines) == 200
    assert all(len(orjson.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) == 4 for line in lines)


def test_export_after_shutdown_fails_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    provider, memory = tee_provider(path)
    with provider.get_tracer("test").start_as_current_span("one"):
        pass
    provider.shutdown()
    exporter = JsonLinesSpanExporter(path)
    exporter.shutdown()
    assert exporter.export(memory.get_finished_spans()) is SpanExportResult.FAILURE
    assert len(path.read_bytes().splitlines()) == 1
