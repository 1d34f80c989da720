"""What a workload asks the scheduler for: its pods' GPU requests and node selectors, grouped as it schedules.

Pure functions over plain dicts; `gpu_requests` is the public helper (GPUs a workload requests in total).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from omectl.core.jsonish import as_mapping

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")

DEPLOYMENT = ("apps", "Deployment")
LEADER_WORKER_SET = ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")
KSERVE_INFERENCE_SERVICE = ("serving.kserve.io", "InferenceService")

Requests = tuple[tuple[str, int], ...]  # (resource, count), sorted, counts > 0


@dataclass(frozen=True)
class PodShape:
    """What one pod needs from a node: every nodeSelector pair and its GPU requests."""

    node_selector: tuple[tuple[str, str], ...] = ()
    gpus: Requests = ()


@dataclass(frozen=True)
class WorkloadShape:
    """`groups` copies of `group`, each group scheduled whole (a Deployment's group is one pod, an LWS's is
    a leader and its workers). Equal shapes schedule identically: the simulator keeps a placement while the
    shape stays the same."""

    groups: int
    group: tuple[PodShape, ...]


def is_gpu_resource(name: str) -> bool:
    return name in GPU_RESOURCES or name.endswith("/gpu")


def workload_shape(obj: Mapping[str, Any]) -> WorkloadShape | None:
    """The scheduling shape of a Deployment, LeaderWorkerSet or KServe InferenceService; None for other kinds."""
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    kind = (group, obj.get("kind"))
    spec = as_mapping(obj.get("spec"))
    if kind == DEPLOYMENT:
        pod = as_mapping(as_mapping(spec.get("template")).get("spec"))
        return WorkloadShape(_count(spec.get("replicas"), 1), (pod_shape(pod),))
    if kind == LEADER_WORKER_SET:
        template = as_mapping(spec.get("leaderWorkerTemplate"))
        worker = as_mapping(as_mapping(template.get("workerTemplate")).get("spec"))
        leader_template = template.get("leaderTemplate")
        leader = as_mapping(as_mapping(leader_template).get("spec")) if leader_template else worker
        size = max(_count(template.get("size"), 1), 1)
        worker_shape = pod_shape(worker)
        return WorkloadShape(_count(spec.get("replicas"), 1), (pod_shape(leader), *[worker_shape] * (size - 1)))
    if kind == KSERVE_INFERENCE_SERVICE:
        predictor = as_mapping(spec.get("predictor"))
        containers = [c for c in _list(predictor.get("containers")) if isinstance(c, Mapping)]
        if isinstance(predictor.get("model"), Mapping):
            containers.insert(0, predictor["model"])
        pod = {"containers": containers, "nodeSelector": predictor.get("nodeSelector")}
        return WorkloadShape(_count(predictor.get("minReplicas"), 1), (pod_shape(pod),))
    return None


def gpu_requests(workload: Mapping[str, Any]) -> dict[str, int]:
    """GPUs a Deployment, LeaderWorkerSet or KServe InferenceService requests in all: resource name -> count.

    Per pod: the sum over its containers of `resources.requests[<gpu>]` (the limit when no request is given,
    as the API server defaults it), or the largest init container's when that is more. Times the replicas
    (for an LWS: replicas x (leader + size-1 workers); for an InferenceService: the predictor's minReplicas).
    Other kinds request nothing ({}).
    """
    shape = workload_shape(workload)
    totals: dict[str, int] = {}
    if shape is None or shape.groups == 0:
        return totals
    for pod in shape.group:
        for resource, count in pod.gpus:
            totals[resource] = totals.get(resource, 0) + count * shape.groups
    return dict(sorted(totals.items()))


def pod_shape(pod_spec: Mapping[str, Any]) -> PodShape:
    selector = as_mapping(pod_spec.get("nodeSelector"))
    return PodShape(
        tuple(sorted((str(k), str(v)) for k, v in selector.items())),
        pod_gpu_requests(pod_spec),
    )


def pod_gpu_requests(pod_spec: Mapping[str, Any]) -> Requests:
    """A pod's effective GPU requests: max(sum over containers, largest init container), per resource."""
    totals: dict[str, int] = {}
    for container in _list(pod_spec.get("containers")):
        for resource, count in _container_gpus(container).items():
            totals[resource] = totals.get(resource, 0) + count
    for container in _list(pod_spec.get("initContainers")):
        for resource, count in _container_gpus(container).items():
            totals[resource] = max(totals.get(resource, 0), count)
    return tuple(sorted((r, n) for r, n in totals.items() if n > 0))


def _container_gpus(container: Any) -> dict[str, int]:
    resources = as_mapping(as_mapping(container).get("resources"))
    requests = as_mapping(resources.get("requests"))
    limits = as_mapping(resources.get("limits"))
    out: dict[str, int] = {}
    for resource in {*requests, *limits}:
        if is_gpu_resource(resource):
            out[resource] = parse_count(requests[resource] if resource in requests else limits[resource])
    return out


_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([a-zA-Z]*)$")
_SUFFIXES = {
    "": 1,
    "m": 0.001,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def parse_count(quantity: Any) -> int:
    """A resource quantity as a whole count, rounded up (`"8"`, `8`, `"1k"`); 0 when it is no quantity."""
    if isinstance(quantity, bool):
        return 0
    if isinstance(quantity, int):
        return max(quantity, 0)
    if isinstance(quantity, float):
        return max(math.ceil(quantity), 0)
    match = _QUANTITY.match(str(quantity).strip())
    if match is None or match.group(2) not in _SUFFIXES:
        return 0
    try:
        value = float(match.group(1)) * _SUFFIXES[match.group(2)]
    except ValueError:
        return 0
    return max(math.ceil(value), 0)


def _count(value: Any, default: int) -> int:
    return value if type(value) is int and value >= 0 else default


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
