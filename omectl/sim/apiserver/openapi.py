"""OpenAPI documents of the served resource types: `/openapi/v3` (its index and one document per group-version)
and `/openapi/v2`.

Built-in kinds are described by the schemas kube-apiserver publishes (`published_openapi`: descriptions, enums,
list and map types), custom resources by their CRD version's structural schema, wrapped as
apiextensions-apiserver wraps it (`apiVersion`, `kind`, `metadata` and a `<Kind>List`). Every function here is pure
and deterministic: the same list of `ResourceType`s always gives equal documents, so a server can build them
lazily and cache them until its type set changes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from omectl.sim.apiserver import openapi_v2, published_openapi
from omectl.sim.apiserver.discovery import KUBERNETES_VERSION, served_subresources, served_types, served_verbs
from omectl.sim.apiserver.registry import ResourceType, builtin_types

OPENAPI_V3_PREFIX = "/openapi/v3/"
_META = published_openapi.META
_REF = published_openapi.REF_PREFIX


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _reverse_domain(group: str) -> str:
    return ".".join(reversed(group.split(".")))


def schema_name(rt: ResourceType) -> str:
    """Upstream's schema name of a kind: `io.k8s.api.core.v1.ConfigMap`, `com.example.v1.Widget`."""
    if not rt.builtin:
        return f"{_reverse_domain(rt.group)}.{rt.version}.{rt.kind}"
    if rt.group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{rt.version}.{rt.kind}"
    if rt.group == "apiregistration.k8s.io":
        return f"io.k8s.kube-aggregator.pkg.apis.apiregistration.{rt.version}.{rt.kind}"
    package = rt.group.split(".")[0] if rt.group else "core"
    return f"io.k8s.api.{package}.{rt.version}.{rt.kind}"


def builtin_schema_roots() -> list[str]:
    """The published schemas the served built-in kinds need: each kind's and its list's."""
    return [n for rt in builtin_types() for n in (schema_name(rt), f"{schema_name(rt)}List")]


