"""The AIMServiceTemplates (AIMClusterServiceTemplates for an AIMClusterModel) a model written in v1alpha1 makes, as
upstream's model controller makes them (docs/aim-resources.md, "Templates of a model").

The model is read in v1alpha1 (`v1alpha1_spec`: the stored v1alpha2 object converted, so the fields carried in its
annotation are in place). A model is on this path (`on_template_path`) when it was written in v1alpha1
(`versions.written_in_v1alpha1`: the annotation `aim.eai.amd.com/v1alpha1-fields`, which every write in v1alpha1
leaves, even with only `spec.image`, while its spec is the one that write stored) or has the simulated image metadata
below; a model written in v1alpha2 (its spec too, since) gets no templates and no template conditions.

Image metadata (`image_metadata`), upstream's order: `spec.imageMetadata` (given in the spec, e.g. air-gapped); else,
unless `spec.discovery.extractMetadata` is false, what the image's labels say: read from the image's registry by the
controller (`reads_registry`; `omectl.controller.aim.image_metadata`) and parsed here (`from_labels`,
`image_labels.parse_image_labels`), or the reason they could not be (`unreadable`). In a simulated cluster the
model's annotation `sim.omectl.io/image-metadata` (JSON, upstream's `ImageMetadata`: `{"model": {"canonicalName":
..., "recommendedDeployments": [{"gpuModel", "gpuCount", "metric", "precision", "profileId"}]}}`) stands in for the
labels when given (no registry is read), as the model's `sim.omectl.io/discovery-result` is what its image's
discovery prints.

Whether templates are expected (`expects_templates`): not when `spec.discovery.createServiceTemplates` is false;
always for a custom model (`spec.modelSources` given); else unknown while the metadata is, and expected when it
recommends deployments or the model has `customTemplates`.

Templates (`render_templates`): a custom model's are its custom templates only (or one made from `spec.custom` when
it lists none); an image model's are one per recommended deployment (`template_name`) and, added to those, its custom
templates. Each is owned by the model (controller reference, so deleting the model deletes them) and labelled
`aim.eai.amd.com/model: <model>` and `aim.eai.amd.com/origin: auto-generated` (a custom one also
`aim.eai.amd.com/template.alias: <its name>`), with the model's labels propagated under the model's config. A
deployment's template: `modelName`, the model's `imagePullSecrets` and `serviceAccountName`, the deployment's
`metric`, `precision`, `profileId`, and `hardware.gpu` {`requests`: gpuCount, `model`: gpuModel} when it gives both.
A custom template: `modelName`, the model's `modelSources`, `imagePullSecrets` and `serviceAccountName`, `type` (the
template's, else `spec.custom.type`, else `unoptimized`), `hardware` (`spec.custom.hardware` with the template's
non-empty GPU fields and CPU over it), `resources` with the CPU of that hardware, `metric` and `precision` of its
profile, and on an AIMServiceTemplate (not on a cluster one, as upstream) `env`: the model's `spec.env` with the
template's over it by name. Templates no longer rendered (a deployment gone from the metadata) are left as they are,
as upstream leaves them, until the model goes.

Conditions of a model written in v1alpha2 with the simulated metadata (`template_conditions`; a model written in
v1alpha1 gets its whole status from `omectl.core.aim.legacy.model_status` instead): `ImageMetadataReady` (True /
`ImageMetadataFound` when the metadata names a `canonicalName`, else `ImageFound`; False with the reason of
`unreadable`, `ImageMetadataInvalid` for labels that do not parse, or `ImageMetadataUnavailable` while nothing was
read) and `ServiceTemplatesReady` (`ClusterServiceTemplatesReady` for a cluster model): the aggregate of the templates
whose `spec.modelName` is the model, in its namespace (`template_health`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.consumers import CLUSTER_MODEL, owner_reference, spec_of, text
from omectl.core.aim.env import merge_env
from omectl.core.aim.legacy.image_labels import parse_image_labels
from omectl.core.aim.legacy.kinds import (
    AIM_V1ALPHA1,
    CLUSTER_SERVICE_TEMPLATE,
    SERVICE_TEMPLATE,
    propagate_legacy_edge,
)
from omectl.core.aim.legacy.template_names import custom_template_name, template_name
from omectl.core.aim.meta import label_value, name_of, namespace_of
from omectl.core.aim.versions import convert, written_in_v1alpha1
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

SIMULATED_IMAGE_METADATA: Final = "sim.omectl.io/image-metadata"
"""On an AIMModel / AIMClusterModel in a simulated cluster: its image's metadata, as upstream reads it from the
image's labels (JSON)."""
MODEL_LABEL: Final = "aim.eai.amd.com/model"
ORIGIN_LABEL: Final = "aim.eai.amd.com/origin"
AUTO_GENERATED: Final = "auto-generated"
TEMPLATE_ALIAS_LABEL: Final = "aim.eai.amd.com/template.alias"
UNOPTIMIZED: Final = "unoptimized"

