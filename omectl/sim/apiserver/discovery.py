"""Discovery (legacy and aggregated), /version and OpenAPI v3 documents built from the served resource types.

Every function here is pure and deterministic: the same list of `ResourceType`s always gives equal documents,
so the server can rebuild and cache them whenever its type set changes.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from omectl.sim.apiserver.registry import ResourceType, builtin_types

KUBERNETES_VERSION = "v1.32.5"
GO_VERSION = "go1.23.8"
BUILD_DATE = "2025-05-15T08:27:33Z"

DISCOVERY_GROUP = "apidiscovery.k8s.io"
AGGREGATED_VERSIONS = ("v2", "v2beta1")
AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

OPENAPI_V3_PREFIX = "/openapi/v3/"

# The order kube-apiserver lists its built-in groups in /apis (kube-aggregator group priorities, highest first
# in upstream's table). Other groups (custom resources) follow, sorted by name.
_BUILTIN_GROUP_ORDER = (
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "resource.k8s.io",
)

# Built-ins whose real verb set differs from the full set (group, plural) -> verbs.
_BUILTIN_VERBS: dict[tuple[str, str], list[str]] = {
    ("", "namespaces"): ["create", "delete", "get", "list", "patch", "update", "watch"],
}
_STATUS_VERBS = ["get", "patch", "update"]
_FINALIZE_VERBS = ["update"]

_KUBE_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")

# --- /version ---


def version_info() -> dict[str, str]:
    """The `/version` body; kubectl's dispatcher picks its kubectl binary from `gitVersion`."""
    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        "gitVersion": KUBERNETES_VERSION,
        # Not a real upstream commit: a stable stand-in derived from the version.
        "gitCommit": hashlib.sha1(f"omectl-embedded-{KUBERNETES_VERSION}".encode()).hexdigest(),
        "gitTreeState": "clean",
        "buildDate": BUILD_DATE,
        "goVersion": GO_VERSION,
        "compiler": "gc",
        "platform": "linux/amd64",
    }


# --- Ordering helpers ---


def kube_version_key(version: str) -> tuple[int, int, int, str]:
    """Sort key for apimachinery's kube-aware version priority (GA > beta > alpha > others; higher first)."""
    match = _KUBE_VERSION_RE.match(version)
    if not match:
        return (3, 0, 0, version)
    major, stability, minor = match.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stability]
    return (rank, -int(major), -int(minor or 0), "")


def sort_versions(versions: Iterable[str]) -> list[str]:
    """Distinct versions, the preferred (highest-priority) one first."""
    return sorted(set(versions), key=kube_version_key)


def _group_key(group: str) -> tuple[int, int, str]:
    if group in _BUILTIN_GROUP_ORDER:
        return (0, _BUILTIN_GROUP_ORDER.index(group), "")
    return (1, 0, group)


def group_versions(types: Sequence[ResourceType]) -> dict[str, list[str]]:
    """Named groups (core is `/api`'s) in `/apis` order, each with its versions, the preferred one first."""
    versions: dict[str, set[str]] = {}
    for rt in types:
        if rt.group:
            versions.setdefault(rt.group, set()).add(rt.version)
    return {group: sort_versions(versions[group]) for group in sorted(versions, key=_group_key)}


def _types_in(types: Sequence[ResourceType], group: str, version: str) -> list[ResourceType]:
    return sorted((rt for rt in types if rt.group == group and rt.version == version), key=lambda rt: rt.plural)


def _verbs(rt: ResourceType) -> list[str]:
    verbs = _BUILTIN_VERBS.get((rt.group, rt.plural)) if rt.builtin else None
    return sorted(verbs if verbs is not None else rt.verbs)


def _subresources(rt: ResourceType) -> list[tuple[str, list[str]]]:
    """(subresource, verbs) pairs the server serves for a type, sorted by name."""
    subs: list[tuple[str, list[str]]] = []
    if rt.builtin and rt.group == "" and rt.plural == "namespaces":
        subs.append(("finalize", list(_FINALIZE_VERBS)))
    if rt.has_status:
        subs.append(("status", list(_STATUS_VERBS)))
    return subs


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Upstream's opaque storage-version hash: base64 of the first 8 bytes of sha256("group/version/kind")."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def _storage_hash(types: Sequence[ResourceType], rt: ResourceType) -> str:
    # The storage version is the first listed type of the storage (group, plural); CRDs list it first.
    storage = next((t for t in types if (t.group, t.plural) == rt.storage_key), rt)
    return storage_version_hash(storage.group, storage.version, storage.kind)


# --- Legacy discovery ---


