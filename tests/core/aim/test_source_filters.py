"""Which images a v1alpha1 AIMClusterModelSource's filters take (omectl.core.aim.source_filters), as upstream's
aimclustermodelsource filtering decides it, and what a scan makes of them (omectl.core.aim.source_scan)."""

from __future__ import annotations

import pytest

from omectl.core.aim.source_filters import (
    FoundImage,
    ImageFilter,
    matches_filter,
    matches_versions,
    matches_wildcard,
    parse_filter,
)
from omectl.core.aim.source_scan import FilterResult, plan_scan, scan_status, sync_interval


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("amdenterpriseai/aim-*", ImageFilter(None, "amdenterpriseai/aim-*", None, True)),
        ("ghcr.io/silogen/aim-*", ImageFilter("ghcr.io", "silogen/aim-*", None, True)),
        ("ghcr.io/silogen/aim-llama:1.0.0", ImageFilter("ghcr.io", "silogen/aim-llama", "1.0.0", False)),
        ("docker.io/silogen/aim-llama", ImageFilter(None, "silogen/aim-llama", None, False)),
        ("nginx:1", ImageFilter(None, "library/nginx", "1", False)),
        ("Not A Reference", ImageFilter(None, "Not A Reference", None, False)),
    ],
)
def test_a_filters_image_is_a_pattern_or_a_reference_whose_tag_counts_only_when_written(
    text: str, parsed: ImageFilter
) -> None:
    assert parse_filter(text) == parsed


def test_a_wildcard_is_any_run_of_characters_and_none_is_equality() -> None:
    assert matches_wildcard("org/aim-*", "org/aim-") and matches_wildcard("a*b*c", "axbyc")
    assert not matches_wildcard("a*b*c", "axc") and not matches_wildcard("org/aim", "org/aim-x")


@pytest.mark.parametrize(
    ("tag", "constraints", "matches"),
    [
        ("0.8.4", ["0.8.4"], True),
        ("0.8.5", ["0.8.4"], False),
        ("v1.2.0", [">=1.1"], True),  # a leading v dropped, a one-dot version completed
        ("0.8.1-rc1", [">=0.8.0"], True),
        ("0.9.0", [">=0.8.0", "<=0.9.0-rc1"], False),  # every constraint must hold
        ("0.9.0-rc1", [">=0.8.0", "<=0.9.0-rc1"], True),
        ("1.5.0", [">1.0.0 <1.1.0 || >=1.2.0"], True),
        ("1.0.5", ["!=1.0.5"], False),
        ("1.2.3", ["~1.2.0"], True),  # blang/semver has no tilde: the constraint is ignored
        ("latest", [">=0.0.0"], False),  # not a semantic version
        ("01.2.3", [], False),
    ],
)
def test_version_constraints_are_blang_semver_ranges(tag: str, constraints: list[str], matches: bool) -> None:
    assert matches_versions(tag, constraints) is matches


def test_an_image_matches_on_registry_pattern_exclusion_then_tag_or_versions() -> None:
    image = FoundImage("ghcr.io", "silogen/aim-llama", "1.0.0")
    assert matches_filter(image, {"image": "silogen/aim-*"}, [">=1.0.0"])
    assert not matches_filter(image, {"image": "docker.io.example/silogen/aim-*"}, [])
    assert not matches_filter(image, {"image": "silogen/aim-*", "exclude": ["silogen/aim-llama"]}, [])
    assert not matches_filter(image, {"image": "silogen/aim-*", "versions": ["<1.0.0"]}, [">=1.0.0"]), "its own win"
    assert matches_filter(image, {"image": "ghcr.io/silogen/aim-llama:1.0.0", "versions": ["<1.0.0"]}, [])
    assert matches_filter(FoundImage("ghcr.io", "silogen/aim-llama", "dev"), {"image": "silogen/aim-*"}, [])


def test_a_scan_adds_new_images_under_max_models_and_words_its_status_as_upstream() -> None:
    found = tuple(FoundImage("docker.io", f"org/aim-{n}", "1.0.0") for n in "abc")
    results = [FilterResult(found), FilterResult(error="unexpected status 401")]
    plan = plan_scan({"maxModels": 2}, results, {"org/aim-a:1.0.0"})
    assert [i.uri for i in plan.new_images] == ["org/aim-b:1.0.0"]
    assert (plan.available, plan.discovered) == (3, 2)
    status = scan_status(results, plan, 1, "2026-12-06T00:00:00Z")
    conditions = {c["type"]: c for c in status["conditions"]}
    assert status["status"] == "Degraded"
    assert (conditions["FiltersReady"]["reason"], conditions["FiltersReady"]["message"]) == (
        "SomeFiltersFailed",
        "1 of 2 filters had errors",
    )
    assert conditions["ExistingModelsReady"]["message"] == "Found 1 existing models"
    assert (conditions["Ready"]["status"], conditions["Ready"]["reason"]) == ("False", "SomeFiltersFailed")
    assert conditions["MaxModelsLimitReached"]["message"] == "Limit reached: 2 created, 3 available"
    assert (status["modelCount"], status["availableModels"], status["modelsLimitReached"]) == (2, 3, True)


def test_the_sync_interval_is_a_go_duration_one_hour_by_default() -> None:
    assert sync_interval({"syncInterval": "2h30m"}) == 9000
    assert sync_interval({}) == sync_interval({"syncInterval": "soon"}) == 3600
