"""The AIMService reconciler: resolve the runtime config, apply the children, roll the status up.

One reconcile of an AIMService:

1. Resolve its runtime config from the informer caches (`omectl.core.aim.resolution.resolve`; the operator
   namespace is `AIM_SYSTEM_NAMESPACE`, default `aim-system`), and record a `merge` span with the layers and the
   provenance of every leaf.
2. An explicit `runtimeConfigName` that does not exist: status `Failed`, `RuntimeConfigReady=False` and
   `ConfigValid=False` (reason `ReferenceNotFound`), a Warning event, nothing applied, and `RetryLater` (backoff;
   the config's creation queues the service at once, see `aim_watch`).
3. The implicit `default` missing: `RuntimeConfigReady=True` / `DefaultConfigNotFound`, and one Normal event on the
   first reconcile that finds it missing only. A service that names no model (the CRD allows one without a spec)
   and carries no inline custom model: status `Failed`, `ModelReady=False` / `ModelNotFound` (upstream's reason
   and message), one Warning event, nothing applied and nothing retried.
   A service written in v1alpha1 that selects a template by name (`spec.template.name`, carried in its annotation):
   the template (`omectl.core.aim.service_templates.select_template`; the `Template` component, condition
   `TemplateReady`). Missing: status `Failed`, `TemplateReady=False` / `TemplateNotFound`, `ConfigValid` and
   `Ready` False / `ReferenceNotFound`, one Warning event, nothing applied (the template's creation queues the
   service, see `aim_watch`). Not Ready: the service waits (`Pending`, or `Failed` for a failed template, reason
   `TemplateNotReady`, a Warning event when it is Failed or NotAvailable); the PVC, cache and InferenceService are
   not applied (an existing InferenceService is left as it is and reported), routing is, as upstream plans it.
   Ready: `status.resolvedTemplate`, and the template's env on the inference container (`core.aim.env`). A
   service whose `spec.overrides` derive a template from a Ready namespaced base applies that derived template
   (owned by the service, its labels propagated) and selects it instead (`service_templates`, "Its derived
   template"): it waits for it, reports it and serves it. A
   service that names no template selects its model's `defaultServiceTemplate` (a model written in v1alpha1) alike,
   else upstream's automatic choice among the model's templates (`core.aim.template_selection`; none found or an
   ambiguous choice: `Pending`, and it waits as for a template that is not Ready).
   The model (`omectl.core.aim.service_models.resolve_model`: by name in the namespace then the cluster, or by
   image), when found: the `Model` component (condition `ModelReady`) and, while it is Ready,
   `status.resolvedModel`. A model that is not Ready holds the service (`Pending`, or `Failed` for a failed model)
   as upstream does: no InferenceService is created until it is Ready (one already there is still updated). A
   service written in v1alpha1 naming an image no model has creates its AIMModel (`core.aim.image_models`: shared,
   unowned, the service's matching labels propagated) and waits for it (`CreatingModel`); one with an inline
   custom model (`spec.model.custom`, carried in its annotation) finds the AIMModel of its namespace that matches it
   or creates one (`core.aim.custom_models`: upstream's deduplication, name and labels, unowned), waits for it
   alike, then goes on as for a model it names (serving the model's image); one naming a model by
   name that does not exist is `Failed`, `ModelReady=False` / `ModelNotFound` (`service_models.model_not_found`),
   and one whose model has no template at all waits (`TemplateReady=False` / `TemplateNotFound`), as upstream's.
4. Apply the KServe InferenceService, the model-cache PVC when `spec.storage.size` asks for one, and the HTTPRoute
   when routing is enabled and its path renders. Labels are propagated from the service
   (`omectl.core.aim.labels`): keys we propagated before are read from the live child's annotation, so a label the
   service drops is removed; the child's own labels are never touched. Every applied object carries the hash of
   its render (`omectl.io/render-hash`), so an unchanged render makes no API write. A routing error
   (`PathTemplateInvalid`, `GatewayNotConfigured`, `RequestTimeoutInvalid`) leaves an existing HTTPRoute alone and
   creates none; routing disabled deletes the HTTPRoute this service owns.
5. Status (`omectl.core.aim.status.roll_up`): `status.status`, the conditions (`RuntimeConfigReady`,
   `InferenceServiceReady`, `InferenceServicePodsReady` while there is an InferenceService
   (`omectl.core.aim.predictor_pods`: `NoPods` before its predictor pods exist, `Pending` / `FailedScheduling` for
   pods the scheduler cannot place),
   `HTTPRouteReady` when routing is enabled, `HPAReady` for an autoscaled service (KEDA's HPA, upstream's
   `core.aim.autoscaling.hpa_component`), `ConfigValid` when it is or was False, `Ready`; each keeps its
   `lastTransitionTime` while its status is unchanged), `resolvedRuntimeConfig` (absent when nothing resolved),
   `runtime` (from KEDA's HPA `keda-hpa-<name>-predictor` when there is one), `routing.path` (absent unless a path
   rendered), `observedGeneration`. An unchanged status sends no write.
6. A child write (step 3 or 4) that fails with a server error, a throttle or no answer (`reachability.child_write`):
   the previous status is written with `DependenciesReachable` False (`Failed to apply resources: ...`), and the error
   is raised on (the work queue's backoff); a later status with none has it True / `Reachable`
   (`reachability.with_recovery`), as upstream's pipeline handles a failed apply. A failed write of the status itself
   is raised on as it is.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NoReturn

from omectl.controller.aim.caching import cache_artifacts, service_profile
from omectl.controller.aim.reachability import ChildWriteFailed, child_write, failed_write_status, with_recovery
from omectl.controller.aim.service_caches import plan_template_cache
from omectl.controller.aim.watch import AimWatch
from omectl.controller.runtime.apply import apply_render, live_object
from omectl.controller.runtime.queue import RetryLater
from omectl.controller.runtime.view import ClusterView
from omectl.core.aim import custom_models
from omectl.core.aim.artifacts import mount_artifacts
from omectl.core.aim.autoscaling import HPA_READY, hpa_component, keda_hpa_name, runtime_status
from omectl.core.aim.caches import render_profile_cache
from omectl.core.aim.image_models import (
    creating_component,
    generated_model_name,
    image_to_create,
    invalid_image_component,
    render_image_model,
)
from omectl.core.aim.kserve import names_model, render_inference_service, render_model_cache_pvc
from omectl.core.aim.labels import PROPAGATED_LABELS_ANNOTATION, propagate_to_object, read_propagated_keys
from omectl.core.aim.legacy.service_caches import CACHE_READY
from omectl.core.aim.legacy.service_caches import cache_ref as cache_reference
from omectl.core.aim.meta import AIM_SERVICE_KIND, name_of
from omectl.core.aim.predictor_pods import INFERENCE_SERVICE_PODS_READY
from omectl.core.aim.reachability import DEPENDENCIES_REACHABLE
from omectl.core.aim.resolution import (
    CONFIG_VALID,
    DEFAULT_MISSING,
    DEFAULT_OPERATOR_NAMESPACE,
    RUNTIME_CONFIG_READY,
    Resolution,
    default_missing_event_due,
    resolve,
)
from omectl.core.aim.routing import RoutingPlan, plan_routing
from omectl.core.aim.service_models import model_not_found, resolve_model
from omectl.core.aim.service_templates import TEMPLATE_READY, TemplateSelection, select_template
from omectl.core.aim.status import (
    HTTP_ROUTE_READY,
    INFERENCE_SERVICE_READY,
    MODEL_READY,
    READY,
    Component,
    RollUp,
    http_route_component,
    inference_service_component,
    no_model_component,
    roll_up,
    runtime_config_component,
    runtime_config_error,
)
from omectl.core.conditions import by_type, stamped
from omectl.kube import timestamps
from omectl.kube.errors import Invalid, NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import (
    AIM_MODELS,
    AIM_PROFILE_CACHES,
    AIM_SERVICE_TEMPLATES,
    AIM_SERVICES,
    AIM_TEMPLATE_CACHES,
    HTTP_ROUTES,
    KSERVE_INFERENCE_SERVICES,
    PERSISTENT_VOLUME_CLAIMS,
    ResourceRef,
)
from omectl.kube.writer import cache_behind_own_write, write_status
from omectl.tracing.spans import merge_span

log = logging.getLogger(__name__)

AIM_SERVICE_API_VERSION: Final = f"{AIM_SERVICES.group}/{AIM_SERVICES.version}"
OWN_CONDITIONS: Final = frozenset(
    {
        RUNTIME_CONFIG_READY,
        MODEL_READY,
        TEMPLATE_READY,
        INFERENCE_SERVICE_READY,
        INFERENCE_SERVICE_PODS_READY,
        CACHE_READY,
        HPA_READY,
        HTTP_ROUTE_READY,
        CONFIG_VALID,
        DEPENDENCIES_REACHABLE,
        READY,
    }
)
"""Condition types the reconciler owns: rewritten every reconcile; others on the status are kept."""
PVC_NOT_UPDATED: Final = "ModelCachePVCNotUpdated"
_RESOURCES: Final = {
    "InferenceService": KSERVE_INFERENCE_SERVICES,
    "HTTPRoute": HTTP_ROUTES,
    "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIMS,
    "AIMProfileCache": AIM_PROFILE_CACHES,
    "AIMTemplateCache": AIM_TEMPLATE_CACHES,
    "AIMServiceTemplate": AIM_SERVICE_TEMPLATES,
}


def stamp_conditions(
    wanted: Sequence[Mapping[str, Any]], previous: list[Any], now: str | None = None
) -> list[dict[str, Any]]:
    """`wanted` with `lastTransitionTime`: kept from the previous condition of that type while its status is the
    same, else now; the previous conditions of types we do not own come first, unchanged."""
    now = now or timestamps.now()
    prior = by_type(previous)
    conditions: list[dict[str, Any]] = [
        dict(c) for c in previous if isinstance(c, Mapping) and c.get("type") not in OWN_CONDITIONS
    ]
    for condition in wanted:
        before = prior.get(condition["type"])
        conditions.append(stamped(condition, before, now))
    return conditions


def desired_status(
    live: Mapping[str, Any],
    rolled: RollUp,
    resolution: Resolution,
    path: str | None,
    resolved_template: Mapping[str, Any] | None = None,
    resolved_model: Mapping[str, Any] | None = None,
    cache_ref: Mapping[str, Any] | None = None,
    hpa: Mapping[str, Any] | None = None,
) -> dict[str, Any] | None:
    """The AIMService's status for this outcome, or None when the live status already says it (`hpa`: KEDA's, for
    `status.runtime`)."""
    status = dict(live.get("status") or {})
    conditions = status.get("conditions")
    previous: list[Any] = conditions if isinstance(conditions, list) else []
    desired: dict[str, Any] = dict(
        status,
        status=rolled.status,
        conditions=stamp_conditions(with_recovery(list(rolled.conditions), previous), previous),
        observedGeneration=(live.get("metadata") or {}).get("generation", 0),
    )
    if resolution.resolved_ref is not None:
        desired["resolvedRuntimeConfig"] = dict(resolution.resolved_ref)
    else:
        desired.pop("resolvedRuntimeConfig", None)
    for key, ref in (("resolvedTemplate", resolved_template), ("resolvedModel", resolved_model)):
        if ref is not None:
            desired[key] = dict(ref)
        else:
            desired.pop(key, None)
    cache = dict(status.get("cache") or {})
    if cache_ref is not None:
        cache["templateCacheRef"] = dict(cache_ref)
    else:
        cache.pop("templateCacheRef", None)
    if cache:
        desired["cache"] = cache
    else:
        desired.pop("cache", None)
    routing = dict(status.get("routing") or {})
    if path is not None:
        routing["path"] = path
    else:
        routing.pop("path", None)
    if routing:
        desired["routing"] = routing
    else:
        desired.pop("routing", None)
    desired["runtime"] = runtime_status(live, hpa)
    return None if desired == status else desired


def with_propagated_labels(
    service: Mapping[str, Any], rendered: Mapping[str, Any], live: Mapping[str, Any] | None, config: Mapping[str, Any]
) -> dict[str, Any]:
    """`rendered` with the service's labels propagated onto it, as it is to be applied.

    The keys propagated last time come from the live child's annotation, so a label the service dropped (or that
    stopped matching) leaves the applied object, and server-side apply removes it from the child. A label the live
    child carries that neither we render nor we propagated is the child's own: it is never overwritten, and it is
    not part of what we apply (so its owner keeps it)."""
    live_meta = (live or {}).get("metadata") or {}
    previous = read_propagated_keys(live) if live is not None else frozenset()
    rendered_meta = dict(rendered.get("metadata") or {})
    # a render that propagated already (the v1alpha2 renders do, as on creation) is taken back to its own labels,
    # so a label the live child set itself is not overwritten by the render's copy of the parent's
    in_render = read_propagated_keys(rendered)
    rendered_labels = {k: v for k, v in (rendered_meta.get("labels") or {}).items() if k not in in_render}
    foreign = {
        k: v for k, v in (live_meta.get("labels") or {}).items() if k not in previous and k not in rendered_labels
    }
    annotations = dict(rendered_meta.get("annotations") or {})
    annotations.pop(PROPAGATED_LABELS_ANNOTATION, None)
    if previous:
        annotations[PROPAGATED_LABELS_ANNOTATION] = ",".join(sorted(previous))
    probe = dict(rendered, metadata=dict(rendered_meta, labels={**foreign, **rendered_labels}, annotations=annotations))
    out = propagate_to_object(service, probe, config)
    meta = dict(out["metadata"])
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in foreign}
    if labels:
        meta["labels"] = labels
    else:
        meta.pop("labels", None)
    out["metadata"] = meta
    return out


async def apply_propagated(
    cluster: ClusterView,
    parent: Mapping[str, Any],
    rendered: dict[str, Any],
    live: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    resource: ResourceRef,
    *,
    tolerate_invalid: bool = False,
) -> tuple[Mapping[str, Any] | None, bool]:
    """One child of an AIM object (an AIMService's or another consumer's) server-side applied with the parent's labels
    propagated against `live`, unless the cluster holds this render: (the live or written object, written).

    `tolerate_invalid`: a child whose change the API server refuses (a bound claim's spec is mostly immutable) is
    kept as it is, with a Warning event on the parent saying why it differs."""
    obj = with_propagated_labels(parent, rendered, live, config)
    try:
        return await apply_render(cluster.client, resource, obj, live, field_manager=FIELD_MANAGER)
    except Invalid as exc:
        if not tolerate_invalid:
            raise
        name = rendered["metadata"]["name"]
        cluster.record_event(dict(parent), "Warning", PVC_NOT_UPDATED, f"{rendered['kind']} {name}: {exc}")
        return live, False


class ConfigEvents:
    """The runtime-config events of an AIM consumer: a Warning on every reconcile while an explicit config is
    missing, and one Normal `DefaultConfigNotFound` on its first reconcile only (also remembered here, since the
    status that records it may lag the event)."""

    def __init__(self) -> None:
        self._default_sent: set[tuple[str, str]] = set()

    @staticmethod
    def refuse(cluster: ClusterView, obj: Mapping[str, Any], resolution: Resolution) -> NoReturn:
        """Record the missing explicit config and retry later: nothing is applied meanwhile."""
        if resolution.event is not None:
            cluster.record_event(obj, resolution.event.type, resolution.event.reason, resolution.event.message)
        raise RetryLater(resolution.event.message if resolution.event else "runtime config not found")

    def note_default(
        self, cluster: ClusterView, obj: Mapping[str, Any], resolution: Resolution, previous: Any, key: tuple[str, str]
    ) -> None:
        if resolution.outcome != DEFAULT_MISSING:
            self._default_sent.discard(key)
            return
        if default_missing_event_due(resolution, previous) and key not in self._default_sent:
            assert resolution.event is not None
            cluster.record_event(obj, resolution.event.type, resolution.event.reason, resolution.event.message)
        self._default_sent.add(key)


class AimServiceReconciler:
    def __init__(self, *, operator_namespace: str | None = None) -> None:
        self.operator_namespace = operator_namespace or DEFAULT_OPERATOR_NAMESPACE  # the setting aim_system_namespace
        self.writes = 0
        self.reconciles: Counter[tuple[str, str, str]] = Counter()
        """Reconciles per (cluster, namespace, name): tests check that a config change reaches exactly its services."""
        self.config_events = ConfigEvents()

    def watch(self, cluster: ClusterView) -> AimWatch:
        return AimWatch(cluster, operator_namespace=self.operator_namespace)

    async def reconcile(self, cluster: AimWatch, service: dict[str, Any], tracer: Any = None) -> None:
        try:
            await self._reconcile(cluster, service, tracer)
        except ChildWriteFailed as failed:
            # upstream's failed apply: the status as it was, DependenciesReachable False; retried with the queue's
            # backoff (a server's Retry-After honoured)
            await self._write_failed(cluster, service, failed.error)
            raise failed.error from None

    async def _reconcile(self, cluster: AimWatch, service: dict[str, Any], tracer: Any) -> None:
        meta = service["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        self.reconciles[(cluster.name, namespace, name)] += 1
        # list items may lack apiVersion/kind; owner references and events need them
        service = dict(service, apiVersion=service.get("apiVersion") or AIM_SERVICE_API_VERSION)
        service["kind"] = service.get("kind") or AIM_SERVICE_KIND
        resolution = resolve(service, cluster.config_lookup, operator_namespace=self.operator_namespace)
        if tracer is not None:
            self._record_span(tracer, resolution, namespace, name)
        previous = (service.get("status") or {}).get("conditions") or []
        config_error = runtime_config_error(resolution)
        components: list[Component] = [runtime_config_component(resolution)]

        if not resolution.may_apply:
            rolled = roll_up(components, config_error=config_error, previous_conditions=previous)
            await self._write_status(cluster, service, rolled, resolution, None)
            self.config_events.refuse(cluster, service, resolution)

        event_key = (cluster.name, str(meta.get("uid") or f"{namespace}/{name}"))
        self.config_events.note_default(cluster, service, resolution, previous, event_key)

        custom = custom_models.custom_spec(service)
        if not names_model(service) and custom is None:
            # an invalid spec (the CRD allows a service without one): Failed and one Warning event until a model is
            # named, nothing applied, nothing to retry
            model = no_model_component()
            rolled = roll_up([*components, model], config_error=config_error, previous_conditions=previous)
            if by_type(previous).get(MODEL_READY, {}).get("reason") != model.reason:
                cluster.record_event(service, "Warning", model.reason, model.message)
            await self._write_status(cluster, service, rolled, resolution, None)
            return

        config = resolution.config
        # the model (reported, waited for by nothing) and the template it names when the service names none
        found = resolve_model(service, cluster.model_lookup, cluster.models_by_image)
        if found is None and custom is not None:
            found = custom_models.resolve_custom_model(service, custom, cluster.models_by_image)
        resolved_model = found.resolved_ref() if found is not None else None
        if found is not None:
            components.append(found.component)
        elif custom is not None:
            # v1alpha1's inline custom model: the service creates the model and waits for it (its creation queues us)
            components.append(await self._create_custom_model(cluster, service, custom, config))
            await self._hold(cluster, service, components, resolution, previous, None, None)
            return
        elif (image := image_to_create(service)) is not None:
            # v1alpha1's image path: the service creates the model and waits for it (its creation queues us)
            components.append(await self._create_image_model(cluster, service, image, config))
            await self._hold(cluster, service, components, resolution, previous, None, None)
            return
        elif (missing := model_not_found(service)) is not None:
            # v1alpha1: a model named that does not exist fails the service until it appears (its creation queues us)
            components.append(missing)
            await self._hold(cluster, service, components, resolution, previous, None, None)
            return
        selection = select_template(
            service,
            cluster.template_lookup,
            found.default_template if found is not None else None,
            model_name=name_of(found.model) if found is not None else None,
            templates=cluster.templates_for_model,
            gpu_models=cluster.gpu_models,
        )
        if selection is not None and selection.derive is not None:
            # the service's overrides: its derived template applied (owned by it) and selected instead of the base
            derived = await self._apply_child(cluster, service, selection.derive, config)
            selection = selection.derived(derived if derived is not None else selection.derive)
        template: Mapping[str, Any] | None = None
        resolved_template: Mapping[str, Any] | None = None
        if selection is not None:
            components.append(selection.component)
            self._template_event(cluster, service, selection, previous)
            if selection.config_error is not None:
                # a missing template: Failed, nothing applied, until it appears (its creation queues the service)
                rolled = roll_up(components, config_error=selection.config_error, previous_conditions=previous)
                await self._write_status(cluster, service, rolled, resolution, None, None, resolved_model)
                return
            template, resolved_template = selection.template, selection.resolved_ref()
        held = selection is not None and not selection.ready
        if not held and found is not None and not found.ready:
            # a model that is not Ready holds the InferenceService's creation; one already there is updated
            held = await self._live(cluster, KSERVE_INFERENCE_SERVICES, namespace, name) is None
        if held:
            await self._hold(cluster, service, components, resolution, previous, resolved_template, resolved_model)
            return
        pvc = render_model_cache_pvc(service, config)
        if pvc is not None:
            await self._apply_child(cluster, service, pvc, config, tolerate_invalid=True)
        # caching (aim_caching): the service's profile, its AIMProfileCache, and the cache's Ready artifacts mounted
        profile = service_profile(cluster, service)
        artifacts: list[dict[str, Any]] = []
        if profile is not None:
            cache = render_profile_cache(service, profile, config)
            if cache is not None:
                await self._apply_child(cluster, service, cache, config)
                artifacts = cache_artifacts(cluster, service, profile)
        # the template cache (aim_service_caches): made, waited for before the InferenceService exists, mounted
        cached = None
        if selection is not None:
            cached = await plan_template_cache(cluster, service, selection, config, self._apply_child)
        # a service with a custom model names no image: it serves its model's (the custom base image); one on
        # upstream's template path (written in v1alpha1) serves its resolved model's image, as upstream does
        on_model = found is not None and (custom is not None or selection is not None)
        image = custom_models.serving_image(found.model) if found is not None and on_model else None
        rendered = render_inference_service(service, config, profile=profile, resolved_image=image, template=template)
        rendered_isvc = mount_artifacts(rendered, artifacts)
        if cached is not None:
            rendered_isvc = cached.mounted(rendered_isvc)
        isvc: Mapping[str, Any] | None = None
        if cached is None or cached.inference_service_due:
            isvc = await self._apply_child(cluster, service, rendered_isvc, config)
            components.append(inference_service_component(isvc))
            await self._pods(cluster, isvc, components)
        if cached is not None:
            components.append(cached.component)
        plan = plan_routing(service, config)
        route_component = await self._route(cluster, service, plan, config)
        if route_component is not None:
            components.append(route_component)
        self._scaling(cluster, service, isvc, components)
        rolled = roll_up(components, config_error=config_error, previous_conditions=previous)
        path = plan.path if plan.route is not None else None
        cache_ref = cache_reference(cached.cache) if cached is not None else None
        await self._write_status(
            cluster, service, rolled, resolution, path, resolved_template, resolved_model, cache_ref
        )

    # --- the model ---------------------------------------------------------------------------------------

    async def _create_image_model(
        self, cluster: AimWatch, service: Mapping[str, Any], image: str, config: Mapping[str, Any]
    ) -> Component:
        """Create the AIMModel of `image` (`core.aim.image_models`): the `Model` component while it is created, or
        Failed for an image reference that names no model."""
        try:
            name = generated_model_name(image)
        except ValueError as exc:
            return invalid_image_component(image, exc)
        model = render_image_model(service, image, name, config)
        with child_write():
            _, wrote = await apply_render(cluster.client, AIM_MODELS, model, None, field_manager=FIELD_MANAGER)
        self.writes += wrote
        return creating_component(image)

    async def _create_custom_model(
        self, cluster: AimWatch, service: Mapping[str, Any], custom: Mapping[str, Any], config: Mapping[str, Any]
    ) -> Component:
        """Create the AIMModel of the service's inline custom model: the `Model` component while it is created."""
        name = custom_models.custom_model_name(custom)
        model = custom_models.render_custom_model(service, custom, name, config)
        with child_write():
            _, wrote = await apply_render(cluster.client, AIM_MODELS, model, None, field_manager=FIELD_MANAGER)
        self.writes += wrote
        return custom_models.creating_component(custom)

    # --- the template ------------------------------------------------------------------------------------

    async def _hold(
        self,
        cluster: AimWatch,
        service: Mapping[str, Any],
        components: list[Component],
        resolution: Resolution,
        previous: list[Any],
        resolved_template: Mapping[str, Any] | None,
        resolved_model: Mapping[str, Any] | None,
    ) -> None:
        """A selected template that is not Ready (or an automatic selection that found none), or a model that is not
        Ready while no InferenceService exists: the InferenceService waits (an existing one is left as it is and
        reported), routing goes on, as upstream plans it."""
        meta = service["metadata"]
        live = await self._live(cluster, KSERVE_INFERENCE_SERVICES, meta.get("namespace", ""), meta["name"])
        if live is not None:
            components.append(inference_service_component(live))
            await self._pods(cluster, live, components)
        plan = plan_routing(service, resolution.config)
        route_component = await self._route(cluster, service, plan, resolution.config)
        if route_component is not None:
            components.append(route_component)
        self._scaling(cluster, service, live, components)
        rolled = roll_up(components, previous_conditions=previous)
        path = plan.path if plan.route is not None else None
        await self._write_status(cluster, service, rolled, resolution, path, resolved_template, resolved_model)

    @staticmethod
    def _template_event(
        cluster: AimWatch, service: Mapping[str, Any], selection: TemplateSelection, previous: list[Any]
    ) -> None:
        """One Warning event when the template goes missing, failed or not available (or says why anew)."""
        component = selection.component
        if component.state not in ("Failed", "NotAvailable"):
            return
        before = by_type(previous).get(TEMPLATE_READY, {})
        if (before.get("reason"), before.get("message")) != (component.reason, component.message):
            cluster.record_event(service, "Warning", component.reason, component.message)

    # --- children ----------------------------------------------------------------------------------------

    @staticmethod
    def _autoscaler(cluster: AimWatch, service: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """KEDA's HPA of the service's InferenceService (named after the service), from the cache."""
        meta = service["metadata"]
        return cluster.autoscalers.cache.get(meta.get("namespace") or "", keda_hpa_name(meta["name"]))

    def _scaling(
        self,
        cluster: AimWatch,
        service: Mapping[str, Any],
        isvc: Mapping[str, Any] | None,
        components: list[Component],
    ) -> None:
        """Upstream's `HPA` component of an autoscaled service (`HPAReady`)."""
        serving = inference_service_component(isvc).state == "Ready" if isvc is not None else False
        hpa = self._autoscaler(cluster, service) if isvc is not None else None
        component = hpa_component(service, hpa, serving)
        if component is not None:
            components.append(component)

    @staticmethod
    async def _pods(cluster: AimWatch, isvc: Mapping[str, Any] | None, components: list[Component]) -> None:
        """The `InferenceServicePods` component of the InferenceService's predictor pods (`NoPods` without any)."""
        if isvc is None:
            return
        meta = isvc.get("metadata") or {}
        components.append(
            await cluster.predictor_pods.component(str(meta.get("namespace") or ""), str(meta.get("name")))
        )

    async def _route(
        self, cluster: AimWatch, service: Mapping[str, Any], plan: RoutingPlan, config: Mapping[str, Any]
    ) -> Component | None:
        meta = service["metadata"]
        if not plan.enabled:
            live = await self._live(cluster, HTTP_ROUTES, meta.get("namespace", ""), meta["name"])
            if live is not None and _owned_by(live, service):
                await self._delete(cluster, HTTP_ROUTES, meta.get("namespace", ""), meta["name"])
            return None
        if plan.route is None:
            return http_route_component(plan, None)  # the error; an existing route is left as it is
        route = await self._apply_child(cluster, service, plan.route, config)
        return http_route_component(plan, route)

    async def _apply_child(
        self,
        cluster: AimWatch,
        service: Mapping[str, Any],
        rendered: dict[str, Any],
        config: Mapping[str, Any],
        *,
        tolerate_invalid: bool = False,
    ) -> Mapping[str, Any] | None:
        """Apply one child with propagated labels unless the cluster holds this render; returns the live object."""
        resource = _RESOURCES[rendered["kind"]]
        meta = rendered["metadata"]
        namespace = meta.get("namespace", "")
        live = await self._live(cluster, resource, namespace, meta["name"])
        with child_write():
            applied, wrote = await apply_propagated(
                cluster, service, rendered, live, config, resource, tolerate_invalid=tolerate_invalid
            )
        self.writes += wrote
        return applied

    async def _live(
        self, cluster: AimWatch, resource: ResourceRef, namespace: str, name: str
    ) -> Mapping[str, Any] | None:
        return await live_object(cluster.client, resource, cluster.child_cache(resource.kind), namespace, name)

    async def _delete(self, cluster: AimWatch, resource: ResourceRef, namespace: str, name: str) -> None:
        try:
            with child_write():
                await cluster.client.request("DELETE", resource.path(namespace or None, name))
            self.writes += 1
        except NotFound:
            pass

    # --- status ------------------------------------------------------------------------------------------

    async def _write_status(
        self,
        cluster: AimWatch,
        service: Mapping[str, Any],
        rolled: RollUp,
        resolution: Resolution,
        path: str | None,
        resolved_template: Mapping[str, Any] | None = None,
        resolved_model: Mapping[str, Any] | None = None,
        cache_ref: Mapping[str, Any] | None = None,
    ) -> None:
        refs = (resolved_template, resolved_model, cache_ref)
        hpa = self._autoscaler(cluster, service)
        await _put_status(cluster, service, lambda live: desired_status(live, rolled, resolution, path, *refs, hpa))

    async def _write_failed(self, cluster: AimWatch, service: Mapping[str, Any], error: BaseException) -> None:
        """The status after a child write failed: as it was, with `DependenciesReachable` False."""
        now = timestamps.now()
        await _put_status(cluster, service, lambda live: failed_write_status(live, error, now))

    @staticmethod
    def _record_span(tracer: Any, resolution: Resolution, namespace: str, name: str) -> None:
        """One `merge` span per resolution: the layers (lowest first), how many leaves each set, the provenance."""
        counts = Counter(resolution.provenance.values())
        ref = resolution.resolved_ref or {}
        with merge_span(
            tracer,
            chain=list(resolution.layers),
            cache_hit=False,
            layer_fields={layer: counts.get(layer, 0) for layer in resolution.layers},
            provenance=resolution.provenance,
            runtime_kind=ref.get("kind") or None,
            runtime_namespace=ref.get("namespace") or None,
            runtime_name=ref.get("name") or resolution.name,
        ) as span:
            span.set_attribute("omectl.aim.outcome", resolution.outcome)
            span.set_attribute("omectl.aim.service", f"{namespace}/{name}")


def _owned_by(child: Mapping[str, Any], service: Mapping[str, Any]) -> bool:
    uid = (service.get("metadata") or {}).get("uid")
    return any(
        isinstance(ref, Mapping) and ref.get("kind") == AIM_SERVICE_KIND and ref.get("uid") == uid
        for ref in (child.get("metadata") or {}).get("ownerReferences") or []
    )


async def _put_status(
    cluster: AimWatch, service: Mapping[str, Any], desired: Callable[[Mapping[str, Any]], dict[str, Any] | None]
) -> None:
    """Write `desired(live)` as the service's status: nothing when the informer's copy already has it (and is not
    older than this process's last status write of it), else one PUT."""
    meta = service["metadata"]
    namespace, name = meta.get("namespace") or None, meta["name"]
    if desired(service) is None and not cache_behind_own_write(cluster.client, AIM_SERVICES, namespace, name, service):
        return
    await write_status(
        cluster.client, AIM_SERVICES, namespace, name, desired, field_manager=FIELD_MANAGER, cached=service
    )