def _gvk(rt: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": kind or rt.kind}


def _type_meta_property(name: str) -> dict[str, Any]:
    """`apiVersion` or `kind` with kube's TypeMeta description (as every published kind has them)."""
    status = published_openapi.schemas()[f"{_META}.Status"]
    return {"description": status["properties"][name]["description"], "type": "string"}


def _meta_property(meta: str, described_by: str) -> dict[str, Any]:
    """`metadata` referencing `meta`, described as it is in the published schema `described_by`."""
    description = published_openapi.schemas()[described_by]["properties"]["metadata"]["description"]
    return {"description": description, "allOf": [_ref(f"{_META}.{meta}")]}


def _custom_kind_schema(rt: ResourceType) -> dict[str, Any]:
    """A custom resource's schema as apiextensions-apiserver publishes it: the CRD version's schema with the
    `apiVersion`, `kind` and `metadata` every object has."""
    schema: dict[str, Any]
    if rt.schema is not None:
        # A copy: the CRD's schema stays untouched.
        schema = orjson.loads(orjson.dumps(rt.schema))
        schema.setdefault("type", "object")
        _spell_out_int_or_string(schema)
    else:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    properties = dict(schema.get("properties") or {})
    properties["apiVersion"] = _type_meta_property("apiVersion")
    properties["kind"] = _type_meta_property("kind")
    properties["metadata"] = _meta_property("ObjectMeta", "io.k8s.api.core.v1.ConfigMap")
    schema["properties"] = dict(sorted(properties.items()))
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema


def _spell_out_int_or_string(node: Any) -> None:
    """An `x-kubernetes-int-or-string` node without a type is published with the `anyOf` it implies, as
    apiextensions-apiserver's ToKubeOpenAPI publishes it."""
    if isinstance(node, list):
        for item in node:
            _spell_out_int_or_string(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("x-kubernetes-int-or-string") is True and "anyOf" not in node and "type" not in node:
        node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    for key, value in node.items():
        if key in ("properties", "patternProperties", "definitions"):
            for child in value.values() if isinstance(value, dict) else ():
                _spell_out_int_or_string(child)
        elif key in ("items", "additionalProperties", "allOf", "anyOf", "oneOf", "not"):
            _spell_out_int_or_string(value)


def _custom_list_schema(rt: ResourceType) -> dict[str, Any]:
    return {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": _type_meta_property("apiVersion"),
            "items": {
                "description": f"List of {rt.plural}. More info: {_API_CONVENTIONS}",
                "type": "array",
                "items": _ref(schema_name(rt)),
            },
            "kind": _type_meta_property("kind"),
            "metadata": _meta_property("ListMeta", f"{_META}.Status"),
        },
        "x-kubernetes-group-version-kind": [_gvk(rt, rt.list_kind)],
    }


_API_CONVENTIONS = "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md"


def _unpublished_builtin_schema(rt: ResourceType, kind: str) -> dict[str, Any]:
    return {
        "description": f"{kind} (no published schema in the pinned capture).",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "x-kubernetes-group-version-kind": [_gvk(rt, kind)],
    }


def _kind_schemas(rt: ResourceType) -> dict[str, Any]:
    """The kind's schema and its list's, by name."""
    name = schema_name(rt)
    if not rt.builtin:
        return {name: _custom_kind_schema(rt), f"{name}List": _custom_list_schema(rt)}
    published = published_openapi.schemas()
    return {
        n: published[n] if n in published else _unpublished_builtin_schema(rt, kind)
        for n, kind in ((name, rt.kind), (f"{name}List", rt.list_kind))
    }


def _query(name: str, kind: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": kind, "uniqueItems": True},
    }


_P_DRY_RUN = _query("dryRun", "string", "When present (All), modifications are not persisted.")
_P_FIELD_MANAGER = _query("fieldManager", "string", "The name of the actor making the change.")
_P_FIELD_VALIDATION = _query(
    "fieldValidation", "string", "How to treat unknown or duplicate fields: Ignore, Warn or Strict."
)
_P_FORCE = _query("force", "boolean", "Apply requests only: take over fields other managers own.")
_P_PRETTY = _query("pretty", "string", "If 'true', the output is pretty printed.")
_P_GRACE = _query("gracePeriodSeconds", "integer", "Seconds before the object should be deleted.")
_P_ORPHAN = _query("orphanDependents", "boolean", "Deprecated: use propagationPolicy.")
_P_PROPAGATION = _query("propagationPolicy", "string", "Garbage collection policy: Orphan, Background or Foreground.")
_LIST_PARAMS = [
    _query("allowWatchBookmarks", "boolean", "Watch only: ask for BOOKMARK events."),
    _query("continue", "string", "The continue token of the previous page."),
    _query("fieldSelector", "string", "Restrict the list by their fields."),
    _query("labelSelector", "string", "Restrict the list by their labels."),
    _query("limit", "integer", "The maximum number of items to return."),
    _query("resourceVersion", "string", "Which resource versions the answer may be served from."),
    _query("resourceVersionMatch", "string", "How resourceVersion is applied: Exact or NotOlderThan."),
    _query("sendInitialEvents", "boolean", "Watch only: start with the current state as ADDED events."),
    _query("timeoutSeconds", "integer", "Timeout of the list or watch call."),
    _query("watch", "boolean", "Stream add, update and delete events."),
]
_WRITE_PARAMS = [_P_DRY_RUN, _P_FIELD_MANAGER, _P_FIELD_VALIDATION]
_PATCH_PARAMS = [*_WRITE_PARAMS, _P_FORCE]
_DELETE_PARAMS = [_P_DRY_RUN, _P_GRACE, _P_ORPHAN, _P_PROPAGATION]
_DELETE_COLLECTION_PARAMS = sorted(
    [p for p in _LIST_PARAMS if p["name"] not in ("allowWatchBookmarks", "watch")] + _DELETE_PARAMS,
    key=lambda p: p["name"],
)

# A strategic merge patch needs the patch merge keys only built-in schemas publish, so kube-apiserver accepts it
# for built-ins only; kubectl looks for it here before it computes one from the OpenAPI.
_PATCH_CONTENT_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)
_BUILTIN_PATCH_CONTENT_TYPES = (*_PATCH_CONTENT_TYPES, "application/strategic-merge-patch+json")


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[.\-]", text) if part)


