"""Resolve a runtime's `ome.io/inherit-from` chain (lookup per hop, at most five runtimes, no repeated name) and
check the profile rule.

Where a parent is looked up (DESIGN §3 decision 1) depends on the runtime that names it: a ServingRuntime's parent
is the ServingRuntime of that name in its namespace, else the ClusterServingRuntime of that name; a
ClusterServingRuntime's parent is a ClusterServingRuntime only.

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

from omectl.core.runtimes import (
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
        missing: tuple[RuntimeRef, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.reason: ChainErrorReason = reason
        self.message = message
        self.names = names
        """The names in the message, starting at the runtime written."""
        self.missing = missing
        """For ParentNotFound: the runtime whose parent is missing, and the parent's name."""

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


def inherit_from(runtime: Mapping[str, Any]) -> str | None:
    """The parent's name from `ome.io/inherit-from`; None when absent or empty."""
    value = _annotations(runtime).get(INHERIT_FROM_ANNOTATION)
    return value if isinstance(value, str) and value else None


def ref_of(runtime: Mapping[str, Any]) -> RuntimeRef:
    """The runtime's identity; raises ValueError for an object that is not a runtime."""
    kind = runtime.get("kind")
    if not is_runtime_kind(kind):
        raise ValueError(f"not a ServingRuntime or ClusterServingRuntime: kind {kind!r}")
    metadata = _mapping(runtime.get("metadata"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{kind} without metadata.name")
    namespace = metadata.get("namespace") if kind == SERVING_RUNTIME else ""
    return RuntimeRef(kind, namespace if isinstance(namespace, str) else "", name)


def resolve_chain(start: Mapping[str, Any], lookup: RuntimeLookup) -> ResolvedChain:
    """The chain of `start` (itself when it names no parent); raises ChainError when it does not resolve."""
    refs = [ref_of(start)]
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
        found = _find_parent(refs[-1], parent_name, lookup)
        if found is None:
            raise ChainError(
                PARENT_NOT_FOUND,
                f'inherit-from parent "{parent_name}" not found (chain so far: {_go_list(names)})',
                tuple(names),
                (refs[-1], parent_name),
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
    )


def spec_layers(chain: ResolvedChain) -> list[tuple[str, Mapping[str, Any]]]:
    """`(name, spec)` of each runtime, root first, for `merge_chain`/`merge_layer`: only specs are inherited."""
    return [(name, _mapping(runtime.get("spec"))) for name, runtime in zip(chain.names, chain.runtimes, strict=True)]


def profile_error(runtime: Mapping[str, Any]) -> str | None:
    """The admission error for a profile (`ome.io/runtime-profile: "true"`) without `spec.disabled: true`, else None."""
    if _annotations(runtime).get(RUNTIME_PROFILE_ANNOTATION) != "true":
        return None
    if _mapping(runtime.get("spec")).get("disabled") is True:
        return None
    return PROFILE_NOT_DISABLED


def _find_parent(child: RuntimeRef, name: str, lookup: RuntimeLookup) -> tuple[RuntimeRef, Mapping[str, Any]] | None:
    if child.kind == SERVING_RUNTIME:
        parent = lookup.get(SERVING_RUNTIME, child.namespace, name)
        if parent is not None:
            return RuntimeRef(SERVING_RUNTIME, child.namespace, name), parent
    parent = lookup.get(CLUSTER_SERVING_RUNTIME, "", name)
    if parent is not None:
        return RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name), parent
    return None


def _go_list(names: list[str] | tuple[str, ...]) -> str:
    return "[" + " ".join(names) + "]"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _annotations(runtime: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(_mapping(runtime.get("metadata")).get("annotations"))


def _resource_version(runtime: Mapping[str, Any]) -> str:
    value = _mapping(runtime.get("metadata")).get("resourceVersion")
    return value if isinstance(value, str) else ""
