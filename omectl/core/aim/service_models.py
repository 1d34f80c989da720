"""An AIMService's model, resolved as upstream's aimservice controller resolves it, for `ModelReady` and
`status.resolvedModel` (docs/aim-versions.md, "What a v1alpha1 service gets reconciled"), and the template a v1alpha1
model names for its services.

- **Which** (`resolve_model`): by `spec.model.name` (trimmed), the AIMModel of that name in the service's namespace,
  else the AIMClusterModel of that name; by `spec.model.image` (trimmed), the first by name of the AIMModels in the
  service's namespace whose `spec.image` is that image, else the first by name of such AIMClusterModels. A service
  whose model is not found has no resolution (`None`): a v1alpha2 one is reconciled as before (omectl creates no
  model for an image and renders a name it does not find with its placeholder image, docs/aim-resources.md); one
  written in v1alpha1 naming a model that does not exist fails (`model_not_found`, upstream's `ModelNotFound`).
- **Its component** `Model` (condition `ModelReady`), upstream's reasons and messages: Ready / `ModelResolved`
  `<Kind> <name> is ready`; Pending or Progressing: Pending / `ModelNotReady` `<Kind> <name> is not ready yet`;
  Failed or Degraded: Failed / `ModelNotReady` `<Kind> <name> is in failed state`; another (or none): Pending /
  `ModelNotReady` `<Kind> <name> status: <status>` (upstream rolls a model that is not ready, an upstream dependency,
  up as `Pending`). A model that is not Ready holds the service's InferenceService (`ModelResolution.ready`; the
  reconciler creates none meanwhile, as upstream does).
- **`status.resolvedModel`** (`resolved_ref`): `{kind, name, namespace (an AIMModel's), scope (Namespace or
  Cluster), uid}` while the model is Ready (upstream writes it only then); absent otherwise.
- **The model's default template** (`default_template`): `spec.defaultServiceTemplate` of a model written in
  v1alpha1 (carried in its annotation, `versions.model.default_service_template`): the template a service that
  names none selects (`service_templates.select_template`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.legacy.kinds import resolved_reference
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.status import MODEL, MODEL_NOT_FOUND, Component, ComponentState
from omectl.core.aim.versions.engine import written_in_v1alpha1
from omectl.core.aim.versions.model import default_service_template
from omectl.core.jsonish import as_mapping

AIM_MODEL: Final = "AIMModel"
AIM_CLUSTER_MODEL: Final = "AIMClusterModel"
MODEL_RESOLVED: Final = "ModelResolved"
MODEL_NOT_READY: Final = "ModelNotReady"

ModelLookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""`(kind, namespace, name)` → the live model (namespace `""` for an AIMClusterModel), or None."""
ModelsByImage = Callable[[str, str, str], Sequence[Mapping[str, Any]]]
"""`(kind, namespace, image)` → the live models of that kind (in that namespace; `""` for AIMClusterModels) whose
`spec.image` is `image`."""


@dataclass(frozen=True)
class ModelResolution:
    """The model a service resolved and how it stands."""

    kind: str
    """AIMModel or AIMClusterModel."""
    model: Mapping[str, Any]
    component: Component

    @property
    def ready(self) -> bool:
        return self.component.state == "Ready"

    @property
    def default_template(self) -> str | None:
        """The model's `defaultServiceTemplate` (v1alpha1), or None."""
        return default_service_template(self.model)

    def resolved_ref(self) -> dict[str, str] | None:
        """`status.resolvedModel` while the model is Ready, else None."""
        if not self.ready:
            return None
        return resolved_reference(self.kind, self.model, namespaced=self.kind == AIM_MODEL)


def resolve_model(service: Mapping[str, Any], lookup: ModelLookup, by_image: ModelsByImage) -> ModelResolution | None:
    """The model of `service`, looked up as the module docstring says; None when none is found."""
    model = as_mapping(as_mapping(service.get("spec")).get("model"))
    namespace = namespace_of(service)
    name, image = _trimmed(model.get("name")), _trimmed(model.get("image"))
    if name is not None:
        for kind, where in ((AIM_MODEL, namespace), (AIM_CLUSTER_MODEL, "")):
            found = lookup(kind, where, name)
            if found is not None:
                return ModelResolution(kind, found, model_component(kind, found))
        return None
    if image is not None:
        for kind, where in ((AIM_MODEL, namespace), (AIM_CLUSTER_MODEL, "")):
            matches = sorted(by_image(kind, where, image), key=name_of)
            if matches:
                return ModelResolution(kind, matches[0], model_component(kind, matches[0]))
    return None


def model_not_found(service: Mapping[str, Any]) -> Component | None:
    """The `Model` component of a service written in v1alpha1 whose `spec.model.name` names no model (None for any
    other): Failed / `ModelNotFound`, upstream's message (its frozen model-not-found scenario). A v1alpha2 service
    whose model is not found is rendered as before (docs/aim-resources.md)."""
    name = _trimmed(as_mapping(as_mapping(service.get("spec")).get("model")).get("name"))
    if name is None or not written_in_v1alpha1(service):
        return None
    message = f'model "{name}" not found in namespace {namespace_of(service)} or cluster scope'
    return Component(MODEL, "Failed", MODEL_NOT_FOUND, message)


def model_component(kind: str, model: Mapping[str, Any]) -> Component:
    """The `Model` component of a model that exists, from its `status.status`."""
    label = f"{kind} {name_of(model)}"
    status = as_mapping(model.get("status")).get("status")
    state: ComponentState
    if status == "Ready":
        return Component(MODEL, "Ready", MODEL_RESOLVED, f"{label} is ready")
    if status in ("Pending", "Progressing"):
        state, message = "Pending", f"{label} is not ready yet"
    elif status in ("Failed", "Degraded"):
        state, message = "Failed", f"{label} is in failed state"
    else:
        state, message = "Pending", f"{label} status: {status if isinstance(status, str) else ''}"
    return Component(MODEL, state, MODEL_NOT_READY, message)


def _trimmed(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None
