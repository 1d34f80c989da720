"""An AIMService's template cache: upstream's caching of a service on the template path (docs/aim-versions.md,
"What a v1alpha1 service gets reconciled"), as upstream's aimservice controller caches it.

- **Which services**: one that selects a template (by `spec.template.name`, or its model's default), once that
  template is Ready and lists model sources (`status.modelSources`). Upstream caches every such service; a template
  without sources has nothing to cache, and its service is served uncached (upstream would wait for a cache it never
  makes).
- **The mode** (`caching_mode`): v1alpha1's `spec.caching.mode`, carried in the annotation, normalised as upstream
  normalises it: `Shared` (the default), `Always` and `Auto` are Shared; `Dedicated` and `Never` are Dedicated. The
  deprecated `spec.cacheModel` is not read (upstream no longer honours it), nor is v1alpha2's `spec.caching.enabled`
  (its AIMProfileCache path is another shape).
- **Its cache** (`find_template_cache`, `cache_usable`): Shared, the best (Ready first) Shared AIMTemplateCache of the
  service's namespace for that template, whoever made it; Dedicated, the one of the service's own name
  (`template_cache_name`) that it owns. None usable: the service renders one (`render_template_cache`) and applies
  it, once: name `<template>-<hash8 of the namespace>` (Shared) or `<template>-<service>-<hash8 of the service's
  uid>` (Dedicated), upstream's derived names; labels `aim.eai.amd.com/service` (upstream's on the cache it renders)
  and `aim.eai.amd.com/service.name` (upstream's controller label), both the service's name, which every child of
  the cache inherits as an `aim.eai.amd.com/` label (`omectl.core.aim.labels`), and `app.kubernetes.io/managed-by:
  omectl` (omectl's: the cleanup's mark, below); spec `templateName`,
  `templateScope`, `mode`, `storageClassName` (the service's `storage.defaultStorageClassName`, else the config's),
  `runtimeConfigName` (the service's, when it names one), `env` (the template's `env` < a namespaced template's
  `caching.env` < the service's `env`, merged by name). A Dedicated cache is owned by the service (it goes with it);
  a Shared one is nobody's, so it outlives the service and other services reuse it.
- **Its component** `Cache` (condition `CacheReady`; `cache_component`), upstream's reasons and messages: the
  cache's status Ready → `CacheReady`; Progressing → `CacheNotReady`; Failed → `CacheFailed`; another →
  `CacheCreating`. No cache while the InferenceService still mounts cached volumes: Degraded, `CacheLost` (Shared: a
  true loss) or `CacheCreating` (Dedicated: being made again); no cache otherwise: Progressing, `CacheCreating`.
- **The InferenceService** waits for a Ready cache before it is created; once it exists it is updated whatever the
  cache's state. A Ready cache's Ready artifacts (`status.artifacts`) are mounted (`cache_artifacts`, as
  `artifacts.mount_artifacts` mounts them); a cache not Ready keeps the volumes the live InferenceService mounts
  (`kept_volumes`), so a deleted cache does not unmount a running model.
- **`status.cache.templateCacheRef`** (`cache_ref`): `{name, namespace, uid}` of the cache while it is Ready.
- **Cleanup** (`abandoned`): a cache a service made (its `aim.eai.amd.com/service.name` label) that is not Ready when
  that service is deleted is deleted, as upstream's service finalizer deletes its caches that are not Ready; a Ready
  one stays for others to reuse. A Dedicated cache goes with its service anyway (its owner reference, where a
  garbage collector runs). Without a finalizer a deletion nobody saw (no controller running) is caught up by
  `orphaned_cache`: a cache omectl made for a service (labelled `app.kubernetes.io/managed-by: omectl` too), not
  Ready, whose service is not there, or is a later one of that name (created after the cache, so it did not make it).
  A cache labelled with a service by anyone else is left alone then: it may be waiting for its service.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.artifacts import mount_artifacts
from omectl.core.aim.consumers import owner_reference, spec_of, status_of
from omectl.core.aim.env import merge_env
from omectl.core.aim.kserve import CONTAINER_NAME, SHARED_MEMORY_VOLUME
from omectl.core.aim.legacy.kinds import (
    AIM_V1ALPHA1,
    CLUSTER_SERVICE_TEMPLATE,
    SCOPE_CLUSTER,
    SCOPE_NAMESPACE,
    TEMPLATE_CACHE,
)
from omectl.core.aim.legacy.status import STATE_ORDER
from omectl.core.aim.meta import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
    SERVICE_LABEL,
    maker_gone,
    name_of,
    namespace_of,
    sanitized_label_value,
)
from omectl.core.aim.status import Component
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_list, as_mapping

SHARED: Final = "Shared"
DEDICATED: Final = "Dedicated"
MODES: Final[Mapping[str, str]] = {
    "Shared": SHARED,
    "Always": SHARED,
    "Auto": SHARED,
    "Dedicated": DEDICATED,
    "Never": DEDICATED,
}
"""v1alpha1's `spec.caching.mode` → the canonical mode (upstream's normalisation)."""

SERVICE_NAME_LABEL: Final = "aim.eai.amd.com/service.name"
"""On a template cache a service made: the service's name as a label value."""

