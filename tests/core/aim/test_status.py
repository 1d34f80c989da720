"""Status roll-up: the worst component wins, explicit-missing fails, route errors degrade, ConfigValid rules."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.resolution import resolve
from omectl.core.aim.routing import plan_routing
from omectl.core.aim.status import (
    Component,
    ComponentState,
    ConfigError,
    http_route_component,
    inference_service_component,
    roll_up,
    runtime_config_component,
    runtime_config_error,
)

SERVICE = {
    "kind": "AIMService",
    "metadata": {"name": "qwen-chat", "namespace": "ml-team", "uid": "u"},
    "spec": {"model": {"name": "qwen-qwen3-32b"}},
}
READY_RC = Component("RuntimeConfig", "Ready", "RuntimeConfigResolved", "")
READY_ISVC = Component("InferenceService", "Ready", "InferenceServiceReady", "")


@pytest.mark.parametrize(
    ("states", "status"),
    [
        (["Ready", "Ready"], "Running"),
        (["Ready", "Progressing"], "Starting"),
        (["Ready", "Starting"], "Starting"),
        (["Ready", "Pending"], "Pending"),
        (["Ready", "NotAvailable"], "Pending"),
        (["Starting", "Pending"], "Pending"),
        (["Ready", "Degraded"], "Degraded"),
        (["Degraded", "NotAvailable"], "Degraded"),
        (["Degraded", "Failed"], "Failed"),
        (["Ready", "Failed"], "Failed"),
        ([], "Pending"),
    ],
)
def test_worst_component_wins(states: list[ComponentState], status: str) -> None:
    components = [Component(f"C{i}", state, f"R{i}") for i, state in enumerate(states)]
    assert roll_up(components).status == status


def test_all_ready() -> None:
    result = roll_up([READY_RC, READY_ISVC])
    assert result.conditions == (
        {"type": "RuntimeConfigReady", "status": "True", "reason": "RuntimeConfigResolved", "message": ""},
        {"type": "InferenceServiceReady", "status": "True", "reason": "InferenceServiceReady", "message": ""},
        {"type": "Ready", "status": "True", "reason": "AllComponentsReady", "message": "All components are ready"},
    )


def test_progressing() -> None:
    result = roll_up([READY_RC, Component("InferenceService", "Progressing", "InferenceServiceNotReady", "x")])
    assert result.conditions[-1] == {
        "type": "Ready",
        "status": "False",
        "reason": "Progressing",
        "message": "Waiting for components to become ready",
    }


def test_explicit_missing_config_fails_the_service() -> None:
    resolution = resolve({**SERVICE, "spec": {"runtimeConfigName": "non-existent"}}, lambda ns, name: None)
    error = runtime_config_error(resolution)
    assert error == ConfigError("ReferenceNotFound", "RuntimeConfig non-existent not found")
    result = roll_up([runtime_config_component(resolution)], config_error=error)
    assert result.status == "Failed"
    assert result.conditions == (
        {
            "type": "RuntimeConfigReady",
            "status": "False",
            "reason": "ReferenceNotFound",
            "message": "RuntimeConfig non-existent not found",
        },
        {
            "type": "ConfigValid",
            "status": "False",
            "reason": "ReferenceNotFound",
            "message": "RuntimeConfig non-existent not found",
        },
        {
            "type": "Ready",
            "status": "False",
            "reason": "ReferenceNotFound",
            "message": "RuntimeConfig non-existent not found",
        },
    )


def test_default_missing_is_ready() -> None:
    resolution = resolve(SERVICE, lambda ns, name: None)
    assert runtime_config_error(resolution) is None
    component = runtime_config_component(resolution)
    assert component == Component("RuntimeConfig", "Ready", "DefaultConfigNotFound", "Default config was not found")
    assert roll_up([component, READY_ISVC]).status == "Running"


def test_config_valid_flips_to_true_only_when_it_was_there() -> None:
    assert all(c["type"] != "ConfigValid" for c in roll_up([READY_RC]).conditions)
    previous = [{"type": "ConfigValid", "status": "False", "reason": "ReferenceNotFound"}]
    conditions = roll_up([READY_RC], previous_conditions=previous).conditions
    assert {
        "type": "ConfigValid",
        "status": "True",
        "reason": "ConfigurationValid",
        "message": "Configuration is valid",
    } in conditions


@pytest.mark.parametrize(
    ("routing", "reason"),
    [
        ({"enabled": True}, "GatewayNotConfigured"),
        (
            {"enabled": True, "gatewayRef": {"name": "gw"}, "pathTemplate": "/{.metadata.labels['x']}"},
            "PathTemplateInvalid",
        ),
    ],
)
def test_route_errors_degrade_a_running_service(routing: dict[str, Any], reason: str) -> None:
    plan = plan_routing(SERVICE, {"routing": routing})
    component = http_route_component(plan, None)
    assert component is not None
    assert (component.condition_type, component.state, component.reason) == ("HTTPRouteReady", "Degraded", reason)
    result = roll_up([READY_RC, READY_ISVC, component])
    assert result.status == "Degraded"
    assert {
        "type": "InferenceServiceReady",
        "status": "True",
        "reason": "InferenceServiceReady",
        "message": "",
    } in result.conditions
    route_condition = next(c for c in result.conditions if c["type"] == "HTTPRouteReady")
    assert (route_condition["status"], route_condition["reason"]) == ("False", reason)
    assert route_condition["message"] == component.message != ""
    assert result.conditions[-1]["reason"] == reason


def test_disabled_routing_has_no_route_component() -> None:
    assert http_route_component(plan_routing(SERVICE, {}), None) is None


ROUTED = plan_routing(SERVICE, {"routing": {"enabled": True, "gatewayRef": {"name": "gw"}}})


@pytest.mark.parametrize(
    ("live", "state", "reason"),
    [
        (None, "Progressing", "HTTPRoutePending"),
        ({"status": {"parents": []}}, "Progressing", "HTTPRoutePending"),
        (
            {"status": {"parents": [{"conditions": [{"type": "Accepted", "status": "True"}]}]}},
            "Ready",
            "HTTPRouteAccepted",
        ),
        (
            {
                "status": {
                    "parents": [{"conditions": [{"type": "Accepted", "status": "False", "message": "no listener"}]}]
                }
            },
            "Degraded",
            "HTTPRouteNotAccepted",
        ),
        (
            {
                "status": {
                    "parents": [
                        {
                            "conditions": [
                                {"type": "Accepted", "status": "True"},
                                {"type": "ResolvedRefs", "status": "False", "message": "no backend"},
                            ]
                        }
                    ]
                }
            },
            "Degraded",
            "HTTPRouteRefsNotResolved",
        ),
    ],
)
def test_http_route_health(live: dict[str, Any] | None, state: str, reason: str) -> None:
    component = http_route_component(ROUTED, live)
    assert component is not None
    assert (component.state, component.reason) == (state, reason)


@pytest.mark.parametrize(
    ("live", "state", "reason"),
    [
        (None, "Pending", "InferenceServicePending"),
        ({"status": {}}, "Starting", "InferenceServiceStarting"),
        ({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}, "Ready", "InferenceServiceReady"),
        ({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}, "Progressing", "InferenceServiceNotReady"),
        (
            {"status": {"modelStatus": {"states": {"targetModelState": "FailedToLoad"}}}},
            "Failed",
            "InferenceServiceFailed",
        ),
    ],
)
def test_inference_service_health(live: dict[str, Any] | None, state: str, reason: str) -> None:
    component = inference_service_component(live)
    assert (component.state, component.reason) == (state, reason)
