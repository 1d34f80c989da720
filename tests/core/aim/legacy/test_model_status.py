"""The status of a model written in v1alpha1, rolled up from its image metadata and templates as upstream's model
controller composes it (omectl/core/aim/legacy/model_status.py)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.legacy.model_status import (
    ConditionEvent,
    condition_events,
    image_metadata_component,
    model_status,
    source_type,
    templates_component,
)
from omectl.core.aim.legacy.model_templates import ImageMetadata, from_labels, unreadable

NAMED = ImageMetadata({"model": {"canonicalName": "org/m", "recommendedDeployments": [{"gpuCount": 1}]}}, "image")
UNNAMED = ImageMetadata({"model": {}, "oci": {"title": "base"}}, "image")
NOT_EXTRACTED = ImageMetadata(None, "none")


def by_type(conditions: Any) -> dict[str, dict[str, str]]:
    return {c["type"]: c for c in conditions}


def rolled(
    metadata: ImageMetadata,
    expects: bool | None,
    statuses: list[str | None],
    *,
    cluster: bool = False,
    previous: list[dict[str, str]] | None = None,
) -> Any:
    components = [
        image_metadata_component(metadata, cluster=cluster),
        templates_component(expects, statuses, cluster=cluster),
    ]
    return model_status(components, previous_conditions=previous or [])


def test_found_metadata_and_ready_templates_make_a_ready_model() -> None:
    status = rolled(NAMED, True, ["Ready", "Ready"])
    conditions = by_type(status.conditions)
    assert (status.status, status.applies) == ("Ready", True)
    assert [c["type"] for c in status.conditions] == ["ImageMetadataReady", "ServiceTemplatesReady", "Ready"]
    assert (conditions["ImageMetadataReady"]["status"], conditions["ImageMetadataReady"]["reason"]) == (
        "True",
        "ImageMetadataFound",
    )
    assert (conditions["ServiceTemplatesReady"]["reason"], conditions["Ready"]["reason"]) == (
        "AllTemplatesReady",
        "AllComponentsReady",
    )


def test_an_image_without_a_canonical_name_or_not_read_at_all_is_found() -> None:
    """Upstream's custom-models/valid-image (ImageFound) and error-recovery (extraction and templates off: Ready)."""
    assert by_type(rolled(UNNAMED, True, ["Ready"]).conditions)["ImageMetadataReady"]["reason"] == "ImageFound"
    status = rolled(NOT_EXTRACTED, False, [])
    conditions = by_type(status.conditions)
    assert status.status == "Ready"
    assert (conditions["ImageMetadataReady"]["status"], conditions["ImageMetadataReady"]["reason"]) == (
        "True",
        "ImageFound",
    )
    assert conditions["ServiceTemplatesReady"]["reason"] == "NoTemplatesExpected"


@pytest.mark.parametrize(
    ("statuses", "expects", "state", "ready_reason"),
    [
        ([], None, "Progressing", "Progressing"),  # awaiting metadata
        ([], True, "Progressing", "Progressing"),  # creating templates
        (["Ready", "Pending"], True, "Progressing", "Progressing"),
        (["Failed", "Degraded"], True, "Failed", "AllTemplatesFailed"),
        (["Ready", "Failed"], True, "Degraded", "SomeTemplatesDegraded"),
        (["NotAvailable"], True, "NotAvailable", "NoTemplatesAvailable"),
        (["Ready", "NotAvailable"], True, "Ready", "AllComponentsReady"),
    ],
)
def test_the_models_status_follows_its_templates(
    statuses: list[str | None], expects: bool | None, state: str, ready_reason: str
) -> None:
    status = rolled(NAMED, expects, statuses)
    assert (status.status, by_type(status.conditions)["Ready"]["reason"]) == (state, ready_reason)
    if state in ("Failed", "Degraded", "NotAvailable"):
        assert by_type(status.conditions)["Ready"]["message"].startswith("Component ServiceTemplates is not ready: ")


def test_a_cluster_models_unready_templates_make_it_pending_under_their_cluster_condition() -> None:
    status = rolled(NAMED, True, ["Progressing"], cluster=True)
    assert status.status == "Pending"
    assert [c["type"] for c in status.conditions] == ["ImageMetadataReady", "ClusterServiceTemplatesReady", "Ready"]


def test_a_missing_pull_secret_fails_the_model_on_a_missing_reference_and_applies_nothing() -> None:
    """Upstream's invalid-image-pull-secret: Failed, ConfigValid=False / ReferenceNotFound, Ready False."""
    secret = unreadable("SecretNotFound", 'imagePullSecret "s" not found in namespace "team"')
    status = rolled(secret, False, [])
    conditions = by_type(status.conditions)
    assert (status.status, status.applies) == ("Failed", False)
    assert (conditions["ConfigValid"]["status"], conditions["ConfigValid"]["reason"]) == ("False", "ReferenceNotFound")
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "ReferenceNotFound")
    assert (conditions["ImageMetadataReady"]["status"], conditions["ImageMetadataReady"]["reason"]) == (
        "False",
        "SecretNotFound",
    )