CACHE: Final = "Cache"
CACHE_READY: Final = "CacheReady"
CACHE_NOT_READY: Final = "CacheNotReady"
CACHE_FAILED: Final = "CacheFailed"
CACHE_CREATING: Final = "CacheCreating"
CACHE_LOST: Final = "CacheLost"

_NOT_NAME: Final = re.compile(r"[^a-z0-9-]")
_HASH_LENGTH: Final = 8
_MAX_NAME: Final = 63


def caching_mode(service: Mapping[str, Any]) -> str:
    """The service's canonical caching mode (module docstring): Shared unless v1alpha1 asked for Dedicated/Never."""
    mode = as_mapping(v1alpha1_spec(service).get("caching")).get("mode")
    return MODES.get(mode, SHARED) if isinstance(mode, str) else SHARED


# --- names, as upstream derives them -----------------------------------------------------------------------------


def rfc1123(text: str) -> str:
    """Upstream's MakeRFC1123Compliant: lowercased, other characters `-`, no `-` at the ends, at most 63."""
    out = _NOT_NAME.sub("-", text.lower()).strip("-")
    return out[:_MAX_NAME].rstrip("-")


def _hash(*inputs: str) -> str:
    # each input as Go's json.Marshal writes a string, joined by "|"
    combined = "|".join(json.dumps(value, ensure_ascii=False) for value in inputs)
    return hashlib.sha256(combined.encode()).hexdigest()[:_HASH_LENGTH]


def derived_name(parts: Sequence[str], *hash_inputs: str) -> str:
    """Upstream's GenerateDerivedName: the parts made RFC 1123 compliant, joined by `-`, then `-<hash8 of the
    inputs>`; while longer than 63, the longest part loses its last character."""
    names = [rfc1123(part) or "part" for part in parts]
    suffix = _hash(*hash_inputs) if hash_inputs else ""

    def length() -> int:
        return sum(len(n) + 1 for n in names) + (len(suffix) if suffix else -1)

    while length() > _MAX_NAME:
        longest = max(range(len(names)), key=lambda i: (len(names[i]), -i))
        if len(names[longest]) <= 1:
            break
        names[longest] = names[longest][:-1].rstrip("-")
    joined = "-".join(names)
    return f"{joined}-{suffix}" if suffix else joined


def template_cache_name(service: Mapping[str, Any], template_name: str, mode: str) -> str:
    """The cache's name: Shared, one per template and namespace; Dedicated, one per service instance (its uid)."""
    if mode == DEDICATED:
        meta = as_mapping(service.get("metadata"))
        return derived_name([template_name, name_of(service)], str(meta.get("uid") or ""))
    return derived_name([template_name], namespace_of(service))


