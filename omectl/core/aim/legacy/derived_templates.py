"""The derived AIMServiceTemplate a v1alpha1 AIMService's `spec.overrides` make (upstream's aimservice
`template.go`): its name and its body, as upstream's service controller derives them (docs/aim-versions.md, "What a
v1alpha1 service gets reconciled").

**Name** (`derived_template_name`): `<base>-ovr-<parts>-<hash>`, upstream's derived name (`template_names.
derived_name`: each part made RFC 1123 compliant, the longest cut while over 63 characters) of the base template's
name, `ovr` and, in this order, each override given:

| override | part | hash inputs |
| --- | --- | --- |
| `hardware.gpu.model` (non-empty) | the model lowercased (`mi300x`) | `"gpu"`, the model as written |
| `hardware.gpu.requests` (above 0) | `<n>gpu` (`4gpu`) | `"count"`, n |
| `precision` | as written (`fp16`) | `"precision"`, the precision |
| `metric` | as written (`latency`) | `"metric"`, the metric |

The hash is the first 4 hex digits of the SHA-256 of the inputs, each as Go's `encoding/json` writes it (a string
quoted, a count bare), joined by `|`. Overrides giving none of these (only `hardware.cpu`, or `gpu.minVram`) make no
derived name (None): upstream then derives a template named as the base itself, which omectl does not make.

**Body** (`render_derived_template`): an AIMServiceTemplate (`aim.eai.amd.com/v1alpha1`) in the service's namespace
whose spec is the base template's, then:

- `modelName`: the base's, else the service's resolved model;
- `runtimeConfigName`: the service's (trimmed), else the base's, else none. Upstream writes `default` there, which
  its controllers read as the implicit default (used when it exists, no error when it does not); omectl reads a
  written `default` as an explicit reference, which fails when missing (the spec: "an explicitly-referenced name that
  doesn't exist is a hard error"), so it leaves the field out, which it reads as upstream reads its `default`;
- `metric`, `precision`, `hardware`: each override given replaces the base's (`hardware` whole);
- `imagePullSecrets`: the service's when it lists any, else the base's; `resources`: the service's `spec.resources`
  when it has them, else the base's;
- `caching`: `{enabled: true}` for a service caching Shared (the default), else the base's;

labelled `aim.eai.amd.com/origin: derived` (upstream's mark: a derived template is never derived again),
`aim.eai.amd.com/service.name: <service>` (upstream's controller label) and `app.kubernetes.io/managed-by: omectl`
(upstream writes `aim-engine`, as on every child: `meta`), and owned by the service (a controller reference), so it
goes with it. Two services of a namespace with one base and the same overrides name the same template: the one that
made it owns it, the other uses it as it is (`made_by_another`; upstream's would take it over from each other); a
template of that name that is not derived is used as it is too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.consumers import owner_reference, spec_of
from omectl.core.aim.legacy.kinds import AIM_V1ALPHA1, SERVICE_TEMPLATE
from omectl.core.aim.legacy.service_caches import SERVICE_NAME_LABEL, SHARED, caching_mode
from omectl.core.aim.legacy.template_names import derived_name
from omectl.core.aim.meta import MANAGED_BY, MANAGED_BY_LABEL, name_of, namespace_of, sanitized_label_value
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

ORIGIN_LABEL: Final = "aim.eai.amd.com/origin"
DERIVED: Final = "derived"
OVERRIDES_PART: Final = "ovr"
HASH_LENGTH: Final = 4


def service_overrides(service: Mapping[str, Any]) -> Mapping[str, Any]:
    """The v1alpha1 `spec.overrides` of a service (carried in its annotation); empty when it has none."""
    return as_mapping(v1alpha1_spec(service).get("overrides"))


def override_name_parts(overrides: Mapping[str, Any]) -> tuple[list[str], list[Any]]:
    """The name parts and hash inputs of `overrides`, in upstream's order (module docstring)."""
    parts: list[str] = []
    inputs: list[Any] = []
    gpu = as_mapping(as_mapping(overrides.get("hardware")).get("gpu"))
    model = gpu.get("model")
    if isinstance(model, str) and model:
        parts.append(model.lower())
        inputs += ["gpu", model]
    requests = gpu.get("requests")
    if isinstance(requests, int) and not isinstance(requests, bool) and requests > 0:
        parts.append(f"{requests}gpu")
        inputs += ["count", requests]
    for key in ("precision", "metric"):
        value = overrides.get(key)
        if isinstance(value, str):
            parts.append(value)
            inputs += [key, value]
    return parts, inputs


