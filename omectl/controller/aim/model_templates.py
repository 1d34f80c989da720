"""A model's AIMServiceTemplates (AIMClusterServiceTemplates for an AIMClusterModel), as upstream's v1alpha1 model
controller makes them (docs/aim-resources.md, "Templates of a model"; the rules in
`omectl.core.aim.legacy.model_templates`): applied as children of the model (owned by it, its labels propagated under
its config), never deleted by the model (upstream's are not: they go with the model). A template's create, status
change or deletion queues the model it names (`LegacyWatch`), so the aggregate follows the templates and a deleted one
is made again.

- `reconcile_v1alpha1_model`, a model written in v1alpha1: its whole own status as upstream composes it from its
  image metadata and its templates (`omectl.core.aim.legacy.model_status`: `status`, conditions, `sourceType`,
  `imageMetadata`, the last one read kept while a read fails); the templates are applied only when that status lets
  upstream apply (no missing reference, no infrastructure error). A registry that fails with anything but 401, 403
  or 404 (`ImagePullBackOff`, upstream's infrastructure error) is read again with backoff (`RetryAfterStatus`: the
  status is written, then the work queue retries the model, 2 s first, as upstream's controller-runtime requeues an
  infrastructure error); the other failures wait for a change.
- `reconcile_model_templates`, a model written in v1alpha2 with the simulated metadata: its templates, and the
  conditions `ImageMetadataReady` and `(Cluster)ServiceTemplatesReady` added to its discovery's status.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.aim.image_metadata import REASONS, registry_metadata
from omectl.controller.aim.legacy_watch import MODEL_NAME_INDEX
from omectl.core.aim.consumers import CLUSTER_MODEL
from omectl.core.aim.legacy.kinds import CLUSTER_SERVICE_TEMPLATE, SERVICE_TEMPLATE
from omectl.core.aim.legacy.model_status import (
    image_metadata_component,
    model_status,
    source_type,
    templates_component,
)
from omectl.core.aim.legacy.model_templates import (
    ImageMetadata,
    expects_templates,
    image_metadata,
    on_template_path,
    reads_registry,
    render_templates,
    template_conditions,
    v1alpha1_spec,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

if TYPE_CHECKING:
    from omectl.controller.aim.consumers import AimConsumerReconciler
    from omectl.controller.aim.watch import AimWatch

RETRIED_REASONS: Final = frozenset((REASONS["generic"],))
"""Why an image's metadata could not be read that upstream counts as an infrastructure error (retried)."""


class RetryAfterStatus(Exception):
    """The object's own status (`own`) is to be written, then the object retried with backoff (`reason`)."""

    def __init__(self, own: dict[str, Any], reason: str) -> None:
        super().__init__(reason)
        self.own = own


async def reconcile_model_templates(
    reconciler: AimConsumerReconciler, cluster: AimWatch, model: dict[str, Any], config: Mapping[str, Any]
) -> list[dict[str, str]]:
    """Apply the model's templates; return its template conditions (none for a model off the template path)."""
    if not on_template_path(model):
        return []
    spec = v1alpha1_spec(model)
    metadata = await _metadata(reconciler, cluster, model, spec)
    expects = expects_templates(spec, metadata.value)
    for template in render_templates(model, spec, metadata.value, config):
        await reconciler.apply(cluster, model, template, config)
    return template_conditions(model, metadata, expects, _templates_of(cluster, model))


async def reconcile_v1alpha1_model(
    reconciler: AimConsumerReconciler, cluster: AimWatch, model: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    """The own status of a model written in v1alpha1, its templates applied when that status lets them be."""
    spec = v1alpha1_spec(model)
    metadata = await _metadata(reconciler, cluster, model, spec)
    expects = expects_templates(spec, metadata.value)
    cluster_model = model.get("kind") == CLUSTER_MODEL
    statuses = [as_mapping(t.get("status")).get("status") for t in _templates_of(cluster, model)]
    current = as_mapping(model.get("status"))
    composed = model_status(
        [
            image_metadata_component(metadata, cluster=cluster_model),
            templates_component(expects, statuses, cluster=cluster_model),
        ],
        previous_conditions=[c for c in as_list(current.get("conditions")) if isinstance(c, Mapping)],
    )
    if composed.applies:
        for template in render_templates(model, spec, metadata.value, config):
            await reconciler.apply(cluster, model, template, config)
    own: dict[str, Any] = {
        "status": composed.status,
        "conditions": list(composed.conditions),
        "sourceType": source_type(spec),
    }
    kept = metadata.value if metadata.value is not None else current.get("imageMetadata")
    if isinstance(kept, Mapping):
        own["imageMetadata"] = copy_json(dict(kept))
    if metadata.source == "unreadable" and metadata.reason in RETRIED_REASONS:
        raise RetryAfterStatus(own, metadata.error or metadata.reason)
    return own


async def _metadata(
    reconciler: AimConsumerReconciler, cluster: AimWatch, model: Mapping[str, Any], spec: Mapping[str, Any]
) -> ImageMetadata:
    if reads_registry(model, spec):
        return await registry_metadata(reconciler.image_registry, cluster, model, spec, reconciler.operator_namespace)
    return image_metadata(model, spec)


def _templates_of(cluster: AimWatch, model: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The templates whose `spec.modelName` is the model, in its namespace (cluster templates for a cluster model)."""
    cluster_model = model.get("kind") == CLUSTER_MODEL
    kind = CLUSTER_SERVICE_TEMPLATE if cluster_model else SERVICE_TEMPLATE
    namespace = "" if cluster_model else namespace_of(model)
    found = cluster.legacy.kinds[kind].cache.by_index(MODEL_NAME_INDEX, name_of(model))
    return [t for t in found if str((t.get("metadata") or {}).get("namespace") or "") == namespace]