# --- which cache -------------------------------------------------------------------------------------------------


def cache_usable(cache: Mapping[str, Any], service: Mapping[str, Any], mode: str) -> bool:
    """Whether `cache` may serve the service: a Dedicated service only its own Dedicated cache, a Shared one any
    Shared cache."""
    cache_mode = spec_of(cache).get("mode") or SHARED
    if mode == DEDICATED:
        uid = as_mapping(service.get("metadata")).get("uid")
        owners = as_list(as_mapping(cache.get("metadata")).get("ownerReferences"))
        return cache_mode == DEDICATED and any(as_mapping(o).get("uid") == uid for o in owners)
    return bool(cache_mode == SHARED)


def _state_rank(cache: Mapping[str, Any]) -> int:
    state = status_of(cache).get("status")
    return STATE_ORDER.index(state) if state in STATE_ORDER else STATE_ORDER.index("Pending")


def find_template_cache(
    service: Mapping[str, Any], template_name: str, caches: Iterable[Mapping[str, Any]]
) -> Mapping[str, Any] | None:
    """The service's cache among the live caches of its namespace (module docstring), or None. The cache its
    `status.cache.templateCacheRef` names is kept while it is Ready and usable, as upstream keeps it."""
    mode = caching_mode(service)
    caches = list(caches)
    kept = as_mapping(as_mapping(as_mapping(service.get("status")).get("cache")).get("templateCacheRef")).get("name")
    for cache in caches:
        if name_of(cache) == kept and cache_ready(cache) and cache_usable(cache, service, mode):
            return cache
    if mode == DEDICATED:
        own = template_cache_name(service, template_name, mode)
        return next((c for c in caches if name_of(c) == own and cache_usable(c, service, mode)), None)
    shared = sorted(
        (c for c in caches if spec_of(c).get("templateName") == template_name and cache_usable(c, service, mode)),
        key=name_of,
    )
    return max(shared, key=_state_rank, default=None)


