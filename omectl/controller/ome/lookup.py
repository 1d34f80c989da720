"""Runtime lookups over a cluster's informer caches, and the reverse indexes that `omectl.core.ome.reach` walks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from omectl.core.ome.runtimes import INHERIT_FROM_ANNOTATION, SERVING_RUNTIME, RuntimeKind

INHERIT_INDEX = "inherit-from"
RUNTIME_INDEX = "runtime"
MODEL_INDEX = "model"


class RuntimeCache(Protocol):
    def get(self, namespace: str, name: str) -> dict[str, Any] | None: ...

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]: ...


def inherit_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """Index value for the reverse index: the parent a runtime names."""
    parent = ((obj.get("metadata") or {}).get("annotations") or {}).get(INHERIT_FROM_ANNOTATION, "")
    return [parent] if parent else []


def runtime_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """Index value for InferenceServices: the runtime named in `spec.runtime.name`."""
    runtime = ((obj.get("spec") or {}).get("runtime") or {}).get("name", "")
    return [runtime] if runtime else []


def model_index(obj: Mapping[str, Any]) -> Iterable[str]:
    """Index value for InferenceServices: the model named in `spec.model.name`."""
    model = ((obj.get("spec") or {}).get("model") or {}).get("name", "")
    return [model] if model else []


class CacheLookup:
    """`RuntimeLookup` over the ServingRuntime and ClusterServingRuntime caches, with optional overlays.

    An overlay replaces what the cache holds for one runtime (the object being admitted, or one fetched live
    because the cache has not caught up with the API server yet).
    """

    def __init__(
        self,
        serving: RuntimeCache,
        cluster_serving: RuntimeCache,
        overlay: Mapping[tuple[str, str, str], Mapping[str, Any] | None] | None = None,
    ) -> None:
        self.serving = serving
        self.cluster_serving = cluster_serving
        self.overlay = dict(overlay or {})

    def stamp(self) -> tuple[object, ...] | None:
        """A value that stays equal while every `get` answers as before (the same caches, neither changed since);
        None when that cannot be told (an overlay, a cache that does not count its changes)."""
        serving_changes = getattr(self.serving, "changes", None)
        cluster_changes = getattr(self.cluster_serving, "changes", None)
        if self.overlay or serving_changes is None or cluster_changes is None:
            return None
        return (self.serving, serving_changes, self.cluster_serving, cluster_changes)

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if self.overlay:
            key = (kind, namespace if kind == SERVING_RUNTIME else "", name)
            if key in self.overlay:
                return self.overlay[key]
        if kind == SERVING_RUNTIME:
            return self.serving.get(namespace, name)
        return self.cluster_serving.get("", name)


class CacheGraph(CacheLookup):
    """`RuntimeGraph` over the runtime and InferenceService caches: what `reach` needs to find what an edit reaches.

    The runtime caches carry the `INHERIT_INDEX` (parent name -> runtimes naming it), the InferenceService cache
    the `RUNTIME_INDEX` (runtime name -> InferenceServices naming it).
    """

    def __init__(self, serving: RuntimeCache, cluster_serving: RuntimeCache, inference_services: RuntimeCache) -> None:
        super().__init__(serving, cluster_serving)
        self.inference_services = inference_services

    def naming(self, kind: RuntimeKind, parent: str) -> Iterable[Mapping[str, Any]]:
        cache = self.serving if kind == SERVING_RUNTIME else self.cluster_serving
        return cache.by_index(INHERIT_INDEX, parent)

    def inference_services_naming(self, runtime: str) -> Iterable[Mapping[str, Any]]:
        return self.inference_services.by_index(RUNTIME_INDEX, runtime)
