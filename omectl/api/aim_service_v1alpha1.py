"""Upstream AIM Engine's v1alpha1 AIMService schema, served beside omectl's v1alpha2 (docs/aim-versions.md).

Field for field upstream's CRD at the commit pinned in tests/fixtures/upstream/aim/SOURCE (its defaults, enums,
patterns, required fields and CEL rules: model exactly-one-of name, image or custom; model, caching, template and the
overrides immutable), so upstream's YAML applies unchanged. v1alpha2 (`omectl.api.aim.AIMService`) is the storage
version, the one the controller reconciles; the API server converts between the two through the controller's
conversion webhook (`omectl.webhook.conversion`, with the rules of `omectl.core.aim.versions.service`).

The pieces upstream's service shares with its templates (hardware, metric, precision, model sources) are
`omectl.api.aim`'s legacy types; like the other v1alpha1 schemas (`omectl.api.aim_shared_v1alpha1`) these carry
upstream's schema defaults.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field, model_validator

from omectl.api import ome
from omectl.api.aim import (
    CACHING_IMMUTABLE,
    GATEWAY_GROUP_PATTERN,
    GATEWAY_KIND_PATTERN,
    GPU_OR_CPU,
    INT32,
    MODEL_IMMUTABLE,
    AimLocalObjectReference,
    EnvList,
    GatewayRef,
    LegacyModelSource,
    LegacyResolvedReference,
    MetaConditionList,
    Metric,
    Precision,
    RoutingConfig,
    ServiceRuntimeStatus,
    StorageConfig,
    TemplateHardware,
    _AIMResource,
    _Object,
    immutable,
    immutable_rule,
)
from omectl.api.aim_shared_v1alpha1 import INT64
from omectl.api.ome import ResourceRequirements

MODEL_EXACTLY_ONE: Final[dict[str, Any]] = {
    "rule": "(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) + (has(self.custom) ? 1 : 0) == 1",
    "message": "exactly one of name, image, or custom must be specified",
}
"""Upstream's exactly-one-of rule on `spec.model`, word for word (v1alpha2's counts name and image alone)."""
MODEL_SOURCE_GIVEN: Final[dict[str, Any]] = {
    "rule": "size(self.modelSources) >= 1",
    "message": "at least one model source must be specified",
}
TEMPLATE_IMMUTABLE: Final = "template selection is immutable after creation"
DEFAULT_GATEWAY_GROUP: Final = "gateway.networking.k8s.io"
DEFAULT_GATEWAY_KIND: Final = "Gateway"
DEFAULT_PVC_HEADROOM_PERCENT: Final = 10


def _default(value: Any, **constraints: Any) -> Any:
    """A constrained field whose default is also the CRD's (upstream's schema default)."""
    extra = dict(constraints.pop("json_schema_extra", {}))
    return Field(default=value, **constraints, json_schema_extra={**extra, ome.CRD_DEFAULT_MARK: True})


# ---------------------------------------------------------------------------------------------------------
# spec.model


class CustomModel(_Object):
    """A model built inline from a base image and its files (upstream creates an AIMModel and a template of it)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [MODEL_SOURCE_GIVEN]})

    base_image: str
    """The AIM base image that serves the files."""
    model_sources: list[LegacyModelSource] = Field(min_length=1, max_length=1)
    """The model's files (exactly one source)."""
    hardware: TemplateHardware
    """GPUs, or CPU alone, per replica."""


class ServiceModel(_Object):
    """The model a service serves: exactly one of name, image and custom, fixed once the service exists."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [MODEL_EXACTLY_ONE, MODEL_IMMUTABLE]})

    name: str | None = None
    """Name of an AIMModel in the namespace or of an AIMClusterModel."""
    image: str | None = None
    """Container image of an AIM model; upstream finds or creates its AIMModel."""
    custom: CustomModel | None = None
    """An inline custom model (no v1alpha2 counterpart)."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ServiceModel:
        if sum(value is not None for value in (self.name, self.image, self.custom)) != 1:
            raise ValueError("exactly one of model.name, model.image and model.custom must be set")
        return self


