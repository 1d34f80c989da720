"""Render what serves an AIMService: its KServe InferenceService and, when asked for, its model-cache PVC.

InferenceService (`serving.kserve.io/v1beta1`), same name and namespace as the AIMService:

- Labels `app.kubernetes.io/component: inference`, `app.kubernetes.io/managed-by: omectl`,
  `aim.eai.amd.com/service: <name>` (`omectl.core.aim.meta`); the autoscaler annotations and
  `prometheus.kserve.io/port: "8000"` (`omectl.core.aim.autoscaling`). Owned by the AIMService.
- Predictor: `minReplicas`, `maxReplicas` and `autoScaling` as `omectl.core.aim.autoscaling` says (a fixed
  `spec.replicas`, default 1, or a v1alpha1 service's autoscaling). `imagePullSecrets` and `serviceAccountName`
  of a service written in v1alpha1 (carried in its annotation), as upstream sets them.
- Container `kserve-container`: the image (`model_image`), env by precedence (`omectl.core.aim.env.inference_env`),
  port 8000 `http`, resources from `spec.resources`. A GPU (`amd.com/gpu`, `nvidia.com/gpu`) named only in
  `limits` or only in `requests` is set in both, equal, since Kubernetes schedules extended resources by their
  request and requires request = limit; without `spec.resources` the container asks for one `amd.com/gpu`. A
  service served by a selected template (v1alpha1) takes the template's GPU, resources, labels and node affinity
  instead (`core.aim.template_serving`), its own `spec.resources` over them.
- Volumes: `dshm` (memory-backed emptyDir, 8Gi) at `/dev/shm`; with a model cache, its PVC at `/workspace/cache`.

Image (`model_image`): an image the controller resolved from the service's AIMModel / AIMClusterModel (that model's
`spec.image`: for a service with a custom model, and for one written in v1alpha1 that selects a template, as
upstream serves its model's image), else `spec.model.image`, else a PLACEHOLDER derived from the name:
`docker.io/amdenterpriseai/aim-<spec.model.name>:latest` (AIM's public image naming; a stand-in until the model is
resolved, so a render never fails for want of an image).

Model cache (our minimal design; upstream AIMService creates no PVC): `spec.storage.size` (a quantity such as
`200Gi`) asks for a PVC `<service>-model-cache` of that size, access modes `spec.storage.accessModes` (default
`[ReadWriteMany]`, so every replica mounts it), storage class = `spec.storage.storageClassName` > the resolved
config's `storage.defaultStorageClassName` > unset (the cluster's default class). No size, no PVC.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.autoscaling import autoscaling_annotations, predictor_autoscaling, replicas_of
from omectl.core.aim.env import INFERENCE_CACHE_PATH, inference_env
from omectl.core.aim.meta import child_labels, name_of, namespace_of, owner_reference
from omectl.core.aim.template_serving import (
    gpus_on_both_sides,
    template_labels,
    template_node_affinity,
    template_resources,
)
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_mapping
from omectl.core.layering import copy_json

KSERVE_API_VERSION: Final = "serving.kserve.io/v1beta1"
INFERENCE_SERVICE_KIND: Final = "InferenceService"
CONTAINER_NAME: Final = "kserve-container"
SHARED_MEMORY_VOLUME: Final = "dshm"
CONTAINER_PORT: Final = 8000
INFERENCE_COMPONENT: Final = "inference"
MODEL_CACHE_COMPONENT: Final = "model-cache"
MODEL_CACHE_VOLUME: Final = "model-cache"
PLACEHOLDER_IMAGE_REPOSITORY: Final = "docker.io/amdenterpriseai"
DEFAULT_GPU_RESOURCE: Final = "amd.com/gpu"
DEFAULT_CACHE_ACCESS_MODES: Final = ("ReadWriteMany",)
SHM_SIZE: Final = "8Gi"


def inference_service_name(service: Mapping[str, Any]) -> str:
    return name_of(service)


def model_cache_pvc_name(service: Mapping[str, Any]) -> str:
    return f"{name_of(service)}-model-cache"


def names_model(service: Mapping[str, Any]) -> bool:
    """Whether the service names a model (`spec.model.name` or `spec.model.image`); the CRD allows one with no spec."""
    model = as_mapping(_spec(service).get("model"))
    return any(isinstance(model.get(key), str) and model.get(key) for key in ("name", "image"))


def model_image(service: Mapping[str, Any], resolved_image: str | None = None) -> str:
    """The serving image: `resolved_image` > `spec.model.image` > the placeholder for `spec.model.name`."""
    if resolved_image:
        return resolved_image
    model = as_mapping(_spec(service).get("model"))
    image = model.get("image")
    if isinstance(image, str) and image:
        return image
    name = model.get("name")
    if isinstance(name, str) and name:
        return f"{PLACEHOLDER_IMAGE_REPOSITORY}/aim-{name}:latest"
    raise ValueError(f"AIMService {name_of(service)!r} names no model (spec.model.name or spec.model.image)")


def container_resources(service: Mapping[str, Any]) -> dict[str, Any]:
    """`spec.resources` with every GPU in both requests and limits; one `amd.com/gpu` when none is given."""
    given = _spec(service).get("resources")
    if not isinstance(given, Mapping) or not given:
        return {"requests": {DEFAULT_GPU_RESOURCE: "1"}, "limits": {DEFAULT_GPU_RESOURCE: "1"}}
    resources: dict[str, Any] = copy_json(given)
    requests, limits = gpus_on_both_sides(resources)
    for field, values in (("requests", requests), ("limits", limits)):
        if values:
            resources[field] = values
    return resources


def storage_class_name(own: Any, config: Mapping[str, Any]) -> str | None:
    """A child's storage class: its own `spec.storageClassName` > the config's `storage.defaultStorageClassName` >
    None (the cluster's default class)."""
    if isinstance(own, str) and own:
        return own
    default = as_mapping(config.get("storage")).get("defaultStorageClassName")
    return default if isinstance(default, str) and default else None


def render_model_cache_pvc(service: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any] | None:
    """The service's model-cache PVC, or None when `spec.storage.size` does not ask for one."""
    storage = as_mapping(_spec(service).get("storage"))
    size = storage.get("size")
    if not isinstance(size, str | int) or size == "":
        return None
    modes = storage.get("accessModes")
    spec: dict[str, Any] = {
        "accessModes": list(modes) if isinstance(modes, list) and modes else list(DEFAULT_CACHE_ACCESS_MODES),
        "resources": {"requests": {"storage": str(size)}},
    }
    storage_class = storage_class_name(storage.get("storageClassName"), config)
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": model_cache_pvc_name(service),
            "namespace": namespace_of(service),
            "labels": child_labels(service, MODEL_CACHE_COMPONENT),
            "ownerReferences": [owner_reference(service)],
        },
        "spec": spec,
    }


