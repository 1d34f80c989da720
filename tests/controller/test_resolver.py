"""The shared resolver: memoized by resourceVersion, never stale, prefix reuse, bounded, per-cluster keys."""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

import pytest
from aiocache import Cache
from aiocache.serializers import NullSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.controller.ome.lookup import CacheLookup
from omectl.controller.ome.resolver import ChainResolver
from omectl.core.ome.inheritance import ChainError, ref_of, resolve_chain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.runtimes import RuntimeRef
from omectl.kube.cache import ObjectCache
from tests.core.runtime_graphs import GRAPHS, KEYS, NAMES, runtime_object

_rv = itertools.count(1)


def runtime(kind: str, name: str, parent: str | None, image: str, namespace: str = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": str(next(_rv))}
    if kind == "ServingRuntime":
        meta["namespace"] = namespace
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": kind,
        "metadata": meta,
        "spec": {"engineConfig": {"runner": {"name": "ome-container", "image": image, "args": [f"--{name}"]}}},
    }


class Caches:
    def __init__(self) -> None:
        self.serving = ObjectCache()
        self.cluster_serving = ObjectCache()

    def put(self, obj: dict[str, Any]) -> None:
        (self.serving if obj["kind"] == "ServingRuntime" else self.cluster_serving).upsert(obj)

    def drop(self, kind: str, name: str, namespace: str = "ns") -> None:
        if kind == "ServingRuntime":
            self.serving.delete(namespace, name)
        else:
            self.cluster_serving.delete("", name)

    def lookup(self) -> CacheLookup:
        return CacheLookup(self.serving, self.cluster_serving)


def expected_spec(start: dict[str, Any], caches: Caches) -> dict[str, Any]:
    return merge_chain(spec_layers(resolve_chain(start, caches.lookup()))).spec


def chain_of_four(caches: Caches) -> list[dict[str, Any]]:
    objs = [
        runtime("ClusterServingRuntime", "root", None, "img:0"),
        runtime("ClusterServingRuntime", "mid", "root", "img:1"),
        runtime("ServingRuntime", "child", "mid", ""),
        runtime("ServingRuntime", "leaf", "child", ""),
    ]
    for obj in objs:
        caches.put(obj)
    return objs


async def test_hits_after_the_first_resolve_and_prefixes_are_reused() -> None:
    caches = Caches()
    objs = chain_of_four(caches)
    resolver = ChainResolver()
    first = await resolver.resolve("c1", objs[3], caches.lookup())
    assert not first.cache_hit
    assert resolver.stats.merges == 4
    again = await resolver.resolve("c1", objs[3], caches.lookup())
    assert again.cache_hit
    assert again.result is first.result
    sibling = runtime("ServingRuntime", "sibling", "child", "")
    caches.put(sibling)
    await resolver.resolve("c1", sibling, caches.lookup())
    assert resolver.stats.merges == 5  # only the sibling's own layer: root, mid and child came from the cache


async def test_a_parent_edit_is_never_served_stale() -> None:
    caches = Caches()
    objs = chain_of_four(caches)
    resolver = ChainResolver()
    await resolver.resolve("c1", objs[3], caches.lookup())
    edited = runtime("ClusterServingRuntime", "root", None, "img:NEW")
    caches.put(edited)
    after = await resolver.resolve("c1", objs[3], caches.lookup())
    assert not after.cache_hit
    assert after.result.spec["engineConfig"]["runner"]["image"] == "img:1"  # mid still overrides the image
    caches.put(runtime("ClusterServingRuntime", "mid", "root", ""))
    later = await resolver.resolve("c1", objs[3], caches.lookup())
    assert later.result.spec["engineConfig"]["runner"]["image"] == "img:NEW"


async def test_a_shadowing_serving_runtime_invalidates_the_memoized_chain() -> None:
    caches = Caches()
    objs = chain_of_four(caches)
    resolver = ChainResolver()
    await resolver.resolve("c1", objs[2], caches.lookup())
    caches.put(runtime("ServingRuntime", "mid", None, "img:shadow"))  # same namespace as child
    after = await resolver.resolve("c1", objs[2], caches.lookup())
    assert after.names == ("mid", "child")
    assert after.result.spec["engineConfig"]["runner"]["image"] == "img:shadow"


async def test_clusters_never_share_entries_keyed_by_resource_version() -> None:
    one, two = Caches(), Caches()
    a = runtime("ClusterServingRuntime", "p", None, "img:a")
    b = dict(a, spec={"engineConfig": {"runner": {"name": "ome-container", "image": "img:b"}}})
    one.put(a)
    two.put(b)  # same name and resourceVersion in another cluster, different content
    resolver = ChainResolver()
    first = await resolver.resolve("c1", a, one.lookup())
    second = await resolver.resolve("c2", b, two.lookup())
    assert first.result.spec["engineConfig"]["runner"]["image"] == "img:a"
    assert second.result.spec["engineConfig"]["runner"]["image"] == "img:b"


