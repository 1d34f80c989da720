"""The engine pipeline: an InferenceService's model and runtime chosen, the named runtime's chain merged, the merged
spec checked against the model, the workloads rendered. Pure and synchronous.

Composed here once and run by two callers: the engine-workload reconciler (`omectl/controller/ome/engine.py`, which
merges the chain through the shared memoizing resolver and may render a pinned revision's spec instead of the live
merge) and `omectl runtime plan` (`omectl/cli/runtime_plan.py`, which merges with `merge_named`). Each runs

    model = model_of(isvc, models)                       # ModelError
    choice = choose(isvc, model, runtimes)               # NoRuntimeFound (automatic), RuntimeValidation (named)
    spec = choice.own_spec or <the merged chain of choice.runtime>              # ChainError
    objects = render(isvc, choice, spec, revision=...)   # RuntimeValidation (unsupported model), RenderError

Automatic selection renders the chosen runtime's own spec (no inheritance) and has checked the model already; a
named runtime renders its merged chain, checked against the model (when the InferenceService names one) first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from omectl.core.ome.inheritance import RuntimeLookup, resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.render import render_workloads
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeKind, RuntimeRef
from omectl.core.ome.selection import (
    BASE_MODEL,
    ModelKind,
    ModelLookup,
    ModelRef,
    check_runtime_supports,
    lookup_named_runtime,
    named_runtime,
    resolve_model,
    select_runtime,
)

__all__ = [
    "CachedModels",
    "CachedRuntimes",
    "Choice",
    "Model",
    "Runtimes",
    "Store",
    "choose",
    "merge_named",
    "model_of",
    "render",
]


class Store(Protocol):
    """Objects of one kind by namespace and name, as an informer cache holds them (`""`: cluster-scoped)."""

    def get(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, namespace: str | None = None) -> Iterable[Mapping[str, Any]]: ...


class CachedModels:
    """`ModelLookup` over the BaseModel and ClusterBaseModel stores."""

    def __init__(self, base_models: Store, cluster_base_models: Store) -> None:
        self.base_models = base_models
        self.cluster_base_models = cluster_base_models

    def get(self, kind: ModelKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind == BASE_MODEL:
            return self.base_models.get(namespace, name)
        return self.cluster_base_models.get("", name)


class Runtimes(RuntimeLookup, Protocol):
    """The runtimes of one cluster: looked up by name, and listed as automatic selection's candidates."""

    def candidates(self, namespace: str) -> list[tuple[RuntimeKind, Mapping[str, Any]]]: ...


class CachedRuntimes:
    """`Runtimes` over the ServingRuntime and ClusterServingRuntime stores."""

    def __init__(self, serving: Store, cluster_serving: Store) -> None:
        self.serving = serving
        self.cluster_serving = cluster_serving

    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        if kind == SERVING_RUNTIME:
            return self.serving.get(namespace, name)
        return self.cluster_serving.get("", name)

    def candidates(self, namespace: str) -> list[tuple[RuntimeKind, Mapping[str, Any]]]:
        """The ServingRuntimes of `namespace`, then every ClusterServingRuntime."""
        serving: list[tuple[RuntimeKind, Mapping[str, Any]]] = [
            (SERVING_RUNTIME, r) for r in self.serving.list(namespace)
        ]
        return serving + [(CLUSTER_SERVING_RUNTIME, r) for r in self.cluster_serving.list()]


@dataclass(frozen=True, slots=True)
class Model:
    """The model an InferenceService names: its reference and object; both None when it names none."""

    ref: ModelRef | None
    obj: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Choice:
    """The model and the runtime an InferenceService is rendered with."""

    model: Model
    ref: RuntimeRef
    runtime: Mapping[str, Any]
    own_spec: Mapping[str, Any] | None
    """Automatic selection: the chosen runtime's own spec, rendered as it is; None for a named runtime, whose
    chain is merged."""

    @property
    def automatic(self) -> bool:
        return self.own_spec is not None


def model_of(isvc: Mapping[str, Any], models: ModelLookup) -> Model:
    """The model `spec.model` names (`resolve_model`); raises ModelError."""
    ref = resolve_model(isvc, models)
    return Model(ref, models.get(ref.kind, ref.namespace, ref.name) if ref is not None else None)


def choose(isvc: Mapping[str, Any], model: Model, runtimes: Runtimes) -> Choice:
    """The runtime `spec.runtime.name` names (raises RuntimeValidation when it does not exist), else the one automatic
    selection picks for the model (raises NoRuntimeFound)."""
    namespace = str((isvc.get("metadata") or {}).get("namespace") or "")
    runtime_name = named_runtime(isvc)
    if runtime_name is not None:
        ref, runtime = lookup_named_runtime(namespace, runtime_name, runtimes)
        return Choice(model, ref, runtime, None)
    assert model.ref is not None  # resolve_model raises for an InferenceService naming neither
    selected = select_runtime(namespace, model.ref, runtimes.candidates(namespace))
    return Choice(model, selected.ref, selected.runtime, selected.spec)


def merge_named(choice: Choice, lookup: RuntimeLookup) -> tuple[Mapping[str, Any], tuple[RuntimeRef, ...]]:
    """The merged spec of a named runtime's chain and the chain, root first; raises ChainError."""
    resolved = resolve_chain(choice.runtime, lookup)
    return merge_chain(spec_layers(resolved)).spec, resolved.refs


def render(
    isvc: Mapping[str, Any], choice: Choice, spec: Mapping[str, Any], *, revision: str | None = None
) -> list[dict[str, Any]]:
    """The workloads of `isvc` rendered from `spec` (the choice's own spec, or its chain's merge or revision).

    A named runtime is first checked against the model (raises RuntimeValidation); raises RenderError."""
    if not choice.automatic and choice.model.ref is not None:
        check_runtime_supports(choice.ref.name, spec, choice.model.ref, kind=choice.ref.kind)
    return render_workloads(
        isvc,
        spec,
        runtime_name=choice.ref.name,
        runtime_kind=choice.ref.kind,
        model=choice.model.obj,
        revision=revision,
    )
