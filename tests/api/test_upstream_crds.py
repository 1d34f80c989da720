"""Our ome.io CRDs against upstream OME's, field by field: every field upstream's `spec` schema has, ours has, and as
strictly typed (type, format, enum, pattern, required, defaults, list and map types, open or closed).

Upstream's CRDs are pinned, gzipped byte for byte, under tests/fixtures/upstream/ome/config/crd/full (commit in
tests/fixtures/upstream/ome/SOURCE). Only `spec` is compared: `status` is written by the controller, and ours writes
its own.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.api import crdgen
from tests.api.test_crds import schema_nodes

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "upstream" / "ome" / "config" / "crd" / "full"
OME_CRDS = [d for d in crdgen.CRDS if d.group == "ome.io"]
# What a field's schema says about the values it accepts (descriptions and the like are left out).
COMPARED = (
    "type",
    "format",
    "enum",
    "pattern",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "nullable",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
)
_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Kubernetes 1.34 (whose OpenAPI our core types come from) no longer marks these references atomic structs;
# upstream's CRDs were generated from k8s.io/api v0.33. The mark steers server-side apply, not validation.
NEWER_KUBERNETES: dict[str, tuple[str, ...]] = {
    "x-kubernetes-map-type": (
        ".envFrom[*].configMapRef",
        ".envFrom[*].secretRef",
        ".projected.sources[*].configMap",
        ".projected.sources[*].secret",
        "volumes[*].configMap",
    ),
}


def constraints(node: dict[str, Any], path: str = "") -> dict[str, Any]:
    found = {key: node[key] for key in COMPARED if key in node}
    for key, suffixes in NEWER_KUBERNETES.items():
        if path.endswith(suffixes):
            found.pop(key, None)
    found.pop("nullable", None)  # ours allows null where a field is optional: it accepts more, never less
    if "required" in node:
        found["required"] = sorted(node["required"])
    return found


def spec_schema(crd: dict[str, Any]) -> dict[str, Any]:
    version = crd["spec"]["versions"][0]
    assert version["name"] == "v1beta1"
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


def upstream_crd(definition: crdgen.CRDDefinition) -> dict[str, Any]:
    text = gzip.decompress((UPSTREAM / f"{definition.file_name}.gz").read_bytes()).decode()
    loaded: dict[str, Any] = yaml.load(text, Loader=_Loader)
    return loaded


@pytest.mark.parametrize("definition", OME_CRDS, ids=lambda d: d.kind)
def test_every_upstream_field_is_ours_and_as_strictly_typed(definition: crdgen.CRDDefinition) -> None:
    upstream = dict(schema_nodes(spec_schema(upstream_crd(definition)), ".spec"))
    ours = dict(schema_nodes(spec_schema(crdgen.build_crd(definition)), ".spec"))

    missing = sorted(path for path in upstream if path not in ours)
    assert missing == [], f"{len(missing)} of upstream's fields are not in ours"
    differing = {
        path: (constraints(node, path), constraints(ours[path], path))
        for path, node in upstream.items()
        if constraints(node, path) != constraints(ours[path], path)
    }
    assert differing == {}, f"{len(differing)} fields typed differently (upstream's, ours)"
    assert len(upstream) > (50 if definition.kind.endswith("BaseModel") else 10_000), "the pinned CRD was read whole"


def test_the_comparison_sees_a_loose_field() -> None:
    # an open object where upstream types the field is what the comparison exists to catch
    upstream = {"type": "object", "properties": {"port": {"type": "integer", "format": "int32"}}}
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert constraints(upstream) != constraints(loose)
    assert ".x.port" in dict(schema_nodes(upstream, ".x")) and ".x.port" not in dict(schema_nodes(loose, ".x"))
