"""Discovery (legacy and aggregated) and /version, built from the served resource types (OpenAPI: `openapi.py`).

Every function here is pure and deterministic: the same list of `ResourceType`s always gives equal documents,
so the server can rebuild and cache them whenever its type set changes.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from omectl.sim.apiserver.registry import ResourceType

KUBERNETES_VERSION = "v1.32.5"
GO_VERSION = "go1.23.8"
BUILD_DATE = "2025-05-15T08:27:33Z"

DISCOVERY_GROUP = "apidiscovery.k8s.io"
AGGREGATED_VERSIONS = ("v2", "v2beta1")
AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


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


def served_types(types: Sequence[ResourceType], group: str, version: str) -> list[ResourceType]:
    return sorted((rt for rt in types if rt.group == group and rt.version == version), key=lambda rt: rt.plural)


def served_verbs(rt: ResourceType) -> list[str]:
    verbs = _BUILTIN_VERBS.get((rt.group, rt.plural)) if rt.builtin else None
    return sorted(verbs if verbs is not None else rt.verbs)


def served_subresources(rt: ResourceType) -> list[tuple[str, list[str]]]:
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
    served = served_types(types, group, version)
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for rt in served:
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": served_verbs(rt),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        entry["storageVersionHash"] = _storage_hash(types, rt)
        resources.append(entry)
        for sub, verbs in served_subresources(rt):
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
        "verbs": served_verbs(rt),
    }
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    subresources = [
        {"subresource": sub, "responseKind": dict(response_kind), "verbs": verbs}
        for sub, verbs in served_subresources(rt)
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
                "resources": [_aggregated_resource(rt) for rt in served_types(types, group, version)],
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
