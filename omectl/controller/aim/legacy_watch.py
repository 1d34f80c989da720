"""What one cluster watches for upstream's legacy template path (docs/aim-resources.md, "The legacy template path"),
and which watch events become its reconciles. Held by `AimWatch.legacy`; every informer is optional (a cluster
without the legacy CRDs counts as synced and empty).

- AIMServiceTemplates, AIMClusterServiceTemplates and AIMTemplateCaches (work key kind `aim.eai.amd.com/<Kind>`),
  each indexed by effective runtime-config name. A create, or an update of the spec, labels or annotations, queues
  the object itself; our own status writes do not. A runtime config change queues the ones it reaches
  (`AimWatch._config_handler`, through `consumers_named`).
- What a template reads: its model (the v1alpha2 AIMModel / AIMClusterModel informers of `AimWatch.consumers`: a
  model's create, delete, spec or status change queues the templates naming it, `MODEL_NAME_INDEX`), the Nodes (their
  labels only: a change of a Node's labels, or a Node coming or going, queues the templates that require a GPU), its
  discovery Job (the consumers' Job informer: a status change or deletion of a Job labelled
  `aim.eai.amd.com/template` queues its owner) and the Job's result ConfigMap (the consumers' discovery result
  informer: one labelled `aim.eai.amd.com/template` queues the templates of that name it may belong to).
- What a template cache reads: its template (a template's create, delete or status change queues the caches naming
  it, `TEMPLATE_REF_INDEX`) and its artifacts (the consumers' AIMArtifact informer: a status change or deletion of an
  artifact labelled `aim.eai.amd.com/template-cache.name` queues that cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.runtime.apply import child_status_changed
from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.core.aim.legacy.gpus import requires_gpu
from omectl.core.aim.legacy.kinds import (
    ARTIFACT,
    CLUSTER_SERVICE_TEMPLATE,
    SERVICE_TEMPLATE,
    TEMPLATE_CACHE,
    TEMPLATE_CACHE_LABEL,
    TEMPLATE_KINDS,
    TEMPLATE_LABEL,
)
from omectl.core.aim.legacy.template_caches import template_refs
from omectl.core.aim.resolution import effective_config_name
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    AIM_CLUSTER_SERVICE_TEMPLATES,
    AIM_SERVICE_TEMPLATES,
    AIM_TEMPLATE_CACHES,
    NODES,
    ResourceRef,
)
from omectl.tracing.spans import object_event_context

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

KEY_PREFIX: Final = "aim.eai.amd.com/"
LEGACY_RESOURCES: Final[Mapping[str, ResourceRef]] = {
    SERVICE_TEMPLATE: AIM_SERVICE_TEMPLATES,
    CLUSTER_SERVICE_TEMPLATE: AIM_CLUSTER_SERVICE_TEMPLATES,
    TEMPLATE_CACHE: AIM_TEMPLATE_CACHES,
}
"""The legacy kinds this module watches, by kind."""
LEGACY_KEYS: Final[Mapping[str, str]] = {f"{KEY_PREFIX}{kind}": kind for kind in LEGACY_RESOURCES}
"""Work key kind (`aim.eai.amd.com/<Kind>`) → kind."""
CONFIG_NAME_INDEX: Final = "aim.eai.amd.com/runtime-config-name"
MODEL_NAME_INDEX: Final = "aim.eai.amd.com/template-model-name"
"""Templates by `spec.modelName`."""
TEMPLATE_REF_INDEX: Final = "aim.eai.amd.com/template-ref"
"""Template caches by `<kind>/<namespace>/<name>` of each template they may name."""
MODEL_KINDS: Final[Mapping[str, str]] = {"AIMModel": SERVICE_TEMPLATE, "AIMClusterModel": CLUSTER_SERVICE_TEMPLATE}
"""Model kind → the template kind that names it."""


def work_kind(kind: str) -> str:
    return f"{KEY_PREFIX}{kind}"


def _metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def model_name_index(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec")
    name = spec.get("modelName") if isinstance(spec, Mapping) else None
    return [name] if isinstance(name, str) and name else []


def template_ref_index(obj: dict[str, Any]) -> list[str]:
    return [f"{kind}/{namespace}/{name}" for kind, namespace, name in template_refs(obj)]


def node_labels(obj: dict[str, Any]) -> dict[str, Any]:
    """What a template reads of a Node: its name and labels."""
    meta = _metadata(obj)
    return {"kind": "Node", "metadata": {k: meta[k] for k in ("name", "uid", "resourceVersion", "labels") if k in meta}}


def _self_relevant_change(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    if old is None:
        return True
    meta, old_meta = _metadata(obj), _metadata(old)
    return any(meta.get(k) != old_meta.get(k) for k in ("generation", "labels", "annotations"))


class LegacyWatch:
    """The informers of the legacy kinds in one cluster."""

    def __init__(self, watch: AimWatch) -> None:
        self.watch = watch
        self.cluster = watch.cluster
        client = self.cluster.client
        self.kinds: dict[str, Informer] = {}
        for kind, resource in LEGACY_RESOURCES.items():
            informer = Informer(client, resource, handlers=[self._self_handler(kind)], optional=True)
            informer.cache.add_index(CONFIG_NAME_INDEX, lambda obj: [effective_config_name(obj)])
            self.kinds[kind] = informer
        for kind in TEMPLATE_KINDS:
            self.kinds[kind].cache.add_index(MODEL_NAME_INDEX, model_name_index)
            self.kinds[kind].add_handler(self._template_handler(kind))
        self.kinds[TEMPLATE_CACHE].cache.add_index(TEMPLATE_REF_INDEX, template_ref_index)
        self.nodes = Informer(client, NODES, handlers=[self._node_handler], optional=True, transform=node_labels)
        consumers = watch.consumers
        for model_kind in MODEL_KINDS:
            consumers.kinds[model_kind].add_handler(self._model_handler(model_kind))
        consumers.jobs.add_handler(self._job_handler)
        consumers.results.add_handler(self._result_handler)
        consumers.kinds[ARTIFACT].add_handler(self._artifact_handler)

    @property
    def informers(self) -> list[Informer]:
        return [*self.kinds.values(), self.nodes]

    def consumers_named(self, config_name: str) -> list[tuple[str, dict[str, Any]]]:
        """`(kind, object)` of every legacy object whose effective runtime-config name is `config_name`."""
        return [
            (kind, obj)
            for kind, informer in self.kinds.items()
            for obj in informer.cache.by_index(CONFIG_NAME_INDEX, config_name)
        ]

    def enqueue(self, kind: str, namespace: str, name: str, trigger: Any, lane: Lane) -> None:
        key = WorkKey(self.cluster.name, work_kind(kind), namespace, name)
        self.cluster.enqueue(key, lane=lane, trigger=trigger)

    def _trigger(self, kind: str, obj: Mapping[str, Any]) -> Any:
        return object_event_context(self.cluster.name, kind, obj)

    def _self_handler(self, kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if event_type == "DELETED":
                return  # owner references let the API server collect the children
            if event_type == "MODIFIED" and not _self_relevant_change(obj, old):
                return  # our own status write
            meta = _metadata(obj)
            lane = Lane.RESYNC if initial else Lane.EDIT
            self.enqueue(kind, str(meta.get("namespace") or ""), str(meta["name"]), self._trigger(kind, obj), lane)

        return on_event

    def _enqueue_template(self, kind: str, namespace: str, name: str, trigger: Any) -> None:
        if self.kinds[kind].cache.get(namespace, name) is not None:
            self.enqueue(kind, namespace, name, trigger, Lane.FANOUT)

    def _model_handler(self, model_kind: str) -> Any:
        template_kind = MODEL_KINDS[model_kind]

        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if initial:
                return  # every template of the initial list is queued anyway
            unchanged = (
                old is not None and obj.get("spec") == old.get("spec") and obj.get("status") == old.get("status")
            )
            if event_type == "MODIFIED" and unchanged:
                return
            meta = _metadata(obj)
            namespace = str(meta.get("namespace") or "")
            trigger = self._trigger(model_kind, obj)
            for template in self.kinds[template_kind].cache.by_index(MODEL_NAME_INDEX, str(meta["name"])):
                template_ns = str(_metadata(template).get("namespace") or "")
                if template_ns == namespace:
                    self.enqueue(template_kind, template_ns, str(_metadata(template)["name"]), trigger, Lane.FANOUT)

        return on_event

    def _node_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial:
            return
        if (
            event_type == "MODIFIED"
            and old is not None
            and _metadata(obj).get("labels") == _metadata(old).get("labels")
        ):
            return
        trigger = self._trigger("Node", obj)
        for kind in TEMPLATE_KINDS:
            for template in self.kinds[kind].cache.list():
                if requires_gpu(template):
                    meta = _metadata(template)
                    self.enqueue(kind, str(meta.get("namespace") or ""), str(meta["name"]), trigger, Lane.FANOUT)

    def _job_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        meta = _metadata(obj)
        if not (meta.get("labels") or {}).get(TEMPLATE_LABEL):
            return
        if event_type != "DELETED" and not child_status_changed(event_type, obj, old, initial):
            return
        for ref in meta.get("ownerReferences") or []:
            if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") in TEMPLATE_KINDS:
                kind = str(ref["kind"])
                namespace = "" if kind == CLUSTER_SERVICE_TEMPLATE else str(meta.get("namespace") or "")
                self._enqueue_template(kind, namespace, str(ref.get("name") or ""), self._trigger("Job", obj))

    def _result_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial:
            return
        if event_type == "MODIFIED" and old is not None and old.get("data") == obj.get("data"):
            return
        meta = _metadata(obj)
        template = (meta.get("labels") or {}).get(TEMPLATE_LABEL)
        if not template:
            return
        trigger = self._trigger("ConfigMap", obj)
        namespace = str(meta.get("namespace") or "")
        self._enqueue_template(SERVICE_TEMPLATE, namespace, str(template), trigger)
        if namespace == self.watch.operator_namespace:
            self._enqueue_template(CLUSTER_SERVICE_TEMPLATE, "", str(template), trigger)

    def _template_handler(self, kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if initial:
                return  # every cache of the initial list is queued anyway
            if event_type == "MODIFIED" and old is not None and obj.get("status") == old.get("status"):
                return
            meta = _metadata(obj)
            key = f"{kind}/{meta.get('namespace') or ''}/{meta['name']}"
            trigger = self._trigger(kind, obj)
            for cache in self.kinds[TEMPLATE_CACHE].cache.by_index(TEMPLATE_REF_INDEX, key):
                cache_meta = _metadata(cache)
                self.enqueue(
                    TEMPLATE_CACHE,
                    str(cache_meta.get("namespace") or ""),
                    str(cache_meta["name"]),
                    trigger,
                    Lane.FANOUT,
                )

        return on_event

    def _artifact_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        meta = _metadata(obj)
        cache = (meta.get("labels") or {}).get(TEMPLATE_CACHE_LABEL)
        if not cache:
            return
        if event_type != "DELETED" and not child_status_changed(event_type, obj, old, initial):
            return
        namespace = str(meta.get("namespace") or "")
        if self.kinds[TEMPLATE_CACHE].cache.get(namespace, str(cache)) is not None:
            self.enqueue(TEMPLATE_CACHE, namespace, str(cache), self._trigger(ARTIFACT, obj), Lane.FANOUT)
