"""Registration providers: where the fleet's cluster list comes from, and how changes to it are noticed.

`DirectoryProvider` reads a directory of registration files (polled; no inotify dependency);
`SecretProvider` lists and watches labelled Secrets in a hub cluster. Both hand out batches of
`RegistryChange` (the first batch is everything present, later ones the differences) and report a bad
entry in `errors` without stopping the others.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import os
import random
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from omectl.fleet.registration import (
    ClusterRegistration,
    RegistrationError,
    kubeconfig_content,
    kubeconfig_fingerprint,
    kubeconfig_label,
    load_registration_file,
    resolve_kubeconfig,
    validate_cluster_name,
)
from omectl.kube.errors import KubeAPIError

if TYPE_CHECKING:
    from omectl.kube.client import ClusterClient

__all__ = [
    "CLUSTER_LABEL",
    "CLUSTER_NAME_LABEL",
    "CONTEXT_ANNOTATION",
    "DEFAULT_CLUSTERS_DIR",
    "DEFAULT_HUB_NAMESPACE",
    "LABEL_ANNOTATION_PREFIX",
    "DirectoryProvider",
    "RegistrationProvider",
    "RegistryChange",
    "SecretProvider",
    "clusters_dir_from_env",
    "clusters_dir_to_read",
    "diff_registrations",
    "provider_from_settings",
    "registration_from_secret",
]

log = logging.getLogger(__name__)

DEFAULT_CLUSTERS_DIR = Path("clusters")
CLUSTERS_DIR_ENV = "OMECTL_CLUSTERS_DIR"
DEFAULT_HUB_NAMESPACE = "omectl-system"
CLUSTER_LABEL = "omectl.io/cluster"
CLUSTER_NAME_LABEL = "omectl.io/cluster-name"
CONTEXT_ANNOTATION = "omectl.io/context"
LABEL_ANNOTATION_PREFIX = "omectl.io/label."

ChangeKind = Literal["added", "changed", "removed"]


@dataclass(frozen=True)
class RegistryChange:
    """One cluster added, changed (credentials, context or labels) or removed; `removed` carries the old entry."""

    kind: ChangeKind
    registration: ClusterRegistration


@runtime_checkable
class RegistrationProvider(Protocol):
    """A source of cluster registrations."""

    errors: dict[str, str]
    """Entries that could not be used, by source (file path or `secret NS/NAME`), as one-line messages."""

    def snapshot(self) -> dict[str, ClusterRegistration]:
        """The registrations known now, by cluster name."""
        ...

    def watch(self) -> AsyncGenerator[list[RegistryChange], None]:
        """Batches of changes: first everything present (possibly empty), then differences as they happen."""
        ...

    async def close(self) -> None:
        """Stop background work; watchers see no further batches."""
        ...


def diff_registrations(
    old: Mapping[str, ClusterRegistration], new: Mapping[str, ClusterRegistration]
) -> list[RegistryChange]:
    """The changes that turn `old` into `new`: removals first, then changes, then additions, each by name."""
    removed = [RegistryChange("removed", old[name]) for name in sorted(old.keys() - new.keys())]
    changed = [
        RegistryChange("changed", new[name]) for name in sorted(old.keys() & new.keys()) if old[name] != new[name]
    ]
    added = [RegistryChange("added", new[name]) for name in sorted(new.keys() - old.keys())]
    return removed + changed + added


class _Registry:
    """The state both providers share: the current registrations, errors and the watchers to tell."""

    def __init__(self) -> None:
        self._current: dict[str, ClusterRegistration] = {}
        self.errors: dict[str, str] = {}
        self._watchers: set[asyncio.Queue[list[RegistryChange]]] = set()
        self._updated = asyncio.Event()
        self._closed = False

    def snapshot(self) -> dict[str, ClusterRegistration]:
        return dict(self._current)

    def _publish(self, new: dict[str, ClusterRegistration], errors: dict[str, str]) -> list[RegistryChange]:
        changes = diff_registrations(self._current, new)
        for source, message in errors.items():
            if self.errors.get(source) != message:
                log.warning("cluster registration rejected: %s", message)
        self._current = new
        self.errors = errors
        if changes:
            for queue in self._watchers:
                queue.put_nowait(changes)
        self._updated.set()
        self._updated = asyncio.Event()
        return changes

    async def wait_updated(self) -> None:
        """Return after the next refresh (a rescan, a watch event, a failed retry), changed or not."""
        await self._updated.wait()

    async def _initial(self) -> None:
        """Bring the registry up to date before a watcher's first batch."""

    async def _next(self, queue: asyncio.Queue[list[RegistryChange]]) -> list[RegistryChange]:
        return await queue.get()

    async def watch(self) -> AsyncGenerator[list[RegistryChange], None]:
        await self._initial()
        queue: asyncio.Queue[list[RegistryChange]] = asyncio.Queue()
        initial = [RegistryChange("added", reg) for _, reg in sorted(self._current.items())]
        self._watchers.add(queue)
        try:
            yield initial
            while not self._closed:
                batch = await self._next(queue)
                if batch:
                    yield batch
        finally:
            self._watchers.discard(queue)

    async def close(self) -> None:
        self._closed = True
        for queue in self._watchers:
            queue.put_nowait([])