# ---------------------------------------------------------------------------------------------------------
# template, caching, overrides


class ServiceTemplateSelection(_Object):
    """Which AIMServiceTemplate / AIMClusterServiceTemplate serves the model; fixed once the service exists."""

    model_config = ConfigDict(json_schema_extra=immutable(TEMPLATE_IMMUTABLE))

    name: str | None = None
    """The template by name; upstream selects one from the model's templates when unset."""
    allow_unoptimized: bool | None = None
    """Let the automatic selection pick a template with an unoptimized profile."""


class ServiceCaching(_Object):
    """Caching of the model files; immutable once the service exists."""

    model_config = ConfigDict(json_schema_extra=immutable(CACHING_IMMUTABLE))

    mode: Literal["Dedicated", "Shared", "Auto", "Always", "Never"] = ome.crd_default("Shared")
    """Shared reuses or creates shared cache assets, Dedicated creates the service's own; legacy Always and Auto
    mean Shared, Never means Dedicated."""


class ServiceOverrides(_Object):
    """What the service asks of the template selection over the template's own: each immutable."""

    metric: Annotated[Metric | None, Field(default=None, json_schema_extra=immutable("metric is immutable"))]
    """Optimisation goal: latency or throughput."""
    precision: Annotated[Precision | None, Field(default=None, json_schema_extra=immutable("precision is immutable"))]
    """Numeric precision, e.g. fp8."""
    hardware: Annotated[
        TemplateHardware | None,
        Field(
            default=None,
            json_schema_extra={"x-kubernetes-validations": [immutable_rule("hardware is immutable"), GPU_OR_CPU]},
        ),
    ]
    """GPUs, or CPU alone, per replica."""


# ---------------------------------------------------------------------------------------------------------
# autoscaling (KEDA)


class PodMetric(_Object):
    """Which per-pod metrics to collect and how to query them."""

    backend: Literal["opentelemetry"] = ome.crd_default("opentelemetry")
    """The metrics backend."""
    server_address: str | None = None
    """Address of the backend; keda-otel-scaler.keda.svc:4317 for OpenTelemetry when unset."""
    metric_names: list[str] | None = None
    """Metrics to collect from the pods, e.g. vllm:num_requests_running."""
    query: str | None = None
    """The backend's query for the metric."""
    operation_over_time: str | None = None
    """Aggregation over time: last_one (the default), avg, max, min, rate or count."""


class MetricTarget(_Object):
    """The value the autoscaler keeps the metric at."""

    type: Literal["Value", "AverageValue", "Utilization"]
    """Which of the values below is the target."""
    value: str | None = None
    """An absolute value (a quantity)."""
    average_value: str | None = None
    """The average across pods (a quantity)."""
    average_utilization: int | None = Field(default=None, json_schema_extra=INT32)
    """Percent of the requested resource, across pods."""


class PodMetricSource(_Object):
    """A metric describing each pod of the scale target."""

    metric: PodMetric
    """The metric and its backend."""
    target: MetricTarget
    """Its target."""


class ServiceMetric(_Object):
    """One metric the autoscaler follows."""

    type: Literal["PodMetric"]
    """The metric source."""
    podmetric: PodMetricSource | None = None
    """The per-pod metric, when type is PodMetric."""


class AutoScaling(_Object):
    """KEDA autoscaling on custom metrics (with minReplicas and maxReplicas)."""

    metrics: list[ServiceMetric] | None = None
    """The metrics to scale on."""


# ---------------------------------------------------------------------------------------------------------
# routing and storage: upstream's schema defaults on the runtime-config shapes


class ServiceGatewayRef(GatewayRef):
    """The Gateway an HTTPRoute attaches to, with upstream's defaults for group and kind."""

    group: str = _default(DEFAULT_GATEWAY_GROUP, max_length=253, pattern=GATEWAY_GROUP_PATTERN)
    """API group of the parent."""
    kind: str = _default(DEFAULT_GATEWAY_KIND, min_length=1, max_length=63, pattern=GATEWAY_KIND_PATTERN)
    """Kind of the parent."""


