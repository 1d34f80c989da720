"""The checks on a CRD's `spec.conversion`, as kube-apiserver v1.34.4 words them (measured against the real
server with the same CRDs): its messages name the internal fields `spec.conversion.webhookClientConfig` and
`spec.conversion.conversionReviewVersions`."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tests.conversion_webhook import gizmo_crd
from tests.support import RawClient

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
URL = {"url": "https://x.example/convert"}
NOT_PEM = base64.b64encode(b"not a pem").decode()


def webhook(client_config: dict[str, Any] | None = None, versions: list[str] | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {}
    if client_config is not None:
        hook["clientConfig"] = client_config
    if versions is not None:
        hook["conversionReviewVersions"] = versions
    return hook


def crd_with(conversion: dict[str, Any]) -> dict[str, Any]:
    crd = gizmo_crd(URL)
    crd["spec"]["conversion"] = conversion
    return crd


CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "webhook-missing",
        {"strategy": "Webhook"},
        [
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
            "spec.conversion.conversionReviewVersions: Required value",
        ],
    ),
    (
        "versions-missing",
        {"strategy": "Webhook", "webhook": webhook(URL)},
        ["spec.conversion.conversionReviewVersions: Required value"],
    ),
    (
        "bad-url-and-versions",
        {"strategy": "Webhook", "webhook": webhook({"url": "http://u:p@x.example/c?q=1#f"}, ["v3", "v3", "Bad"])},
        [
            "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL "
            "scheme; desired format: https://host[/path]",
            'spec.conversion.webhookClientConfig.url: Invalid value: "u:p": user information is not permitted in '
            "the URL",
            'spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL',
            'spec.conversion.webhookClientConfig.url: Invalid value: "q=1": query parameters are not permitted in '
            "the URL",
            'spec.conversion.conversionReviewVersions[1]: Invalid value: "v3": duplicate version',
            'spec.conversion.conversionReviewVersions[2]: Invalid value: "Bad": a DNS-1035 label must consist of '
            "lower case alphanumeric characters or '-', start with an alphabetic character, and end with an "
            "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
            "'[a-z]([-a-z0-9]*[a-z0-9])?')",
            'spec.conversion.conversionReviewVersions: Invalid value: ["v3","v3","Bad"]: must include at least one '
            "of v1, v1beta1",
        ],
    ),
    (
        "url-and-service",
        {"strategy": "Webhook", "webhook": webhook({**URL, "service": {"namespace": "a", "name": "b"}}, ["v1"])},
        ["spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required"],
    ),
    (
        "bad-service",
        {
            "strategy": "Webhook",
            "webhook": webhook({"service": {"namespace": "", "name": "", "port": 70000, "path": "no//slash/"}}, ["v1"]),
        },
        [
            "spec.conversion.webhookClientConfig.service.name: Required value",
            "spec.conversion.webhookClientConfig.service.namespace: Required value",
            "spec.conversion.webhookClientConfig.service.port: Invalid value: 70000: port is not valid: must be "
            "between 1 and 65535, inclusive",
            "spec.conversion.webhookClientConfig.service.path: Invalid value: \"no//slash/\": must start with a '/'",
            'spec.conversion.webhookClientConfig.service.path: Invalid value: "no//slash/": segment[1] may not be '
            "empty",
        ],
    ),
    (
        "service-path-segments",
        {
            "strategy": "Webhook",
            "webhook": webhook({"service": {"namespace": "a", "name": "b", "path": "/Up/x_y/"}}, ["v1"]),
        },
        [
            'spec.conversion.webhookClientConfig.service.path: Invalid value: "/Up/x_y/": segment[0]: a lowercase '
            "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            'spec.conversion.webhookClientConfig.service.path: Invalid value: "/Up/x_y/": segment[1]: a lowercase '
            "RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
            "end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ],
    ),
    (
        "webhook-with-strategy-none",
        {"strategy": "None", "webhook": webhook(URL, ["v1"])},
        [
            "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
            "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to "
            "Webhook",
        ],
    ),
    (
        "unknown-strategy",
        {"strategy": "Other"},
        ['spec.conversion.strategy: Unsupported value: "Other": supported values: "None", "Webhook"'],
    ),
    ("no-strategy", {"strategy": ""}, ["spec.conversion.strategy: Required value"]),
    (
        "url-without-scheme",
        {"strategy": "Webhook", "webhook": webhook({"url": "x.example/c"}, ["v1"])},
        [
            "spec.conversion.webhookClientConfig.url: Invalid value: \"\": 'https' is the only allowed URL scheme; "
            "desired format: https://host[/path]",
            'spec.conversion.webhookClientConfig.url: Invalid value: "": host must be specified; desired format: '
            "https://host[/path]",
        ],
    ),
]


@pytest.mark.parametrize(("conversion", "messages"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
async def test_a_bad_conversion_is_refused_with_kubes_messages(
    raw: RawClient, conversion: dict[str, Any], messages: list[str]
) -> None:
    reply = await raw.post(f"{CRDS}?dryRun=All", crd_with(conversion))
    assert reply.status == 422
    text = messages[0] if len(messages) == 1 else "[" + ", ".join(messages) + "]"
    assert (
        reply.body["message"]
        == f'CustomResourceDefinition.apiextensions.k8s.io "gizmos.conv.example.com" is invalid: {text}'
    )


async def test_the_service_port_defaults_to_443(raw: RawClient) -> None:
    reference = {"namespace": "a", "name": "b"}
    reply = await raw.post(
        f"{CRDS}?dryRun=All", crd_with({"strategy": "Webhook", "webhook": webhook({"service": reference}, ["v1"])})
    )
    assert reply.body["spec"]["conversion"]["webhook"]["clientConfig"]["service"] == {**reference, "port": 443}


async def test_a_ca_bundle_that_is_no_pem_passes_on_create_and_not_on_update(raw: RawClient) -> None:
    crd = crd_with({"strategy": "Webhook", "webhook": webhook({**URL, "caBundle": NOT_PEM}, ["v1"])})
    assert (await raw.post(f"{CRDS}?dryRun=All", crd)).status == 201  # not established yet: let through
    assert (await raw.post(CRDS, gizmo_crd(URL))).status == 201
    established = (await raw.get(f"{CRDS}/gizmos.conv.example.com")).body
    established["spec"]["conversion"]["webhook"]["clientConfig"]["caBundle"] = NOT_PEM
    reply = await raw.put(f"{CRDS}/gizmos.conv.example.com", established)
    assert reply.body["message"].endswith(
        f'spec.conversion.webhookClientConfig.caBundle: Invalid value: "{NOT_PEM}": unable to load root '
        "certificates: unable to parse bytes as PEM block"
    )


async def test_a_webhook_strategy_needs_pruning(raw: RawClient) -> None:
    crd = gizmo_crd(URL)
    crd["spec"]["preserveUnknownFields"] = True
    reply = await raw.post(f"{CRDS}?dryRun=All", crd)
    assert (
        'spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true'
        in (reply.body["message"])
    )
