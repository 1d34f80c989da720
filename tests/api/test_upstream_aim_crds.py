"""Our aim.eai.amd.com CRDs at v1alpha1 against upstream AIM Engine's, field by field: every field upstream's `spec`
schema has, ours has, as strictly typed (type, format, enum, pattern, required, defaults, list and map types, open
or closed; `tests/api/test_upstream_crds.py`'s comparison), and with upstream's CEL rules (`x-kubernetes-validations`,
rule and message).

Upstream's CRDs (all v1alpha1, ten kinds) are pinned byte for byte under tests/fixtures/upstream/aim/config/crd/bases
(commit in tests/fixtures/upstream/aim/SOURCE). `spec` is compared: `status` is written by the controller, but for
the legacy kinds, which nothing of ours writes yet, whose status is compared too.
A kind we do not yet serve at v1alpha1 is listed in `NOT_YET_SERVED`, so the test fails the day it is served
without being compared; a difference we keep on purpose is listed in `DELIBERATE` with its reason, and a listed one
that has gone fails too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.api import aim, crdgen
from tests.api.test_crds import schema_nodes
from tests.api.test_upstream_crds import constraints

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "upstream" / "aim" / "config" / "crd" / "bases"
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

NOT_YET_SERVED: dict[str, str] = {}
"""Upstream's kinds with no v1alpha1 schema of ours yet, and why."""

_NO_SCHEMA_DEFAULTS = (
    "no schema defaults on a runtime config: configs are layered field by field and a value the API server invented "
    "would mask the lower layers (the operator defaults live in the controller)"
)
DELIBERATE: dict[tuple[str, str], str] = {
    (kind, path): _NO_SCHEMA_DEFAULTS
    for kind in ("AIMClusterRuntimeConfig", "AIMRuntimeConfig")
    for path in (
        ".spec.labelPropagation.enabled",
        ".spec.routing.gatewayRef.group",
        ".spec.routing.gatewayRef.kind",
        ".spec.storage.pvcHeadroomPercent",
    )
} | {
    (kind, ".spec.pvcHeadroomPercent"): (
        "ours refuses a negative headroom (minimum 0) on the deprecated top-level field, as on "
        "storage.pvcHeadroomPercent; upstream's deprecated field has no minimum"
    )
    for kind in ("AIMClusterRuntimeConfig", "AIMRuntimeConfig")
}
"""(kind, field) -> why ours differs from upstream's there."""


def upstream_crds() -> dict[str, dict[str, Any]]:
    """Upstream's CRDs by kind."""
    crds = {}
    for path in sorted(UPSTREAM.glob("*.yaml")):
        crd: dict[str, Any] = yaml.load(path.read_text(), Loader=_Loader)
        crds[crd["spec"]["names"]["kind"]] = crd
    return crds


def v1alpha1_spec(crd: dict[str, Any], part: str = "spec") -> dict[str, Any] | None:
    for version in crd["spec"]["versions"]:
        if version["name"] == aim.V1ALPHA1:
            spec: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"][part]
            return spec
    return None


def served_v1alpha1() -> dict[str, crdgen.CRDDefinition]:
    return {d.kind: d for d in crdgen.CRDS if d.group == aim.GROUP and aim.V1ALPHA1 in d.served_versions}


def legacy_kinds() -> list[str]:
    """The kinds upstream serves and we serve at v1alpha1 alone (its legacy template path), not yet reconciled."""
    return sorted(kind for kind, d in served_v1alpha1().items() if d.versions == (aim.V1ALPHA1,))


def compared(node: dict[str, Any], path: str) -> dict[str, Any]:
    """What a field accepts: test_upstream_crds' constraints plus the value validations under `allOf` and the CEL
    rules. An array without a list type is atomic, so an explicit `atomic` is the same."""
    found = constraints(node, path)
    if found.get("x-kubernetes-list-type") == "atomic":
        del found["x-kubernetes-list-type"]
    if "allOf" in node:
        found["allOf"] = [constraints(part) for part in node["allOf"]]
    rules = [(r.get("rule"), r.get("message")) for r in node.get("x-kubernetes-validations") or ()]
    if rules:
        found["x-kubernetes-validations"] = rules
    return found


def differences(kind: str, part: str = "spec") -> tuple[list[str], dict[str, tuple[dict[str, Any], dict[str, Any]]]]:
    """Upstream's fields missing from ours, and the fields whose constraints differ (upstream's, ours)."""
    upstream_spec = v1alpha1_spec(upstream_crds()[kind], part)
    our_spec = v1alpha1_spec(crdgen.build_crd(served_v1alpha1()[kind]), part)
    assert upstream_spec is not None and our_spec is not None
    upstream = dict(schema_nodes(upstream_spec, f".{part}"))
    ours = dict(schema_nodes(our_spec, f".{part}"))
    missing = sorted(path for path in upstream if path not in ours)
    differing = {
        path: (compared(node, path), compared(ours[path], path))
        for path, node in upstream.items()
        if path in ours and compared(node, path) != compared(ours[path], path)
    }
    assert len(upstream) > 10, "the pinned CRD was read whole"
    return missing, differing


def test_every_upstream_kind_is_compared_or_listed_as_not_yet_served() -> None:
    upstream = upstream_crds()
    assert len(upstream) == 10
    served = served_v1alpha1()
    assert set(served) <= set(upstream), "a v1alpha1 kind of ours that upstream does not have"
    assert set(NOT_YET_SERVED) == set(upstream) - set(served), (
        "NOT_YET_SERVED must list exactly the upstream kinds we do not serve at v1alpha1 (remove a kind once it is "
        "served: it is then compared)"
    )


