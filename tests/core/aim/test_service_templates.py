"""An AIMService's template selected by name (core/aim/service_templates.py): the accessor over the carried v1alpha1
fields (core/aim/versions/service.py), the lookup upstream's aimservice controller does (namespace first, then
cluster; a Ready resolved reference kept), the `Template` component with upstream's reasons and messages, the
roll-up it makes, `status.resolvedTemplate`, and the template's env on the inference container (core/aim/env.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from omectl.core.aim.env import inference_env, template_env
from omectl.core.aim.kserve import render_inference_service
from omectl.core.aim.service_templates import TemplateSelection, select_template, template_component
from omectl.core.aim.status import Component, roll_up
from omectl.core.aim.versions import carried_annotation, convert
from omectl.core.aim.versions.service import template_name, v1alpha1_spec

V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
NS = "team"
CONFIG_READY = Component("RuntimeConfig", "Ready", "RuntimeConfigResolved", "")


def service(template: Any = None, *, status: Mapping[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    """A service written in v1alpha1 (with `spec.template` when given), as the controller reads it: in v1alpha2."""
    v1_spec: dict[str, Any] = {"model": {"name": "m"}, **spec}
    if template is not None:
        v1_spec["template"] = template
    v1 = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": "svc", "namespace": NS}, "spec": v1_spec}
    v2 = convert(v1, V2)
    if status is not None:
        v2["status"] = dict(status)
    return v2


def template(kind: str, name: str, status: str | None = "Ready", uid: str = "u-1", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if kind == "AIMServiceTemplate":
        meta["namespace"] = NS
    obj: dict[str, Any] = {"apiVersion": V1, "kind": kind, "metadata": meta, "spec": {"modelName": "m", **spec}}
    if status is not None:
        obj["status"] = {"status": status}
    return obj


class Templates:
    """A `TemplateLookup` over some templates, recording what was looked up."""

    def __init__(self, *templates: dict[str, Any]) -> None:
        self.objects = {(t["kind"], t["metadata"].get("namespace", ""), t["metadata"]["name"]): t for t in templates}
        self.asked: list[tuple[str, str, str]] = []

    def __call__(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        self.asked.append((kind, namespace, name))
        return self.objects.get((kind, namespace, name))


# --- the accessor ----------------------------------------------------------------------------------------------


def test_the_v1alpha1_spec_is_read_from_the_carried_annotation_only() -> None:
    svc = service({"name": "tpl", "allowUnoptimized": True}, overrides={"metric": "latency"})
    assert "template" not in svc["spec"], "v1alpha2 has no template: it travels in the annotation"
    assert v1alpha1_spec(svc) == {
        "template": {"name": "tpl", "allowUnoptimized": True},
        "overrides": {"metric": "latency"},
    }
    assert template_name(svc) == "tpl"


@pytest.mark.parametrize(
    "annotation",
    [None, "{not json", json.dumps([1]), json.dumps({"spec": 3}), json.dumps({"spec": {"template": "tpl"}})],
    ids=["none", "not-json", "not-an-object", "spec-not-an-object", "template-not-an-object"],
)
def test_no_template_is_named_without_a_carried_template_name(annotation: str | None) -> None:
    meta: dict[str, Any] = {"name": "svc", "namespace": NS}
    if annotation is not None:
        meta["annotations"] = {carried_annotation("v1alpha1"): annotation}
    svc = {"apiVersion": V2, "kind": "AIMService", "metadata": meta, "spec": {"model": {"name": "m"}}}
    assert template_name(svc) is None
    assert select_template(svc, Templates()) is None


@pytest.mark.parametrize("name", ["", "   ", 7, None])
def test_an_empty_or_odd_template_name_names_none(name: Any) -> None:
    svc = service({"name": name} if name is not None else {"allowUnoptimized": True})
    assert template_name(svc) is None


def test_a_template_name_is_trimmed_as_upstream_trims_it() -> None:
    assert template_name(service({"name": "  tpl "})) == "tpl"


# --- the lookup --------------------------------------------------------------------------------------------------


def test_the_namespaced_template_comes_first() -> None:
    lookup = Templates(template("AIMServiceTemplate", "tpl", uid="ns"), template("AIMClusterServiceTemplate", "tpl"))
    selection = select_template(service({"name": "tpl"}), lookup)
    assert selection is not None and selection.kind == "AIMServiceTemplate"
    assert lookup.asked == [("AIMServiceTemplate", NS, "tpl")]
    assert selection.resolved_ref() == {
        "kind": "AIMServiceTemplate",
        "name": "tpl",
        "namespace": NS,
        "scope": "Namespace",
        "uid": "ns",
    }


def test_else_the_cluster_template_of_that_name() -> None:
    lookup = Templates(template("AIMClusterServiceTemplate", "tpl", uid="c"))
    selection = select_template(service({"name": "tpl"}), lookup)
    assert selection is not None and selection.kind == "AIMClusterServiceTemplate"
    assert lookup.asked == [("AIMServiceTemplate", NS, "tpl"), ("AIMClusterServiceTemplate", "", "tpl")]
    assert selection.resolved_ref() == {
        "kind": "AIMClusterServiceTemplate",
        "name": "tpl",
        "scope": "Cluster",
        "uid": "c",
    }


def test_a_resolved_cluster_template_still_ready_stays_in_use_when_a_namespaced_one_appears() -> None:
    resolved = {"kind": "AIMClusterServiceTemplate", "name": "tpl", "scope": "Cluster", "uid": "c"}
    both = Templates(
        template("AIMServiceTemplate", "tpl", uid="ns"), template("AIMClusterServiceTemplate", "tpl", uid="c")
    )
    selection = select_template(service({"name": "tpl"}, status={"resolvedTemplate": resolved}), both)
    assert selection is not None and selection.kind == "AIMClusterServiceTemplate"
    # no longer Ready: looked up again, namespace first
    unready = Templates(
        template("AIMServiceTemplate", "tpl", uid="ns"), template("AIMClusterServiceTemplate", "tpl", "Failed", uid="c")
    )
    selection = select_template(service({"name": "tpl"}, status={"resolvedTemplate": resolved}), unready)
    assert selection is not None and selection.kind == "AIMServiceTemplate"
    # a reference to another name (not this service's template) is not used
    other = {**resolved, "name": "other"}
    selection = select_template(service({"name": "tpl"}, status={"resolvedTemplate": other}), both)
    assert selection is not None and selection.kind == "AIMServiceTemplate"


def test_a_missing_template_fails_the_service_with_upstreams_reasons() -> None:
    selection = select_template(service({"name": "nonexistent-template"}), Templates())
    assert selection is not None and selection.template is None and not selection.ready
    assert selection.component == Component(
        "Template", "Failed", "TemplateNotFound", 'template "nonexistent-template" not found'
    )
    assert selection.resolved_ref() is None
    rolled = roll_up([CONFIG_READY, selection.component], config_error=selection.config_error)
    assert rolled.status == "Failed"
    assert [(c["type"], c["status"], c["reason"]) for c in rolled.conditions] == [
        ("RuntimeConfigReady", "True", "RuntimeConfigResolved"),
        ("TemplateReady", "False", "TemplateNotFound"),
        ("ConfigValid", "False", "ReferenceNotFound"),
        ("Ready", "False", "ReferenceNotFound"),
    ]


@pytest.mark.parametrize(
    ("status", "state", "message", "service_status"),
    [
        ("Ready", "Ready", "AIMServiceTemplate tpl is ready", "Running"),
        ("Pending", "Pending", "AIMServiceTemplate tpl is not ready yet", "Pending"),
        ("Progressing", "Pending", "AIMServiceTemplate tpl is not ready yet", "Pending"),
        ("NotAvailable", "NotAvailable", "AIMServiceTemplate tpl is not available (no matching GPUs)", "Pending"),
        ("Failed", "Failed", "AIMServiceTemplate tpl is in failed state", "Failed"),
        ("Degraded", "Failed", "AIMServiceTemplate tpl is in failed state", "Failed"),
        (None, "Pending", "AIMServiceTemplate tpl status: ", "Pending"),
    ],
)
def test_a_templates_state_is_the_components_as_upstream_evaluates_it(
    status: str | None, state: str, message: str, service_status: str
) -> None:
    obj = template("AIMServiceTemplate", "tpl", status)
    component = template_component("AIMServiceTemplate", obj)
    assert (component.state, component.reason, component.message) == (
        state,
        "Resolved" if status == "Ready" else "TemplateNotReady",
        message,
    )
    selection = TemplateSelection("tpl", "AIMServiceTemplate", obj, component)
    assert selection.config_error is None, "an existing template is no configuration error"
    assert (selection.resolved_ref() is not None) == (status == "Ready"), "resolvedTemplate only while Ready"
    assert roll_up([CONFIG_READY, component]).status == service_status


# --- the template's env on the inference container ------------------------------------------------------------


def test_the_templates_profile_metric_precision_env_and_model_id_reach_the_container_under_the_service() -> None:
    tpl = template(
        "AIMServiceTemplate",
        "tpl",
        metric="latency",
        precision="fp16",
        profileId="mi300x-fp16-latency-unopt",
        env=[{"name": "AIM_ENGINE_ARGS", "value": '{"a": 1}'}, {"name": "FROM_TEMPLATE", "value": "t"}],
        modelSources=[{"modelId": "org/model", "sourceUri": "hf://org/model"}],
    )
    svc = service({"name": "tpl"}, env=[{"name": "FROM_TEMPLATE", "value": "s"}])
    config = {"env": [{"name": "AIM_ENGINE_ARGS", "value": '{"b": 2}'}, {"name": "AIM_METRIC", "value": "throughput"}]}
    env = {e["name"]: e["value"] for e in inference_env(svc, config, None, tpl)}
    assert env["AIM_PROFILE_ID"] == "mi300x-fp16-latency-unopt"
    assert (env["AIM_METRIC"], env["AIM_PRECISION"]) == ("latency", "fp16"), "the template's over the config's"
    assert json.loads(env["AIM_ENGINE_ARGS"]) == {"a": 1, "b": 2}, "deep-merged, as upstream merges it"
    assert env["AIM_MODEL_ID"] == "org/model"
    assert env["FROM_TEMPLATE"] == "s", "the service's env wins"
    assert env["AIM_CACHE_PATH"] == "/workspace/cache"
    rendered = render_inference_service(svc, config, template=tpl)
    assert rendered["spec"]["predictor"]["containers"][0]["env"] == inference_env(svc, config, None, tpl)


def test_without_a_template_or_its_fields_the_env_is_unchanged() -> None:
    assert template_env(None) == ([], [], [])
    bare = template("AIMServiceTemplate", "tpl")
    assert template_env(bare) == ([], [], [])
    svc = service({"name": "tpl"})
    assert inference_env(svc, {}, None, bare) == inference_env(svc, {})


def test_resolved_template_is_the_same_field_in_both_versions() -> None:
    """`status.resolvedTemplate` maps `=`: upstream's TEMPLATE column reads omectl's in v1alpha1, with no annotation."""
    ref = {"kind": "AIMClusterServiceTemplate", "name": "tpl", "scope": "Cluster", "uid": "c"}
    v2 = {
        "apiVersion": V2,
        "kind": "AIMService",
        "metadata": {"name": "svc", "namespace": NS},
        "spec": {"model": {"name": "m"}},
        "status": {"status": "Running", "resolvedTemplate": ref},
    }
    v1 = convert(v2, V1)
    assert v1["status"]["resolvedTemplate"] == ref
    assert carried_annotation("v1alpha2") not in (v1["metadata"].get("annotations") or {})
    merged = {**ref, "scope": "Merged"}  # any scope of upstream's enum, both ways
    assert (
        convert(convert({**v1, "status": {"resolvedTemplate": merged}}, V2), V1)["status"]["resolvedTemplate"] == merged
    )
