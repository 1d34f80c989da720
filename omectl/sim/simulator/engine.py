"""`WorkloadSimulator`: one cluster's kubelets, scheduler and workload controllers, as one asyncio task.

A store listener queues what changed (coalesced per object, so a burst of updates to one Deployment is one
piece of work); the task then schedules, labels and writes status through the cluster's own write path, so
readiness arrives after the write that asked for it, as on a real cluster. A placed pod whose image the
registry lacks is made as a Pod in ImagePullBackOff before its workload's status says it is not ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from omectl.core.aim.discovery import discovery_configmap, simulated_discovery_configmap
from omectl.core.ome.render import model_node_selector_key
from omectl.core.ome.workloads import WorkloadShape, workload_shape
from omectl.sim.apiserver.api import CRD_KEY, WriteOptions
from omectl.sim.apiserver.clock import now_rfc3339
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.store import DELETED, MODIFIED, StorageKey, WatchEvent
from omectl.sim.simulator.artifact_jobs import ArtifactJobs
from omectl.sim.simulator.cluster import (
    AUTOSCALERS,
    CLAIMS,
    CONFIG_MAPS,
    DEPLOYMENTS,
    GATEWAYS,
    HTTP_ROUTES,
    JOBS,
    KSERVE_INFERENCE_SERVICES,
    LEADER_WORKER_SETS,
    MODEL_KINDS,
    NODES,
    PODS,
    ObjectRef,
    SimulatedCluster,
)
from omectl.sim.simulator.config import SimulatorConfig
from omectl.sim.simulator.dry_runs import dry_run_output
from omectl.sim.simulator.events import EventRecorder
from omectl.sim.simulator.keda import KEDA_MANAGER, hpa_name, hpa_status, keda_autoscaled, keda_hpa
from omectl.sim.simulator.kubelet import ImagePulls
from omectl.sim.simulator.models import filled_spec, metadata_for
from omectl.sim.simulator.nodes import simulated_nodes
from omectl.sim.simulator.pods import owned_by
from omectl.sim.simulator.scheduler import Binding, GPULedger
from omectl.sim.simulator.status import (
    GATEWAY_CONTROLLER,
    bound_claim_status,
    deployment_status,
    job_finished,
    job_status,
    kserve_status,
    leader_worker_set_status,
    pod_template_hash,
    route_status,
    stuck_rollout_status,
)

log = logging.getLogger(__name__)

BOUND_OR_LOST = ("Bound", "Lost")
"""A claim's phases the binder leaves alone: bound, or its volume gone (a test sets it)."""

_RETRY: ObjectRef = (("", ""), "", "")  # the work item "try the pending workloads again"


@dataclass(frozen=True)
class _ScheduledKind:
    """A kind whose pods the simulator schedules, and the controller that writes its status."""

    manager: str
    status: Callable[[dict[str, Any], WorkloadShape, int, str, str], dict[str, Any]]


_SCHEDULED: dict[StorageKey, _ScheduledKind] = {
    DEPLOYMENTS: _ScheduledKind("kube-controller-manager", deployment_status),
    LEADER_WORKER_SETS: _ScheduledKind("lws-controller-manager", leader_worker_set_status),
    KSERVE_INFERENCE_SERVICES: _ScheduledKind("kserve-controller-manager", kserve_status),
}

_WORKLOAD_KEYS: dict[tuple[str, Any], StorageKey] = {
    ("apps", "Deployment"): DEPLOYMENTS,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): LEADER_WORKER_SETS,
    ("serving.kserve.io", "InferenceService"): KSERVE_INFERENCE_SERVICES,
}
"""(group, kind) of a workload that owns pods -> its storage key."""


@dataclass
class _Placement:
    """Where a workload's groups run; groups are placed whole and in order."""

    uid: str
    shape: WorkloadShape
    groups: list[list[Binding]] = field(default_factory=list)
    message: str = ""  # the scheduler's message for the first group that does not fit
    reported: str = ""  # the message a FailedScheduling event last carried

    @property
    def pending(self) -> bool:
        return len(self.groups) < self.shape.groups