IMAGE_METADATA_READY: Final = "ImageMetadataReady"
SERVICE_TEMPLATES_READY: Final = "ServiceTemplatesReady"
CLUSTER_SERVICE_TEMPLATES_READY: Final = "ClusterServiceTemplatesReady"


@dataclass(frozen=True)
class ImageMetadata:
    """The model's image metadata: `value` (None when unknown), where it came from, or why it is unusable."""

    value: Mapping[str, Any] | None
    source: str  # "spec", "image" (its labels), "none" (unknown or not extracted), "invalid", "unreadable"
    error: str | None = None
    reason: str = "ImageMetadataInvalid"  # the ImageMetadataReady reason when invalid or unreadable


@dataclass(frozen=True)
class Health:
    """The aggregate state of a model's templates, upstream's words."""

    state: str
    reason: str
    message: str


def v1alpha1_spec(model: Mapping[str, Any]) -> dict[str, Any]:
    """The model's spec as a v1alpha1 client reads it (the stored object converted; `{}` when it cannot be)."""
    try:
        converted = convert(model, AIM_V1ALPHA1)
    except ValueError:
        return {}
    return dict(as_mapping(converted.get("spec")))


def on_template_path(model: Mapping[str, Any]) -> bool:
    """Whether the model is one whose templates omectl makes (module docstring)."""
    return written_in_v1alpha1(model) or isinstance(_annotations(model).get(SIMULATED_IMAGE_METADATA), str)


def _discovery_flag(spec: Mapping[str, Any], flag: str) -> bool:
    value = as_mapping(spec.get("discovery")).get(flag)
    return value if isinstance(value, bool) else True


def image_metadata(model: Mapping[str, Any], spec: Mapping[str, Any]) -> ImageMetadata:
    """The model's image metadata, `spec` its v1alpha1 spec (module docstring)."""
    given = spec.get("imageMetadata")
    if isinstance(given, Mapping):
        return ImageMetadata(given, "spec")
    if not _discovery_flag(spec, "extractMetadata"):
        return ImageMetadata(None, "none")
    raw = _annotations(model).get(SIMULATED_IMAGE_METADATA)
    if not isinstance(raw, str):
        return ImageMetadata(None, "none")
    try:
        parsed = json.loads(raw)
    except ValueError as error:
        return ImageMetadata(None, "invalid", f"{SIMULATED_IMAGE_METADATA} is not JSON: {error}")
    if not isinstance(parsed, Mapping):
        return ImageMetadata(None, "invalid", f"{SIMULATED_IMAGE_METADATA} must be a JSON object")
    return ImageMetadata(parsed, "image")


def reads_registry(model: Mapping[str, Any], spec: Mapping[str, Any]) -> bool:
    """Whether the model's metadata is its image's labels read from its registry: on the template path, no
    `spec.imageMetadata`, extraction on, an image named, and no simulated labels in the annotation."""
    return (
        on_template_path(model)
        and not isinstance(spec.get("imageMetadata"), Mapping)
        and _discovery_flag(spec, "extractMetadata")
        and text(spec.get("image")) is not None
        and not isinstance(_annotations(model).get(SIMULATED_IMAGE_METADATA), str)
    )


def from_labels(labels: Mapping[str, str]) -> ImageMetadata:
    """The metadata of an image with these config labels (`parse_image_labels`), or why they are unusable."""
    try:
        return ImageMetadata(parse_image_labels(labels), "image")
    except ValueError as error:
        return ImageMetadata(None, "invalid", f"failed to parse image labels: {error}")


def unreadable(reason: str, message: str) -> ImageMetadata:
    """The image's metadata could not be read (its registry, its reference or its pull secrets): `reason`."""
    return ImageMetadata(None, "unreadable", message, reason)


