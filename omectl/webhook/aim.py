"""Admission of AMD AIM objects: AIMRuntimeConfig, AIMClusterRuntimeConfig and AIMService (`aim.eai.amd.com`).

`POST /validate/<cluster>/<aimruntimeconfig|aimclusterruntimeconfig|aimservice>` on the webhook server. The checks
are pure (`omectl.core.aim.validation`) and need nothing of the cluster. A denial's message is every problem as
`<field path>: <reason>`, joined with `; `, e.g.
`spec.routing.pathTemplate: invalid jsonpath expression "{.metadata[}": unterminated array`. A malformed object (not
an object, no name, a block of the wrong type) gets a clear denial naming the field, never a 500.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from omectl.core.aim.validation import validate_runtime_config, validate_service

log = logging.getLogger(__name__)

AIM_GROUP: Final = "aim.eai.amd.com"
AIM_RUNTIME_CONFIG: Final = "AIMRuntimeConfig"
AIM_CLUSTER_RUNTIME_CONFIG: Final = "AIMClusterRuntimeConfig"
AIM_SERVICE: Final = "AIMService"
AIM_RUNTIME_CONFIG_WEBHOOK: Final = "aimruntimeconfig.aim-webhook-server.validator"
AIM_CLUSTER_RUNTIME_CONFIG_WEBHOOK: Final = "aimclusterruntimeconfig.aim-webhook-server.validator"
AIM_SERVICE_WEBHOOK: Final = "aimservice.aim-webhook-server.validator"

AIM_KINDS: Final[Mapping[str, str]] = {
    "aimruntimeconfig": AIM_RUNTIME_CONFIG,
    "aimclusterruntimeconfig": AIM_CLUSTER_RUNTIME_CONFIG,
    "aimservice": AIM_SERVICE,
}
"""Webhook path segment → kind."""

# (webhook name, kind, plural, versions)
_CONFIG_VERSIONS: Final = ("v1alpha1", "v1alpha2")
_HOOKS: Final = (
    (AIM_RUNTIME_CONFIG_WEBHOOK, AIM_RUNTIME_CONFIG, "aimruntimeconfigs", _CONFIG_VERSIONS),
    (AIM_CLUSTER_RUNTIME_CONFIG_WEBHOOK, AIM_CLUSTER_RUNTIME_CONFIG, "aimclusterruntimeconfigs", _CONFIG_VERSIONS),
    (AIM_SERVICE_WEBHOOK, AIM_SERVICE, "aimservices", ("v1alpha2",)),
)
# blocks of a runtime config (or an inline one) that must be objects, and the lists
_CONFIG_OBJECTS: Final = ("routing", "labelPropagation", "storage")
_SERVICE_OBJECTS: Final = ("model", "runtimeConfig", "routing", "storage", "resources")


def _describe(value: Any) -> str:
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 80 else text[:77] + "..."


def _shape_problems(spec: Mapping[str, Any], path: str, objects: tuple[str, ...]) -> list[str]:
    """Blocks of the wrong JSON type, which the field checks would otherwise skip."""
    problems = [
        f"{path}.{field}: must be an object"
        for field in objects
        if spec.get(field) is not None and not isinstance(spec.get(field), Mapping)
    ]
    if spec.get("env") is not None and not isinstance(spec.get("env"), list):
        problems.append(f"{path}.env: must be a list")
    routing = spec.get("routing")
    if isinstance(routing, Mapping):
        for field in ("gatewayRef", "annotations"):
            if routing.get(field) is not None and not isinstance(routing.get(field), Mapping):
                problems.append(f"{path}.routing.{field}: must be an object")
    propagation = spec.get("labelPropagation")
    match = propagation.get("match") if isinstance(propagation, Mapping) else None
    if match is not None and not isinstance(match, list):
        problems.append(f"{path}.labelPropagation.match: must be a list")
    return problems


def validate_aim(kind: str, obj: Any) -> str | None:
    """The denial message for an AIM object of `kind`, or None to admit it."""
    if not isinstance(obj, Mapping):
        return "the object is not a JSON object"
    object_kind = obj.get("kind")
    if object_kind is not None and object_kind != kind:
        return f"this webhook validates {kind} objects, not {_describe(object_kind)}"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        return "metadata.name is required"
    labels = meta.get("labels")
    if labels is not None and (not isinstance(labels, Mapping) or not all(isinstance(v, str) for v in labels.values())):
        return "metadata.labels must be a map of strings"
    spec = obj.get("spec")
    if kind == AIM_SERVICE:
        if spec is None:
            spec = {}  # the CRD makes spec optional: judged as an empty one, as upstream admits it
        if not isinstance(spec, Mapping):
            return "spec must be an object"
        problems = _shape_problems(spec, "spec", _SERVICE_OBJECTS)
        inline = spec.get("runtimeConfig")
        if isinstance(inline, Mapping):
            problems += _shape_problems(inline, "spec.runtimeConfig", _CONFIG_OBJECTS)
        if not problems:
            problems = [str(error) for error in validate_service(spec)]
    else:
        if spec is None:
            return None
        if not isinstance(spec, Mapping):
            return "spec must be an object"
        problems = _shape_problems(spec, "spec", _CONFIG_OBJECTS)
        if not problems:
            problems = [str(error) for error in validate_runtime_config(spec)]
    return "; ".join(problems) if problems else None


def aim_verdict(kind: str, obj: Any) -> tuple[bool, str | None]:
    """`(allowed, denial message)` for the webhook server; a bug still answers with a clear denial."""
    try:
        reason = validate_aim(kind, obj)
    except Exception as exc:  # a bug in a validator still answers with a clear denial, never a 500
        log.exception("AIM admission of a %s failed", kind)
        reason = f"internal error validating the {kind}: {type(exc).__name__}: {exc}"
    return reason is None, reason


def aim_webhooks(
    url_for: Callable[[str, str], str], cluster: str, ca_bundle: str | None, failure_policy: str
) -> list[dict[str, Any]]:
    """The AIM entries of the ValidatingWebhookConfiguration `webhook_configuration` builds."""
    hooks: list[dict[str, Any]] = []
    for name, kind, plural, versions in _HOOKS:
        client_config: dict[str, Any] = {"url": url_for(cluster, kind)}
        if ca_bundle:
            client_config["caBundle"] = ca_bundle
        hooks.append(
            {
                "name": name,
                "clientConfig": client_config,
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": [AIM_GROUP],
                        "apiVersions": list(versions),
                        "resources": [plural],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": failure_policy,
                "timeoutSeconds": 10,
            }
        )
    return hooks