@pytest.mark.parametrize("kind", sorted(served_v1alpha1()))
def test_every_upstream_field_is_ours_as_strictly_typed_and_with_its_rules(kind: str) -> None:
    missing, differing = differences(kind)
    assert missing == [], f"{len(missing)} of upstream's fields are not in ours"
    unexplained = {path: both for path, both in differing.items() if (kind, path) not in DELIBERATE}
    assert unexplained == {}, f"{len(unexplained)} fields typed differently (upstream's, ours)"
    gone = sorted(path for (k, path) in DELIBERATE if k == kind and path not in differing)
    assert gone == [], "listed in DELIBERATE but no longer different: remove them"


def test_the_comparison_sees_a_missing_rule_a_missing_default_and_an_enum_under_all_of() -> None:
    upstream = {
        "type": "string",
        "default": "Gateway",
        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "frozen"}],
    }
    assert compared(upstream, ".x") != compared({"type": "string", "default": "Gateway"}, ".x")
    assert compared(upstream, ".x") != compared({**upstream, "default": None}, ".x")
    enum = {"type": "string", "allOf": [{"enum": ["a", "b"]}, {"enum": ["a", "b"]}]}
    assert compared(enum, ".e") != compared({"type": "string"}, ".e")
    assert compared(enum, ".e") != compared({**enum, "allOf": [{"enum": ["a", "b", "c"]}] * 2}, ".e")
    assert compared({"type": "array"}, ".l") == compared({"type": "array", "x-kubernetes-list-type": "atomic"}, ".l")


def test_upstream_rules_on_the_kinds_we_serve_at_v1alpha2_only_are_ours_there() -> None:
    """The rules of upstream's that a v1alpha2 kind of ours carries (issue 18's list), word for word where the field
    set is the same (AIMService's exactly-one rule counts name and image only: v1alpha2 has no `custom`)."""
    upstream = upstream_crds()

    def rules(crd: dict[str, Any], version: str, path: str) -> list[tuple[str, str]]:
        spec = next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]
        node = dict(schema_nodes(spec["properties"]["spec"], ".spec"))[path]
        return [(r["rule"], r["message"]) for r in node.get("x-kubernetes-validations") or ()]

    ours = {d.kind: crdgen.build_crd(d) for d in crdgen.CRDS if d.group == aim.GROUP}
    for kind, path in (("AIMService", ".spec.caching"), ("AIMArtifact", ".spec.sourceUri")):
        assert rules(ours[kind], aim.V1ALPHA2, path) == rules(upstream[kind], aim.V1ALPHA1, path)
    upstream_model = rules(upstream["AIMService"], aim.V1ALPHA1, ".spec.model")
    our_model = rules(ours["AIMService"], aim.V1ALPHA2, ".spec.model")
    assert our_model[1] == upstream_model[1] == ("self == oldSelf", "model selection is immutable after creation")
    assert upstream_model[0][0].replace(" + (has(self.custom) ? 1 : 0)", "").replace("\n", " ") == our_model[0][0]


def test_the_legacy_kinds_are_upstreams_template_path() -> None:
    assert legacy_kinds() == ["AIMClusterServiceTemplate", "AIMServiceTemplate", "AIMTemplateCache"]


@pytest.mark.parametrize("kind", legacy_kinds())
def test_a_legacy_kinds_status_is_upstreams_field_by_field(kind: str) -> None:
    """Nothing of ours writes a legacy kind's status yet; whoever does (upstream's controller, its e2e tests'
    status patches) gets it stored as upstream's CRD stores it: every field, constraint and default of upstream's."""
    missing, differing = differences(kind, "status")
    assert missing == [], f"{len(missing)} of upstream's status fields are not in ours"
    assert differing == {}, f"{len(differing)} status fields typed differently (upstream's, ours)"


@pytest.mark.parametrize("kind", legacy_kinds())
def test_a_legacy_kind_allows_null_nowhere_as_upstreams_crd(kind: str) -> None:
    """The comparison leaves `nullable` out (ours accepts null where a field is optional), but a null is stored
    where the schema allows it and dropped where it does not: a legacy kind, stored as upstream's, allows none."""
    for crd in (upstream_crds()[kind], crdgen.build_crd(served_v1alpha1()[kind])):
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        assert [path for path, node in schema_nodes(schema) if "nullable" in node] == []


@pytest.mark.parametrize("kind", legacy_kinds())
def test_a_legacy_kind_has_upstreams_names_scope_printer_columns_and_status_subresource(kind: str) -> None:
    """A kind upstream serves at v1alpha1 only is served here as upstream serves it: same names (plural, short
    names, categories), scope, printer columns and a status subresource, at v1alpha1 only."""
    upstream = upstream_crds()[kind]
    ours = crdgen.build_crd(served_v1alpha1()[kind])
    assert ours["spec"]["names"] == upstream["spec"]["names"]
    assert ours["spec"]["scope"] == upstream["spec"]["scope"]
    assert [v["name"] for v in ours["spec"]["versions"]] == [aim.V1ALPHA1]
    (our_version,) = ours["spec"]["versions"]
    (upstream_version,) = upstream["spec"]["versions"]
    assert our_version["subresources"] == upstream_version["subresources"] == {"status": {}}

    def columns(version: dict[str, Any]) -> list[tuple[str, str, str]]:
        return [(c["name"], c["type"], c["jsonPath"]) for c in version["additionalPrinterColumns"]]

    assert columns(our_version) == columns(upstream_version)
