"""AIMProfileCache: made by an AIMService with caching enabled, it makes one AIMArtifact per model source
(docs/aim-resources.md).

AIMService → AIMProfileCache (`render_profile_cache`): only when `spec.caching.enabled` is true. One cache per
service and profile (a dedicated cache, owned by the service, so it goes with it): name `<service>-<profile>` (at most
63 characters, `omectl.core.aim.consumers.bounded_name`), in the service's namespace; `spec.profileName`,
`spec.profileScope` (Cluster for an AIMClusterProfile), `spec.runtimeConfigName` copied from the service when it
names one (so the cache resolves the same config in the same namespace), `spec.storageClassName` copied from the
profile when it sets one, `spec.env` = the service's `spec.env` (upstream puts the service env on the cache, so a
token the service carries reaches the downloader). Labels `app.kubernetes.io/component: profile-cache`,
`aim.eai.amd.com/service`, `aim.eai.amd.com/profile`, and the service's labels propagated with the service's config.

AIMProfileCache → AIMArtifact (`render_artifacts`): one per model source, the cache's `spec.modelSources` or else
the profile's: name `<cache>-<source name>` (at most 63 characters); `spec.sourceUri`, `modelId`, `size` from the
source; `spec.env` = cache `env` ⊕ source `env` (by name, the source's winning); `runtimeConfigName`,
`storageClassName`, `downloadImage` copied from the cache; `profileName` / `profileScope` naming the cache's profile
(so the download Job takes its env layer). Labels `app.kubernetes.io/component: artifact`,
`aim.eai.amd.com/profile-cache`, `aim.eai.amd.com/source-model`, and the cache's labels propagated with the cache's
config. Owned by the cache.

Status (`profile_cache_status`): Failed when an artifact failed, Ready when all are Ready (also when there is
nothing to download), Progressing while any downloads or is Ready, else Pending; `status.artifacts` lists each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from omectl.core.aim.consumers import (
    CLUSTER_PROFILE,
    PROFILE_CACHE_LABEL,
    SCOPE_CLUSTER,
    SCOPE_NAMESPACE,
    SOURCE_MODEL_LABEL,
    base_labels,
    bounded_name,
    owner_reference,
    propagate_edge,
    spec_of,
    status_of,
    text,
)
from omectl.core.aim.env import merge_env
from omectl.core.aim.meta import SERVICE_LABEL, name_of, namespace_of
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

PROFILE_LABEL: Final = "aim.eai.amd.com/profile"
CACHE_COMPONENT: Final = "profile-cache"
ARTIFACT_COMPONENT: Final = "artifact"
AIM_V1ALPHA2: Final = "aim.eai.amd.com/v1alpha2"


def caching_enabled(service: Mapping[str, Any]) -> bool:
    caching = spec_of(service).get("caching")
    return isinstance(caching, Mapping) and caching.get("enabled") is True


def profile_scope(profile: Mapping[str, Any]) -> str:
    return SCOPE_CLUSTER if profile.get("kind") == CLUSTER_PROFILE else SCOPE_NAMESPACE


def profile_cache_name(service: Mapping[str, Any], profile: Mapping[str, Any]) -> str:
    return bounded_name(f"{name_of(service)}-{name_of(profile)}")


def render_profile_cache(
    service: Mapping[str, Any], profile: Mapping[str, Any], config: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The AIMProfileCache of `service` for `profile` (module docstring), or None when caching is not enabled.
    `config` is the service's resolved runtime config (for label propagation)."""
    if not caching_enabled(service):
        return None
    service_spec = spec_of(service)
    spec: dict[str, Any] = {"profileName": name_of(profile), "profileScope": profile_scope(profile)}
    config_name = text(service_spec.get("runtimeConfigName"))
    if config_name is not None:
        spec["runtimeConfigName"] = config_name
    storage_class = text(spec_of(profile).get("storageClassName"))
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    env = merge_env(as_list(service_spec.get("env")))
    if env:
        spec["env"] = env
    cache = {
        "apiVersion": AIM_V1ALPHA2,
        "kind": "AIMProfileCache",
        "metadata": {
            "name": profile_cache_name(service, profile),
            "namespace": namespace_of(service),
            "labels": base_labels(CACHE_COMPONENT, {SERVICE_LABEL: name_of(service), PROFILE_LABEL: name_of(profile)}),
            "ownerReferences": [owner_reference({**service, "kind": service.get("kind") or "AIMService"})],
        },
        "spec": spec,
    }
    return propagate_edge({**service, "kind": service.get("kind") or "AIMService"}, cache, config or {})


