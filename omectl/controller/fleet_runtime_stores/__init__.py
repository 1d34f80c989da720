"""Where the fleet applier (omectl.controller.fleet_runtimes) finds FleetRuntimes and keeps what it knows of them:
the objects (watched), their revisions, their status, their events, and the requests on them.

Two stores answer the same questions: `hub.HubStore`, a hub cluster (the FleetRuntime CRD, ControllerRevisions in
the hub namespace, Events), and `directory.DirectoryStore`, the hubless setup (FleetRuntime files in the clusters
directory, their state in a state directory: omectl.fleet.runtime_files and omectl.fleet.runtime_state). The
applier's rollout logic does not know which it talks to.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from omectl.kube.informer import Handler

__all__ = ["FleetRuntimeStore", "RevisionExists", "StatusMutation"]

StatusMutation = Callable[[dict[str, Any]], dict[str, Any] | None]
"""The status a FleetRuntime should have, from the object as stored now (None: leave it as it is)."""


class RevisionExists(Exception):
    """A revision of that name is kept already (made by an earlier run: read them again)."""


class FleetRuntimeStore(Protocol):
    """The FleetRuntimes of one source and what the controller keeps about them.

    An object handed out is the FleetRuntime as a hub stores it: `metadata.generation` moves when the spec changes,
    `metadata.annotations` carry the promote, abort and rollback requests (core.fleet_runtimes.REQUEST_ANNOTATIONS),
    `status` is the last one written."""

    @property
    def synced(self) -> asyncio.Event:
        """Set once the first full read is done and handed to the handlers."""
        ...

    @property
    def served(self) -> bool:
        """FleetRuntimes can be read at all (a hub without the CRD, a directory that is missing, serves none): a
        store that serves none is not one whose FleetRuntimes were all deleted."""
        ...

    def add_handler(self, handler: Handler) -> None:
        """Call `handler(event, obj, old, initial)` for each object added, changed or deleted (ADDED, MODIFIED,
        DELETED), as an informer does; a status write of the applier's own may or may not be one."""
        ...

    async def run(self) -> None:
        """Watch the FleetRuntimes until cancelled."""
        ...

    def get(self, name: str) -> dict[str, Any] | None: ...

    def objects(self) -> list[dict[str, Any]]:
        """Every FleetRuntime known now."""
        ...

    async def write_status(self, fr: Mapping[str, Any], desired: StatusMutation) -> None:
        """Replace the status of `fr` with `desired(stored)`; nothing when it is gone or the status is the same."""
        ...

    async def record_event(
        self, fr: Mapping[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None:
        """Record one event about `fr` (best effort: never raises)."""
        ...

    async def list_revisions(self, owner: str) -> list[dict[str, Any]]:
        """The kept revisions of FleetRuntime `owner`, shaped as ControllerRevisions: `metadata.name`, `revision`
        (its number), `data` (`hash`, `template`, `namespaces`)."""
        ...

    async def create_revision(self, fr: Mapping[str, Any], name: str, number: int, data: Mapping[str, Any]) -> None:
        """Keep a new revision `name` of `fr`; `RevisionExists` when one of that name is kept."""
        ...

    async def renumber_revision(self, owner: str, name: str, number: int) -> None: ...

    async def delete_revision(self, owner: str, name: str) -> None:
        """Best effort: a revision that cannot be deleted now is pruned at a later revision."""
        ...

    async def close(self) -> None:
        """Release what the store holds (a hub client it owns)."""
        ...
