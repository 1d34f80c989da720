"""An AIMService's model (core/aim/service_models.py): resolved by name (namespace first, then cluster) or by image,
the `Model` component with upstream's reasons and messages, `status.resolvedModel` while the model is Ready (the same
field in both versions, upstream's MODEL column), and the template a v1alpha1 model names for its services
(`defaultServiceTemplate`, read from the carried annotation by core/aim/versions/model.py) selected exactly as a named
one (core/aim/service_templates.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.core.aim.service_models import model_component, model_not_found, resolve_model
from omectl.core.aim.service_templates import select_template
from omectl.core.aim.status import roll_up
from omectl.core.aim.versions import carried_annotation, convert
from omectl.core.aim.versions.model import default_service_template, v1alpha1_model_spec
from tests.core.aim.test_service_templates import CONFIG_READY, NS, V1, V2, Templates, service, template

UPSTREAM = Path(__file__).resolve().parents[2] / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimservice"
AUTO = UPSTREAM / "common" / "auto-template-selection"


def model(
    kind: str, name: str, status: str | None = "Ready", uid: str = "m-1", v1_spec: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A model written in v1alpha1 (its `spec` as given, an image by default), as the controller reads it: in
    v1alpha2."""
    meta: dict[str, Any] = {"name": name, "uid": uid}
    if kind == "AIMModel":
        meta["namespace"] = NS
    spec = dict(v1_spec or {"image": "img:1"})
    obj = convert({"apiVersion": V1, "kind": kind, "metadata": meta, "spec": spec}, V2)
    if status is not None:
        obj["status"] = {"status": status}
    return obj