async def test_the_first_level_is_bounded() -> None:
    caches = Caches()
    resolver = ChainResolver(max_entries=10)
    for i in range(50):
        obj = runtime("ClusterServingRuntime", f"r{i}", None, f"img:{i}")
        caches.put(obj)
        await resolver.resolve("c1", obj, caches.lookup())
    assert len(resolver) == 10
    assert resolver.stats.evictions == 40


async def test_what_the_first_level_forgets_the_second_forgets_too() -> None:
    caches = Caches()
    second = Cache(Cache.MEMORY, serializer=NullSerializer(), timeout=None)
    resolver = ChainResolver(max_entries=2, second_level=second)
    keys = []
    for i in range(3):
        obj = runtime("ClusterServingRuntime", f"r{i}", None, f"img:{i}")
        caches.put(obj)
        keys.append((await resolver.resolve("c1", obj, caches.lookup())).key)
    assert await second.get(keys[0]) is None  # evicted from both levels
    assert await second.get(keys[2]) is not None


async def test_an_edited_chain_keeps_only_its_newest_merge_in_both_levels() -> None:
    # Each edit gives the chain new resourceVersions: the old merges are unreachable and must not pile up until the
    # LRU's bound (at 200 edits/s they filled 50,000 entries).
    caches = Caches()
    objs = chain_of_four(caches)
    second = Cache(Cache.MEMORY, serializer=NullSerializer(), timeout=None)
    resolver = ChainResolver(second_level=second)
    first = await resolver.resolve("c1", objs[3], caches.lookup())
    assert len(resolver) == 4  # root, root+mid, ..+child, ..+leaf
    keys = [first.key]
    for i in range(20):
        edited = runtime("ServingRuntime", "child", "mid", f"img:{i}")
        caches.put(edited)
        keys.append((await resolver.resolve("c1", objs[3], caches.lookup())).key)
    assert len(resolver) == 4 and resolver.stats.evictions == 0
    assert resolver.stats.superseded == 2 * 20  # the child's and the leaf's chains, once per edit
    assert [await second.get(key) is not None for key in keys] == [False] * 20 + [True]
    for depth in range(3):  # the untouched prefixes stay, in both levels
        assert await second.get(("c1", keys[-1][1][: depth + 1])) is not None
    again = await resolver.resolve("c1", copy.deepcopy(objs[3]), caches.lookup())
    assert again.cache_hit and again.result.spec["engineConfig"]["runner"]["image"] == "img:19"


async def test_a_deleted_runtime_takes_every_merge_and_memo_holding_it_from_both_levels() -> None:
    caches = Caches()
    objs = chain_of_four(caches)  # root <- mid <- child <- leaf
    other = runtime("ClusterServingRuntime", "other", None, "img:other")
    caches.put(other)
    second = Cache(Cache.MEMORY, serializer=NullSerializer(), timeout=None)
    resolver = ChainResolver(second_level=second)
    leaf = await resolver.resolve("c1", objs[3], caches.lookup())
    kept = await resolver.resolve("c1", other, caches.lookup())
    elsewhere = await resolver.resolve("c2", objs[1], caches.lookup())  # the same names in another cluster
    assert len(resolver) == 7  # c1: root, +mid, +child, +leaf, other; c2: root, +mid
    caches.drop("ServingRuntime", "child")
    resolver.forget_runtime("c1", ref_of(objs[2]))
    # root and root+mid stay (they do not hold child); child's and leaf's chains go, and so do their memos
    assert len(resolver) == 5
    assert {c.names for c in (m.hit for m in resolver._chains.values())} == {("other",), ("root", "mid")}
    await resolver.resolve("c1", other, caches.lookup())  # the second level forgets at the next resolve
    assert await second.get(leaf.key) is None and await second.get(("c1", leaf.key[1][:3])) is None
    assert await second.get(("c1", leaf.key[1][:2])) is not None and await second.get(kept.key) is not None
    assert await second.get(elsewhere.key) is not None
    with pytest.raises(ChainError):
        await resolver.resolve("c1", objs[3], caches.lookup())  # leaf's parent is gone: not served from a memo


