"""The webhook configuration follows the ownership Lease: installed by the holder (labelled with its identity), put
back after anyone else's change, deleted or handed over when the holder lets go; and admission answered for every
registered cluster by every replica.

The controllers run in-process (`ControllerApp`) against embedded API servers on this event loop, over real HTTP
with the real client; the embedded servers call the webhooks as kube-apiserver does (TLS with the configuration's
caBundle). Store listeners record each commit of a member's webhook configuration and Lease as it happens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.fleet.leases import LeaseRecord
from omectl.fleet.sharding import LEASE_NAME
from omectl.settings import Settings
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.apiserver.store import WatchEvent
from omectl.sim.fleet import EmbeddedFleet, apply_document
from omectl.tls import client_ssl_context
from omectl.webhook.server import OWNER_LABEL, WEBHOOK_CONFIGURATION_NAME

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
NS = "omectl-system"
VWC = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
LEASE = ("coordination.k8s.io", "leases")
SR = ("ome.io", "servingruntimes")
LEASES = {"lease_duration": 3, "lease_renew_deadline": 2, "lease_retry_period": 0.5}


@dataclass
class Commit:
    kind: str  # "webhooks" or "lease"
    cluster: str
    obj: dict[str, Any] | None  # None: deleted
    webhook_server_up: dict[str, bool]  # replica id -> whether its webhook server listened at that commit


@dataclass
class Fleet:
    sim: EmbeddedFleet
    tmp: Path
    apps: dict[str, ControllerApp] = field(default_factory=dict)
    commits: list[Commit] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def servers(self) -> list[EmbeddedAPIServer]:
        return self.sim.servers

    def webhooks(self, cluster: str) -> dict[str, Any] | None:
        return self.sim[cluster].api.store.get(VWC, "", WEBHOOK_CONFIGURATION_NAME)

    def lease(self, cluster: str) -> LeaseRecord | None:
        obj = self.sim[cluster].api.store.get(LEASE, NS, LEASE_NAME)
        return LeaseRecord.from_object(obj) if obj is not None else None

    async def until(self, check: Callable[[], Any], what: str, timeout: float = 20) -> Any:
        """Re-check after every commit on any member (and each retry period, for what the controller does)."""
        async with asyncio.timeout(timeout):
            while not (found := check()):
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 0.5)
        return found

    async def start(self, replica: str, **settings: Any) -> ControllerApp:
        loaded = Settings.load(
            webhook_port=0,
            metrics_port=-1,
            replica_id=replica,
            clusters_dir=self.tmp / "clusters",
            trace_file=self.tmp / f"{replica}.jsonl",
            install_webhooks=True,
            **{**LEASES, **settings},
        )
        app = ControllerApp(loaded)
        await app.start()
        self.apps[replica] = app
        return app


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    async with two_clusters(tmp_path) as f:
        yield f


@contextlib.asynccontextmanager
async def two_clusters(tmp_path: Path) -> AsyncIterator[Fleet]:
    """Two embedded clusters with every CRD of deploy/crds, registered in `tmp_path/clusters`; the controllers
    started with `Fleet.start` are stopped at the end."""
    sim = await EmbeddedFleet(2, name_prefix="own-").start()
    f = Fleet(sim, tmp_path)
    try:
        await sim.apply([CRDS])
        for server in sim.servers:
            write_registrations(
                tmp_path / "clusters", server.write_kubeconfig(tmp_path / f"{server.name}.kc"), [server.name]
            )

        def recorder(cluster: str) -> Callable[[WatchEvent], None]:
            def record(event: WatchEvent) -> None:
                kind = {VWC: "webhooks", LEASE: "lease"}.get(event.key)
                if kind is not None:
                    up = {r: app.webhook._runner is not None for r, app in f.apps.items()}
                    f.commits.append(Commit(kind, cluster, None if event.type == "DELETED" else event.obj, up))
                f.changed.set()

            return record

        for server in sim.servers:
            server.api.store.listeners.append(recorder(server.name))
        yield f
    finally:
        for app in f.apps.values():
            await app.stop()
        await sim.stop()


def url_of(config: dict[str, Any] | None) -> str | None:
    if config is None:
        return None
    urls = {h["clientConfig"]["url"].split("/validate/")[0] for h in config["webhooks"]}
    assert len(urls) == 1, urls
    return urls.pop()


def owner_of(config: dict[str, Any] | None) -> str | None:
    return ((config or {}).get("metadata") or {}).get("labels", {}).get(OWNER_LABEL)


def runtime(name: str, parent: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    meta["annotations"] = {"ome.io/inherit-from": parent} if parent else {"ome.io/runtime-profile": "true"}
    spec: dict[str, Any] = {"disabled": parent is None, "engineConfig": {"runner": {"name": "ome-container"}}}
    return {"apiVersion": "ome.io/v1beta1", "kind": "ServingRuntime", "metadata": meta, "spec": spec}


async def create_over_http(server: EmbeddedAPIServer, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """As any client does: the API server calls the configured webhook before it stores the object."""
    async with (
        aiohttp.ClientSession(headers=server.auth_headers) as session,
        session.post(f"{server.url}/apis/ome.io/v1beta1/namespaces/default/servingruntimes", json=obj) as reply,
    ):
        return reply.status, await reply.json()


async def review(app: ControllerApp, cluster: str, obj: dict[str, Any]) -> dict[str, Any]:
    """POST an AdmissionReview straight to `app`'s webhook server, as a shared webhook Service would route it."""
    assert app.webhook.ca_pem is not None
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
    body["request"] = {"uid": str(uuid.uuid4()), "operation": "CREATE", "object": obj}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{app.webhook.base_url}/validate/{cluster}/servingruntime",
            data=json.dumps(body),
            ssl=client_ssl_context(app.webhook.ca_pem),
        ) as reply,
    ):
        assert reply.status == 200
        answer: dict[str, Any] = (await reply.json())["response"]
    return answer


