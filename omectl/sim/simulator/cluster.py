"""What the workload simulator needs of a cluster (`SimulatedCluster`), and the kinds it reads and writes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.store import StorageKey, WatchEvent

NODES: StorageKey = ("", "nodes")
PODS: StorageKey = ("", "pods")
EVENTS: StorageKey = ("", "events")
CLAIMS: StorageKey = ("", "persistentvolumeclaims")
DEPLOYMENTS: StorageKey = ("apps", "deployments")
JOBS: StorageKey = ("batch", "jobs")
AUTOSCALERS: StorageKey = ("autoscaling", "horizontalpodautoscalers")
CONFIG_MAPS: StorageKey = ("", "configmaps")
LEADER_WORKER_SETS: StorageKey = ("leaderworkerset.x-k8s.io", "leaderworkersets")
KSERVE_INFERENCE_SERVICES: StorageKey = ("serving.kserve.io", "inferenceservices")
HTTP_ROUTES: StorageKey = ("gateway.networking.k8s.io", "httproutes")
GATEWAYS: StorageKey = ("gateway.networking.k8s.io", "gateways")
AIM_ARTIFACTS: StorageKey = ("aim.eai.amd.com", "aimartifacts")  # the downloader patches their status.progress
MODEL_KINDS: dict[StorageKey, str] = {
    ("ome.io", "clusterbasemodels"): "ClusterBaseModel",
    ("ome.io", "basemodels"): "BaseModel",
}

ObjectRef = tuple[StorageKey, str, str]  # storage key, namespace, name


class _StoreView(Protocol):
    @property
    def listeners(self) -> list[Callable[[WatchEvent], None]]: ...

    def get(self, key: StorageKey, namespace: str, name: str) -> dict[str, Any] | None: ...

    def items(self, key: StorageKey, namespace: str | None = None) -> Iterator[dict[str, Any]]: ...


class _TypesView(Protocol):
    def storage_version(self, key: StorageKey) -> ResourceType | None: ...


class _Written(Protocol):
    @property
    def obj(self) -> dict[str, Any]: ...


class SimulatedCluster(Protocol):
    """What the simulator reads and writes: the embedded `ClusterAPI` in-process, or
    `omectl.envtest.simulator.RemoteClusterAPI` over HTTP against a real kube-apiserver."""

    @property
    def name(self) -> str: ...

    @property
    def store(self) -> _StoreView: ...

    @property
    def types(self) -> _TypesView: ...

    async def create(self, rt: ResourceType, namespace: str, body: Any, opts: WriteOptions) -> _Written: ...

    async def _write_update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        produce: Callable[[dict[str, Any]], dict[str, Any]],
        opts: WriteOptions,
        subresource: str,
        *,
        precondition_rv: str | None,
    ) -> _Written: ...

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], opts: WriteOptions
    ) -> Any: ...

    def _apply_defaults(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]: ...
