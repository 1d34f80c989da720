"""Models, profiles, profile sets and cluster model sources on the v1alpha2 path (docs/aim-resources.md).

- **AIMModel / AIMClusterModel** (`reconcile_model`): a model written in v1alpha1 (with an image) is upstream's: its
  AIMServiceTemplates and its whole status rolled up from its image metadata and templates
  (`model_templates.reconcile_v1alpha1_model`), no discovery Job, and upstream's events for its conditions'
  transitions once its status is written (`record_status_events`). Any other model: unless discovery is
  disabled (or the model has no image:
  Failed / `ImageNotSpecified`, with one Warning event), the discovery Job
  (`render_discovery_job`) in the model's namespace, or in the operator namespace for a cluster model, with the
  model's runtime-config env and propagated labels. A live Job whose `aim.eai.amd.com/discovery-inputs` differs
  from the model's (image, env or model sources changed) is stale: it and its result ConfigMap are deleted, and the
  deletion brings the model back to run it anew. The result ConfigMap (same name and namespace as the Job; ignored
  when its inputs annotation is another run's) becomes the AIMProfiles / AIMClusterProfiles
  (`profiles_from_discovery`) and the child AIMProfileSet (`profile_set_for`). Status `model_status`. A model written
  in v1alpha2 with the simulated image metadata makes its templates too (`model_templates.reconcile_model_templates`,
  their conditions added to its discovery's).
- **AIMProfile / AIMClusterProfile** (`reconcile_profile`): configuration only; Ready (`profile_status`).
- **AIMProfileSet** (`reconcile_profile_set`): its derived AIMProfiles (`derive_profiles`); `profile_set_status`.
- **AIMClusterModelSource** (`reconcile_model_source`): a source written in v1alpha1 with filters (and no models
  listed) scans its registry as upstream's does (`model_source_scan.reconcile_scanning_source`), with upstream's
  events for its conditions' transitions (`record_status_events`); any other, the AIMClusterModels it lists
  (`cluster_models_for`), `model_source_status`, and never deletes models it does not list (a scan's among them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omectl.controller.aim.model_source_scan import reconcile_scanning_source
from omectl.controller.aim.model_templates import reconcile_model_templates, reconcile_v1alpha1_model
from omectl.core.aim.consumers import CLUSTER_MODEL, CLUSTER_MODEL_SOURCE, MODEL
from omectl.core.aim.discovery import (
    IMAGE_NOT_SPECIFIED,
    INPUTS_ANNOTATION,
    DiscoveryResultError,
    discovery_current,
    discovery_enabled,
    discovery_inputs,
    discovery_name,
    discovery_namespace,
    has_image,
    image_not_specified_message,
    model_status,
    profile_set_for,
    profiles_from_discovery,
    render_discovery_job,
)
from omectl.core.aim.legacy.model_status import condition_events
from omectl.core.aim.profiles import derive_profiles, profile_set_status, profile_status
from omectl.core.aim.resolution import DEFAULT_CONFIG_NOT_FOUND
from omectl.core.aim.source_scan import scanning_spec, source_condition_events
from omectl.core.aim.sources import cluster_models_for, model_source_status
from omectl.core.aim.versions import written_in_v1alpha1
from omectl.core.jsonish import as_list, as_mapping

if TYPE_CHECKING:
    from omectl.controller.aim.consumers import AimConsumerReconciler
    from omectl.controller.aim.watch import AimWatch


def upstream_model(model: Mapping[str, Any]) -> bool:
    """Whether the model is reconciled as upstream's v1alpha1 model controller does it (written in v1alpha1, with an
    image)."""
    return model.get("kind") in (MODEL, CLUSTER_MODEL) and written_in_v1alpha1(model) and has_image(model)


def record_status_events(cluster: AimWatch, obj: Mapping[str, Any], written: Mapping[str, Any]) -> None:
    """After a status write of an upstream model or a scanning source: upstream's events for its conditions'
    transitions (`condition_events`, `source_condition_events`), from the status the cache held to the one
    written."""
    if upstream_model(obj):
        events = condition_events
    elif obj.get("kind") == CLUSTER_MODEL_SOURCE and scanning_spec(obj) is not None:
        events = source_condition_events
    else:
        return
    previous = [c for c in as_list(as_mapping(obj.get("status")).get("conditions")) if isinstance(c, Mapping)]
    current = [c for c in as_list(written.get("conditions")) if isinstance(c, Mapping)]
    for event in events(previous, current):
        if event.reason != DEFAULT_CONFIG_NOT_FOUND:  # every consumer records that one once already
            cluster.record_event(obj, event.type, event.reason, event.message)


async def reconcile_model(
    reconciler: AimConsumerReconciler, cluster: AimWatch, model: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    if upstream_model(model):
        return await reconcile_v1alpha1_model(reconciler, cluster, model, config)
    own = await _reconcile_discovery(reconciler, cluster, model, config)
    conditions = await reconcile_model_templates(reconciler, cluster, model, config)
    if conditions:
        own["conditions"] = [*own["conditions"], *conditions]
    return own


async def _reconcile_discovery(
    reconciler: AimConsumerReconciler, cluster: AimWatch, model: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    if not discovery_enabled(model):
        return model_status(model, None, None)
    if not has_image(model):
        # Failed until the model gets an image: one Warning event when it enters that state, no retries
        if not _has_reason(model, IMAGE_NOT_SPECIFIED):
            cluster.record_event(model, "Warning", IMAGE_NOT_SPECIFIED, image_not_specified_message(model))
        return model_status(model, None, None)
    namespace = discovery_namespace(model, reconciler.operator_namespace)
    name = discovery_name(model)
    job = await reconciler.live(cluster, "Job", namespace, name)
    result = await reconciler.live(cluster, "ConfigMap", namespace, name)
    if job is not None and not discovery_current(model, job):
        await reconciler.delete(cluster, "Job", namespace, name)
        if result is not None:
            await reconciler.delete(cluster, "ConfigMap", namespace, name)
        return model_status(model, None, None)  # the Job's deletion queues the model again
    rendered = render_discovery_job(model, config, reconciler.operator_namespace)
    job = await reconciler.apply_job(cluster, model, rendered, config)
    if result is not None and _inputs(result) not in (None, discovery_inputs(model)):
        result = None  # another run's result
    if result is not None:
        try:
            profiles = profiles_from_discovery(model, as_mapping(result.get("data")), config)
        except DiscoveryResultError:
            profiles = None  # the status says why
        if profiles is not None:
            for profile in profiles:
                await reconciler.apply(cluster, model, profile, config)
            profile_set = profile_set_for(model, profiles, config, operator_namespace=reconciler.operator_namespace)
            await reconciler.apply(cluster, model, profile_set, config)
    return model_status(model, job, result)


async def reconcile_profile(
    reconciler: AimConsumerReconciler, cluster: AimWatch, profile: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    return profile_status(profile)


async def reconcile_profile_set(
    reconciler: AimConsumerReconciler, cluster: AimWatch, profile_set: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    for profile in derive_profiles(profile_set, config):
        await reconciler.apply(cluster, profile_set, profile, config)
    return profile_set_status(profile_set)


async def reconcile_model_source(
    reconciler: AimConsumerReconciler, cluster: AimWatch, source: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    spec = scanning_spec(source)
    if spec is not None:
        return await reconcile_scanning_source(reconciler, cluster, source, spec, config)
    created = 0
    for model in cluster_models_for(source, config):
        if await reconciler.apply(cluster, source, model, config) is not None:
            created += 1
    return model_source_status(source, created)


def _has_reason(obj: Mapping[str, Any], reason: str) -> bool:
    conditions = as_mapping(obj.get("status")).get("conditions") or ()
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("reason") == reason for c in conditions)


def _inputs(obj: Mapping[str, Any]) -> str | None:
    value = as_mapping(as_mapping(obj.get("metadata")).get("annotations")).get(INPUTS_ANNOTATION)
    return value if isinstance(value, str) else None
