"""Runtime lookups over a cluster's informer caches, and the reverse index walk from a parent to its descendants."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from omectl.core.runtimes import CLUSTER_SERVING_RUNTIME, INHERIT_FROM_ANNOTATION, SERVING_RUNTIME

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

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        if self.overlay:
            key = (kind, namespace if kind == SERVING_RUNTIME else "", name)
            if key in self.overlay:
                return self.overlay[key]
        if kind == SERVING_RUNTIME:
            return self.serving.get(namespace, name)
        return self.cluster_serving.get("", name)


def descendants(
    kind: str, namespace: str, name: str, serving: RuntimeCache, cluster_serving: RuntimeCache
) -> list[tuple[str, str, str]]:
    """Every runtime whose chain passes through (kind, namespace, name), at any depth, in every namespace.

    A ServingRuntime's parent is looked up in its namespace first, so a ServingRuntime naming `X` is below the
    ClusterServingRuntime `X` only when its namespace has no ServingRuntime `X` shadowing it.
    """
    found: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, str]] = {(kind, namespace, name)}
    frontier = [(kind, namespace, name)]
    while frontier:
        parent_kind, parent_ns, parent_name = frontier.pop()
        children: list[tuple[str, str, str]] = []
        if parent_kind == CLUSTER_SERVING_RUNTIME:
            for child in cluster_serving.by_index(INHERIT_INDEX, parent_name):
                children.append((CLUSTER_SERVING_RUNTIME, "", child["metadata"]["name"]))
            for child in serving.by_index(INHERIT_INDEX, parent_name):
                child_ns = child["metadata"].get("namespace", "")
                if serving.get(child_ns, parent_name) is None:
                    children.append((SERVING_RUNTIME, child_ns, child["metadata"]["name"]))
        else:
            for child in serving.by_index(INHERIT_INDEX, parent_name):
                if child["metadata"].get("namespace", "") == parent_ns:
                    children.append((SERVING_RUNTIME, parent_ns, child["metadata"]["name"]))
        for ref in children:
            if ref not in seen:
                seen.add(ref)
                found.append(ref)
                frontier.append(ref)
    return found
