"""A model's AIMServiceTemplates (AIMClusterServiceTemplates for an AIMClusterModel), as upstream's v1alpha1 model
controller makes them (docs/aim-resources.md, "Templates of a model"; the rules in
`omectl.core.aim.legacy.model_templates`): applied as children of the model (owned by it, its labels propagated under
its config), never deleted by the model (upstream's are not: they go with the model), and reported as the model's
conditions `ImageMetadataReady` and `(Cluster)ServiceTemplatesReady`. A template's create, status change or deletion
queues the model it names (`LegacyWatch`), so the aggregate follows the templates and a deleted one is made again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from omectl.controller.aim.image_metadata import registry_metadata
from omectl.controller.aim.legacy_watch import MODEL_NAME_INDEX
from omectl.core.aim.consumers import CLUSTER_MODEL
from omectl.core.aim.legacy.kinds import CLUSTER_SERVICE_TEMPLATE, SERVICE_TEMPLATE
from omectl.core.aim.legacy.model_templates import (
    expects_templates,
    image_metadata,
    on_template_path,
    reads_registry,
    render_templates,
    template_conditions,
    v1alpha1_spec,
)
from omectl.core.aim.meta import name_of, namespace_of

if TYPE_CHECKING:
    from omectl.controller.aim.consumers import AimConsumerReconciler
    from omectl.controller.aim.watch import AimWatch


async def reconcile_model_templates(
    reconciler: AimConsumerReconciler, cluster: AimWatch, model: dict[str, Any], config: Mapping[str, Any]
) -> list[dict[str, str]]:
    """Apply the model's templates; return its template conditions (none for a model off the template path)."""
    if not on_template_path(model):
        return []
    spec = v1alpha1_spec(model)
    metadata = image_metadata(model, spec)
    if reads_registry(model, spec):
        metadata = await registry_metadata(
            reconciler.image_registry, cluster, model, spec, reconciler.operator_namespace
        )
    expects = expects_templates(spec, metadata.value)
    for template in render_templates(model, spec, metadata.value, config):
        await reconciler.apply(cluster, model, template, config)
    return template_conditions(model, metadata, expects, _templates_of(cluster, model))


def _templates_of(cluster: AimWatch, model: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The templates whose `spec.modelName` is the model, in its namespace (cluster templates for a cluster model)."""
    cluster_model = model.get("kind") == CLUSTER_MODEL
    kind = CLUSTER_SERVICE_TEMPLATE if cluster_model else SERVICE_TEMPLATE
    namespace = "" if cluster_model else namespace_of(model)
    found = cluster.legacy.kinds[kind].cache.by_index(MODEL_NAME_INDEX, name_of(model))
    return [t for t in found if str((t.get("metadata") or {}).get("namespace") or "") == namespace]
