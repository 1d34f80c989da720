"""Is a member's admission in order? Its webhook configuration, the server that configuration calls, its owner.

`check_member` reads the member's `omectl-ome-webhooks` ValidatingWebhookConfiguration and ownership Lease, and
calls `/healthz` on every webhook server the configuration names, verifying TLS with the configuration's own
`caBundle` (as the API server would). It returns what it found and, when something is wrong, the problem and the
fix in one sentence each. The usual problem: the controller was killed (kill -9, OOM, node lost), so the
configuration points at a server that does not answer, and with failurePolicy Fail every OME and AIM write in
that cluster is refused until a controller takes the cluster over or the configuration is removed.
`omectl cluster status` prints it; `omectl doctor` can call it too.

`uninstall` removes the configuration and the Lease from a member no live controller holds (`omectl cluster
remove`, `omectl cluster uninstall-webhooks`).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from omectl.fleet.leases import LeaseRecord, Leases, describe_holder, parse_micro_time
from omectl.fleet.sharding import DEFAULT_LEASE_NAMESPACE, LEASE_NAME
from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound
from omectl.kube.resources import VALIDATING_WEBHOOK_CONFIGURATIONS
from omectl.webhook.server import OWNER_LABEL, WEBHOOK_CONFIGURATION_NAME

__all__ = ["HeldByLiveController", "MemberCheck", "check_member", "probe", "uninstall"]


@dataclass
class MemberCheck:
    """What `check_member` found in one member cluster."""

    cluster: str
    installed: bool = False  # the webhook configuration exists
    owner_label: str | None = None  # who installed it (`omectl.io/owner`)
    failure_policy: str | None = None
    servers: dict[str, str | None] = field(default_factory=dict)  # base URL -> None (answers) or why not
    lease: LeaseRecord | None = None
    lease_fresh: bool = False
    problem: str | None = None
    fix: str | None = None

    @property
    def owner(self) -> str | None:
        """Who holds the cluster's Lease, for people (None: nobody)."""
        return describe_holder(self.lease) if self.lease is not None and self.lease.holder else None

    @property
    def webhooks(self) -> str:
        """One word for a table: none, ok, failing, unknown."""
        if self.problem and not self.servers:
            return "unknown"
        if not self.installed:
            return "none"
        return "failing" if any(why is not None for why in self.servers.values()) else "ok"

    def to_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "webhookConfiguration": WEBHOOK_CONFIGURATION_NAME if self.installed else None,
            "webhooks": self.webhooks,
            "ownerLabel": self.owner_label,
            "failurePolicy": self.failure_policy,
            "servers": dict(self.servers),
            "owner": self.owner,
            "ownerLive": self.lease_fresh,
            "problem": self.problem,
            "fix": self.fix,
        }


def _ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if ca_bundle:
        context.load_verify_locations(cadata=base64.b64decode(ca_bundle).decode())
    return context


def _base(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


async def probe(base_url: str, ca_bundle: str | None, timeout: float = 3.0) -> str | None:
    """None if the webhook server at `base_url` answers `/healthz`, verified against `ca_bundle`; else why not."""
    try:
        context: ssl.SSLContext | bool = _ssl_context(ca_bundle) if base_url.startswith("https") else False
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
        return f"its caBundle is not a PEM certificate ({exc})"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session,
            session.get(base_url + "/healthz", ssl=context) as reply,
        ):
            if reply.status != 200:
                return f"GET /healthz answered {reply.status}"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except aiohttp.ClientConnectorCertificateError as exc:
        return f"its certificate does not match the configuration's caBundle ({exc.certificate_error})"
    except aiohttp.ClientError as exc:
        return " ".join(str(exc).split()) or type(exc).__name__
    return None


async def _read(client: ClusterClient, namespace: str) -> tuple[dict[str, Any] | None, LeaseRecord | None]:
    try:
        config: dict[str, Any] | None = await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATION_NAME)
    except NotFound:
        config = None
    return config, await Leases(client, namespace).get(LEASE_NAME)


def _age(record: LeaseRecord, now: float) -> str:
    renewed = parse_micro_time(record.renew_time)
    return f"{max(0, round(now - renewed))} s ago" if renewed is not None else "at an unknown time"


