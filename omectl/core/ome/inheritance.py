"""Resolve a runtime's `ome.io/inherit-from` chain (at most five runtimes, no repeated name) and check the profile
rule.

Where every parent of a chain is looked up depends on the runtime the chain *starts* at, its **resolution
context**, never on the hop: a ServingRuntime's chain (context "namespace N") looks each parent up, at every depth,
first among the ServingRuntimes of N, then among ClusterServingRuntimes, also after the walk has passed through a
ClusterServingRuntime; a ClusterServingRuntime's own chain (context "cluster-only") looks among
ClusterServingRuntimes only. So one ClusterServingRuntime can reach different parents in different namespaces, as
upstream OME resolves it (the spec's table "where OME looks for the parents in its chain").

`ChainError` messages list names Go-style, `[a b c]`, starting at the runtime written and walking towards the root:

- `ParentNotFound`: the runtimes found so far, the missing parent excluded:
  `inherit-from parent "p" not found (chain so far: [start ... last-found])`.
- `InheritanceCycle`: the walk up to and including the repeated name: a→b→a is `[a b a]`, a→a is `[a a]`. Only
  names count, so a ServingRuntime naming a ClusterServingRuntime of its own name is `[x x]`. The repeat is found
  from the name alone, before any lookup.
- `MaxDepthExceeded`: the first six names, the sixth being the name the fifth runtime gives as its parent (it is not
  looked up: a chain that needs a sixth runtime is too deep whether or not that runtime exists). A repeated name is
  reported as a cycle even at that depth.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol

from omectl.core.jsonish import as_mapping
from omectl.core.ome.runtimes import (
    CLUSTER_SERVING_RUNTIME,
    INHERIT_FROM_ANNOTATION,
    RUNTIME_PROFILE_ANNOTATION,
    SERVING_RUNTIME,
    RuntimeKind,
    RuntimeRef,
    is_runtime_kind,
)

MAX_CHAIN_LENGTH: Final = 5
"""A chain holds at most the runtime and four ancestors."""

PARENT_NOT_FOUND: Final = "ParentNotFound"
INHERITANCE_CYCLE: Final = "InheritanceCycle"
MAX_DEPTH_EXCEEDED: Final = "MaxDepthExceeded"
ChainErrorReason = Literal["ParentNotFound", "InheritanceCycle", "MaxDepthExceeded"]

PROFILE_NOT_DISABLED: Final = 'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'


@dataclass(frozen=True, slots=True)
class ResolutionContext:
    """Where the parents of one chain are looked up: `namespace` N (a ServingRuntime's chain: N's ServingRuntimes,
    then ClusterServingRuntimes) or None (cluster-only: a ClusterServingRuntime's chain)."""

    namespace: str | None

    @staticmethod
    def of(head: RuntimeRef) -> ResolutionContext:
        """The context of the chain that starts at `head`."""
        return ResolutionContext(head.namespace if head.kind == SERVING_RUNTIME else None)

    def candidates(self, name: str) -> tuple[RuntimeRef, ...]:
        """The runtimes a lookup of `name` tries, in order: the first that exists is the one found."""
        cluster_runtime = RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name)
        if self.namespace is None:
            return (cluster_runtime,)
        return (RuntimeRef(SERVING_RUNTIME, self.namespace, name), cluster_runtime)

    def find(self, name: str, lookup: RuntimeLookup) -> tuple[RuntimeRef, Mapping[str, Any]] | None:
        """The runtime `name` resolves to in this context, or None."""
        for ref in self.candidates(name):
            found = lookup.get(ref.kind, ref.namespace, ref.name)
            if found is not None:
                return ref, found
        return None

    def is_head(self, ref: RuntimeRef) -> bool:
        """Whether a chain that starts at `ref` resolves in this context."""
        return ResolutionContext.of(ref) == self

    def __str__(self) -> str:
        return "cluster-only" if self.namespace is None else f"namespace {self.namespace}"


CLUSTER_ONLY: Final = ResolutionContext(None)


class RuntimeLookup(Protocol):
    """Read access to the runtimes of one cluster. `namespace` is `""` for a ClusterServingRuntime."""

    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None: ...


