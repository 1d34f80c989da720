"""A simulated fleet: N embedded clusters, one kubeconfig with a context each, manifests applied to all.

`EmbeddedFleet` runs on the caller's event loop; `BackgroundFleet` runs one on a thread of its own, for
synchronous callers (the demo, kubectl-driven tests) that must never block the loop serving the API.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import orjson
import yaml

from omectl.problems import read_problem, yaml_problem
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.kubeconfig import write_kubeconfig
from omectl.sim.simulator import SimulatorConfig
from omectl.tls import CertificateAuthority

# One config for every cluster, a config per cluster name (absent: none), or a function of the name.
FleetSimulation = SimulatorConfig | Mapping[str, SimulatorConfig | None] | Callable[[str], SimulatorConfig | None]
APPLY_MANAGER = "omectl-dev"
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: the OME CRDs are large


class ManifestError(ValueError):
    """A manifest that cannot be read or applied; `str(exc)` names its file (the one-line message for the operator)."""


def manifest_documents(paths: Iterable[Path | str]) -> list[dict[str, Any]]:
    """Every YAML document under the given files/directories (sorted, recursive), CRDs first."""
    return [doc for _, doc in manifest_entries(paths)]


def manifest_entries(paths: Iterable[Path | str]) -> list[tuple[Path, dict[str, Any]]]:
    """`manifest_documents`, each with the file it came from. Raises ManifestError for a path that does not exist,
    a file that cannot be read or does not parse, and a document that is not a Kubernetes object."""
    entries: list[tuple[Path, dict[str, Any]]] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ManifestError(f"{path}: no such file or directory")
        files = (
            sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml", ".json")) if path.is_dir() else [path]
        )
        for file in files:
            stat = file.stat()
            parsed = _file_documents(file.resolve(), stat.st_mtime_ns, stat.st_size)
            entries.extend((file, orjson.loads(doc)) for doc in parsed)  # a fresh copy: callers may change it
    entries.sort(key=lambda entry: entry[1].get("kind") != "CustomResourceDefinition")
    return entries


@functools.lru_cache(maxsize=256)
def _file_documents(file: Path, mtime_ns: int, size: int) -> tuple[bytes, ...]:
    """One file's documents as JSON, parsed once per version of the file (the OME CRDs take seconds to parse;
    decoding their JSON is ten times faster than copying the parsed objects)."""
    try:
        documents = list(yaml.load_all(file.read_text(encoding="utf-8"), Loader=_YAML_LOADER))
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{file}: cannot read it: {read_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"{file}: not valid YAML: {yaml_problem(exc)}") from None
    docs: list[dict[str, Any]] = []
    for number, doc in enumerate(documents, 1):
        if doc is None or doc == {}:
            continue
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind"):
            raise ManifestError(f"{file}: document {number} is not a Kubernetes object (no apiVersion and kind)")
        if doc["kind"] == "List":
            docs.extend(d for d in doc.get("items") or [] if isinstance(d, dict))
        else:
            docs.append(doc)
    return tuple(orjson.dumps(doc) for doc in docs)


async def apply_document(server: EmbeddedAPIServer, doc: dict[str, Any]) -> str:
    """Server-side apply one manifest in-process; returns `created` or `configured`/`unchanged`."""
    api = server.api
    api_version = doc.get("apiVersion", "")
    group, _, version = api_version.rpartition("/")
    kind = doc.get("kind", "")
    rt = next((t for t in api.types.all() if t.group == group and t.version == version and t.kind == kind), None)
    if rt is None:
        raise ValueError(f"no resource serves {api_version} {kind}")
    meta = doc.get("metadata") or {}
    namespace = (meta.get("namespace") or "default") if rt.namespaced else ""
    opts = WriteOptions(field_manager=APPLY_MANAGER, force=True, field_validation="Strict")
    before = api.store.get(rt.storage_key, namespace, meta.get("name", ""))
    result = await api.patch(
        rt, namespace, meta.get("name", ""), "application/apply-patch+yaml", orjson.dumps(doc), opts
    )
    if before is None:
        return "created"
    return (
        "unchanged"
        if result.obj["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
        else ("configured")
    )


def simulator_for(simulation: FleetSimulation | None, cluster: str) -> SimulatorConfig | None:
    if simulation is None or isinstance(simulation, SimulatorConfig):
        return simulation
    if isinstance(simulation, Mapping):
        return simulation.get(cluster)
    return simulation(cluster)


class EmbeddedFleet:
    """N clusters named `<prefix>1..N`, sharing one CA when TLS is on.

    `simulator` turns on the workload simulator: one `SimulatorConfig` for all, a mapping of cluster name to
    config, or a function of the cluster name (None: that cluster simulates nothing).
    """

    def __init__(
        self,
        count: int = 3,
        *,
        name_prefix: str = "sim-",
        tls: bool = False,
        state_dir: Path | str | None = None,
        ports: list[int] | None = None,
        bookmark_interval: float = 60.0,
        simulator: FleetSimulation | None = None,
    ) -> None:
        if count < 1:
            raise ValueError("a fleet needs at least one cluster")
        ca = CertificateAuthority.generate() if tls else None
        self.servers = [
            EmbeddedAPIServer(
                f"{name_prefix}{i + 1}",
                port=(ports[i] if ports and i < len(ports) else 0),
                tls=tls,
                ca=ca,
                state_dir=state_dir,
                bookmark_interval=bookmark_interval,
                simulator=simulator_for(simulator, f"{name_prefix}{i + 1}"),
            )
            for i in range(count)
        ]

    def __getitem__(self, name: str) -> EmbeddedAPIServer:
        for server in self.servers:
            if server.name == name:
                return server
        raise KeyError(name)

    async def start(self) -> EmbeddedFleet:
        await asyncio.gather(*(s.start() for s in self.servers))
        return self

    async def stop(self) -> None:
        await asyncio.gather(*(s.stop() for s in self.servers))

    def write_kubeconfig(self, path: Path | str) -> Path:
        entries = [s.kubeconfig_entry() for s in self.servers]
        return write_kubeconfig(Path(path), entries, current=self.servers[0].name)

    async def apply(self, paths: Iterable[Path | str]) -> dict[str, list[str]]:
        """Apply every manifest to every cluster; returns `kind/name result` lines per cluster."""
        entries = manifest_entries(paths)
        report: dict[str, list[str]] = {}
        for server in self.servers:
            lines = report.setdefault(server.name, [])
            for file, doc in entries:
                try:
                    outcome = await apply_document(server, doc)
                except (APIError, ValueError) as exc:
                    reason = exc.message if isinstance(exc, APIError) else str(exc)
                    raise ManifestError(
                        f"{file}: cluster {server.name} rejects {doc.get('kind')} "
                        f"{(doc.get('metadata') or {}).get('name')}: {reason}"
                    ) from None
                lines.append(f"{doc.get('kind', '').lower()}/{(doc.get('metadata') or {}).get('name')} {outcome}")
        return report


class BackgroundFleet:
    """An `EmbeddedFleet` served from a daemon thread with its own event loop."""

    def __init__(self, fleet: EmbeddedFleet) -> None:
        self.fleet = fleet
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="embedded-fleet", daemon=True)

    def run(self, coro: Any, timeout: float = 60.0) -> Any:
        """Run a coroutine on the fleet's loop and wait for its result."""
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def start(self) -> BackgroundFleet:
        self._thread.start()
        self.run(self.fleet.start())
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self.run(self.fleet.stop())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        self.loop.close()

    def __enter__(self) -> BackgroundFleet:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
