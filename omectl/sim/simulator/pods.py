"""Pods as kubelet reports them when an image cannot be pulled, as the scheduler leaves a KServe predictor's pod that
fits no node (`unschedulable_status`), and a KServe predictor's pod that runs (`running_status`).

The simulator keeps a running Deployment's or LeaderWorkerSet's readiness in the workload's own status and makes no
Pod objects for it. A pod appears where kubelet or the scheduler has something to say that the workload's status
cannot: a container waiting on an image the registry does not have (`.images.ImageRegistry`), or a KServe
predictor's pod that no node has room for (the pod upstream aim-engine reads a service's `FailedScheduling` from).
A KServe InferenceService's placed predictor pods are made too, running and ready, since upstream aim-engine reads a
service's `InferenceServicePodsReady` from them (`NoPods` without any). These functions name such a pod as its
workload's controller would, and write the status kubelet gives it: phase `Pending`, `Ready` and `ContainersReady`
False (`ContainersNotReady`), the container waiting with `ErrImagePull` (the runtime's error) and then
`ImagePullBackOff` (`Back-off pulling image "<image>"`), as Kubernetes 1.32's kubelet words them; or phase
`Running`, every container running and ready.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.jsonish import as_mapping
from omectl.core.ome.workloads import DEPLOYMENT, KSERVE_INFERENCE_SERVICE, LEADER_WORKER_SET
from omectl.sim.simulator.images import ImageRegistry, qualified_reference
from omectl.sim.simulator.status import SAFE_ALPHABET, pod_template_hash

ERR_IMAGE_PULL: Final = "ErrImagePull"
IMAGE_PULL_BACK_OFF: Final = "ImagePullBackOff"
CONTAINERS_NOT_READY: Final = "ContainersNotReady"
UNSCHEDULABLE: Final = "Unschedulable"
LWS_PREFIX: Final = "leaderworkerset.sigs.k8s.io/"
KSERVE_MODEL_CONTAINER: Final = "kserve-container"


@dataclass(frozen=True)
class PodSlot:
    """One pod of a workload, before it runs: its name, labels and spec as the workload's controller makes it."""

    name: str
    labels: dict[str, str]
    spec: dict[str, Any]


def pod_slots(obj: Mapping[str, Any], groups: int) -> list[list[PodSlot]]:
    """The pods of a Deployment's, LeaderWorkerSet's or KServe InferenceService's first `groups` groups, each group
    in the order the scheduler places it (an LWS leader first)."""
    meta = as_mapping(obj.get("metadata"))
    name, uid = str(meta.get("name")), str(meta.get("uid"))
    spec = as_mapping(obj.get("spec"))
    kind = (str(obj.get("apiVersion") or "").rpartition("/")[0], obj.get("kind"))
    if kind == DEPLOYMENT:
        template = as_mapping(spec.get("template"))
        hash_ = pod_template_hash(spec.get("template"))
        labels = {**_labels(template), "pod-template-hash": hash_}
        pod = _spec(template)
        return [[PodSlot(f"{name}-{hash_}-{_suffix(uid, g)}", labels, pod)] for g in range(groups)]
    if kind == LEADER_WORKER_SET:
        lws = as_mapping(spec.get("leaderWorkerTemplate"))
        worker = as_mapping(lws.get("workerTemplate"))
        leader = as_mapping(lws.get("leaderTemplate")) or worker
        size = lws.get("size")
        size = size if type(size) is int and size > 1 else 1
        return [
            [
                PodSlot(
                    f"{name}-{g}" if w == 0 else f"{name}-{g}-{w}",
                    {
                        **_labels(leader if w == 0 else worker),
                        f"{LWS_PREFIX}name": name,
                        f"{LWS_PREFIX}group-index": str(g),
                        f"{LWS_PREFIX}worker-index": str(w),
                    },
                    _spec(leader if w == 0 else worker),
                )
                for w in range(size)
            ]
            for g in range(groups)
        ]
    if kind == KSERVE_INFERENCE_SERVICE:
        predictor = as_mapping(spec.get("predictor"))
        hash_ = pod_template_hash(spec.get("predictor"))
        # KServe's predictor labels: the InferenceService's own and the predictor's, then its component's, then the
        # raw Deployment's `app` and its ReplicaSet's hash
        labels = {
            **_string_labels(meta.get("labels")),
            **_string_labels(predictor.get("labels")),
            "serving.kserve.io/inferenceservice": name,
            "component": "predictor",
            "app": f"isvc.{name}-predictor",
            "pod-template-hash": hash_,
        }
        pod = _predictor_pod(predictor)
        return [[PodSlot(f"{name}-predictor-{hash_}-{_suffix(uid, g)}", labels, pod)] for g in range(groups)]
    return []