class ChainError(Exception):
    """A chain that does not resolve. `reason` is the `InheritanceReady` reason, `message` the webhook's text."""

    def __init__(
        self,
        reason: ChainErrorReason,
        message: str,
        names: tuple[str, ...],
        missing: tuple[ResolutionContext, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.reason: ChainErrorReason = reason
        self.message = message
        self.names = names
        """The names in the message, starting at the runtime written."""
        self.missing = missing
        """For ParentNotFound: the context the parent was looked up in, and the parent's name."""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True)
class ResolvedChain:
    """A chain that resolves; every tuple is root first and ends with the runtime resolved."""

    runtimes: tuple[Mapping[str, Any], ...]
    refs: tuple[RuntimeRef, ...]
    names: tuple[str, ...]
    resource_versions: tuple[str, ...]
    """`metadata.resourceVersion` of each runtime (`""` where absent): the resolver's cache key."""
    context: ResolutionContext
    """Where every parent was looked up (the context of the runtime resolved, the last of the chain)."""


def inherit_from(runtime: Mapping[str, Any]) -> str | None:
    """The parent's name from `ome.io/inherit-from`; None when absent or empty."""
    value = _annotations(runtime).get(INHERIT_FROM_ANNOTATION)
    return value if isinstance(value, str) and value else None


def ref_of(runtime: Mapping[str, Any]) -> RuntimeRef:
    """The runtime's identity; raises ValueError for an object that is not a runtime."""
    kind = runtime.get("kind")
    if not is_runtime_kind(kind):
        raise ValueError(f"not a ServingRuntime or ClusterServingRuntime: kind {kind!r}")
    metadata = as_mapping(runtime.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} without metadata.name")
    namespace = metadata.get("namespace") if kind == SERVING_RUNTIME else ""
    return RuntimeRef(kind, namespace if isinstance(namespace, str) else "", name)


def resolve_chain(
    start: Mapping[str, Any], lookup: RuntimeLookup, context: ResolutionContext | None = None
) -> ResolvedChain:
    """The chain of `start` (itself when it names no parent); raises ChainError when it does not resolve.

    Parents are looked up in `start`'s own context, or in `context` when given: the part of a namespace's chain
    above a ClusterServingRuntime in it (what `runtime tree --ancestors` shows per context).
    """
    refs = [ref_of(start)]
    context = context or ResolutionContext.of(refs[0])
    runtimes = [start]
    names = [refs[0].name]
    while (parent_name := inherit_from(runtimes[-1])) is not None:
        if parent_name in names:
            raise ChainError(
                INHERITANCE_CYCLE,
                f"inheritance cycle detected: {_go_list([*names, parent_name])}",
                (*names, parent_name),
            )
        if len(names) == MAX_CHAIN_LENGTH:
            walked = (*names, parent_name)
            raise ChainError(
                MAX_DEPTH_EXCEEDED,
                f"inheritance chain exceeds max depth {MAX_CHAIN_LENGTH} (chain so far: {_go_list(walked)})",
                walked,
            )
        found = context.find(parent_name, lookup)
        if found is None:
            raise ChainError(
                PARENT_NOT_FOUND,
                f'inherit-from parent "{parent_name}" not found (chain so far: {_go_list(names)})',
                tuple(names),
                (context, parent_name),
            )
        parent_ref, parent = found
        refs.append(parent_ref)
        runtimes.append(parent)
        names.append(parent_name)
    return ResolvedChain(
        runtimes=tuple(reversed(runtimes)),
        refs=tuple(reversed(refs)),
        names=tuple(reversed(names)),
        resource_versions=tuple(_resource_version(runtime) for runtime in reversed(runtimes)),
        context=context,
    )


def spec_layers(chain: ResolvedChain) -> list[tuple[str, Mapping[str, Any]]]:
    """`(name, spec)` of each runtime, root first, for `merge_chain`/`merge_layer`: only specs are inherited."""
    layers = zip(chain.names, chain.runtimes, strict=True)  # pragma: no mutate (equal lengths)
    return [(name, as_mapping(runtime.get("spec"))) for name, runtime in layers]


def profile_error(runtime: Mapping[str, Any]) -> str | None:
    """The admission error for a profile (`ome.io/runtime-profile: "true"`) without `spec.disabled: true`, else None."""
    if _annotations(runtime).get(RUNTIME_PROFILE_ANNOTATION) != "true":
        return None
    if as_mapping(runtime.get("spec")).get("disabled") is True:
        return None
    return PROFILE_NOT_DISABLED


def _go_list(names: list[str] | tuple[str, ...]) -> str:
    return "[" + " ".join(names) + "]"


def _annotations(runtime: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(as_mapping(runtime.get("metadata")).get("annotations"))


def _resource_version(runtime: Mapping[str, Any]) -> str:
    value = as_mapping(runtime.get("metadata")).get("resourceVersion")
    return value if isinstance(value, str) else ""
