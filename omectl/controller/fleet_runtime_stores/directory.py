"""FleetRuntimes without a hub: read from the YAML files of a directory (omectl.fleet.runtime_files), and what a hub
would hold of them (the object with its generation and status, revisions, events, the requests of `omectl
rollout`) kept in a state directory (omectl.fleet.runtime_state).

The directory is polled as the registration files are (omectl.fleet.providers.DirectoryProvider): read again every
`poll_interval` seconds in a worker thread, so an added, edited or deleted file takes effect without a restart. Each
FleetRuntime is handed out as a hub stores it: the file's labels, annotations and spec, with the requests
applied (`runtime_state.with_requests`), a `metadata.generation` that moves when that spec changes, and the status
last written. What a hub's API server would refuse is reported in one line and changes nothing: the FleetRuntime
keeps the version accepted before, and while a file cannot be parsed no FleetRuntime is taken for deleted.

Everything kept is read back at start, so a restarted controller goes on from the status it wrote (the rollout,
the copies' generations), knows the revisions it numbered, and acts on a request only once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from omectl.api.fleet import API_VERSION, KIND, document_problem, template_problem
from omectl.controller.fleet_runtime_stores import RevisionExists, StatusMutation
from omectl.core.fleet_runtimes import FLEET_RUNTIME_LABEL
from omectl.fleet.runtime_files import FleetRuntimeFiles, Scan
from omectl.fleet.runtime_state import FleetRuntimeState, StateError, with_requests
from omectl.kube import timestamps
from omectl.kube.informer import Handler

__all__ = ["DirectoryStore"]

log = logging.getLogger(__name__)

Change = tuple[str, dict[str, Any], dict[str, Any] | None]
"""(ADDED | MODIFIED | DELETED, the object, the object before)."""


class DirectoryStore:
    """The FleetRuntime files of `directory`; their state in `state_dir`."""

    def __init__(self, directory: Path | str, state_dir: Path | str, *, poll_interval: float = 1.0) -> None:
        self.files = FleetRuntimeFiles(directory, check=document_problem)
        self.state = FleetRuntimeState(state_dir)
        self.poll_interval = poll_interval
        self._synced = asyncio.Event()
        self.errors: dict[str, str] = {}
        """What is wrong with the files, one line each, by source (also logged once)."""
        self._served = False
        self._objects: dict[str, dict[str, Any]] = {}  # name -> the FleetRuntime as handed out
        self._sources: dict[str, dict[str, Any]] = {}  # name -> the file's version it was made from
        self._kept: dict[str, dict[str, Any]] = {}  # name -> as an earlier run left it, until the first merge
        self._handlers: list[Handler] = []
        self._lock = asyncio.Lock()  # a refresh and a status write change the same objects
        self._events = asyncio.Lock()  # an event is appended to what the last one left
        self._loaded = False

    @property
    def synced(self) -> asyncio.Event:
        return self._synced

    @property
    def served(self) -> bool:
        return self._served

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, name: str) -> dict[str, Any] | None:
        return self._objects.get(name)

    def objects(self) -> list[dict[str, Any]]:
        return list(self._objects.values())

    async def run(self) -> None:
        while True:
            try:
                await self.refresh()
            except Exception:  # a directory that cannot be read now (its permissions) is read again at the next poll
                log.exception("fleet runtimes: cannot read %s", self.files.directory)
            await asyncio.sleep(self.poll_interval)

    async def close(self) -> None:
        return None

    # --- reading the files ---------------------------------------------------------------------------------

    async def refresh(self) -> None:
        """Read the files (and the state, the first time) now; hand the changes to the handlers."""
        scan, requests, stored = await asyncio.to_thread(self._read, list(self._objects))
        async with self._lock:
            if not self._loaded:
                self._load(stored)
            changes = self._merge(scan, requests)
            for event, obj, _ in changes:
                await self._persist(event, obj)
        self._served = scan.served
        await self._report(scan)
        initial = not self.synced.is_set()
        for event, obj, old in changes:
            for handler in self._handlers:
                handler(event, obj, old, initial)
        self.synced.set()

    def _read(self, known: list[str]) -> tuple[Scan, dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """In a worker thread: the files, the requests of every FleetRuntime, and (the first time) what is kept."""
        scan = self.files.scan()
        stored: dict[str, dict[str, Any]] = {}
        if not self._loaded:
            for name in self.state.names():
                with _reported(f"fleetruntime {name}"):
                    found = self.state.read(name)
                    if found is not None:
                        stored[name] = found
        requests: dict[str, dict[str, Any]] = {}
        for name in {*scan.runtimes, *known, *stored}:
            with _reported(f"fleetruntime {name}"):
                requests[name] = self.state.requests(name)
        return scan, requests, stored

    def _load(self, stored: Mapping[str, dict[str, Any]]) -> None:
        """What an earlier run kept: each FleetRuntime as it was (its uid, generation and status), for the first
        merge to go on from."""
        for name, record in stored.items():
            self._sources[name] = record.get("source") or {}
            self._kept[name] = {k: v for k, v in record.items() if k != "source"}
        self._loaded = True

    def _merge(self, scan: Scan, requests: Mapping[str, Mapping[str, Any]]) -> list[Change]:
        """The changes the scan makes: a FleetRuntime whose file is gone is deleted, unless the scan cannot tell
        (a file that does not parse, a directory that is missing) or its document is refused."""
        keep_missing = not scan.complete or not scan.served
        known = {**self._kept, **self._objects}
        changes: list[Change] = []
        for name in sorted({*scan.runtimes, *known}):
            old, before = self._objects.get(name), known.get(name)
            found = scan.runtimes.get(name)
            if found is not None:
                metadata = found.document.get("metadata") or {}
                source = {
                    "file": str(found.file),
                    "metadata": {k: metadata[k] for k in ("labels", "annotations") if metadata.get(k)},
                    "spec": found.document.get("spec") or {},
                }
            elif keep_missing or name in scan.refused:
                source = self._sources.get(name) or {}
            else:
                assert before is not None
                self._objects.pop(name, None)
                self._sources.pop(name, None)
                changes.append(("DELETED", before, None))
                continue
            obj = _made(name, source, requests.get(name) or {}, before)
            if obj == old and source == self._sources.get(name):
                continue
            if before is None or obj["metadata"]["generation"] != before["metadata"].get("generation"):
                generation = obj["metadata"]["generation"]
                log.info("fleet runtimes: %s: read from %s (generation %s)", name, source.get("file"), generation)
            self._objects[name], self._sources[name] = obj, source
            changes.append(("ADDED" if old is None else "MODIFIED", obj, old))
        self._kept = {}
        return changes

    async def _persist(self, event: str, obj: Mapping[str, Any]) -> None:
        name = obj["metadata"]["name"]
        try:
            if event == "DELETED":
                log.info("fleet runtimes: %s: its file is gone: deleted", name)
                await asyncio.to_thread(self.state.remove, name)
            else:
                await asyncio.to_thread(self.state.write, name, self._record(name, obj))
        except OSError as exc:
            log.warning("fleet runtimes: %s: cannot keep its state in %s: %s", name, self.state.root, exc)

    def _record(self, name: str, obj: Mapping[str, Any]) -> dict[str, Any]:
        return {**obj, "source": self._sources.get(name) or {}}

    async def _report(self, scan: Scan) -> None:
        """What is wrong: logged once, and kept in the state directory for `omectl rollout` to say."""
        errors = dict(scan.errors)
        for name, obj in self._objects.items():
            problem = template_problem(obj.get("spec") or {})
            if problem is not None:
                source = self._sources[name].get("file") or name
                errors[f"{source}: {name}"] = (
                    f"{source}: fleetruntime {name}: {problem} (Invalid: nothing is applied or deleted)"
                )
        if errors == self.errors:
            return
        for source, message in errors.items():
            if self.errors.get(source) != message:
                log.warning("fleet runtimes: %s", message)
        self.errors = errors
        try:
            await asyncio.to_thread(self.state.write_problems, errors)
        except OSError as exc:
            log.warning("fleet runtimes: cannot keep what is wrong in %s: %s", self.state.root, exc)

    # --- writing what a hub would hold ---------------------------------------------------------------------

    async def write_status(self, fr: Mapping[str, Any], desired: StatusMutation) -> None:
        name = fr["metadata"]["name"]
        async with self._lock:
            obj = self._objects.get(name)
            if obj is None:
                return
            status = desired(dict(obj))
            if status is None or status == (obj.get("status") or {}):
                return
            written = {**obj, "status": status}
            await asyncio.to_thread(self.state.write, name, self._record(name, written))
            self._objects[name] = written

    async def record_event(
        self, fr: Mapping[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None:
        name = fr["metadata"]["name"]
        if name not in self._objects:
            return
        event = {"time": timestamps.now(), "type": type_, "reason": reason, "message": message}
        try:
            async with self._events:
                await asyncio.to_thread(self.state.append_event, name, event)
        except (OSError, StateError) as exc:
            log.warning("fleet runtimes: %s: event %s not kept: %s", name, reason, exc)

    async def list_revisions(self, owner: str) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.state.revisions, owner)

    async def create_revision(self, fr: Mapping[str, Any], name: str, number: int, data: Mapping[str, Any]) -> None:
        owner = fr["metadata"]["name"]
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {"name": name, "labels": {FLEET_RUNTIME_LABEL: owner}, "creationTimestamp": timestamps.now()},
            "revision": number,
            "data": dict(data),
        }
        if not await asyncio.to_thread(self.state.create_revision, owner, body):
            raise RevisionExists(name)

    async def renumber_revision(self, owner: str, name: str, number: int) -> None:
        await asyncio.to_thread(self.state.renumber_revision, owner, name, number)

    async def delete_revision(self, owner: str, name: str) -> None:
        with contextlib.suppress(OSError):
            await asyncio.to_thread(self.state.delete_revision, owner, name)


@contextlib.contextmanager
def _reported(what: str) -> Iterator[None]:
    """A state file that cannot be read is logged, and taken for absent."""
    try:
        yield
    except StateError as exc:
        log.warning("fleet runtimes: %s: %s", what, exc)


def _made(
    name: str, source: Mapping[str, Any], requests: Mapping[str, Any], old: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The FleetRuntime as a hub would hold it: the file's version with the requests applied; its uid, creation time
    and status kept; its generation one more than before when the spec changed."""
    document = {"apiVersion": API_VERSION, "kind": KIND, "metadata": dict(source.get("metadata") or {})}
    document["spec"] = source.get("spec") or {}
    made = with_requests(document, requests)
    before: Mapping[str, Any] = (old or {}).get("metadata") or {}
    generation = int(before.get("generation") or 0)
    if old is None or old.get("spec") != made["spec"]:
        generation += 1
    metadata = {
        "name": name,
        "uid": before.get("uid") or str(uuid.uuid4()),
        "creationTimestamp": before.get("creationTimestamp") or timestamps.now(),
        "generation": generation,
        **{k: v for k, v in made["metadata"].items() if k in ("labels", "annotations")},
    }
    obj = {**made, "metadata": metadata}
    if old is not None and old.get("status") is not None:
        obj["status"] = old["status"]
    return obj
