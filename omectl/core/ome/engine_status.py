"""An InferenceService's readiness from its live workloads: component conditions, `Ready`, URLs.

For each component the InferenceService renders (engine, decoder, router) the workload that runs it — a
Deployment, or a LeaderWorkerSet in MultiNode mode — is read as the cluster reports it:

- `<Component>Ready` (`EngineReady`, `DecoderReady`, `RouterReady`) mirrors the workload's `Available` condition
  (status, reason and message, so a scheduler's "0/2 nodes are available: ..." reaches the InferenceService);
  `Unknown`, reason `Initializing`, message `<component> component initializing` while the workload does not exist
  yet, reports no `Available` condition, or has not observed its newest generation;
- `Ready` is True when every component is; otherwise it carries the first component that is not (engine, then
  decoder, then router): False when one is False, else Unknown;
- `status.url` and each component's `url` are the in-cluster address of the component's Service
  (`http://<service>.<namespace>.svc.cluster.local`); the InferenceService's URL is the router's when it has one,
  else the engine's. A component's `latestCreatedRevision` is the runtime revision its workload was rendered from,
  and `latestReadyRevision` the same once the component is ready *and its workload has rolled that revision out*:
  a Deployment whose every replica is updated and available and that keeps no old one (kubectl's `rollout status`
  rule). On a real cluster a Deployment updated to an image that cannot be pulled keeps its old pods serving
  (`maxUnavailable: 0`), so `Available` stays True while the new revision never runs: the component is Ready (it
  serves) but the revision is not (`rolled_out`); a fleet rollout's gate waits for the latter.

`desired_isvc_status` puts readiness together with the runtime record and the `RuntimeDrifted` condition into the
status the engine reconciler writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from omectl.core.conditions import by_type, stamped
from omectl.core.jsonish import as_mapping

__all__ = [
    "AVAILABLE",
    "COMPONENT_CONDITIONS",
    "DRIFT_CONDITION",
    "READY",
    "ROLLOUT_COUNTS",
    "WORKLOAD_KINDS",
    "Readiness",
    "component_of",
    "desired_isvc_status",
    "drift_condition",
    "readiness",
    "rolled_out",
    "service_url",
]

READY: Final = "Ready"
AVAILABLE: Final = "Available"  # the workload condition a component's readiness mirrors
COMPONENT_CONDITIONS: Final = {"engine": "EngineReady", "decoder": "DecoderReady", "router": "RouterReady"}
DRIFT_CONDITION: Final = "RuntimeDrifted"
_OWN_CONDITIONS: Final = frozenset({DRIFT_CONDITION, READY, *COMPONENT_CONDITIONS.values()})
WORKLOAD_KINDS: Final = frozenset({"Deployment", "LeaderWorkerSet"})
COMPONENT_LABEL: Final = "component"
RUNTIME_REVISION_ANNOTATION: Final = "ome.io/runtime-revision"
_ORDER: Final = ("engine", "decoder", "router")

LiveWorkload = Callable[[str, str], Mapping[str, Any] | None]
"""(kind, name) -> the workload as the cluster reports it, or None."""


@dataclass(frozen=True)
class Readiness:
    """The status fields readiness decides; conditions carry no `lastTransitionTime` (the writer stamps it)."""

    conditions: list[dict[str, str]] = field(default_factory=list)
    url: str | None = None
    components: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return any(c["type"] == READY and c["status"] == "True" for c in self.conditions)


def service_url(name: str, namespace: str) -> str:
    return f"http://{name}.{namespace}.svc.cluster.local"


def component_of(obj: Mapping[str, Any]) -> str | None:
    labels = as_mapping(as_mapping(obj.get("metadata")).get("labels"))
    component = labels.get(COMPONENT_LABEL)
    return component if isinstance(component, str) and component in COMPONENT_CONDITIONS else None


def rendered_outline(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What `readiness` reads of a rendered object: its kind, name, namespace, labels and annotations (no spec).

    A decided status waits for its write while every InferenceService of a rollout is applied first: it holds
    this outline, not the whole render (most of an InferenceService's memory during a cold start)."""
    meta = as_mapping(obj.get("metadata"))
    kept = {key: meta[key] for key in ("name", "namespace", "labels", "annotations") if key in meta}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def readiness(rendered: Sequence[Mapping[str, Any]], live: LiveWorkload) -> Readiness:
    """Conditions, URL and component status of an InferenceService whose workloads were rendered as `rendered`."""
    workloads: dict[str, Mapping[str, Any]] = {}
    services: dict[str, str] = {}
    for obj in rendered:
        component = component_of(obj)
        if component is None:
            continue
        meta = as_mapping(obj.get("metadata"))
        if obj.get("kind") in WORKLOAD_KINDS:
            workloads[component] = obj
        elif obj.get("kind") == "Service":
            services[component] = service_url(str(meta.get("name")), str(meta.get("namespace")))
    conditions: list[dict[str, str]] = []
    components: dict[str, dict[str, str]] = {}
    for component in _ORDER:
        workload = workloads.get(component)
        if workload is None:
            continue
        meta = as_mapping(workload.get("metadata"))
        kind = str(workload.get("kind"))
        reported = live(kind, str(meta.get("name")))
        condition = _component_condition(component, reported)
        conditions.append(condition)
        entry: dict[str, str] = {}
        if component in services:
            entry["url"] = services[component]
        revision = as_mapping(meta.get("annotations")).get(RUNTIME_REVISION_ANNOTATION)
        if isinstance(revision, str) and revision:
            entry["latestCreatedRevision"] = revision
            if condition["status"] == "True" and rolled_out(kind, reported):
                entry["latestReadyRevision"] = revision
        components[component] = entry
    conditions.append(_ready_condition(conditions))
    entry_component = "router" if "router" in services else "engine"
    return Readiness(conditions, services.get(entry_component), components)