class ServiceRouting(RoutingConfig):
    """HTTP routing of the service through a Gateway API HTTPRoute."""

    gateway_ref: ServiceGatewayRef | None = None
    """Gateway the HTTPRoute attaches to."""


class ServiceStorage(StorageConfig):
    """Storage defaults of the service's PVCs and caches, over the runtime config's."""

    pvc_headroom_percent: int = _default(DEFAULT_PVC_HEADROOM_PERCENT, ge=0, json_schema_extra=INT32)
    """Extra space, in percent of the model size, added to each PVC."""


# ---------------------------------------------------------------------------------------------------------
# AIMService


class AIMServiceSpec(_Object):
    """A model bound to a service template, with replicas, caching and overrides (upstream's v1alpha1)."""

    model: ServiceModel
    """The model to serve: exactly one of name, image and custom."""
    template: ServiceTemplateSelection | None = None
    """Template selection: a name, or automatic."""
    caching: ServiceCaching | None = None
    """Caching of the model files; Shared when unset."""
    cache_model: bool | None = None
    """Deprecated (upstream no longer honours it): use caching.mode."""
    overrides: ServiceOverrides | None = None
    """Metric, precision and hardware asked of the template selection."""
    replicas: int = _default(1, json_schema_extra=INT32)
    """Number of inference replicas."""
    min_replicas: int | None = Field(default=None, ge=1, json_schema_extra=INT32)
    """Least replicas when autoscaling."""
    max_replicas: int | None = Field(default=None, ge=1, json_schema_extra=INT32)
    """Most replicas when autoscaling."""
    auto_scaling: AutoScaling | None = None
    """KEDA autoscaling on custom metrics."""
    runtime_config_name: str | None = None
    """Name of the AIMRuntimeConfig / AIMClusterRuntimeConfig to use; "default" when unset."""
    resources: Annotated[ResourceRequirements, ome.k8s_type(ome.CORE + "ResourceRequirements")] | None = None
    """Compute resources of the inference container."""
    routing: ServiceRouting | None = None
    """HTTP routing of the service."""
    env: EnvList
    """Environment of the inference container; the top layer of the merge."""
    storage: ServiceStorage | None = None
    """Storage defaults of the service's PVCs and caches."""
    image_pull_secrets: list[AimLocalObjectReference] | None = None
    """Secrets for pulling the model image."""
    service_account_name: str | None = None
    """Service account of the inference pods."""


class ServiceCacheStatus(_Object):
    """The template cache a service uses."""

    retry_attempts: int | None = None
    """Retries of a failed cache (upstream retries once)."""
    template_cache_ref: LegacyResolvedReference | None = None
    """The AIMTemplateCache in use."""


class ServiceRoutingStatus(_Object):
    """Observed routing of a service."""

    path: str | None = None
    """The HTTP path prefix of the service's HTTPRoute."""


class AIMServiceStatus(_Object):
    """Observed state of a service, as upstream's v1alpha1 words it."""

    status: Literal["Pending", "Starting", "Running", "Degraded", "Failed"] = ome.crd_default("Pending")
    """Overall state of the service."""
    conditions: MetaConditionList
    """Conditions of the service."""
    observed_generation: int | None = Field(default=None, json_schema_extra=INT64)
    """The metadata.generation this status was computed from."""
    resolved_model: LegacyResolvedReference | None = None
    """The model the service serves."""
    resolved_template: LegacyResolvedReference | None = None
    """The template selected."""
    resolved_runtime_config: LegacyResolvedReference | None = None
    """The runtime config in use."""
    cache: ServiceCacheStatus | None = None
    """The template cache in use."""
    routing: ServiceRoutingStatus | None = None
    """Routing of the service."""
    runtime: ServiceRuntimeStatus | None = None
    """Replica counts."""


class AIMService(_AIMResource):
    """An AIM inference service for a model and a template (upstream's v1alpha1 schema)."""

    kind: str | None = "AIMService"
    """Kind of the object."""
    spec: AIMServiceSpec | None = None
    status: AIMServiceStatus | None = None
