"""`RemoteSimulator`: the embedded server's `WorkloadSimulator`, run as an API client of a real cluster.

The simulator decides from a store and writes through a cluster's write path; against the embedded server
both are in-process. Here `RemoteClusterAPI` gives it the same small surface over HTTP:

- the store is a set of informers (`omectl.kube.informer`), one per kind the simulator reads; their events reach
  the simulator's listener after the cache holds them, as a commit reaches it in-process. Kinds served by a
  CRD (LeaderWorkerSets, KServe InferenceServices, HTTPRoutes, Gateways, OME models) are watched once their
  CRD is Established and dropped when it goes, so a CRD installed later is picked up as in-process;
- `create` is a POST; `_write_update(produce)` reads the live object, lets `produce` change it and PUTs it
  (to `/status` for status), again on a 409 conflict, as the in-process write path retries.

So the same code marks Deployments, LeaderWorkerSets, KServe InferenceServices, Jobs and PVCs ready, makes KEDA's
HPAs, and registers the simulated GPU nodes on a real kube-apiserver, where no kubelet or controller-manager runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.errors import Conflict
from omectl.kube.informer import Informer
from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, ResourceRef
from omectl.sim.apiserver.api import CRD_KEY, WriteOptions
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.simulator import SimulatorConfig, WorkloadSimulator
from omectl.sim.simulator.cluster import (
    AIM_ARTIFACTS,
    AUTOSCALERS,
    CLAIMS,
    CONFIG_MAPS,
    DEPLOYMENTS,
    EVENTS,
    GATEWAYS,
    HTTP_ROUTES,
    JOBS,
    KSERVE_INFERENCE_SERVICES,
    LEADER_WORKER_SETS,
    MODEL_KINDS,
    NODES,
    PODS,
)

__all__ = ["RemoteClusterAPI", "RemoteSimulator"]

log = logging.getLogger(__name__)

StorageKey = tuple[str, str]

# Built-in kinds: (version, kind, namespaced). The simulator creates Events but never reads them.
_BUILTIN: dict[StorageKey, tuple[str, str, bool]] = {
    NODES: ("v1", "Node", False),
    PODS: ("v1", "Pod", True),
    CLAIMS: ("v1", "PersistentVolumeClaim", True),
    DEPLOYMENTS: ("v1", "Deployment", True),
    JOBS: ("v1", "Job", True),
    CONFIG_MAPS: ("v1", "ConfigMap", True),
    AUTOSCALERS: ("v2", "HorizontalPodAutoscaler", True),  # KEDA's, for autoscaled KServe InferenceServices
}
_WRITE_ONLY: dict[StorageKey, tuple[str, str, bool]] = {EVENTS: ("v1", "Event", True)}
_CRD_KINDS: frozenset[StorageKey] = frozenset(
    {LEADER_WORKER_SETS, KSERVE_INFERENCE_SERVICES, HTTP_ROUTES, GATEWAYS, AIM_ARTIFACTS, *MODEL_KINDS}
)
_CONFLICT_RETRIES = 8


def _api_error(exc: KubeAPIError) -> APIError:
    """The simulator tells expected refusals (404, 409) from failures by the embedded server's error type."""
    return APIError(exc.status, exc.reason, exc.message)


@dataclass
class _WriteResult:
    obj: dict[str, Any]


