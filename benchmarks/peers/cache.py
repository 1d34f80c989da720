"""The kopf peer's own caches and reverse indexes, fed by its kopf event handlers.

kopf hands each handler the one object its event is about and keeps no cache another handler can read, so an
operator that renders from several kinds keeps its own, as this one does: every ServingRuntime,
ClusterServingRuntime, BaseModel, ClusterBaseModel and InferenceService (`managedFields` dropped), and of the
Deployments and Services it renders what its render check and readiness read (`slim_workload`). The reverse
indexes are those omectl's informers keep: the parent a runtime names (`ome.io/inherit-from`), and the runtime and
the model an InferenceService names.

`PeerCache` answers what `omectl.core` asks: the runtime and model lookups of the engine pipeline
(`runtimes`, `models`), chain resolution (`get`) and what an edit reaches (`omectl.core.ome.reach.RuntimeGraph`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from omectl.core.ome.engine_status import AVAILABLE, ROLLOUT_COUNTS
from omectl.core.ome.inheritance import inherit_from
from omectl.core.ome.pipeline import CachedModels, CachedRuntimes
from omectl.core.ome.runtimes import SERVING_RUNTIME, RuntimeKind
from omectl.core.render_stamp import RENDER_HASH

ISVC_LABEL: Final = "ome.io/inferenceservice"  # on every workload rendered for an InferenceService

Key = tuple[str, str]  # (namespace, name); namespace "" for a cluster-scoped object
IndexFn = Callable[[Mapping[str, Any]], str | None]


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


class Index:
    """Objects of one kind by (namespace, name), and by the value each index function gives them."""

    def __init__(self, **indexes: IndexFn) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        self._functions = indexes
        self._by: dict[str, dict[str, set[Key]]] = {name: {} for name in indexes}

    def __len__(self) -> int:
        return len(self.objects)

    def put(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Cache `obj` (its previous version leaves the indexes); returns the previous version."""
        key = key_of(obj)
        old = self.objects.get(key)
        self.objects[key] = obj
        for name, function in self._functions.items():
            before, after = (function(old) if old is not None else None), function(obj)
            if before != after:
                if before is not None:
                    self._by[name].get(before, set()).discard(key)
                if after is not None:
                    self._by[name].setdefault(after, set()).add(key)
        return old

    def pop(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """Forget `obj` (a DELETED event's object); not a newer object of the same name: kopf hands each uid's events
        to a worker of its own, so a re-created object's ADDED can be handled before its predecessor's DELETED."""
        key = key_of(obj)
        cached = self.objects.get(key)
        uid = (obj.get("metadata") or {}).get("uid")
        if cached is not None and uid and (cached.get("metadata") or {}).get("uid") not in (None, uid):
            return None
        old = self.objects.pop(key, None)
        if old is not None:
            for name, function in self._functions.items():
                value = function(old)
                if value is not None:
                    self._by[name].get(value, set()).discard(key)
        return old

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace, name))

    def list(self, namespace: str | None = None) -> Iterable[dict[str, Any]]:
        if namespace is None:
            return self.objects.values()
        return [obj for (ns, _), obj in self.objects.items() if ns == namespace]

    def having(self, index: str, value: str) -> Iterable[dict[str, Any]]:
        """The objects whose index function `index` gives `value`."""
        return [self.objects[key] for key in self._by[index].get(value, ()) if key in self.objects]


def named_runtime_of(isvc: Mapping[str, Any]) -> str | None:
    name = ((isvc.get("spec") or {}).get("runtime") or {}).get("name")
    return name if isinstance(name, str) and name else None


def named_model_of(isvc: Mapping[str, Any]) -> str | None:
    name = ((isvc.get("spec") or {}).get("model") or {}).get("name")
    return name if isinstance(name, str) and name else None


def stripped(obj: Mapping[str, Any]) -> dict[str, Any]:
    """`obj` without `metadata.managedFields` (kopf's object is left as it is)."""
    meta = {k: v for k, v in obj["metadata"].items() if k != "managedFields"}
    return {**obj, "metadata": meta}


def slim_workload(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the peer keeps of a rendered Deployment or Service: its identity and generation, its InferenceService
    label and render stamp, and of its status `observedGeneration`, the `Available` condition and the replica counts
    that say whether its rollout is complete (as omectl's cache keeps them)."""
    meta = obj["metadata"]
    kept_meta: dict[str, Any] = {
        k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "generation") if k in meta
    }
    labels = meta.get("labels") or {}
    if ISVC_LABEL in labels:
        kept_meta["labels"] = {ISVC_LABEL: labels[ISVC_LABEL]}
    annotations = meta.get("annotations") or {}
    if RENDER_HASH in annotations:
        kept_meta["annotations"] = {RENDER_HASH: annotations[RENDER_HASH]}
    slim: dict[str, Any] = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept_meta}
    status = obj.get("status")
    if isinstance(status, Mapping):
        kept: dict[str, Any] = {}
        if "observedGeneration" in status:
            kept["observedGeneration"] = status["observedGeneration"]
        conditions = [
            {k: c[k] for k in ("type", "status", "reason", "message") if k in c}
            for c in status.get("conditions") or ()
            if isinstance(c, Mapping) and c.get("type") == AVAILABLE
        ]
        if conditions:
            kept["conditions"] = conditions
        kept.update((key, status[key]) for key in ROLLOUT_COUNTS if key in status)
        slim["status"] = kept
    return slim


class PeerCache:
    """Everything one peer process caches of its cluster."""

    def __init__(self) -> None:
        self.serving = Index(parent=inherit_from)
        self.cluster_serving = Index(parent=inherit_from)
        self.base_models = Index()
        self.cluster_base_models = Index()
        self.inference_services = Index(runtime=named_runtime_of, model=named_model_of)
        self.workloads = {"Deployment": Index(), "Service": Index()}
        self.runtimes = CachedRuntimes(self.serving, self.cluster_serving)
        self.models = CachedModels(self.base_models, self.cluster_base_models)

    def runtime_index(self, kind: RuntimeKind) -> Index:
        return self.serving if kind == SERVING_RUNTIME else self.cluster_serving

    # RuntimeLookup (chain resolution) and RuntimeGraph (`reach`)
    def get(self, kind: RuntimeKind, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.runtimes.get(kind, namespace, name)

    def naming(self, kind: RuntimeKind, parent: str) -> Iterable[Mapping[str, Any]]:
        return self.runtime_index(kind).having("parent", parent)

    def inference_services_naming(self, runtime: str) -> Iterable[Mapping[str, Any]]:
        return self.inference_services.having("runtime", runtime)

    def workload(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        index = self.workloads.get(kind)
        return index.get(namespace, name) if index is not None else None
