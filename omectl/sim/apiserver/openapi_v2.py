"""`/openapi/v2`: the swagger 2.0 document kube-apiserver still serves beside `/openapi/v3`, built from the v3
group-version documents, as JSON or as gnostic's protobuf `openapi_v2.Document` (what client-go asks for, and
what `kubectl explain --output=plaintext-openapiv2` reads).

Definitions are the v3 component schemas as kube-openapi writes them for v2: a lone `allOf` reference becomes a
`$ref` beside its description, there are no defaults, and Quantity and IntOrString are strings. A custom
resource's schema goes through apiextensions-apiserver's `ToStructuralOpenAPIV2`: no `allOf`, `anyOf`, `oneOf`,
`not` or defaults (its validation rules stay); a nullable or unknown-fields-preserving node loses its type, items and
properties (kubectl cannot read them), an array without items its type, and a nullable property is no longer
required.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, Final

import yaml

from omectl.sim.apiserver import published_openapi
from omectl.sim.apiserver.discovery import KUBERNETES_VERSION
from omectl.sim.apiserver.published_openapi import REF_PREFIX

V2_REF_PREFIX: Final = "#/definitions/"
_STRING_TYPES: Final = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
}
_V3_ONLY: Final = ("allOf", "anyOf", "oneOf", "not", "default")
_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch")


def swagger_document(v3_documents: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One swagger 2.0 document of every group-version's paths and schemas."""
    builtin = published_openapi.schemas()
    paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for doc in v3_documents:
        for path, item in doc.get("paths", {}).items():
            paths[path] = _path_item(item)
        for name, schema in doc.get("components", {}).get("schemas", {}).items():
            if name not in definitions:
                definitions[name] = _definition(name, schema, custom=name not in builtin)
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"{major}.{minor}"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header",
            }
        },
        "security": [{"BearerToken": []}],
    }


# --- schemas ---------------------------------------------------------------------------------------------


def _definition(name: str, schema: dict[str, Any], *, custom: bool) -> dict[str, Any]:
    if name in _STRING_TYPES:
        return {"description": schema.get("description", ""), **_STRING_TYPES[name]}
    if custom:
        return _custom(schema, top=True)
    converted: dict[str, Any] = _builtin(schema)
    return converted