async def test_a_chain_found_again_under_its_full_key_is_a_hit() -> None:
    # A relist replaces every cached object with an equal one (same resourceVersions): the memoized walk no longer
    # matches by identity, but the merge is still cached under the chain's key and must count as a hit.
    caches = Caches()
    objs = chain_of_four(caches)
    resolver = ChainResolver()
    first = await resolver.resolve("c1", objs[3], caches.lookup())
    relisted = Caches()
    for obj in objs:
        relisted.put(copy.deepcopy(obj))
    again = await resolver.resolve("c1", relisted.serving.get("ns", "leaf"), relisted.lookup())  # type: ignore[arg-type]
    assert (first.cache_hit, again.cache_hit) == (False, True)
    assert (resolver.stats.misses, resolver.stats.hits, resolver.stats.merges) == (1, 1, 4)
    assert again.result is first.result


EDITS = st.lists(
    st.tuples(st.sampled_from(["root", "mid", "child", "leaf"]), st.sampled_from(["img:a", "img:b", ""])),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(EDITS)
def test_resolution_equals_a_fresh_merge_after_any_sequence_of_edits(edits: list[tuple[str, str]]) -> None:
    async def run() -> None:
        caches = Caches()
        objs = {o["metadata"]["name"]: o for o in chain_of_four(caches)}
        parents = {"root": None, "mid": "root", "child": "mid", "leaf": "child"}
        kinds = {"root": "ClusterServingRuntime", "mid": "ClusterServingRuntime"}
        resolver = ChainResolver(max_entries=3)
        for name, image in edits:
            objs[name] = runtime(kinds.get(name, "ServingRuntime"), name, parents[name], image)
            caches.put(objs[name])
            for start in ("leaf", "child"):
                got = await resolver.resolve("c1", objs[start], caches.lookup())
                assert got.result.spec == expected_spec(objs[start], caches)

    asyncio.run(run())


async def test_clusters_never_share_a_prefix_even_with_equal_names_and_resource_versions() -> None:
    # resourceVersions are per cluster and do collide: the child is the same in both clusters, the parent is not.
    one, two = Caches(), Caches()
    parent_one = runtime("ClusterServingRuntime", "p", None, "img:one")
    parent_two = dict(parent_one, spec={"engineConfig": {"runner": {"name": "ome-container", "image": "img:two"}}})
    child = runtime("ServingRuntime", "child", "p", "")
    one.put(parent_one)
    one.put(child)
    two.put(parent_two)
    two.put(dict(child))
    resolver = ChainResolver()
    first = await resolver.resolve("c1", child, one.lookup())
    second = await resolver.resolve("c2", two.serving.get("ns", "child"), two.lookup())  # type: ignore[arg-type]
    assert first.result.spec["engineConfig"]["runner"]["image"] == "img:one"
    assert second.result.spec["engineConfig"]["runner"]["image"] == "img:two"


async def test_a_cluster_runtime_prefix_is_shared_only_by_chains_that_resolved_the_same_parents() -> None:
    caches = Caches()
    for obj in (
        runtime("ClusterServingRuntime", "base", None, "img:cluster"),
        runtime("ClusterServingRuntime", "bridge", "base", ""),
        runtime("ServingRuntime", "base", None, "img:team-a", namespace="team-a"),
        runtime("ServingRuntime", "leaf", "bridge", "", namespace="team-a"),
        runtime("ServingRuntime", "leaf", "bridge", "", namespace="team-b"),
    ):
        caches.put(obj)
    resolver = ChainResolver()
    bridge = await resolver.resolve("c1", caches.cluster_serving.get("", "bridge"), caches.lookup())  # type: ignore[arg-type]
    team_b = await resolver.resolve("c1", caches.serving.get("team-b", "leaf"), caches.lookup())  # type: ignore[arg-type]
    team_a = await resolver.resolve("c1", caches.serving.get("team-a", "leaf"), caches.lookup())  # type: ignore[arg-type]
    assert team_b.key[1][:2] == bridge.key[1]  # team-b reuses the cluster-only prefix
    assert team_a.key[1][:2] != bridge.key[1]
    assert [image(r) for r in (bridge, team_b, team_a)] == ["img:cluster", "img:cluster", "img:team-a"]
    assert str(team_a.context) == "namespace team-a" and str(bridge.context) == "cluster-only"


def image(resolution: Any) -> str:
    return str(resolution.result.spec["engineConfig"]["runner"]["image"])


@settings(max_examples=200, deadline=None)
@given(GRAPHS, st.lists(st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.sampled_from(NAMES))), max_size=8))
def test_the_resolver_equals_a_fresh_resolution_of_every_chain_after_random_creates_and_deletes(
    parents: dict[RuntimeRef, str | None], edits: list[tuple[RuntimeRef, str | None]]
) -> None:
    async def run() -> None:
        caches = Caches()
        objects = {ref: graph_runtime(ref, parent) for ref, parent in parents.items()}
        for obj in objects.values():
            caches.put(obj)
        resolver = ChainResolver(max_entries=1000)
        for step in range(len(edits) + 1):
            for ref, obj in objects.items():
                try:
                    expected: Any = expected_spec(obj, caches)
                except ChainError as exc:
                    expected = exc.message
                try:
                    got: Any = (await resolver.resolve("c1", obj, caches.lookup())).result.spec
                except ChainError as exc:
                    got = exc.message
                assert got == expected, ref
            if step < len(edits):
                ref, parent = edits[step]
                if ref in objects and parent is None:  # a delete
                    del objects[ref]
                    caches.drop(ref.kind, ref.name, ref.namespace)
                else:  # a create, or a change with a new resourceVersion
                    objects[ref] = graph_runtime(ref, parent, rv=str(next(_rv)))
                    caches.put(objects[ref])

    asyncio.run(run())


