"""The shared resolver: memoized by resourceVersion, never stale, prefix reuse, bounded, per-cluster keys."""

from __future__ import annotations

import asyncio
import copy
import itertools
from typing import Any

from aiocache import Cache
from aiocache.serializers import NullSerializer
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.controller.lookup import CacheLookup
from omectl.controller.resolver import ChainResolver
from omectl.core.inheritance import ChainError, resolve_chain, spec_layers
from omectl.core.merge import merge_chain
from omectl.core.runtimes import RuntimeRef
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
