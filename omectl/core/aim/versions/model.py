"""AIMModel and AIMClusterModel between upstream's v1alpha1 and omectl's v1alpha2 (docs/aim-versions.md, "AIMModel
and AIMClusterModel"). Both kinds have one schema in each version and convert alike.

Spec: `image`, `runtimeConfigName` and `env` are the same. `modelSources`: upstream's sources have no name (keyed by
`modelId`, at most one), omectl's are named: a v1alpha1 source gets the name `source_name(modelId)` in v1alpha2, and
loses it in v1alpha1. `discovery`: upstream's `extractMetadata` and `createServiceTemplates` make templates from the
image only when both are on, which is v1alpha2's `enabled`. Both rules are lossy (several values of one version are
one of the other) and keep the precise value in the annotation. Upstream's custom models (`custom`,
`customTemplates`), `defaultServiceTemplate`, `imageMetadata`, `imagePullSecrets`, `resources` and
`serviceAccountName` have no v1alpha2 counterpart.

Status: the conditions, the observed generation, `status` (the same six states), `resolvedRuntimeConfig` (v1alpha1's
scope may also be `Merged` or `Unknown`), `imageMetadata` and `sourceType` (v1alpha2's status has upstream's shape
for both, so that the controller's status write in v1alpha2 holds what it composes for a model written in v1alpha1)
are shared; v1alpha2's `profileCount` has no counterpart.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.versions.engine import (
    UNHELD,
    V1ALPHA1,
    Container,
    Field,
    KindConversion,
    Values,
    carried_fields,
    same_if,
)

STATUS: Final = Values(
    {name: name for name in ("Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable")}
)
"""v1alpha1's `status.status` -> v1alpha2's: the same six states."""
SOURCE_TYPE: Final = Values({"Image": "Image", "Custom": "Custom"})
"""`status.sourceType`: the same two values in both versions."""
SCOPE: Final = Values({"Namespace": "Namespace", "Cluster": "Cluster"})
"""v1alpha1's `resolvedRuntimeConfig.scope` -> v1alpha2's (`Merged` and `Unknown` have none)."""

MODEL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]+/[a-zA-Z0-9._-]+$")
SOURCE_URI: Final = re.compile(r"^(hf|s3)://[^ \t\r\n]+$")
"""Upstream's patterns on a model source's `modelId` and `sourceUri`."""
_DISCOVERY_FLAGS: Final = ("extractMetadata", "createServiceTemplates")


def source_name(model_id: str) -> str:
    """The v1alpha2 name of a v1alpha1 model source: its modelId as a DNS label (`Qwen/Qwen3-8B` -> `qwen-qwen3-8b`),
    at most 63 characters."""
    name = re.sub(r"[^a-z0-9]+", "-", model_id.lower()).strip("-")[:63].rstrip("-")
    return name or "model"


def _v1_source(item: Any) -> bool:
    """Whether `item` is a model source v1alpha1 holds: a modelId and a sourceUri of upstream's patterns."""
    if not isinstance(item, Mapping):
        return False
    model_id, uri = item.get("modelId"), item.get("sourceUri")
    return (
        isinstance(model_id, str)
        and isinstance(uri, str)
        and MODEL_ID.match(model_id) is not None
        and SOURCE_URI.match(uri) is not None
    )


def _held_sources(value: Any) -> bool:
    return isinstance(value, list) and len(value) <= 1 and all(_v1_source(i) for i in value)


def sources_to_v2(value: Any) -> Any:
    """v1alpha1's `modelSources` (at most one, unnamed) -> v1alpha2's, each named `source_name(modelId)`."""
    if not _held_sources(value):
        return UNHELD
    return [{**copy.deepcopy(item), "name": source_name(item["modelId"])} for item in value]


def sources_to_v1(value: Any) -> Any:
    """v1alpha2's `modelSources` -> v1alpha1's: without their names, when v1alpha1 holds them (at most one source, a
    modelId and sourceUri of upstream's patterns)."""
    if not isinstance(value, list) or not all(isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in value):
        return UNHELD
    out = [{k: copy.deepcopy(v) for k, v in item.items() if k != "name"} for item in value]
    return out if _held_sources(out) else UNHELD


def discovery_to_v2(value: Any) -> Any:
    """v1alpha1's `discovery` -> v1alpha2's: `enabled` when upstream both extracts metadata and creates templates
    (each on when unset)."""
    if not isinstance(value, Mapping) or not set(value) <= set(_DISCOVERY_FLAGS):
        return UNHELD
    if not all(isinstance(v, bool) for v in value.values()):
        return UNHELD
    return {"enabled": all(value.get(flag, True) for flag in _DISCOVERY_FLAGS)}


def discovery_to_v1(value: Any) -> Any:
    """v1alpha2's `discovery` -> v1alpha1's: both of upstream's flags as `enabled`."""
    if not isinstance(value, Mapping) or set(value) != {"enabled"} or not isinstance(value["enabled"], bool):
        return UNHELD
    return {flag: value["enabled"] for flag in _DISCOVERY_FLAGS}


def _rules() -> tuple[Field | Container, ...]:
    return (
        Field.both(("spec", "image")),
        Field.both(("spec", "runtimeConfigName")),
        Field.both(("spec", "env")),
        Field.lossy_both(("spec", "modelSources"), sources_to_v2, sources_to_v1),
        Field.lossy_both(("spec", "discovery"), discovery_to_v2, discovery_to_v1),
        Field.both(("status", "conditions")),
        Field.both(("status", "observedGeneration")),
        Field.values(("status", "status"), ("status", "status"), STATUS),
        Container.both(("status", "resolvedRuntimeConfig")),
        *(Field.both(("status", "resolvedRuntimeConfig", name)) for name in ("kind", "name", "namespace", "uid")),
        Field.values(("status", "resolvedRuntimeConfig", "scope"), ("status", "resolvedRuntimeConfig", "scope"), SCOPE),
        Field.both(("status", "imageMetadata"), same_if(dict), same_if(dict)),
        Field.values(("status", "sourceType"), ("status", "sourceType"), SOURCE_TYPE),
    )


MODEL: Final = KindConversion("AIMModel", _rules(), marks_v1alpha1_writes=True)
CLUSTER_MODEL: Final = KindConversion("AIMClusterModel", _rules(), marks_v1alpha1_writes=True)


def v1alpha1_model_spec(model: Mapping[str, Any]) -> Mapping[str, Any]:
    """The v1alpha1-only spec fields a v1alpha2 AIMModel or AIMClusterModel carries in its annotation
    `aim.eai.amd.com/v1alpha1-fields` (`custom`, `customTemplates`, `defaultServiceTemplate`, ...): the one reader of
    that annotation on a model for the reconcilers; empty when it carries none or the annotation is not such JSON."""
    spec = carried_fields(model, V1ALPHA1).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def default_service_template(model: Mapping[str, Any]) -> str | None:
    """The template a model written in v1alpha1 names for its services (`spec.defaultServiceTemplate`, trimmed), or
    None when it names none."""
    name = v1alpha1_model_spec(model).get("defaultServiceTemplate")
    return name.strip() or None if isinstance(name, str) else None