async def check_member(
    client: ClusterClient,
    cluster: str,
    *,
    namespace: str = DEFAULT_LEASE_NAMESPACE,
    timeout: float = 3.0,
    clock: Callable[[], float] = time.time,
) -> MemberCheck:
    """Read the member's webhook configuration and Lease, call its webhook servers, say what is wrong."""
    found = MemberCheck(cluster)
    try:
        config, lease = await asyncio.wait_for(_read(client, namespace), timeout + 1)
    except Exception as exc:  # any failure (a malformed Lease too) is a finding the report shows, never a crash
        found.problem = f"cannot read the webhook configuration: {' '.join(str(exc).split())}"
        found.fix = f"check that the cluster can be reached: `omectl cluster check {cluster}`"
        return found
    now = clock()
    found.lease = lease if lease is not None and lease.holder else None
    found.lease_fresh = found.lease is not None and found.lease.fresh(now)
    if config is None:
        return found
    found.installed = True
    found.owner_label = ((config.get("metadata") or {}).get("labels") or {}).get(OWNER_LABEL)
    hooks = [h for h in config.get("webhooks") or [] if isinstance(h, dict)]
    policies = {str(h.get("failurePolicy") or "Fail") for h in hooks}
    found.failure_policy = "/".join(sorted(policies)) or None
    targets: dict[str, str | None] = {}
    for hook in hooks:
        client_config = hook.get("clientConfig") or {}
        if isinstance(client_config.get("url"), str):
            targets.setdefault(_base(client_config["url"]), client_config.get("caBundle"))
    answers = await asyncio.gather(*(probe(url, ca, timeout) for url, ca in targets.items()))
    found.servers = dict(zip(targets, answers, strict=True))
    failing = {url: why for url, why in found.servers.items() if why is not None}
    if not failing:
        return found
    url, why = next(iter(failing.items()))
    effect = (
        f"with failurePolicy Fail every create and update of OME and AIM objects in {cluster} is refused"
        if "Fail" in policies
        else "with failurePolicy Ignore those objects are admitted unchecked"
    )
    problem = (
        f"webhook configuration {WEBHOOK_CONFIGURATION_NAME} points at {url}, which does not answer ({why}): {effect}"
    )
    uninstall_hint = f"`omectl cluster uninstall-webhooks {cluster}`"
    if found.lease is None:
        found.problem = f"{problem}; no omectl holds the cluster"
        found.fix = f"start `omectl run` for this cluster (it installs its own), or remove them: {uninstall_hint}"
    elif not found.lease_fresh:
        found.problem = (
            f"{problem}; its owner {describe_holder(found.lease)} stopped renewing its lease "
            f"{_age(found.lease, now)} (killed?)"
        )
        found.fix = (
            "start `omectl run` (it takes the cluster over once the lease has expired and re-points the webhooks), "
            f"or remove them: {uninstall_hint}"
        )
    else:
        found.problem = (
            f"{problem}; its owner {describe_holder(found.lease)} renewed its lease {_age(found.lease, now)}"
        )
        found.fix = (
            "if that controller runs, make its webhook URL reachable from the cluster's API server (--webhook-url, "
            "--webhook-host, the Service); if it was killed, start `omectl run` (it takes the cluster over once the "
            f"lease has expired) or, once it has, remove them: {uninstall_hint}"
        )
    return found


class HeldByLiveController(Exception):
    """The member's Lease is held and renewed: its controller would put the configuration back."""

    def __init__(self, cluster: str, record: LeaseRecord) -> None:
        super().__init__(
            f"cluster {cluster} is held by a running omectl: {describe_holder(record)}; stop it (a clean stop removes "
            "its webhook configuration) or remove the cluster from its registry"
        )
        self.record = record


async def held_by_live_controller(
    client: ClusterClient, *, namespace: str = DEFAULT_LEASE_NAMESPACE, clock: Callable[[], float] = time.time
) -> bool:
    """Whether a controller holds the member's ownership Lease and renews it (by the wall clock)."""
    lease = await Leases(client, namespace).get(LEASE_NAME)
    return lease is not None and lease.fresh(clock())


async def uninstall(
    client: ClusterClient,
    cluster: str,
    *,
    namespace: str = DEFAULT_LEASE_NAMESPACE,
    clock: Callable[[], float] = time.time,
) -> list[str]:
    """Delete the webhook configuration and the ownership Lease; `HeldByLiveController` while a controller renews
    the Lease (by the wall clock: a CLI cannot wait a lease duration). Returns what was deleted."""
    leases = Leases(client, namespace)
    lease = await leases.get(LEASE_NAME)
    if lease is not None and lease.fresh(clock()):
        raise HeldByLiveController(cluster, lease)
    deleted: list[str] = []
    with contextlib.suppress(NotFound):
        await client.delete(VALIDATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATION_NAME)
        deleted.append(f"validatingwebhookconfiguration {WEBHOOK_CONFIGURATION_NAME}")
    if lease is not None and await leases.delete(lease):
        deleted.append(f"lease {namespace}/{LEASE_NAME}")
    return deleted