def _group_version_entry(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def legacy_api_versions(server_address: str) -> dict[str, Any]:
    """The legacy `/api` body (`APIVersions`); `server_address` is the host:port clients reach us at."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _api_group_body(group: str, versions: list[str]) -> dict[str, Any]:
    entries = [_group_version_entry(group, v) for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": dict(entries[0])}


def legacy_api_group_list(types: Sequence[ResourceType]) -> dict[str, Any]:
    """The legacy `/apis` body (`APIGroupList`); each preferredVersion equals one of its versions[]."""
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_api_group_body(group, versions) for group, versions in group_versions(types).items()],
    }


def api_group(types: Sequence[ResourceType], group: str) -> dict[str, Any] | None:
    """The `/apis/{group}` body (`APIGroup`), or None when no type of that group is served."""
    versions = group_versions(types).get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_api_group_body(group, versions)}


def api_resource_list(types: Sequence[ResourceType], group: str, version: str) -> dict[str, Any] | None:
    """The `/api/v1` or `/apis/{group}/{version}` body (`APIResourceList`), or None for an unserved GV."""
    served = _types_in(types, group, version)
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for rt in served:
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": _verbs(rt),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entry["storageVersionHash"] = _storage_hash(types, rt)
        resources.append(entry)
        for sub, verbs in _subresources(rt):
            resources.append(
                {
                    "name": f"{rt.plural}/{sub}",
                    "singularName": "",
                    "namespaced": rt.namespaced,
                    "kind": rt.kind,
                    "verbs": verbs,
                }
            )
    # Upstream sorts by path, so "namespaces/status" sits between "namespaces" and "nodes".
    resources.sort(key=lambda r: r["name"])
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


# --- Aggregated discovery (KEP-3352) ---


def aggregated_content_type(version: str = "v2") -> str:
    """The response Content-Type of an aggregated discovery answer of the given apidiscovery version."""
    return f"application/json;g={DISCOVERY_GROUP};v={version};as=APIGroupDiscoveryList"


def _parse_media_range(text: str) -> tuple[str, dict[str, str]]:
    media_type, *raw_params = (part.strip() for part in text.split(";"))
    params: dict[str, str] = {}
    for raw in raw_params:
        key, sep, value = raw.partition("=")
        if sep:
            params[key.strip().lower()] = value.strip().strip('"')
    return media_type.lower(), params


def wants_aggregated(accept_header: str) -> str | None:
    """The apidiscovery version ("v2" or "v2beta1") the Accept header prefers, or None for legacy."""
    candidates: list[tuple[float, int, str, dict[str, str]]] = []
    for index, media_range in enumerate(accept_header.split(",")):
        if not media_range.strip():
            continue
        media_type, params = _parse_media_range(media_range)
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 1.0
        if quality > 0:
            candidates.append((-quality, index, media_type, params))
    for _, _, media_type, params in sorted(candidates):
        if media_type not in ("application/json", "application/*", "*/*"):
            continue  # e.g. protobuf: we only speak JSON
        if not params:
            return None
        if (
            media_type == "application/json"
            and params.get("g") == DISCOVERY_GROUP
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in AGGREGATED_VERSIONS
        ):
            return params["v"]
    return None


def _aggregated_resource(rt: ResourceType) -> dict[str, Any]:
    response_kind = {"group": rt.group, "version": rt.version, "kind": rt.kind}
    entry: dict[str, Any] = {
        "resource": rt.plural,
        "responseKind": response_kind,
        "scope": "Namespaced" if rt.namespaced else "Cluster",
        "singularResource": rt.singular,
        "verbs": _verbs(rt),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subresources = [
        {"subresource": sub, "responseKind": dict(response_kind), "verbs": verbs} for sub, verbs in _subresources(rt)
    ]
    if subresources:
        entry["subresources"] = subresources
    return entry


def _aggregated_group(types: Sequence[ResourceType], group: str, versions: list[str]) -> dict[str, Any]:
    return {
        "metadata": {"name": group},
        "versions": [
            {
                "version": version,
                "resources": [_aggregated_resource(rt) for rt in _types_in(types, group, version)],
                "freshness": "Current",
            }
            for version in versions
        ],
    }


def aggregated_discovery(types: Sequence[ResourceType], core: bool, version: str = "v2") -> dict[str, Any]:
    """The aggregated `APIGroupDiscoveryList` for `/api` (core=True) or `/apis`; first version = preferred."""
    if core:
        core_versions = sort_versions(rt.version for rt in types if not rt.group)
        items = [_aggregated_group(types, "", core_versions)] if core_versions else []
    else:
        items = [_aggregated_group(types, group, vs) for group, vs in group_versions(types).items()]
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"{DISCOVERY_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }


# --- OpenAPI v3 ---

_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_REF = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _string(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _time(description: str) -> dict[str, Any]:
    return {"allOf": [_ref(f"{_META}.Time")], "description": description}


_TYPE_META_PROPERTIES: dict[str, Any] = {
    "apiVersion": _string("APIVersion defines the versioned schema of this representation of an object."),
    "kind": _string("Kind is a string value representing the REST resource this object represents."),
}


def _meta_schemas() -> dict[str, Any]:
    """The apimachinery meta/v1 schemas every GV document references."""
    string_map = {"type": "object", "additionalProperties": {"type": "string", "default": ""}}
    return {
        f"{_META}.Time": {"type": "string", "format": "date-time", "description": "RFC 3339 timestamp."},
        f"{_META}.OwnerReference": {
            "type": "object",
            "description": "Identifies an owning object.",
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {
                "apiVersion": {"type": "string", "default": ""},
                "blockOwnerDeletion": {"type": "boolean"},
                "controller": {"type": "boolean"},
                "kind": {"type": "string", "default": ""},
                "name": {"type": "string", "default": ""},
                "uid": {"type": "string", "default": ""},
            },
            "x-kubernetes-map-type": "atomic",
        },
        f"{_META}.ManagedFieldsEntry": {
            "type": "object",
            "description": "A field set owned by one manager.",
            "properties": {
                "apiVersion": {"type": "string"},
                "fieldsType": {"type": "string"},
                "fieldsV1": {"type": "object"},
                "manager": {"type": "string"},
                "operation": {"type": "string"},
                "subresource": {"type": "string"},
                "time": _time("When the entry was last changed."),
            },
        },
        f"{_META}.ObjectMeta": {
            "type": "object",
            "description": "Metadata every persisted resource has.",
            "properties": {
                "annotations": dict(string_map),
                "creationTimestamp": _time("When the object was created."),
                "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
                "deletionTimestamp": _time("When the object will be deleted."),
                "finalizers": {
                    "type": "array",
                    "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "set",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "generateName": {"type": "string"},
                "generation": {"type": "integer", "format": "int64"},
                "labels": dict(string_map),
                "managedFields": {
                    "type": "array",
                    "items": {"allOf": [_ref(f"{_META}.ManagedFieldsEntry")], "default": {}},
                    "x-kubernetes-list-type": "atomic",
                },
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "ownerReferences": {
                    "type": "array",
                    "items": {"allOf": [_ref(f"{_META}.OwnerReference")], "default": {}},
                    "x-kubernetes-list-map-keys": ["uid"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "uid",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "resourceVersion": {"type": "string"},
                "selfLink": {"type": "string"},
                "uid": {"type": "string"},
            },
        },
        f"{_META}.ListMeta": {
            "type": "object",
            "description": "Metadata of a list.",
            "properties": {
                "continue": {"type": "string"},
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": {"type": "string"},
                "selfLink": {"type": "string"},
            },
        },
        f"{_META}.Patch": {
            "type": "object",
            "description": "The body of a PATCH request; its format is given by the Content-Type.",
        },
        f"{_META}.DeleteOptions": {
            "type": "object",
            "description": "Options of a DELETE request.",
            "properties": {
                **_TYPE_META_PROPERTIES,
                "dryRun": {"type": "array", "items": {"type": "string", "default": ""}},
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "orphanDependents": {"type": "boolean"},
                "preconditions": {
                    "type": "object",
                    "properties": {"resourceVersion": {"type": "string"}, "uid": {"type": "string"}},
                },
                "propagationPolicy": {"type": "string"},
            },
        },
        f"{_META}.Status": {
            "type": "object",
            "description": "The result of an operation that does not return an object.",
            "properties": {
                **_TYPE_META_PROPERTIES,
                "code": {"type": "integer", "format": "int32"},
                "details": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "message": {"type": "string"},
                "metadata": {"allOf": [_ref(f"{_META}.ListMeta")], "default": {}},
                "reason": {"type": "string"},
                "status": {"type": "string"},
            },
        },
    }


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


def _gvk(rt: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": kind or rt.kind}


def _object_meta_property() -> dict[str, Any]:
    return {
        "allOf": [_ref(f"{_META}.ObjectMeta")],
        "default": {},
        "description": "Standard object's metadata.",
    }


def _kind_schema(rt: ResourceType) -> dict[str, Any]:
    schema: dict[str, Any]
    if rt.schema is not None:
        # A copy: the CRD's schema stays untouched.
        schema = orjson.loads(orjson.dumps(rt.schema))
        schema.setdefault("type", "object")
    elif rt.builtin:
        schema = {
            "type": "object",
            "description": f"{rt.kind} (the embedded server publishes no field schema for built-ins).",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    else:
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    properties = dict(schema.get("properties") or {})
    properties.update(_TYPE_META_PROPERTIES)
    properties["metadata"] = _object_meta_property()
    schema["properties"] = dict(sorted(properties.items()))
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema


def _list_schema(rt: ResourceType) -> dict[str, Any]:
    return {
        "type": "object",
        "description": f"A list of {rt.kind} objects.",
        "required": ["items"],
        "properties": {
            "apiVersion": _TYPE_META_PROPERTIES["apiVersion"],
            "items": {"type": "array", "items": _ref(schema_name(rt))},
            "kind": _TYPE_META_PROPERTIES["kind"],
            "metadata": {"allOf": [_ref(f"{_META}.ListMeta")], "default": {}},
        },
        "x-kubernetes-group-version-kind": [_gvk(rt, rt.list_kind)],
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

# Deliberately without application/strategic-merge-patch+json: our built-in schemas carry no patch merge keys,
# so kubectl must not compute a strategic patch from them; it then falls back to its compiled-in types
# (built-ins) or a merge patch (custom resources), as against a real server.
_PATCH_CONTENT_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
)


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
        content = {ct: {"schema": _ref(f"{_META}.Patch")} for ct in _PATCH_CONTENT_TYPES}
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
    verbs = set(_verbs(rt))
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
    if ops := operations(_COLLECTION_OPS, verbs):
        paths[collection] = {**ops, "parameters": _path_params(rt.namespaced, None)}
    if ops := operations(_ITEM_OPS, verbs):
        paths[f"{collection}/{{name}}"] = {**ops, "parameters": _path_params(rt.namespaced, rt.kind)}
    for sub, sub_verbs in _subresources(rt):
        ops = operations(_ITEM_OPS, sub_verbs, sub)
        paths[f"{collection}/{{name}}/{sub}"] = {**ops, "parameters": _path_params(rt.namespaced, rt.kind)}
    if rt.namespaced and "list" in verbs:
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
    served = _types_in(types, group, version)
    if (group, version) == ("", "v1") and not any(rt.plural == "namespaces" for rt in served):
        namespace = next(rt for rt in builtin_types() if (rt.group, rt.plural) == ("", "namespaces"))
        served = sorted([*served, namespace], key=lambda rt: rt.plural)
    if not served:
        return None
    paths: dict[str, Any] = {}
    schemas = _meta_schemas()
    for rt in served:
        paths.update(_resource_paths(rt))
        schemas[schema_name(rt)] = _kind_schema(rt)
        schemas[f"{schema_name(rt)}List"] = _list_schema(rt)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": KUBERNETES_VERSION},
        "paths": dict(sorted(paths.items())),
        "components": {"schemas": dict(sorted(schemas.items()))},
    }


def canonical_json(doc: dict[str, Any]) -> bytes:
    """The bytes a GV document is hashed over (and should be served as): compact JSON, sorted keys."""
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
    """Every GV document keyed by its GV path (what a server caches next to the index)."""
    docs: dict[str, dict[str, Any]] = {}
    for gv_path in served_gv_paths(types):
        doc = openapi_v3_document(types, gv_path)
        if doc is not None:
            docs[gv_path] = doc
    return docs


def openapi_v3_index(types: Sequence[ResourceType]) -> dict[str, Any]:
    """The `/openapi/v3` body: each GV path with a `serverRelativeURL` carrying its document's hash."""
    return {
        "paths": {
            gv_path: {"serverRelativeURL": f"{OPENAPI_V3_PREFIX}{gv_path}?hash={openapi_v3_hash(doc)}"}
            for gv_path, doc in openapi_v3_documents(types).items()
        }
    }


OPENAPI_V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def openapi_v2_document(server_version: str) -> bytes:
    """The `/openapi/v2` body as gnostic's protobuf `openapi_v2.Document`, with no paths and no definitions.

    kubectl reads it only when a group-version is missing from `/openapi/v3`; finding no schema there it goes on
    to the REST mapping and reports the missing kind as on a real cluster (`no matches for kind ...`). The
    schemas themselves are served through `/openapi/v3`."""
    info = _proto_string(1, "Kubernetes") + _proto_string(2, server_version)
    return (
        _proto_string(1, "2.0")
        + _proto_field(2, info)
        + _proto_field(8, b"")  # paths
        + _proto_field(9, b"")  # definitions
    )


def _proto_field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _proto_string(number: int, text: str) -> bytes:
    return _proto_field(number, text.encode())


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
