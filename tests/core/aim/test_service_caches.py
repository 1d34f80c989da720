"""An AIMService's template cache (core/aim/legacy/service_caches.py), as upstream's aimservice controller makes it:
the mode from v1alpha1's `caching.mode` (normalised, Shared by default, `cacheModel` ignored), upstream's derived
names, the rendered cache (labels, owner, env, storage class, runtime config), which live cache a service uses, the
`Cache` component with upstream's reasons, `status.cache.templateCacheRef`, and the InferenceService's volumes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import pytest

from omectl.core.aim.legacy.service_caches import (
    abandoned,
    cache_component,
    cache_ref,
    caching_mode,
    derived_name,
    find_template_cache,
    kept_volumes,
    orphaned_cache,
    plan_cache,
    render_template_cache,
    template_cache_name,
)
from omectl.core.aim.status import roll_up
from omectl.core.aim.versions import convert

V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
NS = "team"
SOURCES = [{"modelId": "org/m", "sourceUri": "hf://org/m", "size": "1Gi"}]


def service(caching: Any = None, *, labels: Mapping[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    """A service written in v1alpha1 (with `spec.caching` when given), as the controller reads it: in v1alpha2."""
    v1_spec: dict[str, Any] = {"model": {"name": "m"}, "template": {"name": "tpl"}, **spec}
    if caching is not None:
        v1_spec["caching"] = caching
    meta: dict[str, Any] = {"name": "svc", "namespace": NS, "uid": "svc-uid"}
    if labels:
        meta["labels"] = dict(labels)
    v2 = convert({"apiVersion": V1, "kind": "AIMService", "metadata": meta, "spec": v1_spec}, V2)
    return dict(v2, kind="AIMService", apiVersion=V2)


def template(kind: str = "AIMServiceTemplate", sources: Any = SOURCES, **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {"status": "Ready"}
    if sources is not None:
        status["modelSources"] = sources
    meta = {"name": "tpl", **({"namespace": NS} if kind == "AIMServiceTemplate" else {})}
    return {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": {"modelName": "m", **spec}, "status": status}


def cache(name: str, mode: str = "Shared", state: str | None = "Ready", owner: str | None = None, **spec: Any) -> Any:
    meta: dict[str, Any] = {"name": name, "namespace": NS, "uid": f"{name}-uid"}
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "AIMService", "name": "svc", "uid": owner, "controller": True}]
    out: dict[str, Any] = {"metadata": meta, "spec": {"templateName": "tpl", "mode": mode, **spec}}
    if state is not None:
        out["status"] = {"status": state}
    return out


@pytest.mark.parametrize(
    ("caching", "mode"),
    [
        (None, "Shared"),
        ({"mode": "Shared"}, "Shared"),
        ({"mode": "Always"}, "Shared"),
        ({"mode": "Auto"}, "Shared"),
        ({"mode": "Dedicated"}, "Dedicated"),
        ({"mode": "Never"}, "Dedicated"),
    ],
)
def test_the_caching_mode_is_upstreams_normalised_mode_shared_by_default(caching: Any, mode: str) -> None:
    assert caching_mode(service(caching)) == mode


def test_the_deprecated_cache_model_and_v1alpha2_caching_are_not_the_mode() -> None:
    assert caching_mode(service(cacheModel=False)) == "Shared", "upstream no longer honours cacheModel"
    v2 = dict(service(), spec={**service()["spec"], "caching": {"enabled": False}})
    assert caching_mode(v2) == "Shared", "v1alpha2's caching.enabled is the AIMProfileCache path"


def test_derived_names_are_upstreams_parts_and_hash_of_the_go_json_of_each_input() -> None:
    digest = hashlib.sha256(b'"team"').hexdigest()[:8]
    assert derived_name(["tpl"], "team") == f"tpl-{digest}"
    assert template_cache_name(service(), "tpl", "Shared") == f"tpl-{digest}", "Shared: one per template and namespace"
    uid_digest = hashlib.sha256(b'"svc-uid"').hexdigest()[:8]
    assert template_cache_name(service(), "tpl", "Dedicated") == f"tpl-svc-{uid_digest}", "Dedicated: per instance"
    assert derived_name(["My.Template_1"]) == "my-template-1"
    long = derived_name(["a" * 60, "b" * 10], "x")
    assert len(long) == 63 and long.startswith("a" * 43 + "-" + "b" * 10 + "-"), "the longest part is cut"


def test_the_rendered_shared_cache_has_upstreams_name_label_spec_and_no_owner() -> None:
    svc = service({"mode": "Always"}, env=[{"name": "A", "value": "service"}], runtimeConfigName="team-config")
    tpl = template(
        env=[{"name": "A", "value": "template"}, {"name": "B", "value": "template"}],
        caching={"env": [{"name": "B", "value": "caching"}, {"name": "C", "value": "caching"}]},
    )
    rendered = render_template_cache(svc, tpl, {"storage": {"defaultStorageClassName": "from-config"}})
    assert rendered is not None
    assert (rendered["apiVersion"], rendered["kind"]) == (V1, "AIMTemplateCache")
    meta = rendered["metadata"]
    assert (meta["name"], meta["namespace"]) == (template_cache_name(svc, "tpl", "Shared"), NS)
    assert meta["labels"] == {
        "aim.eai.amd.com/service": "svc",
        "aim.eai.amd.com/service.name": "svc",
        "app.kubernetes.io/managed-by": "omectl",
    }
    assert "ownerReferences" not in meta, "Shared: nobody's, it outlives the service"
    assert rendered["spec"] == {
        "templateName": "tpl",
        "templateScope": "Namespace",
        "mode": "Shared",
        "storageClassName": "from-config",
        "runtimeConfigName": "team-config",
        # the template's env < its caching env < the service's env
        "env": [
            {"name": "A", "value": "service"},
            {"name": "B", "value": "caching"},
            {"name": "C", "value": "caching"},
        ],
    }


def test_the_rendered_dedicated_cache_is_owned_by_the_service_and_a_cluster_template_scopes_it() -> None:
    svc = service({"mode": "Never"}, storage={"defaultStorageClassName": "from-service"})
    tpl = template("AIMClusterServiceTemplate", env=[{"name": "A", "value": "t"}], caching={"env": [{"name": "X"}]})
    rendered = render_template_cache(svc, tpl, {"storage": {"defaultStorageClassName": "from-config"}})
    assert rendered is not None
    (owner,) = rendered["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("AIMService", "svc", "svc-uid", True)
    assert rendered["spec"]["templateScope"] == "Cluster" and rendered["spec"]["mode"] == "Dedicated"
    assert rendered["spec"]["storageClassName"] == "from-service", "the service's storage class first"
    assert rendered["spec"]["env"] == [{"name": "A", "value": "t"}], "a cluster template has no caching env"
    assert "runtimeConfigName" not in rendered["spec"]


def test_a_template_without_model_sources_has_nothing_to_cache() -> None:
    assert render_template_cache(service(), template(sources=None), {}) is None
    assert render_template_cache(service(), template(sources=[]), {}) is None


def test_a_shared_service_uses_the_best_shared_cache_of_its_template() -> None:
    svc = service()
    caches = [
        cache("a-failed", state="Failed"),
        cache("b-ready"),
        cache("c-ready"),
        cache("dedicated", "Dedicated", owner="svc-uid"),
        cache("other-template", templateName="other"),
    ]
    assert find_template_cache(svc, "tpl", caches)["metadata"]["name"] == "b-ready"  # type: ignore[index]
    assert find_template_cache(svc, "tpl", [caches[0]])["metadata"]["name"] == "a-failed"  # type: ignore[index]
    assert find_template_cache(svc, "tpl", caches[3:]) is None
    # the cache status.cache names is kept while it is Ready
    kept = dict(svc, status={"cache": {"templateCacheRef": {"name": "c-ready"}}})
    assert find_template_cache(kept, "tpl", caches)["metadata"]["name"] == "c-ready"  # type: ignore[index]


def test_a_dedicated_service_uses_only_its_own_cache() -> None:
    svc = service({"mode": "Dedicated"})
    own = template_cache_name(svc, "tpl", "Dedicated")
    assert find_template_cache(svc, "tpl", [cache("shared"), cache(own, "Dedicated", owner="other-uid")]) is None
    found = find_template_cache(svc, "tpl", [cache(own, "Dedicated", owner="svc-uid")])
    assert found is not None and found["metadata"]["name"] == own


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ("Ready", ("Ready", "CacheReady", "Template cache is ready")),
        ("Progressing", ("Progressing", "CacheNotReady", "Template cache is progressing")),
        ("Failed", ("Failed", "CacheFailed", "Template cache failed")),
        ("Pending", ("Progressing", "CacheCreating", "Template cache status: Pending")),
    ],
)
def test_the_cache_component_follows_the_caches_status(state: str, expected: tuple[str, str, str]) -> None:
    component = cache_component(service(), cache("c", state=state), mounts_cached_volumes=True)
    assert (component.state, component.reason, component.message) == expected
    assert component.condition_type == "CacheReady"


def test_a_missing_cache_is_being_created_or_lost_when_the_inference_service_still_mounts_its_volumes() -> None:
    creating = cache_component(service(), None, mounts_cached_volumes=False)
    assert (creating.state, creating.reason, creating.message) == (
        "Progressing",
        "CacheCreating",
        "Creating template cache",
    )
    lost = cache_component(service({"mode": "Shared"}), None, mounts_cached_volumes=True)
    assert (lost.state, lost.reason) == ("Degraded", "CacheLost")
    again = cache_component(service({"mode": "Dedicated"}), None, mounts_cached_volumes=True)
    assert (again.state, again.reason, again.message) == (
        "Degraded",
        "CacheCreating",
        "Dedicated template cache is being recreated",
    )
    # the roll-up: a lost cache degrades a running service; one being made keeps it Starting
    assert roll_up([lost]).status == "Degraded" and roll_up([creating]).status == "Starting"


def test_the_cache_reference_is_written_while_the_cache_is_ready() -> None:
    assert cache_ref(cache("c")) == {"name": "c", "namespace": NS, "uid": "c-uid"}
    assert cache_ref(cache("c", state="Progressing")) is None and cache_ref(None) is None


ISVC = {
    "spec": {
        "predictor": {
            "containers": [{"name": "kserve-container", "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}],
        }
    }
}


def test_the_inference_service_waits_for_a_ready_cache_and_mounts_its_ready_artifacts() -> None:
    ready = cache("c")
    ready["status"]["artifacts"] = {
        "art-1": {"name": "art-1", "model": "org/m", "status": "Ready", "persistentVolumeClaim": "art-1-cache-x"},
        "art-2": {"name": "art-2", "model": "org/n", "status": "Progressing"},
    }
    plan = plan_cache(service(), ready, None, inference_service_exists=False)
    assert plan.inference_service_due
    mounted = plan.mounted(ISVC)["spec"]["predictor"]
    assert mounted["volumes"][1] == {
        "name": "artifact-art-1",
        "persistentVolumeClaim": {"claimName": "art-1-cache-x", "readOnly": True},
    }
    assert mounted["containers"][0]["volumeMounts"][1] == {
        "name": "artifact-art-1",
        "mountPath": "/workspace/cache/org/m",
        "readOnly": True,
    }
    assert not plan_cache(
        service(), cache("c", state="Progressing"), None, inference_service_exists=False
    ).inference_service_due


def test_a_cache_not_ready_keeps_the_live_inference_services_claim_volumes() -> None:
    live = {
        "spec": {
            "predictor": {
                "containers": [
                    {
                        "name": "kserve-container",
                        "volumeMounts": [
                            {"name": "dshm", "mountPath": "/dev/shm"},
                            {"name": "artifact-art-1", "mountPath": "/workspace/cache/org/m", "readOnly": True},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "dshm", "emptyDir": {"medium": "Memory"}},
                    {"name": "artifact-art-1", "persistentVolumeClaim": {"claimName": "pvc-1", "readOnly": True}},
                ],
            }
        }
    }
    plan = plan_cache(service(), None, live, inference_service_exists=True)
    assert plan.inference_service_due, "an existing InferenceService is updated whatever the cache's state"
    assert (plan.component.state, plan.component.reason) == ("Degraded", "CacheLost")
    assert plan.mounted(ISVC) == live == kept_volumes(ISVC, live)
    assert kept_volumes(ISVC, None) == ISVC


def test_a_cache_a_service_made_goes_with_it_unless_it_is_ready() -> None:
    made = cache("c", state="Progressing")
    made["metadata"]["labels"] = {"aim.eai.amd.com/service.name": "svc"}
    assert abandoned(made, service_deleted=True)
    assert not abandoned(made, service_deleted=False), "its service was not deleted (or is made again)"
    assert not abandoned(dict(made, status={"status": "Ready"}), service_deleted=True), "a Ready cache is kept"
    assert not abandoned(cache("c", state="Failed"), service_deleted=True), "no service made it"


def test_a_cache_whose_service_went_while_no_controller_ran_is_orphaned_unless_ready() -> None:
    """Caught up at start: a cache omectl made for a service (render_template_cache's labels), not Ready, whose
    service is not there or is a later one of that name; never one omectl did not make, nor one its service made."""

    def made(state: str | None, created: str = "2026-12-06T10:00:00Z") -> dict[str, Any]:
        rendered = render_template_cache(service(), template(), {})
        assert rendered is not None
        rendered["metadata"].update(uid=f"uid-{state}", creationTimestamp=created)
        if state:
            rendered["status"] = {"status": state}
        return rendered

    def live(created: str, name: str = "svc", namespace: str = NS) -> dict[str, Any]:
        found = service()
        found["metadata"].update(name=name, namespace=namespace, creationTimestamp=created)
        return found

    failed, progressing, ready, new = made("Failed"), made("Progressing"), made("Ready"), made(None)
    assert [orphaned_cache(c, []) for c in (failed, progressing, ready, new)] == [True, True, False, True]
    assert orphaned_cache(failed, [live("2026-12-06T09:00:00Z", "other")]), "another service"
    assert not orphaned_cache(failed, [live("2026-12-06T09:59:00Z")]), "its service"
    assert not orphaned_cache(failed, [live("2026-12-06T10:00:00Z")]), "made in the same second: cannot be told apart"
    assert orphaned_cache(failed, [live("2026-12-06T10:00:01Z")]), "a service of that name made again after it"
    assert orphaned_cache(failed, [live("2026-12-06T09:00:00Z", namespace="elsewhere")]), "in another namespace"
    by_hand = made("Failed")
    del by_hand["metadata"]["labels"]["app.kubernetes.io/managed-by"]
    going = made("Failed")
    going["metadata"]["deletionTimestamp"] = "2026-12-06T12:00:00Z"
    assert [orphaned_cache(c, []) for c in (by_hand, going)] == [False, False], "by hand: awaits its service"
