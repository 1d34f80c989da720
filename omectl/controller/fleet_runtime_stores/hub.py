"""FleetRuntimes in a hub cluster: the FleetRuntime CRD (`fleet.omectl.io/v1alpha1`, cluster-scoped) watched with an
informer, revisions as ControllerRevisions in the hub namespace (owned by their FleetRuntime), the status written
to its status subresource, and Events (for a cluster-scoped object, in `default`). The requests are the object's
annotations, as `omectl rollout` or `kubectl annotate` write them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any, Literal

from omectl.api.fleet import API_VERSION, KIND
from omectl.controller.fleet_runtime_stores import RevisionExists, StatusMutation
from omectl.core.fleet_runtimes import FLEET_RUNTIME_LABEL
from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.events import EventRecorder
from omectl.kube.field_managers import FLEET_FIELD_MANAGER
from omectl.kube.informer import Handler, Informer
from omectl.kube.resources import CONTROLLER_REVISIONS, FLEET_RUNTIMES
from omectl.kube.writer import write_status

__all__ = ["HubStore"]


class HubStore:
    """The FleetRuntimes of the hub `hub`; revisions in `namespace` (the controller's hub namespace)."""

    def __init__(self, hub: ClusterClient, namespace: str, *, owns_hub: bool = False) -> None:
        self.hub = hub
        self.namespace = namespace
        self.owns_hub = owns_hub
        # optional: a hub without the FleetRuntime CRD has none (deploy/base installs it)
        self.informer = Informer(hub, FLEET_RUNTIMES, optional=True)
        self.recorder = EventRecorder(hub, component="omectl-fleet")

    @property
    def synced(self) -> asyncio.Event:
        return self.informer.synced

    @property
    def served(self) -> bool:
        return self.informer.served

    def add_handler(self, handler: Handler) -> None:
        self.informer.add_handler(handler)

    async def run(self) -> None:
        await self.informer.run()

    def get(self, name: str) -> dict[str, Any] | None:
        return self.informer.cache.get(None, name)

    def objects(self) -> list[dict[str, Any]]:
        return self.informer.cache.list()

    async def write_status(self, fr: Mapping[str, Any], desired: StatusMutation) -> None:
        with contextlib.suppress(NotFound):
            await write_status(
                self.hub,
                FLEET_RUNTIMES,
                None,
                fr["metadata"]["name"],
                desired,
                field_manager=FLEET_FIELD_MANAGER,
                cached=fr,
            )

    async def record_event(
        self, fr: Mapping[str, Any], type_: Literal["Normal", "Warning"], reason: str, message: str
    ) -> None:
        await self.recorder.record(dict(fr), type_, reason, message, api_version=API_VERSION, kind=KIND)

    async def list_revisions(self, owner: str) -> list[dict[str, Any]]:
        return await self.hub.list_all(
            CONTROLLER_REVISIONS, self.namespace, label_selector=f"{FLEET_RUNTIME_LABEL}={owner}"
        )

    async def create_revision(self, fr: Mapping[str, Any], name: str, number: int, data: Mapping[str, Any]) -> None:
        body = {
            "apiVersion": "apps/v1",
            "kind": "ControllerRevision",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {FLEET_RUNTIME_LABEL: fr["metadata"]["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": fr.get("apiVersion", API_VERSION),
                        "kind": KIND,
                        "name": fr["metadata"]["name"],
                        "uid": fr["metadata"].get("uid", ""),
                        "controller": True,
                    }
                ],
            },
            "revision": number,
            "data": dict(data),
        }
        try:
            await self.hub.create(CONTROLLER_REVISIONS, body, self.namespace, field_manager=FLEET_FIELD_MANAGER)
        except Conflict:
            raise RevisionExists(name) from None

    async def renumber_revision(self, owner: str, name: str, number: int) -> None:
        await self.hub.patch(CONTROLLER_REVISIONS, name, {"revision": number}, self.namespace)

    async def delete_revision(self, owner: str, name: str) -> None:
        with contextlib.suppress(KubeAPIError):
            await self.hub.delete(CONTROLLER_REVISIONS, name, self.namespace)

    async def close(self) -> None:
        if self.owns_hub:
            await self.hub.close()
