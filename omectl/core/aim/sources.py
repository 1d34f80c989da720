"""AIMClusterModelSource → AIMClusterModels (docs/aim-resources.md).

A source lists the models to create in `spec.models[]`; registry scanning is out of scope. Each entry becomes an
AIMClusterModel of the entry's name (`cluster_models_for`) whose spec is the entry without `name`, with
`runtimeConfigName` = the entry's, else the source's when it names one. Labels `app.kubernetes.io/component: model`,
`aim.eai.amd.com/model-source`, and the source's labels propagated with the source's config (resolved in the
operator namespace, the source being cluster-scoped). Owned by the source.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omectl.core.aim.consumers import (
    AIM_V1ALPHA2,
    CLUSTER_MODEL,
    MODEL_SOURCE_LABEL,
    base_labels,
    owner_reference,
    propagate_edge,
    spec_of,
    text,
)
from omectl.core.aim.meta import name_of
from omectl.core.layering import copy_json


def cluster_models_for(source: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The AIMClusterModels of the source's `spec.models` (module docstring). `config` is the source's resolved
    runtime config (for label propagation)."""
    parent = {**source, "kind": source.get("kind") or "AIMClusterModelSource"}
    source_config = text(spec_of(source).get("runtimeConfigName"))
    out: list[dict[str, Any]] = []
    for entry in spec_of(source).get("models") or ():
        if not isinstance(entry, Mapping) or not text(entry.get("name")) or not text(entry.get("image")):
            continue
        spec = {k: copy_json(v) for k, v in entry.items() if k != "name"}
        if not text(spec.get("runtimeConfigName")) and source_config is not None:
            spec["runtimeConfigName"] = source_config
        model = {
            "apiVersion": AIM_V1ALPHA2,
            "kind": CLUSTER_MODEL,
            "metadata": {
                "name": str(entry["name"]),
                "labels": base_labels("model", {MODEL_SOURCE_LABEL: name_of(source)}),
                "ownerReferences": [owner_reference(parent)],
            },
            "spec": spec,
        }
        out.append(propagate_edge(parent, model, config or {}))
    return out


def model_source_status(source: Mapping[str, Any], created: int) -> dict[str, Any]:
    """The source's own status: Ready once its `created` models exist out of those listed."""
    listed = len(cluster_models_for(source))
    ready = created >= listed
    message = f"{created}/{listed} models created"
    return {
        "status": "Ready" if ready else "Progressing",
        "modelCount": created,
        "conditions": [
            {
                "type": "Ready",
                "status": str(ready),
                "reason": "ModelsCreated" if ready else "CreatingModels",
                "message": message,
            }
        ],
    }
