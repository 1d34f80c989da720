"""Where an engine's readiness comes from after its apply: the informer cache once it holds the applied render
(the apply's answer then stays undecoded), else the answer, else whichever of the two has the newer spec."""

from __future__ import annotations

from typing import Any, cast

import orjson

from omectl.controller.ome.engine import PendingStatus
from omectl.controller.ome.watch import OmeWatch
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
