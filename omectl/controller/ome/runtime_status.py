"""The runtime status reconciler: `status.inheritanceChain` and the `InheritanceReady` condition of each runtime.

A resolved chain is written root first with `InheritanceReady=True/Resolved`; a broken chain
sets `InheritanceReady=False` with the chain error's reason, records a Warning event whose reason is that
condition reason and whose message is the chain error, and keeps the last chain that resolved. Every status
write sets `observedGeneration`; an unchanged status is not written at all.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omectl.controller.ome.resolver import ChainResolver, Resolution
from omectl.controller.ome.watch import OmeWatch
from omectl.controller.runtime.queue import WorkKey
from omectl.core.ome.inheritance import ChainError
from omectl.core.ome.runtime_status import RESOLVED, desired_runtime_status, resolved_message
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, RuntimeKind
from omectl.kube import timestamps
from omectl.kube.errors import NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import ResourceRef
from omectl.kube.writer import cache_behind_own_write, write_status
from omectl.tracing.spans import merge_span

log = logging.getLogger(__name__)

RESOLVER_ERROR = "ResolverError"


@dataclass(frozen=True)
class ChainOutcome:
    """What a reconcile found: the resolution, or the reason and message of a broken chain."""

    resolution: Resolution | None
    reason: str
    message: str

    @property
    def ok(self) -> bool:
        return self.resolution is not None


async def resolve_runtime(
    resolver: ChainResolver, cluster: str, runtime: Mapping[str, Any], lookup: Any
) -> ChainOutcome:
    try:
        resolution = await resolver.resolve(cluster, runtime, lookup)
    except ChainError as exc:
        return ChainOutcome(None, exc.reason, exc.message)
    except Exception as exc:  # anything else is a ResolverError, never a crash
        log.exception("cluster %s: resolving %s failed", cluster, runtime.get("metadata", {}).get("name"))
        return ChainOutcome(None, RESOLVER_ERROR, f"{type(exc).__name__}: {exc}")
    return ChainOutcome(resolution, RESOLVED, resolved_message(resolution.names))


def desired_status(live: Mapping[str, Any], outcome: ChainOutcome, now: str | None = None) -> dict[str, Any] | None:
    """The status to write, or None when the live status already says it."""
    chain = outcome.resolution.names if outcome.resolution is not None else None
    now = now or timestamps.now()
    return desired_runtime_status(live, chain, outcome.reason, outcome.message, now)


def record_merge_span(tracer: Any, outcome: ChainOutcome, kind: str, namespace: str, name: str) -> None:
    """One `merge` span per merge, with the chain, the cache outcome and which runtime set each field."""
    if outcome.resolution is None:
        return
    result = outcome.resolution.result
    # Provenance is recorded when a merge is computed; a cache hit reuses that merge, so `omectl trace explain`
    # reads the newest merge span that carries it (the spans of hits stay small on the hot path).
    with merge_span(
        tracer,
        chain=list(outcome.resolution.names),
        cache_hit=outcome.resolution.cache_hit,
        layer_fields=result.layer_fields,
        provenance={} if outcome.resolution.cache_hit else result.provenance,
        chain_refs=[str(ref) for ref in outcome.resolution.refs],
        context=str(outcome.resolution.context),
        runtime_kind=kind,
        runtime_namespace=namespace or None,
        runtime_name=name,
    ):
        pass


class RuntimeStatusReconciler:
    """Reconciles the status of ServingRuntimes and ClusterServingRuntimes against the shared resolver."""

    def __init__(self, resolver: ChainResolver, tracer: Any = None) -> None:
        self.resolver = resolver
        self.tracer = tracer

    async def reconcile(
        self, cluster: OmeWatch, kind: RuntimeKind, resource: ResourceRef, key: WorkKey, obj: dict[str, Any]
    ) -> None:
        """`kind` and `resource` are those of the runtime `key` names (`obj`, as the informer cache holds it)."""
        outcome = await resolve_runtime(self.resolver, cluster.name, obj, cluster.lookup())
        if self.tracer is not None:
            record_merge_span(self.tracer, outcome, kind, key.namespace, key.name)
        if desired_status(obj, outcome) is not None or cache_behind_own_write(  # against the cache, no request
            cluster.client, resource, key.namespace or None, key.name, obj
        ):
            with contextlib.suppress(NotFound):  # deleted meanwhile: nothing to write
                await write_status(
                    cluster.client,
                    resource,
                    key.namespace or None,
                    key.name,
                    lambda live: desired_status(live, outcome),
                    field_manager=FIELD_MANAGER,
                    cached=obj,
                )
        if not outcome.ok:
            cluster.record_event(obj, "Warning", outcome.reason, outcome.message)


def runtime_kind_path(kind: str) -> str:
    return "clusterservingruntimes" if kind == CLUSTER_SERVING_RUNTIME else "servingruntimes"
