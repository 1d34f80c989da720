"""Admission checks: each problem is one field error with an exact reason."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.validation import FieldError, validate_runtime_config, validate_service


def test_a_valid_config_has_no_errors() -> None:
    spec = {
        "routing": {
            "enabled": True,
            "gatewayRef": {"name": "gw", "namespace": "gateways"},
            "pathTemplate": "/ml/{.metadata.namespace}/{.metadata.labels['project']}",
            "requestTimeout": "180s",
        },
        "labelPropagation": {"enabled": True, "match": ["org.example/*", "compliance.*/severity"]},
        "env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP"}],
        "storage": {"pvcHeadroomPercent": 0},
        "defaultStorageClassName": "fast-nvme",
    }
    assert validate_runtime_config(spec) == []


@pytest.mark.parametrize(
    ("spec", "errors"),
    [
        (
            {"routing": {"pathTemplate": "{.metadata[}"}},
            ['spec.routing.pathTemplate: invalid jsonpath expression "{.metadata[}": unterminated array'],
        ),
        ({"routing": {"pathTemplate": "/{.metadata.name"}}, ['spec.routing.pathTemplate: unmatched "{" at offset 1']),
        ({"routing": {"pathTemplate": 5}}, ["spec.routing.pathTemplate: must be a string"]),
        (
            {"routing": {"requestTimeout": "3 minutes"}},
            ['spec.routing.requestTimeout: time: unknown unit " minutes" in duration "3 minutes"'],
        ),
        ({"routing": {"requestTimeout": "-1s"}}, ['spec.routing.requestTimeout: duration "-1s" is negative']),
        ({"routing": {"gatewayRef": {"namespace": "gateways"}}}, ["spec.routing.gatewayRef.name: required"]),
        (
            {"labelPropagation": {"match": ["ok/*", "[invalid", 3]}},
            [
                "spec.labelPropagation.match[1]: pattern '[invalid' has an unclosed character class at offset 0",
                "spec.labelPropagation.match[2]: must be a string",
            ],
        ),
        (
            {"env": [{"name": "A"}, {"value": "x"}, {"name": "A", "value": "y"}]},
            ["spec.env[1].name: required", "spec.env[2].name: duplicate name 'A'"],
        ),
        (
            {"storage": {"pvcHeadroomPercent": -1}, "pvcHeadroomPercent": -5},
            [
                "spec.storage.pvcHeadroomPercent: must be at least 0, got -1",
                "spec.pvcHeadroomPercent: must be at least 0, got -5",
            ],
        ),
    ],
)
def test_runtime_config_errors(spec: dict[str, Any], errors: list[str]) -> None:
    assert [str(e) for e in validate_runtime_config(spec)] == errors


def test_service_inline_config_and_own_routing() -> None:
    spec = {
        "runtimeConfig": {"routing": {"requestTimeout": "x"}, "labelPropagation": {"match": ["[]"]}},
        "routing": {"pathTemplate": "/{}"},
        "env": [{"name": "B"}, {"name": "B"}],
    }
    assert validate_service(spec) == [
        FieldError("spec.runtimeConfig.routing.requestTimeout", 'time: invalid duration "x"'),
        FieldError(
            "spec.runtimeConfig.labelPropagation.match[0]", "pattern '[]' has an empty character class at offset 0"
        ),
        FieldError("spec.routing.pathTemplate", 'jsonpath expression "{}" is empty'),
        FieldError("spec.env[1].name", "duplicate name 'B'"),
    ]
