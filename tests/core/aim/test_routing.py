"""Routing: enablement precedence, gateway and timeout errors, path errors, and the rendered HTTPRoute."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.durations import DurationError, gateway_duration, parse_duration, validate_duration
from omectl.core.aim.routing import (
    GATEWAY_NOT_CONFIGURED,
    GATEWAY_NOT_CONFIGURED_MESSAGE,
    PATH_TEMPLATE_INVALID,
    REQUEST_TIMEOUT_INVALID,
    effective_routing,
    plan_routing,
    routing_enabled,
)

GATEWAY = {"name": "inference-gateway", "namespace": "gateways"}


def service(routing: dict[str, Any] | None = None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"name": "qwen-qwen3-32b"}}
    if routing is not None:
        spec["routing"] = routing
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {
            "name": "qwen-chat",
            "namespace": "ml-team",
            "uid": "svc-uid",
            "labels": labels if labels is not None else {"project": "conversational-ai"},
        },
        "spec": spec,
    }


@pytest.mark.parametrize(
    ("own", "config", "enabled"),
    [
        (None, None, False),
        (True, None, True),
        (False, None, False),
        (None, True, True),
        (False, True, False),
        (True, False, True),
        (None, False, False),
    ],
)
def test_routing_enabled_precedence(own: bool | None, config: bool | None, enabled: bool) -> None:
    svc = service({"enabled": own} if own is not None else None)
    cfg = {"routing": {"enabled": config}} if config is not None else {}
    assert routing_enabled(svc, cfg) is enabled


def test_effective_routing_merges_the_services_own_routing_over_the_config() -> None:
    svc = service({"gatewayRef": {"name": "own-gw"}, "requestTimeout": "30s", "annotations": {"b": "svc", "c": "3"}})
    config = {
        "routing": {
            "enabled": True,
            "gatewayRef": GATEWAY,
            "requestTimeout": "60s",
            "annotations": {"a": "1", "b": "cfg"},
        }
    }
    assert effective_routing(svc, config) == {
        "enabled": True,
        "gatewayRef": {"name": "own-gw", "namespace": "gateways"},
        "requestTimeout": "30s",
        "annotations": {"a": "1", "b": "svc", "c": "3"},
    }
    # applying it again (resolution already laid the service's routing) changes nothing
    assert effective_routing(svc, {"routing": effective_routing(svc, config)}) == effective_routing(svc, config)


def test_disabled_routing_plans_nothing() -> None:
    plan = plan_routing(service(), {"routing": {"gatewayRef": GATEWAY}})
    assert (plan.enabled, plan.route, plan.path, plan.error) == (False, None, None, None)


@pytest.mark.parametrize("gateway", [None, {}, {"namespace": "gateways"}])
def test_enabled_without_a_gateway_is_gateway_not_configured(gateway: dict[str, Any] | None) -> None:
    routing: dict[str, Any] = {"enabled": True}
    if gateway is not None:
        routing["gatewayRef"] = gateway
    plan = plan_routing(service(), {"routing": routing})
    assert plan.enabled and plan.route is None
    assert plan.error is not None
    assert (plan.error.reason, plan.error.message) == (GATEWAY_NOT_CONFIGURED, GATEWAY_NOT_CONFIGURED_MESSAGE)
    assert (
        GATEWAY_NOT_CONFIGURED_MESSAGE
        == "Routing is enabled but no gatewayRef is configured in service or runtime config"
    )


def test_invalid_path_template_skips_the_route() -> None:
    config = {"routing": {"enabled": True, "gatewayRef": GATEWAY, "pathTemplate": "/{.metadata.labels['team']}"}}
    plan = plan_routing(service(), config)
    assert plan.route is None and plan.path is None
    assert plan.error is not None
    assert plan.error.reason == PATH_TEMPLATE_INVALID
    assert 'label "team" not found' in plan.error.message


def test_invalid_request_timeout_skips_the_route() -> None:
    plan = plan_routing(service(), {"routing": {"enabled": True, "gatewayRef": GATEWAY, "requestTimeout": "soon"}})
    assert plan.error is not None
    assert (plan.error.reason, plan.error.message) == (
        REQUEST_TIMEOUT_INVALID,
        'routing.requestTimeout: time: invalid duration "soon"',
    )


def test_spec_example_renders_the_http_route() -> None:
    config = {
        "routing": {
            "enabled": True,
            "gatewayRef": {**GATEWAY, "sectionName": "https", "port": 443},
            "pathTemplate": "/ml/{.metadata.namespace}/{.metadata.labels['project']}",
            "requestTimeout": "180s",
            "annotations": {"example.com/owner": "ml", "example.com/tier": "cfg"},
        }
    }
    svc = service({"annotations": {"example.com/tier": "gold"}})
    plan = plan_routing(svc, config)
    assert plan.error is None
    assert plan.path == "/ml/ml-team/conversational-ai"
    assert plan.route == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {
            "name": "qwen-chat",
            "namespace": "ml-team",
            "labels": {
                "app.kubernetes.io/component": "routing",
                "app.kubernetes.io/managed-by": "omectl",
                "aim.eai.amd.com/service": "qwen-chat",
            },
            "annotations": {"example.com/owner": "ml", "example.com/tier": "gold"},
            "ownerReferences": [
                {
                    "apiVersion": "aim.eai.amd.com/v1alpha2",
                    "kind": "AIMService",
                    "name": "qwen-chat",
                    "uid": "svc-uid",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "parentRefs": [{"name": "inference-gateway", "namespace": "gateways", "sectionName": "https", "port": 443}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/ml/ml-team/conversational-ai"}}],
                    "filters": [
                        {
                            "type": "URLRewrite",
                            "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}},
                        }
                    ],
                    "backendRefs": [
                        {"kind": "Service", "name": "qwen-chat-predictor", "namespace": "ml-team", "port": 80}
                    ],
                    "timeouts": {"request": "3m0s"},
                }
            ],
        },
    }


def test_route_without_timeout_or_annotations() -> None:
    plan = plan_routing(
        service({"enabled": True, "gatewayRef": GATEWAY, "pathTemplate": "/custom/{.metadata.name}"}), {}
    )
    assert plan.route is not None
    assert "timeouts" not in plan.route["spec"]["rules"][0]
    assert "annotations" not in plan.route["metadata"]
    assert plan.path == "/custom/qwen-chat"
    assert plan.route["spec"]["parentRefs"] == [GATEWAY]


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("180s", 180 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("1.5s", 1_500_000_000),
        (".5s", 500_000_000),
        ("1.s", 10**9),
        ("300ms", 300_000_000),
        ("10us", 10_000),
        ("10µs", 10_000),
        ("10μs", 10_000),
        ("7ns", 7),
        ("0", 0),
        ("+5s", 5 * 10**9),
        ("-5s", -5 * 10**9),
        ("1h1m1s1ms", 3661_001_000_000),
    ],
)
def test_parse_go_durations(text: str, nanoseconds: int) -> None:
    assert parse_duration(text) == nanoseconds


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("soon", 'time: invalid duration "soon"'),
        ("1", 'time: missing unit in duration "1"'),
        ("10", 'time: missing unit in duration "10"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        (".s", 'time: invalid duration ".s"'),
        ("-", 'time: invalid duration "-"'),
        ("3 s", 'time: unknown unit " s" in duration "3 s"'),
        ("9999999999h", 'time: invalid duration "9999999999h"'),
    ],
)
def test_invalid_go_durations(text: str, message: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text)
    assert str(caught.value) == message
    assert validate_duration(text) == message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("180s", None),
        ("0", None),
        ("1.5s", None),
        ("-5s", 'duration "-5s" is negative'),
        ("1.5ms", 'duration "1.5ms" is not a whole number of milliseconds'),
        ("100000h", 'duration "100000h" is longer than 99999h'),
    ],
)
def test_validate_request_timeouts(text: str, problem: str | None) -> None:
    assert validate_duration(text) == problem


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        ("180s", "3m0s"),
        ("30s", "30s"),
        ("1h", "1h0m0s"),
        ("90m", "1h30m0s"),
        ("1.5s", "1s500ms"),
        ("250ms", "250ms"),
        ("0s", "0s"),
        ("2m0.001s", "2m0s1ms"),
    ],
)
def test_gateway_duration(text: str, rendered: str) -> None:
    assert gateway_duration(text) == rendered


def test_gateway_duration_refuses_what_validation_refuses() -> None:
    with pytest.raises(DurationError, match="negative"):
        gateway_duration("-1s")