def _validated(reg: ClusterRegistration) -> str | None:
    """The problem with a registration's kubeconfig, or None when it resolves."""
    try:
        resolve_kubeconfig(reg)
    except RegistrationError as exc:
        return str(exc)
    return None


class _Validations:
    """`_validated` of each registration, kept while its kubeconfig's text and context stay the same: a directory
    is scanned every second, and parsing a fleet's kubeconfig (pure-Python YAML) once per registration per scan
    took a sixth of `omectl run`'s samples in a 10-cluster cold start, in a thread holding the interpreter."""

    LIMIT = 256  # kubeconfig texts kept; a directory with more registrations than that re-parses the rest

    def __init__(self) -> None:
        self._known: dict[tuple[str, str, str | None], str | None] = {}

    def __call__(self, reg: ClusterRegistration) -> str | None:
        try:
            content = kubeconfig_content(reg)
        except RegistrationError as exc:
            return str(exc)
        key = (kubeconfig_label(reg), content, reg.context)
        if key not in self._known:
            if len(self._known) >= self.LIMIT:
                self._known.clear()
            self._known[key] = _validated(reg)
        return self._known[key]


class DirectoryProvider(_Registry):
    """Registrations from `*.yaml` / `*.yml` files in one directory (not recursive), rescanned every poll.

    Other YAML (kind cluster configs, for example) is ignored. A change in a referenced kubeconfig file
    changes the registration's fingerprint, so a credential rotation shows up as `changed`.
    """

    def __init__(self, directory: Path | str, *, poll_interval: float = 1.0) -> None:
        super().__init__()
        self.directory = Path(directory)
        self.poll_interval = poll_interval
        self._scanned = False
        self._lock = asyncio.Lock()
        self._validated = _Validations()

    def scan(self) -> tuple[dict[str, ClusterRegistration], dict[str, str]]:
        """Read the directory now: the usable registrations by name, and the errors by file."""
        registrations: dict[str, ClusterRegistration] = {}
        claimed_by: dict[str, Path] = {}
        errors: dict[str, str] = {}
        if not self.directory.is_dir():
            errors[str(self.directory)] = f"clusters directory not found: {self.directory}"
            return registrations, errors
        files = sorted(
            (p for p in self.directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file()),
            key=lambda p: p.name,
        )
        for file in files:
            try:
                reg = load_registration_file(file)
            except RegistrationError as exc:
                errors[str(file)] = str(exc)
                continue
            if reg is None:
                continue
            first = claimed_by.get(reg.name)
            if first is not None:
                errors[str(file)] = f'duplicate cluster name "{reg.name}" in {first.name} and {file.name}'
                continue
            claimed_by[reg.name] = file
            problem = self._validated(reg)
            if problem is not None:
                errors[str(file)] = f"{file}: {problem}"
                continue
            registrations[reg.name] = reg
        return registrations, errors

    async def rescan(self) -> list[RegistryChange]:
        """Scan the directory now and tell watchers what changed; returns the changes."""
        async with self._lock:
            registrations, errors = await asyncio.to_thread(self.scan)
            self._scanned = True
            return self._publish(registrations, errors)

    async def _initial(self) -> None:
        if not self._scanned:
            await self.rescan()

    async def _next(self, queue: asyncio.Queue[list[RegistryChange]]) -> list[RegistryChange]:
        while not self._closed:
            if not queue.empty():
                return queue.get_nowait()
            try:
                return await asyncio.wait_for(queue.get(), self.poll_interval)
            except TimeoutError:
                await self.rescan()
        return []


def _decode(value: Any) -> str:
    return base64.b64decode(str(value), validate=True).decode("utf-8")


