"""What a runtime edit reaches, per resolution context, against a brute-force resolution of every chain."""

from __future__ import annotations

from hypothesis import given, settings

from omectl.core.ome.inheritance import CLUSTER_ONLY, ResolutionContext
from omectl.core.ome.reach import reach
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME, RuntimeRef
from tests.core.runtime_graphs import GRAPHS, KEYS, USERS, Graph, brute_force_reach


def sr(namespace: str, name: str) -> RuntimeRef:
    return RuntimeRef(SERVING_RUNTIME, namespace, name)


def csr(name: str) -> RuntimeRef:
    return RuntimeRef(CLUSTER_SERVING_RUNTIME, "", name)


def isvc_keys(found: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(isvc["metadata"]["namespace"], isvc["metadata"]["name"]) for isvc in found]


# The example: ClusterServingRuntime nsf-bridge inherits nsf-base; team-a has its own nsf-base.
EXAMPLE = {
    csr("nsf-base"): None,
    csr("nsf-bridge"): "nsf-base",
    sr("team-a", "nsf-base"): None,
    sr("team-a", "nsf-leaf"): "nsf-bridge",
    sr("team-b", "nsf-leaf"): "nsf-bridge",
}
EXAMPLE_USERS = [("team-a", "nsf-leaf"), ("team-b", "nsf-leaf"), ("team-b", "nsf-bridge")]


def test_a_cluster_runtime_edit_reaches_only_the_namespaces_whose_chains_pass_through_it() -> None:
    found = reach(csr("nsf-base"), Graph(EXAMPLE, EXAMPLE_USERS))
    assert found.runtimes == [csr("nsf-bridge"), sr("team-b", "nsf-leaf")]
    assert isvc_keys(found.inference_services) == [("team-b", "uses-nsf-bridge"), ("team-b", "uses-nsf-leaf")]
    assert found.shadowed_in == ("team-a",)
    cluster_only, team_b = found.contexts
    assert (cluster_only.context, team_b.context) == (CLUSTER_ONLY, ResolutionContext("team-b"))
    assert dict(team_b.parents) == {csr("nsf-bridge"): csr("nsf-base"), sr("team-b", "nsf-leaf"): csr("nsf-bridge")}
    assert team_b.heads == (sr("team-b", "nsf-leaf"),)


def test_the_shadowing_serving_runtime_reaches_its_namespace_through_the_cluster_runtime() -> None:
    found = reach(sr("team-a", "nsf-base"), Graph(EXAMPLE, EXAMPLE_USERS))
    assert found.runtimes == [sr("team-a", "nsf-leaf")]
    assert isvc_keys(found.inference_services) == [("team-a", "uses-nsf-leaf")]
    (section,) = found.contexts
    assert dict(section.parents) == {
        csr("nsf-bridge"): sr("team-a", "nsf-base"),
        sr("team-a", "nsf-leaf"): csr("nsf-bridge"),
    }


def test_deleting_the_shadow_reaches_the_same_chains_it_held() -> None:
    # The answer is read after the event: team-a's chains now pass the cluster runtime, and are re-resolved.
    after = {ref: parent for ref, parent in EXAMPLE.items() if ref != sr("team-a", "nsf-base")}
    found = reach(sr("team-a", "nsf-base"), Graph(after, EXAMPLE_USERS))
    assert found.runtimes == [sr("team-a", "nsf-leaf")]
    assert isvc_keys(found.inference_services) == [("team-a", "uses-nsf-leaf")]


def test_the_walk_back_stops_where_a_chain_would_be_too_deep_to_look_it_up() -> None:
    # n0 <- n1 <- n2 <- n3 <- n4 <- n5: n5's chain needs a sixth runtime and never looks n0 up.
    graph = {csr("n0"): None, **{csr(f"n{i}"): f"n{i - 1}" for i in range(1, 6)}}
    assert reach(csr("n0"), Graph(graph)).runtimes == [csr("n1"), csr("n2"), csr("n3"), csr("n4")]


@settings(max_examples=300, deadline=None)
@given(GRAPHS, USERS)
def test_reach_equals_a_brute_force_resolution_of_every_chain(parents: dict, users: list) -> None:  # type: ignore[type-arg]
    graph = Graph(parents, users)
    for edited in KEYS:  # existing or not: a create or a delete reaches what a change would
        expected_heads, expected_users = brute_force_reach(graph, edited)
        found = reach(edited, graph)
        assert set(found.runtimes) == expected_heads, edited
        keys = isvc_keys(found.inference_services)
        assert len(keys) == len(set(keys)) and set(keys) == expected_users, edited
        for section in found.contexts:
            assert all(section.context.is_head(head) for head in section.heads)
