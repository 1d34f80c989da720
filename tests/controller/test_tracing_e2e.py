"""The spans a running controller records: one root span per reconcile, linked to its watch events, and one merge span.

`ControllerApp` runs on the test's loop against an embedded cluster with an `InMemorySpanExporter`. The test waits
for store commits, watch events reaching the controller's informers and ended spans (never sleeps), then
force-flushes the exporter and reads what the controller recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.controller.ome.watch import OmeWatch
from omectl.controller.runtime.manager import ClusterRuntime
from omectl.settings import Settings
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet
from omectl.tracing import spans as names
from omectl.tracing.spans import decode_layer_fields, watch_event_context

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "tr-1"
NAMESPACE = "default"
PROFILE = "sglang-profile"
CHILD = "sglang-llama-3-2-3b"
PROFILE_IMAGE = "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
SR_KIND = "ome.io/ServingRuntime"
CSR_KIND = "ome.io/ClusterServingRuntime"
OPTS = WriteOptions(field_manager="tracing-test")
LABEL_EDITS = 10
pytestmark = pytest.mark.xdist_group("e2e")


class EndedSpans(SpanProcessor):
    """Wakes the test whenever a span ends (spans end on the loop's thread, so an asyncio.Event is safe)."""

    def __init__(self, changed: asyncio.Event) -> None:
        self.changed = changed
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)
        self.changed.set()

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@dataclass
class Traced:
    server: EmbeddedAPIServer
    app: ControllerApp
    exporter: InMemorySpanExporter
    ended: EndedSpans
    changed: asyncio.Event
    # (type, kind, name, resourceVersion) of every watch event the controller's informers delivered
    watch_events: list[tuple[str, str, str, str]] = field(default_factory=list)

    async def until(self, predicate: Callable[[], bool], timeout: float = 30) -> None:
        """Re-check `predicate` after every store commit, delivered watch event and ended span."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    def reason(self, plural: str, namespace: str, name: str) -> str:
        obj = self.server.api.store.get(("ome.io", plural), namespace, name) or {}
        conditions = (obj.get("status") or {}).get("conditions") or []
        return next((c.get("reason", "") for c in conditions if c.get("type") == "InheritanceReady"), "")

    def ended_reconcile(self, kind: str, name: str) -> bool:
        return any(
            span.name == names.RECONCILE_SPAN_PREFIX + kind and attrs(span).get(names.ATTR_NAME) == name
            for span in self.ended.ended
        )


@pytest.fixture
async def traced(tmp_path: Path) -> AsyncIterator[Traced]:
    sim = await EmbeddedFleet(1, name_prefix="tr-").start()
    try:
        await sim.apply([ROOT / "deploy" / "crds"])
        kubeconfig = sim.write_kubeconfig(tmp_path / "fleet.kubeconfig")
        write_registrations(tmp_path / "clusters", kubeconfig, [CLUSTER])
        settings = Settings.load(
            webhook_port=0,
            clusters_dir=tmp_path / "clusters",
            trace_file=tmp_path / "traces.jsonl",
            install_webhooks=False,
        )
        changed = asyncio.Event()
        exporter = InMemorySpanExporter()
        app = ControllerApp(settings, exporter=exporter)
        ended = EndedSpans(changed)
        app.tracing.provider.add_span_processor(ended)
        traced = Traced(sim.servers[0], app, exporter, ended, changed)

        async def observe(cluster: ClusterRuntime) -> None:
            ome = cluster.watch(OmeWatch)
            for informer, kind in ((ome.serving, SR_KIND), (ome.cluster_serving, CSR_KIND)):

                def on_event(
                    type_: str, obj: dict[str, Any], _old: Any, _initial: bool = False, kind: str = kind
                ) -> None:
                    meta = obj["metadata"]
                    traced.watch_events.append((type_, kind, meta["name"], meta.get("resourceVersion", "")))
                    changed.set()

                informer.add_handler(on_event)

        app.controller.on_cluster_added.append(observe)
        traced.server.api.store.listeners.append(lambda _event: changed.set())
        await app.start()
        try:
            await app.wait_synced(30)
            yield traced
        finally:
            await app.stop()
    finally:
        await sim.stop()


def attrs(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes, typed loosely for the assertions."""
    return dict(span.attributes or {})


