"""The shared, memoized chain resolver: one instance for the whole fleet.

A merged spec is cached under the identity *and resourceVersion* of every runtime in its chain, so an entry can
never be stale: any edit anywhere in a chain changes the key. A child's merge starts from its parent's cached
merge (the chain's prefix), so a profile shared by 2,000 children is merged once per profile version. The key names
every runtime of the chain by cluster, kind, namespace and name: a ClusterServingRuntime's merged prefix is shared
only by chains that resolved the same parents (a namespace whose ServingRuntime shadows one of them gets its own).

The hot path is an in-process LRU (a dict lookup); aiocache is the pluggable second level behind it (memory by
default, a shared backend where several replicas should share merges of identical content). The first level keeps
one merge per chain, its newest: an edit anywhere in a chain makes the merge of the old versions unreachable (no key
ever names them again), so it is dropped from both levels when the new one is stored, not left to age out of the
LRU (at 200 runtime edits/s that was 50,000 dead merges, ~150 MiB, before the bound took any). For the same reason a
runtime's delete (`forget_runtime`, from the watch) drops every merge whose chain held it.

In front of both, each runtime's last chain is memoized with the lookups that found it: a resolve of the same
runtime object re-checks those lookups by identity instead of walking the chain again, and skips even that while
neither runtime cache has changed since they last held (the caches count their changes: `CacheLookup.stamp`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from aiocache import Cache
from aiocache.serializers import NullSerializer

from omectl.controller.ome.lookup import CacheLookup
from omectl.core.ome.inheritance import ResolutionContext, ResolvedChain, RuntimeLookup, ref_of, resolve_chain
from omectl.core.ome.merge import MergeResult, merge_layer
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeRef

# (cluster, ((kind, namespace, name, resourceVersion), ...)) root first
ChainKey = tuple[str, tuple[tuple[str, str, str, str], ...]]
# the same without the resourceVersions: which chain, whatever its versions
ChainIdentity = tuple[str, tuple[tuple[str, str, str], ...]]


def identity_of(key: ChainKey) -> ChainIdentity:
    cluster, refs = key
    return cluster, tuple((kind, namespace, name) for kind, namespace, name, _ in refs)


class Resolution(NamedTuple):
    """The merged spec of one runtime, with how it was obtained."""

    result: MergeResult
    key: ChainKey
    cache_hit: bool
    names: tuple[str, ...]
    refs: tuple[RuntimeRef, ...]
    """The chain's runtimes, root first (names alone are ambiguous across contexts)."""
    context: ResolutionContext


class _MemoizedChain:
    """The last chain found for one runtime, the lookups (with the objects they returned) that found it, and the
    lookup's stamp when they last held (`CacheLookup.stamp`: while it is unchanged, so are their answers)."""

    __slots__ = ("checks", "hit", "runtime", "stamp")

    def __init__(
        self,
        runtime: Mapping[str, Any],
        checks: tuple[tuple[str, str, str, Mapping[str, Any] | None], ...],
        hit: Resolution,
        stamp: tuple[object, ...] | None,
    ) -> None:
        self.runtime = runtime
        self.checks = checks
        self.hit = hit
        self.stamp = stamp

    def still_valid(self, runtime: Mapping[str, Any], lookup: RuntimeLookup, stamp: tuple[object, ...] | None) -> bool:
        if runtime is not self.runtime:
            return False
        if stamp is not None and stamp == self.stamp:
            return True
        get = lookup.get
        for kind, namespace, name, expected in self.checks:
            if get(kind, namespace, name) is not expected:  # type: ignore[arg-type]
                return False
        self.stamp = stamp
        return True


def _stamp_of(lookup: RuntimeLookup) -> tuple[object, ...] | None:
    return lookup.stamp() if isinstance(lookup, CacheLookup) else None


@dataclass
class ResolverStats:
    hits: int = 0
    misses: int = 0
    merges: int = 0
    evictions: int = 0  # chains dropped by the bound
    superseded: int = 0  # merges dropped for a newer version of their chain


