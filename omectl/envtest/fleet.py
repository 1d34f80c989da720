"""`RealFleet`: N real clusters (etcd + kube-apiserver each), one kubeconfig, manifests applied to all.

The counterpart of `omectl.sim.fleet.EmbeddedFleet` with the same surface (`servers`, `start`, `stop`,
`write_kubeconfig`, `apply`), so `omectl dev up --real` and the tests can point at either. Manifests are
applied over HTTP with server-side apply (field manager `omectl-dev`, forced, `fieldValidation=Strict`);
CustomResourceDefinitions go first and each must be Established, and its resource listable, before anything else is
applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omectl.envtest.binaries import EnvtestBinaries, find_binaries
from omectl.envtest.controlplane import RealAPIServer
from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.errors import NotFound, TooManyRequests
from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS, ResourceRef
from omectl.sim.fleet import APPLY_MANAGER, FleetSimulation, manifest_documents, simulator_for
from omectl.sim.kubeconfig import build_kubeconfig, write_kubeconfig

__all__ = ["RealFleet", "apply_documents", "cluster_client", "resource_for"]

ESTABLISHED_TIMEOUT = 60.0


async def cluster_client(server: RealAPIServer) -> ClusterClient:
    """An omectl `ClusterClient` for one real cluster, from the same kubeconfig entry tools get."""
    config = build_kubeconfig([server.kubeconfig_entry()])
    return await ClusterClient.from_kubeconfig(config_dict=config, name=server.name)


async def resource_for(client: ClusterClient, api_version: str, kind: str) -> ResourceRef:
    """The REST resource serving `kind` in `api_version`, from the server's discovery."""
    group, _, version = api_version.rpartition("/")
    path = f"/apis/{group}/{version}" if group else f"/api/{version}"
    try:
        listing = await client.request("GET", path)
    except KubeAPIError as exc:
        raise ValueError(f"cluster {client.name}: no resource serves {api_version} {kind}") from exc
    for resource in listing.get("resources") or []:
        if resource.get("kind") == kind and "/" not in resource.get("name", ""):
            return ResourceRef(group, version, resource["name"], kind, bool(resource.get("namespaced")))
    raise ValueError(f"cluster {client.name}: no resource serves {api_version} {kind}")


async def _wait_established(client: ClusterClient, name: str, timeout: float = ESTABLISHED_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while True:
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        conditions = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}
        if (conditions.get("Established") or {}).get("status") == "True":
            await _wait_listable(client, crd, deadline)
            return
        refused = conditions.get("NamesAccepted") or {}
        if refused.get("status") == "False":
            raise ValueError(f"cluster {client.name}: CRD {name}: {refused.get('message')}")
        if time.monotonic() > deadline:
            raise ValueError(f"cluster {client.name}: CRD {name} not Established after {timeout:.0f} s")
        await asyncio.sleep(0.05)


async def _wait_listable(client: ClusterClient, crd: dict[str, Any], deadline: float) -> None:
    """Until a list of the CRD's resource answers: an Established CRD's storage may still be initialising, and
    kube-apiserver answers 429 `storage is (re)initializing` meanwhile (clients that do not retry would fail)."""
    spec = crd.get("spec") or {}
    served = [v["name"] for v in spec.get("versions") or [] if v.get("served")]
    if not served:
        return
    path = f"/apis/{spec['group']}/{served[0]}/{spec['names']['plural']}"
    while True:
        try:
            await client.request("GET", path, query={"limit": 1})
            return
        except KubeAPIError as exc:
            if not isinstance(exc, TooManyRequests) or time.monotonic() > deadline:
                raise ValueError(f"cluster {client.name}: CRD {crd['metadata']['name']}: {exc}") from None
        await asyncio.sleep(0.05)


