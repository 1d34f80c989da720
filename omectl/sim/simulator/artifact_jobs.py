"""`ArtifactJobs`: an AIMArtifact's download and check-size Jobs run as upstream's artifact-downloader would
(`.downloader` decides what each attempt does): one pod per attempt, made as the Job controller makes it
(`<job>-<suffix>`, labels `job-name`, `batch.kubernetes.io/job-name`, `controller-uid` and the template's, owned by the
Job, bound to the first simulated node), ending Succeeded or Failed with its container's `state.terminated` (exit code,
reason `Completed` / `Error`, and the termination message: the check-size line, or the log's tail on an error, as
`terminationMessagePolicy: FallbackToLogsOnError` gives it). While an attempt runs the Job is `active: 1` (`failed`
counts the attempts that failed); the downloader's progress goes to the artifact's `status.progress` as its progress
monitor patches it. After the `backoffLimit` + 1st failed attempt the Job fails (`BackoffLimitExceeded`); the first
attempt that succeeds completes it. Each Job runs as its own asyncio task; none counts as the simulator being busy.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from omectl.core.aim.artifacts import parse_quantity
from omectl.sim.apiserver.api import WriteOptions
from omectl.sim.apiserver.clock import now_rfc3339
from omectl.sim.apiserver.errors import APIError
from omectl.sim.simulator.cluster import AIM_ARTIFACTS as ARTIFACTS
from omectl.sim.simulator.cluster import CLAIMS, PODS, ObjectRef, SimulatedCluster
from omectl.sim.simulator.downloader import Attempt, ModelSources, Plan, plan, termination_message
from omectl.sim.simulator.pods import _suffix
from omectl.sim.simulator.status import job_status

log = logging.getLogger(__name__)

WriteStatus = Callable[[ObjectRef, dict[str, Any], dict[str, Any], str], Awaitable[None]]


class ArtifactJobs:
    """The running artifact Jobs of one simulated cluster (module docstring)."""

    def __init__(self, api: SimulatedCluster, sources: ModelSources, write_status: WriteStatus, node: str) -> None:
        self.api = api
        self.sources = sources
        self.write_status = write_status
        self.node = node
        self.running: dict[ObjectRef, asyncio.Task[None]] = {}

    def start(self, ref: ObjectRef, job: dict[str, Any]) -> bool:
        """Run the Job when it is an artifact's; True when it is (running or started now)."""
        if ref in self.running and not self.running[ref].done():
            return True
        what = plan(job, self.sources, self._capacity(job))
        if what is None:
            return False
        task = asyncio.get_running_loop().create_task(self._run(ref, job, what), name=f"artifact-job-{ref[2]}")
        self.running[ref] = task
        return True

    async def stop(self) -> None:
        for task in self.running.values():
            task.cancel()
        for task in self.running.values():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.running.clear()

    async def _run(self, ref: ObjectRef, job: dict[str, Any], what: Plan) -> None:
        try:
            await self._attempts(ref, job, what)
        except (APIError, KeyError) as error:  # the Job went away meanwhile
            log.debug("artifact job %s stopped: %s", ref, error)
        finally:
            if self.running.get(ref) is asyncio.current_task():
                del self.running[ref]

    async def _attempts(self, ref: ObjectRef, job: dict[str, Any], what: Plan) -> None:
        start = now_rfc3339()
        uid = job["metadata"].get("uid", "")
        attempt = what.attempt
        for index in range(what.attempts):
            running = {"startTime": start, "active": 1, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}
            if index:
                running["failed"] = index
            job = await self._job_status(ref, running, uid)
            for phase in attempt.phases:
                if phase.seconds:
                    await asyncio.sleep(phase.seconds)
                if phase.progress is not None:
                    await self._progress(what, phase.progress)
            await self._pod(ref, job, index, what, attempt)
            if not attempt.failed:
                done = job_status(job, now_rfc3339(), failed=False, failures=index, start=start)
                await self._job_status(ref, done, uid)
                return
        final = job_status(job, now_rfc3339(), failed=True, failures=what.attempts, start=start)
        await self._job_status(ref, final, uid)

    async def _job_status(self, ref: ObjectRef, status: dict[str, Any], uid: str) -> dict[str, Any]:
        job = self.api.store.get(*ref)
        if job is None or job["metadata"].get("deletionTimestamp") or job["metadata"].get("uid") != uid:
            raise KeyError(ref)  # gone, going, or another Job of that name
        await self.write_status(ref, job, status, "kube-controller-manager")
        return self.api.store.get(*ref) or job

    async def _pod(self, ref: ObjectRef, job: dict[str, Any], index: int, what: Plan, attempt: Attempt) -> None:
        rt = self.api.types.storage_version(PODS)
        assert rt is not None, "every cluster serves pods"
        meta = job["metadata"]
        name, namespace, uid = meta["name"], meta.get("namespace", ""), meta.get("uid", "")
        template = (job.get("spec") or {}).get("template") or {}
        labels = {
            **((template.get("metadata") or {}).get("labels") or {}),
            "job-name": name,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "batch.kubernetes.io/controller-uid": uid,
        }
        owner = {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid}
        owner.update(controller=True, blockOwnerDeletion=True)
        pod_name = f"{name}-{_suffix(uid, index)}"
        spec = copy.deepcopy(template.get("spec") or {})
        if self.node:
            spec["nodeName"] = self.node
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod_name, "namespace": namespace, "labels": labels, "ownerReferences": [owner]},
            "spec": spec,
        }
        pod = (await self.api.create(rt, namespace, body, WriteOptions(field_manager="kube-controller-manager"))).obj
        now = now_rfc3339()
        message = attempt.output if not attempt.failed else termination_message(attempt.log)
        terminated: dict[str, Any] = {
            "exitCode": 1 if attempt.failed else 0,
            "reason": "Error" if attempt.failed else "Completed",
            "startedAt": now,
            "finishedAt": now,
        }
        if message:
            terminated["message"] = message
        container = {
            "name": what.container,
            "image": next((c.get("image") for c in spec.get("containers") or []), ""),
            "ready": False,
            "restartCount": 0,
            "started": False,
            "state": {"terminated": terminated},
        }
        status = {
            "phase": "Failed" if attempt.failed else "Succeeded",
            "startTime": now,
            "containerStatuses": [container],
        }
        await self.write_status((PODS, namespace, pod_name), pod, status, "kubelet")

    async def _progress(self, what: Plan, percentage: int) -> None:
        """Patch the artifact's `status.progress` as upstream's progress monitor does (a merge of that one field)."""
        if what.artifact is None:
            return
        namespace, name = what.artifact
        rt = self.api.types.storage_version(ARTIFACTS)
        if rt is None or self.api.store.get(ARTIFACTS, namespace, name) is None:
            return
        total = what.expected_bytes
        progress = {
            "percentage": percentage,
            "displayPercentage": f"{percentage} %",
            "downloadedBytes": total * percentage // 100,
            "totalBytes": total,
        }

        def patch(live: dict[str, Any]) -> dict[str, Any]:
            return dict(live, status={**(live.get("status") or {}), "progress": progress})

        opts = WriteOptions(field_manager="artifact-downloader")
        await self.api._write_update(rt, namespace, name, patch, opts, "status", precondition_rv=None)

    def _capacity(self, job: dict[str, Any]) -> int | None:
        """Bytes the Job's PVC holds (its bound capacity), or None."""
        namespace = job["metadata"].get("namespace", "")
        pod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
        for volume in pod.get("volumes") or []:
            claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            claim = self.api.store.get(CLAIMS, namespace, claim_name) if claim_name else None
            if claim is None:
                continue
            spec = claim.get("spec") or {}
            capacity = ((claim.get("status") or {}).get("capacity") or {}).get("storage")
            capacity = capacity or ((spec.get("resources") or {}).get("requests") or {}).get("storage")
            with contextlib.suppress(ValueError):
                return math.floor(parse_quantity(capacity))
        return None