async def create(server: EmbeddedAPIServer, plural: str, obj: dict[str, Any]) -> dict[str, Any]:
    rt = server.api.types.lookup("ome.io", "v1beta1", plural)
    assert rt is not None
    return (await server.api.create(rt, obj["metadata"].get("namespace", ""), obj, OPTS)).obj


async def label(server: EmbeddedAPIServer, name: str, value: str) -> str:
    """A metadata-only edit of the child (its generation stays): returns the new resourceVersion."""
    rt = server.api.types.lookup("ome.io", "v1beta1", "servingruntimes")
    assert rt is not None
    patch = orjson.dumps({"metadata": {"labels": {"edit": value}}})
    result = await server.api.patch(rt, NAMESPACE, name, "application/merge-patch+json", patch, OPTS)
    return str(result.obj["metadata"]["resourceVersion"])


def profile() -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": PROFILE, "annotations": {"ome.io/runtime-profile": "true"}},
        "spec": {
            "disabled": True,
            "engineConfig": {
                "runner": {
                    "name": "ome-container",
                    "image": PROFILE_IMAGE,
                    "command": ["python3", "-m", "sglang.launch_server"],
                }
            },
        },
    }


def child() -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": CHILD, "namespace": NAMESPACE, "annotations": {"ome.io/inherit-from": PROFILE}},
        "spec": {
            "disabled": False,
            "engineConfig": {"runner": {"name": "ome-container", "args": ["--tp-size=1", "--mem-frac=0.9"]}},
        },
    }