def registration_from_secret(secret: dict[str, Any]) -> ClusterRegistration:
    """A hub Secret as a registration; raises `RegistrationError` naming the Secret."""
    metadata = secret.get("metadata") or {}
    namespace = metadata.get("namespace", "")
    secret_name = metadata.get("name", "")
    source = f"secret {namespace}/{secret_name}"
    name = (metadata.get("labels") or {}).get(CLUSTER_NAME_LABEL) or secret_name
    problem = validate_cluster_name(name)
    if problem is not None:
        raise RegistrationError(f"{source}: {problem}")
    data = secret.get("data") or {}
    if "kubeconfig" not in data:
        raise RegistrationError(f"{source}: data.kubeconfig is missing")
    try:
        kubeconfig = _decode(data["kubeconfig"])
        context = _decode(data["context"]).strip() if data.get("context") else None
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise RegistrationError(f"{source}: data is not valid base64-encoded UTF-8") from None
    annotations = metadata.get("annotations") or {}
    context = context or annotations.get(CONTEXT_ANNOTATION) or None
    labels = {
        key[len(LABEL_ANNOTATION_PREFIX) :]: str(value)
        for key, value in annotations.items()
        if key.startswith(LABEL_ANNOTATION_PREFIX) and len(key) > len(LABEL_ANNOTATION_PREFIX)
    }
    return ClusterRegistration(
        name=name,
        kubeconfig_inline=kubeconfig,
        context=context,
        labels=labels,
        source=source,
        fingerprint=kubeconfig_fingerprint(kubeconfig, context),
    )


class _Gone(Exception):
    """The watch's resourceVersion is too old (410): list again."""


