"""The admission webhook server unreachable, with the installed configuration's failurePolicy Fail and Ignore.

The controller installs its ValidatingWebhookConfiguration (setting `webhook_failure_policy`) into each of the 3
clusters; the webhook server is stopped; a user creates runtimes over the API:

- Fail: every create the webhooks cover is refused (500 `failed calling webhook`), nothing is stored;
- Ignore: creates are admitted unchecked, so a runtime with a broken chain gets in, and the controller reports it
  (`InheritanceReady=ParentNotFound`) instead.

The server is started again on its port: the webhook answers again (a broken chain denied with the spec's text, a
good runtime admitted), the mixed workload still equals its expected render and the controller is healthy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp
import pytest

from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.resilience.workload import SERVING_RUNTIMES, mixed_fleet, until

pytestmark = pytest.mark.xdist_group("resilience")
WEBHOOK_CONFIGURATIONS = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")


def runtime(name: str, parent: str) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": "team-a", "annotations": {"ome.io/inherit-from": parent}},
        "spec": {"engineConfig": {"runner": {"name": "ome-container", "args": [f"--name={name}"]}}},
    }


async def create(session: aiohttp.ClientSession, server: EmbeddedAPIServer, obj: dict[str, Any]) -> tuple[int, Any]:
    url = f"{server.url}/apis/ome.io/v1beta1/namespaces/team-a/servingruntimes"
    async with session.post(url, json=obj, headers=server.auth_headers) as reply:
        return reply.status, await reply.json()


def reason(server: EmbeddedAPIServer, name: str) -> str | None:
    obj = server.api.store.get(SERVING_RUNTIMES, "team-a", name) or {}
    conditions = (obj.get("status") or {}).get("conditions") or []
    return next((c.get("reason") for c in conditions if c.get("type") == "InheritanceReady"), None)


@pytest.mark.parametrize("policy", ["Fail", "Ignore"])
async def test_the_webhook_server_unreachable_follows_the_failure_policy_and_recovers(
    tmp_path: Path, policy: str
) -> None:
    prefix = f"wh{policy[0].lower()}-"
    async with (
        mixed_fleet(tmp_path, prefix, install_webhooks=True, webhook_failure_policy=policy) as fleet,
        aiohttp.ClientSession() as session,
    ):

        def installed() -> bool:
            return all(
                (c := s.api.store.get(WEBHOOK_CONFIGURATIONS, "", "omectl-ome-webhooks")) is not None
                and {h["failurePolicy"] for h in c["webhooks"]} == {policy}
                for s in fleet.servers
            )

        await until(fleet.servers, installed, 15, "the webhook configurations installed")
        await fleet.app.webhook.stop()
        for server in fleet.servers:
            status, body = await create(session, server, runtime("while-down-broken", "no-such-parent"))
            if policy == "Fail":
                assert status == 500, body
                assert "failed calling webhook" in body["message"], body
                assert server.api.store.get(SERVING_RUNTIMES, "team-a", "while-down-broken") is None
            else:
                assert status == 201, body
        if policy == "Ignore":  # admitted unchecked: the controller says what is wrong instead
            await until(
                fleet.servers,
                lambda: all(reason(s, "while-down-broken") == "ParentNotFound" for s in fleet.servers),
                15,
                "ParentNotFound reported",
            )

        await fleet.app.webhook.start()  # the same port: the installed configurations are valid again
        for server in fleet.servers:
            status, body = await create(session, server, runtime("after-broken", "still-no-parent"))
            assert status == 403, body
            assert body["message"].endswith(
                'denied the request: inherit-from parent "still-no-parent" not found (chain so far: [after-broken])'
            ), body
            status, body = await create(session, server, runtime("after-good", "sglang-profile"))
            assert status == 201, body
        await until(
            fleet.servers,
            lambda: all(reason(s, "after-good") == "Resolved" for s in fleet.servers),
            15,
            "the new runtime resolved",
        )
        if policy == "Ignore":
            for server in fleet.servers:  # the runtime admitted unchecked is not part of the expected render
                rt = server.api.types.lookup("ome.io", "v1beta1", "servingruntimes")
                assert rt is not None
                await server.api.delete(rt, "team-a", "while-down-broken", {}, WriteOptions())
        await fleet.converged(30)
        await fleet.healthy()