async def test_the_holder_installs_its_configuration_and_puts_back_anyone_elses_change(fleet: Fleet) -> None:
    app = await fleet.start("solo")
    names = [s.name for s in fleet.servers]
    await fleet.until(lambda: all(owner_of(fleet.webhooks(c)) == app.holder.identity for c in names), "installed")
    for cluster in names:
        assert url_of(fleet.webhooks(cluster)) == app.webhook.base_url
        lease = fleet.lease(cluster)
        assert lease is not None and lease.holder == app.holder.identity
    victim = fleet.servers[0]
    # another controller (or a person) applies its own URL and CA over it, as a second `omectl run` used to
    stolen = json.loads(json.dumps(fleet.webhooks(victim.name)))
    for hook in stolen["webhooks"]:
        hook["clientConfig"] = {"url": "https://127.0.0.1:1/validate/x/servingruntime"}
    stolen["metadata"] = {"name": WEBHOOK_CONFIGURATION_NAME, "labels": {OWNER_LABEL: "someone-else"}}
    await apply_document(victim, stolen)
    await fleet.until(lambda: url_of(fleet.webhooks(victim.name)) == app.webhook.base_url, "put back after an apply")
    assert owner_of(fleet.webhooks(victim.name)) == app.holder.identity
    # deleted: created again
    await victim.api.delete(
        next(t for t in victim.api.types.all() if t.plural == "validatingwebhookconfigurations"),
        "",
        WEBHOOK_CONFIGURATION_NAME,
        {},
        WriteOptions(field_manager="someone"),
    )
    await fleet.until(lambda: url_of(fleet.webhooks(victim.name)) == app.webhook.base_url, "put back after a delete")
    # and it works: a broken chain is denied by omectl's webhook, through the API server
    status, body = await create_over_http(victim, runtime("orphan", "no-such-parent"))
    assert status == 403 and 'inherit-from parent "no-such-parent" not found' in body["message"], body
    # the other clusters' configurations, which nobody touched, were written once (their informers' first lists
    # marked the keepers dirty before they were synced: that was a second write, and a "put back" in the log)
    assert [app.keepers[c].applied for c in names if c != victim.name] == [1] * (len(names) - 1)


async def test_a_cluster_removed_from_the_registry_loses_its_configuration_and_its_lease(fleet: Fleet) -> None:
    app = await fleet.start("solo")
    gone, kept = (s.name for s in fleet.servers)
    await fleet.until(lambda: fleet.webhooks(gone) and fleet.webhooks(kept), "installed")
    (fleet.tmp / "clusters" / f"{gone}.yaml").unlink()
    await fleet.until(lambda: fleet.webhooks(gone) is None and fleet.lease(gone) is None, "removed with its cluster")
    await app.wait_clusters({kept})
    assert owner_of(fleet.webhooks(kept)) == app.holder.identity
    # its writes are no longer checked by omectl, nor refused as "not registered": nothing is configured
    status, body = await create_over_http(fleet.sim[gone], runtime("orphan", "no-such-parent"))
    assert status == 201, body
    answer = await review(app, gone, runtime("orphan-2", "no-such-parent"))
    assert answer["status"]["message"] == f"cluster '{gone}' is not registered with omectl"


