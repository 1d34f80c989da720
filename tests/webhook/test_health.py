"""`check_member` (what `omectl cluster status` says of a member's admission) and `uninstall`, against an embedded
API server over HTTP and real webhook servers over TLS."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from omectl.fleet.leases import Holder, Leases, micro_time
from omectl.fleet.sharding import LEASE_NAME
from omectl.kube.client import ClusterClient
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import apply_document
from omectl.tls import CertificateAuthority, server_ssl_context
from omectl.webhook.health import HeldByLiveController, check_member, uninstall
from omectl.webhook.keeper import RemoteEndpoint
from omectl.webhook.server import WEBHOOK_CONFIGURATION_NAME, WebhookServer, webhook_configuration

NS = "omectl-system"
VWC = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[tuple[EmbeddedAPIServer, ClusterClient]]:
    server = EmbeddedAPIServer("hc-1")
    await server.start()
    client = await ClusterClient.from_kubeconfig(server.write_kubeconfig(tmp_path / "kc"), name="hc-1")
    yield server, client
    await client.close()
    await server.stop()


async def webhook_server() -> WebhookServer:
    ca = CertificateAuthority.generate("test-ca")
    server = WebhookServer("127.0.0.1", 0, server_ssl_context(ca.issue(["127.0.0.1", "localhost"])), ca.cert_pem)
    await server.start()
    return server


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def hold(client: ClusterClient, holder: Holder, renewed: float) -> None:
    await create_namespace(client)
    spec = {
        "holderIdentity": holder.identity,
        "leaseDurationSeconds": 15,
        "acquireTime": micro_time(renewed),
        "renewTime": micro_time(renewed),
        "leaseTransitions": 0,
    }
    await Leases(client, NS).write(LEASE_NAME, spec, {}, None, holder.annotations())


async def create_namespace(client: ClusterClient) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    await client.request("POST", "/api/v1/namespaces", body=namespace)


async def test_a_member_without_webhooks_has_nothing_to_report(member: tuple[EmbeddedAPIServer, ClusterClient]) -> None:
    _, client = member
    found = await check_member(client, "hc-1")
    assert (found.installed, found.webhooks, found.owner, found.problem) == (False, "none", None, None)


async def test_answering_webhooks_are_ok_and_the_owner_is_named(
    member: tuple[EmbeddedAPIServer, ClusterClient],
) -> None:
    server, client = member
    webhooks = await webhook_server()
    holder = Holder.for_this_process("ctl-a")
    try:
        await hold(client, holder, time.time())
        await apply_document(server, webhook_configuration(webhooks, "hc-1", owner=holder.identity))
        found = await check_member(client, "hc-1")
        assert found.webhooks == "ok" and found.problem is None, found
        assert found.owner_label == holder.identity and found.lease_fresh
        assert found.owner is not None and found.owner.startswith(f"{holder.identity} on host {holder.host}")
    finally:
        await webhooks.stop()


async def test_a_killed_owner_leaves_webhooks_that_fail_closed_and_the_fix_is_named(
    member: tuple[EmbeddedAPIServer, ClusterClient],
) -> None:
    server, client = member
    holder = Holder.for_this_process("ctl-a")
    await hold(client, holder, time.time() - 60)  # renewed a minute ago, then killed
    dead = RemoteEndpoint(f"https://127.0.0.1:{closed_port()}", None)
    await apply_document(server, webhook_configuration(dead, "hc-1", owner=holder.identity))
    found = await check_member(client, "hc-1", timeout=2)
    assert found.webhooks == "failing" and not found.lease_fresh
    assert found.problem is not None and found.fix is not None
    assert found.problem.startswith(
        f"webhook configuration {WEBHOOK_CONFIGURATION_NAME} points at {dead.base_url}, which does not answer ("
    )
    assert "with failurePolicy Fail every create and update of OME and AIM objects in hc-1 is refused" in found.problem
    assert f"its owner {holder.identity} on host {holder.host}" in found.problem
    assert "stopped renewing its lease 6" in found.problem and "(killed?)" in found.problem
    assert "omectl cluster uninstall-webhooks hc-1" in found.fix and "omectl run" in found.fix
    # the fix works: nobody renews the Lease, so it may be removed
    assert await uninstall(client, "hc-1", namespace=NS) == [
        f"validatingwebhookconfiguration {WEBHOOK_CONFIGURATION_NAME}",
        f"lease {NS}/{LEASE_NAME}",
    ]
    assert server.api.store.get(VWC, "", WEBHOOK_CONFIGURATION_NAME) is None
    assert (await check_member(client, "hc-1")).problem is None


async def test_a_server_whose_certificate_the_bundle_does_not_trust_is_found(
    member: tuple[EmbeddedAPIServer, ClusterClient],
) -> None:
    # e.g. a restarted controller on the same (stable) port, with a new generated CA, before it re-installs
    server, client = member
    webhooks = await webhook_server()
    try:
        other_ca = CertificateAuthority.generate("another-ca").cert_pem
        stale = RemoteEndpoint(webhooks.base_url, other_ca)
        await apply_document(server, webhook_configuration(stale, "hc-1"))
        found = await check_member(client, "hc-1")
        assert found.webhooks == "failing" and found.problem is not None
        assert "its certificate does not match the configuration's caBundle" in found.problem, found.problem
        assert "no omectl holds the cluster" in found.problem
    finally:
        await webhooks.stop()


async def test_uninstall_refuses_while_a_live_controller_renews_the_lease(
    member: tuple[EmbeddedAPIServer, ClusterClient],
) -> None:
    server, client = member
    holder = Holder.for_this_process("ctl-a")
    await hold(client, holder, time.time())
    await apply_document(server, webhook_configuration(RemoteEndpoint("https://127.0.0.1:1", None), "hc-1"))
    with pytest.raises(HeldByLiveController, match=f"held by a running omectl: {holder.identity} on host"):
        await uninstall(client, "hc-1", namespace=NS)
    assert server.api.store.get(VWC, "", WEBHOOK_CONFIGURATION_NAME) is not None  # nothing was touched
