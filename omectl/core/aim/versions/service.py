"""AIMService between upstream's v1alpha1 and omectl's v1alpha2 (docs/aim-versions.md, "AIMService").

Both versions name the model (v1alpha1 by name, image or an inline `custom` model; v1alpha2 by name or image), the
runtime config, routing, env, storage defaults, replicas and resources alike. Upstream's template selection,
caching modes, deprecated `cacheModel`, overrides, autoscaling (`minReplicas`, `maxReplicas`, `autoScaling`), pull
secrets and service account have no v1alpha2 counterpart, nor have v1alpha2's inline `runtimeConfig`, its cache
`storage.size` / `storage.storageClassName` and its `caching.enabled` (on or off, where v1alpha1 has a mode: the
shapes differ) a v1alpha1 one: each travels in the other's annotation. Status: the state, conditions, observed
generation, resolved runtime config, resolved template, resolved model and template cache reference (the same shape in
both), routing path and replica counts (`status.runtime`) are shared; upstream's cache retry count is v1alpha1's
alone.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.versions.engine import UNHELD, V1ALPHA1, Container, Field, KindConversion, Values, carried_fields

INT32_MAX: Final = 2**31 - 1

STATUS: Final = Values({name: name for name in ("Pending", "Starting", "Running", "Degraded", "Failed")})
"""`status.status`: the same five states in both versions."""
SCOPE: Final = Values({"Namespace": "Namespace", "Cluster": "Cluster"})
"""`status.resolvedRuntimeConfig.scope`: v1alpha1's `Merged` and `Unknown` have no v1alpha2 value."""


def _named(value: Any) -> Any:
    """A model name or image both versions hold alike: a non-empty string (v1alpha2 has minLength 1; an empty one
    stays in the annotation)."""
    return copy.deepcopy(value) if isinstance(value, str) and value else UNHELD


def _replicas(value: Any) -> Any:
    """A replica count both versions hold alike: an int from 0 (v1alpha2's minimum) to the int32 maximum (v1alpha1's
    type); any other stays in the annotation."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT32_MAX:
        return UNHELD
    return value


SERVICE: Final = KindConversion(
    "AIMService",
    (
        # spec.model: name or image; v1alpha1's custom has no counterpart (v1alpha2 then has no model)
        Field.both(("spec", "model", "name"), _named, _named),
        Field.both(("spec", "model", "image"), _named, _named),
        Field.both(("spec", "runtimeConfigName")),
        Field.both(("spec", "env")),
        Field.both(("spec", "replicas"), _replicas, _replicas),
        Container.both(("spec", "routing")),
        *(
            Field.both(("spec", "routing", name))
            for name in ("enabled", "pathTemplate", "requestTimeout", "annotations")
        ),
        Container.both(("spec", "routing", "gatewayRef")),
        *(
            Field.both(("spec", "routing", "gatewayRef", name))
            for name in ("group", "kind", "namespace", "name", "sectionName", "port")
        ),
        Container.both(("spec", "storage")),
        Field.both(("spec", "storage", "defaultStorageClassName")),
        Field.both(("spec", "storage", "pvcHeadroomPercent")),
        Container.both(("spec", "resources")),
        *(Field.both(("spec", "resources", name)) for name in ("claims", "limits", "requests")),
        Field.values(("status", "status"), ("status", "status"), STATUS),
        Field.both(("status", "conditions")),
        Field.both(("status", "observedGeneration")),
        Container.both(("status", "resolvedRuntimeConfig")),
        *(Field.both(("status", "resolvedRuntimeConfig", name)) for name in ("kind", "name", "namespace", "uid")),
        Field.values(("status", "resolvedRuntimeConfig", "scope"), ("status", "resolvedRuntimeConfig", "scope"), SCOPE),
        Container.both(("status", "resolvedTemplate")),
        *(Field.both(("status", "resolvedTemplate", name)) for name in ("kind", "name", "namespace", "scope", "uid")),
        Container.both(("status", "resolvedModel")),
        *(Field.both(("status", "resolvedModel", name)) for name in ("kind", "name", "namespace", "scope", "uid")),
        Container.both(("status", "cache")),
        Container.both(("status", "cache", "templateCacheRef")),
        *(
            Field.both(("status", "cache", "templateCacheRef", name))
            for name in ("kind", "name", "namespace", "scope", "uid")
        ),
        Container.both(("status", "routing")),
        Field.both(("status", "routing", "path")),
        Container.both(("status", "runtime")),
        *(
            Field.both(("status", "runtime", name))
            for name in ("currentReplicas", "desiredReplicas", "minReplicas", "maxReplicas", "replicas")
        ),
    ),
    marks_v1alpha1_writes=True,
)


def v1alpha1_spec(service: Mapping[str, Any]) -> Mapping[str, Any]:
    """The v1alpha1-only spec fields a v1alpha2 service carries in its annotation `aim.eai.amd.com/v1alpha1-fields`
    (`template`, `caching`, `overrides`, `model.custom`, ...): the one reader of that annotation for the reconcilers;
    empty when it carries none or the annotation is not such JSON."""
    spec = carried_fields(service, V1ALPHA1).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def template_name(service: Mapping[str, Any]) -> str | None:
    """The template a v1alpha2 service written in v1alpha1 selects by name (`spec.template.name`, trimmed as upstream
    trims it), or None when it names none."""
    template = v1alpha1_spec(service).get("template")
    name = template.get("name") if isinstance(template, Mapping) else None
    return name.strip() or None if isinstance(name, str) else None
