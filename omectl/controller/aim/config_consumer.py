"""The frame every reconcile of an AIM kind reconciled by work key kind shares (the v1alpha2 consumers,
`consumers.AimConsumerReconciler`; the legacy template kinds, `legacy.LegacyReconciler`):

1. count the reconcile and resolve the object's runtime config from the informer caches (`resolve`);
2. an explicit `runtimeConfigName` that does not exist: the kind's refused status (`write_refused`), a Warning event
   and `RetryLater`; the implicit `default` missing: one Normal event on the first reconcile that finds it missing;
3. the kind's own work and status (`reconcile_kind`).

`write_desired_status` writes a status computed against the live object, sending nothing when the cache already
holds it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from omectl.controller.aim.service import ConfigEvents
from omectl.controller.aim.watch import AimWatch
from omectl.core.aim.resolution import Resolution, resolve
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import ResourceRef
from omectl.kube.writer import cache_behind_own_write, write_status


class ConfigConsumerReconciler:
    """Reconciles the kinds of `keys` (work key kind → kind), served at `resources` (kind → resource); an object listed
    without apiVersion gets `api_version`."""

    def __init__(
        self,
        *,
        operator_namespace: str,
        keys: Mapping[str, str],
        resources: Mapping[str, ResourceRef],
        api_version: str,
    ) -> None:
        self.operator_namespace = operator_namespace
        self.keys = keys
        self.resources = resources
        self.api_version = api_version
        self.writes = 0
        self.reconciles: Counter[tuple[str, str, str, str]] = Counter()
        """Reconciles per (cluster, kind, namespace, name)."""
        self.config_events = ConfigEvents()

    async def reconcile(self, cluster: AimWatch, key_kind: str, obj: dict[str, Any]) -> None:
        kind = self.keys[key_kind]
        meta = obj["metadata"]
        namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
        self.reconciles[(cluster.name, kind, namespace, name)] += 1
        obj = dict(obj, apiVersion=obj.get("apiVersion") or self.api_version, kind=kind)
        resolution = resolve(obj, cluster.config_lookup, operator_namespace=self.operator_namespace)
        previous = list((obj.get("status") or {}).get("conditions") or [])
        if not resolution.may_apply:
            await self.write_refused(cluster, obj, resolution, previous)
            self.config_events.refuse(cluster, obj, resolution)
        event_key = (cluster.name, str(meta.get("uid") or f"{kind}/{namespace}/{name}"))
        self.config_events.note_default(cluster, obj, resolution, previous, event_key)
        await self.reconcile_kind(cluster, obj, resolution, previous)

    async def write_refused(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, previous: list[Any]
    ) -> None:
        """The status of an object whose explicit runtime config does not exist."""
        raise NotImplementedError

    async def reconcile_kind(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, previous: list[Any]
    ) -> None:
        """The kind's own step and its status, once the runtime config may apply."""
        raise NotImplementedError

    async def write_desired_status(
        self,
        cluster: AimWatch,
        obj: Mapping[str, Any],
        desired: Callable[[Mapping[str, Any]], dict[str, Any] | None],
    ) -> bool:
        """Write `desired(live)` (None: nothing to write) as the object's status; True when it sent a write."""
        meta, resource = obj["metadata"], self.resources[str(obj["kind"])]
        behind = cache_behind_own_write(cluster.client, resource, meta.get("namespace") or None, meta["name"], obj)
        if desired(obj) is None and not behind:  # against the cache, before any request
            return False
        await write_status(
            cluster.client,
            resource,
            meta.get("namespace") or None,
            meta["name"],
            desired,
            field_manager=FIELD_MANAGER,
            cached=obj,
        )
        self.writes += 1
        return True
