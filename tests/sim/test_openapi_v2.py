"""The swagger 2.0 document: definitions as kube-openapi and apiextensions-apiserver write them for v2, and
its gnostic protobuf encoding."""

from __future__ import annotations

from typing import Any

from omectl.sim.apiserver import published_openapi
from omectl.sim.apiserver.openapi import openapi_v3_document, served_gv_paths
from omectl.sim.apiserver.openapi_v2 import protobuf_document, swagger_document
from omectl.sim.apiserver.registry import builtin_types, types_from_crd
from tests.support import widget_crd


def crd_with(spec_schema: dict[str, Any]) -> dict[str, Any]:
    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"] = spec_schema
    return crd


def swagger(crd: dict[str, Any]) -> dict[str, Any]:
    types = builtin_types() + types_from_crd(crd)
    return swagger_document(d for p in served_gv_paths(types) if (d := openapi_v3_document(types, p)))


def test_built_in_definitions_reference_with_dollar_ref_and_have_no_defaults() -> None:
    definitions = swagger(widget_crd())["definitions"]
    deployment = definitions["io.k8s.api.apps.v1.Deployment"]
    assert (
        deployment["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    )
    assert "allOf" not in deployment["properties"]["metadata"]
    assert "default" not in deployment["properties"]["metadata"]
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["type"] == "string"
    published = published_openapi.schemas()["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert definitions["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"] == published


def test_custom_schemas_lose_what_v2_cannot_say() -> None:
    spec = {
        "type": "object",
        "required": ["size", "maybe"],
        "x-kubernetes-validations": [{"rule": "self.size > 0"}],
        "properties": {
            "size": {"type": "integer", "default": 1},
            "maybe": {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {}},
            "port": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True},
        },
    }
    widget = swagger(crd_with(spec))["definitions"]["com.example.v1.Widget"]
    converted = widget["properties"]["spec"]
    assert converted == {
        "type": "object",
        "required": ["size"],
        "x-kubernetes-validations": [{"rule": "self.size > 0"}],  # an extension: v2 keeps it, as kube-apiserver does
        "properties": {
            "size": {"type": "integer"},
            "maybe": {},
            "free": {"x-kubernetes-preserve-unknown-fields": True},
            "port": {"x-kubernetes-int-or-string": True},
        },
    }
    assert widget["properties"]["metadata"]["$ref"] == "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    items = swagger(widget_crd())["definitions"]["com.example.v1.WidgetList"]["properties"]["items"]["items"]
    assert items == {"$ref": "#/definitions/com.example.v1.Widget"}


def test_v2_paths_have_body_parameters_and_the_kinds_they_act_on() -> None:
    paths = swagger(widget_crd())["paths"]
    patch = paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["parameters"][0] == {
        "name": "body",
        "in": "body",
        "required": True,
        "schema": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
    }
    assert {p["name"] for p in patch["parameters"]} >= {"fieldValidation", "dryRun", "force"}
    assert "application/merge-patch+json" in patch["consumes"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}


def test_the_protobuf_encoding_carries_every_definition_name() -> None:
    doc = swagger(widget_crd())
    encoded = protobuf_document(doc)
    assert encoded.startswith(b"\x0a\x032.0")
    for name in doc["definitions"]:
        assert name.encode() in encoded, name
    assert b"x-kubernetes-group-version-kind" in encoded
