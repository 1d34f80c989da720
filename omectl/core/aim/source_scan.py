"""A v1alpha1 AIMClusterModelSource's registry scan turned into AIMClusterModels and a status (docs/aim-versions.md,
"What a v1alpha1 source scans"), as upstream's aimclustermodelsource controller composes them. The registry reads
are the controller's (`omectl.controller.aim.model_source_scan`); the filters' semantics are `source_filters`'.

- **Which sources scan** (`scanning_spec`): one written in v1alpha1 (`written_in_v1alpha1`: a write in v1alpha2 that
  changes its spec, such as one giving `models`, even empty, ends it) that lists no `spec.models` and whose v1alpha1
  spec (carried in its annotation, the source being stored at v1alpha2) has `filters`.
- **What is created** (`plan_scan`): the models of the source are the AIMClusterModels labelled
  `aim.eai.amd.com/model-source: <source>`, known by their `spec.image`. Each image a filter found (in the filters'
  order, then the registry's) whose model does not exist yet is new while the models existing plus new stay under
  `maxModels` (default 100). Models are never deleted or updated by the scan: a source only adds.
- **A model** (`render_scanned_model`): named `<repository>-<tag>-<hash>` (upstream's derived name, the hash 6 hex
  digits of registry, repository and tag), labelled `aim.eai.amd.com/model-source` and `aim.eai.amd.com/origin:
  auto-generated`, annotated `aim.eai.amd.com/source-registry`, `source-repository`, `source-tag`, owned by the source
  (`apiVersion` v1alpha1, `controller: true`), spec `image` (Docker Hub's without registry) and the source's
  `imagePullSecrets`, written in v1alpha1 (so reconciled as upstream's model: its templates from its image's labels).
- **The status** (`scan_status`): upstream's components `ExistingModels` (Ready / `Listed`, `Found <n> existing
  models`) and `Filters`: Ready / `AllFiltersSucceeded` (`All <n> filters succeeded`), Degraded / `SomeFiltersFailed`
  (`<k> of <n> filters had errors`) or Failed / `AllFiltersFailed` (`All <n> filters failed`); `Ready` and
  `status.status` from them by upstream's state engine (`legacy_status`), and `MaxModelsLimitReached` True /
  `LimitReached` (`Limit reached: <d> created, <a> available`) when more images matched than models exist, else
  False / `WithinLimit` (`Created <d> models, within limit`). `modelCount` (v1alpha1's `discoveredModels`): the models
  existing plus new; `availableModels`: the images the filters found; `modelsLimitReached`; `lastSyncTime`: now.
- **Resync** (`sync_interval`): `spec.syncInterval` (a Go duration, default and fallback 1h) after each scan.
- **Events** (`source_condition_events`): upstream's pipeline records one per condition that is new or whose status
  or reason changed (`condition_events`), Warning for a failing `FiltersReady` (`SomeFiltersFailed`,
  `AllFiltersFailed`) as for `Ready` False for any reason but `Progressing`, Normal otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from omectl.core.aim.consumers import AIM_V1ALPHA2, CLUSTER_MODEL, MODEL_SOURCE_LABEL, spec_of
from omectl.core.aim.durations import DurationError, parse_duration
from omectl.core.aim.image_models import AUTO_GENERATED, ORIGIN_LABEL
from omectl.core.aim.legacy.model_status import ConditionEvent, condition_events
from omectl.core.aim.legacy.status import Component, legacy_status
from omectl.core.aim.legacy.template_names import derived_name
from omectl.core.aim.meta import name_of
from omectl.core.aim.source_filters import FoundImage
from omectl.core.aim.versions import convert
from omectl.core.aim.versions.engine import GROUP, V1ALPHA1, carried_fields, written_in_v1alpha1
from omectl.core.jsonish import as_list, as_mapping

DEFAULT_MAX_MODELS: Final = 100
DEFAULT_SYNC_INTERVAL: Final = 3600.0
SOURCE_REGISTRY: Final = f"{GROUP}/source-registry"
SOURCE_REPOSITORY: Final = f"{GROUP}/source-repository"
SOURCE_TAG: Final = f"{GROUP}/source-tag"
FAILING_FILTERS: Final = frozenset(("SomeFiltersFailed", "AllFiltersFailed"))
"""`FiltersReady` reasons of a Degraded or Failed component: upstream reports them as errors (Warning events)."""


@dataclass(frozen=True)
class FilterResult:
    """What one filter found: its images (maybe partial) and the error that stopped it, if any."""

    images: tuple[FoundImage, ...] = ()
    error: str | None = None


@dataclass
class ScanPlan:
    new_images: list[FoundImage] = field(default_factory=list)
    available: int = 0
    """Images the filters found, counted once per filter that found them."""
    discovered: int = 0
    """Models existing plus new."""


def scanning_spec(source: Mapping[str, Any]) -> dict[str, Any] | None:
    """The source's v1alpha1 spec when the source scans a registry (module docstring), else None."""
    if not written_in_v1alpha1(source) or as_list(spec_of(source).get("models")):
        return None
    spec = as_mapping(carried_fields(source, V1ALPHA1).get("spec"))
    return dict(spec) if as_list(spec.get("filters")) else None