async def apply_documents(client: ClusterClient, docs: list[dict[str, Any]]) -> list[str]:
    """Server-side apply every document (CRDs first, each Established before the rest); `kind/name result`."""
    lines: list[str] = []
    crds: list[str] = []
    for index, doc in enumerate(docs):
        is_crd = doc.get("kind") == "CustomResourceDefinition"
        if not is_crd and crds:
            for name in crds:
                await _wait_established(client, name)
            crds.clear()
        meta = doc.get("metadata") or {}
        name = meta.get("name", "")
        ref = (
            CUSTOM_RESOURCE_DEFINITIONS
            if is_crd
            else await resource_for(client, doc.get("apiVersion", ""), doc["kind"])
        )
        namespace = (meta.get("namespace") or "default") if ref.namespaced else None
        try:
            before = await client.get(ref, name, namespace)
        except NotFound:
            before = None
        try:
            after = await client.patch(
                ref, name, doc, namespace, patch_type="apply", field_manager=APPLY_MANAGER, force=True
            )
        except KubeAPIError as exc:
            raise ValueError(f"cluster {client.name}: {doc.get('kind')} {name}: {exc}") from None
        if before is None:
            outcome = "created"
        elif after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]:
            outcome = "unchanged"
        else:
            outcome = "configured"
        lines.append(f"{doc.get('kind', '').lower()}/{name} {outcome}")
        if is_crd:
            crds.append(name)
        if index == len(docs) - 1:
            for crd_name in crds:
                await _wait_established(client, crd_name)
    return lines


class RealFleet:
    """N real clusters named `<prefix>1..N`; `workdir` holds their data (a temporary one is removed on stop).

    `simulator` runs the workload simulator against each cluster as an API client (`omectl.envtest.simulator`):
    one `SimulatorConfig` for all, a mapping of cluster name to config, or a function of the name.
    """

    def __init__(
        self,
        count: int = 1,
        *,
        name_prefix: str = "real-",
        workdir: Path | str | None = None,
        binaries: EnvtestBinaries | None = None,
        simulator: FleetSimulation | None = None,
        extra_args: Iterable[str] = (),
    ) -> None:
        if count < 1:
            raise ValueError("a fleet needs at least one cluster")
        self.binaries = binaries or find_binaries()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="omectl-envtest-"))
        self.servers = [
            RealAPIServer(f"{name_prefix}{i + 1}", self.workdir, binaries=self.binaries, extra_args=list(extra_args))
            for i in range(count)
        ]
        self.simulation = simulator
        self.simulators: dict[str, Any] = {}  # cluster name -> RemoteSimulator
        self._clients: dict[str, ClusterClient] = {}

    def __getitem__(self, name: str) -> RealAPIServer:
        for server in self.servers:
            if server.name == name:
                return server
        raise KeyError(name)

    async def start(self) -> RealFleet:
        try:
            await asyncio.gather(*(server.start() for server in self.servers))
            for server in self.servers:
                self._clients[server.name] = await cluster_client(server)
        except BaseException:
            await self.stop()
            raise
        return self

    def client(self, name: str) -> ClusterClient:
        return self._clients[name]

    async def start_simulators(self) -> None:
        """The workload simulator per cluster that has a config (after the CRDs are applied: it needs the kinds)."""
        from omectl.envtest.simulator import RemoteSimulator

        for server in self.servers:
            config = simulator_for(self.simulation, server.name)
            if config is None or server.name in self.simulators:
                continue
            simulator = RemoteSimulator(self._clients[server.name], config)
            await simulator.start()
            self.simulators[server.name] = simulator

    async def stop(self) -> None:
        for simulator in self.simulators.values():
            await simulator.stop()
        self.simulators.clear()
        for client in self._clients.values():
            await client.close()
        self._clients.clear()
        await asyncio.gather(*(server.stop() for server in self.servers), return_exceptions=True)
        if self._own_workdir:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.workdir)

    async def wait_crashed(self) -> str:
        """Wait until some cluster's etcd or kube-apiserver dies unasked; the report carries its log tail."""
        waits = [asyncio.ensure_future(server.wait_crashed()) for server in self.servers]
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
            return next(iter(done)).result()
        finally:
            for wait in waits:
                wait.cancel()

    def write_kubeconfig(self, path: Path | str) -> Path:
        entries = [s.kubeconfig_entry() for s in self.servers]
        return write_kubeconfig(Path(path), entries, current=self.servers[0].name)

    async def apply(self, paths: Iterable[Path | str]) -> dict[str, list[str]]:
        """Apply every manifest to every cluster; returns `kind/name result` lines per cluster."""
        docs = manifest_documents(paths)
        results = await asyncio.gather(*(apply_documents(self._clients[s.name], docs) for s in self.servers))
        return {server.name: lines for server, lines in zip(self.servers, results, strict=True)}
