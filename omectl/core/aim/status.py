"""Roll an AIMService's components up into its conditions and `status.status`, as upstream
aim-engine does.

Components and their condition `<Component>Ready`: `RuntimeConfig` (`runtime_config_component`),
`InferenceService` (`inference_service_component`), `HTTPRoute` (`http_route_component`; none when routing is
disabled), and `Model` only for a service that names no model (`no_model_component`, Failed). Each is in one of
upstream's states; the condition is True iff the state is `Ready`.

`status.status` (`Pending|Starting|Running|Degraded|Failed`): `Failed` when the configuration is invalid (an
explicit runtime config that does not exist); else each component's state maps to a service status
(`Failed`→Failed, `Degraded`→Degraded, `NotAvailable`/`Pending`→Pending, `Starting`/`Progressing`→Starting,
`Ready`→Running) and the worst wins, in the order Failed < Degraded < Pending < Starting < Running. So a
`PathTemplateInvalid` or `GatewayNotConfigured` route (state Degraded) makes a running service `Degraded`.

`ConfigValid` is written only when False (reason and message of the configuration error), and flipped to True
(`ConfigurationValid`) when it was there before. `Ready`: True (`AllComponentsReady`) when every component is
Ready; else False with the configuration error, or the worst component's reason when it failed or degraded, or
`Progressing`.

Conditions carry `type`, `status`, `reason`, `message`; the controller stamps `lastTransitionTime`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from omectl.core.aim.resolution import (
    CONFIG_VALID,
    EXPLICIT_MISSING,
    REFERENCE_NOT_FOUND,
    RUNTIME_CONFIG_READY,
    Resolution,
)
from omectl.core.aim.routing import RoutingPlan

ComponentState = Literal["Failed", "NotAvailable", "Degraded", "Pending", "Starting", "Progressing", "Ready"]
ServiceStatus = Literal["Pending", "Starting", "Running", "Degraded", "Failed"]

RUNTIME_CONFIG: Final = "RuntimeConfig"
MODEL: Final = "Model"
MODEL_READY: Final = "ModelReady"
MODEL_NOT_FOUND: Final = "ModelNotFound"
NO_MODEL_MESSAGE: Final = "no model specified in service spec"
"""Upstream's reason and message for a service that names no model (an invalid spec: Failed until it is fixed)."""
INFERENCE_SERVICE: Final = "InferenceService"
HTTP_ROUTE: Final = "HTTPRoute"
INFERENCE_SERVICE_READY: Final = "InferenceServiceReady"
HTTP_ROUTE_READY: Final = "HTTPRouteReady"
READY: Final = "Ready"

ALL_COMPONENTS_READY: Final = "AllComponentsReady"
ALL_COMPONENTS_READY_MESSAGE: Final = "All components are ready"
PROGRESSING: Final = "Progressing"
PROGRESSING_MESSAGE: Final = "Waiting for components to become ready"
CONFIGURATION_VALID: Final = "ConfigurationValid"
CONFIGURATION_VALID_MESSAGE: Final = "Configuration is valid"

SERVICE_STATUS_OF_STATE: Final[Mapping[str, ServiceStatus]] = {
    "Failed": "Failed",
    "Degraded": "Degraded",
    "NotAvailable": "Pending",
    "Pending": "Pending",
    "Starting": "Starting",
    "Progressing": "Starting",
    "Ready": "Running",
}
SERVICE_STATUS_ORDER: Final[tuple[ServiceStatus, ...]] = ("Failed", "Degraded", "Pending", "Starting", "Running")
"""Worst first."""


@dataclass(frozen=True)
class Component:
    name: str
    state: ComponentState
    reason: str
    message: str = ""

    @property
    def condition_type(self) -> str:
        return f"{self.name}Ready"


@dataclass(frozen=True)
class ConfigError:
    """A configuration error that fails the service: `ConfigValid=False` with this reason and message."""

    reason: str
    message: str


@dataclass(frozen=True)
class RollUp:
    status: ServiceStatus
    conditions: tuple[dict[str, str], ...]


def condition(condition_type: str, status: bool, reason: str, message: str) -> dict[str, str]:
    return {"type": condition_type, "status": "True" if status else "False", "reason": reason, "message": message}


