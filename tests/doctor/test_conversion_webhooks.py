"""`omectl doctor`'s conversion-webhooks check against an embedded API server (real HTTP, CRDs converted by a test
webhook over TLS): which CRDs it checks, what it names when their webhook does not answer, and what it proposes."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from omectl.api.crdgen import CONVERSION_PLACEHOLDER_URL
from omectl.doctor.checks import FAIL, PASS, Context, Finding, check_conversion_webhooks
from omectl.kube.client import ClusterClient
from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import apply_document
from tests.conversion_webhook import ConversionWebhook, gizmo_crd
from tests.support import widget_crd


@pytest.fixture
async def client(server: EmbeddedAPIServer, tmp_path: Path) -> AsyncIterator[ClusterClient]:
    async with await ClusterClient.from_kubeconfig(server.write_kubeconfig(tmp_path / "kc"), name="doc") as kube:
        yield kube


@pytest.fixture
async def webhook() -> AsyncIterator[ConversionWebhook]:
    hook = await ConversionWebhook().start()
    yield hook
    await hook.stop()


def closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"https://127.0.0.1:{sock.getsockname()[1]}/convert"


async def check(server: EmbeddedAPIServer, client: ClusterClient, *crds: dict[str, Any]) -> list[Finding]:
    for crd in crds:
        await apply_document(server, crd)
    return await check_conversion_webhooks(Context(client))


async def test_without_converted_crds_there_is_nothing_to_check(
    server: EmbeddedAPIServer, client: ClusterClient
) -> None:
    assert await check(server, client, widget_crd()) == [
        Finding("conversion-webhooks", PASS, "no CRD converts through a webhook: nothing to check")
    ]


async def test_a_webhook_that_answers_passes(
    server: EmbeddedAPIServer, client: ClusterClient, webhook: ConversionWebhook
) -> None:
    crds = [gizmo_crd(webhook.client_config()), gizmo_crd(webhook.client_config(), plural="doodads", kind="Doodad")]
    assert await check(server, client, *crds) == [
        Finding("conversion-webhooks", PASS, "the conversion webhook(s) of all 2 converted CRD(s) answer")
    ]


async def test_a_dead_webhook_names_the_kinds_and_the_versions_that_fail(
    server: EmbeddedAPIServer, client: ClusterClient, webhook: ConversionWebhook
) -> None:
    dead = {"url": closed_url()}
    crds = [
        gizmo_crd(dead),  # stored as v1: v2 converts
        gizmo_crd(dead, plural="doodads", kind="Doodad", storage="v2"),  # stored as v2: v1 converts
        gizmo_crd(webhook.client_config(), plural="gadgets", kind="Gadget"),  # answers: not named
    ]
    (finding,) = await check(server, client, *crds)
    assert finding.status == FAIL
    host = dead["url"].split("/")[2]
    assert finding.message == (
        f"conversion webhook {dead['url']} does not answer (cannot connect to {host}: Connection refused): reads and "
        "writes of Doodad at conv.example.com/v1; Gizmo at conv.example.com/v2 fail with 500 until it answers again "
        "(Gizmo at conv.example.com/v1; Doodad at conv.example.com/v2 unaffected)"
    )
    assert finding.fix == (
        "start `omectl run` with this cluster registered: the controller that takes the cluster points "
        "doodads.conv.example.com, gizmos.conv.example.com at its webhook (with --no-install-webhooks, set their "
        "spec.conversion.webhook.clientConfig by hand: docs/aim-versions.md)"
    )


async def test_objects_stored_in_another_version_fail_in_every_version(
    server: EmbeddedAPIServer, client: ClusterClient
) -> None:
    await apply_document(server, gizmo_crd({"url": closed_url()}))
    crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, "gizmos.conv.example.com")
    crd["status"]["storedVersions"] = ["v2", "v1"]  # objects written while v2 was the storage version
    await client.request(
        "PUT", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.conv.example.com/status", body=crd
    )
    (finding,) = await check_conversion_webhooks(Context(client))
    assert finding.message.endswith(
        "reads and writes of Gizmo at conv.example.com/v1, conv.example.com/v2 fail with 500 until it answers again"
    )


async def test_the_placeholder_and_a_missing_service_say_what_they_are(
    server: EmbeddedAPIServer, client: ClusterClient
) -> None:
    service = {"service": {"namespace": "omectl-system", "name": "omectl-webhook", "path": "/convert"}}
    findings = await check(
        server,
        client,
        gizmo_crd({"url": CONVERSION_PLACEHOLDER_URL}),
        gizmo_crd(service, plural="doodads", kind="Doodad"),
    )
    by_kind = {("Gizmo" if "Gizmo at" in f.message else "Doodad"): f for f in findings}
    assert by_kind["Gizmo"].message.startswith(
        f"conversion webhook {CONVERSION_PLACEHOLDER_URL} does not answer (cannot connect to omectl-webhook.invalid:443"
    )
    assert "(deploy/crds' placeholder: no controller has taken this cluster yet): reads and writes of Gizmo" in (
        by_kind["Gizmo"].message
    )
    assert by_kind["Doodad"].message.startswith(
        "conversion webhook Service omectl-system/omectl-webhook does not exist: reads and writes of Doodad"
    )
    assert by_kind["Doodad"].fix == (
        "install the controller (deploy/), or set the spec.conversion.webhook.clientConfig of doodads.conv.example.com "
        "to a running one"
    )
    assert {f.status for f in findings} == {FAIL}
