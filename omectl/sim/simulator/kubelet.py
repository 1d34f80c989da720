"""`ImagePulls`: the simulated kubelets' image pulls. A placed pod whose image the registry lacks becomes a Pod in
ImagePullBackOff, and a KServe predictor's pod that fits no node a Pending Pod with the scheduler's
FailedScheduling Event. A KServe predictor's placed pod whose images pull becomes a Running, ready Pod (upstream
aim-engine reads its services' pods); every other pod is taken as running and is not made (its workload's status
says so)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from omectl.core.ome.workloads import KSERVE_INFERENCE_SERVICE
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.clock import now_rfc3339
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.simulator.cluster import NODES, PODS, ObjectRef, SimulatedCluster
from omectl.sim.simulator.events import EventRecorder
from omectl.sim.simulator.images import ImageRegistry
from omectl.sim.simulator.pods import (
    ERR_IMAGE_PULL,
    IMAGE_PULL_BACK_OFF,
    PodSlot,
    images,
    owned_by,
    pod_slots,
    pull_failures,
    running_status,
    unavailable_reason,
    unschedulable_status,
    waiting_status,
    workload_pod,
)
from omectl.sim.simulator.scheduler import Binding

StatusWriter = Callable[[ObjectRef, dict[str, Any], dict[str, Any], str], Awaitable[None]]
"""(ref, live object, new status, field manager): write the status unless the live one is it already."""


class ImagePulls:
    def __init__(
        self, api: SimulatedCluster, registry: ImageRegistry, events: EventRecorder, write_status: StatusWriter
    ) -> None:
        self.api = api
        self.registry = registry
        self.events = events
        self.write_status = write_status

    async def sync(
        self,
        workload: dict[str, Any],
        groups: Sequence[Sequence[Binding]],
        manager: str,
        *,
        unplaced: int = 0,
        scheduler_message: str = "",
    ) -> str:
        """Make a Pod in ImagePullBackOff for each pod of the placed `groups` whose image the registry lacks, a
        Pending Pod for each pod of a KServe InferenceService's `unplaced` groups (with the scheduler's
        FailedScheduling Event), a Running, ready Pod for each other placed pod of a KServe InferenceService (its
        Pending Pod bound to the node, when it had one), and delete the workload's pods that are no longer so (as
        `manager`, its controller); returns why the workload is unavailable (`ImagePullBackOff: Back-off pulling
        image "..."`), or "" when every placed pod runs."""
        rt = self.api.types.storage_version(PODS)
        if rt is None:
            return ""
        meta = workload["metadata"]
        namespace = meta.get("namespace", "")
        kserve = _is_inference_service(workload)
        slots = pod_slots(workload, len(groups) + (unplaced if kserve else 0))
        placed = [
            (slot, node, pull_failures(slot.spec, self.registry))
            for group, bindings in zip(slots, groups, strict=False)
            for slot, (node, _) in zip(group, bindings, strict=True)
        ]
        stuck = [(slot, node, failures) for slot, node, failures in placed if failures]
        # a predictor naming no image (its serving runtime's, unknown here) gets no pod: a pod needs a container
        wanted: dict[str, tuple[PodSlot, str | None, dict[str, str]]] = {
            slot.name: (slot, node, failures)
            for slot, node, failures in placed
            if failures or (kserve and images(slot.spec))
        }
        pending = [slot for group in slots[len(groups) :] for slot in group if images(slot.spec)]
        wanted.update((slot.name, (slot, None, {})) for slot in pending)
        for pod in [p for p in self.api.store.items(PODS, namespace) if owned_by(p, meta["uid"])]:
            name = pod["metadata"]["name"]
            want = wanted.get(name)
            if want is not None and _same_pod(pod, want[0], want[1]):
                del wanted[name]  # already waiting on its image, or for a node, or running
                if want[1] is None:
                    await self._unschedulable(pod, scheduler_message)
                continue
            if want is not None and want[1] is not None and not want[2] and _same_pod(pod, want[0], None):
                del wanted[name]  # the scheduler binds the pending pod to the node that freed up
                await self._run(rt, pod, want[1])
                continue
            with contextlib.suppress(APIError):  # gone already (the workload's deletion took it)
                await self.api.delete(rt, namespace, name, {}, WriteOptions(field_manager=manager))
        for slot, node, failures in wanted.values():
            if node is None:
                body = workload_pod(workload, slot, None)
                pod = (await self.api.create(rt, namespace, body, WriteOptions(field_manager=manager))).obj
                await self._unschedulable(pod, scheduler_message)
            elif failures:
                await self._start(rt, workload, slot, node, failures, manager)
            else:
                body = workload_pod(workload, slot, node)
                pod = (await self.api.create(rt, namespace, body, WriteOptions(field_manager=manager))).obj
                await self._run(rt, pod, node)
        return unavailable_reason(stuck[0][2], stuck[0][0].spec) if stuck else ""

    async def _run(self, rt: ResourceType, pod: dict[str, Any], node: str) -> None:
        """Bind the pod to its node as the scheduler does (`Scheduled`; a pod made for its node is bound already),
        then start it as kubelet does: Running, every container ready (the simulated model servers pass their
        readiness probes at once)."""
        meta = pod["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        if pod["spec"].get("nodeName") != node:

            def bind(live: dict[str, Any]) -> dict[str, Any]:
                return dict(live, spec={**live["spec"], "nodeName": node})

            opts = WriteOptions(field_manager="default-scheduler")
            pod = (await self.api._write_update(rt, namespace, name, bind, opts, "", precondition_rv=None)).obj
        assigned = f"Successfully assigned {namespace}/{name} to {node}"
        await self.events.record(pod, "Normal", "Scheduled", assigned, "default-scheduler")
        ref: ObjectRef = (PODS, namespace, name)
        await self.write_status(ref, pod, running_status(pod, self._node_ip(node), now_rfc3339()), "kubelet")

    async def _unschedulable(self, pod: dict[str, Any], message: str) -> None:
        """The scheduler's word on a pod that fits no node: a FailedScheduling Event when its message is new to the
        pod, then `PodScheduled` False `Unschedulable` (so a reader of the status finds the Event there)."""
        scheduled: dict[str, Any] = next(
            (c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"), {}
        )
        if scheduled.get("message") == message:
            return
        await self.events.record(pod, "Warning", "FailedScheduling", message, "default-scheduler")
        ref: ObjectRef = (PODS, pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
        await self.write_status(ref, pod, unschedulable_status(pod, message, now_rfc3339()), "default-scheduler")

    async def _start(
        self,
        rt: ResourceType,
        workload: dict[str, Any],
        slot: PodSlot,
        node: str,
        failures: dict[str, str],
        manager: str,
    ) -> None:
        """Create the pod bound to its node, then fail its pull as kubelet does: ErrImagePull, then ImagePullBackOff,
        each with its Events on the pod."""
        namespace = workload["metadata"].get("namespace", "")
        body = workload_pod(workload, slot, node)
        pod = (await self.api.create(rt, namespace, body, WriteOptions(field_manager=manager))).obj
        ref: ObjectRef = (PODS, namespace, slot.name)
        assigned = f"Successfully assigned {namespace}/{slot.name} to {node}"
        await self.events.record(pod, "Normal", "Scheduled", assigned, "default-scheduler")
        host_ip = self._node_ip(node)
        for reason in (ERR_IMAGE_PULL, IMAGE_PULL_BACK_OFF):
            await self.write_status(ref, pod, waiting_status(pod, failures, reason, host_ip, now_rfc3339()), "kubelet")
            pod = self.api.store.get(*ref) or pod
            for container, image in images(slot.spec):
                if container not in failures:
                    continue
                if reason == ERR_IMAGE_PULL:
                    events = [
                        ("Normal", "Pulling", f'Pulling image "{image}"'),
                        ("Warning", "Failed", f'Failed to pull image "{image}": {failures[container]}'),
                    ]
                else:
                    events = [("Normal", "BackOff", f'Back-off pulling image "{image}"')]
                events.append(("Warning", "Failed", f"Error: {reason}"))
                for type_, why, message in events:
                    path = f"spec.containers{{{container}}}"
                    await self.events.record(pod, type_, why, message, "kubelet", host=node, field_path=path)

    def _node_ip(self, name: str) -> str:
        node = self.api.store.get(NODES, "", name) or {}
        addresses = (node.get("status") or {}).get("addresses") or []
        return next((a.get("address", "") for a in addresses if a.get("type") == "InternalIP"), "")


def _same_pod(pod: dict[str, Any], slot: PodSlot, node: str | None) -> bool:
    """Whether an existing pod is `slot`'s on `node` (None: unscheduled), pulling the same images (an LWS pod keeps
    its name when its template changes)."""
    return pod["spec"].get("nodeName") == node and images(pod["spec"]) == images(slot.spec)


def _is_inference_service(workload: Mapping[str, Any]) -> bool:
    return (str(workload.get("apiVersion") or "").rpartition("/")[0], workload.get("kind")) == KSERVE_INFERENCE_SERVICE
