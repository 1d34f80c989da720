"""What a template cache's reconcile decides (AIMTemplateCache; docs/aim-resources.md, "The legacy template path"),
as upstream's template cache controller decides it.

- **Its template** (`template_ref`, `template_component`): `templateScope: Namespace` → the AIMServiceTemplate of
  `templateName` in the cache's namespace; `Cluster` → the AIMClusterServiceTemplate; `Unknown` → the namespaced one,
  else the cluster one. Missing: a missing reference (`ReferenceNotFound`): the cache fails until it appears.
  Otherwise the `ServiceTemplate` component is the template's own state (its `Ready` condition's reason and
  message): a NotAvailable template makes a NotAvailable cache.
- **Model sources** (`cache_sources`): the cache's `spec.modelSources` when it has some, else its template's
  `status.modelSources` (what discovery found, or the inline ones).
- **Artifacts** (`match_artifacts`, `render_artifact`): for each source the best live AIMArtifact of the namespace
  that holds it (same `sourceUri`, the cache's storage class if it names one, a status; a `Shared` cache takes only
  artifacts no one owns, a `Dedicated` one only its own), else a new one: name `<sourceUri as a DNS label>-<hash10 of
  the source, the env and the storage class (and the cache for a Dedicated one)>`, `sourceUri`, `modelId`, `size`,
  `env` = the cache's `env` with the source's merged over it by name, the cache's `storageClassName`,
  `downloadImage` and `runtimeConfigName`; labels `aim.eai.amd.com/template-cache.name`, `template.name`,
  `template.scope`, `template.index` and the cache's labels propagated under its config (the spec's edge
  AIMTemplateCache → AIMArtifact). A Dedicated cache owns its artifacts (they go with it); a Shared cache's are
  nobody's, so they outlive it and other caches reuse them. Artifacts are served at `aim.eai.amd.com/v1alpha2`, the
  version AIMArtifact is stored in.
- **Status** (`artifacts_component`, `artifacts_status`): `ArtifactsReady` from the worst chosen artifact (Ready /
  `AllCachesReady` when every one is; Progressing / `CreatingCaches` while one is being made; False / `NoCaches`,
  `No artifacts to track`, with no source to hold, as upstream: such a cache is Progressing, never Ready),
  `status.artifacts` by artifact name (`uid`, `name`, `model`, `status`, `persistentVolumeClaim`),
  `status.resolvedTemplateKind`.
- **Cleanup** (`abandoned_artifacts`): when a cache is deleted, the artifacts labelled with its name that are not
  Ready go too, as upstream's template cache finalizer (`aim.eai.amd.com/artifactcleanup`) deletes them: an artifact
  left Failed would be found again by the next cache of those sources (same name), which could never turn Ready. A
  Ready one stays for other caches. Without a finalizer a deletion nobody saw (no controller running) is caught up
  by `orphaned`: an artifact omectl made for a cache, not Ready, whose cache is not there, or is a later one of the
  same name (created after the artifact, so it did not make it).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from omectl.core.aim.caches import artifact_spec
from omectl.core.aim.consumers import AIM_V1ALPHA2, base_labels, owner_reference, spec_of, status_of
from omectl.core.aim.env import merge_env
from omectl.core.aim.legacy.kinds import (
    ARTIFACT,
    CLUSTER_SERVICE_TEMPLATE,
    SCOPE_CLUSTER,
    SCOPE_NAMESPACE,
    SERVICE_TEMPLATE,
    TEMPLATE_CACHE_LABEL,
    TEMPLATE_INDEX_LABEL,
    TEMPLATE_NAME_LABEL,
    TEMPLATE_SCOPE_LABEL,
    propagate_legacy_edge,
)
from omectl.core.aim.legacy.status import STATE_ORDER, Component, LegacyState
from omectl.core.aim.meta import MANAGED_BY, MANAGED_BY_LABEL, label_value, maker_gone, name_of, namespace_of
from omectl.core.aim.resolution import REFERENCE_NOT_FOUND
from omectl.core.jsonish import as_list, as_mapping

DEDICATED: Final = "Dedicated"
SHARED: Final = "Shared"
ARTIFACT_COMPONENT: Final = "artifact"
_NOT_DNS: Final = re.compile(r"[^a-z0-9-]+")
ARTIFACT_STATES: Final[Mapping[str, LegacyState]] = {
    "Ready": "Ready",
    "Failed": "Failed",
    "Degraded": "Degraded",
    "NotAvailable": "NotAvailable",
    "Downloading": "Progressing",
    "Progressing": "Progressing",
    "Pending": "Pending",
}
"""An artifact's `status.status` as one of the legacy states."""


