"""The `InferenceServicePods` component of an AIMService: its InferenceService's predictor pods, read as upstream
aim-engine reads them (its pods' health), so a service whose pods cannot be scheduled is `Pending` with the
scheduler's reason instead of `Starting`.

The pods are those labelled `serving.kserve.io/inferenceservice: <InferenceService name>` in its namespace. In
upstream's order, the first that applies:

0. no pod: Progressing, `NoPods` / `No pods found` (upstream's missing downstream dependency: KServe has yet to
   make them);
1. a container (or init container) waiting in `ErrImagePull` / `ImagePullBackOff`: `ImagePullAuthFailure`
   (Failed) when the message says the registry refused the credentials, `ImageNotFound` (Failed) when it says the
   image does not exist, else `ImagePullBackOff` (Degraded); message `Container <name>: <kubelet's message>`;
2. a pod in phase `Failed`: Failed, `PodFailed` (or `PodOOMKilled`, `PodDeadlineExceeded`, `PodEvicted` by the
   terminated container's or the pod's reason), with the termination message;
3. a pod `Succeeded`, or `Running` with `Ready` True: Ready, `PodsReady` / `Pods are ready`;
4. a pod `Running` but not Ready: Starting, `PodsStarting` / `Pods are running, waiting for readiness`;
5. a pod `Pending`: the latest Event on a pending pod (by `lastTimestamp`) whose reason says it waits for
   something outside it (`FailedScheduling`, `FailedMount`, `FailedAttachVolume`, `FailedCreatePodSandBox`):
   Pending with that event's reason and message; else its latest `Pulling` event: Progressing; else Pending,
   `PodsPending` / `Pods are pending`;
6. otherwise Progressing, `PodsProgressing` / `Pods are progressing`.

The component exists only while the service has an InferenceService (upstream reads the pods of an existing one).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from omectl.core.aim.status import Component, ComponentState

INFERENCE_SERVICE_PODS: Final = "InferenceServicePods"
INFERENCE_SERVICE_PODS_READY: Final = f"{INFERENCE_SERVICE_PODS}Ready"
INFERENCE_SERVICE_LABEL: Final = "serving.kserve.io/inferenceservice"
"""KServe's label on an InferenceService's pods: the InferenceService's name."""
NO_PODS: Final = "NoPods"
NO_PODS_MESSAGE: Final = "No pods found"
PENDING_EVENT_REASONS: Final = ("FailedScheduling", "FailedMount", "FailedAttachVolume", "FailedCreatePodSandBox")
PROGRESSING_EVENT_REASONS: Final = ("Pulling",)
IMAGE_PULL_REASONS: Final = frozenset({"ErrImagePull", "ImagePullBackOff"})
_AUTH_WORDS: Final = (
    "unauthorized",
    "authentication",
    "401",
    "403",
    "forbidden",
    "denied",
    "credentials",
)
_NOT_FOUND_WORDS: Final = ("not found", "404", "manifest unknown", "name unknown", "no such")
_FAILED_REASONS: Final = {
    "OOMKilled": "PodOOMKilled",
    "DeadlineExceeded": "PodDeadlineExceeded",
    "Evicted": "PodEvicted",
}

EventsOf = Callable[[Mapping[str, Any]], Sequence[Mapping[str, Any]]]
"""The Events about one pod (involvedObject name and uid), in any order."""


def pods_component(pods: Sequence[Mapping[str, Any]], events_of: EventsOf) -> Component:
    """The `InferenceServicePods` component of these predictor pods (`NoPods` without any)."""
    if not pods:
        return _component("Progressing", NO_PODS, NO_PODS_MESSAGE)
    for pod in pods:
        pulled = _image_pull_failure(pod)
        if pulled is not None:
            return pulled
    for pod in pods:
        if _phase(pod) == "Failed":
            return _failed(pod)
    phases = [_phase(pod) for pod in pods]
    if any(p == "Succeeded" or (p == "Running" and _ready(pod)) for p, pod in zip(phases, pods, strict=True)):
        return _component("Ready", "PodsReady", "Pods are ready")
    if "Running" in phases:
        return _component("Starting", "PodsStarting", "Pods are running, waiting for readiness")
    if "Pending" in phases:
        return _pending([pod for pod in pods if _phase(pod) == "Pending"], events_of)
    return _component("Progressing", "PodsProgressing", "Pods are progressing")


