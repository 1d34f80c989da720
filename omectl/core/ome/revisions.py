"""Runtime revisions as objects: the immutable ControllerRevision snapshot of a merged runtime spec, its name, and
which revisions a collection may delete. Pure; reading and writing them is the controller's
(`omectl/controller/ome/revisions.py`).

A revision lives in the InferenceService's namespace, is named `<runtime>-<hash>` (the hash covers the merged
spec), carries the labels `ome.io/runtime` and `ome.io/runtime-kind`, and holds in `data` the chain, the chain's
resourceVersions and the merged spec; `revision` counts up per runtime and namespace. Revisions still referenced
by an InferenceService (pinned in its spec or recorded in its status) are never deleted; the others beyond the
newest `KEEP_UNREFERENCED` per runtime are collected.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

__all__ = [
    "KEEP_UNREFERENCED",
    "RUNTIME_KIND_LABEL",
    "RUNTIME_LABEL",
    "Revision",
    "next_number",
    "referenced_revisions",
    "revision_name",
    "revision_object",
    "spec_hash",
    "stale_revisions",
]

RUNTIME_LABEL: Final = "ome.io/runtime"
RUNTIME_KIND_LABEL: Final = "ome.io/runtime-kind"
KEEP_UNREFERENCED: Final = 10


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


def revision_object(
    namespace: str,
    runtime: str,
    kind: str,
    chain: Sequence[str],
    resource_versions: Sequence[str],
    merged_spec: Mapping[str, Any],
    number: int,
) -> dict[str, Any]:
    """The ControllerRevision of `merged_spec`, numbered `number` among the runtime's revisions in `namespace`."""
    digest = spec_hash(merged_spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": revision_name(runtime, digest),
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


def next_number(siblings: Iterable[Revision]) -> int:
    """The number of a runtime's next revision in a namespace, after its `siblings` there."""
    return max((r.number for r in siblings), default=0) + 1


def stale_revisions(revisions: Iterable[Revision], referenced: set[str]) -> list[Revision]:
    """Of one runtime's revisions in a namespace, those to collect: unreferenced, beyond the newest
    `KEEP_UNREFERENCED` unreferenced ones."""
    unreferenced = sorted((r for r in revisions if r.name not in referenced), key=lambda r: r.number, reverse=True)
    return unreferenced[KEEP_UNREFERENCED:]


def referenced_revisions(isvcs: Iterable[Mapping[str, Any]]) -> set[str]:
    """The revisions the InferenceServices pin (`spec.runtime.revision`) or record (`status.runtime.revision`)."""
    names: set[str] = set()
    for isvc in isvcs:
        pinned = ((isvc.get("spec") or {}).get("runtime") or {}).get("revision")
        recorded = ((isvc.get("status") or {}).get("runtime") or {}).get("revision")
        names.update(n for n in (pinned, recorded) if n)
    return names