@pytest.mark.parametrize(
    "metadata",
    [
        unreadable("ImageNotFound", 'failed to fetch image "x:0": 404'),
        unreadable("ImagePullAuthFailure", 'failed to fetch image "x:0": 401'),
        unreadable("InvalidImageReference", "failed to parse image reference"),
        from_labels({"com.amd.aim.model.recommendedDeployments": "{"}),
    ],
)
def test_an_image_that_cannot_be_read_degrades_the_model_and_blocks_its_templates(metadata: ImageMetadata) -> None:
    """Upstream's custom-models/nonexistent-image: Degraded (an uncategorised error is infrastructure to its state
    engine), ImageMetadataReady False, the templates not applied."""
    status = rolled(metadata, True, [])
    conditions = by_type(status.conditions)
    assert (status.status, status.applies) == ("Degraded", False)
    assert conditions["ImageMetadataReady"]["status"] == "False"
    assert conditions["ImageMetadataReady"]["message"] == metadata.error
    assert (conditions["DependenciesReachable"]["status"], conditions["Ready"]["reason"]) == (
        "False",
        "InfrastructureError",
    )
    assert "ConfigValid" not in conditions


def test_a_secret_that_cannot_be_read_is_an_infrastructure_error_named_in_ready() -> None:
    status = rolled(unreadable("SecretAccessFailed", "forbidden"), True, [])
    ready = by_type(status.conditions)["Ready"]
    assert (status.status, ready["reason"]) == ("Degraded", "SecretAccessFailed")
    assert ready["message"] == "Component ImageMetadata is not ready: forbidden"


def test_dependencies_reachable_turns_true_once_the_error_is_gone() -> None:
    previous = list(rolled(unreadable("ImageNotFound", "404"), True, []).conditions)
    recovered = by_type(rolled(NAMED, True, ["Ready"], previous=previous).conditions)
    assert (recovered["DependenciesReachable"]["status"], recovered["DependenciesReachable"]["reason"]) == (
        "True",
        "Reachable",
    )
    assert "DependenciesReachable" not in by_type(rolled(NAMED, True, ["Ready"]).conditions), "nothing before"


def test_the_source_type_is_custom_for_model_sources_else_image() -> None:
    assert source_type({"image": "i", "modelSources": [{"modelId": "a/b", "sourceUri": "hf://a/b"}]}) == "Custom"
    assert source_type({"image": "i"}) == "Image"


def events(before: Any, after: Any) -> list[tuple[str, str, str]]:
    return [(e.type, e.reason, e.message) for e in condition_events(list(before.conditions), list(after.conditions))]


def test_each_new_or_changed_condition_is_an_event_with_its_reason_and_message() -> None:
    """Upstream's pipeline: an event per condition whose status or reason changed (a new one included), Normal while
    nothing fails; an unchanged condition, or one whose message alone changed, records none."""
    creating = rolled(NAMED, True, [])
    first = [(e.type, e.reason) for e in condition_events([], list(creating.conditions))]
    assert first == [("Normal", "ImageMetadataFound"), ("Normal", "CreatingTemplates"), ("Normal", "Progressing")]
    ready = rolled(NAMED, True, ["Ready"])
    assert events(creating, ready) == [
        ("Normal", "AllTemplatesReady", "All templates are ready"),
        ("Normal", "AllComponentsReady", "All components are ready"),
    ]
    assert events(ready, ready) == []
    moved = [{**c, "message": "another"} for c in ready.conditions]
    assert condition_events(list(ready.conditions), moved) == []


@pytest.mark.parametrize(
    ("statuses", "reason"),
    [
        (["Failed"], "AllTemplatesFailed"),
        (["Ready", "Failed"], "SomeTemplatesDegraded"),
        (["NotAvailable"], "NoTemplatesAvailable"),
    ],
)
def test_a_failing_component_and_ready_are_warnings(statuses: list[str | None], reason: str) -> None:
    before = rolled(NAMED, True, ["Ready"])
    after = rolled(NAMED, True, statuses)
    conditions = by_type(after.conditions)
    assert condition_events(list(before.conditions), list(after.conditions)) == [
        ConditionEvent("Warning", reason, conditions["ServiceTemplatesReady"]["message"]),
        ConditionEvent("Warning", reason, conditions["Ready"]["message"]),
    ]


def test_a_missing_secret_and_an_unreachable_registry_are_warnings_and_their_recovery_normal() -> None:
    """Upstream's AsError conditions (ConfigValid, DependenciesReachable False; the failing component; Ready) are
    Warnings; an uncategorised image error leaves its component Progressing: Normal."""
    ready = rolled(NAMED, True, ["Ready"])
    secret = rolled(unreadable("SecretNotFound", "missing"), True, ["Ready"])
    assert [(e.type, e.reason) for e in condition_events(list(ready.conditions), list(secret.conditions))] == [
        ("Warning", "SecretNotFound"),
        ("Warning", "ReferenceNotFound"),  # ConfigValid
        ("Warning", "ReferenceNotFound"),  # Ready
    ]
    unreachable = rolled(unreadable("ImageNotFound", "404"), True, ["Ready"])
    assert events(ready, unreachable) == [
        ("Warning", "InfrastructureError", "Cannot reach dependencies"),
        ("Normal", "ImageNotFound", "404"),
        ("Warning", "InfrastructureError", "Infrastructure error - waiting for retry"),
    ]
    recovered = rolled(NAMED, True, ["Ready"], previous=list(unreachable.conditions))
    assert events(unreachable, recovered) == [
        ("Normal", "Reachable", "All dependencies are reachable"),
        ("Normal", "ImageMetadataFound", "Image metadata from the image"),
        ("Normal", "AllComponentsReady", "All components are ready"),
    ]


def test_a_condition_without_a_message_gets_upstreams() -> None:
    (event,) = condition_events([], [{"type": "ImageMetadataReady", "status": "False", "reason": "X", "message": ""}])
    assert event.message == "ImageMetadata is not ready: X"