def pending_pods(pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The pods whose events `pods_component` may read (those `Pending`, when nothing ranks before them)."""
    return [pod for pod in pods if _phase(pod) == "Pending"]


def slim_pod_status(status: Mapping[str, Any]) -> dict[str, Any]:
    """What `pods_component` reads of a pod's status: the phase and reason, the `Ready` condition's status, and each
    container's name with its waiting or terminated reason and message (and exit code)."""
    kept: dict[str, Any] = {key: status[key] for key in ("phase", "reason", "message") if key in status}
    ready = [
        {"type": "Ready", "status": c.get("status")}
        for c in status.get("conditions") or ()
        if isinstance(c, Mapping) and c.get("type") == "Ready"
    ]
    if ready:
        kept["conditions"] = ready
    for key in ("initContainerStatuses", "containerStatuses"):
        statuses = [_slim_container(c) for c in status.get(key) or () if isinstance(c, Mapping)]
        if statuses:
            kept[key] = statuses
    return kept


def _slim_container(container: Mapping[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {"name": container.get("name")}
    state = container.get("state")
    if isinstance(state, Mapping):
        slim = {
            phase: {k: detail[k] for k in ("reason", "message", "exitCode") if k in detail}
            for phase in ("waiting", "terminated")
            if isinstance(detail := state.get(phase), Mapping)
        }
        if slim:
            kept["state"] = slim
    return kept


def _component(state: ComponentState, reason: str, message: str) -> Component:
    return Component(INFERENCE_SERVICE_PODS, state, reason, message)


def _status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    status = pod.get("status")
    return status if isinstance(status, Mapping) else {}


def _phase(pod: Mapping[str, Any]) -> str:
    return str(_status(pod).get("phase") or "")


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = _status(pod).get("conditions") or ()
    return any(isinstance(c, Mapping) and c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _containers(pod: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    return [c for c in _status(pod).get(key) or () if isinstance(c, Mapping)]


def _state(container: Mapping[str, Any], phase: str) -> Mapping[str, Any] | None:
    state = container.get("state")
    detail = state.get(phase) if isinstance(state, Mapping) else None
    return detail if isinstance(detail, Mapping) else None


def _image_pull_failure(pod: Mapping[str, Any]) -> Component | None:
    for key in ("containerStatuses", "initContainerStatuses"):
        for container in _containers(pod, key):
            waiting = _state(container, "waiting")
            if waiting is None or waiting.get("reason") not in IMAGE_PULL_REASONS:
                continue
            message = str(waiting.get("message") or "")
            text = f"Container {container.get('name')}: {message}"
            lowered = message.lower()
            if any(word in lowered for word in _AUTH_WORDS):
                return _component("Failed", "ImagePullAuthFailure", text)
            if any(word in lowered for word in _NOT_FOUND_WORDS):
                return _component("Failed", "ImageNotFound", text)
            return _component("Degraded", "ImagePullBackOff", text)
    return None


def _failed(pod: Mapping[str, Any]) -> Component:
    for key, label in (("containerStatuses", "Container"), ("initContainerStatuses", "Init container")):
        for container in _containers(pod, key):
            terminated = _state(container, "terminated")
            if terminated is None:
                continue
            reason = str(terminated.get("reason") or "")
            code = terminated.get("exitCode")
            name = container.get("name")
            if code:
                message = f"{label} {name} failed with exit code {code}: {terminated.get('message') or ''}"
            else:
                message = str(terminated.get("message") or "") or f"{label} {name} terminated with reason: {reason}"
            return _component("Failed", _FAILED_REASONS.get(reason, "PodFailed"), message)
    status = _status(pod)
    reason = str(status.get("reason") or "")
    return _component("Failed", _FAILED_REASONS.get(reason, "PodFailed"), str(status.get("message") or "Pod failed"))


def _pending(pods: Sequence[Mapping[str, Any]], events_of: EventsOf) -> Component:
    ranked: tuple[tuple[tuple[str, ...], ComponentState], ...] = (
        (PENDING_EVENT_REASONS, "Pending"),
        (PROGRESSING_EVENT_REASONS, "Progressing"),
    )
    for pod in pods:
        events = events_of(pod)
        for reasons, state in ranked:
            latest = _latest(events, reasons)
            if latest is not None:
                return _component(state, str(latest.get("reason")), str(latest.get("message") or ""))
    return _component("Pending", "PodsPending", "Pods are pending")


def _latest(events: Sequence[Mapping[str, Any]], reasons: Sequence[str]) -> Mapping[str, Any] | None:
    matching = [e for e in events if e.get("reason") in reasons]
    # RFC 3339 timestamps in UTC sort as text; the later of two equal ones wins, as the list order has it
    return max(reversed(matching), key=lambda e: str(e.get("lastTimestamp") or ""), default=None)