async def test_a_clean_stop_deletes_the_configuration_before_the_lease_is_released(fleet: Fleet) -> None:
    app = await fleet.start("solo")
    names = [s.name for s in fleet.servers]
    await fleet.until(lambda: all(fleet.webhooks(c) for c in names), "installed")
    await app.stop()
    del fleet.apps["solo"]
    for cluster in names:
        assert fleet.webhooks(cluster) is None
        lease = fleet.lease(cluster)
        assert lease is not None and lease.holder == ""  # released: the next controller takes it at once
        order = [c for c in fleet.commits if c.cluster == cluster]
        deleted = next(i for i, c in enumerate(order) if c.kind == "webhooks" and c.obj is None)
        released = next(
            i for i, c in enumerate(order) if c.kind == "lease" and c.obj and not c.obj["spec"]["holderIdentity"]
        )
        assert deleted < released
    status, body = await create_over_http(fleet.servers[0], runtime("after-stop", "no-such-parent"))
    assert status == 201, body  # nothing left behind to refuse it


async def test_ha_replicas_answer_for_every_cluster_and_hand_over_without_a_gap(fleet: Fleet) -> None:
    hub = EmbeddedAPIServer("own-hub")
    await hub.start()
    try:
        ha = {"ha": True, "ha_kubeconfig": hub.write_kubeconfig(fleet.tmp / "hub.kc"), "ha_namespace": NS}
        a = await fleet.start("replica-a", **ha)
        b = await fleet.start("replica-b", **ha)
        names = [s.name for s in fleet.servers]

        def split() -> dict[str, str] | None:
            owners = {c: owner_of(fleet.webhooks(c)) for c in names}
            both = {a.holder.identity, b.holder.identity}
            return owners if set(owners.values()) == both else None

        owners = await fleet.until(split, "one cluster each")
        of_a = next(c for c, o in owners.items() if o == a.holder.identity)
        of_b = next(c for c, o in owners.items() if o == b.holder.identity)
        assert url_of(fleet.webhooks(of_a)) == a.webhook.base_url and url_of(fleet.webhooks(of_b)) == b.webhook.base_url

        # b answers for a's cluster from that cluster's API server: never "not registered", never wrong
        await apply_document(fleet.sim[of_a], runtime("only-in-the-cluster"))
        allowed = await review(b, of_a, runtime("child", "only-in-the-cluster"))
        assert allowed["allowed"] is True, allowed
        denied = await review(b, of_a, runtime("child", "no-such-parent"))
        assert denied["allowed"] is False
        assert denied["status"]["message"] == 'inherit-from parent "no-such-parent" not found (chain so far: [child])'

        # a stops: its cluster's configuration is re-pointed at b while a still holds the Lease and still serves,
        # then the Lease is released, and only then does a's webhook server stop
        start = len(fleet.commits)
        await a.stop()
        del fleet.apps["replica-a"]
        await fleet.until(lambda: (r := fleet.lease(of_a)) is not None and r.holder == b.holder.identity, "b took over")
        history = [c for c in fleet.commits[start:] if c.cluster == of_a]
        webhooks = [c for c in history if c.kind == "webhooks"]
        assert all(c.obj is not None for c in webhooks), "the configuration was deleted during the hand-over"
        assert url_of(webhooks[0].obj) == b.webhook.base_url  # the first change: re-pointed at b, by a
        repointed = history.index(webhooks[0])
        released = next(
            i for i, c in enumerate(history) if c.kind == "lease" and c.obj and c.obj["spec"]["holderIdentity"] == ""
        )
        assert repointed < released
        assert history[released].webhook_server_up["replica-a"], "a's webhook server stopped before the release"
        lease = fleet.lease(of_a)
        assert lease is not None and lease.holder == b.holder.identity
        # and writes in that cluster are checked all along, now by b
        status, body = await create_over_http(fleet.sim[of_a], runtime("late", "no-such-parent"))
        assert status == 403 and "no-such-parent" in body["message"], body
    finally:
        for app in fleet.apps.values():
            await app.stop()
        fleet.apps.clear()
        await hub.stop()
