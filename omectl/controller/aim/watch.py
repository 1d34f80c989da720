"""What one cluster watches for AMD AIM (`aim.eai.amd.com`), and which watch events become AIMService reconciles.

Every informer here is optional: a cluster that serves no AIM (or no KServe / Gateway API) CRDs counts as synced
and empty, so the OME side of the fleet is unaffected.

- AIMServices, indexed by their effective runtime-config name (`default` when `spec.runtimeConfigName` is
  omitted). A create, or an update of the spec, labels or annotations (labels feed path templates and label
  propagation), queues the service; our own status writes do not.
- AIMRuntimeConfigs and AIMClusterRuntimeConfigs. A create, a spec change or a delete queues exactly the services
  whose effective config name it is (`config_change_reaches`): in its namespace for an
  AIMRuntimeConfig, in every namespace for an AIMClusterRuntimeConfig. A service waiting in backoff for a missing
  explicit config so runs at once when the config appears.
- The children an AIMService renders, selected by the label `aim.eai.amd.com/service`: KServe InferenceServices,
  Gateway API HTTPRoutes and PVCs. A status change (readiness, a route's acceptance, a claim's binding) or a
  deletion queues the owning AIMService, found by its controller owner reference.
- The v1alpha2 consumers (models, profiles, profile sets, caches, artifacts, cluster model sources) and their
  children: `aim_consumers_watch.ConsumerWatch` (`AimWatch.consumers`). A config change queues them as it queues
  services; an AIMProfileCache's status change queues its AIMService (which mounts the Ready artifacts), and a
  profile's change queues the AIMServices with caching of its model (`SERVICE_MODEL_INDEX`).
- Upstream's legacy template path (templates, cluster templates, template caches) and what they read:
  `legacy_watch.LegacyWatch` (`AimWatch.legacy`); config changes queue them as they queue services.
- The templates a service written in v1alpha1 selects by name (`SERVICE_TEMPLATE_INDEX`, over
  `spec.template.name` carried in its annotation): a template's create, delete, spec or status change queues the
  services naming it, in its namespace for an AIMServiceTemplate, in every namespace for an
  AIMClusterServiceTemplate. A service failed for a missing template so runs at once when the template appears.
- The models services resolve (`SERVICE_MODEL_REF_INDEX`: `name:<spec.model.name>` or `image:<spec.model.image>`,
  or `image:<baseImage>` for v1alpha1's inline custom model, whose model has that image; the model caches of
  `AimWatch.consumers`, indexed by image and by v1alpha1 `defaultServiceTemplate`): a model's create, delete,
  spec, status or annotation change queues the services naming it or its image (in its namespace for an AIMModel,
  everywhere for an AIMClusterModel), so `ModelReady`, `status.resolvedModel`, the hold and a default template
  follow it; a template's change also queues the services of the models whose default it is.
- Automatic template selection (`template_selection`): the templates by `spec.modelName` (`MODEL_NAME_INDEX` of
  `legacy_watch`) are the candidates; a template's create, delete, spec or status change queues the services whose
  model has that name (its new and its old `spec.modelName`; the models found by `MODEL_BY_NAME_INDEX` and the
  AIMClusterModel of that name, then their services as above, only where the template is visible). The Nodes' GPUs
  are read at selection; a Node's change reaches services through the templates' status (Ready / NotAvailable).
- A service's derived template (its v1alpha1 `spec.overrides`, owned by it): its create, delete, spec or status
  change queues that service.
- The template caches services use (`SERVICE_RESOLVED_TEMPLATE_INDEX`, over `status.resolvedTemplate.name`): a
  template cache's create, delete, spec or status change queues the services of its namespace whose resolved
  template it caches, and the service that made it (its owner, or its `aim.eai.amd.com/service.name` label), so
  `CacheReady`, the InferenceService waiting for the cache, and a deleted cache made again follow it.
- KEDA's HorizontalPodAutoscalers of the services' InferenceServices (`keda-hpa-<name>-predictor`, labelled
  `aim.eai.amd.com/service` as the InferenceService is; a slim cache: `slim_autoscaler`): a create, delete, spec or
  status change queues the service (`status.runtime`, `HPAReady`).
- The InferenceServices' predictor pods (`predictor_pods.PredictorPods`, a slim cache): a pod's creation, deletion
  or status change queues the service owning the InferenceService it belongs to (`InferenceServicePodsReady`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.controller.aim.consumers_watch import ConsumerWatch
from omectl.controller.aim.kind_watch import CONFIG_NAME_INDEX, config_name_index, metadata, self_relevant_change
from omectl.controller.aim.legacy_watch import MODEL_NAME_INDEX, LegacyWatch, model_name_index
from omectl.controller.aim.predictor_pods import PredictorPods
from omectl.controller.runtime.apply import child_status_changed
from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.controller.runtime.view import ClusterView, DomainView
from omectl.core.aim.custom_models import base_image, custom_spec
from omectl.core.aim.legacy.gpus import gpu_inventory
from omectl.core.aim.legacy.kinds import CLUSTER_SERVICE_TEMPLATE, SERVICE_TEMPLATE, TEMPLATE_CACHE, TEMPLATE_KINDS
from omectl.core.aim.legacy.service_caches import SERVICE_NAME_LABEL
from omectl.core.aim.meta import AIM_SERVICE_KIND, SERVICE_LABEL, sanitized_label_value
from omectl.core.aim.resolution import CLUSTER_RUNTIME_CONFIG_KIND, RUNTIME_CONFIG_KIND, config_change_reaches
from omectl.core.aim.service_models import AIM_CLUSTER_MODEL, AIM_MODEL
from omectl.core.aim.versions.model import default_service_template
from omectl.core.aim.versions.service import template_name
from omectl.kube.cache import ObjectCache
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    AIM_CLUSTER_RUNTIME_CONFIGS,
    AIM_RUNTIME_CONFIGS,
    AIM_SERVICES,
    HORIZONTAL_POD_AUTOSCALERS,
    HTTP_ROUTES,
    KSERVE_INFERENCE_SERVICES,
    PERSISTENT_VOLUME_CLAIMS,
    ResourceRef,
)
from omectl.kube.transforms import condition_fields, metadata_and_status, rendered_object
from omectl.tracing.spans import object_event_context

AIM_SERVICE_KEY: Final = "aim.eai.amd.com/AIMService"
"""Work key kind of an AIMService reconcile."""
SERVICE_MODEL_INDEX: Final = "aim.eai.amd.com/service-model"
"""AIMServices with caching enabled, by `spec.model.name` (the model whose profile they cache)."""
SERVICE_TEMPLATE_INDEX: Final = "aim.eai.amd.com/service-template"
"""AIMServices by the template they select by name (v1alpha1's `spec.template.name`, carried in the annotation)."""
SERVICE_MODEL_REF_INDEX: Final = "aim.eai.amd.com/service-model-ref"
"""AIMServices by the model they resolve: `name:<spec.model.name>` or `image:<spec.model.image>` (trimmed), or
`image:<baseImage>` of an inline custom model (v1alpha1, carried in the annotation)."""
SERVICE_RESOLVED_TEMPLATE_INDEX: Final = "aim.eai.amd.com/service-resolved-template"
"""AIMServices by `status.resolvedTemplate.name` (upstream's index for its template caches' changes)."""
MODEL_IMAGE_INDEX: Final = "aim.eai.amd.com/model-image"
"""AIMModels and AIMClusterModels by `spec.image` (trimmed)."""
MODEL_DEFAULT_TEMPLATE_INDEX: Final = "aim.eai.amd.com/model-default-template"
"""AIMModels and AIMClusterModels by the `defaultServiceTemplate` they carry from v1alpha1."""
MODEL_BY_NAME_INDEX: Final = "aim.eai.amd.com/model-by-name"
"""AIMModels by `metadata.name` (in every namespace): the models a cluster template's `spec.modelName` may mean."""


def _trimmed(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def service_model_ref_index(obj: dict[str, Any]) -> list[str]:
    model = (obj.get("spec") or {}).get("model") or {}
    if not isinstance(model, Mapping):
        return []
    name, image = _trimmed(model.get("name")), _trimmed(model.get("image"))
    if name is None and image is None and (custom := custom_spec(obj)) is not None:
        image = _trimmed(base_image(custom))  # an inline custom model's model has its base image
    return [f"name:{name}"] if name is not None else [f"image:{image}"] if image is not None else []


def model_image_index(obj: dict[str, Any]) -> list[str]:
    image = _trimmed((obj.get("spec") or {}).get("image"))
    return [image] if image is not None else []


def model_default_template_index(obj: dict[str, Any]) -> list[str]:
    name = default_service_template(obj)
    return [name] if name is not None else []


def model_by_name_index(obj: dict[str, Any]) -> list[str]:
    return [str(metadata(obj)["name"])]


def service_model_index(obj: dict[str, Any]) -> list[str]:
    spec = obj.get("spec") or {}
    caching = spec.get("caching") or {}
    name = (spec.get("model") or {}).get("name")
    return [name] if caching.get("enabled") is True and isinstance(name, str) and name else []


def service_resolved_template_index(obj: dict[str, Any]) -> list[str]:
    ref = (obj.get("status") or {}).get("resolvedTemplate") or {}
    name = ref.get("name") if isinstance(ref, Mapping) else None
    return [name] if isinstance(name, str) and name else []


def service_template_index(obj: dict[str, Any]) -> list[str]:
    name = template_name(obj)
    return [name] if name is not None else []


def _autoscaler_status(status: Mapping[str, Any]) -> dict[str, Any]:
    kept = condition_fields(status, ("AbleToScale", "ScalingActive"))
    kept.pop("observedGeneration", None)
    kept.update({key: status[key] for key in ("currentReplicas", "desiredReplicas") if key in status})
    return kept


_AUTOSCALER_IDENTITY = rendered_object(labels=(SERVICE_LABEL,), annotations=(), status=_autoscaler_status)


def slim_autoscaler(obj: dict[str, Any]) -> dict[str, Any]:
    """What the cache keeps of KEDA's HPA: its identity, the service label, `spec.minReplicas` and `maxReplicas`, and
    its status's current and desired replicas and `AbleToScale` / `ScalingActive` conditions."""
    kept = _AUTOSCALER_IDENTITY(obj)
    spec = obj.get("spec") or {}
    kept["spec"] = {key: spec[key] for key in ("minReplicas", "maxReplicas") if key in spec}
    return kept


def owning_service(child: Mapping[str, Any]) -> str | None:
    """The AIMService a child belongs to: its controller owner reference, else its `aim.eai.amd.com/service` label."""
    meta = metadata(child)
    for ref in meta.get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("kind") == AIM_SERVICE_KIND and ref.get("controller"):
            name = ref.get("name")
            if isinstance(name, str) and name:
                return name
    label = (meta.get("labels") or {}).get(SERVICE_LABEL)
    return label if isinstance(label, str) and label else None


class AimWatch(DomainView):
    """The AIM informers of one cluster, their event handlers, and the cluster as the AIM reconcilers see it."""

    def __init__(self, cluster: ClusterView, *, operator_namespace: str) -> None:
        super().__init__(cluster)
        self.operator_namespace = operator_namespace
        client = cluster.client
        self.services = Informer(client, AIM_SERVICES, handlers=[self._service_handler], optional=True)
        self.services.cache.add_index(CONFIG_NAME_INDEX, config_name_index)
        self.services.cache.add_index(SERVICE_MODEL_INDEX, service_model_index)
        self.services.cache.add_index(SERVICE_TEMPLATE_INDEX, service_template_index)
        self.services.cache.add_index(SERVICE_MODEL_REF_INDEX, service_model_ref_index)
        self.services.cache.add_index(SERVICE_RESOLVED_TEMPLATE_INDEX, service_resolved_template_index)
        self.runtime_configs = Informer(
            client, AIM_RUNTIME_CONFIGS, handlers=[self._config_handler(RUNTIME_CONFIG_KIND)], optional=True
        )
        self.cluster_runtime_configs = Informer(
            client,
            AIM_CLUSTER_RUNTIME_CONFIGS,
            handlers=[self._config_handler(CLUSTER_RUNTIME_CONFIG_KIND)],
            optional=True,
        )
        self.inference_services = self._child_informer(KSERVE_INFERENCE_SERVICES)
        self.http_routes = self._child_informer(HTTP_ROUTES)
        self.claims = self._child_informer(PERSISTENT_VOLUME_CLAIMS)
        self.predictor_pods = PredictorPods(client, self._predictor_pods_changed)
        self.autoscalers = Informer(
            client,
            HORIZONTAL_POD_AUTOSCALERS,
            label_selector=SERVICE_LABEL,
            handlers=[self._autoscaler_handler],
            optional=True,
            transform=slim_autoscaler,
        )
        self.deleted_services: set[tuple[str, str]] = set()
        """`(namespace, name as a label value)` of the services whose deletion was seen, until one of that name is
        made again: their template caches that are not Ready go too (`legacy_caches.delete_abandoned_cache`)."""
        self.consumers = ConsumerWatch(self)  # the v1alpha2 consumers and their children
        self.legacy = LegacyWatch(self)  # upstream's legacy template path
        for kind in TEMPLATE_KINDS:
            self.legacy.kinds[kind].add_handler(self._template_handler(kind))
        self.legacy.kinds[TEMPLATE_CACHE].add_handler(self._template_cache_handler)
        for kind in (AIM_MODEL, AIM_CLUSTER_MODEL):
            models = self.consumers.kinds[kind]
            models.cache.add_index(MODEL_IMAGE_INDEX, model_image_index)
            models.cache.add_index(MODEL_DEFAULT_TEMPLATE_INDEX, model_default_template_index)
            models.cache.add_index(MODEL_BY_NAME_INDEX, model_by_name_index)
            models.add_handler(self._model_handler(kind))

    def _child_informer(self, resource: ResourceRef) -> Informer:
        # the children's spec is what the service rendered: their readers (`_child_handler`, the status roll-up,
        # label propagation, ownership) read their metadata and status only
        return Informer(
            self.cluster.client,
            resource,
            label_selector=SERVICE_LABEL,
            handlers=[self._child_handler],
            optional=True,
            transform=metadata_and_status,
        )

    @property
    def informers(self) -> list[Informer]:
        return [
            self.services,
            self.runtime_configs,
            self.cluster_runtime_configs,
            self.inference_services,
            self.http_routes,
            self.claims,
            self.predictor_pods.informer,
            self.autoscalers,
            *self.consumers.informers,
            *self.legacy.informers,
        ]

    def child_cache(self, kind: str) -> ObjectCache | None:
        return {
            "InferenceService": self.inference_services.cache,
            "HTTPRoute": self.http_routes.cache,
            "PersistentVolumeClaim": self.claims.cache,
            "AIMProfileCache": self.consumers.kinds["AIMProfileCache"].cache,
            SERVICE_TEMPLATE: self.legacy.kinds[SERVICE_TEMPLATE].cache,
        }.get(kind)

    def template_lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """`service_templates.TemplateLookup` over the legacy template caches."""
        return self.legacy.kinds[kind].cache.get(namespace, name)

    def templates_for_model(self, kind: str, namespace: str, model: str) -> list[dict[str, Any]]:
        """`template_selection.TemplatesForModel` over the legacy template caches (`MODEL_NAME_INDEX`)."""
        templates = self.legacy.kinds[kind].cache.by_index(MODEL_NAME_INDEX, model)
        return [t for t in templates if str(metadata(t).get("namespace") or "") == namespace]

    def gpu_models(self) -> frozenset[str]:
        """The GPU models the cluster's Nodes have (normalised), for automatic template selection."""
        return frozenset(gpu_inventory(self.legacy.nodes.cache.list()))

    def model_lookup(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None:
        """`service_models.ModelLookup` over the model caches."""
        return self.consumers.kinds[kind].cache.get(namespace, name)

    def models_by_image(self, kind: str, namespace: str, image: str) -> list[dict[str, Any]]:
        """`service_models.ModelsByImage` over the model caches."""
        models = self.consumers.kinds[kind].cache.by_index(MODEL_IMAGE_INDEX, image)
        return [m for m in models if str(metadata(m).get("namespace") or "") == namespace]

    def config_lookup(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        """`resolution.ConfigLookup` over the caches: namespace `""` means the AIMClusterRuntimeConfig."""
        if namespace:
            return self.runtime_configs.cache.get(namespace, name)
        return self.cluster_runtime_configs.cache.get("", name)

    # --- handlers ----------------------------------------------------------------------------------------

    def _enqueue(self, namespace: str, name: str, trigger: Any, lane: Lane) -> None:
        key = WorkKey(self.cluster.name, AIM_SERVICE_KEY, namespace, name)
        self.enqueue(key, lane=lane, trigger=trigger)

    def enqueue_service(self, namespace: str, name: str, trigger: Any, lane: Lane) -> None:
        self._enqueue(namespace, name, trigger, lane)

    def enqueue_services_of_model(self, model: str, namespace: str | None, trigger: Any) -> None:
        """Queue the AIMServices with caching that serve `model` (in `namespace`, or anywhere when None)."""
        for service in self.services.cache.by_index(SERVICE_MODEL_INDEX, model):
            service_ns = str(metadata(service).get("namespace") or "")
            if namespace is None or service_ns == namespace:
                self._enqueue(service_ns, str(metadata(service)["name"]), trigger, Lane.FANOUT)

    def _trigger(self, kind: str, obj: Mapping[str, Any]) -> Any:
        return object_event_context(self.cluster.name, kind, obj)

    def _service_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        made = (str(metadata(obj).get("namespace") or ""), sanitized_label_value(str(metadata(obj)["name"])))
        if event_type == "DELETED":
            # owner references let the API server collect the children; the template caches it made that are not
            # Ready go too (their reconcile deletes them)
            self.deleted_services.add(made)
            self._enqueue_made_caches(obj)
            return
        self.deleted_services.discard(made)
        if event_type == "MODIFIED" and not self_relevant_change(obj, old):
            return  # our own status write
        meta = metadata(obj)
        self._enqueue(
            str(meta.get("namespace") or ""),
            str(meta["name"]),
            self._trigger(AIM_SERVICE_KEY, obj),
            Lane.RESYNC if initial else Lane.EDIT,
        )

    def _config_handler(self, config_kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if initial:
                return  # every service of the initial list is queued anyway
            if event_type == "MODIFIED" and old is not None:
                meta, old_meta = metadata(obj), metadata(old)
                if meta.get("generation") == old_meta.get("generation") and obj.get("spec") == old.get("spec"):
                    return  # a status or metadata edit changes no resolution
            meta = metadata(obj)
            namespace = str(meta.get("namespace") or "")
            name = str(meta["name"])
            trigger = self._trigger(config_kind, obj)
            for service in self.services.cache.by_index(CONFIG_NAME_INDEX, name):
                if config_change_reaches(
                    config_kind, namespace, name, service, operator_namespace=self.operator_namespace
                ):
                    service_meta = metadata(service)
                    service_ns = str(service_meta.get("namespace") or "")
                    self._enqueue(service_ns, str(service_meta["name"]), trigger, Lane.FANOUT)
            for consumers in (self.consumers, self.legacy):
                for kind, consumer in consumers.consumers_named(name):
                    if config_change_reaches(
                        config_kind, namespace, name, consumer, operator_namespace=self.operator_namespace
                    ):
                        consumer_meta = metadata(consumer)
                        namespace_of = str(consumer_meta.get("namespace") or "")
                        consumers.enqueue(kind, namespace_of, str(consumer_meta["name"]), trigger, Lane.FANOUT)

        return on_event

    def _template_handler(self, kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if initial:
                return  # every service of the initial list is queued anyway
            same = old is not None and all(obj.get(part) == old.get(part) for part in ("spec", "status"))
            if event_type == "MODIFIED" and same:
                return  # a metadata edit changes no selection
            meta = metadata(obj)
            namespace = str(meta.get("namespace") or "")
            trigger = self._trigger(kind, obj)
            for service in self.services.cache.by_index(SERVICE_TEMPLATE_INDEX, str(meta["name"])):
                service_meta = metadata(service)
                service_ns = str(service_meta.get("namespace") or "")
                if kind == CLUSTER_SERVICE_TEMPLATE or service_ns == namespace:
                    self._enqueue(service_ns, str(service_meta["name"]), trigger, Lane.FANOUT)
            for model_kind in (AIM_MODEL, AIM_CLUSTER_MODEL):
                models = self.consumers.kinds[model_kind].cache
                for model in models.by_index(MODEL_DEFAULT_TEMPLATE_INDEX, str(meta["name"])):
                    self._enqueue_services_of(model_kind, model, trigger, namespace=namespace, template_kind=kind)
            # a service's derived template (its overrides): the service that owns it
            owner = owning_service(obj) if kind == SERVICE_TEMPLATE else None
            if owner is not None and self.services.cache.get(namespace, owner) is not None:
                self._enqueue(namespace, owner, trigger, Lane.FANOUT)
            # automatic selection: the services whose model the template is for, now or before the change
            model_names = {model_name_index(obj)[0]} if model_name_index(obj) else set()
            if old is not None and model_name_index(old):
                model_names.add(model_name_index(old)[0])
            for model_name in model_names:
                for model_kind, named in self._models_named(model_name, namespace, kind):
                    self._enqueue_services_of(model_kind, named, trigger, namespace=namespace, template_kind=kind)

        return on_event

    def _enqueue_made_caches(self, service: Mapping[str, Any]) -> None:
        meta = metadata(service)
        namespace = str(meta.get("namespace") or "")
        made = sanitized_label_value(str(meta["name"]))
        for cache in self.legacy.kinds[TEMPLATE_CACHE].cache.list(namespace):
            if (metadata(cache).get("labels") or {}).get(SERVICE_NAME_LABEL) == made:
                trigger = self._trigger(AIM_SERVICE_KEY, dict(service))
                self.legacy.enqueue(TEMPLATE_CACHE, namespace, str(metadata(cache)["name"]), trigger, Lane.FANOUT)

    def _template_cache_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial:
            return  # every service of the initial list is queued anyway
        if event_type == "MODIFIED" and old is not None and all(obj.get(p) == old.get(p) for p in ("spec", "status")):
            return  # a metadata edit changes no cache's state
        meta = metadata(obj)
        namespace = str(meta.get("namespace") or "")
        template = str((obj.get("spec") or {}).get("templateName") or "")
        names = {
            str(metadata(service)["name"])
            for service in self.services.cache.by_index(SERVICE_RESOLVED_TEMPLATE_INDEX, template)
            if str(metadata(service).get("namespace") or "") == namespace
        }
        maker = owning_service(obj) or (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if isinstance(maker, str) and self.services.cache.get(namespace, maker) is not None:
            names.add(maker)
        trigger = self._trigger(TEMPLATE_CACHE, obj)
        for name in sorted(names):
            self._enqueue(namespace, name, trigger, Lane.FANOUT)

    def _model_handler(self, kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if initial:
                return  # every service of the initial list is queued anyway
            if event_type == "MODIFIED" and old is not None:
                annotations = metadata(obj).get("annotations") == metadata(old).get("annotations")
                if annotations and all(obj.get(part) == old.get(part) for part in ("spec", "status")):
                    return  # a label or bookkeeping edit changes no resolution
            trigger = self._trigger(kind, obj)
            self._enqueue_services_of(kind, obj, trigger)
            if old is not None and (old.get("spec") or {}).get("image") != (obj.get("spec") or {}).get("image"):
                self._enqueue_services_of(kind, old, trigger)

        return on_event

    def _models_named(self, name: str, namespace: str, template_kind: str) -> list[tuple[str, Mapping[str, Any]]]:
        """The models a template of `template_kind` in `namespace` for model `name` may serve: the AIMClusterModel
        of that name, and the AIMModels of that name (in its namespace; anywhere for a cluster template)."""
        found: list[tuple[str, Mapping[str, Any]]] = []
        cluster_model = self.consumers.kinds[AIM_CLUSTER_MODEL].cache.get("", name)
        if cluster_model is not None:
            found.append((AIM_CLUSTER_MODEL, cluster_model))
        for model in self.consumers.kinds[AIM_MODEL].cache.by_index(MODEL_BY_NAME_INDEX, name):
            if template_kind == CLUSTER_SERVICE_TEMPLATE or str(metadata(model).get("namespace") or "") == namespace:
                found.append((AIM_MODEL, model))
        return found

    def _enqueue_services_of(
        self,
        kind: str,
        model: Mapping[str, Any],
        trigger: Any,
        *,
        namespace: str | None = None,
        template_kind: str | None = None,
    ) -> None:
        """Queue the services that resolve `model` by its name or image: in its namespace for an AIMModel, anywhere
        for an AIMClusterModel; for a template's change (`template_kind`, `namespace`), only where it is visible."""
        meta = metadata(model)
        model_ns = str(meta.get("namespace") or "")
        keys = [f"name:{meta['name']}", *(f"image:{image}" for image in model_image_index(dict(model)))]
        for key in keys:
            for service in self.services.cache.by_index(SERVICE_MODEL_REF_INDEX, key):
                service_meta = metadata(service)
                service_ns = str(service_meta.get("namespace") or "")
                if kind == AIM_MODEL and service_ns != model_ns:
                    continue
                if template_kind is not None and template_kind != CLUSTER_SERVICE_TEMPLATE and service_ns != namespace:
                    continue
                self._enqueue(service_ns, str(service_meta["name"]), trigger, Lane.FANOUT)

    def _child_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if not child_status_changed(event_type, obj, old, initial):
            return
        service = owning_service(obj)
        namespace = str(metadata(obj).get("namespace") or "")
        if service is None or self.services.cache.get(namespace, service) is None:
            return
        # a child changes because the controller wrote it: that follows a rollout, it is no user's edit
        self._enqueue(namespace, service, self._trigger(str(obj.get("kind") or ""), obj), Lane.FANOUT)

    def _predictor_pods_changed(self, namespace: str, inference_service: str, pod: Mapping[str, Any]) -> None:
        isvc = self.inference_services.cache.get(namespace, inference_service)
        service = owning_service(isvc) if isvc is not None else None
        if service is None or self.services.cache.get(namespace, service) is None:
            return
        self._enqueue(namespace, service, self._trigger("Pod", pod), Lane.FANOUT)

    def _autoscaler_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial:
            return  # every service of the initial list is queued anyway
        if event_type == "MODIFIED" and old is not None and all(obj.get(p) == old.get(p) for p in ("spec", "status")):
            return
        service = owning_service(obj)
        namespace = str(metadata(obj).get("namespace") or "")
        if service is None or self.services.cache.get(namespace, service) is None:
            return
        self._enqueue(namespace, service, self._trigger("HorizontalPodAutoscaler", obj), Lane.FANOUT)
