"""The kinds of upstream's legacy template path (`aim.eai.amd.com/v1alpha1` only), the labels their children carry,
and the propagation edges the spec draws for them (docs/aim-resources.md, "The legacy template path").

Edges (`LEGACY_PROPAGATION_EDGES`): AIMModel → auto-created AIMServiceTemplate, AIMClusterModel → auto-created
AIMClusterServiceTemplate, AIMServiceTemplate → AIMTemplateCache, AIMTemplateCache → AIMArtifact and AIMService → the
AIMModel it creates for an image (the spec's "Propagation graph", v1alpha1 and legacy), AIMService → the template its
overrides derive (not in the spec's graph: upstream propagates to everything a service applies), and a template → its
discovery Job (ours, as for a model's: the spec's "discovery and download pods inherit the same cost-allocation
labels"). Each hop propagates the parent's labels under the PARENT's own resolved config; a Job gets them on its
metadata and on its pod template.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.consumers import propagate_edge

AIM_V1ALPHA1: Final = "aim.eai.amd.com/v1alpha1"

SERVICE_TEMPLATE: Final = "AIMServiceTemplate"
CLUSTER_SERVICE_TEMPLATE: Final = "AIMClusterServiceTemplate"
TEMPLATE_CACHE: Final = "AIMTemplateCache"
ARTIFACT: Final = "AIMArtifact"
JOB: Final = "Job"

LEGACY_KINDS: Final = (SERVICE_TEMPLATE, CLUSTER_SERVICE_TEMPLATE, TEMPLATE_CACHE)
TEMPLATE_KINDS: Final = (SERVICE_TEMPLATE, CLUSTER_SERVICE_TEMPLATE)

SCOPE_NAMESPACE: Final = "Namespace"
SCOPE_CLUSTER: Final = "Cluster"


def resolved_reference(kind: str, obj: Mapping[str, Any], *, namespaced: bool) -> dict[str, str]:
    """Upstream's reference to a resolved object (`status.resolvedModel`, `resolvedTemplate`): kind, name, the
    namespace of a namespaced one, its scope and its uid when it has one."""
    metadata = obj.get("metadata")
    meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
    ref = {"kind": kind, "name": str(meta.get("name") or "")}
    if namespaced:
        ref["namespace"] = str(meta.get("namespace") or "")
    ref["scope"] = SCOPE_NAMESPACE if namespaced else SCOPE_CLUSTER
    uid = meta.get("uid")
    if isinstance(uid, str) and uid:
        ref["uid"] = uid
    return ref


# Labels, as upstream names them.
TEMPLATE_LABEL: Final = "aim.eai.amd.com/template"
"""On a template's discovery Job, its pods and its result ConfigMap: the template's name."""
TEMPLATE_NAME_LABEL: Final = "aim.eai.amd.com/template.name"
TEMPLATE_SCOPE_LABEL: Final = "aim.eai.amd.com/template.scope"
TEMPLATE_INDEX_LABEL: Final = "aim.eai.amd.com/template.index"
TEMPLATE_CACHE_LABEL: Final = "aim.eai.amd.com/template-cache.name"
"""On a template cache's artifacts: the cache's name."""

LEGACY_PROPAGATION_EDGES: Final[Mapping[str, frozenset[str]]] = {
    "AIMModel": frozenset((SERVICE_TEMPLATE,)),
    "AIMClusterModel": frozenset((CLUSTER_SERVICE_TEMPLATE,)),
    "AIMService": frozenset(("AIMModel", SERVICE_TEMPLATE)),
    SERVICE_TEMPLATE: frozenset((TEMPLATE_CACHE, JOB)),
    CLUSTER_SERVICE_TEMPLATE: frozenset((JOB,)),
    TEMPLATE_CACHE: frozenset((ARTIFACT,)),
}
"""Parent kind → the child kinds it propagates labels to."""


def is_cluster_template(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == CLUSTER_SERVICE_TEMPLATE


def propagate_legacy_edge(
    parent: Mapping[str, Any], child: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    """`child` with `parent`'s labels propagated under `config` (the parent's resolved config); a Job also on its pod
    template. Raises ValueError for an edge the legacy graph does not have."""
    return propagate_edge(parent, child, config, LEGACY_PROPAGATION_EDGES)