def _operation_id_stem(rt: ResourceType) -> str:
    group = _camel(rt.group.removesuffix(".k8s.io")) if rt.group else "Core"
    return f"{group}{_camel(rt.version)}"


def _json_content(schema_ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(schema_ref)}}


# x-kubernetes-action -> the operation's query parameters.
_ACTION_PARAMS: dict[str, list[dict[str, Any]]] = {
    "list": _LIST_PARAMS,
    "post": _WRITE_PARAMS,
    "deletecollection": _DELETE_COLLECTION_PARAMS,
    "get": [],
    "put": _WRITE_PARAMS,
    "patch": _PATCH_PARAMS,
    "delete": _DELETE_PARAMS,
}
# (discovery verb, HTTP method, x-kubernetes-action, operationId template, description template).
_OpTable = tuple[tuple[str, str, str, str, str], ...]
_COLLECTION_OPS: _OpTable = (
    ("list", "get", "list", "list{gv}{scope}{kind}", "list or watch objects of kind {kind}"),
    ("create", "post", "post", "create{gv}{scope}{kind}", "create a {kind}"),
    (
        "deletecollection",
        "delete",
        "deletecollection",
        "delete{gv}Collection{scope}{kind}",
        "delete collection of {kind}",
    ),
)
_ITEM_OPS: _OpTable = (
    ("get", "get", "get", "read{gv}{scope}{kind}{sub}", "read {of}the specified {kind}"),
    ("update", "put", "put", "replace{gv}{scope}{kind}{sub}", "replace {of}the specified {kind}"),
    ("patch", "patch", "patch", "patch{gv}{scope}{kind}{sub}", "partially update {of}the specified {kind}"),
    ("delete", "delete", "delete", "delete{gv}{scope}{kind}{sub}", "delete a {kind}"),
)


def _operation(rt: ResourceType, action: str, operation_id: str, description: str) -> dict[str, Any]:
    kind_schema = schema_name(rt)
    if action == "list":
        response_schema = f"{kind_schema}List"
    elif action in ("delete", "deletecollection"):
        response_schema = f"{_META}.Status"
    else:
        response_schema = kind_schema
    operation: dict[str, Any] = {
        "description": description,
        "operationId": operation_id,
        "parameters": [dict(p) for p in _ACTION_PARAMS[action]],
    }
    if action == "patch":
        content_types = _BUILTIN_PATCH_CONTENT_TYPES if rt.builtin else _PATCH_CONTENT_TYPES
        content = {ct: {"schema": _ref(f"{_META}.Patch")} for ct in content_types}
        operation["requestBody"] = {"content": content, "required": True}
    elif action in ("post", "put"):
        operation["requestBody"] = {"content": {"*/*": {"schema": _ref(kind_schema)}}, "required": True}
    elif action in ("delete", "deletecollection"):
        operation["requestBody"] = {"content": {"*/*": {"schema": _ref(f"{_META}.DeleteOptions")}}}
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _json_content(response_schema)}}
    if action in ("post", "put", "patch"):
        responses["201"] = {"description": "Created", "content": _json_content(response_schema)}
    if action == "delete":
        responses["202"] = {"description": "Accepted", "content": _json_content(response_schema)}
    responses["401"] = {"description": "Unauthorized"}
    operation["responses"] = responses
    operation["x-kubernetes-action"] = action
    operation["x-kubernetes-group-version-kind"] = _gvk(rt)
    return operation


