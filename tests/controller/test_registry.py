"""The work-kind registry (`omectl.controller.runtime.registry`) and how `FleetController.process` dispatches by it."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from opentelemetry.trace import NoOpTracer

from omectl.controller.runtime.manager import ClusterRuntime, FleetController
from omectl.controller.runtime.queue import WorkItem, WorkKey
from omectl.controller.runtime.registry import Domain, WorkKind, WorkKinds
from omectl.controller.runtime.view import ClusterView, DomainView
from omectl.fleet.registration import ClusterRegistration
from omectl.kube.cache import ObjectCache
from omectl.kube.informer import Informer

KIND = "example.io/Widget"
STATUS_KIND = "example.io/Widget.status"


class WidgetWatch(DomainView):
    """A domain watch with one cache and no informers (nothing to list)."""

    def __init__(self, cluster: ClusterView) -> None:
        super().__init__(cluster)
        self.cache = ObjectCache()

    @property
    def informers(self) -> list[Informer]:
        return []


class Resolver:
    """The `SharedResolver` the manager reports on."""

    stats = type("Stats", (), {"hits": 0, "misses": 0, "merges": 0})()

    def __len__(self) -> int:
        return 0

    async def forget_cluster(self, cluster: str) -> None:
        return None


def widget(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"kind": "Widget", "metadata": {"name": name, "namespace": "ns", "annotations": annotations or {}}}


class Recorded:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []

    def domain(self) -> Domain[WidgetWatch]:
        async def reconcile(watch: WidgetWatch, key: WorkKey, obj: dict[str, Any]) -> None:
            self.calls.append((watch.name, key.kind, obj["metadata"]["name"]))

        def get(watch: WidgetWatch, namespace: str, name: str) -> dict[str, Any] | None:
            return watch.cache.get(namespace, name)

        def paused(obj: Any) -> str | None:
            return "paused by its annotation" if obj["metadata"]["annotations"].get("paused") else None

        return Domain(
            "widgets",
            WidgetWatch,
            {
                KIND: WorkKind(get=get, reconcile=reconcile, paused=paused),
                STATUS_KIND: WorkKind(get=get, reconcile=reconcile, traced=False),
            },
        )


def controller_with_cluster(recorded: Recorded) -> tuple[FleetController, WidgetWatch]:
    controller = FleetController(WorkKinds([recorded.domain()]), Resolver(), tracer=NoOpTracer())
    client: Any = type("Client", (), {"server": "https://example"})()
    runtime = ClusterRuntime(
        ClusterRegistration(name="c1", kubeconfig_inline="{}"), client, controller.queue, controller.kinds
    )
    runtime.health.synced = True
    controller.clusters["c1"] = runtime
    return controller, runtime.watch(WidgetWatch)


def item(kind: str, name: str) -> WorkItem:
    return WorkItem(WorkKey("c1", kind, "ns", name), enqueued_at=0.0, queue_wait=0.0, retries=0, triggers=())


def test_a_work_kind_is_registered_once() -> None:
    recorded = Recorded()
    kinds = WorkKinds([recorded.domain()])
    assert kinds.kinds == [KIND, STATUS_KIND]
    assert kinds.handler("example.io/Other") is None
    with pytest.raises(ValueError, match="domain widgets registered twice"):
        kinds.add(recorded.domain())
    with pytest.raises(ValueError, match=f"work kind {KIND} registered by widgets and copy"):
        kinds.add(Domain("copy", WidgetWatch, {KIND: recorded.domain().kinds[KIND]}))


async def test_process_runs_the_registered_reconciler_with_the_domain_watch_of_the_keys_cluster() -> None:
    recorded = Recorded()
    controller, watch = controller_with_cluster(recorded)
    watch.cache.upsert(widget("w1"))
    await controller.process(item(KIND, "w1"))
    await controller.process(item(KIND, "gone"))  # not cached: nothing to do
    await controller.process(item(STATUS_KIND, "w1"))
    assert recorded.calls == [("c1", KIND, "w1"), ("c1", STATUS_KIND, "w1")]
    # bookkeeping work is not a reconcile: only the first counts
    assert controller.clusters["c1"].health.reconciles == 1


async def test_process_skips_a_paused_object_and_drops_an_unregistered_kind(caplog: pytest.LogCaptureFixture) -> None:
    recorded = Recorded()
    controller, watch = controller_with_cluster(recorded)
    watch.cache.upsert(widget("w1", {"paused": "true"}))
    with caplog.at_level(logging.DEBUG, logger="omectl.controller.runtime.manager"):
        await controller.process(item(KIND, "w1"))
        await controller.process(item("example.io/Other", "w1"))
    assert recorded.calls == []
    assert controller.clusters["c1"].health.reconciles == 0
    assert "c1:example.io/Widget:ns/w1: paused by its annotation" in caplog.text
    assert "no handler is registered for work kind example.io/Other" in caplog.text


def test_a_cluster_enqueues_through_its_view() -> None:
    controller, watch = controller_with_cluster(Recorded())
    watch.enqueue(WorkKey("c1", KIND, "ns", "w1"))
    assert controller.queue.depth("c1") == 1