def render_template_cache(
    service: Mapping[str, Any], template: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The AIMTemplateCache the service makes for its Ready `template` (which carries its kind), or None when the
    template lists no model sources. Labels are propagated onto it by whoever applies it (the service's edge)."""
    if not any(isinstance(s, Mapping) for s in as_list(status_of(template).get("modelSources"))):
        return None
    mode = caching_mode(service)
    template_name = name_of(template)
    cluster = template.get("kind") == CLUSTER_SERVICE_TEMPLATE
    service_spec = spec_of(service)
    template_spec = spec_of(template)
    caching_env = [] if cluster else as_list(as_mapping(template_spec.get("caching")).get("env"))
    env = merge_env(as_list(template_spec.get("env")), caching_env, as_list(service_spec.get("env")))
    spec: dict[str, Any] = {
        "templateName": template_name,
        "templateScope": SCOPE_CLUSTER if cluster else SCOPE_NAMESPACE,
        "mode": mode,
    }
    storage_class = _storage_class(service_spec, config)
    if storage_class:
        spec["storageClassName"] = storage_class
    runtime_config = service_spec.get("runtimeConfigName")
    if isinstance(runtime_config, str) and runtime_config:
        spec["runtimeConfigName"] = runtime_config
    if env:
        spec["env"] = env
    metadata: dict[str, Any] = {
        "name": template_cache_name(service, template_name, mode),
        "namespace": namespace_of(service),
        "labels": {
            SERVICE_LABEL: sanitized_label_value(name_of(service)),
            SERVICE_NAME_LABEL: sanitized_label_value(name_of(service)),
            MANAGED_BY_LABEL: MANAGED_BY,
        },
    }
    if mode == DEDICATED:
        metadata["ownerReferences"] = [owner_reference(service)]
    return {"apiVersion": AIM_V1ALPHA1, "kind": TEMPLATE_CACHE, "metadata": metadata, "spec": spec}


def _storage_class(service_spec: Mapping[str, Any], config: Mapping[str, Any]) -> str | None:
    for storage in (as_mapping(service_spec.get("storage")), as_mapping(config.get("storage"))):
        name = storage.get("defaultStorageClassName")
        if isinstance(name, str) and name:
            return name
    return None


# --- status -------------------------------------------------------------------------------------------------------


def cache_ready(cache: Mapping[str, Any] | None) -> bool:
    return cache is not None and status_of(cache).get("status") == "Ready"


def cache_component(
    service: Mapping[str, Any], cache: Mapping[str, Any] | None, mounts_cached_volumes: bool
) -> Component:
    """The `Cache` component (module docstring). `mounts_cached_volumes`: the live InferenceService mounts volumes
    from a persistent volume claim."""
    if cache is not None:
        state = status_of(cache).get("status")
        if state == "Ready":
            return Component(CACHE, "Ready", CACHE_READY, "Template cache is ready")
        if state == "Progressing":
            return Component(CACHE, "Progressing", CACHE_NOT_READY, "Template cache is progressing")
        if state == "Failed":
            return Component(CACHE, "Failed", CACHE_FAILED, "Template cache failed")
        return Component(CACHE, "Progressing", CACHE_CREATING, f"Template cache status: {state or ''}")
    if mounts_cached_volumes:
        if caching_mode(service) == SHARED:
            message = "Shared template cache was deleted but InferenceService still references cached storage volumes"
            return Component(CACHE, "Degraded", CACHE_LOST, message)
        return Component(CACHE, "Degraded", CACHE_CREATING, "Dedicated template cache is being recreated")
    return Component(CACHE, "Progressing", CACHE_CREATING, "Creating template cache")


def cache_ref(cache: Mapping[str, Any] | None) -> dict[str, str] | None:
    """`status.cache.templateCacheRef` while the cache is Ready, else None."""
    if cache is None or not cache_ready(cache):
        return None
    meta = as_mapping(cache.get("metadata"))
    ref = {"name": name_of(cache), "namespace": namespace_of(cache)}
    uid = meta.get("uid")
    if isinstance(uid, str) and uid:
        ref["uid"] = uid
    return ref


def abandoned(cache: Mapping[str, Any], service_deleted: bool) -> bool:
    """Whether `cache` is one a service made that is to be deleted now (module docstring): that service was deleted
    (and not made again) and the cache is not Ready."""
    return made_by(cache) is not None and service_deleted and not cache_ready(cache)


def orphaned_cache(cache: Mapping[str, Any], services: Iterable[Mapping[str, Any]]) -> bool:
    """Whether `cache` is one omectl made for a service (`render_template_cache`'s labels), not Ready, whose service
    went while no controller saw it (module docstring); `services` are the live services of its namespace."""
    meta = as_mapping(cache.get("metadata"))
    maker = made_by(cache)
    if as_mapping(meta.get("labels")).get(MANAGED_BY_LABEL) != MANAGED_BY or maker is None:
        return False
    if cache_ready(cache) or meta.get("deletionTimestamp"):
        return False
    namespace = namespace_of(cache)
    return maker_gone(
        cache, (s for s in services if namespace_of(s) == namespace and sanitized_label_value(name_of(s)) == maker)
    )


def made_by(cache: Mapping[str, Any]) -> str | None:
    """The name (label value) of the service that made `cache`, or None."""
    made = as_mapping(as_mapping(cache.get("metadata")).get("labels")).get(SERVICE_NAME_LABEL)
    return made if isinstance(made, str) and made else None


# --- the InferenceService's volumes ------------------------------------------------------------------------------


def cache_artifacts(cache: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """A Ready cache's artifacts (`status.artifacts`) as the artifacts `artifacts.mount_artifacts` mounts: the Ready
    ones with a claim; none while the cache is not Ready."""
    if cache is None or not cache_ready(cache):
        return []
    out = []
    for entry in as_mapping(status_of(cache).get("artifacts")).values():
        entry = as_mapping(entry)
        name, claim = entry.get("name"), entry.get("persistentVolumeClaim")
        if entry.get("status") != "Ready" or not isinstance(name, str) or not isinstance(claim, str) or not claim:
            continue
        out.append(
            {
                "metadata": {"name": name},
                "spec": {"modelId": entry.get("model")} if entry.get("model") else {},
                "status": {"status": "Ready", "persistentVolumeClaim": claim},
            }
        )
    return out


def claim_volumes(inference_service: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The live InferenceService's predictor volumes backed by a persistent volume claim."""
    predictor = as_mapping(spec_of(inference_service or {}).get("predictor"))
    return [
        as_mapping(v)
        for v in as_list(predictor.get("volumes"))
        if as_mapping(v).get("name") != SHARED_MEMORY_VOLUME and as_mapping(v).get("persistentVolumeClaim")
    ]


def kept_volumes(rendered: Mapping[str, Any], live: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of the rendered InferenceService with the live one's claim volumes (and their mounts on the inference
    container) that the render does not have: what a cache that is not Ready leaves mounted."""
    out = json.loads(json.dumps(rendered))
    predictor = out.setdefault("spec", {}).setdefault("predictor", {})
    have = {as_mapping(v).get("name") for v in as_list(predictor.get("volumes"))}
    kept = [dict(v) for v in claim_volumes(live) if v.get("name") not in have]
    if not kept:
        return dict(out)
    names = {v["name"] for v in kept}
    predictor["volumes"] = [*as_list(predictor.get("volumes")), *kept]
    live_predictor = as_mapping(spec_of(live or {}).get("predictor"))
    live_mounts = [
        dict(as_mapping(m))
        for c in as_list(live_predictor.get("containers"))
        if as_mapping(c).get("name") == CONTAINER_NAME
        for m in as_list(as_mapping(c).get("volumeMounts"))
        if as_mapping(m).get("name") in names
    ]
    for container in as_list(predictor.get("containers")):
        if isinstance(container, dict) and container.get("name") == CONTAINER_NAME:
            container["volumeMounts"] = [*as_list(container.get("volumeMounts")), *live_mounts]
    return dict(out)


@dataclass(frozen=True)
class CachePlan:
    """What the service's template cache asks of this reconcile."""

    cache: Mapping[str, Any] | None
    """The live cache the service uses, or None."""
    component: Component
    live_inference_service: Mapping[str, Any] | None
    """The live InferenceService with its spec, read while the cache is not Ready (its volumes are kept)."""
    inference_service_exists: bool

    @property
    def inference_service_due(self) -> bool:
        """Whether the InferenceService is applied: it exists (the update path), or the cache is Ready."""
        return self.inference_service_exists or cache_ready(self.cache)

    def mounted(self, rendered: Mapping[str, Any]) -> dict[str, Any]:
        """The rendered InferenceService with the Ready cache's artifacts mounted, or, while the cache is not Ready,
        the live one's claim volumes kept."""
        if cache_ready(self.cache):
            return mount_artifacts(rendered, cache_artifacts(self.cache))
        return kept_volumes(rendered, self.live_inference_service)


def plan_cache(
    service: Mapping[str, Any],
    cache: Mapping[str, Any] | None,
    live_inference_service: Mapping[str, Any] | None,
    *,
    inference_service_exists: bool,
) -> CachePlan:
    """How the service stands with its cache (`cache`: the one `find_template_cache` found, None when it made one
    just now); `live_inference_service` as `CachePlan` says."""
    component = cache_component(service, cache, bool(claim_volumes(live_inference_service)))
    return CachePlan(cache, component, live_inference_service, inference_service_exists)
