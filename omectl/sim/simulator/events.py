"""`EventRecorder`: `v1` Events as the simulated scheduler and kubelets record them."""

from __future__ import annotations

import itertools
import time
from typing import Any

from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.clock import now_rfc3339
from omectl.sim.simulator.cluster import EVENTS, SimulatedCluster


class EventRecorder:
    def __init__(self, api: SimulatedCluster) -> None:
        self.api = api
        self._serial = itertools.count()

    async def record(
        self,
        obj: dict[str, Any],
        type_: str,
        reason: str,
        message: str,
        component: str,
        *,
        host: str = "",
        field_path: str = "",
    ) -> None:
        """An Event on `obj` as `component` (on node `host`, about its part `field_path`) records it; none on a
        cluster that does not serve Events."""
        rt = self.api.types.storage_version(EVENTS)
        if rt is None:
            return
        meta = obj["metadata"]
        now = now_rfc3339()
        involved = {
            "apiVersion": obj.get("apiVersion", ""),
            "kind": obj.get("kind", ""),
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "uid": meta.get("uid", ""),
            "resourceVersion": meta.get("resourceVersion", ""),
        }
        if field_path:
            involved["fieldPath"] = field_path
        event: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{meta['name']}.{time.time_ns() + next(self._serial):x}"},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": type_,
            "source": {"component": component, **({"host": host} if host else {})},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": component,
            "reportingInstance": host,
        }
        namespace = meta.get("namespace", "default")
        await self.api.create(rt, namespace, event, WriteOptions(field_manager=component))