ROLLOUT_COUNTS: Final = ("replicas", "updatedReplicas", "availableReplicas")
"""The status counts `rolled_out` reads (an informer transform keeps them with the `Available` condition)."""


def rolled_out(kind: str, workload: Mapping[str, Any] | None) -> bool:
    """Whether a workload of `kind`, as the cluster reports it, has rolled out its newest generation: generation
    observed and, for a Deployment, every replica updated and available with none of an older revision left
    (`replicas` counts the old ReplicaSets' pods too). For a LeaderWorkerSet, its generation observed."""
    if workload is None:
        return False
    status = as_mapping(workload.get("status"))
    generation = as_mapping(workload.get("metadata")).get("generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return False
    if kind != "Deployment":
        return True
    replicas, updated, available = (_count(status, key) for key in ROLLOUT_COUNTS)
    return updated == replicas and available >= updated


def _count(status: Mapping[str, Any], key: str) -> int:
    value = status.get(key)
    return value if isinstance(value, int) else 0  # the API omits zero counts


def _component_condition(component: str, workload: Mapping[str, Any] | None) -> dict[str, str]:
    condition_type = COMPONENT_CONDITIONS[component]
    initializing = {
        "type": condition_type,
        "status": "Unknown",
        "reason": "Initializing",
        "message": f"{component} component initializing",
    }
    if workload is None:
        return initializing
    status = as_mapping(workload.get("status"))
    generation = as_mapping(workload.get("metadata")).get("generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return initializing
    for condition in status.get("conditions") or ():
        if isinstance(condition, Mapping) and condition.get("type") == AVAILABLE:
            return {
                "type": condition_type,
                "status": str(condition.get("status") or "Unknown"),
                "reason": str(condition.get("reason") or ""),
                "message": str(condition.get("message") or ""),
            }
    return initializing


def _ready_condition(components: Sequence[Mapping[str, str]]) -> dict[str, str]:
    pending = [c for c in components if c["status"] != "True"]
    if not components or not pending:
        return {"type": READY, "status": "True", "reason": "", "message": ""}
    failed = next((c for c in pending if c["status"] == "False"), pending[0])
    return {
        "type": READY,
        "status": failed["status"],
        "reason": f"{failed['type'].removesuffix('Ready')}NotReady",
        "message": failed["message"],
    }


def drift_condition(status: str, reason: str, message: str) -> dict[str, str]:
    """The `RuntimeDrifted` condition (no `lastTransitionTime`: `desired_isvc_status` stamps it)."""
    return {"type": DRIFT_CONDITION, "status": status, "reason": reason, "message": message}


def desired_isvc_status(
    live: Mapping[str, Any], runtime: Mapping[str, Any], drift: Mapping[str, Any], ready: Readiness, now: str
) -> dict[str, Any] | None:
    """The InferenceService's status with the runtime record, drift, readiness and URLs; None when unchanged.

    A condition keeps its `lastTransitionTime` while its status stays the same; a new one gets `now`. Conditions of
    other types (not the engine reconciler's) are kept as they are."""
    status = dict(live.get("status") or {})
    prior = by_type(status.get("conditions") or [])
    conditions = [c for c in status.get("conditions") or [] if c.get("type") not in _OWN_CONDITIONS]
    for condition in [*ready.conditions, drift]:
        wanted = {k: v for k, v in condition.items() if v != "" and k != "lastTransitionTime"}
        before = prior.get(wanted["type"])
        if before is not None and _same_condition(before, wanted):
            conditions.append(before)
            continue
        conditions.append(stamped(wanted, before, now))
    desired = dict(
        status,
        runtime=dict(runtime),
        conditions=conditions,
        observedGeneration=as_mapping(live.get("metadata")).get("generation", 0),
        components=ready.components,
    )
    if ready.url:
        desired["url"] = ready.url
    else:
        desired.pop("url", None)
    return None if desired == status else desired


def _same_condition(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) == b.get(k) for k in ("type", "status", "reason", "message"))
