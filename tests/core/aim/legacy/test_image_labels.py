"""An image's config labels read as upstream's ImageMetadata (omectl.core.aim.legacy.image_labels)."""

from __future__ import annotations

import json

import pytest

from omectl.core.aim.legacy.image_labels import parse_image_labels, parse_recommended_deployments

DEPLOYMENT = {"gpuModel": "MI300X", "gpuCount": 1, "metric": "latency", "precision": "fp16", "profileId": "p1"}


def test_labels_fill_oci_and_model_metadata_the_new_prefix_over_the_legacy_one() -> None:
    labels = {
        "org.opencontainers.image.title": "aim-dummy",
        "org.opencontainers.image.version": "0.1.10",
        "com.amd.aim.model.canonicalName": "org/new",
        "org.amd.silogen.model.canonicalName": "org/old",
        "org.amd.silogen.model.source": "https://hf.co/org/old",
        "com.amd.aim.model.tags": " chat, ,small ",
        "com.amd.aim.hfToken.required": "true",
        "com.amd.aim.model.recommendedDeployments": json.dumps([DEPLOYMENT]),
        "unrelated": "kept in originalLabels",
    }
    metadata = parse_image_labels(labels)
    assert metadata["oci"] == {"title": "aim-dummy", "version": "0.1.10"}
    assert metadata["model"] == {
        "canonicalName": "org/new",
        "source": "https://hf.co/org/old",
        "tags": ["chat", "small"],
        "hfTokenRequired": True,
        "recommendedDeployments": [DEPLOYMENT],
    }
    assert metadata["originalLabels"] == labels


def test_an_image_without_labels_has_empty_metadata_and_an_unparsable_boolean_is_ignored() -> None:
    assert parse_image_labels({}) == {"oci": {}, "model": {}}
    assert "hfTokenRequired" not in parse_image_labels({"com.amd.aim.hfToken.required": "yes"})["model"]


def test_deployments_are_accepted_as_upstream_normalises_them() -> None:
    python_style = "{'gpuModel': 'MI300X', 'gpuCount': 1, 'metric': 'latency'}, {'gpuModel': 'MI325X', 'gpuCount': 8}"
    assert parse_recommended_deployments(python_style) == [
        {"gpuModel": "MI300X", "gpuCount": 1, "metric": "latency"},
        {"gpuModel": "MI325X", "gpuCount": 8},
    ]
    assert parse_recommended_deployments('[{"gpuModel": "MI300X", "unknown": 1}]') == [{"gpuModel": "MI300X"}]


@pytest.mark.parametrize("value", ["not json", '[{"gpuCount": "one"}]', '[{"gpuModel": 3}]', "[1]"])
def test_deployments_that_do_not_parse_fail_the_labels(value: str) -> None:
    with pytest.raises(ValueError, match="failed to parse recommended deployments"):
        parse_image_labels({"com.amd.aim.model.recommendedDeployments": value})