def model_sources(cache: Mapping[str, Any], profile: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The cache's `spec.modelSources`, else the profile's."""
    own = as_list(spec_of(cache).get("modelSources"))
    sources = own if own else as_list(spec_of(profile).get("modelSources"))
    return [s for s in sources if isinstance(s, Mapping) and text(s.get("name")) and text(s.get("sourceUri"))]


def artifact_name(cache: Mapping[str, Any], source: Mapping[str, Any]) -> str:
    return bounded_name(f"{name_of(cache)}-{source.get('name')}")


def artifact_spec(cache: Mapping[str, Any], source: Mapping[str, Any]) -> dict[str, Any]:
    """The spec of the artifact holding one model source of a cache: the source's URI, model id and size, its env
    over the cache's, and the cache's storage class, download image and runtime config name."""
    cache_spec = spec_of(cache)
    spec: dict[str, Any] = {"sourceUri": source["sourceUri"]}
    for field in ("modelId", "size"):
        if source.get(field) not in (None, ""):
            spec[field] = copy_json(source[field])
    env = merge_env(as_list(cache_spec.get("env")), as_list(source.get("env")))
    if env:
        spec["env"] = env
    for field in ("storageClassName", "downloadImage", "runtimeConfigName"):
        value = text(cache_spec.get(field))
        if value is not None:
            spec[field] = value
    return spec


def render_artifacts(
    cache: Mapping[str, Any], profile: Mapping[str, Any] | None, config: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The cache's AIMArtifacts, one per model source (module docstring). `config` is the cache's resolved runtime
    config (for label propagation)."""
    cache_spec = spec_of(cache)
    parent = {**cache, "kind": cache.get("kind") or "AIMProfileCache"}
    out: list[dict[str, Any]] = []
    for source in model_sources(cache, profile):
        spec = artifact_spec(cache, source)
        profile_name = text(cache_spec.get("profileName"))
        if profile_name is not None:
            spec["profileName"] = profile_name
            spec["profileScope"] = text(cache_spec.get("profileScope")) or SCOPE_NAMESPACE
        labels = base_labels(
            ARTIFACT_COMPONENT, {PROFILE_CACHE_LABEL: name_of(cache), SOURCE_MODEL_LABEL: str(source["name"])}
        )
        artifact = {
            "apiVersion": AIM_V1ALPHA2,
            "kind": "AIMArtifact",
            "metadata": {
                "name": artifact_name(cache, source),
                "namespace": namespace_of(cache),
                "labels": labels,
                "ownerReferences": [owner_reference(parent)],
            },
            "spec": spec,
        }
        out.append(propagate_edge(parent, artifact, config or {}))
    return out


def profile_cache_status(
    rendered: Sequence[Mapping[str, Any]], live: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """The cache's own status from its artifacts: `rendered` from `render_artifacts`, `live` the live artifacts by
    name. `status`, `artifacts[]` and conditions `ArtifactsReady`, `Ready`."""
    entries: list[dict[str, Any]] = []
    states: list[str] = []
    for artifact in rendered:
        name = name_of(artifact)
        current = live.get(name)
        state = str(status_of(current).get("status") or "Pending") if current is not None else "Pending"
        states.append(state)
        entry: dict[str, Any] = {"name": name, "status": state}
        source = as_mapping(artifact.get("metadata")).get("labels", {}).get(SOURCE_MODEL_LABEL)
        if source:
            entry["sourceName"] = source
        model_id = text(spec_of(artifact).get("modelId"))
        if model_id is not None:
            entry["modelId"] = model_id
        claim = text(status_of(current).get("persistentVolumeClaim"))
        if claim is not None:
            entry["persistentVolumeClaim"] = claim
        entries.append(entry)
    ready_count = states.count("Ready")
    if "Failed" in states:
        failed = [e["name"] for e in entries if e["status"] == "Failed"]
        status, reason, message = "Failed", "ArtifactFailed", f"Artifacts failed: {', '.join(failed)}"
    elif ready_count == len(states):
        status, reason = "Ready", "AllArtifactsReady"
        message = f"{ready_count} artifacts ready" if states else "No model sources to cache"
    elif ready_count or "Downloading" in states:
        status, reason, message = "Progressing", "Downloading", f"{ready_count}/{len(states)} artifacts ready"
    else:
        status, reason, message = "Pending", "ArtifactsPending", f"0/{len(states)} artifacts ready"
    ready = status == "Ready"
    return {
        "status": status,
        "artifacts": entries,
        "conditions": [
            {"type": "ArtifactsReady", "status": str(ready), "reason": reason, "message": message},
            {"type": "Ready", "status": str(ready), "reason": reason, "message": message},
        ],
    }
