"""What a service's selected (Ready) template gives its InferenceService beside the env (docs/aim-versions.md, "What
the selected template gives"), as upstream's aimservice controller builds its InferenceService:

- **Resources** (`template_resources`): the GPU count and resource name of the template's
  `status.resolvedHardware.gpu` (`requests`, `resourceName`; else its `spec.hardware.gpu`, for a template whose
  status has none; the resource `amd.com/gpu` by default); for a count n > 0, requests `cpu: 4n`, `memory: 32n Gi`
  and the GPU n, limits `memory: 48n Gi` and the GPU n; then the template's `spec.resources`, then the service's
  `spec.resources` (a GPU given on one side only set on both, as for every service), each resource overriding.
- **Labels** (`template_labels`): `aim.eai.amd.com/template` (the template's name), `aim.eai.amd.com/model`
  (its `spec.modelName`), `aim.eai.amd.com/metric` and `aim.eai.amd.com/precision` (its profile's), each made a
  label value as upstream makes it (lower case, runs of other characters than `a-z0-9._-` one `_`, trimmed, at most
  63 characters).
- **Node affinity** (`template_node_affinity`): the template's `status.resolvedNodeAffinity`, as the predictor's
  `affinity.nodeAffinity`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.legacy.kinds import TEMPLATE_LABEL
from omectl.core.aim.meta import sanitized_label_value
from omectl.core.jsonish import as_mapping

DEFAULT_GPU_RESOURCE: Final = "amd.com/gpu"
GPU_RESOURCES: Final = ("amd.com/gpu", "nvidia.com/gpu")
MODEL_LABEL: Final = "aim.eai.amd.com/model"
METRIC_LABEL: Final = "aim.eai.amd.com/metric"
PRECISION_LABEL: Final = "aim.eai.amd.com/precision"


def template_gpu(template: Mapping[str, Any]) -> tuple[int, str]:
    """(count, resource name) of the template's GPU: 0 when it needs none."""
    status_gpu = as_mapping(as_mapping(as_mapping(template.get("status")).get("resolvedHardware")).get("gpu"))
    spec_gpu = as_mapping(as_mapping(as_mapping(template.get("spec")).get("hardware")).get("gpu"))
    for gpu in (status_gpu, spec_gpu):
        count = gpu.get("requests")
        if isinstance(count, int) and not isinstance(count, bool) and count > 0:
            resource = gpu.get("resourceName")
            return count, resource if isinstance(resource, str) and resource else DEFAULT_GPU_RESOURCE
    return 0, DEFAULT_GPU_RESOURCE


def template_resources(service: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    """The inference container's resources for a service served by `template` (module docstring)."""
    count, resource = template_gpu(template)
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if count > 0:
        requests.update({"cpu": str(4 * count), "memory": f"{32 * count}Gi", resource: str(count)})
        limits.update({"memory": f"{48 * count}Gi", resource: str(count)})
    template_own = as_mapping(as_mapping(template.get("spec")).get("resources"))
    service_own = _both_sides(as_mapping(as_mapping(service.get("spec")).get("resources")))
    for own in (template_own, service_own):
        requests.update(copy.deepcopy(dict(as_mapping(own.get("requests")))))
        limits.update(copy.deepcopy(dict(as_mapping(own.get("limits")))))
    out: dict[str, Any] = {}
    if requests:
        out["requests"] = requests
    if limits:
        out["limits"] = limits
    claims = service_own.get("claims")
    if isinstance(claims, list) and claims:
        out["claims"] = copy.deepcopy(claims)
    return out


def template_labels(template: Mapping[str, Any]) -> dict[str, str]:
    """The labels upstream puts on the InferenceService of a service served by `template`."""
    metadata = as_mapping(template.get("metadata"))
    profile = as_mapping(as_mapping(as_mapping(template.get("status")).get("profile")).get("metadata"))
    values = {
        TEMPLATE_LABEL: metadata.get("name"),
        MODEL_LABEL: as_mapping(template.get("spec")).get("modelName"),
        METRIC_LABEL: profile.get("metric"),
        PRECISION_LABEL: profile.get("precision"),
    }
    labels: dict[str, str] = {}
    for key, value in values.items():
        text = sanitized_label_value(value) if isinstance(value, str) else ""
        if text:
            labels[key] = text
    return labels


def template_node_affinity(template: Mapping[str, Any]) -> dict[str, Any] | None:
    affinity = as_mapping(template.get("status")).get("resolvedNodeAffinity")
    return copy.deepcopy(dict(affinity)) if isinstance(affinity, Mapping) and affinity else None


def gpus_on_both_sides(resources: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The requests and limits of `resources`, a GPU given on one side only set on the other too: Kubernetes schedules
    an extended resource by its request and requires request = limit."""
    requests = dict(as_mapping(resources.get("requests")))
    limits = dict(as_mapping(resources.get("limits")))
    for gpu in GPU_RESOURCES:
        if gpu in limits and gpu not in requests:
            requests[gpu] = limits[gpu]
        elif gpu in requests and gpu not in limits:
            limits[gpu] = requests[gpu]
    return requests, limits


def _both_sides(resources: Mapping[str, Any]) -> Mapping[str, Any]:
    requests, limits = gpus_on_both_sides(resources)
    return {**resources, "requests": requests, "limits": limits}