async def test_a_reconcile_records_a_linked_root_span_and_a_merge_span(traced: Traced) -> None:
    await create(traced.server, "clusterservingruntimes", profile())
    await traced.until(
        lambda: (
            traced.reason("clusterservingruntimes", "", PROFILE) == "Resolved"
            and traced.ended_reconcile(CSR_KIND, PROFILE)
        )
    )
    created = await create(traced.server, "servingruntimes", child())
    created_rv = created["metadata"]["resourceVersion"]
    await traced.until(
        lambda: (
            traced.reason("servingruntimes", NAMESPACE, CHILD) == "Resolved" and traced.ended_reconcile(SR_KIND, CHILD)
        )
    )

    # metadata-only edits: watch events the controller receives, none of which may become a span
    edit_rvs = [await label(traced.server, CHILD, str(i)) for i in range(LABEL_EDITS)]
    await traced.until(lambda: ("MODIFIED", SR_KIND, CHILD, edit_rvs[-1]) in traced.watch_events)
    queue = traced.app.controller.queue
    await asyncio.wait_for(queue.drain(), 10)
    assert (len(queue), queue.in_flight, queue.delayed) == (0, 0, 0)

    assert traced.app.tracing.force_flush()
    spans = traced.exporter.get_finished_spans()
    reconciles = [s for s in spans if s.name.startswith(names.RECONCILE_SPAN_PREFIX)]
    merges = [s for s in spans if s.name == names.MERGE_SPAN_NAME]

    # the child's reconcile: a root span with every attribute docs/architecture.md names
    [root] = [s for s in reconciles if s.name == f"reconcile {SR_KIND}" and attrs(s)[names.ATTR_NAME] == CHILD]
    assert root.parent is None
    attributes = attrs(root)
    assert attributes[names.ATTR_CLUSTER] == CLUSTER
    assert attributes[names.ATTR_KIND] == SR_KIND
    assert attributes[names.ATTR_NAMESPACE] == NAMESPACE
    assert attributes[names.ATTR_RESOURCE_VERSION] == created_rv
    assert attributes[names.ATTR_RESULT] == names.RESULT_SUCCESS
    assert isinstance(attributes[names.ATTR_QUEUE_WAIT_MS], float)
    assert attributes[names.ATTR_QUEUE_WAIT_MS] >= 0
    assert attributes[names.ATTR_RETRIES] == 0

    # linked (not parented) to the watch event that enqueued it
    assert root.links
    expected_link = watch_event_context(CLUSTER, SR_KIND, NAMESPACE, CHILD, created_rv)
    assert {(link.context.trace_id, link.context.span_id) for link in root.links} == {
        (expected_link.trace_id, expected_link.span_id)
    }
    assert all(
        (link.attributes or {}).get(names.ATTR_LINK_REFERENCE_TYPE) == names.LINK_FOLLOWS_FROM for link in root.links
    )

    # its merge: a child span with the chain root first, the cache outcome, layer counts and provenance
    [merge] = [s for s in merges if s.parent is not None and s.parent.span_id == root.context.span_id]
    assert merge.context.trace_id == root.context.trace_id
    merge_attributes = attrs(merge)
    assert tuple(merge_attributes[names.ATTR_MERGE_CHAIN]) == (PROFILE, CHILD)
    # the chain with kinds and namespaces, and where its parents were looked up: names alone are ambiguous
    assert tuple(merge_attributes[names.ATTR_MERGE_CHAIN_REFS]) == (
        f"ClusterServingRuntime/{PROFILE}",
        f"ServingRuntime/{NAMESPACE}/{CHILD}",
    )
    assert merge_attributes[names.ATTR_MERGE_CONTEXT] == f"namespace {NAMESPACE}"
    assert merge_attributes[names.ATTR_MERGE_CACHE] == names.CACHE_MISS  # this chain had never been merged
    assert merge_attributes[names.ATTR_MERGE_RUNTIME_KIND] == "ServingRuntime"
    assert merge_attributes[names.ATTR_MERGE_RUNTIME_NAMESPACE] == NAMESPACE
    assert merge_attributes[names.ATTR_MERGE_RUNTIME_NAME] == CHILD
    provenance = json.loads(merge_attributes[names.ATTR_MERGE_PROVENANCE])
    assert provenance["engineConfig.runner.image"] == PROFILE
    assert provenance["engineConfig.runner.command"] == PROFILE
    assert provenance["engineConfig.runner.args"] == CHILD
    assert provenance["disabled"] == CHILD  # the child's `disabled: false` overrides the profile's
    layer_fields = decode_layer_fields(merge_attributes[names.ATTR_MERGE_LAYER_FIELDS])
    assert list(layer_fields) == [PROFILE, CHILD]
    assert layer_fields == {layer: Counter(provenance.values())[layer] for layer in (PROFILE, CHILD)}

    # no span per watch event: only reconciles and their merges, and no span for any label edit
    assert len(reconciles) + len(merges) == len(spans)
    assert len(reconciles) == traced.app.controller.clusters[CLUSTER].health.reconciles
    assert len(merges) <= len(reconciles)
    assert len(traced.watch_events) > len(spans)
    assert not {attrs(s)[names.ATTR_RESOURCE_VERSION] for s in reconciles} & set(edit_rvs)


async def test_the_profile_reconcile_merges_a_chain_of_one(traced: Traced) -> None:
    created = await create(traced.server, "clusterservingruntimes", profile())
    await traced.until(lambda: traced.ended_reconcile(CSR_KIND, PROFILE))
    assert traced.app.tracing.force_flush()
    spans = traced.exporter.get_finished_spans()
    [root] = [s for s in spans if s.name == f"reconcile {CSR_KIND}"]
    assert root.parent is None
    assert names.ATTR_NAMESPACE not in attrs(root)  # cluster-scoped: no namespace attribute
    assert attrs(root)[names.ATTR_RESOURCE_VERSION] == created["metadata"]["resourceVersion"]
    [merge] = [s for s in spans if s.name == names.MERGE_SPAN_NAME]
    assert merge.parent is not None and merge.parent.span_id == root.context.span_id
    assert tuple(attrs(merge)[names.ATTR_MERGE_CHAIN]) == (PROFILE,)
    assert attrs(merge)[names.ATTR_MERGE_CONTEXT] == "cluster-only"
    provenance = json.loads(attrs(merge)[names.ATTR_MERGE_PROVENANCE])
    assert set(provenance.values()) == {PROFILE}
    assert provenance["engineConfig.runner.image"] == PROFILE
