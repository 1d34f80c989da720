"""Runtime revisions in a cluster: reading and creating the ControllerRevisions of merged runtime specs, and
collecting old ones. What a revision is, its name and which ones may go: `omectl.core.ome.revisions`.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from omectl.core.ome.revisions import (
    KEEP_UNREFERENCED,
    RUNTIME_KIND_LABEL,
    RUNTIME_LABEL,
    Revision,
    next_number,
    revision_name,
    revision_object,
    spec_hash,
    stale_revisions,
)
from omectl.kube.client import ClusterClient
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import CONTROLLER_REVISIONS

# The names of what a revision is stay importable here, where the CLI and the tests read them.
__all__ = ["RUNTIME_KIND_LABEL", "RUNTIME_LABEL", "Revision", "RevisionStore", "revision_name", "spec_hash"]


class RevisionStore:
    """Reads and writes the revisions of one cluster (a small in-memory index avoids re-reading known ones)."""

    def __init__(self, client: ClusterClient) -> None:
        self.client = client
        self._known: dict[tuple[str, str], Revision] = {}

    async def get(self, namespace: str, name: str) -> Revision | None:
        known = self._known.get((namespace, name))
        if known is not None:
            return known
        try:
            obj = await self.client.get(CONTROLLER_REVISIONS, name, namespace=namespace)
        except NotFound:
            return None
        revision = Revision.from_object(obj)
        self._known[(namespace, name)] = revision
        return revision

    async def ensure(
        self,
        namespace: str,
        runtime: str,
        kind: str,
        chain: Sequence[str],
        resource_versions: Sequence[str],
        merged_spec: Mapping[str, Any],
        referenced: Callable[[], set[str]],
    ) -> Revision:
        """The revision of this merged spec, created (and older ones collected) when it is new; `referenced` names
        the revisions that must survive collection (asked only when the runtime already had more than
        `KEEP_UNREFERENCED` revisions: fewer can never be collected, and asking scans the namespace).

        The revision kept holds `merged_spec` itself, not the server's copy of it: its name is the spec's hash, so
        they are equal, and the resolver holds this one anyway (one copy of each runtime's merged spec, not two)."""
        digest = spec_hash(merged_spec)
        name = revision_name(runtime, digest)
        existing = await self.get(namespace, name)
        if existing is not None:
            return self._holding(namespace, existing, merged_spec)
        siblings = await self._list(namespace, runtime)
        body = revision_object(namespace, runtime, kind, chain, resource_versions, merged_spec, next_number(siblings))
        try:
            created = await self.client.create(CONTROLLER_REVISIONS, body, namespace, field_manager=FIELD_MANAGER)
        except Conflict:
            created = await self.client.get(CONTROLLER_REVISIONS, name, namespace=namespace)
        revision = self._holding(namespace, Revision.from_object(created), merged_spec)
        if len(siblings) > KEEP_UNREFERENCED:  # the new one stays: only the older ones beyond that many may go
            await self._collect([*siblings, revision], namespace, referenced() | {name})
        return revision

    def _holding(self, namespace: str, revision: Revision, merged_spec: Mapping[str, Any]) -> Revision:
        if revision.spec is not merged_spec:
            revision = dataclasses.replace(revision, spec=merged_spec)
            self._known[(namespace, revision.name)] = revision
        return revision

    async def _list(self, namespace: str, runtime: str) -> list[Revision]:
        items = await self.client.list_all(CONTROLLER_REVISIONS, namespace, label_selector=f"{RUNTIME_LABEL}={runtime}")
        return [Revision.from_object(obj) for obj in items]

    async def _collect(self, revisions: list[Revision], namespace: str, referenced: set[str]) -> None:
        for stale in stale_revisions(revisions, referenced):
            with contextlib.suppress(NotFound):
                await self.client.delete(CONTROLLER_REVISIONS, stale.name, namespace)
            self._known.pop((namespace, stale.name), None)