def graph_runtime(ref: RuntimeRef, parent: str | None, rv: str = "1") -> dict[str, Any]:
    return runtime_object(ref, parent, rv=rv, image=f"img:{ref}:{rv}")


class CountingLookup:
    """A RuntimeLookup that counts its gets: a warm resolve must only re-check, never walk again."""

    def __init__(self, inner: CacheLookup) -> None:
        self.inner = inner
        self.gets = 0

    def get(self, kind: Any, namespace: str, name: str) -> Any:
        self.gets += 1
        return self.inner.get(kind, namespace, name)


async def test_a_warm_resolve_is_answered_by_the_memo_after_re_checking_its_lookups() -> None:
    caches = Caches()
    objs = chain_of_four(caches)  # root, mid (cluster runtimes) <- child <- leaf (namespace ns)
    resolver = ChainResolver()
    first = await resolver.resolve("c1", objs[3], caches.lookup())
    warm = CountingLookup(caches.lookup())
    second = await resolver.resolve("c1", objs[3], warm)
    third = await resolver.resolve("c1", objs[3], caches.lookup())
    # The memo hands back the one Resolution it keeps; only a walk builds a new one.
    assert third is second and second is not first
    # its re-check: child (found in ns); mid and root (no ServingRuntime of the name in ns, then the cluster one)
    assert warm.gets == 5
    assert (first.cache_hit, second.cache_hit) == (False, True)
    assert (resolver.stats.misses, resolver.stats.hits, resolver.stats.merges) == (1, 2, 4)
    expected_refs = tuple(ref_of(obj) for obj in objs)
    versions = tuple(obj["metadata"]["resourceVersion"] for obj in objs)
    for resolution in (first, second):
        assert resolution.names == ("root", "mid", "child", "leaf")
        assert resolution.refs == expected_refs
        assert str(resolution.context) == "namespace ns"
        assert resolution.key == (
            "c1",
            tuple((ref.kind, ref.namespace, ref.name, rv) for ref, rv in zip(expected_refs, versions, strict=True)),
        )
    # a cluster-only chain re-checks only cluster runtimes
    await resolver.resolve("c1", objs[1], caches.lookup())
    cluster_only = CountingLookup(caches.lookup())
    await resolver.resolve("c1", objs[1], cluster_only)
    assert cluster_only.gets == 1


class CountingCache(ObjectCache):
    """An ObjectCache that counts its reads."""

    gets = 0

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        self.gets += 1
        return super().get(namespace, name)


async def test_a_warm_resolve_skips_its_re_check_while_neither_runtime_cache_has_changed() -> None:
    caches = Caches()
    caches.serving, caches.cluster_serving = CountingCache(), CountingCache()
    objs = chain_of_four(caches)  # root, mid (cluster runtimes) <- child <- leaf (namespace ns)
    resolver = ChainResolver()

    def reads() -> int:
        return caches.serving.gets + caches.cluster_serving.gets  # type: ignore[attr-defined]

    first = await resolver.resolve("c1", objs[3], caches.lookup())
    before = reads()
    assert (await resolver.resolve("c1", objs[3], caches.lookup())).cache_hit
    assert reads() == before  # nothing changed since the walk: not one lookup
    # any change to either cache (here a runtime outside the chain) costs one re-check, then none again
    caches.put(runtime("ServingRuntime", "unrelated", None, "img:9"))
    assert (await resolver.resolve("c1", objs[3], caches.lookup())).cache_hit
    rechecked = reads()
    assert rechecked - before == 5  # child; mid and root, each first as a ServingRuntime of ns
    assert (await resolver.resolve("c1", objs[3], caches.lookup())).cache_hit
    assert reads() == rechecked
    # a lookup with an overlay (an object being admitted) always re-checks
    overlay = CacheLookup(caches.serving, caches.cluster_serving, overlay={("X", "", "none"): None})
    assert (await resolver.resolve("c1", objs[3], overlay)).cache_hit
    assert reads() == rechecked + 5
    # and a parent's edit is never served stale
    mid = runtime("ClusterServingRuntime", "mid", "root", "img:edited")
    caches.put(mid)
    edited = await resolver.resolve("c1", objs[3], caches.lookup())
    assert not edited.cache_hit and edited.result.spec == expected_spec(objs[3], caches) != first.result.spec
    assert edited.result.spec["engineConfig"]["runner"]["image"] == "img:edited"


