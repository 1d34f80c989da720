"""The CRDs of the AIM kinds served at v1alpha1 and v1alpha2 (docs/aim-versions.md): upstream's names, scope and
v1alpha1 printer columns, v1alpha2 the storage version with omectl's columns, each version its own schema, and
`conversion.strategy: Webhook` naming the placeholder the cluster's owner replaces (ConversionReview v1)."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.api import aim, crdgen
from omectl.core.aim.versions import CONVERSIONS
from tests.api.test_crds import schema_nodes
from tests.api.test_upstream_aim_crds import differences, upstream_crds

CONVERTED = {d.kind: d for d in crdgen.converted_crds()}


def columns(version: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]


def test_the_converted_kinds_are_those_with_conversion_rules() -> None:
    assert (
        set(CONVERTED)
        == set(CONVERSIONS)
        == {
            "AIMArtifact",
            "AIMClusterModel",
            "AIMClusterModelSource",
            "AIMModel",
            "AIMService",
        }
    )


@pytest.mark.parametrize("kind", sorted(CONVERTED))
def test_a_converted_kind_is_upstreams_at_v1alpha1_and_omectls_at_v1alpha2_stored_there(kind: str) -> None:
    upstream = upstream_crds()[kind]
    ours = crdgen.build_crd(CONVERTED[kind])
    spec = ours["spec"]
    assert spec["names"] == upstream["spec"]["names"]
    assert spec["scope"] == upstream["spec"]["scope"]
    by_name = {v["name"]: v for v in spec["versions"]}
    assert set(by_name) == {aim.V1ALPHA1, aim.V1ALPHA2}
    assert [name for name, v in by_name.items() if v["storage"]] == [aim.V1ALPHA2]
    assert all(v["served"] and v["subresources"] == {"status": {}} for v in by_name.values())
    (upstream_version,) = upstream["spec"]["versions"]
    assert columns(by_name[aim.V1ALPHA1]) == columns(upstream_version)
    assert columns(by_name[aim.V1ALPHA2]) == columns({"additionalPrinterColumns": CONVERTED[kind].printer_columns})
    assert set(by_name[aim.V1ALPHA1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]) == set(
        crdgen.structural_schema(CONVERTED[kind].converted[0].model)["properties"]["spec"]["properties"]
    )
    assert by_name[aim.V1ALPHA2]["schema"]["openAPIV3Schema"] == crdgen.structural_schema(getattr(aim, kind))
    assert spec["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"url": "https://omectl-webhook.invalid/convert"},
            "conversionReviewVersions": ["v1"],
        },
    }


def test_no_other_crd_has_a_conversion() -> None:
    others = [d.kind for d in crdgen.CRDS if d.kind not in CONVERTED and "conversion" in crdgen.build_crd(d)["spec"]]
    assert others == []


@pytest.mark.parametrize("kind", sorted(CONVERTED))
def test_a_converted_kinds_v1alpha1_status_is_upstreams_and_allows_null_nowhere(kind: str) -> None:
    """A status read in v1alpha1 (converted from the controller's v1alpha2 one) has upstream's shape; a null is
    dropped there, as upstream's CRD drops it."""
    missing, differing = differences(kind, "status")
    assert (missing, differing) == ([], {})
    by_name = {v["name"]: v for v in crdgen.build_crd(CONVERTED[kind])["spec"]["versions"]}
    schema = by_name[aim.V1ALPHA1]["schema"]["openAPIV3Schema"]
    assert [path for path, node in schema_nodes(schema) if "nullable" in node] == []


@pytest.mark.parametrize("kind", ["AIMModel", "AIMClusterModel"])
def test_a_models_upstream_status_fields_have_one_schema_in_both_versions(kind: str) -> None:
    """`imageMetadata`, `sourceType` and the `NotAvailable` state, which the controller writes in v1alpha2 for a
    model written in v1alpha1, are v1alpha2's too, with upstream's schema (docs/aim-versions.md)."""
    by_name = {v["name"]: v for v in crdgen.build_crd(CONVERTED[kind])["spec"]["versions"]}
    statuses = (
        by_name[v]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"] for v in aim.CONFIG_VERSIONS
    )
    v1, v2 = statuses
    assert _shape(v2["imageMetadata"]) == _shape(v1["imageMetadata"])
    assert v2["sourceType"]["enum"] == v1["sourceType"]["enum"] == ["Image", "Custom"]
    assert set(v2["status"]["enum"]) == set(v1["status"]["enum"])


def _shape(schema: Any) -> Any:
    """A schema without its descriptions and nullability (v1alpha2 allows nulls, upstream's v1alpha1 none)."""
    if isinstance(schema, dict):
        return {k: _shape(v) for k, v in schema.items() if k not in ("description", "nullable")}
    if isinstance(schema, list):
        return [_shape(v) for v in schema]
    return schema
