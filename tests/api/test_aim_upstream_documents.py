"""Upstream AIM Engine's own documents and schema parts (tests/fixtures/upstream/aim, commit in its SOURCE) against
ours: its Helm values example and its legacy kinds (samples and e2e documents, status included) read by our
typed models without losing a field (they drop unknown fields, so a field upstream has and ours lacks would vanish),
and its gatewayRef constraints on every gatewayRef of ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.api import aim, aim_service_v1alpha1, crdgen, ome
from tests.api.test_crds import schema_nodes
from tests.api.test_upstream_aim_crds import compared, upstream_crds, v1alpha1_spec

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "upstream" / "aim"


def test_the_helm_values_example_is_a_runtime_config_spec_field_for_field() -> None:
    example = yaml.safe_load((UPSTREAM / "helm" / "clusterruntimeconfig-values-example.yaml").read_text())
    assert example["kind"] == "AIMClusterRuntimeConfig"
    assert aim.RuntimeConfigSpec.model_validate(example["spec"]).to_dict() == example["spec"]
    assert aim.AIMClusterRuntimeConfig.model_validate(example).to_dict()["spec"]["model"] == {"autoDiscovery": True}


def test_every_gateway_ref_of_ours_carries_upstreams_gateway_api_constraints() -> None:
    """Every gatewayRef in every AIM CRD and version of ours (runtime configs, an AIMService's routing and inline
    config) has the constraints of upstream's runtime-config gatewayRef, field by field, but the schema defaults of
    group and kind (none on ours: test_upstream_aim_crds' DELIBERATE; an AIMService's at v1alpha1 has upstream's,
    compared there)."""
    upstream_spec = v1alpha1_spec(upstream_crds()["AIMClusterRuntimeConfig"])
    assert upstream_spec is not None
    upstream = {p: node for p, node in schema_nodes(upstream_spec, ".spec") if ".gatewayRef" in p}
    expected = {p.split(".gatewayRef")[1]: _without_default(compared(n, p)) for p, n in upstream.items()}
    assert {".namespace", ".sectionName", ".kind", ".group"} <= set(expected)
    seen = 0
    for definition in crdgen.CRDS:
        if definition.group != aim.GROUP:
            continue
        for version in crdgen.build_crd(definition)["spec"]["versions"]:
            spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
            nodes = dict(schema_nodes(spec, ".spec"))
            for ref in (p for p in nodes if p.endswith(".gatewayRef")):
                seen += 1
                ours = {p[len(ref) :]: _without_default(compared(n, p)) for p, n in nodes.items() if p.startswith(ref)}
                where = f"{definition.kind} {version['name']} {ref}"
                assert ours == expected, where
    assert seen >= 7, (
        "both runtime configs at two versions, and the AIMService's routing (both versions) and inline config"
    )


def _without_default(found: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in found.items() if k != "default"}


LEGACY_MODELS: dict[str, type[ome.Resource]] = {
    "AIMTemplateCache": aim.AIMTemplateCache,
    "AIMServiceTemplate": aim.AIMServiceTemplate,
    "AIMClusterServiceTemplate": aim.AIMClusterServiceTemplate,
}


def upstream_legacy_documents() -> list[tuple[str, dict[str, Any]]]:
    """Every document of upstream's legacy kinds (template caches, service templates) in its pinned samples and e2e
    tests, with the file it came from."""
    found = []
    for path in sorted(UPSTREAM.rglob("*.yaml")):
        if "crd" in path.parts:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") in LEGACY_MODELS:
                found.append((str(path.relative_to(UPSTREAM)), doc))
    return found


def test_upstreams_legacy_documents_are_pinned() -> None:
    documents = upstream_legacy_documents()
    assert {doc["kind"] for _, doc in documents} == set(LEGACY_MODELS)
    assert len({path for path, _ in documents}) == 39, "3 samples and 36 e2e files"
    assert sum(1 for _, doc in documents if "status" in doc) == 12, "the frozen templates, status included"


@pytest.mark.parametrize(("path", "doc"), upstream_legacy_documents(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_upstream_legacy_document_is_read_by_our_models_without_losing_a_field(
    path: str, doc: dict[str, Any]
) -> None:
    """Spec and status: the typed models drop what they do not know, so a field of upstream's that ours lacked would
    be gone."""
    assert LEGACY_MODELS[doc["kind"]].model_validate(doc).to_dict() == doc


def upstream_service_documents() -> list[tuple[str, dict[str, Any]]]:
    """Every AIMService of upstream's pinned samples and e2e tests but the scaffold (no spec), with its file."""
    found = []
    for path in sorted(UPSTREAM.rglob("*.yaml")):
        if "crd" in path.parts:
            continue
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "AIMService" and doc.get("spec"):
                found.append((str(path.relative_to(UPSTREAM)), doc))
    return found


def test_upstreams_services_are_pinned() -> None:
    assert len(upstream_service_documents()) == 15


@pytest.mark.parametrize(("path", "doc"), upstream_service_documents(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_upstream_service_is_read_by_our_v1alpha1_model_without_losing_a_field(
    path: str, doc: dict[str, Any]
) -> None:
    assert aim_service_v1alpha1.AIMService.model_validate(doc).to_dict() == doc