class Models:
    """A `ModelLookup` and `ModelsByImage` over some models."""

    def __init__(self, *models: dict[str, Any]) -> None:
        self.models = models

    def __call__(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        return next((m for m in self._of(kind, namespace) if m["metadata"]["name"] == name), None)

    def by_image(self, kind: str, namespace: str, image: str) -> Sequence[Mapping[str, Any]]:
        return [m for m in self._of(kind, namespace) if m["spec"].get("image") == image]

    def _of(self, kind: str, namespace: str) -> list[dict[str, Any]]:
        return [m for m in self.models if m["kind"] == kind and m["metadata"].get("namespace", "") == namespace]


def by_image(image: str) -> dict[str, Any]:
    v1 = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": "svc", "namespace": NS}}
    return convert({**v1, "spec": {"model": {"image": image}}}, V2)


# --- the accessor ------------------------------------------------------------------------------------------------


def test_upstreams_model_carries_its_default_template_read_by_the_one_accessor() -> None:
    doc = yaml.safe_load((AUTO / "model.yaml").read_text())
    v2 = convert(doc, V2)
    assert "defaultServiceTemplate" not in v2["spec"], "v1alpha2 has no default template: it travels in the annotation"
    assert v1alpha1_model_spec(v2)["defaultServiceTemplate"] == "test-auto-select-template"
    assert default_service_template(v2) == "test-auto-select-template"
    assert default_service_template(convert(v2, V1)) is None, "a v1alpha1 object carries nothing of its own version"


@pytest.mark.parametrize(
    "annotation",
    [None, "{not json", json.dumps({"spec": 3}), json.dumps({"spec": {"defaultServiceTemplate": 3}})],
    ids=["none", "not-json", "spec-not-an-object", "not-a-string"],
)
def test_no_default_template_without_a_carried_name(annotation: str | None) -> None:
    meta: dict[str, Any] = {"name": "m", "namespace": NS}
    if annotation is not None:
        meta["annotations"] = {carried_annotation("v1alpha1"): annotation}
    obj = {"apiVersion": V2, "kind": "AIMModel", "metadata": meta, "spec": {"image": "img:1"}}
    assert default_service_template(obj) is None
    blank = model("AIMModel", "m", v1_spec={"image": "i", "defaultServiceTemplate": " "})
    assert default_service_template(blank) is None


# --- which model ------------------------------------------------------------------------------------------------


def test_a_named_model_is_the_namespaced_one_first_then_the_cluster_one() -> None:
    own, shared = model("AIMModel", "m", uid="own"), model("AIMClusterModel", "m", uid="shared")
    found = resolve_model(service(), Models(own, shared), Models(own, shared).by_image)
    assert found is not None and found.kind == "AIMModel"
    ref = {"kind": "AIMModel", "name": "m", "namespace": NS, "scope": "Namespace", "uid": "own"}
    assert found.resolved_ref() == ref
    found = resolve_model(service(), Models(shared), Models(shared).by_image)
    assert found is not None
    assert found.resolved_ref() == {"kind": "AIMClusterModel", "name": "m", "scope": "Cluster", "uid": "shared"}
    assert resolve_model(service(), Models(), Models().by_image) is None, "not found: reconciled as before"
    other_ns = {**own, "metadata": {**own["metadata"], "namespace": "elsewhere"}}
    assert resolve_model(service(), Models(other_ns), Models(other_ns).by_image) is None


def test_a_model_by_image_is_the_first_by_name_with_that_image_namespace_first() -> None:
    b, a = model("AIMModel", "b", uid="b"), model("AIMModel", "a", uid="a")
    shared = model("AIMClusterModel", "c", uid="c")
    models = Models(b, a, shared)
    found = resolve_model(by_image("img:1"), models, models.by_image)
    assert found is not None and found.resolved_ref()["uid"] == "a"  # type: ignore[index]
    only_shared = Models(shared)
    found = resolve_model(by_image(" img:1 "), only_shared, only_shared.by_image)
    assert found is not None and found.kind == "AIMClusterModel", "trimmed, as upstream trims it"
    assert resolve_model(by_image("img:2"), models, models.by_image) is None


@pytest.mark.parametrize(
    ("status", "state", "reason", "message"),
    [
        ("Ready", "Ready", "ModelResolved", "AIMModel m is ready"),
        ("Pending", "Pending", "ModelNotReady", "AIMModel m is not ready yet"),
        ("Progressing", "Pending", "ModelNotReady", "AIMModel m is not ready yet"),
        ("Failed", "Failed", "ModelNotReady", "AIMModel m is in failed state"),
        ("Degraded", "Failed", "ModelNotReady", "AIMModel m is in failed state"),
        ("NotAvailable", "Pending", "ModelNotReady", "AIMModel m status: NotAvailable"),
        (None, "Pending", "ModelNotReady", "AIMModel m status: "),
    ],
)
def test_the_model_component_has_upstreams_reasons_and_resolved_model_only_while_ready(
    status: str | None, state: str, reason: str, message: str
) -> None:
    obj = model("AIMModel", "m", status=status)
    component = model_component("AIMModel", obj)
    assert (component.condition_type, component.state, component.reason, component.message) == (
        "ModelReady",
        state,
        reason,
        message,
    )
    found = resolve_model(service(), Models(obj), Models(obj).by_image)
    assert found is not None and (found.resolved_ref() is not None) == (status == "Ready")
    rolled = roll_up([CONFIG_READY, component])
    # upstream's frozen model-progressing, model-failed and model-ready scenarios: Pending, Failed, and on
    assert rolled.status == {"Ready": "Running", "Pending": "Pending", "Failed": "Failed"}[state]


# --- the default template ---------------------------------------------------------------------------------------


def test_a_service_naming_no_template_selects_its_models_default_exactly_as_a_named_one() -> None:
    owner = model("AIMModel", "m", v1_spec={"image": "img:1", "defaultServiceTemplate": "tpl"})
    found = resolve_model(service(), Models(owner), Models(owner).by_image)
    assert found is not None and found.default_template == "tpl"
    templates = Templates(template("AIMClusterServiceTemplate", "tpl", uid="c"))
    auto = select_template(service(), templates, found.default_template)
    named = select_template(service({"name": "tpl"}), templates)
    assert auto is not None and named is not None
    assert (auto.component, auto.resolved_ref()) == (named.component, named.resolved_ref())
    assert auto.resolved_ref() == {"kind": "AIMClusterServiceTemplate", "name": "tpl", "scope": "Cluster", "uid": "c"}
    missing = select_template(service(), Templates(), "tpl")
    assert missing is not None and missing.config_error is not None
    assert missing.component.message == 'template "tpl" not found'
    # the service's own name wins over the model's default; neither: no selection
    chosen = select_template(service({"name": "own"}), Templates(template("AIMServiceTemplate", "own")), "tpl")
    assert chosen is not None and chosen.name == "own"
    assert select_template(service(), templates, None) is None


def test_resolved_model_is_the_same_field_in_both_versions() -> None:
    """`status.resolvedModel` maps `=`: upstream's MODEL column reads omectl's in v1alpha1, with no annotation."""
    ref = {"kind": "AIMModel", "name": "m", "namespace": NS, "scope": "Namespace", "uid": "u"}
    v2 = {
        "apiVersion": V2,
        "kind": "AIMService",
        "metadata": {"name": "svc", "namespace": NS},
        "spec": {"model": {"name": "m"}},
        "status": {"status": "Running", "resolvedModel": ref},
    }
    v1 = convert(v2, V1)
    assert v1["status"]["resolvedModel"] == ref
    assert carried_annotation("v1alpha2") not in (v1["metadata"].get("annotations") or {})
    assert json.loads(convert(v1, V2)["metadata"]["annotations"][carried_annotation("v1alpha1")]) == {}, (
        "written back in v1alpha1: marked, nothing kept"
    )
    merged = {**ref, "scope": "Unknown"}  # any scope of upstream's enum, both ways
    assert convert(convert({**v1, "status": {"resolvedModel": merged}}, V2), V1)["status"]["resolvedModel"] == merged


def test_a_v1alpha1_service_naming_a_missing_model_fails_with_upstreams_model_not_found() -> None:
    """Upstream's frozen model-not-found: `ModelNotFound` and its message for a service written in v1alpha1 (even
    with only fields both versions hold, as there); a v1alpha2 service naming a missing model is rendered as before."""
    v1 = {"apiVersion": V1, "kind": "AIMService", "metadata": {"name": "s", "namespace": NS}}
    written = convert({**v1, "spec": {"model": {"name": " nonexistent-model "}, "replicas": 1}}, V2)
    component = model_not_found(written)
    assert component is not None
    assert (component.state, component.reason, component.message) == (
        "Failed",
        "ModelNotFound",
        f'model "nonexistent-model" not found in namespace {NS} or cluster scope',
    )
    assert roll_up([CONFIG_READY, component]).status == "Failed"
    v2 = {**written, "metadata": {"name": "s", "namespace": NS}}
    assert model_not_found(v2) is None, "written in v1alpha2"
    by_image = convert({**v1, "spec": {"model": {"image": "ghcr.io/x/m:1"}}}, V2)
    assert model_not_found(by_image) is None, "an image makes its model instead"