def _path_params(namespaced: bool, named: str | None) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    if named:
        params.append(
            {
                "name": "name",
                "in": "path",
                "description": f"name of the {named}",
                "required": True,
                "schema": {"type": "string", "uniqueItems": True},
            }
        )
    if namespaced:
        params.append(
            {
                "name": "namespace",
                "in": "path",
                "description": "object name and auth scope, such as for teams and projects",
                "required": True,
                "schema": {"type": "string", "uniqueItems": True},
            }
        )
    params.append(dict(_P_PRETTY))
    return params


def _resource_paths(rt: ResourceType) -> dict[str, dict[str, Any]]:
    """The collection, item and subresource paths of one type, with the operations its verbs allow."""
    allowed_verbs = set(served_verbs(rt))
    scope = "Namespaced" if rt.namespaced else ""
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"
    collection = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"

    def operations(table: _OpTable, allowed: Iterable[str], sub: str = "") -> dict[str, Any]:
        names = {"gv": _operation_id_stem(rt), "scope": scope, "kind": rt.kind, "sub": _camel(sub)}
        names["of"] = f"{sub} of " if sub else ""
        return {
            method: _operation(rt, action, id_template.format(**names), description.format(**names))
            for verb, method, action, id_template, description in table
            if verb in allowed
        }

    paths: dict[str, dict[str, Any]] = {}
    if ops := operations(_COLLECTION_OPS, allowed_verbs):
        paths[collection] = {**ops, "parameters": _path_params(rt.namespaced, None)}
    if ops := operations(_ITEM_OPS, allowed_verbs):
        paths[f"{collection}/{{name}}"] = {**ops, "parameters": _path_params(rt.namespaced, rt.kind)}
    for sub, sub_verbs in served_subresources(rt):
        ops = operations(_ITEM_OPS, sub_verbs, sub)
        paths[f"{collection}/{{name}}/{sub}"] = {**ops, "parameters": _path_params(rt.namespaced, rt.kind)}
    if rt.namespaced and "list" in allowed_verbs:
        list_all = _operation(
            rt,
            "list",
            f"list{_operation_id_stem(rt)}{rt.kind}ForAllNamespaces",
            f"list or watch objects of kind {rt.kind}",
        )
        paths[f"{prefix}/{rt.plural}"] = {"get": list_all, "parameters": _path_params(False, None)}
    return paths


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _parse_gv_path(gv_path: str) -> tuple[str, str] | None:
    parts = gv_path.strip("/").split("/")
    if len(parts) == 2 and parts[0] == "api" and parts[1]:
        return "", parts[1]
    if len(parts) == 3 and parts[0] == "apis" and parts[1] and parts[2]:
        return parts[1], parts[2]
    return None


