"""The status each kind's controller would write, from how many of a workload's groups are placed.

Every builder takes the live object (to keep a condition's timestamps while it does not change) and returns
the whole new status; the caller skips the write when it equals the live one.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from omectl.core.ome.workloads import WorkloadShape

DEPLOYMENT_AVAILABLE = "Deployment has minimum availability."
DEPLOYMENT_UNAVAILABLE = "Deployment does not have minimum availability."
LWS_READY = "All replicas are ready"
LWS_PROGRESSING = "Replicas are progressing"
JOB_COMPLETE = "Reached expected number of succeeded pods"
JOB_FAILED = "Job has reached the specified backoff limit"
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's rand.SafeEncodeString


def unavailable_message(base: str, scheduler_message: str) -> str:
    """`<base> <scheduler message>`: the contract of every Available/Ready=False condition."""
    return f"{base} {scheduler_message}" if scheduler_message else base


def deployment_status(
    obj: Mapping[str, Any], shape: WorkloadShape, ready: int, scheduler_message: str, now: str
) -> dict[str, Any]:
    """apps/v1 DeploymentStatus: zero counts omitted (as the API serializes them), Available and Progressing."""
    replicas = shape.groups
    status: dict[str, Any] = {"observedGeneration": obj["metadata"].get("generation", 1)}
    for key, value in (
        ("replicas", replicas),
        ("updatedReplicas", replicas),
        ("readyReplicas", ready),
        ("availableReplicas", ready),
        ("unavailableReplicas", replicas - ready),
    ):
        if value:
            status[key] = value
    replica_set = f"{obj['metadata']['name']}-{pod_template_hash((obj.get('spec') or {}).get('template'))}"
    previous = _conditions(obj)
    if ready >= replicas:
        available = ("True", "MinimumReplicasAvailable", DEPLOYMENT_AVAILABLE)
        progressing = ("True", "NewReplicaSetAvailable", f'ReplicaSet "{replica_set}" has successfully progressed.')
    else:
        available = (
            "False",
            "MinimumReplicasUnavailable",
            unavailable_message(DEPLOYMENT_UNAVAILABLE, scheduler_message),
        )
        progressing = ("True", "ReplicaSetUpdated", f'ReplicaSet "{replica_set}" is progressing.')
    status["conditions"] = [
        _deployment_condition(previous, "Available", *available, now=now),
        _deployment_condition(previous, "Progressing", *progressing, now=now),
    ]
    return status


def stuck_rollout_status(obj: Mapping[str, Any], shape: WorkloadShape, now: str) -> dict[str, Any] | None:
    """A Deployment's status while a RollingUpdate waits for new pods that never become ready (an image that cannot
    be pulled): the old ReplicaSet is scaled down only to `replicas - maxUnavailable`, the new one up to `maxSurge +
    maxUnavailable`, so `Available` stays True (as many available as the strategy requires) and only the counts and
    `Progressing` show it. With omectl's `maxUnavailable: 0` every old replica keeps serving. None for Recreate (the
    old pods are gone: the caller reports it unavailable)."""
    spec = obj.get("spec") or {}
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return None
    rolling = strategy.get("rollingUpdate") or {}
    replicas = shape.groups
    unavailable = min(_scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False), replicas)
    surge = _scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    old = replicas - unavailable
    new = min(max(surge + unavailable, 1), replicas)
    status: dict[str, Any] = {"observedGeneration": obj["metadata"].get("generation", 1)}
    for key, value in (
        ("replicas", old + new),
        ("updatedReplicas", new),
        ("readyReplicas", old),
        ("availableReplicas", old),
        ("unavailableReplicas", replicas - old),  # what full capacity still lacks
    ):
        if value:
            status[key] = value
    replica_set = f"{obj['metadata']['name']}-{pod_template_hash(spec.get('template'))}"
    previous = _conditions(obj)
    status["conditions"] = [
        _deployment_condition(previous, "Available", "True", "MinimumReplicasAvailable", DEPLOYMENT_AVAILABLE, now=now),
        _deployment_condition(
            previous, "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{replica_set}" is progressing.', now=now
        ),
    ]
    return status


def _scaled(value: Any, replicas: int, *, round_up: bool) -> int:
    """An int-or-percent of a rolling update, as the Deployment controller scales it (surge up, unavailable down)."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%") or not text[:-1].isdigit():
        return 0
    share = int(text[:-1]) * replicas
    return -(-share // 100) if round_up else share // 100


def leader_worker_set_status(
    obj: Mapping[str, Any], shape: WorkloadShape, ready_groups: int, scheduler_message: str, now: str
) -> dict[str, Any]:
    """leaderworkerset.x-k8s.io/v1 status: groups created, updated and ready; Available and Progressing."""
    groups = shape.groups
    name = obj["metadata"]["name"]
    status: dict[str, Any] = {}
    previous = _conditions(obj)
    if ready_groups >= groups:
        conditions = [
            _condition(previous, "Available", "True", "AllGroupsReady", LWS_READY, now),
            _condition(previous, "Progressing", "False", "GroupsProgressing", LWS_PROGRESSING, now),
        ]
    else:
        message = unavailable_message(f"{LWS_PROGRESSING}.", scheduler_message)
        conditions = [
            _condition(previous, "Available", "False", "GroupsProgressing", message, now),
            _condition(previous, "Progressing", "True", "GroupsProgressing", LWS_PROGRESSING, now),
        ]
    status["conditions"] = conditions
    for key, value in (("readyReplicas", ready_groups), ("updatedReplicas", groups), ("replicas", groups)):
        if value:
            status[key] = value
    status["hpaPodSelector"] = f"leaderworkerset.sigs.k8s.io/name={name},leaderworkerset.sigs.k8s.io/worker-index=0"
    return status


def kserve_status(
    obj: Mapping[str, Any], shape: WorkloadShape, ready: int, scheduler_message: str, now: str
) -> dict[str, Any]:
    """serving.kserve.io/v1beta1 InferenceService status: PredictorReady and Ready, url, address, generation."""
    meta = obj["metadata"]
    url = f"http://{meta['name']}.{meta.get('namespace', 'default')}.svc.cluster.local"
    previous = _conditions(obj)
    if ready >= shape.groups:
        state: tuple[str, str, str] = ("True", "", "")
    else:
        state = (
            "False",
            "MinimumReplicasUnavailable",
            unavailable_message(DEPLOYMENT_UNAVAILABLE, scheduler_message),
        )
    return {
        "observedGeneration": meta.get("generation", 1),
        "url": url,
        "address": {"url": url},
        "conditions": [_condition(previous, type_, *state, now) for type_ in ("PredictorReady", "Ready")],
    }


CAUSE_FAILURE_ENV = "AIM_DEBUG_CAUSE_FAILURE"
"""Set (not empty) on a container, upstream's artifact downloader fails at once (images/artifact-downloader)."""


def job_status(
    obj: Mapping[str, Any], now: str, *, failed: bool | None = None, failures: int = 0, start: str | None = None
) -> dict[str, Any]:
    """batch/v1 JobStatus of a finished Job (1.32): complete, or failed with annotation sim.omectl.io/result=Failed
    or a container whose env sets `AIM_DEBUG_CAUSE_FAILURE` (or as `failed` says, after `failures` failed pods)."""
    meta = obj["metadata"]
    spec = obj.get("spec") or {}
    if failed is None:
        failed = (meta.get("annotations") or {}).get("sim.omectl.io/result") == "Failed" or _causes_failure(spec)
    if failed:
        reason, message = "BackoffLimitExceeded", JOB_FAILED
        types = ("FailureTarget", "Failed")
    else:
        reason, message = "CompletionsReached", JOB_COMPLETE
        types = ("SuccessCriteriaMet", "Complete")
    conditions = [
        {
            "type": type_,
            "status": "True",
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
        for type_ in types
    ]
    status: dict[str, Any] = {"conditions": conditions, "startTime": start or now}
    if failures and not failed:
        status["failed"] = failures
    if failed:
        status["failed"] = max(failures, 1)
    else:
        completions = spec.get("completions")
        status["completionTime"] = now
        status["succeeded"] = completions if type(completions) is int and completions > 0 else 1
    status.update({"active": 0, "ready": 0, "terminating": 0, "uncountedTerminatedPods": {}})
    return status


def _causes_failure(job_spec: Mapping[str, Any]) -> bool:
    pod = (job_spec.get("template") or {}).get("spec") or {}
    return any(
        env.get("name") == CAUSE_FAILURE_ENV and env.get("value")
        for container in (pod.get("initContainers") or []) + (pod.get("containers") or [])
        for env in container.get("env") or []
    )


def job_finished(obj: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def bound_claim_status(claim: Mapping[str, Any]) -> dict[str, Any]:
    """A PersistentVolumeClaim bound to a volume of exactly the requested size."""
    spec = claim.get("spec") or {}
    storage = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
    status: dict[str, Any] = {"phase": "Bound", "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"])}
    if storage is not None:
        status["capacity"] = {"storage": storage}
    return status


GATEWAY_CONTROLLER = "gateway.omectl.io/simulated"


def route_status(route: Mapping[str, Any], gateway_exists: Callable[[str, str], bool], now: str) -> dict[str, Any]:
    """An HTTPRoute's `status.parents` as a Gateway API controller writes it: `Accepted` (reason `Accepted`, or
    `NoMatchingParent` when the Gateway does not exist) and `ResolvedRefs` per parent Gateway; transition times kept
    while a condition's status stays the same."""
    meta = route["metadata"]
    namespace, generation = meta.get("namespace", ""), meta.get("generation")
    previous = {
        (p.get("parentRef") or {}).get("name"): {c.get("type"): c for c in p.get("conditions") or []}
        for p in (route.get("status") or {}).get("parents") or []
        if isinstance(p, Mapping)
    }
    parents = []
    for ref in (route.get("spec") or {}).get("parentRefs") or []:
        if not isinstance(ref, Mapping) or ref.get("kind", "Gateway") != "Gateway":
            continue
        gateway_ns = ref.get("namespace") or namespace
        found = gateway_exists(gateway_ns, str(ref.get("name")))
        accepted = (
            ("True", "Accepted", "Route is accepted")
            if found
            else (
                "False",
                "NoMatchingParent",
                f"Gateway {gateway_ns}/{ref.get('name')} not found",
            )
        )
        conditions = []
        for type_, (status, reason, message) in (
            ("Accepted", accepted),
            ("ResolvedRefs", ("True", "ResolvedRefs", "Resolved all the Object references for the Route")),
        ):
            before = previous.get(ref.get("name"), {}).get(type_) or {}
            stamp = before.get("lastTransitionTime") if before.get("status") == status else None
            conditions.append(
                {
                    "type": type_,
                    "status": status,
                    "reason": reason,
                    "message": message,
                    "observedGeneration": generation,
                    "lastTransitionTime": stamp or now,
                }
            )
        parents.append({"parentRef": dict(ref), "controllerName": GATEWAY_CONTROLLER, "conditions": conditions})
    return {**(route.get("status") or {}), "parents": parents}


def pod_template_hash(template: Any) -> str:
    """A ReplicaSet name suffix that changes with the pod template: a 32-bit hash's decimal digits, safe-encoded
    as upstream encodes its FNV-32a hash (the hash itself differs: upstream hashes the Go struct)."""
    raw = hashlib.blake2b(orjson.dumps(template, option=orjson.OPT_SORT_KEYS), digest_size=4).digest()
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in str(int.from_bytes(raw, "big")))


# --- conditions ------------------------------------------------------------------------------------------


def _conditions(obj: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {c.get("type", ""): c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)}


def _condition(
    previous: Mapping[str, dict[str, Any]], type_: str, status: str, reason: str, message: str, now: str
) -> dict[str, Any]:
    """A metav1.Condition-style entry; an unchanged one is kept as it was (timestamps included)."""
    prior = previous.get(type_)
    if prior is not None and (prior.get("status"), prior.get("reason", ""), prior.get("message", "")) == (
        status,
        reason,
        message,
    ):
        return prior
    changed_at = prior.get("lastTransitionTime", now) if prior and prior.get("status") == status else now
    condition = {"type": type_, "status": status, "lastTransitionTime": changed_at}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _deployment_condition(
    previous: Mapping[str, dict[str, Any]], type_: str, status: str, reason: str, message: str, *, now: str
) -> dict[str, Any]:
    prior = previous.get(type_)
    if prior is not None and (prior.get("status"), prior.get("reason"), prior.get("message")) == (
        status,
        reason,
        message,
    ):
        return prior
    changed_at = prior.get("lastTransitionTime", now) if prior and prior.get("status") == status else now
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": changed_at,
        "reason": reason,
        "message": message,
    }
