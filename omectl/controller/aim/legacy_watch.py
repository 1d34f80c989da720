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
- What a model reads of its templates (`omectl.controller.aim.model_templates`): a template's create, status change
  or deletion queues the model its `spec.modelName` names (the AIMModel in its namespace; the AIMClusterModel for a
  cluster template), which makes a deleted one again and reports their aggregate.
- What a template cache reads: its template (a template's create, delete or status change queues the caches naming
  it, `TEMPLATE_REF_INDEX`) and its artifacts (the consumers' AIMArtifact informer: a status change, owner change or
  deletion of an artifact labelled `aim.eai.amd.com/template-cache.name` queues that cache).
- A template cache's deletion: its artifacts that are not Ready then (`template_caches.abandoned_artifacts`) are
  noted in `abandoned_artifacts` and queued; their reconcile deletes them (`legacy_caches.delete_abandoned_artifact`).
  Noted at the deletion, so a cache of the same name made again at once (a service's Shared cache) does not keep
  them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.aim.consumers_watch import result_changed
from omectl.controller.aim.kind_watch import KindWatch, metadata, work_keys
from omectl.controller.runtime.apply import child_status_changed
from omectl.controller.runtime.queue import Lane
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
from omectl.core.aim.legacy.template_caches import abandoned_artifacts, template_refs
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    AIM_CLUSTER_SERVICE_TEMPLATES,
    AIM_SERVICE_TEMPLATES,
    AIM_TEMPLATE_CACHES,
    NODES,
    ResourceRef,
)

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

LEGACY_RESOURCES: Final[Mapping[str, ResourceRef]] = {
    SERVICE_TEMPLATE: AIM_SERVICE_TEMPLATES,
    CLUSTER_SERVICE_TEMPLATE: AIM_CLUSTER_SERVICE_TEMPLATES,
    TEMPLATE_CACHE: AIM_TEMPLATE_CACHES,
}
"""The legacy kinds this module watches, by kind."""
LEGACY_KEYS: Final[Mapping[str, str]] = work_keys(LEGACY_RESOURCES)
"""Work key kind (`aim.eai.amd.com/<Kind>`) → kind."""
MODEL_NAME_INDEX: Final = "aim.eai.amd.com/template-model-name"
"""Templates by `spec.modelName`."""
TEMPLATE_REF_INDEX: Final = "aim.eai.amd.com/template-ref"
"""Template caches by `<kind>/<namespace>/<name>` of each template they may name."""
MODEL_KINDS: Final[Mapping[str, str]] = {"AIMModel": SERVICE_TEMPLATE, "AIMClusterModel": CLUSTER_SERVICE_TEMPLATE}
"""Model kind → the template kind that names it."""


