"""The kopf peer's runtime revisions: the ControllerRevision of each merged spec an InferenceService renders, read and
created as omectl's `RevisionStore` does (what a revision is: `omectl.core.ome.revisions`).

A revision known to the process is not read again; an unknown one is read, and created when missing (numbered
after the runtime's revisions in the namespace, which a list by label finds), and then the runtime's old
unreferenced revisions are collected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchmarks.peers.api import Api, object_path
from omectl.core.ome.revisions import (
    RUNTIME_LABEL,
    Revision,
    next_number,
    revision_name,
    revision_object,
    spec_hash,
    stale_revisions,
)

PREFIX, PLURAL = "/apis/apps/v1", "controllerrevisions"


class PeerRevisions:
    def __init__(self, api: Api) -> None:
        self.api = api
        self.known: dict[tuple[str, str], Revision] = {}
        self.created = 0

    async def get(self, namespace: str, name: str) -> Revision | None:
        known = self.known.get((namespace, name))
        if known is not None:
            return known
        found = await self.api.get(object_path(PREFIX, PLURAL, namespace, name))
        if found is None:
            return None
        revision = self.known[(namespace, name)] = Revision.from_object(found)
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
        """The revision of `merged_spec`, created (and older ones collected) when it is new."""
        name = revision_name(runtime, spec_hash(merged_spec))
        existing = await self.get(namespace, name)
        if existing is not None:
            return existing
        collection = object_path(PREFIX, PLURAL, namespace)
        siblings = [
            Revision.from_object(obj)
            for obj in await self.api.list(collection, label_selector=f"{RUNTIME_LABEL}={runtime}")
        ]
        body = revision_object(namespace, runtime, kind, chain, resource_versions, merged_spec, next_number(siblings))
        created = await self.api.create(collection, body)
        if created is not None:
            self.created += 1
        else:  # another reconcile of the same runtime created it meanwhile
            created = await self.api.get(f"{collection}/{name}")
            if created is None:
                raise RuntimeError(f"revision {namespace}/{name} was neither created nor found")
        revision = self.known[(namespace, name)] = Revision.from_object(created)
        for stale in stale_revisions([*siblings, revision], referenced() | {name}):
            await self.api.delete(f"{collection}/{stale.name}")
            self.known.pop((namespace, stale.name), None)
        return revision