def pull_failures(spec: Mapping[str, Any], registry: ImageRegistry) -> dict[str, str]:
    """Container name -> the runtime's pull error, for each container whose image the registry does not have."""
    failures = {}
    for container in _containers(spec):
        error = registry.pull_error(str(container["image"]))
        if error is not None:
            failures[str(container["name"])] = error
    return failures


def workload_pod(workload: Mapping[str, Any], slot: PodSlot, node: str | None) -> dict[str, Any]:
    """The Pod a workload's controller creates for `slot`, bound to `node` (None: not scheduled) and owned by the
    workload (the simulator makes no ReplicaSets or StatefulSets)."""
    meta = as_mapping(workload.get("metadata"))
    owner = {
        "apiVersion": workload.get("apiVersion"),
        "kind": workload.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": slot.name,
            "namespace": meta.get("namespace", "default"),
            "labels": dict(slot.labels),
            "ownerReferences": [owner],
        },
        # the server defaults the spec in place
        "spec": {**copy.deepcopy(slot.spec), **({"nodeName": node} if node is not None else {})},
    }


def owned_by(pod: Mapping[str, Any], uid: str) -> bool:
    refs = as_mapping(pod.get("metadata")).get("ownerReferences") or []
    return any(isinstance(r, Mapping) and r.get("uid") == uid and r.get("controller") for r in refs)