def roll_up(
    components: Sequence[Component],
    *,
    config_error: ConfigError | None = None,
    previous_conditions: Sequence[Mapping[str, Any]] = (),
) -> RollUp:
    """The service's conditions (components in the order given, then `ConfigValid`, then `Ready`) and status."""
    conditions = [condition(c.condition_type, c.state == "Ready", c.reason, c.message) for c in components]
    if config_error is not None:
        conditions.append(condition(CONFIG_VALID, False, config_error.reason, config_error.message))
    elif any(previous.get("type") == CONFIG_VALID for previous in previous_conditions):
        conditions.append(condition(CONFIG_VALID, True, CONFIGURATION_VALID, CONFIGURATION_VALID_MESSAGE))

    if config_error is not None:
        conditions.append(condition(READY, False, config_error.reason, config_error.message))
        return RollUp("Failed", tuple(conditions))
    statuses = [SERVICE_STATUS_OF_STATE[c.state] for c in components]
    status = min(statuses, key=SERVICE_STATUS_ORDER.index) if statuses else "Pending"
    if components and status == "Running":
        conditions.append(condition(READY, True, ALL_COMPONENTS_READY, ALL_COMPONENTS_READY_MESSAGE))
    elif status in ("Failed", "Degraded"):
        worst = next(c for c in components if SERVICE_STATUS_OF_STATE[c.state] == status)
        conditions.append(condition(READY, False, worst.reason, worst.message))
    else:
        conditions.append(condition(READY, False, PROGRESSING, PROGRESSING_MESSAGE))
    return RollUp(status, tuple(conditions))


def runtime_config_component(resolution: Resolution) -> Component:
    """The `RuntimeConfig` component, from the resolution's `RuntimeConfigReady` condition."""
    ready = next(c for c in resolution.conditions if c["type"] == RUNTIME_CONFIG_READY)
    state: ComponentState = "Ready" if ready["status"] == "True" else "Failed"
    return Component(RUNTIME_CONFIG, state, ready["reason"], ready["message"])


def runtime_config_error(resolution: Resolution) -> ConfigError | None:
    """The configuration error a resolution imposes (`ReferenceNotFound` on a missing explicit name), or None."""
    if resolution.outcome != EXPLICIT_MISSING:
        return None
    ready = next(c for c in resolution.conditions if c["type"] == RUNTIME_CONFIG_READY)
    return ConfigError(REFERENCE_NOT_FOUND, ready["message"])


def no_model_component() -> Component:
    """The `Model` component of a service that names no model: Failed / `ModelNotFound`, upstream's message."""
    return Component(MODEL, "Failed", MODEL_NOT_FOUND, NO_MODEL_MESSAGE)


def http_route_component(plan: RoutingPlan, live_route: Mapping[str, Any] | None) -> Component | None:
    """The `HTTPRoute` component: None when routing is disabled; Degraded on a plan error (`PathTemplateInvalid`,
    `GatewayNotConfigured`, `RequestTimeoutInvalid`); else from the live route's parent conditions."""
    if not plan.enabled:
        return None
    if plan.error is not None:
        return Component(HTTP_ROUTE, "Degraded", plan.error.reason, plan.error.message)
    parents = _get(live_route, "status", "parents") if live_route is not None else None
    if not isinstance(parents, list) or not parents:
        return Component(HTTP_ROUTE, "Progressing", "HTTPRoutePending", "Waiting for the gateway to accept the route")
    accepted = True
    for parent in parents:
        for cond in _conditions(parent):
            if cond.get("status") != "False":
                continue
            if cond.get("type") == "Accepted":
                return Component(HTTP_ROUTE, "Degraded", "HTTPRouteNotAccepted", str(cond.get("message") or ""))
            if cond.get("type") == "ResolvedRefs":
                return Component(HTTP_ROUTE, "Degraded", "HTTPRouteRefsNotResolved", str(cond.get("message") or ""))
        accepted = accepted and any(
            cond.get("type") == "Accepted" and cond.get("status") == "True" for cond in _conditions(parent)
        )
    if accepted:
        return Component(HTTP_ROUTE, "Ready", "HTTPRouteAccepted", "")
    return Component(HTTP_ROUTE, "Progressing", "HTTPRoutePending", "Waiting for the gateway to accept the route")


def inference_service_component(live: Mapping[str, Any] | None) -> Component:
    """The `InferenceService` component from the live KServe object (None: not created yet)."""
    if live is None:
        return Component(INFERENCE_SERVICE, "Pending", "InferenceServicePending", "InferenceService not created yet")
    status = live.get("status")
    states = _get(status, "modelStatus", "states") if isinstance(status, Mapping) else None
    if isinstance(states, Mapping) and states.get("targetModelState") == "FailedToLoad":
        failure = _get(status, "modelStatus", "lastFailureInfo", "message")
        return Component(INFERENCE_SERVICE, "Failed", "InferenceServiceFailed", str(failure or "model failed to load"))
    for cond in _conditions(status):
        if cond.get("type") == "Ready":
            if cond.get("status") == "True":
                return Component(INFERENCE_SERVICE, "Ready", "InferenceServiceReady", "")
            return Component(
                INFERENCE_SERVICE, "Progressing", "InferenceServiceNotReady", str(cond.get("message") or "")
            )
    return Component(INFERENCE_SERVICE, "Starting", "InferenceServiceStarting", "Waiting for the InferenceService")


def _conditions(obj: Any) -> list[Mapping[str, Any]]:
    conditions = obj.get("conditions") if isinstance(obj, Mapping) else None
    return [c for c in conditions if isinstance(c, Mapping)] if isinstance(conditions, list) else []


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(key)
    return obj
