"""The conversion webhook of one member's AIM CRDs, kept by the holder of the member's ownership Lease.

The CRDs served at two versions (`omectl.api.crdgen.converted_crds`) name a conversion webhook in
`spec.conversion.webhook.clientConfig`. As generated they name a placeholder that never answers; while a process
holds a cluster's Lease, its `ConversionKeeper` merge-patches each of those CRDs that the cluster has so that its
clientConfig is `desired()` (this process's `/convert/<cluster>` URL and its caBundle), watches them (a field-selected
informer per CRD, caching only the conversion) and puts the clientConfig back whenever it differs: someone re-applied
the CRDs, or edited them. A CRD the cluster lacks is left alone (nothing is created) until it appears. Every write
passes the cluster's write fence.

When the holder lets the cluster go, `finish` either re-points the CRDs at the next owner (a handover between `--ha`
replicas) or leaves them as they are: unlike a webhook configuration, a CRD cannot be deleted, and its conversion
cannot turn off (the `None` strategy would hand v1alpha1 clients the stored v1alpha2 objects unconverted). Until a
controller serves the cluster again, kube-apiserver answers 500 for what it must convert (docs/aim-versions.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.informer import Informer
from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS
from omectl.webhook.keeping import Keeper

__all__ = ["ConversionKeeper", "conversion_of"]

log = logging.getLogger(__name__)


def conversion_of(crd: Mapping[str, Any] | None) -> Any:
    """A CRD's `spec.conversion`, or None."""
    spec = (crd or {}).get("spec")
    return spec.get("conversion") if isinstance(spec, Mapping) else None


def _conversion_only(obj: dict[str, Any]) -> dict[str, Any]:
    """What the keeper reads of a CRD: its identity and conversion (a CRD's schemas are large)."""
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "uid", "resourceVersion") if k in meta}
    return {"metadata": kept, "spec": {"conversion": conversion_of(obj)}}


def _patch(conversion: Mapping[str, Any]) -> dict[str, Any]:
    """A merge patch making a CRD's conversion exactly `conversion` (a Service reference or caBundle left from
    before removed: kube allows a URL or a Service, not both)."""
    webhook = dict(conversion.get("webhook") or {})
    client_config = {"url": None, "service": None, "caBundle": None, **(webhook.get("clientConfig") or {})}
    return {"spec": {"conversion": {**conversion, "webhook": {**webhook, "clientConfig": client_config}}}}


class ConversionKeeper(Keeper):
    """Keeps the conversion webhook of the CRDs `crds` (names) in one member as `desired()` says, until `finish`."""

    task_prefix = "conversion"
    keeping = "keeping the CRDs' conversion"
    logger = log

    def __init__(
        self,
        cluster: str,
        client: ClusterClient,
        crds: Sequence[str],
        desired: Callable[[], dict[str, Any]],
        writing: Callable[[], AbstractContextManager[None]],
    ) -> None:
        super().__init__(cluster, client, desired, writing)
        self.crds = tuple(crds)
        self.informers = {
            name: Informer(
                client,
                CUSTOM_RESOURCE_DEFINITIONS,
                field_selector=f"metadata.name={name}",
                handlers=[self._changed],
                transform=_conversion_only,
            )
            for name in self.crds
        }
        self.kept = asyncio.Event()  # set once every CRD the cluster has was pointed at `desired()`
        self._patched_from: dict[str, str | None] = {}  # CRD -> the resourceVersion it had when last patched

    def _stale(self, desired: Mapping[str, Any]) -> list[str]:
        """The CRDs the cluster has whose conversion is not `desired` (one patched already counts once the informer
        has seen another version of it than the one it was patched from)."""
        stale = []
        for name, informer in self.informers.items():
            live = informer.cache.get("", name)
            if live is None or conversion_of(live) == desired:
                continue
            if self._patched_from.get(name) == live["metadata"].get("resourceVersion"):
                continue  # our patch is on its way to the informer
            stale.append(name)
        return stale

    async def _run(self) -> None:
        informers = [
            asyncio.create_task(i.run(), name=f"conversion-informer-{self.cluster}") for i in self.informers.values()
        ]
        try:
            await asyncio.gather(*(i.synced.wait() for i in self.informers.values()))
            self._dirty.set()
            await self._keep_while_running()
        finally:
            for task in informers:
                task.cancel()
            await asyncio.gather(*informers, return_exceptions=True)

    async def _keep(self, desired: dict[str, Any]) -> bool:
        for name in self._stale(desired):
            await self._apply(name, desired)
        self.kept.set()
        return True

    async def _apply(self, name: str, conversion: Mapping[str, Any]) -> None:
        """Point CRD `name` at `conversion`; a CRD the cluster lacks is skipped (it is never created here)."""
        live = self.informers[name].cache.get("", name)
        self._patched_from[name] = (live or {}).get("metadata", {}).get("resourceVersion")
        with contextlib.suppress(NotFound), self.writing():
            await self.client.patch(
                CUSTOM_RESOURCE_DEFINITIONS, name, _patch(conversion), patch_type="merge", field_manager=FIELD_MANAGER
            )
            self.applied += 1
            log.info("cluster %s: CRD %s converts through %s", self.cluster, name, _url(conversion))

    async def finish(self, successor: dict[str, Any] | None) -> None:
        """Stop keeping them; point them at `successor` (the next owner's conversion) or leave them as they are."""
        await self.stop()
        if successor is None:
            log.info(
                "cluster %s: the CRDs' conversion webhook is left as it is: no other omectl takes over", self.cluster
            )
            return
        for name in self.crds:
            await self._apply(name, successor)


def _url(conversion: Mapping[str, Any]) -> Any:
    return ((conversion.get("webhook") or {}).get("clientConfig") or {}).get("url")
