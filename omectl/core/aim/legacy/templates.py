"""What a service template's reconcile decides (docs/aim-resources.md, "The legacy template path"), as upstream's
template controller decides it: its model, its hardware, whether it runs discovery, what its status says, and its
template cache.

- **Model** (`model_component`): the AIMModel of `spec.modelName` in the template's namespace, the AIMClusterModel
  for a cluster template. Missing: a missing reference (`ReferenceNotFound`, `<Kind> <name> not found`: the template
  fails until it appears). No `spec.image`: Failed / `ImageNotSpecified`. A model that is Failed or Degraded
  passes that on (`ModelFailed`), unless only its templates fail it (no component condition `<X>Ready` of the model
  is False but `Ready` and its `(Cluster)ServiceTemplatesReady`): upstream ignores that, or a model and its templates
  would keep each other failed. Else Ready / `ModelFound`. A cluster model's reasons are upstream's
  `ClusterModelFailed` and `ClusterModelFound`. Nothing is applied until the model is there with an image.
- **Hardware** (`omectl.core.aim.legacy.gpus`): a template that requires a GPU nobody has is NotAvailable and
  applies nothing.
- **Model sources given inline** (`spec.modelSources`): no discovery; Ready with the profile and hardware of the spec
  (`spec_profile`, `resolved_hardware`) and `Discovered=True` / `InlineModelSources`.
- **Discovery** otherwise (`omectl.core.aim.legacy.discovery`): its result becomes `status.profile` and
  `status.modelSources`, its profile's GPU the resolved hardware; `Discovered=True` / `DiscoveryComplete`, and
  `status.discovery.specHash` records what it ran for (`discovery_spec_hash`: model name, image, metric, precision,
  GPU, profile id, upstream's). A template whose status holds a discovery for its current spec hash is not
  discovered again.
- **Cache** (`render_template_cache`): a namespaced template with `spec.caching.enabled`, once Ready, gets the
  AIMTemplateCache of its name (upstream's), owned by it, `templateScope: Namespace`, `env` = `spec.caching.env`,
  its `runtimeConfigName`, and its labels propagated under its config.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.consumers import owner_reference, spec_of, status_of
from omectl.core.aim.legacy.gpus import GpuInfo, gpu_spec, node_affinity
from omectl.core.aim.legacy.kinds import (
    AIM_V1ALPHA1,
    SCOPE_NAMESPACE,
    TEMPLATE_CACHE,
    is_cluster_template,
    propagate_legacy_edge,
)
from omectl.core.aim.legacy.status import Component
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.resolution import REFERENCE_NOT_FOUND
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

MODEL: Final = "AIMModel"
CLUSTER_MODEL: Final = "AIMClusterModel"
DISCOVERED: Final = "Discovered"
INLINE_MODEL_SOURCES: Final = "InlineModelSources"
INLINE_MESSAGE: Final = "Model sources provided in-line in spec"
DISCOVERY_COMPLETE: Final = "DiscoveryComplete"
DISCOVERY_COMPLETE_MESSAGE: Final = "Discovery job completed successfully"
AWAITING_DISCOVERY: Final = "AwaitingDiscovery"
AWAITING_DISCOVERY_MESSAGE: Final = "Waiting for discovery to complete"
DISCOVERY_FAILED: Final = "DiscoveryFailed"


def model_kind(template: Mapping[str, Any]) -> str:
    return CLUSTER_MODEL if is_cluster_template(template) else MODEL


def model_name(template: Mapping[str, Any]) -> str:
    return str(spec_of(template).get("modelName") or "")


def model_component(template: Mapping[str, Any], model: Mapping[str, Any] | None) -> Component:
    """The `Model` (`ClusterModel` for a cluster template) component (module docstring)."""
    kind = model_kind(template)
    component = "ClusterModel" if kind == CLUSTER_MODEL else "Model"
    if model is None:
        message = f"{kind} {model_name(template)} not found"
        return Component(component, "Failed", REFERENCE_NOT_FOUND, message, missing_reference=True)
    if not spec_of(model).get("image"):
        subject = "Cluster model" if kind == CLUSTER_MODEL else "Model"
        return Component(component, "Failed", "ImageNotSpecified", f"{subject} does not specify an image")
    state = status_of(model).get("status")
    templates = "ClusterServiceTemplatesReady" if kind == CLUSTER_MODEL else "ServiceTemplatesReady"
    if state in ("Failed", "Degraded") and _fails_beyond_its_templates(model, templates):
        return Component(component, state, f"{component}Failed", f"{kind} is in {state} state")
    return Component(component, "Ready", f"{component}Found", f"{kind} found with valid image")


def _fails_beyond_its_templates(model: Mapping[str, Any], templates_condition: str) -> bool:
    """Whether a component condition of the model other than its templates' is False (upstream's
    hasNonTemplateFailure; `templates_condition` is `ServiceTemplatesReady` or `ClusterServiceTemplatesReady`)."""
    for item in as_list(status_of(model).get("conditions")):
        kind = str(as_mapping(item).get("type") or "")
        if kind in ("Ready", templates_condition) or not kind.endswith("Ready"):
            continue
        if as_mapping(item).get("status") == "False":
            return True
    return False


def resolved_model(model: Mapping[str, Any]) -> dict[str, str]:
    """`status.resolvedModel` as upstream writes it: the name, and the namespace of a namespaced model."""
    ref = {"name": name_of(model)}
    if namespace_of(model):
        ref["namespace"] = namespace_of(model)
    return ref


def inline_sources(template: Mapping[str, Any]) -> list[Any]:
    return as_list(spec_of(template).get("modelSources"))


def discovery_spec_hash(template: Mapping[str, Any], model: Mapping[str, Any]) -> str:
    """What a discovery result holds for (upstream's spec hash inputs), as 16 hex digits."""
    spec = spec_of(template)
    gpu = gpu_spec(template)
    parts = [
        model_name(template),
        str(spec_of(model).get("image") or ""),
        str(spec.get("metric") or ""),
        str(spec.get("precision") or ""),
        str(gpu.get("model") or ""),
        str(gpu.get("requests") or 0),
        str(spec.get("profileId") or ""),
    ]
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


def already_discovered(template: Mapping[str, Any], model: Mapping[str, Any]) -> bool:
    """Whether the template's status holds a discovery result for its current spec (`discovery_spec_hash`)."""
    status = status_of(template)
    discovered = any(
        isinstance(c, Mapping) and c.get("type") == DISCOVERED and c.get("status") == "True"
        for c in as_list(status.get("conditions"))
    )
    spec_hash = as_mapping(status.get("discovery")).get("specHash")
    return discovered and spec_hash == discovery_spec_hash(template, model)


def spec_profile(template: Mapping[str, Any]) -> dict[str, Any]:
    """The profile of a template whose model sources are inline: its GPU count and model, metric, precision and
    type, from the spec (upstream's `buildProfileFromSpec`)."""
    spec = spec_of(template)
    gpu = gpu_spec(template)
    metadata: dict[str, Any] = {}
    if isinstance(gpu.get("requests"), int):
        metadata["gpuCount"] = gpu["requests"]
    if gpu.get("model"):
        metadata["gpu"] = gpu["model"]
    for field in ("metric", "precision", "type"):
        if spec.get(field):
            metadata[field] = spec[field]
    return {"metadata": metadata}


def resolved_hardware(template: Mapping[str, Any], profile: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`status.resolvedHardware`: the GPU count and model discovery found (the spec's when it ran not), the spec's
    resource name and minVram, the spec's CPU; None when there is none. A GPU model and a minVram together break
    the schema's rule, so with a minVram the model is left out."""
    spec_hw = as_mapping(spec_of(template).get("hardware"))
    spec_gpu = gpu_spec(template)
    if profile is not None:
        metadata = as_mapping(profile.get("metadata"))
        count, model = metadata.get("gpuCount"), metadata.get("gpu")
    else:
        count, model = spec_gpu.get("requests"), spec_gpu.get("model")
    count = count if isinstance(count, int) and not isinstance(count, bool) else 0
    model = model if isinstance(model, str) else ""
    resource = spec_gpu.get("resourceName") if isinstance(spec_gpu.get("resourceName"), str) else ""
    out: dict[str, Any] = {}
    if count > 0 or model or resource:
        gpu: dict[str, Any] = {"requests": count}
        if spec_gpu.get("minVram"):
            gpu["minVram"] = spec_gpu["minVram"]
        elif model:
            gpu["model"] = model
        if resource:
            gpu["resourceName"] = resource
        out["gpu"] = gpu
    if spec_hw.get("cpu"):
        out["cpu"] = copy_json(spec_hw["cpu"])
    return out or None


def hardware_summary(hardware: Mapping[str, Any] | None) -> str | None:
    """`2 x MI300X`, the model alone without a count, `<n> x GPU` without a model, or `CPU`."""
    if not hardware:
        return None
    gpu = as_mapping(hardware.get("gpu"))
    requests = gpu.get("requests")
    count = requests if isinstance(requests, int) else 0
    model = str(gpu.get("model") or "")
    if gpu and (count > 0 or model):
        return f"{count} x {model or 'GPU'}" if count > 0 else model
    return "CPU"


def profile_fields(
    template: Mapping[str, Any],
    profile: Mapping[str, Any],
    sources: list[Any],
    inventory: Mapping[str, GpuInfo],
    *,
    discovered: bool,
) -> dict[str, Any]:
    """The status fields of a template whose profile is known: profile, model sources, resolved hardware, its
    summary and the inference pods' node affinity (None removes a field)."""
    hardware = resolved_hardware(template, profile if discovered else None)
    return {
        "profile": copy_json(dict(profile)),
        "modelSources": copy_json(sources),
        "resolvedHardware": hardware,
        "hardwareSummary": hardware_summary(hardware),
        "resolvedNodeAffinity": node_affinity(template, inventory),
    }


def discovered_condition(status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": DISCOVERED, "status": "True" if status else "False", "reason": reason, "message": message}


def job_component(job: Mapping[str, Any] | None) -> Component:
    """The `DiscoveryJob` component from the Job's conditions."""
    if job is None:
        return Component("DiscoveryJob", "Pending", "JobNotCreated", "Discovery job has not been created yet")
    for condition in as_list(status_of(job).get("conditions")):
        condition = as_mapping(condition)
        if condition.get("status") != "True":
            continue
        if condition.get("type") == "Complete":
            return Component("DiscoveryJob", "Ready", "JobSucceeded", "Discovery job completed")
        if condition.get("type") == "Failed":
            why = str(condition.get("message") or condition.get("reason") or "Unknown failure")
            return Component("DiscoveryJob", "Failed", DISCOVERY_FAILED, f"Discovery job failed: {why}")
    return Component("DiscoveryJob", "Progressing", "JobRunning", "Discovery job is running")


# --- the template's cache ----------------------------------------------------------------------------------------


def caching_enabled(template: Mapping[str, Any]) -> bool:
    return not is_cluster_template(template) and as_mapping(spec_of(template).get("caching")).get("enabled") is True


def render_template_cache(template: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """The AIMTemplateCache of a namespaced template with caching (module docstring)."""
    spec: dict[str, Any] = {"templateName": name_of(template), "templateScope": SCOPE_NAMESPACE}
    env = as_list(as_mapping(spec_of(template).get("caching")).get("env"))
    if env:
        spec["env"] = copy_json(env)
    config_name = spec_of(template).get("runtimeConfigName")
    if isinstance(config_name, str) and config_name:
        spec["runtimeConfigName"] = config_name
    cache = {
        "apiVersion": AIM_V1ALPHA1,
        "kind": TEMPLATE_CACHE,
        "metadata": {
            "name": name_of(template),
            "namespace": namespace_of(template),
            "ownerReferences": [owner_reference(template)],
        },
        "spec": spec,
    }
    return propagate_legacy_edge(template, cache, config)