def model_name_index(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec")
    name = spec.get("modelName") if isinstance(spec, Mapping) else None
    return [name] if isinstance(name, str) and name else []


def template_ref_index(obj: dict[str, Any]) -> list[str]:
    return [f"{kind}/{namespace}/{name}" for kind, namespace, name in template_refs(obj)]


def node_labels(obj: dict[str, Any]) -> dict[str, Any]:
    """What a template reads of a Node: its name and labels."""
    meta = metadata(obj)
    return {"kind": "Node", "metadata": {k: meta[k] for k in ("name", "uid", "resourceVersion", "labels") if k in meta}}


class LegacyWatch(KindWatch):
    """The informers of the legacy kinds in one cluster."""

    def __init__(self, watch: AimWatch) -> None:
        super().__init__(watch, LEGACY_RESOURCES)
        for kind in TEMPLATE_KINDS:
            self.kinds[kind].cache.add_index(MODEL_NAME_INDEX, model_name_index)
            self.kinds[kind].add_handler(self._template_handler(kind))
            self.kinds[kind].add_handler(self._templates_model_handler(kind))
        self.kinds[TEMPLATE_CACHE].cache.add_index(TEMPLATE_REF_INDEX, template_ref_index)
        self.kinds[TEMPLATE_CACHE].add_handler(self._cache_deleted_handler)
        self.abandoned_artifacts: dict[tuple[str, str], str] = {}
        """`(namespace, name)` → uid of the artifacts a deleted template cache left that were not Ready (module
        docstring), until they are deleted."""
        self.nodes = Informer(
            self.cluster.client, NODES, handlers=[self._node_handler], optional=True, transform=node_labels
        )
        consumers = watch.consumers
        for model_kind in MODEL_KINDS:
            consumers.kinds[model_kind].add_handler(self._model_handler(model_kind))
        consumers.jobs.add_handler(self._job_handler)
        consumers.results.add_handler(self._result_handler)
        consumers.kinds[ARTIFACT].add_handler(self._artifact_handler)

    @property
    def informers(self) -> list[Informer]:
        return [*self.kinds.values(), self.nodes]

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
            meta = metadata(obj)
            namespace = str(meta.get("namespace") or "")
            trigger = self._trigger(model_kind, obj)
            for template in self.kinds[template_kind].cache.by_index(MODEL_NAME_INDEX, str(meta["name"])):
                template_ns = str(metadata(template).get("namespace") or "")
                if template_ns == namespace:
                    self.enqueue(template_kind, template_ns, str(metadata(template)["name"]), trigger, Lane.FANOUT)

        return on_event

    def _node_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial:
            return
        if event_type == "MODIFIED" and old is not None and metadata(obj).get("labels") == metadata(old).get("labels"):
            return
        trigger = self._trigger("Node", obj)
        for kind in TEMPLATE_KINDS:
            for template in self.kinds[kind].cache.list():
                if requires_gpu(template):
                    meta = metadata(template)
                    self.enqueue(kind, str(meta.get("namespace") or ""), str(meta["name"]), trigger, Lane.FANOUT)

    def _job_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        meta = metadata(obj)
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
        if not result_changed(event_type, obj, old, initial):
            return
        meta = metadata(obj)
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
            meta = metadata(obj)
            key = f"{kind}/{meta.get('namespace') or ''}/{meta['name']}"
            trigger = self._trigger(kind, obj)
            for cache in self.kinds[TEMPLATE_CACHE].cache.by_index(TEMPLATE_REF_INDEX, key):
                cache_meta = metadata(cache)
                self.enqueue(
                    TEMPLATE_CACHE,
                    str(cache_meta.get("namespace") or ""),
                    str(cache_meta["name"]),
                    trigger,
                    Lane.FANOUT,
                )

        return on_event

    def _templates_model_handler(self, kind: str) -> Any:
        """A template's create, status change or deletion queues the model it names (its templates' aggregate)."""
        model_kind = next(model for model, template in MODEL_KINDS.items() if template == kind)

        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if initial:
                return  # every model of the initial list is queued anyway
            if event_type == "MODIFIED" and old is not None and obj.get("status") == old.get("status"):
                return
            model = (obj.get("spec") or {}).get("modelName")
            if not isinstance(model, str) or not model:
                return
            namespace = str(metadata(obj).get("namespace") or "")
            models = self.watch.consumers.kinds[model_kind]
            if models.cache.get(namespace, model) is not None:
                self.watch.consumers.enqueue(model_kind, namespace, model, self._trigger(kind, obj), Lane.FANOUT)

        return on_event

    def _cache_deleted_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if event_type != "DELETED":
            return
        namespace = str(metadata(obj).get("namespace") or "")
        artifacts = self.watch.consumers.kinds[ARTIFACT]
        trigger = self._trigger(TEMPLATE_CACHE, obj)
        for artifact in abandoned_artifacts(obj, artifacts.cache.list(namespace)):
            meta = metadata(artifact)
            self.abandoned_artifacts[(namespace, str(meta["name"]))] = str(meta.get("uid") or "")
            self.watch.consumers.enqueue(ARTIFACT, namespace, str(meta["name"]), trigger, Lane.FANOUT)

    def _artifact_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        meta = metadata(obj)
        if event_type == "DELETED":
            self.abandoned_artifacts.pop((str(meta.get("namespace") or ""), str(meta["name"])), None)
        cache = (meta.get("labels") or {}).get(TEMPLATE_CACHE_LABEL)
        if not cache:
            return
        if event_type != "DELETED" and not (
            child_status_changed(event_type, obj, old, initial) or _owner_changed(obj, old)
        ):
            return
        namespace = str(meta.get("namespace") or "")
        if self.kinds[TEMPLATE_CACHE].cache.get(namespace, str(cache)) is not None:
            self.enqueue(TEMPLATE_CACHE, namespace, str(cache), self._trigger(ARTIFACT, obj), Lane.FANOUT)


def _owner_changed(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """Whether an artifact's update changed its owners: an adoption, which changes no status. A cache made again under
    its name takes over the Ready artifact the one before it left (no garbage collector removed it), and counts it
    only once it owns it."""
    return old is not None and metadata(old).get("ownerReferences") != metadata(obj).get("ownerReferences")
