"""Fault injection (programmatic and admin endpoint), restart, partition and persistence."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.tls import CertificateAuthority, server_ssl_context
from tests.support import RawClient, widget, widget_crd

CM = "/api/v1/namespaces/default/configmaps"


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


async def test_fail_next_answers_with_status_and_retry_after(raw: RawClient, server: EmbeddedAPIServer) -> None:
    server.faults.fail_next(2, 429, method="POST", retry_after=3)
    first = await raw.post(CM, configmap("a"))
    assert first.status == 429
    assert first.headers["Retry-After"] == "3"
    assert first.body["reason"] == "TooManyRequests"
    assert first.body["details"]["retryAfterSeconds"] == 3
    assert (await raw.get(CM)).status == 200  # GETs are not matched
    assert (await raw.post(CM, configmap("a"))).status == 429
    assert (await raw.post(CM, configmap("a"))).status == 201


async def test_admin_endpoint_injects_faults(raw: RawClient, server: EmbeddedAPIServer) -> None:
    reply = await raw.post(
        "/_omectl/faults", {"action": "fail", "count": 1, "status": 503, "pathContains": "configmaps"}
    )
    assert reply.body == {"ok": True, "action": "fail"}
    assert (await raw.get(CM)).status == 503
    assert (await raw.get(CM)).status == 200
    bad = await raw.post("/_omectl/faults", {"action": "explode"})
    assert bad.status == 400


async def test_admin_compact_forces_410_on_resume(raw: RawClient) -> None:
    rv = (await raw.post(CM, configmap("a"))).body["metadata"]["resourceVersion"]
    await raw.post(CM, configmap("b"))
    await raw.post("/_omectl/faults", {"action": "compact"})
    resp = await raw.session.get(raw.base + CM + f"?watch=true&resourceVersion={rv}", headers=raw.headers)
    line = await asyncio.wait_for(resp.content.readline(), 5)
    assert b'"code":410' in line
    resp.close()


async def test_admin_drop_watches_ends_open_streams(raw: RawClient) -> None:
    resp = await raw.session.get(raw.base + CM + "?watch=true&resourceVersion=1", headers=raw.headers)
    await raw.post("/_omectl/faults", {"action": "drop-watches"})
    assert await asyncio.wait_for(resp.content.readline(), 5) == b""
    resp.close()


async def test_delay_next_delays_the_answer(raw: RawClient, server: EmbeddedAPIServer) -> None:
    server.faults.delay_next(1, 0.3, method="GET")
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert (await raw.get(CM)).status == 200
    assert loop.time() - start >= 0.3


async def test_hold_next_keeps_a_request_waiting_until_released_while_the_server_answers_others(
    raw: RawClient, server: EmbeddedAPIServer
) -> None:
    held = server.faults.hold_next(1, method="GET", path_contains="/configmaps")
    answer = asyncio.create_task(raw.get(CM + "/made-while-held"))
    await asyncio.wait_for(held.arrived.wait(), 10)
    assert not answer.done()
    assert (await raw.post(CM, configmap("made-while-held"))).status == 201  # the server answers others meanwhile
    assert held.release is not None
    held.release.set()
    assert (await asyncio.wait_for(answer, 10)).status == 200  # served after the release: it sees the new object
    assert server.faults.rules == []


async def test_restart_keeps_data_and_port() -> None:
    async with EmbeddedAPIServer("r") as server, aiohttp.ClientSession() as session:
        raw = RawClient(server.url, session, server.auth_headers)
        await raw.post(CM, configmap("kept"))
        port, rv = server.port, server.api.store.rv
        await server.restart(keep_data=True)
        assert server.port == port
        got = await raw.get(CM + "/kept")
        assert got.status == 200
        assert server.api.store.rv == rv
        created = await raw.post(CM, configmap("next"))
        assert int(created.body["metadata"]["resourceVersion"]) == rv + 1
        await server.restart(keep_data=False)
        assert (await raw.get(CM + "/kept")).status == 404
        assert (await raw.get("/api/v1/namespaces/default")).status == 200


async def test_partition_refuses_connections_until_healed() -> None:
    async with EmbeddedAPIServer("p") as server:
        async with aiohttp.ClientSession() as session:
            assert (await RawClient(server.url, session, server.auth_headers).get(CM)).status == 200
            await server.partition()
            with pytest.raises(aiohttp.ClientConnectionError):
                await RawClient(server.url, session, server.auth_headers).get(CM)
            await server.heal()
        async with aiohttp.ClientSession() as session:
            assert (await RawClient(server.url, session, server.auth_headers).get(CM)).status == 200


async def test_state_dir_survives_a_restart_with_resource_versions(tmp_path: Path) -> None:
    async with EmbeddedAPIServer("persist", state_dir=tmp_path) as server, aiohttp.ClientSession() as session:
        raw = RawClient(server.url, session, server.auth_headers)
        await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", widget_crd())
        made = (await raw.post("/apis/example.com/v1/namespaces/default/widgets", widget("w1", size=4))).body
        rv = server.api.store.rv
    assert (tmp_path / "persist.json").exists()
    async with EmbeddedAPIServer("persist", state_dir=tmp_path) as again, aiohttp.ClientSession() as session:
        raw = RawClient(again.url, session, again.auth_headers)
        got = await raw.get("/apis/example.com/v1/namespaces/default/widgets/w1")
        assert got.status == 200
        assert got.body["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        assert got.body["metadata"]["uid"] == made["metadata"]["uid"]
        assert again.api.store.rv == rv


# --- validating webhooks through the server ------------------------------------------------------------


class Webhook:
    def __init__(self) -> None:
        self.ca = CertificateAuthority.generate()
        self.requests: list[dict[str, Any]] = []
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        async def review(request: web.Request) -> web.Response:
            body = await request.json()
            self.requests.append(body)
            obj = body["request"]["object"] or body["request"]["oldObject"]
            deny = (obj.get("metadata", {}).get("labels") or {}).get("deny")
            response: dict[str, Any] = {"uid": body["request"]["uid"], "allowed": not deny}
            if deny:
                response["status"] = {"message": f"label deny={deny}"}
            return web.json_response(
                {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
            )

        app = web.Application()
        app.router.add_post("/review", review)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=server_ssl_context(self.ca.issue(["127.0.0.1"])))
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    def configuration(self, failure_policy: str = "Fail", port: int | None = None) -> dict[str, Any]:
        return {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "cm-policy"},
            "webhooks": [
                {
                    "name": "deny.configmaps.example.com",
                    "clientConfig": {
                        "url": f"https://127.0.0.1:{port or self.port}/review",
                        "caBundle": base64.b64encode(self.ca.cert_pem).decode(),
                    },
                    "rules": [
                        {
                            "operations": ["CREATE", "UPDATE"],
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "resources": ["configmaps"],
                        }
                    ],
                    "sideEffects": "None",
                    "admissionReviewVersions": ["v1"],
                    "failurePolicy": failure_policy,
                    "timeoutSeconds": 2,
                }
            ],
        }


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    hook = Webhook()
    await hook.start()
    yield hook
    assert hook.runner is not None
    await hook.runner.cleanup()


async def test_webhook_denies_through_the_server(raw: RawClient, webhook: Webhook) -> None:
    assert (
        await raw.post("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", webhook.configuration())
    ).status == 201
    denied = await raw.post(CM, {**configmap("bad"), "metadata": {"name": "bad", "labels": {"deny": "yes"}}})
    assert denied.status == 400
    assert (
        denied.body["message"] == 'admission webhook "deny.configmaps.example.com" denied the request: label deny=yes'
    )
    allowed = await raw.post(CM, configmap("good"))
    assert allowed.status == 201
    review = webhook.requests[-1]["request"]
    assert review["operation"] == "CREATE"
    assert review["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}
    assert review["object"]["metadata"]["name"] == "good"
    untouched = len(webhook.requests)
    await raw.post(
        "/api/v1/namespaces/default/secrets",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}},
    )
    assert len(webhook.requests) == untouched  # secrets match no rule


async def test_unreachable_webhook_follows_failure_policy(raw: RawClient, webhook: Webhook) -> None:
    closed_port = webhook.port
    assert webhook.runner is not None
    await webhook.runner.cleanup()
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    await raw.post(path, webhook.configuration("Fail", closed_port))
    failed = await raw.post(CM, configmap("a"))
    assert failed.status == 500
    assert 'failed calling webhook "deny.configmaps.example.com"' in failed.body["message"]
    await raw.delete(path + "/cm-policy")
    await raw.post(path, webhook.configuration("Ignore", closed_port))
    assert (await raw.post(CM, configmap("a"))).status == 201
    await webhook.start()  # so the fixture can clean up