class ChainResolver:
    """Resolves and merges runtime chains for every cluster, memoized by the chain's resourceVersions."""

    def __init__(self, max_entries: int = 50_000, second_level: Any | None = None) -> None:  # pragma: no mutate
        self.max_entries = max_entries
        # chain -> (its key when merged, the merge): only the newest versions of a chain are worth keeping
        self._lru: OrderedDict[ChainIdentity, tuple[ChainKey, MergeResult]] = OrderedDict()
        # timeout=None: aiocache otherwise wraps every call in asyncio.wait_for (a task per get and set)
        self._l2 = (
            second_level
            if second_level is not None
            else Cache(Cache.MEMORY, serializer=NullSerializer(), timeout=None)  # pragma: no mutate
        )
        # The last chain found per runtime, with the lookups that found it: re-checking those lookups by object
        # identity (the informer caches replace an object on every change) is far cheaper than walking again.
        self._chains: OrderedDict[tuple[str, RuntimeRef], _MemoizedChain] = OrderedDict()
        self._forgotten: list[ChainKey] = []  # dropped from the first level, still to drop from the second
        self.stats = ResolverStats()

    def __len__(self) -> int:
        return len(self._lru)

    async def resolve(self, cluster: str, runtime: Mapping[str, Any], lookup: RuntimeLookup) -> Resolution:
        """Resolve `runtime`'s chain in `cluster` and return its merged spec (raises `ChainError`)."""
        if self._forgotten:
            forgotten, self._forgotten = self._forgotten, []
            await self._evict(forgotten)
        memo_key = (cluster, ref_of(runtime))
        memo = self._chains.get(memo_key)
        stamp = _stamp_of(lookup)  # taken before the walk: a change while this resolve awaits makes the next check
        if memo is not None and memo.still_valid(runtime, lookup, stamp):
            self.stats.hits += 1
            return memo.hit
        chain = resolve_chain(runtime, lookup)
        versions = zip(chain.refs, chain.resource_versions, strict=True)  # pragma: no mutate (equal lengths)
        refs = tuple((ref.kind, ref.namespace, ref.name, rv) for ref, rv in versions)
        key: ChainKey = (cluster, refs)
        cached = self._get_l1(key)
        if cached is None:
            self.stats.misses += 1
            result = await self._merge_prefixes(key, chain.runtimes)
        else:
            self.stats.hits += 1
            result = cached
        hit = Resolution(result, key, True, chain.names, chain.refs, chain.context)
        self._remember_chain(memo_key, chain, hit, stamp)
        return Resolution(result, key, cached is not None, chain.names, chain.refs, chain.context)

    async def _merge_prefixes(self, key: ChainKey, runtimes: tuple[Mapping[str, Any], ...]) -> MergeResult:
        # Find the longest cached prefix (the parent's merge), then lay the remaining runtimes over it.
        cluster, refs = key
        start = len(refs)
        base: MergeResult | None = None
        while start > 0:
            prefix_key: ChainKey = (cluster, refs[:start])
            # the second level holds what the first does (and more when shared): the first is only faster
            found = self._get_l1(prefix_key) or await self._get_l2(prefix_key)  # pragma: no mutate
            if found is not None:
                base = found
                break
            start -= 1
        for depth in range(start, len(refs)):
            runtime = runtimes[depth]
            base = merge_layer(base, runtime["metadata"]["name"], runtime.get("spec") or {})
            self.stats.merges += 1
            await self._put((cluster, refs[: depth + 1]), base)
        assert base is not None
        return base

    def _remember_chain(
        self, memo_key: tuple[str, RuntimeRef], chain: ResolvedChain, hit: Resolution, stamp: tuple[object, ...] | None
    ) -> None:
        # Every lookup the walk made, with what it found: in a namespace context, a parent found among the
        # ClusterServingRuntimes was found there only because no ServingRuntime of the namespace shadows it.
        checks: list[tuple[str, str, str, Mapping[str, Any] | None]] = []
        namespace = chain.context.namespace
        parents = zip(chain.refs[-2::-1], chain.runtimes[-2::-1], strict=True)  # pragma: no mutate (equal lengths)
        for ref, runtime in parents:
            if namespace is not None and ref.kind == CLUSTER_SERVING_RUNTIME:
                checks.append((SERVING_RUNTIME, namespace, ref.name, None))
            checks.append((ref.kind, ref.namespace, ref.name, runtime))
        self._chains[memo_key] = _MemoizedChain(chain.runtimes[-1], tuple(checks), hit, stamp)
        if len(self._chains) > self.max_entries:
            self._chains.popitem(last=False)  # pragma: no mutate (last=None is last=False)

    def _get_l1(self, key: ChainKey) -> MergeResult | None:
        identity = identity_of(key)
        found = self._lru.get(identity)
        if found is None or found[0] != key:
            return None
        self._lru.move_to_end(identity)
        return found[1]

    async def _get_l2(self, key: ChainKey) -> MergeResult | None:
        found: MergeResult | None = await self._l2.get(key)
        if found is not None:
            await self._evict(self._put_l1(key, found))
        return found

    async def _put(self, key: ChainKey, value: MergeResult) -> None:
        await self._l2.set(key, value)
        await self._evict(self._put_l1(key, value))

    def _put_l1(self, key: ChainKey, value: MergeResult) -> list[ChainKey]:
        """Store `key`'s merge; the keys to drop from the second level too: the chain's older versions, and the
        least recently used chains beyond the bound."""
        identity = identity_of(key)
        replaced = self._lru.get(identity)
        self._lru[identity] = (key, value)
        self._lru.move_to_end(identity)
        dropped = [replaced[0]] if replaced is not None and replaced[0] != key else []
        self.stats.superseded += len(dropped)
        while len(self._lru) > self.max_entries:
            dropped.append(self._lru.popitem(last=False)[1][0])  # pragma: no mutate (last=None is last=False)
            self.stats.evictions += 1
        return dropped

    async def _evict(self, keys: list[ChainKey]) -> None:
        # What the first level forgets, the second forgets too, so memory stays bounded.
        for key in keys:
            await self._l2.delete(key)

    def holds(self, cluster: str, ref: RuntimeRef) -> bool:
        """Whether a merge of `cluster` cached here has `ref` in its chain."""
        step = (ref.kind, ref.namespace, ref.name)
        return any(i[0] == cluster and step in i[1] for i in self._lru)

    def forget_runtime(self, cluster: str, ref: RuntimeRef) -> None:
        """`ref` was deleted from `cluster`: drop every merge of a chain that holds it, and the memo of every runtime
        whose last chain did (no key names them again; re-creating `ref` starts new chains). Called from the watch's
        event handler, so it only scans (each entry once: a runtime's delete is rare next to its edits); the second
        level forgets the same keys at the next resolve."""
        step = (ref.kind, ref.namespace, ref.name)
        for identity in [i for i in self._lru if i[0] == cluster and step in i[1]]:
            self._forgotten.append(self._lru.pop(identity)[0])
        for memo_key in [k for k, memo in self._chains.items() if k[0] == cluster and ref in memo.hit.refs]:
            del self._chains[memo_key]

    async def forget_cluster(self, cluster: str) -> None:
        """Drop every entry of a cluster (it was removed or its credentials rotated)."""
        for memo_key in [k for k in self._chains if k[0] == cluster]:
            del self._chains[memo_key]
        for identity in [i for i in self._lru if i[0] == cluster]:
            key, _ = self._lru.pop(identity)
            await self._l2.delete(key)
