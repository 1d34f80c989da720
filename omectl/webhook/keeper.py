"""The webhook configuration of one member, kept by the holder of the member's ownership Lease.

While a process holds a cluster's Lease (`omectl.fleet.sharding`), its `WebhookKeeper` server-side applies the
`omectl-ome-webhooks` ValidatingWebhookConfiguration (labelled `omectl.io/owner: <holder identity>`), watches it
(a field-selected informer on that one name) and puts it back whenever it differs from what the holder wants:
someone else's apply, an edit, a deletion. Every write passes the cluster's write fence, so none is sent once
the Lease is not held.

When the holder lets the cluster go, `finish` writes the last state while the Lease is still held: re-pointed at
the next owner's webhook server (a handover between `--ha` replicas, so admission never calls a server that is
going away) or deleted (a clean stop with nobody to take over, the cluster removed from the registry).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from omectl.background import alongside
from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.informer import Informer
from omectl.kube.resources import VALIDATING_WEBHOOK_CONFIGURATIONS
from omectl.webhook.keeping import Keeper
from omectl.webhook.server import WEBHOOK_CONFIGURATION_NAME

__all__ = ["RemoteEndpoint", "WebhookKeeper", "matches"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RemoteEndpoint:
    """Another replica's webhook server, as its membership Lease advertises it."""

    base_url: str
    ca_pem: bytes | None

    @classmethod
    def parse(cls, url: str | None, ca_bundle: str | None) -> RemoteEndpoint | None:
        if not url:
            return None
        return cls(url.rstrip("/"), base64.b64decode(ca_bundle) if ca_bundle else None)

    def url_for(self, cluster: str, kind: str) -> str:
        return f"{self.base_url}/validate/{cluster}/{kind.lower()}"

    def conversion_url(self, cluster: str) -> str:
        return f"{self.base_url}/convert/{cluster}"


def _contains(live: Any, wanted: Any) -> bool:
    """Whether `live` says everything `wanted` says (the API server adds defaults: extra keys are fine)."""
    if isinstance(wanted, Mapping):
        return isinstance(live, Mapping) and all(_contains(live.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(live, list)
            and len(live) == len(wanted)
            and all(_contains(a, b) for a, b in zip(live, wanted, strict=True))
        )
    return bool(live == wanted)


def matches(live: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> bool:
    """Whether the live configuration is the desired one: its labels, and each of its webhooks as desired (a
    webhook someone else added to it is theirs; server-side apply leaves it alone, and so does this check)."""
    if live is None:
        return False
    labels = (live.get("metadata") or {}).get("labels") or {}
    if not _contains(labels, desired["metadata"]["labels"]):
        return False
    by_name = {h.get("name"): h for h in live.get("webhooks") or [] if isinstance(h, Mapping)}
    return all(_contains(by_name.get(h["name"]), h) for h in desired["webhooks"])


class WebhookKeeper(Keeper):
    """Installs one member's webhook configuration and keeps it as `desired()` says, until `finish`."""

    task_prefix = "webhooks"
    keeping = "installing webhooks"
    logger = log

    def __init__(
        self,
        cluster: str,
        client: ClusterClient,
        desired: Callable[[], dict[str, Any]],
        writing: Callable[[], AbstractContextManager[None]],
    ) -> None:
        super().__init__(cluster, client, desired, writing)
        self.informer = Informer(
            client,
            VALIDATING_WEBHOOK_CONFIGURATIONS,
            field_selector=f"metadata.name={WEBHOOK_CONFIGURATION_NAME}",
            handlers=[self._changed],
        )
        self.installed = asyncio.Event()

    async def _run(self) -> None:
        async with alongside(self.informer.run, f"webhooks-informer-{self.cluster}"):
            self._dirty.set()  # the first install does not wait for the informer
            await self._keep_while_running()

    async def _keep(self, desired: dict[str, Any]) -> bool:
        if self.installed.is_set():
            # a check compares with the cluster's configuration, not with a first list still being filled in (its
            # handlers mark the keeper dirty before the informer is synced): that was a second, needless write
            await self.informer.synced.wait()
            if matches(self.informer.cache.get("", WEBHOOK_CONFIGURATION_NAME), desired):
                return False
        await self._apply(desired)
        if self.installed.is_set():
            log.info("cluster %s: webhook configuration %s put back", self.cluster, WEBHOOK_CONFIGURATION_NAME)
        self.installed.set()
        return True

    async def _apply(self, config: dict[str, Any]) -> None:
        with self.writing():
            await self.client.patch(
                VALIDATING_WEBHOOK_CONFIGURATIONS,
                WEBHOOK_CONFIGURATION_NAME,
                config,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                force=True,
            )
        self.applied += 1

    async def finish(self, successor: dict[str, Any] | None) -> None:
        """Stop keeping it, then leave `successor` in place (the next owner's configuration) or delete it."""
        await self.stop()
        if successor is not None:
            await self._apply(successor)
            log.info("cluster %s: webhook configuration handed over", self.cluster)
            return
        with contextlib.suppress(NotFound), self.writing():
            await self.client.delete(VALIDATING_WEBHOOK_CONFIGURATIONS, WEBHOOK_CONFIGURATION_NAME)
        log.info("cluster %s: webhook configuration %s deleted", self.cluster, WEBHOOK_CONFIGURATION_NAME)