def recommended_deployments(metadata: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    deployments = as_mapping(as_mapping(metadata).get("model")).get("recommendedDeployments")
    return [d for d in as_list(deployments) if isinstance(d, Mapping)]


def is_custom_model(spec: Mapping[str, Any]) -> bool:
    return bool(as_list(spec.get("modelSources")))


def expects_templates(spec: Mapping[str, Any], metadata: Mapping[str, Any] | None) -> bool | None:
    """True, False, or None while the image's metadata is unknown (module docstring)."""
    if not _discovery_flag(spec, "createServiceTemplates"):
        return False
    if is_custom_model(spec):
        return True
    if metadata is None:
        return None
    return bool(recommended_deployments(metadata)) or bool(as_list(spec.get("customTemplates")))


def render_templates(
    model: Mapping[str, Any], spec: Mapping[str, Any], metadata: Mapping[str, Any] | None, config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The model's templates (module docstring), `spec` its v1alpha1 spec, `config` its resolved runtime config;
    none unless templates are expected. One per name (two equal deployments make one template)."""
    if not expects_templates(spec, metadata):
        return []
    rendered: list[dict[str, Any]] = []
    custom = as_list(spec.get("customTemplates"))
    if not is_custom_model(spec):
        image = text(spec.get("image")) or ""
        for deployment in recommended_deployments(metadata):
            rendered.append(_deployment_template(model, spec, image, deployment))
    if is_custom_model(spec) and not custom:
        rendered.append(_custom_template(model, spec, None, 0))
    for index, item in enumerate(custom):
        if isinstance(item, Mapping):
            rendered.append(_custom_template(model, spec, item, index))
    unique = {name_of(t): t for t in rendered}
    return [propagate_legacy_edge(model, template, config) for template in unique.values()]


def _deployment_template(
    model: Mapping[str, Any], spec: Mapping[str, Any], image: str, deployment: Mapping[str, Any]
) -> dict[str, Any]:
    out = _shared_spec(model, spec)
    for field in ("metric", "precision", "profileId"):
        value = text(deployment.get(field))
        if value is not None:
            out[field] = value
    gpu, count = text(deployment.get("gpuModel")), deployment.get("gpuCount")
    if gpu is not None and isinstance(count, int) and not isinstance(count, bool) and count > 0:
        out["hardware"] = {"gpu": {"requests": count, "model": gpu}}
    return _template(model, template_name(name_of(model), image, deployment), {}, out)


def _custom_template(
    model: Mapping[str, Any], spec: Mapping[str, Any], template: Mapping[str, Any] | None, index: int
) -> dict[str, Any]:
    custom = as_mapping(spec.get("custom"))
    own = template or {}
    out: dict[str, Any] = {"modelName": name_of(model)}
    if as_list(spec.get("modelSources")):
        out["modelSources"] = copy_json(spec["modelSources"])
    out.update({k: v for k, v in _shared_spec(model, spec).items() if k != "modelName"})
    out["type"] = text(own.get("type")) or text(custom.get("type")) or UNOPTIMIZED
    if model.get("kind") != CLUSTER_MODEL:
        env = merge_env(as_list(spec.get("env")), as_list(own.get("env")))
        if env:
            out["env"] = env
    hardware = merge_hardware(as_mapping(custom.get("hardware")) or None, as_mapping(own.get("hardware")) or None)
    if hardware is not None:
        out["hardware"] = hardware
        cpu = as_mapping(hardware.get("cpu"))
        if cpu:
            resources: dict[str, Any] = {"requests": {"cpu": copy_json(cpu.get("requests"))}}
            if cpu.get("limits") is not None:
                resources["limits"] = {"cpu": copy_json(cpu["limits"])}
            out["resources"] = resources
    profile = as_mapping(own.get("profile"))
    for field in ("metric", "precision"):
        value = text(profile.get(field))
        if value is not None:
            out[field] = value
    labels = {}
    alias = text(own.get("name"))
    if alias is not None:
        labels[TEMPLATE_ALIAS_LABEL] = label_value(alias)
    return _template(model, custom_template_name(name_of(model), template, index), labels, out)


def merge_hardware(default: Mapping[str, Any] | None, override: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """`spec.custom.hardware` with a custom template's over it, as upstream merges them: the template's GPU
    `requests`, `model` and `resourceName` where non-empty, its CPU fields over the default's."""
    if default is None or override is None:
        chosen = default if override is None else override
        return None if chosen is None else copy_json(dict(chosen))
    out: dict[str, Any] = copy_json(dict(default))
    for part in ("gpu", "cpu"):
        given = as_mapping(override.get(part))
        if not given:
            continue
        merged = dict(as_mapping(out.get(part)))
        for key, value in given.items():
            if value not in (None, "", 0):
                merged[key] = copy_json(value)
        out[part] = merged
    return out


def _shared_spec(model: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"modelName": name_of(model)}
    if as_list(spec.get("imagePullSecrets")):
        out["imagePullSecrets"] = copy_json(spec["imagePullSecrets"])
    account = text(spec.get("serviceAccountName"))
    if account is not None:
        out["serviceAccountName"] = account
    return out


def _template(model: Mapping[str, Any], name: str, labels: Mapping[str, str], spec: dict[str, Any]) -> dict[str, Any]:
    cluster = model.get("kind") == CLUSTER_MODEL
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {MODEL_LABEL: label_value(name_of(model)), ORIGIN_LABEL: AUTO_GENERATED, **labels},
        "ownerReferences": [owner_reference(model)],
    }
    if not cluster:
        metadata["namespace"] = namespace_of(model)
    return {
        "apiVersion": AIM_V1ALPHA1,
        "kind": CLUSTER_SERVICE_TEMPLATE if cluster else SERVICE_TEMPLATE,
        "metadata": metadata,
        "spec": spec,
    }


def template_health(expects: bool | None, statuses: Iterable[Any]) -> Health:
    """The aggregate of the `status.status` of the model's templates, as upstream words it."""
    counts = {"ready": 0, "progressing": 0, "failed": 0, "unavailable": 0}
    total = 0
    for status in statuses:
        total += 1
        if status == "Ready":
            counts["ready"] += 1
        elif status in ("Progressing", "Pending"):
            counts["progressing"] += 1
        elif status in ("Degraded", "Failed"):
            counts["failed"] += 1
        elif status == "NotAvailable":
            counts["unavailable"] += 1
    if total == 0:
        if expects is None:
            return Health("Progressing", "AwaitingMetadata", "Waiting for the model to fetch metadata")
        if expects:
            return Health("Progressing", "CreatingTemplates", "Creating templates for the model")
        return Health("Ready", "NoTemplatesExpected", "The model does not have any recommended templates")
    if counts["ready"] == total:
        return Health("Ready", "AllTemplatesReady", "All templates are ready")
    if counts["failed"] == total:
        return Health("Failed", "AllTemplatesFailed", "All templates are degraded or failed")
    if counts["unavailable"] == total:
        return Health(
            "NotAvailable",
            "NoTemplatesAvailable",
            "None of the model's templates are available (no matching GPUs in the cluster)",
        )
    if counts["failed"]:
        return Health("Degraded", "SomeTemplatesDegraded", "Some templates are degraded or failed")
    if counts["progressing"]:
        return Health("Progressing", "TemplatesProgressing", "Templates are progressing")
    if counts["ready"] and counts["unavailable"]:
        return Health("Ready", "SomeTemplatesReady", "All templates have finished processing (some are not available)")
    return Health("Progressing", "TemplatesProgressing", "Unknown status")


def template_conditions(
    model: Mapping[str, Any], metadata: ImageMetadata, expects: bool | None, templates: Iterable[Mapping[str, Any]]
) -> list[dict[str, str]]:
    """`ImageMetadataReady` and `(Cluster)ServiceTemplatesReady` (module docstring); `templates` are those whose
    `spec.modelName` is the model, in its namespace."""
    out: list[dict[str, str]] = []
    if metadata.value is not None:
        named = text(as_mapping(metadata.value.get("model")).get("canonicalName"))
        reason = "ImageMetadataFound" if named else "ImageFound"
        out.append(_condition(IMAGE_METADATA_READY, True, reason, f"Image metadata from the {metadata.source}"))
    elif metadata.source in ("invalid", "unreadable"):
        out.append(_condition(IMAGE_METADATA_READY, False, metadata.reason, metadata.error or ""))
    elif _discovery_flag(v1alpha1_spec(model), "extractMetadata"):
        message = f"{text(spec_of(model).get('image')) or 'the image'}'s metadata has not been read"
        out.append(_condition(IMAGE_METADATA_READY, False, "ImageMetadataUnavailable", message))
    health = template_health(expects, (as_mapping(t.get("status")).get("status") for t in templates))
    kind = CLUSTER_SERVICE_TEMPLATES_READY if model.get("kind") == CLUSTER_MODEL else SERVICE_TEMPLATES_READY
    out.append(_condition(kind, health.state == "Ready", health.reason, health.message))
    return out


def _condition(kind: str, ok: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": kind, "status": str(ok), "reason": reason, "message": message}


def _annotations(model: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(as_mapping(model.get("metadata")).get("annotations"))