async def test_the_memo_keeps_the_most_recent_runtimes_within_its_bound() -> None:
    caches = Caches()
    objs = [runtime("ClusterServingRuntime", f"r{i}", None, f"img:{i}") for i in range(3)]
    for obj in objs:
        caches.put(obj)
    resolver = ChainResolver(max_entries=2)

    async def resolve(obj: dict[str, Any]) -> Any:
        return await resolver.resolve("c1", obj, caches.lookup())

    await resolve(objs[0]), await resolve(objs[1])
    memo = [await resolve(objs[0]), await resolve(objs[1])]  # the memo's Resolutions of r0 and r1
    assert [await resolve(objs[0]), await resolve(objs[1])] == memo
    assert all(got is kept for got, kept in zip([await resolve(objs[0]), await resolve(objs[1])], memo, strict=True))
    await resolve(objs[2])  # the oldest memo (r0) goes
    assert await resolve(objs[0]) is not memo[0]
    assert await resolve(objs[1]) is not memo[1]  # r0's new memo pushed r1's out in turn
    kept = await resolve(objs[0])
    assert await resolve(objs[0]) is kept


async def test_replicas_sharing_a_second_level_merge_each_chain_once() -> None:
    caches = Caches()
    objs = chain_of_four(caches)
    shared = Cache(Cache.MEMORY, serializer=NullSerializer(), timeout=None)
    one, two = ChainResolver(second_level=shared), ChainResolver(second_level=shared)
    first = await one.resolve("c1", objs[3], caches.lookup())
    second = await two.resolve("c1", objs[3], caches.lookup())
    assert (one.stats.merges, two.stats.merges) == (4, 0)
    assert second.result.spec == first.result.spec and second.cache_hit is False
    assert len(two) == 1  # found in the second level, kept in its own first level
    relisted = copy.deepcopy(objs[3])
    relisted_caches = Caches()
    for obj in (*objs[:3], relisted):
        relisted_caches.put(obj)
    again = await two.resolve("c1", relisted, relisted_caches.lookup())
    assert again.cache_hit is True and two.stats.merges == 0


async def test_the_stats_count_every_miss_and_every_hit() -> None:
    caches = Caches()
    objs = [runtime("ClusterServingRuntime", f"r{i}", None, f"img:{i}") for i in range(2)]
    for obj in objs:
        caches.put(obj)
    resolver = ChainResolver()
    for obj in objs:
        await resolver.resolve("c1", obj, caches.lookup())
    for _ in range(2):  # equal copies (a relist): found under their full keys, not in the memo
        for obj in objs:
            await resolver.resolve("c1", copy.deepcopy(obj), caches.lookup())
    assert (resolver.stats.misses, resolver.stats.hits, resolver.stats.merges) == (2, 4, 2)


async def test_forgetting_a_cluster_drops_its_entries_from_both_levels_and_the_memo() -> None:
    one, two = Caches(), Caches()
    a = runtime("ClusterServingRuntime", "p", None, "img:a")
    one.put(a)
    two.put(copy.deepcopy(a))
    second = Cache(Cache.MEMORY, serializer=NullSerializer(), timeout=None)
    resolver = ChainResolver(second_level=second)
    gone = await resolver.resolve("c1", a, one.lookup())
    kept = await resolver.resolve("c2", two.cluster_serving.get("", "p"), two.lookup())  # type: ignore[arg-type]
    await resolver.forget_cluster("c1")
    assert len(resolver) == 1 and await second.get(gone.key) is None and await second.get(kept.key) is not None
    again = await resolver.resolve("c1", a, one.lookup())
    assert again.cache_hit is False and resolver.stats.merges == 3  # merged anew: nothing of c1 was left
    assert await resolver.resolve("c2", two.cluster_serving.get("", "p"), two.lookup()) is not None  # type: ignore[arg-type]
