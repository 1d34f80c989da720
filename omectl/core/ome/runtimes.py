"""Shared names for OME runtimes: the API group, the two runtime kinds, the inheritance annotations, `RuntimeRef`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeGuard

GROUP: Final = "ome.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = "ome.io/v1beta1"

SERVING_RUNTIME: Final = "ServingRuntime"
CLUSTER_SERVING_RUNTIME: Final = "ClusterServingRuntime"
RuntimeKind = Literal["ServingRuntime", "ClusterServingRuntime"]
RUNTIME_KINDS: Final[tuple[RuntimeKind, ...]] = (SERVING_RUNTIME, CLUSTER_SERVING_RUNTIME)

INHERIT_FROM_ANNOTATION: Final = "ome.io/inherit-from"
"""Names the parent runtime (its name only; where it is looked up depends on the chain's head: see `inheritance`)."""
RUNTIME_PROFILE_ANNOTATION: Final = "ome.io/runtime-profile"
"""`"true"` marks a profile: a runtime that exists only to be inherited from, and must set `spec.disabled: true`."""


def is_runtime_kind(kind: object) -> TypeGuard[RuntimeKind]:
    """Whether `kind` is `ServingRuntime` or `ClusterServingRuntime`."""
    return kind in RUNTIME_KINDS


@dataclass(frozen=True, slots=True)
class RuntimeRef:
    """Identity of one runtime object. A ClusterServingRuntime's `namespace` is `""`."""

    kind: RuntimeKind
    namespace: str
    name: str

    def __str__(self) -> str:
        if self.kind == CLUSTER_SERVING_RUNTIME:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"
