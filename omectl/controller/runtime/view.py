"""What a reconciler may read of its cluster, and the one thing it may do beside its API writes: queue work.

`ClusterRuntime` (`omectl.controller.runtime.manager`) is the implementation; a domain's per-cluster watch
(`omectl.controller.ome.watch.OmeWatch`, `omectl.controller.aim.watch.AimWatch`) holds a `ClusterView`, adds its
own informer caches to it and is what that domain's reconcilers are given. There is no way from a view back to the
controller: work reaches the queue through `enqueue` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.kube.client import ClusterClient

EventType = Literal["Normal", "Warning"]


class ClusterView(Protocol):
    """One registered cluster as its reconcilers and watch handlers see it."""

    @property
    def name(self) -> str:
        """The cluster's registered name (the `cluster` of every `WorkKey` it queues)."""
        ...

    @property
    def client(self) -> ClusterClient: ...

    def enqueue(
        self, key: WorkKey, *, lane: Lane | None = None, low_priority: bool = False, trigger: object | None = None
    ) -> None:
        """Queue work (`WorkQueue.add`): `lane` says how urgent it is (default `Lane.EDIT`)."""
        ...

    def enqueue_after(self, key: WorkKey, delay: float) -> None:
        """Queue work once `delay` seconds have passed, in the resync lane (`WorkQueue.add_after`: the earlier
        time wins)."""
        ...

    def record_event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        """Record an event off the reconcile path (best effort)."""
        ...


class DomainView:
    """A domain's view of one cluster: the cluster's `ClusterView`, passed through, plus what the subclass watches.
    A domain's reconcilers are given its subclass (`OmeWatch`, `AimWatch`), so they read their own caches only."""

    def __init__(self, cluster: ClusterView) -> None:
        self.cluster = cluster

    @property
    def name(self) -> str:
        return self.cluster.name

    @property
    def client(self) -> ClusterClient:
        return self.cluster.client

    def enqueue(
        self, key: WorkKey, *, lane: Lane | None = None, low_priority: bool = False, trigger: object | None = None
    ) -> None:
        self.cluster.enqueue(key, lane=lane, low_priority=low_priority, trigger=trigger)

    def enqueue_after(self, key: WorkKey, delay: float) -> None:
        self.cluster.enqueue_after(key, delay)

    def record_event(self, obj: Mapping[str, Any], type_: EventType, reason: str, message: str) -> None:
        self.cluster.record_event(obj, type_, reason, message)
