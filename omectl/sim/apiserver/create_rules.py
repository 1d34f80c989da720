"""What kube-apiserver sets on a new built-in object beyond its Go defaults (`builtin_defaults.py`): the status
its storage strategy starts it with, what the default mutating admission plugins add, and a Job's generated
selector.

- Status: a Service starts with `{loadBalancer: {}}`, a claim with `{phase: Pending}`, a Job or a Deployment
  with `{}`, a PodDisruptionBudget with its zero counts, a Pod with `{phase: Pending, qosClass}`; what the client
  sent is dropped (the strategies' PrepareForCreate).
- Pods: the Priority plugin gives a pod without a priority class `priority: 0` and `preemptionPolicy:
  PreemptLowerPriority`; DefaultTolerationSeconds adds the NoExecute tolerations of `not-ready` and `unreachable`
  nodes (300 s) unless the pod tolerates them already.
- Jobs: without `manualSelector: true` the template is labelled with the Job's uid and name
  (`batch.kubernetes.io/controller-uid`, `batch.kubernetes.io/job-name` and their legacy names), the selector is
  the uid label, and a Job without labels shows its template's.

Called once the object has its uid (api.py's `_prepare_new`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

Obj = dict[str, Any]

_TOLERATED_SECONDS: Final = 300
_NODE_CONDITION_TAINTS: Final = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
_PDB_STATUS: Final = {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}


def prepare_builtin_create(group: str, kind: str, obj: Obj) -> None:
    prepare = _KINDS.get((group, kind))
    if prepare is not None:
        prepare(obj)


def _service(obj: Obj) -> None:
    obj["status"] = {"loadBalancer": {}}


def _claim(obj: Obj) -> None:
    obj["status"] = {"phase": "Pending"}


def _empty_status(obj: Obj) -> None:
    obj["status"] = {}


def _pdb(obj: Obj) -> None:
    obj["status"] = dict(_PDB_STATUS)


def _pod(obj: Obj) -> None:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if not spec.get("priorityClassName"):
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    for key in _NODE_CONDITION_TAINTS:
        if not any(_tolerates_no_execute(t, key) for t in tolerations):
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": _TOLERATED_SECONDS}
            )
    spec["tolerations"] = tolerations
    obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}


def _tolerates_no_execute(toleration: Obj, key: str) -> bool:
    effect = toleration.get("effect") or ""
    if effect not in ("", "NoExecute"):
        return False
    if not toleration.get("key"):
        return toleration.get("operator") == "Exists"
    return bool(toleration.get("key") == key)


def qos_class(spec: Obj) -> str:
    """kube's QoS class of a pod: Guaranteed when every container limits and requests cpu and memory equally,
    BestEffort when none asks for either, else Burstable."""
    containers = [c for field in ("initContainers", "containers") for c in spec.get(field) or [] if isinstance(c, dict)]
    any_set = False
    guaranteed = bool(containers)
    for container in containers:
        resources = container.get("resources") or {}
        requests = {k: v for k, v in (resources.get("requests") or {}).items() if k in ("cpu", "memory")}
        limits = {k: v for k, v in (resources.get("limits") or {}).items() if k in ("cpu", "memory")}
        any_set = any_set or bool(requests) or bool(limits)
        if set(limits) != {"cpu", "memory"} or any(str(requests.get(k, limits[k])) != str(limits[k]) for k in limits):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _job(obj: Obj) -> None:
    obj["status"] = {}
    spec = obj.get("spec")
    meta = obj["metadata"]
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    spec.setdefault("manualSelector", False)
    uid, name = meta["uid"], meta.get("name", "")
    template = spec.setdefault("template", {})
    template_meta = template.setdefault("metadata", {}) if isinstance(template, dict) else None
    if isinstance(template_meta, dict):
        labels = dict(template_meta.get("labels") or {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": name,
                "controller-uid": uid,
                "job-name": name,
            }
        )
        template_meta["labels"] = labels
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})


_KINDS: dict[tuple[str, str], Callable[[Obj], None]] = {
    ("", "Service"): _service,
    ("", "PersistentVolumeClaim"): _claim,
    ("", "Pod"): _pod,
    ("policy", "PodDisruptionBudget"): _pdb,
    ("batch", "Job"): _job,
    ("apps", "Deployment"): _empty_status,
}