def _builtin(node: Any) -> Any:
    if isinstance(node, list):
        return [_builtin(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "allOf" and _lone_ref(value):
            out["$ref"] = _v2_ref(value[0]["$ref"])
        elif key == "$ref" and isinstance(value, str):
            out[key] = _v2_ref(value)
        elif key == "default":
            continue
        elif key == "properties" and isinstance(value, dict):
            out[key] = {prop: _builtin(child) for prop, child in value.items()}
        else:
            out[key] = _builtin(value)
    return out


def _custom(node: dict[str, Any], *, top: bool = False) -> dict[str, Any]:
    """apiextensions-apiserver's `ToStructuralOpenAPIV2` of one node (the kind's own `metadata` stays a ref)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "allOf" and _lone_ref(value) and top is False:
            out["$ref"] = _v2_ref(value[0]["$ref"])
        elif key in _V3_ONLY:
            continue
        elif key == "$ref" and isinstance(value, str):
            out[key] = _v2_ref(value)
        elif key == "properties":
            out[key] = {prop: _custom_property(prop, child, top) for prop, child in value.items()}
        elif key == "items" and isinstance(value, dict):
            out[key] = _custom(value)
        elif key == "additionalProperties" and isinstance(value, dict):
            child = _custom(value)
            child.pop("nullable", None)
            out[key] = child
        else:
            out[key] = value
    if out.pop("nullable", False) is True:
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if out.get("x-kubernetes-preserve-unknown-fields") is True:
        for key in ("type", "items", "properties"):
            out.pop(key, None)
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    nullable = {p for p, child in (node.get("properties") or {}).items() if (child or {}).get("nullable") is True}
    if nullable and "required" in out:
        out["required"] = [r for r in out["required"] if r not in nullable]
        if not out["required"]:
            del out["required"]
    return out


def _custom_property(name: str, child: dict[str, Any], top: bool) -> dict[str, Any]:
    if top and name == "metadata" and _lone_ref(child.get("allOf")):
        return {"description": child.get("description", ""), "$ref": _v2_ref(child["allOf"][0]["$ref"])}
    return _custom(child)


def _lone_ref(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 1
        and isinstance(value[0], dict)
        and set(value[0]) == {"$ref"}
        and isinstance(value[0]["$ref"], str)
    )


def _v2_ref(ref: str) -> str:
    return V2_REF_PREFIX + ref.removeprefix(REF_PREFIX)


# --- paths -----------------------------------------------------------------------------------------------


def _path_item(item: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {method: _operation(item[method]) for method in _METHODS if method in item}
    if "parameters" in item:
        out["parameters"] = [_parameter(p) for p in item["parameters"]]
    return out


def _operation(operation: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"description": operation.get("description", "")}
    body = operation.get("requestBody")
    if body is not None:
        content = body.get("content", {})
        if set(content) != {"*/*"}:
            out["consumes"] = list(content)
    out["produces"] = ["application/json", "application/yaml"]
    out["schemes"] = ["https"]
    out["operationId"] = operation.get("operationId", "")
    parameters = [_parameter(p) for p in operation.get("parameters", [])]
    if body is not None:
        media: dict[str, Any] = next(iter(body.get("content", {}).values()), {})
        schema = media.get("schema", {})
        body_parameter: dict[str, Any] = {"name": "body", "in": "body", "schema": _builtin(schema)}
        if body.get("required"):
            body_parameter["required"] = True
        parameters.insert(0, body_parameter)
    if parameters:
        out["parameters"] = parameters
    responses = {}
    for code, response in operation.get("responses", {}).items():
        entry: dict[str, Any] = {"description": response.get("description", "")}
        media = response.get("content", {}).get("application/json")
        if media is not None:
            entry["schema"] = _builtin(media["schema"])
        responses[code] = entry
    out["responses"] = responses
    for key, value in operation.items():
        if key.startswith("x-"):
            out[key] = value
    return out


def _parameter(parameter: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in parameter.items() if k != "schema"}
    out.update(parameter.get("schema", {}))
    return out


# --- protobuf --------------------------------------------------------------------------------------------


def protobuf_document(doc: dict[str, Any]) -> bytes:
    """`doc` (a swagger 2.0 document of `swagger_document`) as gnostic's protobuf `openapi_v2.Document`."""
    info = doc["info"]
    paths = b"".join(
        _message(2, _string(1, path) + _message(2, _pb_path_item(item))) for path, item in doc["paths"].items()
    )
    definitions = b"".join(
        _message(1, _string(1, name) + _message(2, _pb_schema(schema))) for name, schema in doc["definitions"].items()
    )
    return (
        _string(1, doc["swagger"])
        + _message(2, _string(1, info["title"]) + _string(2, info["version"]))
        + _message(8, paths)
        + _message(9, definitions)
    )


_PATH_ITEM_FIELDS: Final = {method: number for number, method in enumerate(_METHODS, start=2)}
_SCHEMA_STRINGS: Final = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13, "discriminator": 26}
_SCHEMA_DOUBLES: Final = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_SCHEMA_BOOLS: Final = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}
_SCHEMA_INTS: Final = {
    "maxLength": 11,
    "minLength": 12,
    "maxItems": 14,
    "minItems": 15,
    "maxProperties": 17,
    "minProperties": 18,
}
# QueryParameterSubSchema and PathParameterSubSchema: (required, in, description, name, type, format, uniqueItems)
_QUERY_FIELDS: Final = {"required": 1, "in": 2, "description": 3, "name": 4, "type": 6, "format": 7, "uniqueItems": 20}
_PATH_FIELDS: Final = {"required": 1, "in": 2, "description": 3, "name": 4, "type": 5, "format": 6, "uniqueItems": 19}


