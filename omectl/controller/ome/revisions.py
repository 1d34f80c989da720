"""Runtime revisions: immutable ControllerRevision snapshots of a merged runtime spec.

A revision lives in the InferenceService's namespace, is named `<runtime>-<hash>` (the hash covers the merged
spec), carries the labels `ome.io/runtime` and `ome.io/runtime-kind`, and holds in `data` the chain, the chain's
resourceVersions and the merged spec; `revision` counts up per runtime and namespace. Revisions still referenced
by an InferenceService are never deleted; the others beyond the newest 10 per runtime are collected.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from omectl.kube.client import ClusterClient
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import CONTROLLER_REVISIONS

RUNTIME_LABEL = "ome.io/runtime"
RUNTIME_KIND_LABEL = "ome.io/runtime-kind"
KEEP_UNREFERENCED = 10


def spec_hash(merged_spec: Mapping[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(merged_spec, option=orjson.OPT_SORT_KEYS)).hexdigest()[:10]


def revision_name(runtime: str, digest: str) -> str:
    return f"{runtime}-{digest}"


@dataclass(frozen=True)
class Revision:
    name: str
    runtime: str
    kind: str
    number: int
    hash: str
    chain: tuple[str, ...]
    spec: Mapping[str, Any]

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Revision:
        data = obj.get("data") or {}
        labels = obj["metadata"].get("labels") or {}
        return cls(
            name=obj["metadata"]["name"],
            runtime=labels.get(RUNTIME_LABEL, ""),
            kind=labels.get(RUNTIME_KIND_LABEL, ""),
            number=int(obj.get("revision", 0) or 0),
            hash=data.get("hash", ""),
            chain=tuple(data.get("chain") or ()),
            spec=data.get("spec") or {},
        )


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
        the revisions that must survive collection (asked only when a revision is created)."""
        digest = spec_hash(merged_spec)
        name = revision_name(runtime, digest)
        existing = await self.get(namespace, name)
        if existing is not None:
            return existing
        siblings = await self._list(namespace, runtime)
        number = max((r.number for r in siblings), default=0) + 1
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {RUNTIME_LABEL: runtime, RUNTIME_KIND_LABEL: kind},
            },
            "revision": number,
            "data": {
                "hash": digest,
                "chain": list(chain),
                "resourceVersions": list(resource_versions),
                "spec": merged_spec,
            },
        }
        try:
            created = await self.client.create(CONTROLLER_REVISIONS, body, namespace, field_manager=FIELD_MANAGER)
        except Conflict:
            created = await self.client.get(CONTROLLER_REVISIONS, name, namespace=namespace)
        revision = Revision.from_object(created)
        self._known[(namespace, name)] = revision
        await self._collect([*siblings, revision], namespace, referenced() | {name})
        return revision

    async def _list(self, namespace: str, runtime: str) -> list[Revision]:
        items = await self.client.list_all(CONTROLLER_REVISIONS, namespace, label_selector=f"{RUNTIME_LABEL}={runtime}")
        return [Revision.from_object(obj) for obj in items]

    async def _collect(self, revisions: list[Revision], namespace: str, referenced: set[str]) -> None:
        unreferenced = sorted((r for r in revisions if r.name not in referenced), key=lambda r: r.number, reverse=True)
        for stale in unreferenced[KEEP_UNREFERENCED:]:
            with contextlib.suppress(NotFound):
                await self.client.delete(CONTROLLER_REVISIONS, stale.name, namespace)
            self._known.pop((namespace, stale.name), None)
