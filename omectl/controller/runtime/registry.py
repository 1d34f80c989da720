"""The work-kind registry: from the `kind` of a `WorkKey` to what handles it.

A `Domain` (OME, AIM) brings its per-cluster watch (the informers it needs, their event handlers, the caches its
reconcilers read) and its work kinds; a `WorkKind` says where the object a key names is cached and which
reconciler runs for it. `FleetController` (`omectl.controller.runtime.manager`) looks every key up here and knows
no domain; the composition root (`omectl.controller.app`) fills the registry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from omectl.controller.runtime.queue import WorkKey
from omectl.controller.runtime.view import ClusterView
from omectl.kube.informer import Informer


class DomainWatch(Protocol):
    """What one domain watches in one cluster."""

    @property
    def informers(self) -> Sequence[Informer]: ...


W = TypeVar("W", bound=DomainWatch)


@dataclass(frozen=True)
class WorkKind(Generic[W]):
    """What handles the work keys of one kind, given the domain's watch of the key's cluster."""

    get: Callable[[W, str, str], dict[str, Any] | None]
    """The object `(namespace, name)` from the informer cache; None (the object is gone): nothing to do."""
    reconcile: Callable[[W, WorkKey, dict[str, Any]], Awaitable[None]]
    traced: bool = True
    """False for bookkeeping work (a status write decided by an earlier reconcile): no reconcile span, no reconcile
    metrics or health counts, and a failure is retried by the queue like any other."""
    paused: Callable[[Mapping[str, Any]], str | None] | None = None
    """Why the object is not to be reconciled now (logged at debug), or None."""


@dataclass(frozen=True)
class Domain(Generic[W]):
    """One domain of the controller: its watch per cluster and its work kinds."""

    name: str
    watch: Callable[[ClusterView], W]
    kinds: Mapping[str, WorkKind[W]]


@dataclass(frozen=True)
class Handler:
    """A work kind bound to its domain: reads and reconciles over the domain watches of one cluster."""

    kind: str
    domain: str
    work: WorkKind[Any]

    @property
    def traced(self) -> bool:
        return self.work.traced

    def get(self, watches: Mapping[str, DomainWatch], namespace: str, name: str) -> dict[str, Any] | None:
        return self.work.get(watches[self.domain], namespace, name)

    def paused(self, obj: Mapping[str, Any]) -> str | None:
        return self.work.paused(obj) if self.work.paused is not None else None

    async def reconcile(self, watches: Mapping[str, DomainWatch], key: WorkKey, obj: dict[str, Any]) -> None:
        await self.work.reconcile(watches[self.domain], key, obj)


class WorkKinds:
    """The registry: every domain in the order its informers start, and every work kind once."""

    def __init__(self, domains: Iterable[Domain[Any]] = ()) -> None:
        self._domains: list[Domain[Any]] = []
        self._handlers: dict[str, Handler] = {}
        for domain in domains:
            self.add(domain)

    def add(self, domain: Domain[W]) -> None:
        if any(d.name == domain.name for d in self._domains):
            raise ValueError(f"domain {domain.name} registered twice")
        for kind in domain.kinds:
            if kind in self._handlers:
                raise ValueError(f"work kind {kind} registered by {self._handlers[kind].domain} and {domain.name}")
        self._domains.append(domain)
        for kind, work in domain.kinds.items():
            self._handlers[kind] = Handler(kind, domain.name, work)

    def handler(self, kind: str) -> Handler | None:
        return self._handlers.get(kind)

    @property
    def kinds(self) -> list[str]:
        return list(self._handlers)

    def watches(self, cluster: ClusterView) -> dict[str, DomainWatch]:
        """Every domain's watch of `cluster`, by domain name, in registration order."""
        return {domain.name: domain.watch(cluster) for domain in self._domains}
