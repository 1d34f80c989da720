"""Random runtime graphs for property tests, and the brute-force answer to "which chains look this runtime up"."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import strategies as st

from omectl.core.ome.inheritance import ChainError, ResolutionContext, resolve_chain
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeKind, RuntimeRef

NAMESPACES = ("team-a", "team-b")
NAMES = ("n0", "n1", "n2", "n3", "n4", "n5", "n6")
KEYS = [RuntimeRef(SERVING_RUNTIME, ns, name) for ns in NAMESPACES for name in NAMES] + [
    RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name) for name in NAMES
]

# runtime -> the parent it names (None: a root); InferenceServices as (namespace, runtime name)
GRAPHS = st.dictionaries(st.sampled_from(KEYS), st.one_of(st.none(), st.sampled_from(NAMES)), max_size=len(KEYS))
USERS = st.lists(st.tuples(st.sampled_from(NAMESPACES), st.sampled_from(NAMES)), max_size=8, unique=True)


def runtime_object(ref: RuntimeRef, parent: str | None, rv: str = "1", image: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": ref.name, "resourceVersion": rv}
    if ref.kind == SERVING_RUNTIME:
        meta["namespace"] = ref.namespace
    if parent is not None:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    runner = {"name": "ome-container", "image": image or f"img:{ref}", "args": [f"--{ref}"]}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": ref.kind,
        "metadata": meta,
        "spec": {"engineConfig": {"runner": runner}},
    }


def isvc_object(namespace: str, runtime: str) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": f"uses-{runtime}", "namespace": namespace},
        "spec": {"runtime": {"name": runtime}},
    }


class Graph:
    """A `RuntimeGraph` (and `RuntimeLookup`) over plain dicts; `asked` records every lookup."""

    def __init__(self, parents: Mapping[RuntimeRef, str | None], users: Iterable[tuple[str, str]] = ()) -> None:
        self.objects = {ref: runtime_object(ref, parent) for ref, parent in parents.items()}
        self.isvcs = [isvc_object(namespace, name) for namespace, name in users]
        self.asked: set[RuntimeRef] = set()

    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        ref = RuntimeRef(kind, namespace if kind == SERVING_RUNTIME else "", name)
        self.asked.add(ref)
        return self.objects.get(ref)

    def naming(self, kind: RuntimeKind, parent: str) -> list[dict[str, Any]]:
        return [
            obj
            for ref, obj in self.objects.items()
            if ref.kind == kind and (obj["metadata"].get("annotations") or {}).get("ome.io/inherit-from") == parent
        ]

    def inference_services_naming(self, runtime: str) -> list[dict[str, Any]]:
        return [isvc for isvc in self.isvcs if isvc["spec"]["runtime"]["name"] == runtime]

    def lookups_of_chain(self, start: Mapping[str, Any]) -> set[RuntimeRef]:
        """Every runtime the resolution of `start`'s chain looks up (found or not)."""
        self.asked = set()
        with contextlib.suppress(ChainError):
            resolve_chain(start, self)
        return self.asked

    def lookups_of_isvc(self, isvc: Mapping[str, Any]) -> set[RuntimeRef]:
        """What an InferenceService's resolution looks up: its named runtime, then that runtime's chain."""
        self.asked = set()
        found = ResolutionContext(isvc["metadata"]["namespace"]).find(isvc["spec"]["runtime"]["name"], self)
        named = set(self.asked)
        return named if found is None else named | self.lookups_of_chain(found[1])


def brute_force_reach(graph: Graph, edited: RuntimeRef) -> tuple[set[RuntimeRef], set[tuple[str, str]]]:
    """The runtimes (heads of their own chain) and InferenceServices whose resolution looks `edited` up."""
    heads = {ref for ref, obj in graph.objects.items() if ref != edited and edited in graph.lookups_of_chain(obj)}
    users = {
        (isvc["metadata"]["namespace"], isvc["metadata"]["name"])
        for isvc in graph.isvcs
        if edited in graph.lookups_of_isvc(isvc)
    }
    return heads, users
