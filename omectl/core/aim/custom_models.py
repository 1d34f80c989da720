"""The AIMModel an AIMService written in v1alpha1 with an inline custom model (`spec.model.custom`) serves from, as
upstream's aimservice controller finds or creates it (docs/aim-versions.md, "What a v1alpha1 service gets
reconciled"). Our spec is silent on custom models; this is upstream's behaviour.

- **When** (`custom_spec`): the service names no model in v1alpha2 (neither `spec.model.name` nor `image`: upstream
  looks at those first) and carries `spec.model.custom` in its annotation `aim.eai.amd.com/v1alpha1-fields`.
- **Which model** (`find_custom_model`), upstream's deduplication: the first by name of the AIMModels in the
  service's namespace (never an AIMClusterModel) whose `spec.image` is `custom.baseImage` and whose model sources,
  read in v1alpha1, match the custom ones in order: same count, and each pair with the same `modelId`, `sourceUri` and
  `AWS_ENDPOINT_URL` env value (a source's other env, its size and a `valueFrom` do not count). Whoever made the
  model: one written by hand matches as well. Two services with the same custom model share one.
- **Its name** (`custom_model_name`), upstream's derived name: the first source's `modelId` made RFC 1123 compliant,
  `-`, the first 8 hex digits of the SHA-256 of the base image, then each source's `modelId`, `sourceUri` and its
  `AWS_ENDPOINT_URL` when it has one, each as a JSON string, joined by `|`; the `modelId` part is cut until the whole
  fits 63 characters. With no source: `custom-model-<hash8 of the base image>`.
- **The object** (`render_custom_model`): an AIMModel in the service's namespace, written as upstream writes it in
  v1alpha1 and stored at v1alpha2 (`versions.convert`: `custom` travels in the annotation): labels
  `aim.eai.amd.com/origin: auto-generated`, `aim.eai.amd.com/custom-model: "true"` and `aim.eai.amd.com/service:
  <service>` (the service that made it), `spec.image` the base image, `modelSources` the custom ones,
  `custom.hardware` the custom hardware, the service's `runtimeConfigName`, `env`, `imagePullSecrets` and
  `serviceAccountName`; no owner reference (upstream applies it without one: it outlives the service and serves
  every service that matches it); the service's labels matching the runtime config's `labelPropagation.match`
  copied onto it when it is created, as upstream propagates to everything a service applies. The model then makes
  its template from its custom spec (`legacy.model_templates`) and the service goes on as for a model it names.
- **The service meanwhile**: component `Model` Pending / `CreatingModel`, `Custom model will be created for
  <first modelId>` (`Model will be created` without a source), upstream's; the model's creation queues the service.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from omectl.core.aim.image_models import AUTO_GENERATED, CREATING_MODEL, ORIGIN_LABEL
from omectl.core.aim.legacy.kinds import propagate_legacy_edge
from omectl.core.aim.legacy.model_templates import v1alpha1_spec as model_v1alpha1_spec
from omectl.core.aim.legacy.template_names import derived_name
from omectl.core.aim.meta import SERVICE_LABEL, name_of, namespace_of, sanitized_label_value
from omectl.core.aim.service_models import AIM_MODEL, ModelResolution, ModelsByImage, model_component
from omectl.core.aim.status import MODEL, Component
from omectl.core.aim.versions import convert
from omectl.core.aim.versions.engine import V1ALPHA1, V1ALPHA2
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

CUSTOM_MODEL_LABEL: Final = "aim.eai.amd.com/custom-model"
ENDPOINT_VARIABLE: Final = "AWS_ENDPOINT_URL"
"""The one env variable of a model source that tells two custom models apart (two S3 endpoints, one bucket path)."""
HASH_LENGTH: Final = 8
NO_SOURCE_NAME: Final = "custom-model"
_GROUP: Final = "aim.eai.amd.com"


def custom_spec(service: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The service's inline custom model (v1alpha1's `spec.model.custom`), when it names no model otherwise."""
    model = as_mapping(as_mapping(service.get("spec")).get("model"))
    if any(isinstance(model.get(key), str) and model[key].strip() for key in ("name", "image")):
        return None
    custom = as_mapping(v1alpha1_spec(service).get("model")).get("custom")
    return custom if isinstance(custom, Mapping) else None


def base_image(custom: Mapping[str, Any]) -> str:
    image = custom.get("baseImage")
    return image if isinstance(image, str) else ""


