"""A model without an image (upstream's scaffold, `spec:` null; the CRD allows it): its status says why and nothing
raises, so the reconcile succeeds instead of retrying (core/aim/discovery.py)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.discovery import IMAGE_NOT_SPECIFIED, has_image, model_status, render_discovery_job

SPECLESS: list[dict[str, Any]] = [
    {"kind": "AIMModel", "metadata": {"name": "m", "namespace": "ns"}},
    {"kind": "AIMModel", "metadata": {"name": "m", "namespace": "ns"}, "spec": None},
    {"kind": "AIMClusterModel", "metadata": {"name": "m"}, "spec": {}},
    {"kind": "AIMClusterModel", "metadata": {"name": "m"}, "spec": {"image": ""}},
]


@pytest.mark.parametrize("model", SPECLESS, ids=["no-spec", "spec-null", "spec-empty", "image-empty"])
def test_a_model_without_an_image_is_failed_with_its_reason_whatever_its_job(model: dict[str, Any]) -> None:
    assert not has_image(model)
    for job in (None, {"status": {"conditions": [{"type": "Complete", "status": "True"}]}}):
        status = model_status(model, job, None)
        assert status["status"] == "Failed"
        assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
            ("DiscoveryReady", "False", IMAGE_NOT_SPECIFIED),
            ("Ready", "False", IMAGE_NOT_SPECIFIED),
        ]
        assert (
            status["conditions"][1]["message"] == f"{model['kind']} 'm' has no spec.image: there is nothing to discover"
        )


def test_disabled_discovery_needs_no_image() -> None:
    model = {"kind": "AIMModel", "metadata": {"name": "m"}, "spec": {"discovery": {"enabled": False}}}
    assert model_status(model, None, None)["status"] == "Ready"


def test_only_a_model_with_an_image_renders_a_discovery_job() -> None:
    model = {"kind": "AIMModel", "metadata": {"name": "m", "namespace": "ns"}, "spec": {"image": "example/m:1"}}
    assert has_image(model)
    assert render_discovery_job(model, {})["kind"] == "Job"
    with pytest.raises(ValueError, match=r"has no spec\.image"):
        render_discovery_job(SPECLESS[0], {})  # callers check has_image first (controller/aim/models.py)