def mode(cache: Mapping[str, Any]) -> str:
    return DEDICATED if spec_of(cache).get("mode") == DEDICATED else SHARED


def template_refs(cache: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """`(kind, namespace, name)` of the templates the cache may name, in the order they are looked up."""
    name = str(spec_of(cache).get("templateName") or "")
    scope = spec_of(cache).get("templateScope")
    namespaced = (SERVICE_TEMPLATE, namespace_of(cache), name)
    cluster = (CLUSTER_SERVICE_TEMPLATE, "", name)
    if scope == SCOPE_NAMESPACE:
        return [namespaced]
    if scope == SCOPE_CLUSTER:
        return [cluster]
    return [namespaced, cluster]


def template_component(cache: Mapping[str, Any], template: Mapping[str, Any] | None) -> Component:
    """The `ServiceTemplate` component (module docstring)."""
    if template is None:
        kinds = " or ".join(kind for kind, _, _ in template_refs(cache))
        message = f"{kinds} {spec_of(cache).get('templateName') or ''} not found"
        return Component("ServiceTemplate", "Failed", REFERENCE_NOT_FOUND, message, missing_reference=True)
    status = status_of(template)
    state = status.get("status")
    ready = next(
        (c for c in as_list(status.get("conditions")) if isinstance(c, Mapping) and c.get("type") == "Ready"), None
    )
    if ready is None and state == "Ready":
        return Component("ServiceTemplate", "Ready", "TemplateReady", f"{template.get('kind')} is Ready")
    if ready is not None and ready.get("status") == "True":
        reason, message = str(ready.get("reason") or "Ready"), str(ready.get("message") or "")
        return Component("ServiceTemplate", "Ready", reason, message)
    legacy_state: LegacyState = state if state in STATE_ORDER and state != "Ready" else "Pending"
    if ready is not None:
        reason, message = str(ready.get("reason") or legacy_state), str(ready.get("message") or "")
    else:
        reason, message = "TemplateNotReady", f"{template.get('kind') or 'Template'} is {legacy_state}"
    return Component("ServiceTemplate", legacy_state, reason, message)


def cache_sources(cache: Mapping[str, Any], template: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The model sources to cache (module docstring)."""
    own = as_list(spec_of(cache).get("modelSources"))
    sources = own or as_list(status_of(template).get("modelSources"))
    return [dict(s) for s in sources if isinstance(s, Mapping) and s.get("sourceUri")]


def artifact_name(cache: Mapping[str, Any], source: Mapping[str, Any]) -> str:
    """`<sourceUri as a DNS label>-<hash10>` (module docstring), at most 63 characters."""
    spec = spec_of(cache)
    inputs: list[Any] = [
        source.get("sourceUri"),
        merge_env(as_list(spec.get("env")), as_list(source.get("env"))),
        spec.get("storageClassName") or "",
    ]
    if mode(cache) == DEDICATED:
        inputs += [DEDICATED.lower(), name_of(cache)]
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:10]
    base = _NOT_DNS.sub("-", str(source.get("sourceUri") or "").replace(".", "-").lower()).strip("-")
    return f"{base[: 63 - 11].rstrip('-') or 'artifact'}-{digest}"


def render_artifact(
    cache: Mapping[str, Any], source: Mapping[str, Any], index: int, template_kind: str, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The AIMArtifact holding one source of the cache (module docstring)."""
    cache_spec = spec_of(cache)
    spec = artifact_spec(cache, source)
    scope = SCOPE_CLUSTER if template_kind == CLUSTER_SERVICE_TEMPLATE else SCOPE_NAMESPACE
    labels = base_labels(
        ARTIFACT_COMPONENT,
        {
            TEMPLATE_CACHE_LABEL: name_of(cache),
            TEMPLATE_NAME_LABEL: str(cache_spec.get("templateName") or ""),
            TEMPLATE_SCOPE_LABEL: scope,
            TEMPLATE_INDEX_LABEL: str(index),
        },
    )
    metadata: dict[str, Any] = {
        "name": artifact_name(cache, source),
        "namespace": namespace_of(cache),
        "labels": labels,
    }
    if mode(cache) == DEDICATED:
        metadata["ownerReferences"] = [owner_reference(cache)]
    artifact = {"apiVersion": AIM_V1ALPHA2, "kind": ARTIFACT, "metadata": metadata, "spec": spec}
    return propagate_legacy_edge(cache, artifact, config)


def match_artifacts(
    cache: Mapping[str, Any], sources: Sequence[Mapping[str, Any]], artifacts: Iterable[Mapping[str, Any]]
) -> list[Mapping[str, Any] | None]:
    """For each source, the best live artifact of the namespace that holds it (module docstring), or None."""
    uid = as_mapping(cache.get("metadata")).get("uid")
    storage_class = spec_of(cache).get("storageClassName") or ""
    candidates = []
    for artifact in artifacts:
        owners = as_list(as_mapping(artifact.get("metadata")).get("ownerReferences"))
        if not status_of(artifact).get("status"):
            continue
        if mode(cache) == SHARED and owners:
            continue
        if mode(cache) == DEDICATED and not any(as_mapping(o).get("uid") == uid for o in owners):
            continue
        if storage_class and spec_of(artifact).get("storageClassName") != storage_class:
            continue
        candidates.append(artifact)
    chosen: list[Mapping[str, Any] | None] = []
    for source in sources:
        holding = [a for a in candidates if spec_of(a).get("sourceUri") == source.get("sourceUri")]
        chosen.append(max(holding, key=lambda a: STATE_ORDER.index(artifact_state(a)), default=None))
    return chosen


def artifact_state(artifact: Mapping[str, Any]) -> LegacyState:
    return ARTIFACT_STATES.get(str(status_of(artifact).get("status") or ""), "Pending")


def artifacts_component(chosen: Sequence[Mapping[str, Any] | None]) -> Component:
    """`Artifacts` (`ArtifactsReady`): Progressing / `NoCaches` without sources (no template, or one without model
    sources: upstream's, which keeps the cache from turning Ready); Progressing / `CreatingCaches` while one is made;
    else the worst chosen artifact's state, with its `Ready` condition's reason."""
    if not chosen:
        return Component("Artifacts", "Progressing", "NoCaches", "No artifacts to track")
    if any(a is None for a in chosen):
        return Component("Artifacts", "Progressing", "CreatingCaches", "Waiting for the AIM artifacts to be created")
    artifacts = [a for a in chosen if a is not None]
    worst = min(artifacts, key=lambda a: STATE_ORDER.index(artifact_state(a)))
    state = artifact_state(worst)
    if state == "Ready":
        return Component("Artifacts", "Ready", "AllCachesReady", "All caches are ready")
    ready = next((c for c in as_list(status_of(worst).get("conditions")) if as_mapping(c).get("type") == "Ready"), None)
    if ready is not None:
        reason = str(as_mapping(ready).get("reason") or "CachesNotReady")
        message = f"One or more caches are not ready: {as_mapping(ready).get('message') or state}"
    else:
        reason, message = "CachesNotReady", "One or more caches are not ready"
    return Component("Artifacts", state, reason, message)


def artifacts_status(
    sources: Sequence[Mapping[str, Any]], chosen: Sequence[Mapping[str, Any] | None]
) -> dict[str, Any] | None:
    """`status.artifacts`: the chosen artifacts by name; None when there is none."""
    out: dict[str, Any] = {}
    for source, artifact in zip(sources, chosen, strict=True):
        if artifact is None:
            continue
        meta = as_mapping(artifact.get("metadata"))
        entry = {
            "uid": str(meta.get("uid") or ""),
            "name": str(meta.get("name") or ""),
            "model": str(source.get("modelId") or source.get("sourceUri") or ""),
            "status": str(status_of(artifact).get("status") or "Pending"),
        }
        claim = status_of(artifact).get("persistentVolumeClaim")
        if isinstance(claim, str) and claim:
            entry["persistentVolumeClaim"] = claim
        out[entry["name"]] = entry
    return out or None


def abandoned_artifacts(cache: Mapping[str, Any], artifacts: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Of `artifacts` (the live ones of the cache's namespace), those the deleted `cache` leaves to be deleted
    (module docstring): labelled with its name, not Ready."""
    made = label_value(name_of(cache))
    return [
        artifact
        for artifact in artifacts
        if namespace_of(artifact) == namespace_of(cache)
        and as_mapping(as_mapping(artifact.get("metadata")).get("labels")).get(TEMPLATE_CACHE_LABEL) == made
        and status_of(artifact).get("status") != "Ready"
    ]


def orphaned(artifact: Mapping[str, Any], caches: Iterable[Mapping[str, Any]]) -> bool:
    """Whether `artifact` is one omectl made for a template cache (`render_artifact`'s labels), not Ready, whose
    cache is gone (module docstring); `caches` are the live template caches of its namespace."""
    meta = as_mapping(artifact.get("metadata"))
    labels = as_mapping(meta.get("labels"))
    made_for = labels.get(TEMPLATE_CACHE_LABEL)
    if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or not isinstance(made_for, str) or not made_for:
        return False
    if status_of(artifact).get("status") == "Ready" or meta.get("deletionTimestamp"):
        return False
    namespace = namespace_of(artifact)
    return maker_gone(
        artifact, (c for c in caches if namespace_of(c) == namespace and label_value(name_of(c)) == made_for)
    )
