"""Where an engine's readiness comes from after its apply: the informer cache once it holds the applied render,
else the answer, else whichever of the two has the newer spec; what a decided status keeps of an answer."""

from __future__ import annotations

from typing import Any, cast

import orjson

from omectl.controller.ome.engine import PendingStatus
from omectl.controller.ome.watch import WORKLOAD_TRANSFORM, OmeWatch
from omectl.controller.runtime.apply import RENDER_HASH, Applied
from omectl.kube.cache import ObjectCache

NAME, NAMESPACE = "llama-engine", "team-a"
RENDERED = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"component": "engine"}},
}


class Workloads:
    """The one thing `PendingStatus.readiness` asks of a cluster: its workload caches."""

    def __init__(self, cache: ObjectCache) -> None:
        self.cache = cache

    def workload_cache(self, kind: str) -> ObjectCache | None:
        return self.cache if kind == "Deployment" else None


def deployment(digest: str, generation: int, observed: int, available: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "generation": generation,
            "annotations": {RENDER_HASH: digest},
        },
        "status": {"observedGeneration": observed, "conditions": [{"type": "Available", "status": available}]},
    }


def engine_ready(answer: Applied, cached: dict[str, Any] | None) -> str:
    cache = ObjectCache()
    if cached is not None:
        cache.upsert(cached)
    pending = PendingStatus({}, {}, [RENDERED], {("Deployment", NAME): answer})
    ready = pending.readiness(cast("OmeWatch", Workloads(cache)))
    [condition] = [c for c in ready.conditions if c["type"] == "EngineReady"]
    return condition["status"]


def test_a_cache_holding_the_applied_render_answers_and_the_answer_is_never_decoded() -> None:
    undecodable = Applied("new", None, b"not JSON: decoding it would raise")
    assert engine_ready(undecodable, deployment("new", 2, 2, "True")) == "True"


def test_a_cache_behind_the_apply_yields_to_the_answer_with_the_newer_spec() -> None:
    answer = Applied("new", None, orjson.dumps(deployment("new", 3, 2, "True")))
    assert engine_ready(answer, deployment("old", 2, 2, "True")) == "Unknown"  # generation 3 not observed yet


def test_without_a_cached_copy_the_answer_decides() -> None:
    assert engine_ready(Applied("new", None, orjson.dumps(deployment("new", 1, 1, "False"))), None) == "False"


def test_an_unchanged_render_reads_the_cache() -> None:
    held = deployment("same", 4, 4, "True")
    assert engine_ready(Applied("same", held, None), deployment("same", 4, 4, "False")) == "False"


def test_a_waiting_status_keeps_of_an_answer_what_the_cache_keeps_and_reads_the_same_readiness() -> None:
    for answer, cached in (
        (deployment("new", 1, 1, "False"), None),
        (deployment("new", 3, 2, "True"), deployment("old", 2, 2, "True")),
    ):
        applied = Applied("new", None, orjson.dumps(answer))
        kept = applied.kept(OmeWatch.status_transform("Deployment"))
        assert kept.wrote and kept.digest == "new"
        assert kept.object() == WORKLOAD_TRANSFORM(orjson.loads(orjson.dumps(answer)))
        assert "spec" not in kept.object()
        assert engine_ready(kept, cached) == engine_ready(applied, cached)
    # a Service's answer: nothing reads it afterwards, so nothing of it is kept
    service = Applied("svc", None, b'{"kind": "Service", "metadata": {"name": "s"}}').kept(
        OmeWatch.status_transform("Service")
    )
    assert service.wrote and service.object() == {}
    # an unchanged render keeps the cached object it read
    held = deployment("same", 4, 4, "True")
    assert Applied("same", held, None).kept(OmeWatch.status_transform("Deployment")).object() is held