def images(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(container name, image) of each container, in order: two pods with the same list pull the same."""
    return [(str(c["name"]), str(c["image"])) for c in _containers(spec)]


def waiting_status(
    pod: Mapping[str, Any], failures: Mapping[str, str], reason: str, host_ip: str, now: str
) -> dict[str, Any]:
    """The status kubelet writes for a pod whose `failures` containers cannot start: `ErrImagePull` (the runtime's
    error as the message) or `ImagePullBackOff` (kubelet's back-off message); its other containers run."""
    return _kubelet_status(pod, failures, reason, host_ip, now)


def running_status(pod: Mapping[str, Any], host_ip: str, now: str) -> dict[str, Any]:
    """The status kubelet writes for a pod whose containers all run and pass their readiness probes: phase
    `Running`, `Ready` and `ContainersReady` True."""
    return _kubelet_status(pod, {}, "", host_ip, now)


def _kubelet_status(
    pod: Mapping[str, Any], failures: Mapping[str, str], reason: str, host_ip: str, now: str
) -> dict[str, Any]:
    meta, spec = as_mapping(pod.get("metadata")), as_mapping(pod.get("spec"))
    live = as_mapping(pod.get("status"))
    previous = {c.get("type"): c for c in live.get("conditions") or [] if isinstance(c, Mapping)}
    statuses = []
    for name, image in sorted(images(spec)):
        if name in failures:
            message = failures[name] if reason == ERR_IMAGE_PULL else f'Back-off pulling image "{image}"'
            statuses.append(
                {
                    "name": name,
                    "image": image,
                    "imageID": "",
                    "lastState": {},
                    "ready": False,
                    "restartCount": 0,
                    "started": False,
                    "state": {"waiting": {"reason": reason, "message": message}},
                }
            )
        else:
            reference = qualified_reference(image)
            statuses.append(
                {
                    "name": name,
                    "containerID": f"containerd://{_digest(str(meta.get('uid')), name)}",
                    "image": reference,
                    "imageID": f"{reference.partition('@')[0].rpartition(':')[0]}@sha256:{_digest(reference)}",
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "started": True,
                    "state": {"running": {"startedAt": now}},
                }
            )
    unready = f"containers with unready status: [{' '.join(sorted(failures))}]"

    def condition(type_: str, status: str, why: str = "", message: str = "") -> dict[str, Any]:
        before = previous.get(type_) or {}
        changed = before.get("lastTransitionTime") if before.get("status") == status else None
        entry: dict[str, Any] = {
            "type": type_,
            "status": status,
            "lastProbeTime": None,
            "lastTransitionTime": changed or now,
        }
        if why:
            entry.update(reason=why, message=message)
        return entry

    pod_ip = _pod_ip(str(meta.get("uid")))
    ready = ("False", CONTAINERS_NOT_READY, unready) if failures else ("True",)
    return {
        "phase": "Pending" if failures else "Running",
        "conditions": [
            condition("PodReadyToStartContainers", "True"),
            condition("Initialized", "True"),
            condition("Ready", *ready),
            condition("ContainersReady", *ready),
            condition("PodScheduled", "True"),
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}] if host_ip else [],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": live.get("startTime") or now,
        "qosClass": live.get("qosClass", "BestEffort"),
        "containerStatuses": statuses,
    }


def unschedulable_status(pod: Mapping[str, Any], message: str, now: str) -> dict[str, Any]:
    """The status the scheduler leaves on a pod that fits no node: phase `Pending`, `PodScheduled` False
    `Unschedulable` with its message."""
    live = as_mapping(pod.get("status"))
    before = next(
        (c for c in live.get("conditions") or [] if isinstance(c, Mapping) and c.get("type") == "PodScheduled"), {}
    )
    scheduled = {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": before.get("lastTransitionTime") if before.get("status") == "False" else now,
        "reason": UNSCHEDULABLE,
        "message": message,
    }
    return {"phase": "Pending", "conditions": [scheduled], "qosClass": live.get("qosClass", "BestEffort")}


def unavailable_reason(failures: Mapping[str, str], spec: Mapping[str, Any]) -> str:
    """What a workload whose pod waits on `failures` says about it: `ImagePullBackOff: Back-off pulling image "..."`
    for its first such container."""
    image = next(image for name, image in images(spec) if name in failures)
    return f'{IMAGE_PULL_BACK_OFF}: Back-off pulling image "{image}"'


# --- helpers -------------------------------------------------------------------------------------------------


def _string_labels(labels: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_mapping(labels).items()}


def _labels(template: Mapping[str, Any]) -> dict[str, str]:
    return {str(k): str(v) for k, v in as_mapping(as_mapping(template.get("metadata")).get("labels")).items()}


def _spec(template: Mapping[str, Any]) -> dict[str, Any]:
    return dict(as_mapping(template.get("spec")))


def _predictor_pod(predictor: Mapping[str, Any]) -> dict[str, Any]:
    """A KServe predictor's pod: its `containers`, with the model's container first when the predictor names its
    image (otherwise the serving runtime picks the image, which the simulator does not know), and its pod-level
    fields (volumes, scheduling, pull secrets, service account)."""
    containers: list[Any] = [c for c in predictor.get("containers") or [] if isinstance(c, Mapping)]
    model = as_mapping(predictor.get("model"))
    if model.get("image"):
        model_container = {"name": KSERVE_MODEL_CONTAINER, "image": model["image"]}
        if model.get("resources"):
            model_container["resources"] = model["resources"]
        containers.insert(0, model_container)
    pod: dict[str, Any] = {"containers": containers}
    # the pod-level fields of the predictor's PodSpec a pod needs to be valid as KServe makes it (its volumes, which
    # the containers mount) or to be placed
    for key in ("volumes", "nodeSelector", "affinity", "tolerations", "imagePullSecrets", "serviceAccountName"):
        if predictor.get(key):
            pod[key] = predictor[key]
    return pod


def _containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        c
        for c in spec.get("containers") or []
        if isinstance(c, Mapping) and isinstance(c.get("name"), str) and isinstance(c.get("image"), str)
    ]


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def _suffix(uid: str, index: int) -> str:
    """A pod name's 5-character suffix (apimachinery's safe alphabet), fixed per workload and replica."""
    raw = hashlib.blake2b(f"{uid}/{index}".encode(), digest_size=8).digest()
    number = int.from_bytes(raw, "big")
    return "".join(SAFE_ALPHABET[(number >> (5 * i)) % len(SAFE_ALPHABET)] for i in range(5))


def _pod_ip(uid: str) -> str:
    number = int.from_bytes(hashlib.blake2b(uid.encode(), digest_size=2).digest(), "big")
    return f"10.244.{number >> 8}.{number % 250 + 2}"