def custom_model_name(custom: Mapping[str, Any]) -> str:
    """Upstream's name for the model of `custom` (module docstring)."""
    sources = _sources(custom)
    if not sources:
        return derived_name([NO_SOURCE_NAME], [base_image(custom)], HASH_LENGTH)
    inputs: list[str] = [base_image(custom)]
    for source in sources:
        inputs += [_text(source.get("modelId")), _text(source.get("sourceUri"))]
        endpoint = _endpoint(source)
        if endpoint:
            inputs.append(endpoint)
    return derived_name([_text(sources[0].get("modelId"))], inputs, HASH_LENGTH)


def matches(model: Mapping[str, Any], custom: Mapping[str, Any]) -> bool:
    """Whether `model` (as stored) is the model of `custom`: its image and its sources, read in v1alpha1."""
    spec = model_v1alpha1_spec(model)
    if spec.get("image") != base_image(custom):
        return False
    theirs, ours = as_list(spec.get("modelSources")), _sources(custom)
    return len(theirs) == len(ours) and all(_same_source(a, b) for a, b in zip(theirs, ours, strict=True))


def find_custom_model(custom: Mapping[str, Any], models: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The first by name of `models` (the AIMModels of the service's namespace) that is the model of `custom`."""
    return next((m for m in sorted(models, key=name_of) if matches(m, custom)), None)


def resolve_custom_model(
    service: Mapping[str, Any], custom: Mapping[str, Any], by_image: ModelsByImage
) -> ModelResolution | None:
    """The model of the service's inline custom model among the AIMModels of its namespace, how it stands (the
    `Model` component of a model it names, `service_models.model_component`); None when none matches."""
    candidates = by_image(AIM_MODEL, namespace_of(service), base_image(custom).strip())
    model = find_custom_model(custom, candidates)
    return ModelResolution(AIM_MODEL, model, model_component(AIM_MODEL, model)) if model is not None else None


def serving_image(model: Mapping[str, Any]) -> str | None:
    """The image the service of a custom model serves: its model's (the custom base image)."""
    image = as_mapping(model.get("spec")).get("image")
    return image if isinstance(image, str) and image else None


def render_custom_model(
    service: Mapping[str, Any], custom: Mapping[str, Any], name: str, config: Mapping[str, Any]
) -> dict[str, Any]:
    """The AIMModel (v1alpha2, as stored) the service creates for `custom`, its labels propagated."""
    shared = as_mapping(service.get("spec"))
    carried = v1alpha1_spec(service)
    spec: dict[str, Any] = {"image": base_image(custom)}
    if "modelSources" in custom:
        spec["modelSources"] = copy_json(custom["modelSources"])
    spec["custom"] = {"hardware": copy_json(as_mapping(custom.get("hardware")))}
    runtime_config = shared.get("runtimeConfigName")
    if isinstance(runtime_config, str) and runtime_config:
        spec["runtimeConfigName"] = runtime_config
    for key, source in (("imagePullSecrets", carried), ("serviceAccountName", carried), ("env", shared)):
        if source.get(key):
            spec[key] = copy_json(source[key])
    labels = {
        ORIGIN_LABEL: AUTO_GENERATED,
        CUSTOM_MODEL_LABEL: "true",
        SERVICE_LABEL: sanitized_label_value(name_of(service)),
    }
    model = {
        "apiVersion": f"{_GROUP}/{V1ALPHA1}",
        "kind": "AIMModel",
        "metadata": {"name": name, "namespace": namespace_of(service), "labels": labels},
        "spec": spec,
    }
    return propagate_legacy_edge(service, convert(model, f"{_GROUP}/{V1ALPHA2}"), config)


def creating_component(custom: Mapping[str, Any]) -> Component:
    sources = _sources(custom)
    if sources and _text(sources[0].get("modelId")):
        return Component(MODEL, "Pending", CREATING_MODEL, f"Custom model will be created for {sources[0]['modelId']}")
    return Component(MODEL, "Pending", CREATING_MODEL, "Model will be created")


def _sources(custom: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    return [as_mapping(source) for source in as_list(custom.get("modelSources"))]


def _same_source(a: Any, b: Mapping[str, Any]) -> bool:
    a = as_mapping(a)
    return (
        _text(a.get("modelId")) == _text(b.get("modelId"))
        and _text(a.get("sourceUri")) == _text(b.get("sourceUri"))
        and _endpoint(a) == _endpoint(b)
    )


def _endpoint(source: Mapping[str, Any]) -> str:
    """The source's `AWS_ENDPOINT_URL` value; "" when it has none or takes it from elsewhere (`valueFrom`)."""
    for variable in as_list(source.get("env")):
        variable = as_mapping(variable)
        if variable.get("name") == ENDPOINT_VARIABLE:
            return _text(variable.get("value"))
    return ""


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