def derived_template_name(base: str, overrides: Mapping[str, Any]) -> str | None:
    """The name of the template `overrides` derive from the template `base`; None when they give no name part."""
    parts, inputs = override_name_parts(overrides)
    if not parts:
        return None
    return derived_name([base, OVERRIDES_PART, *parts], inputs, HASH_LENGTH)


def is_derived(template: Mapping[str, Any]) -> bool:
    """Whether `template` is a derived one (upstream's `aim.eai.amd.com/origin: derived`)."""
    labels = as_mapping(as_mapping(template.get("metadata")).get("labels"))
    return labels.get(ORIGIN_LABEL) == DERIVED


def made_by_another(template: Mapping[str, Any], service: Mapping[str, Any]) -> bool:
    """Whether the template of a derived name is not `service`'s to write: not derived (someone's own template of
    that name), or controlled by another object. Two services of one namespace deriving from one base with the same
    overrides name one template: the one that made it keeps it, the other uses it as it is (applying its own body,
    each would take it over from the other on every reconcile)."""
    if not is_derived(template):
        return True
    uid = as_mapping(service.get("metadata")).get("uid")
    for ref in as_list(as_mapping(template.get("metadata")).get("ownerReferences")):
        ref = as_mapping(ref)
        if ref.get("controller") is True:
            return ref.get("uid") != uid
    return False


def render_derived_template(
    service: Mapping[str, Any], base: Mapping[str, Any], name: str, model_name: str | None
) -> dict[str, Any]:
    """The derived template `name` of `service` from its base template `base` (module docstring)."""
    overrides = service_overrides(service)
    service_spec = spec_of(service)
    spec: dict[str, Any] = copy_json(dict(spec_of(base)))
    if not spec.get("modelName") and model_name:
        spec["modelName"] = model_name
    config_name = _trimmed(service_spec.get("runtimeConfigName")) or _trimmed(spec.get("runtimeConfigName"))
    if config_name:
        spec["runtimeConfigName"] = config_name
    else:
        spec.pop("runtimeConfigName", None)  # upstream's `default`, as omectl reads an omitted name (module docstring)
    for key in ("metric", "precision", "hardware"):
        if overrides.get(key) is not None:
            spec[key] = copy_json(overrides[key])
    secrets = as_list(v1alpha1_spec(service).get("imagePullSecrets"))
    if secrets:
        spec["imagePullSecrets"] = copy_json(secrets)
    elif not as_list(spec.get("imagePullSecrets")):
        spec.pop("imagePullSecrets", None)
    if isinstance(service_spec.get("resources"), Mapping):
        spec["resources"] = copy_json(service_spec["resources"])
    if caching_mode(service) == SHARED:
        spec["caching"] = {"enabled": True}
    metadata = {
        "name": name,
        "namespace": namespace_of(service),
        "labels": {
            MANAGED_BY_LABEL: MANAGED_BY,
            ORIGIN_LABEL: DERIVED,
            SERVICE_NAME_LABEL: sanitized_label_value(name_of(service)),
        },
        "ownerReferences": [owner_reference(service)],
    }
    return {"apiVersion": AIM_V1ALPHA1, "kind": SERVICE_TEMPLATE, "metadata": metadata, "spec": spec}


def _trimmed(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
