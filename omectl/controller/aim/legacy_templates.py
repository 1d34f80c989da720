"""A service template's reconcile step (AIMServiceTemplate, AIMClusterServiceTemplate; docs/aim-resources.md, "The
legacy template path"): the decisions are `omectl.core.aim.legacy.templates`, this module reads what they need and
applies what they render.

1. The model (`model_component`) from the v1alpha2 model informers; the GPUs (`gpu_component`) from the Nodes.
2. Inline model sources: the profile and hardware of the spec. Otherwise, unless the status already holds a
   discovery for the current spec and nothing blocks it (a missing or imageless model, a GPU nobody has), the
   discovery Job is applied (`render_discovery_job`) and, once it completed, its result ConfigMap parsed
   (`parse_template_result`) into the status.
3. A namespaced template with caching that is Ready applies its AIMTemplateCache (`render_template_cache`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omectl.controller.aim.legacy_outcome import Outcome
from omectl.controller.aim.service import apply_propagated
from omectl.core.aim.discovery import DiscoveryResultError
from omectl.core.aim.legacy.discovery import parse_template_result, render_discovery_job
from omectl.core.aim.legacy.gpus import gpu_component, gpu_inventory
from omectl.core.aim.legacy.status import Component
from omectl.core.aim.legacy.templates import (
    AWAITING_DISCOVERY,
    AWAITING_DISCOVERY_MESSAGE,
    DISCOVERED,
    DISCOVERY_COMPLETE,
    DISCOVERY_COMPLETE_MESSAGE,
    DISCOVERY_FAILED,
    INLINE_MESSAGE,
    INLINE_MODEL_SOURCES,
    already_discovered,
    caching_enabled,
    discovered_condition,
    discovery_spec_hash,
    inline_sources,
    job_component,
    model_component,
    model_kind,
    model_name,
    profile_fields,
    render_template_cache,
    resolved_model,
    spec_profile,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.resolution import Resolution
from omectl.core.jsonish import as_list, as_mapping
from omectl.kube.resources import AIM_TEMPLATE_CACHES

if TYPE_CHECKING:
    from omectl.controller.aim.legacy import LegacyReconciler
    from omectl.controller.aim.watch import AimWatch


async def reconcile_template(
    reconciler: LegacyReconciler, cluster: AimWatch, template: dict[str, Any], resolution: Resolution
) -> Outcome:
    config = resolution.config
    namespace = "" if model_kind(template) == "AIMClusterModel" else namespace_of(template)
    model = cluster.consumers.kinds[model_kind(template)].cache.get(namespace, model_name(template))
    components: list[Component] = [model_component(template, model)]
    fields: dict[str, Any] = {}
    if model is not None:
        fields["resolvedModel"] = resolved_model(model)
    inventory = gpu_inventory(cluster.legacy.nodes.cache.list())
    gpu = gpu_component(template, inventory)
    if gpu is not None:
        components.append(gpu)
    blocked = any(c.state != "Ready" for c in components)
    conditions: list[dict[str, str]] = []
    sources = inline_sources(template)
    if sources:
        fields.update(profile_fields(template, spec_profile(template), sources, inventory, discovered=False))
        fields["discovery"] = None
        conditions.append(discovered_condition(True, INLINE_MODEL_SOURCES, INLINE_MESSAGE))
    elif model is not None and already_discovered(template, model):
        conditions.append(_previous(template, DISCOVERED))
    elif blocked or model is None:
        conditions.append(discovered_condition(False, AWAITING_DISCOVERY, AWAITING_DISCOVERY_MESSAGE))
    else:
        step = await _discover(reconciler, cluster, template, model, config, inventory)
        components.append(step.components[0])
        conditions += step.conditions
        fields.update(step.fields)
    ready = all(c.state == "Ready" for c in components)
    known = sources or as_list((template.get("status") or {}).get("modelSources")) or fields.get("modelSources")
    if caching_enabled(template) and ready and known:
        cache = render_template_cache(template, config)
        live = await reconciler.live(cluster, "AIMTemplateCache", namespace_of(template), name_of(template))
        _, wrote = await apply_propagated(cluster, template, cache, live, config, AIM_TEMPLATE_CACHES)
        reconciler.writes += wrote
    return Outcome(tuple(components), tuple(conditions), fields)


async def _discover(
    reconciler: LegacyReconciler,
    cluster: AimWatch,
    template: dict[str, Any],
    model: Mapping[str, Any],
    config: Mapping[str, Any],
    inventory: Mapping[str, Any],
) -> Outcome:
    """The discovery Job applied, and how it stands: one `DiscoveryJob` component, the `Discovered` condition and
    the status fields (the profile once its result is there)."""
    rendered = render_discovery_job(template, model, config, reconciler.operator_namespace)
    namespace, name = namespace_of(rendered), name_of(rendered)
    job = await reconciler.children.apply_job(cluster, template, rendered, config)
    fields: dict[str, Any] = {"discoveryJob": {"name": name, "namespace": namespace}}
    component = job_component(job)
    if component.state == "Failed":
        return Outcome((component,), (discovered_condition(False, DISCOVERY_FAILED, component.message),), fields)
    awaiting = (discovered_condition(False, AWAITING_DISCOVERY, AWAITING_DISCOVERY_MESSAGE),)
    if component.state != "Ready":
        return Outcome((component,), awaiting, fields)
    result = await reconciler.children.live(cluster, "ConfigMap", namespace, name)
    if result is None:
        waiting = Component("DiscoveryJob", "Progressing", "DiscoveryResultPending", "Waiting for the discovery result")
        return Outcome((waiting,), awaiting, fields)
    try:
        found = parse_template_result(as_mapping(result.get("data")), template, model)
    except DiscoveryResultError as error:
        invalid = Component("DiscoveryJob", "Failed", "DiscoveryResultInvalid", str(error))
        return Outcome((invalid,), (discovered_condition(False, DISCOVERY_FAILED, str(error)),), fields)
    fields.update(profile_fields(template, found.profile, found.model_sources, inventory, discovered=True))
    fields["discovery"] = {"specHash": discovery_spec_hash(template, model)}
    complete = discovered_condition(True, DISCOVERY_COMPLETE, DISCOVERY_COMPLETE_MESSAGE)
    return Outcome((component,), (complete,), fields)


def _previous(template: Mapping[str, Any], condition_type: str) -> dict[str, str]:
    for condition in as_list(as_mapping(template.get("status")).get("conditions")):
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return {k: str(condition[k]) for k in ("type", "status", "reason", "message") if k in condition}
    return discovered_condition(True, DISCOVERY_COMPLETE, DISCOVERY_COMPLETE_MESSAGE)