def max_models(spec: Mapping[str, Any]) -> int:
    value = spec.get("maxModels")
    return value if isinstance(value, int) and not isinstance(value, bool) else DEFAULT_MAX_MODELS


def sync_interval(spec: Mapping[str, Any]) -> float:
    """Seconds between scans: `spec.syncInterval`, 1h when unset, zero or not a duration."""
    text = spec.get("syncInterval")
    if not isinstance(text, str) or not text:
        return DEFAULT_SYNC_INTERVAL
    try:
        nanoseconds = parse_duration(text)
    except DurationError:
        return DEFAULT_SYNC_INTERVAL
    return nanoseconds / 1e9 if nanoseconds > 0 else DEFAULT_SYNC_INTERVAL


def plan_scan(spec: Mapping[str, Any], results: Sequence[FilterResult], existing_images: set[str]) -> ScanPlan:
    """The images to make models of and the counts of the status (module docstring)."""
    plan = ScanPlan()
    limit = max_models(spec)
    for result in results:
        for image in result.images:
            plan.available += 1
            if image.uri not in existing_images and len(existing_images) + len(plan.new_images) < limit:
                plan.new_images.append(image)
    plan.discovered = len(existing_images) + len(plan.new_images)
    return plan


def scanned_model_name(image: FoundImage) -> str:
    return derived_name([image.repository, image.tag], [image.registry, image.repository, image.tag], 6)


def render_scanned_model(source: Mapping[str, Any], spec: Mapping[str, Any], image: FoundImage) -> dict[str, Any]:
    """The AIMClusterModel (stored at v1alpha2, written in v1alpha1) the source makes of `image`."""
    metadata = as_mapping(source.get("metadata"))
    owner = {
        "apiVersion": f"{GROUP}/{V1ALPHA1}",
        "kind": "AIMClusterModelSource",
        "name": name_of(source),
        "uid": str(metadata.get("uid") or ""),
        "controller": True,
    }
    model_spec: dict[str, Any] = {"image": image.uri}
    secrets = [dict(as_mapping(s)) for s in as_list(spec.get("imagePullSecrets")) if as_mapping(s).get("name")]
    if secrets:
        model_spec["imagePullSecrets"] = secrets
    written = {
        "apiVersion": f"{GROUP}/{V1ALPHA1}",
        "kind": CLUSTER_MODEL,
        "metadata": {
            "name": scanned_model_name(image),
            "labels": {MODEL_SOURCE_LABEL: name_of(source), ORIGIN_LABEL: AUTO_GENERATED},
            "annotations": {
                SOURCE_REGISTRY: image.registry,
                SOURCE_REPOSITORY: image.repository,
                SOURCE_TAG: image.tag,
            },
            "ownerReferences": [owner],
        },
        "spec": model_spec,
    }
    return convert(written, AIM_V1ALPHA2)


def filters_component(results: Sequence[FilterResult]) -> Component:
    total = len(results)
    failed = sum(1 for r in results if r.error is not None)
    if total == 0:
        return Component("Filters", "Progressing", "NoFilters", "No filters configured")
    if failed == 0:
        return Component("Filters", "Ready", "AllFiltersSucceeded", f"All {total} filters succeeded")
    if failed < total:
        return Component("Filters", "Degraded", "SomeFiltersFailed", f"{failed} of {total} filters had errors")
    return Component("Filters", "Failed", "AllFiltersFailed", f"All {total} filters failed")


def scan_status(results: Sequence[FilterResult], plan: ScanPlan, existing: int, now: str) -> dict[str, Any]:
    """The source's own status after a scan (module docstring); `existing` the models it had, `now` RFC 3339."""
    components = [
        Component("ExistingModels", "Ready", "Listed", f"Found {existing} existing models"),
        filters_component(results),
    ]
    limit_reached = plan.available > plan.discovered
    if limit_reached:
        limit = {
            "type": "MaxModelsLimitReached",
            "status": "True",
            "reason": "LimitReached",
            "message": f"Limit reached: {plan.discovered} created, {plan.available} available",
        }
    else:
        limit = {
            "type": "MaxModelsLimitReached",
            "status": "False",
            "reason": "WithinLimit",
            "message": f"Created {plan.discovered} models, within limit",
        }
    composed = legacy_status(components, extra_conditions=[limit])
    return {
        "status": composed.status,
        "modelCount": plan.discovered,
        "availableModels": plan.available,
        "modelsLimitReached": limit_reached,
        "lastSyncTime": now,
        "conditions": list(composed.conditions),
    }


def source_condition_events(
    previous: Sequence[Mapping[str, Any]], current: Sequence[Mapping[str, Any]]
) -> list[ConditionEvent]:
    """The events of a scanning source's status going from the `previous` conditions to the `current` ones (module
    docstring)."""
    return [
        ConditionEvent("Warning", e.reason, e.message) if e.reason in FAILING_FILTERS else e
        for e in condition_events(previous, current)
    ]
