"""A template cache's decisions: its template, its artifacts, its status (omectl/core/aim/legacy/template_caches.py)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.legacy.kinds import LEGACY_PROPAGATION_EDGES, propagate_legacy_edge
from omectl.core.aim.legacy.status import Component, legacy_status
from omectl.core.aim.legacy.template_caches import (
    abandoned_artifacts,
    artifact_name,
    artifacts_component,
    artifacts_status,
    cache_sources,
    match_artifacts,
    orphaned,
    render_artifact,
    template_component,
    template_refs,
)

SOURCES = [
    {"modelId": "org/a", "sourceUri": "hf://org/a.b", "size": "2Gi", "env": [{"name": "X", "value": "source"}]},
    {"modelId": "org/b", "sourceUri": "hf://org/b"},
]


def cache(mode: str = "Shared", scope: str = "Namespace", **spec: Any) -> dict[str, Any]:
    meta = {"name": "tc", "namespace": "team", "uid": "c-1", "labels": {"team": "ml", "other": "x"}}
    spec = {"templateName": "tpl", "templateScope": scope, "mode": mode, **spec}
    return {"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": "AIMTemplateCache", "metadata": meta, "spec": spec}


def artifact(name: str, uri: str, status: str | None, owner: str | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "team", "uid": f"uid-{name}"}
    if owner:
        meta["ownerReferences"] = [{"kind": "AIMTemplateCache", "name": "tc", "uid": owner, "controller": True}]
    obj: dict[str, Any] = {"kind": "AIMArtifact", "metadata": meta, "spec": {"sourceUri": uri, **spec}}
    if status:
        obj["status"] = {"status": status, "persistentVolumeClaim": f"{name}-pvc"}
    return obj


def test_the_scope_says_where_the_template_is_looked_up() -> None:
    assert template_refs(cache()) == [("AIMServiceTemplate", "team", "tpl")]
    assert template_refs(cache(scope="Cluster")) == [("AIMClusterServiceTemplate", "", "tpl")]
    assert template_refs(cache(scope="Unknown")) == [
        ("AIMServiceTemplate", "team", "tpl"),
        ("AIMClusterServiceTemplate", "", "tpl"),
    ]


def test_the_templates_state_is_the_caches_service_template_component() -> None:
    missing = template_component(cache(), None)
    assert (missing.state, missing.reason, missing.missing_reference) == ("Failed", "ReferenceNotFound", True)
    assert missing.message == "AIMServiceTemplate tpl not found"
    ready = {
        "status": {
            "status": "Ready",
            "conditions": [{"type": "Ready", "status": "True", "reason": "AllComponentsReady"}],
        }
    }
    assert template_component(cache(), ready).state == "Ready"
    gpu = {"type": "Ready", "status": "False", "reason": "GPUNotAvailable", "message": "no MI355X"}
    unavailable = template_component(cache(), {"status": {"status": "NotAvailable", "conditions": [gpu]}})
    assert (unavailable.state, unavailable.reason, unavailable.message) == (
        "NotAvailable",
        "GPUNotAvailable",
        "no MI355X",
    )
    assert template_component(cache(), {"kind": "AIMServiceTemplate"}).state == "Pending"


def test_the_caches_own_sources_win_over_its_templates() -> None:
    template = {"status": {"modelSources": SOURCES}}
    assert cache_sources(cache(), template) == SOURCES
    own = [{"modelId": "org/c", "sourceUri": "s3://bucket/c"}]
    assert cache_sources(cache(modelSources=own), template) == own


def test_an_artifact_holds_one_source_with_the_caches_env_under_the_sources_and_its_labels() -> None:
    tc = cache(
        env=[{"name": "X", "value": "cache"}, {"name": "Y", "value": "cache"}],
        storageClassName="fast",
        runtimeConfigName="rc",
    )
    rendered = render_artifact(
        tc, SOURCES[0], 0, "AIMServiceTemplate", {"labelPropagation": {"enabled": True, "match": ["team"]}}
    )
    assert rendered["apiVersion"] == "aim.eai.amd.com/v1alpha2"
    assert rendered["spec"] == {
        "sourceUri": "hf://org/a.b",
        "modelId": "org/a",
        "size": "2Gi",
        "env": [{"name": "X", "value": "source"}, {"name": "Y", "value": "cache"}],
        "storageClassName": "fast",
        "runtimeConfigName": "rc",
    }
    labels = rendered["metadata"]["labels"]
    assert labels["aim.eai.amd.com/template-cache.name"] == "tc" and labels["aim.eai.amd.com/template.index"] == "0"
    assert labels["aim.eai.amd.com/template.scope"] == "Namespace" and labels["team"] == "ml" and "other" not in labels
    assert "ownerReferences" not in rendered["metadata"], "a Shared cache's artifacts are nobody's"
    dedicated = render_artifact(cache("Dedicated"), SOURCES[0], 0, "AIMClusterServiceTemplate", {})
    assert dedicated["metadata"]["ownerReferences"][0]["uid"] == "c-1"
    assert dedicated["metadata"]["labels"]["aim.eai.amd.com/template.scope"] == "Cluster"


def test_artifact_names_are_dns_labels_shared_by_shared_caches_and_own_to_a_dedicated_one() -> None:
    name = artifact_name(cache(), SOURCES[0])
    assert name.startswith("hf-org-a-b-") and len(name) == len("hf-org-a-b-") + 10
    other_shared = {**cache(), "metadata": {"name": "other", "namespace": "team"}}
    assert artifact_name(other_shared, SOURCES[0]) == name
    assert artifact_name(cache("Dedicated"), SOURCES[0]) != name
    assert artifact_name(cache(storageClassName="fast"), SOURCES[0]) != name
    assert len(artifact_name(cache(), {"sourceUri": "hf://" + "x" * 100})) <= 63


def test_the_best_artifact_holding_each_source_is_chosen_within_the_caches_mode() -> None:
    live = [
        artifact("failed-a", "hf://org/a.b", "Failed"),
        artifact("ready-a", "hf://org/a.b", "Ready"),
        artifact("owned-b", "hf://org/b", "Ready", owner="c-1"),
        artifact("new-b", "hf://org/b", None),
    ]
    shared = match_artifacts(cache(), SOURCES, live)
    assert [a["metadata"]["name"] if a else None for a in shared] == ["ready-a", None]
    dedicated = match_artifacts(cache("Dedicated"), SOURCES, live)
    assert [a["metadata"]["name"] if a else None for a in dedicated] == [None, "owned-b"]
    other_class = match_artifacts(cache(storageClassName="fast"), SOURCES, live)
    assert other_class == [None, None]


def test_a_cache_with_no_source_to_hold_is_progressing_with_upstreams_no_caches() -> None:
    """Upstream's DecorateStatus: no artifact matched or missing (no template, or no model sources) is
    `ArtifactsReady=False` / `NoCaches`, so the cache is not Ready (a condition of no component: Progressing)."""
    none = artifacts_component([])
    assert (none.state, none.reason, none.message) == ("Progressing", "NoCaches", "No artifacts to track")
    template = Component("ServiceTemplate", "Ready", "AllComponentsReady", "All components are ready")
    rolled = legacy_status([template, none])
    ready = next(c for c in rolled.conditions if c["type"] == "Ready")
    assert (rolled.status, ready["reason"]) == ("Progressing", "Progressing")
    assert {"type": "ArtifactsReady", "status": "False", "reason": "NoCaches", "message": "No artifacts to track"} in (
        rolled.conditions
    )


def test_the_worst_artifact_is_the_caches_artifacts_component_and_status_lists_them() -> None:
    creating = artifacts_component([artifact("a", "hf://org/a.b", "Ready"), None])
    assert creating is not None and (creating.state, creating.reason) == ("Progressing", "CreatingCaches")
    downloading = artifact("b", "hf://org/b", "Downloading")
    downloading["status"]["conditions"] = [
        {"type": "Ready", "status": "False", "reason": "Downloading", "message": "1/2"}
    ]
    worst = artifacts_component([artifact("a", "hf://org/a.b", "Ready"), downloading])
    assert worst is not None and (worst.state, worst.reason, worst.message) == (
        "Progressing",
        "Downloading",
        "One or more caches are not ready: 1/2",
    )
    ready = artifacts_component([artifact("a", "hf://org/a.b", "Ready")])
    assert ready is not None and (ready.state, ready.reason) == ("Ready", "AllCachesReady")
    listed = artifacts_status(SOURCES, [artifact("a", "hf://org/a.b", "Ready"), None])
    assert listed == {
        "a": {"uid": "uid-a", "name": "a", "model": "org/a", "status": "Ready", "persistentVolumeClaim": "a-pvc"}
    }
    assert artifacts_status(SOURCES, [None, None]) is None


def test_a_deleted_cache_abandons_its_own_artifacts_that_are_not_ready() -> None:
    """As upstream's template cache finalizer: the artifacts labelled with the cache's name, unless Ready."""
    label = {"aim.eai.amd.com/template-cache.name": "tc"}
    states = ("Ready", "Failed", "Downloading", "Pending", None)
    own = {state: artifact(f"own-{(state or 'none').lower()}", "hf://org/a", state) for state in states}
    for made in own.values():
        made["metadata"]["labels"] = dict(label)
    other = artifact("other", "hf://org/a", "Failed")
    other["metadata"]["labels"] = {"aim.eai.amd.com/template-cache.name": "tc-2"}
    elsewhere = artifact("elsewhere", "hf://org/a", "Failed")
    elsewhere["metadata"].update(namespace="team-2", labels=dict(label))
    unlabelled = artifact("unlabelled", "hf://org/a", "Failed")
    found = abandoned_artifacts(cache(), [*own.values(), other, elsewhere, unlabelled])
    assert sorted(a["metadata"]["name"] for a in found) == [
        "own-downloading",
        "own-failed",
        "own-none",
        "own-pending",
    ], "Ready stays; another cache's, another namespace's and an unlabelled one are not this cache's"


def test_an_artifact_whose_cache_went_while_no_controller_ran_is_orphaned_unless_ready() -> None:
    """Caught up at start: an artifact omectl made for a cache (render_artifact's labels), not Ready, whose cache is
    not there or is a later one of that name; never one omectl did not make, nor one whose cache made it."""

    def made(name: str, status: str | None, created: str = "2026-12-06T10:00:00Z", **labels: str) -> dict[str, Any]:
        obj = render_artifact(cache(), SOURCES[0], 0, "AIMServiceTemplate", {})
        obj["metadata"].update(name=name, uid=f"uid-{name}", creationTimestamp=created)
        obj["metadata"]["labels"].update(labels)
        if status:
            obj["status"] = {"status": status}
        return obj

    def live(created: str, name: str = "tc") -> dict[str, Any]:
        found = cache()
        found["metadata"].update(name=name, creationTimestamp=created)
        return found

    failed, downloading, ready = made("failed", "Failed"), made("downloading", "Downloading"), made("ready", "Ready")
    assert [orphaned(a, []) for a in (failed, downloading, ready, made("new", None))] == [True, True, False, True]
    assert [orphaned(a, [live("2026-12-06T11:00:00Z", "other")]) for a in (failed, ready)] == [True, False]
    assert not orphaned(failed, [live("2026-12-06T09:59:00Z")]), "its cache"
    assert not orphaned(failed, [live("2026-12-06T10:00:00Z")]), "made in the same second: cannot be told apart"
    assert orphaned(failed, [live("2026-12-06T10:00:01Z")]), "a cache of that name made again after it"
    elsewhere = live("2026-12-06T09:00:00Z")
    elsewhere["metadata"]["namespace"] = "team-2"
    assert orphaned(failed, [elsewhere]), "a cache of that name in another namespace"
    user_made = made("user", "Failed", **{"app.kubernetes.io/managed-by": "someone"})
    unlabelled = made("unlabelled", "Failed")
    del unlabelled["metadata"]["labels"]["aim.eai.amd.com/template-cache.name"]
    going = made("going", "Failed")
    going["metadata"]["deletionTimestamp"] = "2026-12-06T12:00:00Z"
    assert [orphaned(a, []) for a in (user_made, unlabelled, going)] == [False, False, False]


def test_the_legacy_graph_has_only_the_specs_v1alpha1_and_legacy_edges_and_the_discovery_job() -> None:
    assert {
        "AIMModel": frozenset({"AIMServiceTemplate"}),
        "AIMClusterModel": frozenset({"AIMClusterServiceTemplate"}),
        "AIMService": frozenset({"AIMModel", "AIMServiceTemplate"}),
        "AIMServiceTemplate": frozenset({"AIMTemplateCache", "Job"}),
        "AIMClusterServiceTemplate": frozenset({"Job"}),
        "AIMTemplateCache": frozenset({"AIMArtifact"}),
    } == LEGACY_PROPAGATION_EDGES
    with pytest.raises(ValueError, match="no propagation edge AIMTemplateCache -> AIMServiceTemplate"):
        propagate_legacy_edge(cache(), {"kind": "AIMServiceTemplate", "metadata": {}}, {})
