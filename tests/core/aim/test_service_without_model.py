"""An AIMService that names no model (upstream's scaffold has no spec; the CRD allows it): `names_model` says so
and the roll-up fails it with upstream's reason and message (core/aim/kserve.py, core/aim/status.py)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.custom_models import custom_spec
from omectl.core.aim.kserve import model_image, names_model
from omectl.core.aim.status import Component, no_model_component, roll_up
from omectl.core.aim.versions import carried_annotation, convert

META = {"name": "svc", "namespace": "ns"}


@pytest.mark.parametrize(
    "spec",
    [None, {}, {"model": None}, {"model": {}}, {"model": {"name": ""}}, {"model": {"image": 3}}],
    ids=["no-spec", "spec-empty", "model-null", "model-empty", "name-empty", "image-not-text"],
)
def test_a_service_without_a_model_names_none(spec: Any) -> None:
    service = {"metadata": META, **({"spec": spec} if spec is not None else {})}
    assert not names_model(service)
    with pytest.raises(ValueError, match="names no model"):
        model_image(service)  # why the reconciler checks names_model first


@pytest.mark.parametrize("model", [{"name": "qwen"}, {"image": "example/m:1"}])
def test_a_service_with_a_name_or_an_image_names_a_model(model: dict[str, str]) -> None:
    assert names_model({"metadata": META, "spec": {"model": model}})


def test_no_model_fails_the_service_with_upstreams_reason_and_message() -> None:
    config = Component("RuntimeConfig", "Ready", "RuntimeConfigResolved", "")
    rolled = roll_up([config, no_model_component()])
    assert rolled.status == "Failed"
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in rolled.conditions] == [
        ("RuntimeConfigReady", "True", "RuntimeConfigResolved", ""),
        ("ModelReady", "False", "ModelNotFound", "no model specified in service spec"),
        ("Ready", "False", "ModelNotFound", "no model specified in service spec"),
    ]


def test_a_service_written_in_v1alpha1_with_a_custom_model_names_none_in_v1alpha2_but_carries_it() -> None:
    """Its model is found or made from the custom spec (core/aim/custom_models.py), not failed as naming none."""
    v1 = {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": META,
        "spec": {"model": {"custom": {"baseImage": "b:1"}}, "replicas": 1},
    }
    v2 = convert(v1, "aim.eai.amd.com/v1alpha2")
    assert not names_model(v2) and custom_spec(v2) == {"baseImage": "b:1"}
    assert custom_spec({"metadata": META, "spec": {}}) is None
    assert custom_spec({"metadata": {**META, "annotations": {carried_annotation("v1alpha1"): "{not json"}}}) is None
