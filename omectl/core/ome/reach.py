"""What a runtime edit reaches: the reverse of `resolve_chain`, kept apart per resolution context.

A chain looks each parent up by name in its head's context (`ResolutionContext`), so an edit of a runtime reaches
exactly the chains whose walk *looks that runtime up*, and the InferenceServices built on them. Walking backwards
from the edited runtime, the children of a name in a context are the runtimes that name it as their parent *and*
that the context finds under their own name: in namespace N, N's ServingRuntimes, and the ClusterServingRuntimes
that no ServingRuntime of N shadows; cluster-only, the ClusterServingRuntimes. A walk looks up at most the four
ancestors of its head (a fifth is too deep before it is looked up), so the backward walk stops four hops out.

The same answer holds for creating, changing and deleting the runtime: the part of a walk before the lookup does
not depend on what the lookup finds. So `reach` is computed from the caches as they are after the event.

An InferenceService's own lookup of its named runtime (its namespace's ServingRuntime, else the
ClusterServingRuntime) starts a chain in the context of the runtime found: a ServingRuntime's namespace, or
cluster-only for a ClusterServingRuntime.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from omectl.core.ome.inheritance import CLUSTER_ONLY, MAX_CHAIN_LENGTH, ResolutionContext
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeKind, RuntimeRef


class RuntimeGraph(Protocol):
    """Read access to one cluster's runtimes and InferenceServices, with the reverse indexes `reach` walks."""

    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def naming(self, kind: RuntimeKind, parent: str) -> Iterable[Mapping[str, Any]]:
        """The runtimes of `kind` (in every namespace) whose `ome.io/inherit-from` is `parent`."""
        ...

    def inference_services_naming(self, runtime: str) -> Iterable[Mapping[str, Any]]:
        """The InferenceServices (in every namespace) whose `spec.runtime.name` is `runtime`."""
        ...


@dataclass(frozen=True)
class ContextReach:
    """The part of an edit's reach that resolves in one context."""

    context: ResolutionContext
    root: RuntimeRef
    """The edited runtime."""
    parents: Mapping[RuntimeRef, RuntimeRef]
    """Every runtime below the root that a chain of this context passes (walk order), mapped to the runtime it
    inherits from here."""
    heads: tuple[RuntimeRef, ...]
    """Of those, the runtimes whose own chain resolves in this context: their status is what the edit changes."""
    inference_services: tuple[Mapping[str, Any], ...]
    """The InferenceServices whose chain starts in this context and passes through the root."""


@dataclass(frozen=True)
class Reach:
    """Everything a create, change or delete of `edited` reaches, one section per resolution context."""

    edited: RuntimeRef
    contexts: tuple[ContextReach, ...]
    shadowed_in: tuple[str, ...] = ()
    """For a ClusterServingRuntime: the namespaces whose chains pass a ServingRuntime of its name instead."""

    @property
    def runtimes(self) -> list[RuntimeRef]:
        """Every runtime whose own chain looks the edited one up (the edited runtime itself excluded)."""
        found: dict[RuntimeRef, None] = {}
        for section in self.contexts:
            found.update(dict.fromkeys(section.heads))
        return list(found)

    @property
    def inference_services(self) -> list[Mapping[str, Any]]:
        """Every InferenceService whose runtime's chain looks the edited runtime up."""
        return [isvc for section in self.contexts for isvc in section.inference_services]


def reach(edited: RuntimeRef, graph: RuntimeGraph) -> Reach:
    """What an edit of `edited` reaches in one cluster (see the module docstring)."""
    if edited.kind == SERVING_RUNTIME:
        return Reach(edited, (_context_reach(ResolutionContext(edited.namespace), edited, graph),))
    cluster_only = _context_reach(CLUSTER_ONLY, edited, graph)
    # A namespace's chain can reach the ClusterServingRuntime only through a ServingRuntime of that namespace
    # naming it or one of the ClusterServingRuntimes below it.
    names = [edited.name, *(ref.name for ref in cluster_only.parents)]
    namespaces = sorted({_namespace(child) for name in names for child in graph.naming(SERVING_RUNTIME, name)} - {""})
    sections = [cluster_only]
    shadowed = []
    for namespace in namespaces:
        if graph.get(SERVING_RUNTIME, namespace, edited.name) is not None:
            shadowed.append(namespace)
            continue
        section = _context_reach(ResolutionContext(namespace), edited, graph)
        if section.heads or section.inference_services:
            sections.append(section)
    return Reach(edited, tuple(sections), tuple(shadowed))


def _context_reach(context: ResolutionContext, root: RuntimeRef, graph: RuntimeGraph) -> ContextReach:
    parents: dict[RuntimeRef, RuntimeRef] = {}
    heads: list[RuntimeRef] = []
    seen = {root.name}  # a name appears once in a chain, so once in the walk back
    frontier = [root]
    for _hop in range(MAX_CHAIN_LENGTH - 1):
        next_frontier: list[RuntimeRef] = []
        for parent in frontier:
            for child in _children(context, parent.name, graph):
                if child.name in seen:
                    continue
                seen.add(child.name)
                parents[child] = parent
                next_frontier.append(child)
                if context.is_head(child):
                    heads.append(child)
        frontier = next_frontier
    # Keep the runtimes some chain of this context passes: a namespace's walk also meets ClusterServingRuntimes
    # that none of its ServingRuntimes inherits from.
    on_path: set[RuntimeRef] = set()
    for head in heads:
        ref = head
        while ref in parents and ref not in on_path:
            on_path.add(ref)
            ref = parents[ref]
    parents = {ref: parent for ref, parent in parents.items() if ref in on_path}
    starts = [root, *heads] if context.is_head(root) else heads
    return ContextReach(context, root, parents, tuple(heads), tuple(_users(context, starts, graph)))


def _children(context: ResolutionContext, parent: str, graph: RuntimeGraph) -> list[RuntimeRef]:
    found: list[RuntimeRef] = []
    if context.namespace is not None:
        for child in graph.naming(SERVING_RUNTIME, parent):
            if _namespace(child) == context.namespace:
                found.append(RuntimeRef(SERVING_RUNTIME, context.namespace, _name(child)))
    for child in graph.naming(CLUSTER_SERVING_RUNTIME, parent):
        name = _name(child)
        if context.namespace is None or graph.get(SERVING_RUNTIME, context.namespace, name) is None:
            found.append(RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name))
    found.sort(key=lambda ref: (ref.kind, ref.name))
    return found


def _users(context: ResolutionContext, starts: list[RuntimeRef], graph: RuntimeGraph) -> list[Mapping[str, Any]]:
    """The InferenceServices whose named runtime is one of `starts` (all of this context's heads)."""
    found: list[Mapping[str, Any]] = []
    for start in starts:
        for isvc in graph.inference_services_naming(start.name):
            namespace = _namespace(isvc)
            if context.namespace is not None:
                if namespace == context.namespace:
                    found.append(isvc)
            elif graph.get(SERVING_RUNTIME, namespace, start.name) is None:
                found.append(isvc)  # no ServingRuntime of that name in its namespace: it finds the cluster one
    found.sort(key=lambda isvc: (_namespace(isvc), _name(isvc)))
    return found


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _namespace(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("namespace") or "")