class WorkloadSimulator:
    """Simulated GPU nodes, the model agent's node labels, and status for the workloads of one cluster."""

    def __init__(self, api: SimulatedCluster, config: SimulatorConfig, cluster: str | None = None) -> None:
        self.api = api
        self.store = api.store
        self.config = config
        self.cluster = cluster or api.name
        self.ledger = GPULedger()
        self.placements: dict[ObjectRef, _Placement] = {}
        # Deployment -> (uid, pod-template hash) of the last template whose every pod was ready: its pods keep
        # serving during a rolling update that does not complete (`_rolling_status`)
        self.available_templates: dict[ObjectRef, tuple[str, str]] = {}
        self.node_names = [n["metadata"]["name"] for n in simulated_nodes(self.cluster, config)]
        self.idle = asyncio.Event()
        self.idle.set()
        self._work: dict[ObjectRef, None] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.events = EventRecorder(api)
        self.image_pulls = ImagePulls(api, config.registry, self.events, self._write_status)
        first_node = self.node_names[0] if self.node_names else ""
        self.artifact_jobs = ArtifactJobs(api, config.sources, self._write_status, first_node)
        self._handlers: dict[StorageKey, Callable[[ObjectRef], Awaitable[None]]] = {
            **dict.fromkeys(_SCHEDULED, self._sync_workload),
            JOBS: self._sync_job,
            CLAIMS: self._sync_claim,
            HTTP_ROUTES: self._sync_route,
            GATEWAYS: self._sync_gateway,
            **dict.fromkeys(MODEL_KINDS, self._sync_model),
        }
        for node in self.store.items(NODES):
            self.ledger.observe(node)
        self.store.listeners.append(self._on_event)

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Register the missing simulated nodes, queue every existing object, and start the task."""
        if self._task is not None:
            return
        opts = WriteOptions(field_manager="kubelet")
        node_type = self._served(NODES)
        assert node_type is not None
        for node in simulated_nodes(self.cluster, self.config):
            if self.store.get(NODES, "", node["metadata"]["name"]) is None:
                await self.api.create(node_type, "", node, opts)
        for ref in self._existing_objects():
            self._enqueue(ref)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"simulator-{self.cluster}")

    async def stop(self) -> None:
        await self.artifact_jobs.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def wait_idle(self) -> None:
        """Wait until everything queued so far (and what it queued in turn) has been simulated."""
        await self.idle.wait()

    def _existing_objects(self) -> list[ObjectRef]:
        """Available workloads first (after a restart they keep their GPUs), then oldest first."""

        def order(obj: dict[str, Any]) -> tuple[bool, str, str]:
            conditions = (obj.get("status") or {}).get("conditions") or []
            up = any(c.get("type") in ("Available", "Ready") and c.get("status") == "True" for c in conditions)
            return (not up, obj["metadata"].get("creationTimestamp", ""), obj["metadata"]["name"])

        objects = [(key, obj) for key in self._handlers for obj in self.store.items(key)]
        objects.sort(key=lambda item: order(item[1]))
        return [(key, obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) for key, obj in objects]

    # --- events ----------------------------------------------------------------------------------------

    def _enqueue(self, ref: ObjectRef) -> None:
        self._work[ref] = None
        self.idle.clear()
        self._wakeup.set()

    def _on_event(self, event: WatchEvent) -> None:
        """Runs inside every commit: decide cheaply whether the change is ours to act on."""
        key = event.key
        if key == NODES:
            if event.type == DELETED:
                self.ledger.forget(event.obj["metadata"]["name"])
            elif not self.ledger.observe(event.obj):
                return
            self._enqueue(_RETRY)
            return
        if key == CRD_KEY and event.type == DELETED:
            # The kind is gone, and with it any object the cleanup did not delete one by one.
            spec = event.obj.get("spec") or {}
            kind = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
            for ref in [r for r in self.placements if r[0] == kind]:
                self._enqueue(ref)
            return
        if key == PODS:
            if event.type == DELETED:
                self._enqueue_owner(event.obj)  # a stuck pod deleted by hand comes back, as its controller makes it
            return
        if key not in self._handlers:
            return
        obj, old = event.obj, event.old
        if event.type == MODIFIED and old is not None:
            meta, old_meta = obj["metadata"], old["metadata"]
            if key in MODEL_KINDS:
                if (obj.get("status") or {}).get("state") and meta.get("generation") == old_meta.get("generation"):
                    return
            elif key == CLAIMS:
                if (obj.get("status") or {}).get("phase") in BOUND_OR_LOST:
                    return
            elif meta.get("generation") == old_meta.get("generation"):
                return  # a status or metadata write: nothing to schedule
        meta = obj["metadata"]
        self._enqueue((key, meta.get("namespace", ""), meta["name"]))

    def _enqueue_owner(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        for owner in meta.get("ownerReferences") or []:
            group = str(owner.get("apiVersion") or "").rpartition("/")[0]
            key = _WORKLOAD_KEYS.get((group, owner.get("kind")))
            if key is not None and owner.get("controller"):
                self._enqueue((key, meta.get("namespace", ""), owner.get("name", "")))

    # --- the loop --------------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            if not self._work:
                self.idle.set()
                self._wakeup.clear()
                await self._wakeup.wait()
                continue
            ref = next(iter(self._work))
            del self._work[ref]
            try:
                if ref == _RETRY:
                    await self._retry_pending()
                else:
                    await self._handlers[ref[0]](ref)
            except APIError as exc:
                if exc.code not in (404, 409):
                    log.warning("cluster %s: simulating %s: %s", self.cluster, ref, exc.message)
            except Exception:
                log.exception("cluster %s: simulator failure on %s", self.cluster, ref)

    def _served(self, key: StorageKey) -> ResourceType | None:
        return self.api.types.storage_version(key)

    # --- scheduled workloads: Deployments, LeaderWorkerSets, KServe InferenceServices --------------------

    async def _sync_workload(self, ref: ObjectRef) -> None:
        obj = self.store.get(*ref)
        placement = self.placements.get(ref)
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            if placement is not None:
                self._release(ref)
            return
        shape = workload_shape(obj)
        if shape is None:
            return
        if placement is None or placement.uid != obj["metadata"]["uid"] or placement.shape != shape:
            if placement is not None:
                self._release(ref)
            placement = self.placements[ref] = _Placement(obj["metadata"]["uid"], shape)
            self._place(placement)
        await self._write_workload_status(ref, obj, placement)

    def _place(self, placement: _Placement) -> bool:
        """Place the groups still pending, in order, until one does not fit; True when any was placed."""
        placed_before = len(placement.groups)
        placement.message = ""
        while placement.pending:
            result = self.ledger.place_group(placement.shape.group)
            if isinstance(result, str):
                placement.message = result
                break
            placement.groups.append(result)
        return len(placement.groups) > placed_before

    def _release(self, ref: ObjectRef) -> None:
        self.available_templates.pop(ref, None)
        placement = self.placements.pop(ref)
        for bindings in placement.groups:
            self.ledger.release(bindings)
        if placement.groups:
            self._enqueue(_RETRY)  # freed GPUs may fit a pending workload

    async def _retry_pending(self) -> None:
        for ref, placement in list(self.placements.items()):
            if not placement.pending or self.placements.get(ref) is not placement:
                continue
            message = placement.message
            if not self._place(placement) and placement.message == message:
                continue
            obj = self.store.get(*ref)
            if obj is not None and obj["metadata"]["uid"] == placement.uid and workload_shape(obj) == placement.shape:
                await self._write_workload_status(ref, obj, placement)

    async def _write_workload_status(self, ref: ObjectRef, obj: dict[str, Any], placement: _Placement) -> None:
        kind = _SCHEDULED[ref[0]]
        unplaced = placement.shape.groups - len(placement.groups)
        kubelet_message = await self.image_pulls.sync(
            obj, placement.groups, kind.manager, unplaced=unplaced, scheduler_message=placement.message
        )
        ready = 0 if kubelet_message else len(placement.groups)  # every group runs the same pod templates
        message = " ".join(m for m in (placement.message, kubelet_message) if m)
        status = self._rolling_status(ref, obj, placement, ready) or kind.status(
            obj, placement.shape, ready, message, now_rfc3339()
        )
        await self._write_status(ref, obj, status, kind.manager)
        if ref[0] == KSERVE_INFERENCE_SERVICES:
            await self._sync_autoscaler(obj, ready)
        if placement.message and placement.message != placement.reported:
            placement.reported = placement.message
            await self.events.record(obj, "Warning", "FailedScheduling", placement.message, "default-scheduler")
        elif not placement.message:
            placement.reported = ""

    async def _sync_autoscaler(self, isvc: dict[str, Any], running: int) -> None:
        """KEDA's HPA for an InferenceService autoscaled by KEDA (`.keda`): made, kept to its bounds and labels, its
        status written; deleted when the InferenceService is no longer autoscaled so."""
        rt = self._served(AUTOSCALERS)
        if rt is None:
            return
        meta = isvc["metadata"]
        namespace, name = meta.get("namespace", ""), hpa_name(isvc)
        live = self.store.get(AUTOSCALERS, namespace, name)
        opts = WriteOptions(field_manager=KEDA_MANAGER)
        if not keda_autoscaled(isvc):
            if live is not None and owned_by(live, meta["uid"]):
                with contextlib.suppress(APIError):
                    await self.api.delete(rt, namespace, name, {}, opts)
            return
        wanted = keda_hpa(isvc)
        if live is None:
            live = (await self.api.create(rt, namespace, wanted, opts)).obj
        elif (live.get("spec"), live["metadata"].get("labels")) != (wanted["spec"], wanted["metadata"]["labels"]):

            def rescale(current: dict[str, Any]) -> dict[str, Any]:
                labels = wanted["metadata"]["labels"]
                return dict(current, metadata=dict(current["metadata"], labels=labels), spec=wanted["spec"])

            live = (await self.api._write_update(rt, namespace, name, rescale, opts, "", precondition_rv=None)).obj
        status = hpa_status(live, running, now_rfc3339())
        await self._write_status((AUTOSCALERS, namespace, name), live, status, KEDA_MANAGER)

    def _rolling_status(
        self, ref: ObjectRef, obj: dict[str, Any], placement: _Placement, ready: int
    ) -> dict[str, Any] | None:
        """A Deployment whose pods of its last fully available template keep serving while the pods of its new
        template are not ready (same placement: a changed image, say), as a RollingUpdate with `maxUnavailable` 0
        leaves it (`stuck_rollout_status`); None otherwise."""
        if ref[0] != DEPLOYMENTS:
            return None
        template = pod_template_hash((obj.get("spec") or {}).get("template"))
        if ready >= placement.shape.groups:
            self.available_templates[ref] = (placement.uid, template)
            return None
        available = self.available_templates.get(ref)
        if available is None or available[0] != placement.uid or available[1] == template or placement.pending:
            return None
        return stuck_rollout_status(obj, placement.shape, now_rfc3339())

    async def _fill_model_spec(self, ref: ObjectRef, model: dict[str, Any]) -> bool:
        """Write the model's missing spec fields from the model table, as upstream's agent updates the spec;
        True when it wrote."""
        metadata = metadata_for(model, self.config.model_metadata)
        if metadata is None or filled_spec(model.get("spec") or {}, metadata) is None:
            return False
        rt = self._served(ref[0])
        assert rt is not None

        def fill(live: dict[str, Any]) -> dict[str, Any]:
            spec = filled_spec(live.get("spec") or {}, metadata)
            # a write through the API is defaulted by the schema (modelFormat.operator, ...): this one too
            return live if spec is None else self.api._apply_defaults(rt, copy.deepcopy(dict(live, spec=spec)))

        opts = WriteOptions(field_manager="ome-model-agent")
        await self.api._write_update(rt, ref[1], ref[2], fill, opts, "", precondition_rv=None)
        return True

    async def _write_status(self, ref: ObjectRef, obj: dict[str, Any], status: dict[str, Any], manager: str) -> None:
        """Write `status` unless it is already the live one; skipped when the object moved on meanwhile."""
        rt = self._served(ref[0])
        if rt is None or not rt.has_status or obj.get("status") == status:
            return
        generation = obj["metadata"].get("generation")

        def produce(live: dict[str, Any]) -> dict[str, Any]:
            if live["metadata"].get("generation") != generation:
                return live  # a newer spec is queued; its own pass writes its status
            return dict(live, status=status)

        await self.api._write_update(
            rt, ref[1], ref[2], produce, WriteOptions(field_manager=manager), "status", precondition_rv=None
        )

    # --- Jobs and claims -------------------------------------------------------------------------------

    async def _sync_job(self, ref: ObjectRef) -> None:
        job = self.store.get(*ref)
        if job is None or job["metadata"].get("deletionTimestamp") or job_finished(job):
            return
        if (job.get("spec") or {}).get("suspend") is True:
            return
        if self.artifact_jobs.start(ref, job):
            return  # upstream's artifact downloader runs in it
        status = job_status(job, now_rfc3339())
        if "succeeded" in status:
            await self._write_discovery_result(job)  # before the Job completes, as the container writes it
        await self._write_status(ref, job, status, "kube-controller-manager")

    async def _write_discovery_result(self, job: dict[str, Any]) -> None:
        """An AIM discovery Job carrying `sim.omectl.io/discovery-result`, or running a simulated image's dry run
        (`dry_runs`): its result ConfigMap (owned by the Job)."""
        configmap = simulated_discovery_configmap(job)
        if configmap is None and (printed := dry_run_output(job)) is not None:
            configmap = discovery_configmap(job, printed)
        rt = self._served(CONFIG_MAPS)
        if configmap is None or rt is None:
            return
        meta = job["metadata"]
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"], "uid": meta.get("uid", "")}
        configmap["metadata"]["ownerReferences"] = [owner]
        if self.store.get(CONFIG_MAPS, meta.get("namespace", ""), meta["name"]) is not None:
            return
        await self.api.create(rt, meta.get("namespace", ""), configmap, WriteOptions(field_manager="aim-discovery"))

    async def _sync_claim(self, ref: ObjectRef) -> None:
        """Bind like the volume binder: `spec.volumeName` (and its annotations) first, then the status."""
        claim = self.store.get(*ref)
        if claim is None or claim["metadata"].get("deletionTimestamp"):
            return
        if (claim.get("status") or {}).get("phase") in BOUND_OR_LOST:
            return
        rt = self._served(CLAIMS)
        assert rt is not None
        opts = WriteOptions(field_manager="kube-controller-manager")
        if not (claim.get("spec") or {}).get("volumeName"):
            volume = f"pvc-{claim['metadata']['uid']}"

            def bind(live: dict[str, Any]) -> dict[str, Any]:
                meta = dict(live["metadata"])
                meta["annotations"] = {
                    **(meta.get("annotations") or {}),
                    "pv.kubernetes.io/bind-completed": "yes",
                    "pv.kubernetes.io/bound-by-controller": "yes",
                }
                return dict(live, metadata=meta, spec={**(live.get("spec") or {}), "volumeName": volume})

            claim = (await self.api._write_update(rt, ref[1], ref[2], bind, opts, "", precondition_rv=None)).obj
        await self._write_status(ref, claim, bound_claim_status(claim), "kube-controller-manager")

    # --- the gateway controller --------------------------------------------------------------------------

    async def _sync_route(self, ref: ObjectRef) -> None:
        """Accept an HTTPRoute for each parent Gateway that exists, as a gateway controller reports it."""
        route = self.store.get(*ref)
        if route is None or route["metadata"].get("deletionTimestamp"):
            return

        def gateway_exists(namespace: str, name: str) -> bool:
            return self.store.get(GATEWAYS, namespace, name) is not None

        await self._write_status(ref, route, route_status(route, gateway_exists, now_rfc3339()), GATEWAY_CONTROLLER)

    async def _sync_gateway(self, ref: ObjectRef) -> None:
        """A Gateway came or went: every route naming it is accepted or refused anew."""
        _, namespace, name = ref
        for route in list(self.store.items(HTTP_ROUTES)):
            route_ns = route["metadata"].get("namespace", "")
            for parent in (route.get("spec") or {}).get("parentRefs") or []:
                if parent.get("name") == name and (parent.get("namespace") or route_ns) == namespace:
                    await self._sync_route((HTTP_ROUTES, route_ns, route["metadata"]["name"]))
                    break

    # --- the model agent -------------------------------------------------------------------------------

    async def _sync_model(self, ref: ObjectRef) -> None:
        """Fill the spec fields upstream's agent reads from config.json, and label every simulated node as holding
        the model (remove the label once the model is gone)."""
        key, namespace, name = ref
        model = self.store.get(*ref)
        if model is not None and await self._fill_model_spec(ref, model):
            return  # the spec write queues this model again
        label = model_node_selector_key(MODEL_KINDS[key], namespace, name)
        node_type = self._served(NODES)
        assert node_type is not None
        opts = WriteOptions(field_manager="ome-model-agent")
        for node_name in self.node_names:
            node = self.store.get(NODES, "", node_name)
            if node is None:
                continue
            labels = node["metadata"].get("labels") or {}
            if (labels.get(label) == "Ready") == (model is not None):
                continue

            def relabel(live: dict[str, Any]) -> dict[str, Any]:
                new_labels = dict(live["metadata"].get("labels") or {})
                if model is not None:
                    new_labels[label] = "Ready"
                else:
                    new_labels.pop(label, None)
                return dict(live, metadata=dict(live["metadata"], labels=new_labels))

            await self.api._write_update(node_type, "", node_name, relabel, opts, "", precondition_rv=None)
        if model is not None and not (model.get("status") or {}).get("state"):
            ready_nodes = [n for n in self.node_names if self.store.get(NODES, "", n) is not None]
            status = {**(model.get("status") or {}), "state": "Ready", "nodesReady": ready_nodes}
            await self._write_status(ref, model, status, "ome-model-agent")
