"""The AIMModel a v1alpha1 AIMService creates for its image (core/aim/image_models.py): when, upstream's name for it
(aim-engine 9223504d74b01fec2e99d250933ea2884aef3b87 internal/aimservice/model.go GenerateModelName, its
model_test.go cases), the object as stored, and the spec's label-propagation edge onto it."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from omectl.core.aim.image_models import (
    generated_model_name,
    image_to_create,
    invalid_image_component,
    render_image_model,
)
from omectl.core.aim.labels import PROPAGATED_LABELS_ANNOTATION
from omectl.core.aim.versions import carried_annotation, convert

V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"
PROPAGATION = {"labelPropagation": {"enabled": True, "match": ["team-*", "cost-center"]}}


def service(model: dict[str, Any], labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "svc", "namespace": "team", **({"labels": labels} if labels else {})}
    return convert({"apiVersion": V1, "kind": "AIMService", "metadata": meta, "spec": {"model": model, **spec}}, V2)


def test_upstreams_names_keep_the_images_name_and_tag_and_add_a_hash_of_the_image() -> None:
    image = "ghcr.io/amd/llama-3-8b:v1.0.0"
    digest = hashlib.sha256(b'"ghcr.io/amd/llama-3-8b:v1.0.0"').hexdigest()[:8]
    assert generated_model_name(image) == f"llama-3-8b-v1-0-0-{digest}"
    assert generated_model_name("registry.example.com:5000/models/mistral:latest").startswith("mistral-latest-")
    assert generated_model_name("ghcr.io/amd/model@sha256:abc123def").startswith("model-abc123-")
    assert generated_model_name("ghcr.io/amd/model").startswith("model-latest-")
    assert generated_model_name("aim-dummy:0.1.10").startswith("aim-dummy-0-1-10-")
    assert generated_model_name(image) != generated_model_name("ghcr.io/amd/llama-3-8b:v2.0.0")
    long = generated_model_name(f"ghcr.io/amd/{'x' * 80}:{'t' * 30}")
    assert len(long) == 63 and long.startswith("x" * 26 + "-" + "t" * 27 + "-"), "the longest part shortened first"


@pytest.mark.parametrize(
    "image", ["ghcr.io/amd/model:", "ghcr.io/amd/model@", "ghcr.io/amd/model@sha256", "r.io/--:v1"]
)
def test_an_image_reference_that_names_no_model_is_invalid(image: str) -> None:
    with pytest.raises(ValueError) as raised:
        generated_model_name(image)
    component = invalid_image_component(image, raised.value)
    assert (component.state, component.reason) == ("Failed", "InvalidImageReference")


def test_only_a_service_written_in_v1alpha1_by_image_creates_a_model() -> None:
    assert image_to_create(service({"image": " ghcr.io/x/m:1 "}, caching={"mode": "Shared"})) == "ghcr.io/x/m:1"
    assert image_to_create(service({"image": "ghcr.io/x/m:1"})) == "ghcr.io/x/m:1", "upstream's model-by-image"
    assert image_to_create(service({"name": "m"}, caching={"mode": "Shared"})) is None
    v2 = {"apiVersion": V2, "kind": "AIMService", "metadata": {"name": "s"}, "spec": {"model": {"image": "i:1"}}}
    assert image_to_create(v2) is None


def test_the_model_is_upstreams_v1alpha1_model_stored_at_v1alpha2_with_the_matching_labels() -> None:
    svc = service(
        {"image": "ghcr.io/x/m:1"},
        labels={"team-alpha": "frontend", "cost-center": "cc-12345", "env": "test"},
        runtimeConfigName="rc",
        serviceAccountName="sa",
        imagePullSecrets=[{"name": "pull"}],
    )
    model = render_image_model(svc, "ghcr.io/x/m:1", "m-1-abcd1234", PROPAGATION)
    assert (model["apiVersion"], model["kind"]) == (V2, "AIMModel")
    meta = model["metadata"]
    assert (meta["name"], meta["namespace"]) == ("m-1-abcd1234", "team")
    assert "ownerReferences" not in meta, "shared by the services with that image"
    assert meta["labels"] == {
        "aim.eai.amd.com/origin": "auto-generated",
        "team-alpha": "frontend",
        "cost-center": "cc-12345",
    }
    assert meta["annotations"][PROPAGATED_LABELS_ANNOTATION] == "cost-center,team-alpha"
    assert model["spec"]["image"] == "ghcr.io/x/m:1" and model["spec"]["runtimeConfigName"] == "rc"
    v1 = convert(model, V1)
    assert v1["spec"] == {
        "image": "ghcr.io/x/m:1",
        "runtimeConfigName": "rc",
        "serviceAccountName": "sa",
        "imagePullSecrets": [{"name": "pull"}],
        "resources": {},
    }
    assert carried_annotation("v1alpha2") not in v1["metadata"].get("annotations", {})