def openapi_v3_document(types: Sequence[ResourceType], gv_path: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of `api/v1` or `apis/<g>/<v>`, or None when that GV is not served.

    `api/v1` always holds a Namespace PATCH operation: kubectl checks it when it validates a CRD's kind.
    """
    parsed = _parse_gv_path(gv_path)
    if parsed is None:
        return None
    group, version = parsed
    served = served_types(types, group, version)
    if (group, version) == ("", "v1") and not any(rt.plural == "namespaces" for rt in served):
        namespace = next(rt for rt in builtin_types() if (rt.group, rt.plural) == ("", "namespaces"))
        served = sorted([*served, namespace], key=lambda rt: rt.plural)
    if not served:
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rt in served:
        paths.update(_resource_paths(rt))
        schemas.update(_kind_schemas(rt))
    published = published_openapi.schemas()
    referenced = published_openapi.closure(published, published_openapi.refs([paths, schemas]))
    schemas.update((name, published[name]) for name in referenced if name not in schemas)
    return {
        "openapi": "3.0.0",
        "info": _info(group),
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def _info(group: str) -> dict[str, str]:
    if group and group not in _BUILTIN_GROUPS:
        return {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return {"title": "Kubernetes", "version": f"{major}.{minor}"}


_BUILTIN_GROUPS = frozenset(rt.group for rt in builtin_types())


def canonical_json(doc: dict[str, Any]) -> bytes:
    """The bytes a GV document is hashed over and served as: compact JSON, sorted keys."""
    return orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)


def openapi_v3_hash(doc: dict[str, Any]) -> str:
    """Upstream's content hash of a GV document: uppercase hex of the SHA-512 of its canonical JSON."""
    return hashlib.sha512(canonical_json(doc)).hexdigest().upper()


def served_gv_paths(types: Sequence[ResourceType]) -> list[str]:
    """The GV paths the OpenAPI v3 index lists: `api/v1` always, then every served named GV, sorted."""
    named = {_gv_path(rt.group, rt.version) for rt in types if rt.group}
    core = {_gv_path("", rt.version) for rt in types if not rt.group} | {"api/v1"}
    return sorted(core | named)


def openapi_v3_documents(types: Sequence[ResourceType]) -> dict[str, dict[str, Any]]:
    """Every GV document keyed by its GV path."""
    docs: dict[str, dict[str, Any]] = {}
    for gv_path in served_gv_paths(types):
        doc = openapi_v3_document(types, gv_path)
        if doc is not None:
            docs[gv_path] = doc
    return docs


def _index(hashes: Iterable[tuple[str, str]]) -> dict[str, Any]:
    return {
        "paths": {
            gv_path: {"serverRelativeURL": f"{OPENAPI_V3_PREFIX}{gv_path}?hash={digest}"} for gv_path, digest in hashes
        }
    }


def openapi_v3_index(types: Sequence[ResourceType]) -> dict[str, Any]:
    """The `/openapi/v3` body: each GV path with a `serverRelativeURL` carrying its document's hash."""
    return _index((gv_path, openapi_v3_hash(doc)) for gv_path, doc in openapi_v3_documents(types).items())


@dataclass(frozen=True)
class Served:
    """One serialised document and its entity tag (the hash of exactly these bytes)."""

    body: bytes
    etag: str


class OpenAPIDocuments:
    """The OpenAPI documents of one set of served types, each built and serialised on its first request only.

    A server keeps one per revision of its type set (a CRD change starts a new one), so a client that never
    asks for OpenAPI costs nothing, and one that asks for a single group-version builds only that one (the
    index needs the hash of every document, so it builds them all, once)."""

    def __init__(self, types: Sequence[ResourceType]) -> None:
        self._types = list(types)
        self._v3: dict[str, Served | None] = {}
        self._index: Served | None = None
        self._v2_json: Served | None = None
        self._v2_protobuf: Served | None = None

    def v3(self, gv_path: str) -> Served | None:
        """The document of `api/v1` or `apis/<g>/<v>`; None when that GV is not served."""
        if gv_path not in self._v3:
            doc = openapi_v3_document(self._types, gv_path)
            if doc is None:
                self._v3[gv_path] = None
            else:
                body = canonical_json(doc)
                self._v3[gv_path] = Served(body, hashlib.sha512(body).hexdigest().upper())
        return self._v3[gv_path]

    def v3_index(self) -> Served:
        if self._index is None:
            hashes = [(p, served.etag) for p in served_gv_paths(self._types) if (served := self.v3(p)) is not None]
            body = orjson.dumps(_index(hashes))
            self._index = Served(body, hashlib.sha512(body).hexdigest().upper())
        return self._index

    def v2_json(self) -> Served:
        if self._v2_json is None:
            body = canonical_json(self._swagger())
            self._v2_json = Served(body, hashlib.sha512(body).hexdigest().upper())
        return self._v2_json

    def v2_protobuf(self) -> Served:
        """The same document as `v2_json`, with its entity tag (kube-apiserver gives both one ETag)."""
        if self._v2_protobuf is None:
            self._v2_protobuf = Served(openapi_v2.protobuf_document(self._swagger()), self.v2_json().etag)
        return self._v2_protobuf

    def _swagger(self) -> dict[str, Any]:
        docs = [doc for p in served_gv_paths(self._types) if (doc := openapi_v3_document(self._types, p))]
        return openapi_v2.swagger_document(docs)
