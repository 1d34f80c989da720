"""The kopf peer compares a runtime with its own last status write until its cache has that write's event.

Kopf delivers each object's events on their own, so a runtime's reconcile may read a cached copy older than the
peer's own last status write. Compared with that copy, a status the peer has since replaced looks current: the fleet
benchmark's profile delete and re-create left children at ParentNotFound for good (the stale copy said Resolved,
nothing was written, and the ParentNotFound event that followed changed no spec, so nothing was scheduled)."""

from __future__ import annotations

from typing import Any

from benchmarks.peers.peer import Peer
from omectl.core.ome.runtimes import SERVING_RUNTIME

KEY = (SERVING_RUNTIME, "team-a", "child")


def runtime(resource_version: int, reason: str) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": "child", "namespace": "team-a", "resourceVersion": str(resource_version), "generation": 1},
        "spec": {"supportedModelFormats": []},
        "status": {"conditions": [{"type": "InheritanceReady", "status": "False", "reason": reason}]},
    }


def test_the_own_write_is_kept_while_the_cache_is_older_and_dropped_once_the_cache_has_it() -> None:
    peer = Peer()
    peer.cache.serving.put(runtime(10, "Resolved"))
    peer.own_status_writes[KEY] = runtime(12, "ParentNotFound")

    peer.runtime_event(SERVING_RUNTIME, {"type": "MODIFIED", "object": runtime(11, "Resolved")})
    assert peer.own_status_writes[KEY]["metadata"]["resourceVersion"] == "12", "an older event dropped the own write"

    peer.runtime_event(SERVING_RUNTIME, {"type": "MODIFIED", "object": runtime(12, "ParentNotFound")})
    assert KEY not in peer.own_status_writes


def test_a_newer_event_or_the_deletion_drops_the_own_write() -> None:
    peer = Peer()
    peer.cache.serving.put(runtime(10, "Resolved"))
    peer.own_status_writes[KEY] = runtime(12, "ParentNotFound")
    peer.runtime_event(SERVING_RUNTIME, {"type": "MODIFIED", "object": runtime(14, "ParentNotFound")})
    assert KEY not in peer.own_status_writes

    peer.own_status_writes[KEY] = runtime(20, "Resolved")
    peer.cache.serving.put(runtime(15, "Resolved"))
    peer.runtime_event(SERVING_RUNTIME, {"type": "DELETED", "object": runtime(15, "Resolved")})
    assert KEY not in peer.own_status_writes