def _pb_schema(schema: dict[str, Any]) -> bytes:
    out = bytearray()
    for key, value in schema.items():
        if key in _SCHEMA_STRINGS and isinstance(value, str):
            out += _string(_SCHEMA_STRINGS[key], value)
        elif key in _SCHEMA_DOUBLES and isinstance(value, (int, float)):
            out += _double(_SCHEMA_DOUBLES[key], float(value))
        elif key in _SCHEMA_BOOLS and isinstance(value, bool):
            out += _bool(_SCHEMA_BOOLS[key], value)
        elif key in _SCHEMA_INTS and isinstance(value, int):
            out += _int(_SCHEMA_INTS[key], value)
        elif key == "default":
            out += _message(5, _pb_any(value))
        elif key == "required" and isinstance(value, list):
            out += b"".join(_string(19, str(v)) for v in value)
        elif key == "enum" and isinstance(value, list):
            out += b"".join(_message(20, _pb_any(v)) for v in value)
        elif key == "additionalProperties":
            inner = _message(1, _pb_schema(value)) if isinstance(value, dict) else _bool(2, bool(value))
            out += _message(21, inner)
        elif key == "type":
            out += _message(22, b"".join(_string(1, t) for t in ([value] if isinstance(value, str) else value)))
        elif key == "items" and isinstance(value, dict):
            out += _message(23, _message(1, _pb_schema(value)))
        elif key == "properties" and isinstance(value, dict):
            named = b"".join(_message(1, _string(1, p) + _message(2, _pb_schema(s))) for p, s in value.items())
            out += _message(25, named)
        elif key == "example":
            out += _message(30, _pb_any(value))
        elif key.startswith("x-"):
            out += _vendor_extension(31, key, value)
    return bytes(out)


def _pb_path_item(item: dict[str, Any]) -> bytes:
    out = bytearray()
    for method, number in _PATH_ITEM_FIELDS.items():
        if method in item:
            out += _message(number, _pb_operation(item[method]))
    for parameter in item.get("parameters", []):
        out += _message(9, _pb_parameter(parameter))
    return bytes(out)


def _pb_operation(operation: dict[str, Any]) -> bytes:
    out = bytearray(_string(3, operation.get("description", "")) + _string(5, operation.get("operationId", "")))
    out += b"".join(_string(6, p) for p in operation.get("produces", []))
    out += b"".join(_string(7, c) for c in operation.get("consumes", []))
    out += b"".join(_message(8, _pb_parameter(p)) for p in operation.get("parameters", []))
    responses = b""
    for code, response in operation.get("responses", {}).items():
        body = _string(1, response.get("description", ""))
        if "schema" in response:
            body += _message(2, _message(1, _pb_schema(response["schema"])))
        responses += _message(1, _string(1, code) + _message(2, _message(1, body)))
    out += _message(9, responses)
    out += b"".join(_string(10, s) for s in operation.get("schemes", []))
    for key, value in operation.items():
        if key.startswith("x-"):
            out += _vendor_extension(13, key, value)
    return bytes(out)


def _pb_parameter(parameter: dict[str, Any]) -> bytes:
    """A ParametersItem holding a Parameter: a body parameter, or a query or path parameter."""
    if parameter.get("in") == "body":
        body = _string(2, parameter["name"]) + _string(3, "body")
        if parameter.get("required"):
            body += _bool(4, True)
        body += _message(5, _pb_schema(parameter.get("schema", {})))
        return _message(1, _message(1, body))
    fields, sub_schema = (_PATH_FIELDS, 4) if parameter.get("in") == "path" else (_QUERY_FIELDS, 3)
    encoded = bytearray()
    for key, number in fields.items():
        value = parameter.get(key)
        if isinstance(value, bool):
            encoded += _bool(number, value)
        elif isinstance(value, str):
            encoded += _string(number, value)
    return _message(1, _message(2, _message(sub_schema, bytes(encoded))))


def _vendor_extension(number: int, name: str, value: Any) -> bytes:
    return _message(number, _string(1, name) + _message(2, _pb_any(value)))


def _pb_any(value: Any) -> bytes:
    """gnostic's `Any`: the value as YAML text."""
    return _string(2, yaml.safe_dump(value, default_flow_style=False, sort_keys=False))


def _message(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _string(number: int, text: str) -> bytes:
    return _message(number, text.encode()) if text else b""


def _bool(number: int, value: bool) -> bytes:
    return _varint(number << 3) + _varint(1) if value else b""


def _int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value & 0xFFFFFFFFFFFFFFFF)


def _double(number: int, value: float) -> bytes:
    return _varint(number << 3 | 1) + struct.pack("<d", value)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)
