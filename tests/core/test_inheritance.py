"""Chain resolution (lookup in the head's context, depth and cycle limits, exact messages) and the profile rule."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from omectl.core.ome.inheritance import (
    CLUSTER_ONLY,
    INHERITANCE_CYCLE,
    MAX_DEPTH_EXCEEDED,
    PARENT_NOT_FOUND,
    ChainError,
    ResolutionContext,
    inherit_from,
    profile_error,
    ref_of,
    resolve_chain,
    spec_layers,
)
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeKind, RuntimeRef

NAMESPACE = "llama-demo"


class Runtimes:
    """An in-memory RuntimeLookup that records what was asked."""

    def __init__(self, *runtimes: dict[str, Any]) -> None:
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.asked: list[tuple[str, str, str]] = []
        for runtime in runtimes:
            ref = ref_of(runtime)
            self.objects[(ref.kind, ref.namespace, ref.name)] = runtime

    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.asked.append((kind, namespace, name))
        return self.objects.get((kind, namespace, name))


def runtime(
    kind: RuntimeKind,
    name: str,
    parent: str | None = None,
    *,
    namespace: str = NAMESPACE,
    resource_version: str = "1",
    spec: dict[str, Any] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "resourceVersion": resource_version}
    if kind == SERVING_RUNTIME:
        metadata["namespace"] = namespace
    if parent is not None:
        metadata["annotations"] = {"ome.io/inherit-from": parent}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": metadata, "spec": spec or {}}


def sr(name: str, parent: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return runtime(SERVING_RUNTIME, name, parent, **kwargs)


def csr(name: str, parent: str | None = None, **kwargs: Any) -> dict[str, Any]:
    return runtime(CLUSTER_SERVING_RUNTIME, name, parent, **kwargs)


def chain_error(start: dict[str, Any], lookup: Runtimes) -> ChainError:
    with pytest.raises(ChainError) as caught:
        resolve_chain(start, lookup)
    return caught.value


def test_runtime_without_parent_is_a_chain_of_itself() -> None:
    alone = sr("sglang-llama-3-2-3b", resource_version="7")
    chain = resolve_chain(alone, Runtimes(alone))
    assert chain.names == ("sglang-llama-3-2-3b",)
    assert chain.runtimes == (alone,)
    assert chain.refs == (RuntimeRef(SERVING_RUNTIME, NAMESPACE, "sglang-llama-3-2-3b"),)
    assert chain.resource_versions == ("7",)


def test_empty_inherit_from_means_no_parent() -> None:
    alone = sr("a", "")
    assert inherit_from(alone) is None
    assert resolve_chain(alone, Runtimes()).names == ("a",)


def test_three_levels_resolve_root_first() -> None:
    root = csr("sglang-profile", resource_version="10")
    middle = csr("sglang-h100", "sglang-profile", resource_version="11")
    leaf = sr("sglang-llama", "sglang-h100", resource_version="12")
    chain = resolve_chain(leaf, Runtimes(root, middle, leaf))
    assert chain.names == ("sglang-profile", "sglang-h100", "sglang-llama")
    assert chain.runtimes == (root, middle, leaf)
    assert chain.refs == (
        RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "sglang-profile"),
        RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "sglang-h100"),
        RuntimeRef(SERVING_RUNTIME, NAMESPACE, "sglang-llama"),
    )
    assert chain.resource_versions == ("10", "11", "12")


def test_serving_runtime_parent_is_looked_up_in_its_namespace_first() -> None:
    namespaced = sr("base", resource_version="ns")
    cluster = csr("base", resource_version="cluster")
    child = sr("child", "base")
    chain = resolve_chain(child, Runtimes(namespaced, cluster, child))
    assert chain.refs[0] == RuntimeRef(SERVING_RUNTIME, NAMESPACE, "base")
    assert chain.resource_versions == ("ns", "1")


def test_serving_runtime_parent_falls_back_to_a_cluster_runtime() -> None:
    elsewhere = sr("base", namespace="other")
    cluster = csr("base", resource_version="cluster")
    child = sr("child", "base")
    lookup = Runtimes(elsewhere, cluster, child)
    chain = resolve_chain(child, lookup)
    assert chain.refs[0] == RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "base")
    assert lookup.asked == [(SERVING_RUNTIME, NAMESPACE, "base"), (CLUSTER_SERVING_RUNTIME, "", "base")]


def test_cluster_runtime_never_inherits_from_a_serving_runtime() -> None:
    only_namespaced = sr("base")
    cluster_child = csr("cluster-child", "base")
    error = chain_error(cluster_child, Runtimes(only_namespaced, cluster_child))
    assert error.reason == PARENT_NOT_FOUND
    assert error.message == 'inherit-from parent "base" not found (chain so far: [cluster-child])'


def test_a_serving_runtime_chain_looks_in_its_namespace_first_at_every_depth() -> None:
    # The example: a ClusterServingRuntime in the middle of a ServingRuntime's chain.
    cluster_base = csr("nsf-base", resource_version="cluster")
    bridge = csr("nsf-bridge", "nsf-base")
    team_a_base = sr("nsf-base", namespace="team-a")
    team_a_leaf = sr("nsf-leaf", "nsf-bridge", namespace="team-a")
    team_b_leaf = sr("nsf-leaf", "nsf-bridge", namespace="team-b")
    lookup = Runtimes(cluster_base, bridge, team_a_base, team_a_leaf, team_b_leaf)
    team_a = resolve_chain(team_a_leaf, lookup)
    assert team_a.refs == (
        RuntimeRef(SERVING_RUNTIME, "team-a", "nsf-base"),
        RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "nsf-bridge"),
        RuntimeRef(SERVING_RUNTIME, "team-a", "nsf-leaf"),
    )
    assert team_a.context == ResolutionContext("team-a") and str(team_a.context) == "namespace team-a"
    team_b = resolve_chain(team_b_leaf, lookup)
    assert team_b.refs[0] == RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "nsf-base")
    # The ClusterServingRuntime's own chain is cluster-only, whatever namespaces hold.
    own = resolve_chain(bridge, lookup)
    assert own.refs[0] == RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "nsf-base")
    assert own.context == CLUSTER_ONLY and str(own.context) == "cluster-only"


def test_every_lookup_of_a_namespace_chain_tries_the_namespace_then_the_cluster() -> None:
    bridge = csr("bridge", "base")
    leaf = sr("leaf", "bridge", namespace="team-a")
    lookup = Runtimes(bridge, leaf, csr("base"))
    resolve_chain(leaf, lookup)
    assert lookup.asked == [
        (SERVING_RUNTIME, "team-a", "bridge"),
        (CLUSTER_SERVING_RUNTIME, "", "bridge"),
        (SERVING_RUNTIME, "team-a", "base"),
        (CLUSTER_SERVING_RUNTIME, "", "base"),
    ]


def test_a_cycle_can_exist_in_one_namespace_context_only() -> None:
    # bridge -> base; in team-a, base is a ServingRuntime naming bridge again: a cycle there, nowhere else.
    bridge = csr("bridge", "base")
    lookup = Runtimes(bridge, csr("base"), sr("base", "bridge", namespace="team-a"))
    lookup.objects[(SERVING_RUNTIME, "team-a", "leaf")] = leaf_a = sr("leaf", "bridge", namespace="team-a")
    lookup.objects[(SERVING_RUNTIME, "team-b", "leaf")] = leaf_b = sr("leaf", "bridge", namespace="team-b")
    error = chain_error(leaf_a, lookup)
    assert error.reason == INHERITANCE_CYCLE
    assert error.message == "inheritance cycle detected: [leaf bridge base bridge]"
    assert resolve_chain(leaf_b, lookup).names == ("base", "bridge", "leaf")
    assert resolve_chain(bridge, lookup).names == ("base", "bridge")


def test_a_missing_parent_names_the_context_it_was_looked_up_in() -> None:
    leaf = sr("leaf", "bridge", namespace="team-a")
    error = chain_error(leaf, Runtimes(leaf, csr("bridge", "gone")))
    assert error.missing == (ResolutionContext("team-a"), "gone")
    assert [str(ref) for ref in ResolutionContext("team-a").candidates("gone")] == [
        "ServingRuntime/team-a/gone",
        "ClusterServingRuntime/gone",
    ]


def test_a_given_context_resolves_the_part_of_a_namespace_chain_above_a_cluster_runtime() -> None:
    bridge = csr("bridge", "base")
    lookup = Runtimes(bridge, csr("base"), sr("base", namespace="team-a"))
    above = resolve_chain(bridge, lookup, ResolutionContext("team-a"))
    assert above.refs[0] == RuntimeRef(SERVING_RUNTIME, "team-a", "base")
    assert resolve_chain(bridge, lookup).refs[0] == RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "base")


def test_missing_parent_message_from_the_spec() -> None:
    child = sr("sglang-llama-3-2-3b", "sglang-profile")
    error = chain_error(child, Runtimes(child))
    assert error.reason == PARENT_NOT_FOUND
    assert error.message == 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    assert str(error) == error.message


def test_missing_grandparent_lists_the_chain_found_so_far() -> None:
    middle = csr("middle", "gone")
    child = sr("child", "middle")
    error = chain_error(child, Runtimes(middle, child))
    assert error.message == 'inherit-from parent "gone" not found (chain so far: [child middle])'


def five_deep(top_parent: str | None = None) -> tuple[dict[str, Any], Runtimes]:
    runtimes = [csr("r4", top_parent), csr("r3", "r4"), csr("r2", "r3"), csr("r1", "r2"), sr("r0", "r1")]
    return runtimes[-1], Runtimes(*runtimes)


def test_a_chain_of_five_resolves() -> None:
    start, lookup = five_deep()
    assert resolve_chain(start, lookup).names == ("r4", "r3", "r2", "r1", "r0")


def test_a_chain_of_six_exceeds_the_max_depth() -> None:
    start, lookup = five_deep(top_parent="r5")
    lookup.objects[(CLUSTER_SERVING_RUNTIME, "", "r5")] = csr("r5")
    error = chain_error(start, lookup)
    assert error.reason == MAX_DEPTH_EXCEEDED
    assert error.message == "inheritance chain exceeds max depth 5 (chain so far: [r0 r1 r2 r3 r4 r5])"


def test_depth_is_exceeded_whether_or_not_the_sixth_runtime_exists() -> None:
    start, lookup = five_deep(top_parent="r5")
    error = chain_error(start, lookup)
    assert error.reason == MAX_DEPTH_EXCEEDED
    assert (CLUSTER_SERVING_RUNTIME, "", "r5") not in lookup.asked


def test_a_runtime_naming_itself_is_a_cycle() -> None:
    looped = sr("sglang-llama-3-2-3b", "sglang-llama-3-2-3b")
    error = chain_error(looped, Runtimes(looped))
    assert error.reason == INHERITANCE_CYCLE
    assert error.message == "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]"


def test_a_two_runtime_loop_is_a_cycle() -> None:
    a, b = csr("a", "b"), csr("b", "a")
    error = chain_error(a, Runtimes(a, b))
    assert error.reason == INHERITANCE_CYCLE
    assert error.message == "inheritance cycle detected: [a b a]"


def test_a_serving_runtime_naming_a_cluster_runtime_of_its_own_name_is_a_cycle() -> None:
    cluster = csr("sglang-llama-3-2-3b")
    namespaced = sr("sglang-llama-3-2-3b", "sglang-llama-3-2-3b")
    error = chain_error(namespaced, Runtimes(cluster, namespaced))
    assert error.reason == INHERITANCE_CYCLE
    assert error.message == "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]"


def test_a_serving_runtime_shadowing_a_cluster_runtime_reached_further_up_is_a_cycle() -> None:
    cluster = csr("x")
    middle = csr("mid", "x")
    namespaced = sr("x", "mid")
    error = chain_error(namespaced, Runtimes(cluster, middle, namespaced))
    assert error.reason == INHERITANCE_CYCLE
    assert error.message == "inheritance cycle detected: [x mid x]"


def test_a_repeat_at_the_depth_limit_is_reported_as_a_cycle() -> None:
    start, lookup = five_deep(top_parent="r0")
    error = chain_error(start, lookup)
    assert error.reason == INHERITANCE_CYCLE
    assert error.message == "inheritance cycle detected: [r0 r1 r2 r3 r4 r0]"


@pytest.mark.parametrize(
    ("annotation", "spec", "expected"),
    [
        ("true", {}, 'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'),
        (
            "true",
            {"disabled": False},
            'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true',
        ),
        ("true", {"disabled": True}, None),
        ("false", {}, None),
        (None, {"disabled": False}, None),
    ],
    ids=["profile-without-disabled", "profile-enabled", "profile-disabled", "annotation-false", "not-a-profile"],
)
def test_profile_rule(annotation: str | None, spec: dict[str, Any], expected: str | None) -> None:
    profile = csr("sglang-profile", spec=spec)
    if annotation is not None:
        profile["metadata"]["annotations"] = {"ome.io/runtime-profile": annotation}
    assert profile_error(profile) == expected


def test_ref_of_a_cluster_runtime_has_no_namespace() -> None:
    cluster = csr("p")
    cluster["metadata"]["namespace"] = "ignored"
    assert ref_of(cluster) == RuntimeRef(CLUSTER_SERVING_RUNTIME, "", "p")


def test_ref_of_rejects_other_kinds() -> None:
    with pytest.raises(ValueError, match="kind 'InferenceService'"):
        ref_of({"kind": "InferenceService", "metadata": {"name": "x"}})


def test_spec_layers_carry_only_specs_so_metadata_is_never_inherited() -> None:
    profile = csr("sglang-profile", spec={"disabled": True, "labels": {"team": "a"}})
    profile["metadata"]["annotations"] = {"ome.io/runtime-profile": "true"}
    profile["metadata"]["labels"] = {"tier": "gold"}
    child = sr("sglang-llama-3-2-3b", "sglang-profile", spec={"disabled": False, "labels": {"model": "llama"}})
    chain = resolve_chain(child, Runtimes(profile, child))
    assert spec_layers(chain) == [("sglang-profile", profile["spec"]), ("sglang-llama-3-2-3b", child["spec"])]
    merged = merge_chain(spec_layers(chain))
    assert merged.spec == {"disabled": False, "labels": {"team": "a", "model": "llama"}}
    assert child["metadata"]["annotations"] == {"ome.io/inherit-from": "sglang-profile"}


def test_each_chain_error_keeps_the_names_of_its_message() -> None:
    cycle = chain_error(sr("a", "a"), Runtimes(sr("a", "a")))
    assert (cycle.names, cycle.args) == (("a", "a"), ("inheritance cycle detected: [a a]",))
    start, lookup = five_deep(top_parent="r5")
    deep = chain_error(start, lookup)
    assert deep.names == ("r0", "r1", "r2", "r3", "r4", "r5")
    child = sr("child", "middle")
    missing = chain_error(child, Runtimes(child, csr("middle", "gone")))
    assert missing.names == ("child", "middle")
    assert missing.args == ('inherit-from parent "gone" not found (chain so far: [child middle])',)


@pytest.mark.parametrize("name", ["", 7, None])
def test_a_runtime_without_a_usable_name_has_no_ref(name: Any) -> None:
    with pytest.raises(ValueError, match=r"^ServingRuntime without metadata\.name$"):
        ref_of({"kind": "ServingRuntime", "metadata": {"name": name, "namespace": "ns"}})


def test_odd_metadata_reads_as_empty() -> None:
    odd = {"kind": "ServingRuntime", "metadata": {"name": "x", "namespace": 5, "resourceVersion": 12}}
    assert ref_of(odd) == RuntimeRef(SERVING_RUNTIME, "", "x")
    assert resolve_chain(odd, Runtimes()).resource_versions == ("",)
