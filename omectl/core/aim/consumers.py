"""What the v1alpha2 runtime-config consumers share (docs/aim-resources.md): kinds, names, the labels every child
carries, label propagation along the spec's propagation graph, and the runtime-config part of their status.

Kinds (all `aim.eai.amd.com/v1alpha2`): AIMModel, AIMClusterModel, AIMProfile, AIMClusterProfile, AIMProfileSet,
AIMProfileCache, AIMArtifact, AIMClusterModelSource, besides AIMService. Each resolves its own runtime config with
`omectl.core.aim.resolution.resolve` (a cluster-scoped one in the operator namespace) and publishes it with
`consumer_status`.

Propagation (`PROPAGATION_EDGES`, the v1alpha2 edges of the spec's graph): AIMService → AIMProfileCache;
AIMProfileCache → AIMArtifact; AIMArtifact → PersistentVolumeClaim, Job (download); AIMModel / AIMClusterModel →
AIMProfile / AIMClusterProfile (discovery), AIMProfileSet, Job (discovery); AIMProfileSet → AIMProfile (derived);
AIMClusterModelSource → AIMClusterModel. Each hop propagates with the PARENT's own resolved config
(`propagate_edge`); a Job gets the labels on its metadata and on its pod template. Render functions return their
children propagated as on creation; for a later update the controller re-propagates against the live child's
recorded keys (`omectl.core.aim.labels`).

Names (`bounded_name`): `<base><suffix>`, and when that is longer than the limit (63 for anything whose name becomes
a label value: Jobs, profiles, caches, artifacts) the base is cut and `-<hash8(base)>` inserted, so distinct bases
stay distinct. `hash8` is the first 8 hex digits of SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from omectl.core.aim.labels import propagate_to_job, propagate_to_object
from omectl.core.aim.meta import COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, label_value, name_of
from omectl.core.aim.resolution import CONFIG_VALID, RUNTIME_CONFIG_READY, Resolution
from omectl.core.jsonish import as_mapping

AIM_V1ALPHA2: Final = "aim.eai.amd.com/v1alpha2"

SERVICE: Final = "AIMService"
MODEL: Final = "AIMModel"
CLUSTER_MODEL: Final = "AIMClusterModel"
PROFILE: Final = "AIMProfile"
CLUSTER_PROFILE: Final = "AIMClusterProfile"
PROFILE_SET: Final = "AIMProfileSet"
PROFILE_CACHE: Final = "AIMProfileCache"
ARTIFACT: Final = "AIMArtifact"
CLUSTER_MODEL_SOURCE: Final = "AIMClusterModelSource"
PVC: Final = "PersistentVolumeClaim"
JOB: Final = "Job"

CLUSTER_KINDS: Final = frozenset((CLUSTER_MODEL, CLUSTER_PROFILE, CLUSTER_MODEL_SOURCE))
"""The cluster-scoped consumers (they resolve namespaced configs in the operator namespace)."""

SCOPE_NAMESPACE: Final = "Namespace"
SCOPE_CLUSTER: Final = "Cluster"

PROPAGATION_EDGES: Final[Mapping[str, frozenset[str]]] = {
    SERVICE: frozenset((PROFILE_CACHE,)),
    PROFILE_CACHE: frozenset((ARTIFACT,)),
    ARTIFACT: frozenset((PVC, JOB)),
    MODEL: frozenset((PROFILE, PROFILE_SET, JOB)),
    CLUSTER_MODEL: frozenset((CLUSTER_PROFILE, PROFILE_SET, JOB)),
    PROFILE_SET: frozenset((PROFILE,)),
    CLUSTER_MODEL_SOURCE: frozenset((CLUSTER_MODEL,)),
}
"""Parent kind → the child kinds it propagates labels to (the v1alpha2 edges of the spec's graph; the discovery Job
is ours: the spec's "discovery and download pods inherit the same cost-allocation labels")."""

# Labels on the children (values cut to 63 characters).
MODEL_LABEL: Final = "aim.eai.amd.com/model"
CLUSTER_MODEL_LABEL: Final = "aim.eai.amd.com/cluster-model"
PROFILE_SET_LABEL: Final = "aim.eai.amd.com/profile-set"
PROFILE_CACHE_LABEL: Final = "aim.eai.amd.com/profile-cache"
ARTIFACT_LABEL: Final = "aim.eai.amd.com/artifact"
SOURCE_MODEL_LABEL: Final = "aim.eai.amd.com/source-model"
MODEL_SOURCE_LABEL: Final = "aim.eai.amd.com/model-source"
AIM_COMPONENT_LABEL: Final = "aim.eai.amd.com/component"

_DNS_LABEL_INVALID: Final = re.compile(r"[^a-z0-9-]+")
READY: Final = "Ready"


def hash8(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def bounded_name(base: str, suffix: str = "", limit: int = 63) -> str:
    """`base + suffix`, or when longer than `limit` the base cut and `-<hash8(base)>` inserted before the suffix."""
    if len(base) + len(suffix) <= limit:
        return base + suffix
    keep = max(limit - len(suffix) - 9, 1)
    return f"{base[:keep].rstrip('-.')}-{hash8(base)}{suffix}"


def dns_label(text: str) -> str:
    """`text` as one DNS-1123 label part: lowercased, every run of other characters a `-`, no `-` at the ends."""
    return _DNS_LABEL_INVALID.sub("-", text.lower()).strip("-") or "x"


def is_cluster_scoped(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") in CLUSTER_KINDS


def owner_reference(owner: Mapping[str, Any]) -> dict[str, Any]:
    """A controller owner reference to `owner` (which must carry its kind; apiVersion defaults to v1alpha2)."""
    metadata = as_mapping(owner.get("metadata"))
    return {
        "apiVersion": str(owner.get("apiVersion") or AIM_V1ALPHA2),
        "kind": str(owner.get("kind") or ""),
        "name": str(metadata.get("name") or ""),
        "uid": str(metadata.get("uid") or ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def base_labels(component: str, aim_labels: Mapping[str, str] | None = None) -> dict[str, str]:
    """`app.kubernetes.io/managed-by: omectl`, `app.kubernetes.io/component: <component>` and `aim_labels`, values
    cut to the 63 characters a label value may hold."""
    labels = {MANAGED_BY_LABEL: MANAGED_BY, COMPONENT_LABEL: component}
    for key, value in (aim_labels or {}).items():
        labels[key] = label_value(value)
    return labels


def propagate_edge(
    parent: Mapping[str, Any],
    child: Mapping[str, Any],
    config: Mapping[str, Any],
    edges: Mapping[str, frozenset[str]] = PROPAGATION_EDGES,
) -> dict[str, Any]:
    """`child` with `parent`'s labels propagated under `config`, the parent's own resolved config; a Job also on its
    pod template. Raises ValueError for an edge the graph (`edges`: parent kind → child kinds) does not have."""
    parent_kind = str(parent.get("kind") or "")
    child_kind = str(child.get("kind") or "")
    if child_kind not in edges.get(parent_kind, frozenset()):
        raise ValueError(f"no propagation edge {parent_kind} -> {child_kind}")
    if child_kind == JOB:
        return propagate_to_job(parent, child, config)
    return propagate_to_object(parent, child, config)


def consumer_status(
    resolution: Resolution,
    own: Mapping[str, Any],
    *,
    generation: int | None = None,
    previous_conditions: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The whole `status` of a v1alpha2 consumer: its own part (`status`, kind-specific fields, conditions) with the
    runtime-config part laid over it, as an AIMService publishes it.

    Conditions: the resolution's (`RuntimeConfigReady`; `ConfigValid=False` on a missing explicit config), then
    `ConfigValid=True` / `ConfigurationValid` when the previous status had `ConfigValid` and the config is valid now
    (the recovery) unless the kind's own part says `ConfigValid` itself, then the kind's own conditions. On a missing
    explicit config `status` is `Failed` and `Ready` False / `ReferenceNotFound`, whatever the kind's own part said.
    `resolvedRuntimeConfig` is present only when a config resolved."""
    out = {k: v for k, v in own.items() if k != "conditions"}
    conditions: list[dict[str, Any]] = [dict(c) for c in resolution.conditions]
    own_conditions = [dict(c) for c in own.get("conditions") or () if isinstance(c, Mapping)]
    if resolution.may_apply:
        own_says = any(c.get("type") == CONFIG_VALID for c in own_conditions)  # e.g. a v1alpha1 model's missing secret
        if not own_says and any(p.get("type") == CONFIG_VALID for p in previous_conditions):
            conditions.append(_condition(CONFIG_VALID, "True", "ConfigurationValid", "Configuration is valid"))
    else:
        status = resolution.status or "Failed"
        out["status"] = status
        message = next(c["message"] for c in resolution.conditions if c["type"] == RUNTIME_CONFIG_READY)
        own_conditions = [c for c in own_conditions if c.get("type") != READY]
        own_conditions.append(_condition(READY, "False", "ReferenceNotFound", message))
    taken = {c["type"] for c in conditions}
    conditions += [c for c in own_conditions if c.get("type") not in taken]
    out["conditions"] = conditions
    if resolution.resolved_ref is not None:
        out["resolvedRuntimeConfig"] = dict(resolution.resolved_ref)
    else:
        out.pop("resolvedRuntimeConfig", None)
    if generation is not None:
        out["observedGeneration"] = generation
    return out


def _condition(condition_type: str, status: str, reason: str, message: str) -> dict[str, str]:
    return {"type": condition_type, "status": status, "reason": reason, "message": message}


def spec_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return as_mapping(obj.get("spec")) if obj is not None else {}


def status_of(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return as_mapping(obj.get("status")) if obj is not None else {}


def labels_of(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return as_mapping(as_mapping(obj.get("metadata")).get("labels"))


def uid_of(obj: Mapping[str, Any]) -> str:
    """The object's uid, or `<namespace>/<name>` when it has none yet (so names stay deterministic)."""
    metadata = as_mapping(obj.get("metadata"))
    uid = metadata.get("uid")
    if isinstance(uid, str) and uid:
        return uid
    return f"{metadata.get('namespace') or ''}/{name_of(obj)}"


def text(value: Any) -> str | None:
    """`value` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None