class SecretProvider(_Registry):
    """Registrations from Secrets labelled `omectl.io/cluster=true` in one namespace of a hub cluster.

    The cluster name is the `omectl.io/cluster-name` label or the Secret's name; the kubeconfig is
    `data.kubeconfig`; the context `data.context` or the `omectl.io/context` annotation; labels come from
    annotations `omectl.io/label.<key>`. A Secret being deleted (or carrying a deletionTimestamp) removes its
    cluster. The hub is listed, then watched from the list's resourceVersion. A lost connection is retried with
    backoff, resuming from the last resourceVersion seen; a 410 lists again and publishes only the differences.
    While the hub is unreachable the last known registrations stay, and `errors["hub"]` says why.
    """

    def __init__(
        self,
        hub: ClusterClient,
        namespace: str = DEFAULT_HUB_NAMESPACE,
        *,
        backoff_initial: float = 0.8,
        backoff_max: float = 30.0,
        watch_inactivity_timeout: float | None = 180.0,
        owns_hub: bool = False,
    ) -> None:
        super().__init__()
        self.hub = hub
        self.namespace = namespace
        self.backoff_initial = backoff_initial
        self.backoff_max = backoff_max
        self.watch_inactivity_timeout = watch_inactivity_timeout
        self._owns_hub = owns_hub
        self._secrets: dict[str, dict[str, Any]] = {}
        self._synced = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopped = asyncio.Event()
        self.hub_error: str | None = None
        """The last failure talking to the hub (also in `errors["hub"]`), cleared once it answers again."""
        self._resource_version: str | None = None
        self._kubeconfig_problems: dict[tuple[str, str], str | None] = {}

    @property
    def path(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/secrets"

    @property
    def _selector(self) -> str:
        return f"{CLUSTER_LABEL}=true"

    def _rebuild(self) -> list[RegistryChange]:
        registrations: dict[str, ClusterRegistration] = {}
        claimed_by: dict[str, str] = {}
        errors: dict[str, str] = {}
        problems: dict[tuple[str, str], str | None] = {}
        for secret_name in sorted(self._secrets):
            secret = self._secrets[secret_name]
            if (secret.get("metadata") or {}).get("deletionTimestamp"):
                continue
            source = f"secret {self.namespace}/{secret_name}"
            try:
                reg = registration_from_secret(secret)
            except RegistrationError as exc:
                errors[source] = str(exc)
                continue
            first = claimed_by.get(reg.name)
            if first is not None:
                errors[source] = f'duplicate cluster name "{reg.name}" in secret {first} and secret {secret_name}'
                continue
            claimed_by[reg.name] = secret_name
            # Every event rebuilds the whole set; parse each Secret's kubeconfig again only when it changed.
            key = (source, reg.fingerprint)
            known = self._kubeconfig_problems
            problems[key] = known[key] if key in known else _validated(reg)
            problem = problems[key]
            if problem is not None:
                errors[source] = f"{source}: {problem}"
                continue
            registrations[reg.name] = reg
        self._kubeconfig_problems = problems
        if self.hub_error is not None:
            errors["hub"] = self.hub_error
        return self._publish(registrations, errors)

    async def _list(self) -> None:
        body = await self.hub.request("GET", self.path, query={"labelSelector": self._selector})
        self._secrets = {s["metadata"]["name"]: s for s in body.get("items") or []}
        self._resource_version = str((body.get("metadata") or {}).get("resourceVersion", ""))
        self._hub_recovered()
        self._synced.set()

    async def _follow_watch(self) -> None:
        """Apply watch events until the stream ends, remembering the last resourceVersion to resume from."""
        query = {
            "labelSelector": self._selector,
            "resourceVersion": self._resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(random.randint(300, 600)),
        }
        async for event in self.hub.watch(self.path, query, inactivity_timeout=self.watch_inactivity_timeout):
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                if obj.get("code") == 410:
                    raise _Gone
                raise RuntimeError(obj.get("message") or "watch error")
            metadata = obj.get("metadata") or {}
            self._resource_version = metadata.get("resourceVersion") or self._resource_version
            if self.hub_error is not None:
                self._hub_recovered()
            name = metadata.get("name")
            if kind == "BOOKMARK" or not name:
                continue
            if kind == "DELETED":
                self._secrets.pop(name, None)
            else:
                self._secrets[name] = obj
            self._rebuild()

    async def _run(self) -> None:
        delay = self.backoff_initial
        while not self._closed:
            try:
                if self._resource_version is None:
                    await self._list()
                    delay = self.backoff_initial
                await self._follow_watch()
                continue
            except _Gone:
                self._resource_version = None
                continue
            except KubeAPIError as exc:
                if exc.expired:
                    self._resource_version = None
                    continue
                self._hub_failed(exc)
            except Exception as exc:
                # An unreachable hub must never crash the controller: report it, back off, resume the watch
                # from the last resourceVersion (a 410 then means: list again).
                self._hub_failed(exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopped.wait(), delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, self.backoff_max)

    def _hub_recovered(self) -> None:
        self.hub_error = None
        self._rebuild()

    def _hub_failed(self, exc: Exception) -> None:
        self.hub_error = f"hub secrets in {self.namespace}: {' '.join(str(exc).split()) or type(exc).__name__}"
        log.warning("cluster registry: %s", self.hub_error)
        self._rebuild()

    async def _initial(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"secret-provider:{self.namespace}")
        await self._synced.wait()

    async def close(self) -> None:
        await super().close()
        self._stopped.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._owns_hub:
            await self.hub.close()


def clusters_dir_from_env(clusters_dir: Path | str | None = None) -> Path:
    """The clusters directory: the one given, else `$OMECTL_CLUSTERS_DIR`, else `./clusters`.

    The same variable `Settings.clusters_dir` reads for `omectl run`; read here directly because the local
    `cluster` commands start without pydantic (tests/cli/test_startup.py)."""
    if clusters_dir is not None:
        return Path(clusters_dir)
    from_env = os.environ.get(CLUSTERS_DIR_ENV)
    return Path(from_env) if from_env else DEFAULT_CLUSTERS_DIR


def clusters_dir_to_read(clusters_dir: Path | str | None = None) -> Path:
    """`clusters_dir_from_env`, for a command that reads the registrations: a directory named (given, or in
    $OMECTL_CLUSTERS_DIR) must be one (RegistrationError); the default one may be missing (none registered)."""
    directory = clusters_dir_from_env(clusters_dir)
    named = clusters_dir is not None or bool(os.environ.get(CLUSTERS_DIR_ENV))
    if named and not directory.is_dir():
        problem = "is not a directory" if directory.exists() else "does not exist"
        raise RegistrationError(f"clusters directory {directory} {problem}")
    return directory


async def provider_from_settings(
    clusters_dir: Path | str | None = None,
    hub_kubeconfig: Path | str | None = None,
    *,
    hub_context: str | None = None,
    hub_namespace: str = DEFAULT_HUB_NAMESPACE,
    poll_interval: float = 1.0,
) -> RegistrationProvider:
    """The provider the settings ask for: Secrets in a hub when a hub kubeconfig is given, else a directory."""
    if hub_kubeconfig is not None:
        from omectl.kube.client import ClusterClient

        hub = await ClusterClient.from_kubeconfig(Path(hub_kubeconfig), context=hub_context, name="hub")
        return SecretProvider(hub, hub_namespace, owns_hub=True)
    return DirectoryProvider(clusters_dir_from_env(clusters_dir), poll_interval=poll_interval)
