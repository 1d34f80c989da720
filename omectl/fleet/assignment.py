"""Which live replica should own each cluster: rendezvous weights under a balanced load bound.

Every (replica, cluster) pair gets a pseudo-random weight, the same on every replica and every run. Pairs are
taken in order of weight, highest first; a pair assigns its cluster when the cluster has no owner yet and the
replica has room. Room: `floor(C / R)` clusters each, and `C mod R` replicas may take one more, so loads differ by
at most one and no replica is above `ceil(C / R)` while another has room. (Plain rendezvous hashing gave one of
three replicas three of four clusters and another none.) The result depends only on the sets of clusters and
replicas, so every replica computes the same one; a joining or leaving replica moves about its share of clusters
(`tests/ha/test_sharding.py` measures it).

A replica may be *excluded* from some clusters (it reports that it cannot reach them): those pairs are skipped,
and a cluster every replica with room is excluded from goes to its best replica not excluded, over the bound (a
cluster no replica can reach is assigned as if nothing were excluded).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

__all__ = ["assign", "rendezvous_weight"]


def rendezvous_weight(replica: str, cluster: str) -> int:
    """The pseudo-random weight of a (replica, cluster) pair: the same on every replica, on every run."""
    digest = hashlib.blake2b(f"{cluster}\x00{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def assign(
    clusters: Iterable[str], replicas: Iterable[str], excluded: Mapping[str, Iterable[str]] | None = None
) -> dict[str, str]:
    """The desired owner of every cluster; empty when there is no replica."""
    names = sorted(set(clusters))
    live = sorted(set(replicas))
    if not live:
        return {}
    barred = {(r, c) for r, cs in (excluded or {}).items() if r in live for c in cs}
    everywhere = {c for c in names if all((r, c) in barred for r in live)}
    barred = {(r, c) for r, c in barred if c not in everywhere}  # nobody can reach it: as if nothing were excluded
    floor, extra = divmod(len(names), len(live))
    ranked = sorted(((rendezvous_weight(r, c), c, r) for c in names for r in live), reverse=True)
    load = dict.fromkeys(live, 0)
    owners: dict[str, str] = {}
    for _, cluster, replica in ranked:
        if cluster in owners or (replica, cluster) in barred:
            continue
        if load[replica] < floor or (load[replica] == floor and extra > 0):
            if load[replica] == floor:
                extra -= 1
            load[replica] += 1
            owners[cluster] = replica
    for _, cluster, replica in ranked:  # only with exclusions: what no replica with room may take
        if cluster not in owners and (replica, cluster) not in barred:
            owners[cluster] = replica
    return owners
