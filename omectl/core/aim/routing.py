"""Routing of an AIMService through a Gateway API HTTPRoute.

Effective routing (`effective_routing`): the resolved config's `routing`, with the service's own `spec.routing`
laid over it by the layer rules (`omectl.core.aim.layers`; resolution already does this, and doing it again changes
nothing). So `enabled` is the service's value, else the config's, else false; `gatewayRef` merges field by field;
`annotations` are the config's overlaid key by key with the service's own.

`plan_routing` decides, in this order:

- routing not enabled → no route, no `HTTPRouteReady` condition;
- no `gatewayRef` (or one without a name) → `GatewayNotConfigured`;
- a `requestTimeout` that is not a Go duration an HTTPRoute can hold → `RequestTimeoutInvalid`;
- a path that does not render (`omectl.core.aim.paths`) → `PathTemplateInvalid`;
- else the HTTPRoute, and the path for `status.routing.path`.

On any of the three errors the controller sets `HTTPRouteReady=False` with that reason and message, rolls the
service up to `Degraded`, neither creates nor updates the HTTPRoute (an existing one is left alone), and still
applies the InferenceService.

The HTTPRoute (`gateway.networking.k8s.io/v1`) has the AIMService's name and namespace, `parentRefs:
[gatewayRef]`, and one rule: a `PathPrefix` match on the path, a `URLRewrite` filter replacing the prefix with `/`,
a backend Service `<InferenceService>-predictor` port 80 in the same namespace, and `timeouts.request` when a
request timeout is set. It is owned by the AIMService (controller).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.durations import gateway_duration, validate_duration
from omectl.core.aim.layers import merge_config
from omectl.core.aim.meta import child_labels, name_of, namespace_of, owner_reference
from omectl.core.aim.paths import PATH_TEMPLATE_INVALID, PathTemplateError, service_path
from omectl.core.layering import copy_json

__all__ = [
    "GATEWAY_NOT_CONFIGURED",
    "GATEWAY_NOT_CONFIGURED_MESSAGE",
    "HTTPROUTE_API_VERSION",
    "PATH_TEMPLATE_INVALID",
    "REQUEST_TIMEOUT_INVALID",
    "RoutingError",
    "RoutingPlan",
    "effective_routing",
    "plan_routing",
    "predictor_service_name",
    "render_http_route",
    "routing_enabled",
    "validate_duration",
]

HTTPROUTE_API_VERSION: Final = "gateway.networking.k8s.io/v1"
HTTPROUTE_KIND: Final = "HTTPRoute"
ROUTING_COMPONENT: Final = "routing"
PREDICTOR_PORT: Final = 80

GATEWAY_NOT_CONFIGURED: Final = "GatewayNotConfigured"
GATEWAY_NOT_CONFIGURED_MESSAGE: Final = (
    "Routing is enabled but no gatewayRef is configured in service or runtime config"
)
REQUEST_TIMEOUT_INVALID: Final = "RequestTimeoutInvalid"


@dataclass(frozen=True)
class RoutingError:
    """Why an enabled route is not rendered: the `HTTPRouteReady=False` reason and message."""

    reason: str
    message: str


@dataclass(frozen=True)
class RoutingPlan:
    enabled: bool
    route: dict[str, Any] | None = None
    """The HTTPRoute to apply; None when routing is disabled or on an error."""
    path: str | None = None
    """The rendered path, for `status.routing.path`."""
    error: RoutingError | None = None


def effective_routing(service: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """The config's `routing` with the service's own `spec.routing` laid over it."""
    spec = service.get("spec")
    own = spec.get("routing") if isinstance(spec, Mapping) else None
    lower = config.get("routing")
    merged = merge_config(
        {"routing": lower} if isinstance(lower, Mapping) else {},
        {"routing": own} if isinstance(own, Mapping) else {},
    )
    routing = merged.get("routing")
    return routing if isinstance(routing, dict) else {}


def routing_enabled(service: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """The service's `routing.enabled`, else the config's, else false."""
    return effective_routing(service, config).get("enabled") is True


def predictor_service_name(inference_service_name: str) -> str:
    return f"{inference_service_name}-predictor"


def plan_routing(service: Mapping[str, Any], config: Mapping[str, Any]) -> RoutingPlan:
    """What to do about the service's HTTPRoute (module docstring)."""
    routing = effective_routing(service, config)
    if routing.get("enabled") is not True:
        return RoutingPlan(enabled=False)
    gateway = routing.get("gatewayRef")
    if not isinstance(gateway, Mapping) or not gateway.get("name"):
        return RoutingPlan(enabled=True, error=RoutingError(GATEWAY_NOT_CONFIGURED, GATEWAY_NOT_CONFIGURED_MESSAGE))
    timeout = routing.get("requestTimeout")
    if timeout is not None:
        problem = validate_duration(timeout) if isinstance(timeout, str) else "not a string"
        if problem is not None:
            return RoutingPlan(
                enabled=True, error=RoutingError(REQUEST_TIMEOUT_INVALID, f"routing.requestTimeout: {problem}")
            )
    try:
        path = service_path(service, config)
    except PathTemplateError as error:
        return RoutingPlan(enabled=True, error=RoutingError(PATH_TEMPLATE_INVALID, str(error)))
    return RoutingPlan(enabled=True, route=render_http_route(service, config, path), path=path)


def render_http_route(service: Mapping[str, Any], config: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The HTTPRoute routing `path` to the service's predictor; the routing must have a `gatewayRef`."""
    routing = effective_routing(service, config)
    name = name_of(service)
    namespace = namespace_of(service)
    rule: dict[str, Any] = {
        "matches": [{"path": {"type": "PathPrefix", "value": path}}],
        "filters": [
            {
                "type": "URLRewrite",
                "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
            }
        ],
        "backendRefs": [
            {"kind": "Service", "name": predictor_service_name(name), "namespace": namespace, "port": PREDICTOR_PORT}
        ],
    }
    timeout = routing.get("requestTimeout")
    if isinstance(timeout, str) and timeout:
        rule["timeouts"] = {"request": gateway_duration(timeout)}
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": child_labels(service, ROUTING_COMPONENT),
        "ownerReferences": [owner_reference(service)],
    }
    annotations = routing.get("annotations")
    if isinstance(annotations, Mapping) and annotations:
        metadata["annotations"] = {str(key): str(value) for key, value in annotations.items()}
    return {
        "apiVersion": HTTPROUTE_API_VERSION,
        "kind": HTTPROUTE_KIND,
        "metadata": metadata,
        "spec": {"parentRefs": [copy_json(routing["gatewayRef"])], "rules": [rule]},
    }