def render_inference_service(
    service: Mapping[str, Any],
    config: Mapping[str, Any],
    *,
    profile: Mapping[str, Any] | None = None,
    resolved_image: str | None = None,
    template: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The KServe InferenceService serving `service` (module docstring). `config` is the resolved runtime config,
    `profile` the AIMProfile it is built from (its env layers), when there is one; `template` the Ready template a
    service written in v1alpha1 selects (its env layers, and `core.aim.template_serving`'s resources, labels and
    node affinity)."""
    replicas = replicas_of(service)
    mounts: list[dict[str, Any]] = [{"name": SHARED_MEMORY_VOLUME, "mountPath": "/dev/shm"}]
    volumes: list[dict[str, Any]] = [
        {"name": SHARED_MEMORY_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}
    ]
    if render_model_cache_pvc(service, config) is not None:
        mounts.append({"name": MODEL_CACHE_VOLUME, "mountPath": INFERENCE_CACHE_PATH})
        volumes.append(
            {"name": MODEL_CACHE_VOLUME, "persistentVolumeClaim": {"claimName": model_cache_pvc_name(service)}}
        )
    container = {
        "name": CONTAINER_NAME,
        "image": model_image(service, resolved_image),
        "env": inference_env(service, config, profile, template),
        "ports": [{"name": "http", "containerPort": CONTAINER_PORT, "protocol": "TCP"}],
        "resources": container_resources(service) if template is None else template_resources(service, template),
        "volumeMounts": mounts,
    }
    predictor: dict[str, Any] = {
        "minReplicas": replicas.minimum,
        "maxReplicas": replicas.maximum,
        "containers": [container],
        "volumes": volumes,
    }
    autoscaling = predictor_autoscaling(replicas)
    if autoscaling is not None:
        predictor["autoScaling"] = autoscaling
    carried = v1alpha1_spec(service)  # v1alpha2 has neither field: a service written in v1alpha1 carries them
    pull_secrets = carried.get("imagePullSecrets")
    if isinstance(pull_secrets, list) and pull_secrets:
        predictor["imagePullSecrets"] = copy_json(pull_secrets)
    account = carried.get("serviceAccountName")
    if isinstance(account, str) and account:
        predictor["serviceAccountName"] = account
    affinity = template_node_affinity(template) if template is not None else None
    if affinity is not None:
        predictor["affinity"] = {"nodeAffinity": affinity}
    annotations = autoscaling_annotations(inference_service_name(service), replicas, CONTAINER_PORT)
    return {
        "apiVersion": KSERVE_API_VERSION,
        "kind": INFERENCE_SERVICE_KIND,
        "metadata": {
            "name": inference_service_name(service),
            "namespace": namespace_of(service),
            "labels": {
                **(template_labels(template) if template is not None else {}),
                **child_labels(service, INFERENCE_COMPONENT),
            },
            "annotations": annotations,
            "ownerReferences": [owner_reference(service)],
        },
        "spec": {"predictor": predictor},
    }


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(obj.get("spec"))
