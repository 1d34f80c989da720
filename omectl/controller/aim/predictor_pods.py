"""The predictor pods of the InferenceServices AIMServices render, watched for the `InferenceServicePods` component
(`omectl.core.aim.predictor_pods`).

One informer over the pods labelled `serving.kserve.io/inferenceservice` (every namespace). Its cache holds, per
pod, its identity, that one label, and the status fields the component reads (`slim_pod_status`: phase, reason,
message, the `Ready` condition's status, each container's waiting or terminated reason and message); no spec, no
other metadata. A pod's creation, deletion or status change queues the AIMService owning the InferenceService the
label names. The Events of a pending pod are listed when a reconcile reads the component (`list` by
`involvedObject.name` and `involvedObject.uid`, as upstream does); they are not cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from omectl.controller.aim.kind_watch import metadata
from omectl.core.aim.predictor_pods import INFERENCE_SERVICE_LABEL, pending_pods, pods_component, slim_pod_status
from omectl.core.aim.status import Component
from omectl.kube.cache import ObjectCache
from omectl.kube.client import ClusterClient
from omectl.kube.informer import Informer
from omectl.kube.resources import EVENTS, PODS
from omectl.kube.transforms import rendered_object

PODS_BY_INFERENCE_SERVICE: Final = "kserve/pods-by-inferenceservice"
"""Predictor pods by `<namespace>/<InferenceService name>`."""

OnPodsChanged = Callable[[str, str, Mapping[str, Any]], None]
"""(namespace, InferenceService name, the pod): queue whatever reads that InferenceService's pods."""


def pods_by_inference_service(pod: dict[str, Any]) -> list[str]:
    meta = metadata(pod)
    name = (meta.get("labels") or {}).get(INFERENCE_SERVICE_LABEL)
    return [f"{meta.get('namespace') or ''}/{name}"] if isinstance(name, str) and name else []


class PredictorPods:
    def __init__(self, client: ClusterClient, on_change: OnPodsChanged) -> None:
        self.client = client
        self.on_change = on_change
        self.informer = Informer(
            client,
            PODS,
            label_selector=INFERENCE_SERVICE_LABEL,
            handlers=[self._handler],
            optional=True,
            transform=rendered_object(labels=(INFERENCE_SERVICE_LABEL,), annotations=(), status=slim_pod_status),
        )
        self.informer.cache.add_index(PODS_BY_INFERENCE_SERVICE, pods_by_inference_service)

    @property
    def cache(self) -> ObjectCache:
        return self.informer.cache

    def pods_of(self, namespace: str, inference_service: str) -> list[dict[str, Any]]:
        return self.cache.by_index(PODS_BY_INFERENCE_SERVICE, f"{namespace}/{inference_service}")

    async def component(self, namespace: str, inference_service: str) -> Component:
        """The `InferenceServicePods` component of an InferenceService (`NoPods` while it has none), with the Events
        of its pending pods listed from the API server."""
        pods = sorted(self.pods_of(namespace, inference_service), key=lambda p: str(metadata(p).get("name")))
        events: dict[str, list[dict[str, Any]]] = {}
        for pod in pending_pods(pods):
            meta = metadata(pod)
            selector = f"involvedObject.name={meta.get('name')},involvedObject.uid={meta.get('uid')}"
            listed = await self.client.list(EVENTS, namespace, field_selector=selector)
            events[str(meta.get("uid"))] = [e for e in listed.get("items") or [] if isinstance(e, dict)]
        return pods_component(pods, lambda pod: events.get(str(metadata(pod).get("uid")), []))

    def _handler(self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
        if initial:
            return  # every service of the initial list is queued anyway
        if event_type == "MODIFIED" and old is not None and old.get("status") == obj.get("status"):
            return
        keys = pods_by_inference_service(obj)
        if keys:
            namespace, _, name = keys[0].partition("/")
            self.on_change(namespace, name, obj)