class _RemoteStore:
    """What the simulator reads: `get`, `items` and `listeners`, over the informers' caches."""

    def __init__(self) -> None:
        self.informers: dict[StorageKey, Informer] = {}
        self.listeners: list[Callable[[WatchEvent], None]] = []

    def get(self, key: StorageKey, namespace: str, name: str) -> dict[str, Any] | None:
        informer = self.informers.get(key)
        return informer.cache.get(namespace, name) if informer is not None else None

    def items(self, key: StorageKey, namespace: str | None = None) -> Iterator[dict[str, Any]]:
        informer = self.informers.get(key)
        if informer is None:
            return iter(())
        objects = informer.cache.list(namespace)
        objects.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        return iter(objects)

    def dispatch(self, key: StorageKey, type_: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        event = WatchEvent(type_, obj, old, 0, key)
        for listener in list(self.listeners):
            listener(event)


class _RemoteTypes:
    """`storage_version(key)`: the served version of a kind (a CRD's first served version), or None."""

    def __init__(self) -> None:
        self.types: dict[StorageKey, ResourceType] = {}

    def storage_version(self, key: StorageKey) -> ResourceType | None:
        return self.types.get(key)


def _builtin_type(key: StorageKey, version: str, kind: str, namespaced: bool) -> ResourceType:
    return ResourceType(
        key[0], version, kind, key[1], kind.lower(), namespaced, has_status=key != CONFIG_MAPS and key != EVENTS
    )


def _crd_type(crd: dict[str, Any]) -> tuple[StorageKey, ResourceType] | None:
    """The kind an Established CRD serves, at its first served version (None while not Established)."""
    spec, status = crd.get("spec") or {}, crd.get("status") or {}
    established = any(
        c.get("type") == "Established" and c.get("status") == "True" for c in status.get("conditions") or []
    )
    versions = [v for v in spec.get("versions") or [] if v.get("served")]
    if not established or not versions:
        return None
    names = spec.get("names") or {}
    key = (spec.get("group", ""), names.get("plural", ""))
    version = versions[0]
    rt = ResourceType(
        key[0],
        version.get("name", ""),
        names.get("kind", ""),
        key[1],
        names.get("singular", ""),
        spec.get("scope") == "Namespaced",
        has_status="status" in (version.get("subresources") or {}),
        builtin=False,
        generation=True,
    )
    return key, rt


def _ref(rt: ResourceType) -> ResourceRef:
    return ResourceRef(rt.group, rt.version, rt.plural, rt.kind, rt.namespaced)


class RemoteClusterAPI:
    """The part of `omectl.sim.apiserver.api.ClusterAPI` the workload simulator uses, over a `ClusterClient`."""

    def __init__(self, client: ClusterClient) -> None:
        self.client = client
        self.name = client.name
        self.store = _RemoteStore()
        self.types = _RemoteTypes()
        self._crd_informer: Informer | None = None
        self._stopping: set[asyncio.Task[None]] = set()  # informers of CRDs that went, stopping (kept referenced)

    # --- informers -------------------------------------------------------------------------------------

    async def start(self, timeout: float = 60.0) -> None:
        """Watch the CRDs and every built-in kind; return once each has listed (and each CRD kind found too)."""
        for key, (version, kind, namespaced) in {**_BUILTIN, **_WRITE_ONLY}.items():
            self.types.types[key] = _builtin_type(key, version, kind, namespaced)
        for key in _BUILTIN:
            self._watch(key)
        self._crd_informer = Informer(self.client, CUSTOM_RESOURCE_DEFINITIONS, handlers=[self._on_crd])
        self._crd_informer.start()
        await self.wait_synced(timeout)

    async def wait_synced(self, timeout: float = 60.0) -> None:
        informers = [*self.store.informers.values(), *([self._crd_informer] if self._crd_informer else [])]
        await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in informers)), timeout)
        # CRD kinds found by the first CRD list started informers of their own meanwhile
        pending = [i for i in self.store.informers.values() if not i.synced.is_set()]
        if pending:
            await asyncio.wait_for(asyncio.gather(*(i.synced.wait() for i in pending)), timeout)

    async def stop(self) -> None:
        informers = [*self.store.informers.values(), *([self._crd_informer] if self._crd_informer else [])]
        self.store.informers.clear()
        self._crd_informer = None
        for informer in informers:
            await informer.stop()
        for task in list(self._stopping):
            await task

    def _watch(self, key: StorageKey) -> None:
        rt = self.types.types[key]

        def handler(type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
            self.store.dispatch(key, type_, obj, old)

        informer = Informer(self.client, _ref(rt), handlers=[handler])
        self.store.informers[key] = informer
        informer.start()

    def _on_crd(self, type_: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool) -> None:
        spec = obj.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        if key not in _CRD_KINDS:
            return
        found = _crd_type(obj) if type_ != "DELETED" else None
        current = self.types.types.get(key)
        if found is not None and (current is None or current.version != found[1].version):
            if current is not None:
                self._unwatch(key)
            self.types.types[key] = found[1]
            self._watch(key)
        elif found is None and current is not None:
            self._unwatch(key)
            if type_ == "DELETED":
                self.store.dispatch(CRD_KEY, type_, obj, old)

    def _unwatch(self, key: StorageKey) -> None:
        self.types.types.pop(key, None)
        informer = self.store.informers.pop(key, None)
        if informer is not None:
            task = asyncio.get_running_loop().create_task(informer.stop())
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)

    # --- writes ----------------------------------------------------------------------------------------

    async def create(self, rt: ResourceType, namespace: str, obj: dict[str, Any], opts: WriteOptions) -> _WriteResult:
        try:
            created = await self.client.create(
                _ref(rt), obj, namespace or None, field_manager=opts.field_manager or None
            )
        except KubeAPIError as exc:
            raise _api_error(exc) from exc
        return _WriteResult(created)

    def _apply_defaults(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        return obj  # the real API server defaults the PUT itself

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], opts: WriteOptions
    ) -> _WriteResult:
        """DELETE at once (grace period 0: no kubelet is there to finish a graceful pod deletion)."""
        try:
            status = await self.client.delete(_ref(rt), name, namespace or None, grace_period_seconds=0)
        except KubeAPIError as exc:
            raise _api_error(exc) from exc
        return _WriteResult(status)

    async def _write_update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        produce: Callable[[dict[str, Any]], dict[str, Any]],
        opts: WriteOptions,
        subresource: str,
        *,
        precondition_rv: str | None = None,
    ) -> _WriteResult:
        """GET the live object, `produce` the new one, PUT it (to the subresource); again on a conflict."""
        ref = _ref(rt)
        ns = namespace or None
        for attempt in range(_CONFLICT_RETRIES):
            try:
                live = await self.client.get(ref, name, ns)
                new = produce(live)
                if new is live or new == live:
                    return _WriteResult(live)
                written = await self.client.replace(
                    ref, new, ns, subresource=subresource or None, field_manager=opts.field_manager or None
                )
                return _WriteResult(written)
            except KubeAPIError as exc:
                if isinstance(exc, Conflict) and attempt < _CONFLICT_RETRIES - 1 and precondition_rv is None:
                    continue
                raise _api_error(exc) from exc
        raise AssertionError("unreachable")


class RemoteSimulator:
    """One cluster's workload simulator against a real API server (`start`, `stop`, `wait_idle`)."""

    def __init__(self, client: ClusterClient, config: SimulatorConfig) -> None:
        self.api = RemoteClusterAPI(client)
        self.config = config
        self.simulator: WorkloadSimulator | None = None

    async def start(self) -> None:
        await self.api.start()
        self.simulator = WorkloadSimulator(self.api, self.config, cluster=self.api.name)
        await self.simulator.start()

    async def wait_idle(self) -> None:
        assert self.simulator is not None
        await self.simulator.wait_idle()

    async def stop(self) -> None:
        if self.simulator is not None:
            await self.simulator.stop()
            self.simulator = None
        await self.api.stop()
