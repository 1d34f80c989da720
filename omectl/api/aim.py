"""Typed models of the AMD AIM resources omectl serves (`aim.eai.amd.com`): runtime configs, AIMService, the v1alpha2
models, profiles, caches and artifacts, and upstream's legacy template kinds.

These models are the one source of truth for the AIM CRD YAML in `deploy/crds/` (see `omectl.api.crdgen`), like
`omectl.api.ome` is for `ome.io`, and follow its conventions: camelCase on the wire, every optional field defaults to
`None` and unknown fields are dropped.

Schema defaults: upstream's CRDs default `storage.pvcHeadroomPercent` to 10, `labelPropagation.enabled` to false and
`routing.gatewayRef.group`/`kind` to `gateway.networking.k8s.io`/`Gateway`. Ours deliberately carry **no** schema
default anywhere: runtime configs are layered field by field (inline > namespace > cluster > operator defaults), and
a value the API server invented would count as set and mask the lower layers (absent stays absent).
The operator defaults live in the controller, not in the schema. The legacy kinds (AIMTemplateCache,
AIMServiceTemplate, AIMClusterServiceTemplate) carry upstream's own defaults, on fields no layer reads.

Versions: AIMClusterRuntimeConfig and AIMRuntimeConfig are served as `v1alpha1` (the storage version) and as
`v1alpha2` with the same schema ("they continue unchanged in v1alpha2"); AIMService and the models, profiles, caches
and artifacts are served as `v1alpha2` (AIMService, AIMModel, AIMClusterModel, AIMArtifact and
AIMClusterModelSource also at upstream's `v1alpha1`, with its schema: `omectl.api.aim_service_v1alpha1`,
`omectl.api.aim_model_v1alpha1`, `omectl.api.aim_shared_v1alpha1`); the legacy kinds as `v1alpha1` only, with
upstream's schema, spec and status.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import BaseModel as _PydanticModel
from pydantic import ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from omectl.api import ome
from omectl.api.ome import ConditionList, EnvVar, IntOrString, ResourceRequirements, Unstructured, list_map

GROUP: Final = "aim.eai.amd.com"
V1ALPHA1: Final = "v1alpha1"
V1ALPHA2: Final = "v1alpha2"
CONFIG_VERSIONS: Final = (V1ALPHA1, V1ALPHA2)
"""The versions a runtime config is served in, the storage version first."""
SERVICE_VERSIONS: Final = (V1ALPHA2,)
"""The versions an AIMService is served in with this schema (also at upstream's v1alpha1, with its own:
`omectl.api.aim_service_v1alpha1`)."""

QUANTITY_PATTERN: Final = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
"""The pattern Kubernetes puts on a resource.Quantity field."""
DNS_LABEL_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN: Final = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
GATEWAY_GROUP_PATTERN: Final = r"^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
GATEWAY_KIND_PATTERN: Final = r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"
"""The patterns the Gateway API puts on a ParentReference's namespace, sectionName, group and kind."""
INT32: Final[dict[str, Any]] = {"format": "int32"}
INT64: Final[dict[str, Any]] = {"format": "int64"}
"""Schema extras of an int32 field (upstream's Go type)."""


class _Object(_PydanticModel):
    """A typed part of an AIM object: camelCase on the wire, unknown fields dropped (the CRD prunes them too)."""

    model_config = ConfigDict(**ome.Resource.model_config)

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, only the fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class AimEnvVar(EnvVar):
    """An environment variable; its CRD schema is Kubernetes' EnvVar (a typed `valueFrom`), as upstream's."""

    model_config = ome.k8s_model(ome.CORE + "EnvVar")


EnvList = Annotated[list[AimEnvVar] | None, Field(default=None, json_schema_extra=list_map("name"))]
"""Environment variables keyed by name (a more specific layer overrides a name in place, new names are appended)."""


# ---------------------------------------------------------------------------------------------------------
# Runtime config


class StorageConfig(_Object):
    """Storage defaults for the PVCs AIM workloads create. Upstream defaults pvcHeadroomPercent to 10 in the
    schema; ours has no schema default, so an unset value falls through to the next layer."""

    default_storage_class_name: str | None = None
    """Storage class for PVCs that do not set spec.storageClassName themselves; unset uses the cluster default."""
    pvc_headroom_percent: int | None = Field(default=None, ge=0, json_schema_extra=INT32)
    """Extra space, in percent of the model size, added to each cache PVC (the operator uses 10 when no layer sets
    it)."""


class GatewayRef(_Object):
    """The Gateway an HTTPRoute attaches to (a Gateway API ParentReference). Upstream defaults group and kind in the
    schema; ours does not: unset means gateway.networking.k8s.io / Gateway."""

    group: str | None = Field(default=None, max_length=253, pattern=GATEWAY_GROUP_PATTERN)
    """API group of the parent; gateway.networking.k8s.io when unset."""
    kind: str | None = Field(default=None, min_length=1, max_length=63, pattern=GATEWAY_KIND_PATTERN)
    """Kind of the parent; Gateway when unset."""
    namespace: str | None = Field(default=None, min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)
    """Namespace of the parent; the route's namespace when unset."""
    name: str = Field(min_length=1, max_length=253)
    """Name of the parent Gateway."""
    section_name: str | None = Field(default=None, min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)
    """A listener of the Gateway, by name."""
    port: int | None = Field(default=None, ge=1, le=65535, json_schema_extra=INT32)
    """A listener of the Gateway, by port."""


class RoutingConfig(_Object):
    """HTTP routing of an AIMService through a Gateway API HTTPRoute. Set on a runtime config it gives defaults; set
    on an AIMService it wins over every config, field by field."""

    enabled: bool | None = None
    """Create an HTTPRoute for the service; false when no layer sets it."""
    gateway_ref: GatewayRef | None = None
    """Gateway the HTTPRoute attaches to."""
    path_template: str | None = None
    """HTTP path prefix, with `{JSONPath}` placeholders rendered against the AIMService, e.g.
    "/{.metadata.namespace}/{.metadata.labels['team']}"; "/{.metadata.namespace}/{.metadata.uid}" when unset."""
    request_timeout: str | None = None
    """Request timeout of the HTTPRoute rule, as a Go duration such as "180s" or "2m30s"."""
    annotations: dict[str, str] | None = None
    """Annotations added to the HTTPRoute; merged by key."""


class LabelPropagation(_Object):
    """Which labels AIM copies from a parent resource to the Kubernetes objects it creates. Upstream defaults
    enabled to false in the schema; ours does not, so an unset value falls through to the next layer."""

    enabled: bool | None = None
    """Copy matching labels to child objects; false when no layer sets it."""
    match: list[str] | None = Field(default=None, json_schema_extra={"x-kubernetes-list-type": "atomic"})
    """Label key patterns: `*` matches any run of characters except `/`, `?` one character, `[...]` a class. A more
    specific layer replaces the whole list."""


class RuntimeConfigCommon(_Object):
    """The layered runtime settings: a runtime config's spec, and an AIMService's inline spec.runtimeConfig. None of
    these fields has a schema default, so an unset field falls through to the next layer."""

    storage: StorageConfig | None = None
    """Storage defaults for PVCs."""
    routing: RoutingConfig | None = None
    """Routing defaults; an AIMService's own spec.routing wins over them."""
    env: EnvList
    """Environment variables for managed workloads (inference containers, download jobs); merged by name."""
    label_propagation: LabelPropagation | None = None
    """Label propagation from parent resources to their children."""


class ModelConfig(_Object):
    """Model defaults (upstream's `model` block)."""

    auto_discovery: bool | None = None
    """Discover models automatically. Declared by upstream and read by none of its controllers; accepted and kept
    so upstream's YAML applies unchanged."""


class RuntimeConfigSpec(RuntimeConfigCommon):
    """Defaults for AIM workloads: storage, routing, environment and label propagation. No field has a schema
    default (upstream's pvcHeadroomPercent=10, labelPropagation.enabled=false and gatewayRef group/kind defaults are
    dropped on purpose), so whatever this config leaves unset comes from the next layer down."""

    model: ModelConfig | None = None
    """Model defaults (`autoDiscovery`)."""

    default_storage_class_name: str | None = None
    """Deprecated: use storage.defaultStorageClassName, which wins when both are set."""
    pvc_headroom_percent: int | None = Field(default=None, ge=0, json_schema_extra=INT32)
    """Deprecated: use storage.pvcHeadroomPercent, which wins when both are set."""


class RuntimeConfigStatus(_Object):
    """Observed state of a runtime config."""

    observed_generation: int | None = None
    """The metadata.generation this status was computed from."""
    conditions: ConditionList
    """Conditions of the config."""


class _AIMResource(ome.Resource):
    api_version: str | None = f"{GROUP}/{V1ALPHA1}"
    """APIVersion of the object's schema."""


class AIMClusterRuntimeConfig(_AIMResource):
    """Cluster-wide, non-secret defaults for AIM workloads in every namespace. A namespace's AIMRuntimeConfig of the
    same name overrides it field by field."""

    kind: str | None = "AIMClusterRuntimeConfig"
    """Kind of the object."""
    spec: RuntimeConfigSpec | None = None
    status: RuntimeConfigStatus | None = None


class AIMRuntimeConfig(AIMClusterRuntimeConfig):
    """Defaults for the AIM workloads of one namespace; they override the AIMClusterRuntimeConfig of the same name
    field by field."""

    kind: str | None = "AIMRuntimeConfig"
    """Kind of the object."""


# ---------------------------------------------------------------------------------------------------------
# AIMService


def immutable_rule(message: str) -> dict[str, Any]:
    """Upstream's transition rule `self == oldSelf`: the value cannot change once set (it can still be removed, and
    set when it was absent, as kube-apiserver runs a transition rule only where an old value exists)."""
    return {"rule": "self == oldSelf", "message": message}


def immutable(message: str) -> dict[str, Any]:
    """Schema extras of a field with upstream's immutability rule alone (`immutable_rule`)."""
    return {"x-kubernetes-validations": [immutable_rule(message)]}


MODEL_EXACTLY_ONE: Final[dict[str, Any]] = {
    "rule": "(has(self.name) ? 1 : 0) + (has(self.image) ? 1 : 0) == 1",
    "message": "exactly one of name or image must be specified",
}
"""Upstream's exactly-one-of rule on `spec.model`, over the fields v1alpha2 has: upstream's also counts `custom`
(`... + (has(self.custom) ? 1 : 0) == 1`, "exactly one of name, image, or custom must be specified"), which
v1alpha2 does not serve; kube-apiserver refuses a rule naming a field the schema lacks."""
MODEL_IMMUTABLE: Final[dict[str, Any]] = {
    "rule": "self == oldSelf",
    "message": "model selection is immutable after creation",
}
"""Upstream's rule on `spec.model`, word for word."""
CACHING_IMMUTABLE: Final = "caching mode is immutable after creation"
"""Upstream's message on `spec.caching` (rule `self == oldSelf`)."""
SOURCE_URI_IMMUTABLE: Final = "sourceUri is immutable"
"""Upstream's message on AIMArtifact `spec.sourceUri` (rule `self == oldSelf`)."""


class ServiceModel(_Object):
    """The model an AIMService serves: exactly one of name and image, fixed once the service exists (upstream's
    CEL rules; the controller never rewrites it)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [MODEL_EXACTLY_ONE, MODEL_IMMUTABLE]})

    name: str | None = Field(default=None, min_length=1)
    """Name of an AIMModel in the namespace or of an AIMClusterModel."""
    image: str | None = Field(default=None, min_length=1)
    """Container image of an AIM model; the model is created from it."""

    @model_validator(mode="after")
    def _exactly_one(self) -> ServiceModel:
        if (self.name is None) == (self.image is None):
            raise ValueError("exactly one of model.name and model.image must be set")
        return self


class ServiceStorage(StorageConfig):
    """Storage of the PVCs the service creates. defaultStorageClassName (here, inline or from the runtime config)
    applies to every PVC whose own storageClassName is unset; storageClassName on a child object wins."""

    size: Annotated[IntOrString | None, Field(default=None, json_schema_extra={"pattern": QUANTITY_PATTERN})]
    """Requested size of the model cache PVC, a quantity such as 100Gi; the model's size plus headroom when unset."""
    storage_class_name: str | None = None
    """Storage class of the service's own cache PVC; wins over every defaultStorageClassName."""

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        if isinstance(value, str) and not re.match(QUANTITY_PATTERN, value):
            raise ValueError(f"{value!r} is not a quantity (e.g. 100Gi)")
        return value


class ServiceCaching(_Object):
    """Model caching of a service; immutable once the service exists (upstream's rule)."""

    model_config = ConfigDict(json_schema_extra=immutable(CACHING_IMMUTABLE))

    enabled: bool | None = None
    """Download the model into a cache PVC before serving it."""


class AIMServiceSpec(_Object):
    """The model to serve and how: replicas, resources, storage, routing and runtime-config overrides."""

    model: ServiceModel
    """The model to serve: exactly one of name and image."""
    runtime_config_name: str | None = None
    """Name of the AIMRuntimeConfig / AIMClusterRuntimeConfig to use; "default" when unset (and then a missing
    config is not an error)."""
    runtime_config: RuntimeConfigCommon | None = None
    """Inline runtime config: the top layer, over the namespace and cluster configs."""
    routing: RoutingConfig | None = None
    """Routing of this service; wins over every runtime config's routing, field by field."""
    env: EnvList
    """Environment variables of the inference container; merged by name over the runtime config's."""
    storage: ServiceStorage | None = None
    """Storage of the PVCs the service creates."""
    replicas: int | None = Field(default=None, ge=0)
    """Number of inference replicas; 1 when unset."""
    resources: ResourceRequirements | None = None
    """Compute resources of the inference container."""
    caching: ServiceCaching | None = None
    """Model caching."""


class ResolvedReference(_Object):
    """The runtime config a consumer resolved: the namespace one when both exist (it is the more specific)."""

    kind: str | None = None
    """AIMRuntimeConfig or AIMClusterRuntimeConfig."""
    name: str | None = None
    """Name of the config."""
    namespace: str | None = None
    """Namespace of the config; empty for a cluster config."""
    scope: Literal["Namespace", "Cluster"] | None = None
    """Namespace or Cluster."""
    uid: str | None = None
    """UID of the config."""


class LegacyResolvedReference(_Object):
    """An object a legacy kind resolved (upstream's v1alpha1 reference: its scope may also be Merged or Unknown)."""

    kind: str | None = None
    """Kind of the object."""
    name: str | None = None
    """Name of the object."""
    namespace: str | None = None
    """Namespace of the object; empty for a cluster-scoped one."""
    scope: Literal["Namespace", "Cluster", "Merged", "Unknown"] | None = None
    """Namespace, Cluster, Merged (a namespace config over a cluster one) or Unknown."""
    uid: str | None = None
    """UID of the object."""


class ServiceRoutingStatus(_Object):
    """Observed routing of a service."""

    path: str | None = None
    """The rendered HTTP path prefix of the service's HTTPRoute."""


class ServiceRuntimeStatus(_Object):
    """Replica counts of the inference workload."""

    current_replicas: int | None = Field(default=None, json_schema_extra=INT32)
    """Current replicas, as the autoscaler reports them."""
    desired_replicas: int | None = Field(default=None, json_schema_extra=INT32)
    """Desired replicas, as the autoscaler decides them."""
    min_replicas: int | None = Field(default=None, json_schema_extra=INT32)
    """Least replicas when autoscaling."""
    max_replicas: int | None = Field(default=None, json_schema_extra=INT32)
    """Most replicas when autoscaling."""
    replicas: str | None = None
    """The counts for kubectl: current, or current/desired (min-max) when autoscaling."""


class ServiceCacheStatus(_Object):
    """The template cache a service on the template path uses (upstream's v1alpha1 `status.cache`)."""

    template_cache_ref: LegacyResolvedReference | None = None
    """The AIMTemplateCache in use, while it is Ready."""


class AIMServiceStatus(_Object):
    """Observed state of an AIMService."""

    status: Literal["Pending", "Starting", "Running", "Degraded", "Failed"] | None = None
    """Overall state of the service."""
    conditions: ConditionList
    """RuntimeConfigReady, ConfigValid, HTTPRouteReady, Ready, ..."""
    resolved_runtime_config: ResolvedReference | None = None
    """The runtime config in use; absent when none resolved."""
    resolved_template: LegacyResolvedReference | None = None
    """The AIMServiceTemplate or AIMClusterServiceTemplate a service written in v1alpha1 selects by name
    (`spec.template.name`) or through its model's `defaultServiceTemplate`, while it is Ready (upstream's v1alpha1
    `status.resolvedTemplate`, same shape)."""
    resolved_model: LegacyResolvedReference | None = None
    """The AIMModel or AIMClusterModel the service resolved (by `spec.model.name` or `spec.model.image`), while it is
    Ready (upstream's v1alpha1 `status.resolvedModel`, same shape)."""
    cache: ServiceCacheStatus | None = None
    """The template cache of a service that selects a template, while it is Ready (upstream's v1alpha1
    `status.cache.templateCacheRef`, same shape)."""
    routing: ServiceRoutingStatus | None = None
    """Routing of the service."""
    runtime: ServiceRuntimeStatus | None = None
    """Replica counts of the inference workload (upstream's v1alpha1 `status.runtime`, same shape)."""
    observed_generation: int | None = None
    """The metadata.generation this status was computed from."""


class AIMService(_AIMResource):
    """An AIM inference service: serves a model through a KServe InferenceService and, when routing is enabled, a
    Gateway API HTTPRoute, both named like the service."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMService"
    """Kind of the object."""
    spec: AIMServiceSpec | None = None
    status: AIMServiceStatus | None = None


# ---------------------------------------------------------------------------------------------------------
# v1alpha2: models, profiles, profile sets, profile caches, artifacts and cluster model sources
#
# Every kind below consumes a runtime config the way an AIMService does: `spec.runtimeConfigName` ("default" when
# unset) and, in status, `resolvedRuntimeConfig` plus the `RuntimeConfigReady` / `ConfigValid` conditions. None of
# their fields has a schema default. See docs/aim-resources.md for what creates each kind and what it creates.

MODEL_VERSIONS: Final = (V1ALPHA2,)
"""The versions the v1alpha2 kinds (models, profiles, caches, artifacts, sources) are served in."""

ObjectStatus = Literal["Pending", "Progressing", "Ready", "Degraded", "Failed"]
"""`status.status` of a model, profile, profile set or model source."""
CacheStatus = Literal["Pending", "Progressing", "Ready", "Failed"]
"""`status.status` of a profile cache: Progressing while its artifacts download."""
ArtifactStatus = Literal["Pending", "Downloading", "Ready", "Degraded", "Failed"]
"""`status.status` of an artifact: it follows its download Job; Degraded on an infrastructure error (a lost PVC, an
evicted Job pod) outlasting its grace period."""

Quantity = Annotated[IntOrString | None, Field(default=None, json_schema_extra={"pattern": QUANTITY_PATTERN})]


def _check_quantity(value: IntOrString | None) -> IntOrString | None:
    if isinstance(value, str) and not re.match(QUANTITY_PATTERN, value):
        raise ValueError(f"{value!r} is not a quantity (e.g. 100Gi)")
    return value


class ModelSource(_Object):
    """One set of model files to download (a HuggingFace repository, an S3 prefix, ...): one AIMArtifact each."""

    name: str = Field(min_length=1, max_length=63)
    """Name of the source, unique within its list; part of the artifact's name."""
    source_uri: str = Field(min_length=1)
    """Where the files are, e.g. hf://Qwen/Qwen3-32B or s3://bucket/prefix."""
    model_id: str | None = None
    """Model id the inference container knows the files by (mounted at /workspace/cache/<modelId>)."""
    size: Quantity
    """Size of the files, a quantity such as 65Gi; the artifact's PVC is this plus the headroom."""
    env: EnvList
    """Environment of the download Job for this source; merged by name over the cache's env."""

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        return _check_quantity(value)


ModelSourceList = Annotated[list[ModelSource] | None, Field(default=None, json_schema_extra=list_map("name"))]


class ModelDiscovery(_Object):
    """Discovery of a model's profiles by a Job that runs the model image."""

    enabled: bool | None = None
    """Run the discovery Job; true when unset."""


class ConsumerStatus(_Object):
    """What every runtime-config consumer publishes."""

    conditions: ConditionList
    """RuntimeConfigReady, ConfigValid, Ready and the kind's own conditions."""
    resolved_runtime_config: ResolvedReference | None = None
    """The runtime config in use; absent when none resolved."""
    observed_generation: int | None = None
    """The metadata.generation this status was computed from."""


class RecommendedDeployment(_Object):
    """A deployment the image's labels recommend."""

    description: str | None = None
    """More about the deployment."""
    gpu_count: int | None = Field(default=None, json_schema_extra=INT32)
    """GPUs per replica."""
    gpu_model: str | None = None
    """GPU model, e.g. MI300X."""
    metric: str | None = None
    """What it optimises, e.g. latency."""
    precision: str | None = None
    """Numeric precision, e.g. fp8."""
    profile_id: str | None = None
    """The AIM profile of the deployment."""


class ModelMetadata(_Object):
    """AMD Silogen's labels of a model image (org.amd.silogen.*)."""

    canonical_name: str | None = None
    """Canonical model id, e.g. mistralai/Mixtral-8x22B-Instruct-v0.1."""
    description_full: str | None = None
    """Full description."""
    hf_token_required: bool | None = None
    """Whether a HuggingFace token is needed."""
    recommended_deployments: list[RecommendedDeployment] | None = None
    """Recommended deployments."""
    release_notes: str | None = None
    """Release notes of this version."""
    source: str | None = None
    """Where the model can be found."""
    tags: list[str] | None = None
    """Descriptive tags."""
    title: str | None = None
    """Title of the model."""
    variants: list[str] | None = None
    """Variants of the model."""
    versions: list[str] | None = None
    """Versions available."""


class OciMetadata(_Object):
    """The standard OCI labels of an image (org.opencontainers.image.*)."""

    authors: str | None = None
    """Contact details of the authors."""
    created: str | None = None
    """When the image was created."""
    description: str | None = None
    """Brief description."""
    documentation: str | None = None
    """URL of the documentation."""
    licenses: str | None = None
    """SPDX license identifiers."""
    revision: str | None = None
    """Source control revision."""
    source: str | None = None
    """URL of the source repository."""
    title: str | None = None
    """Human-readable title."""
    vendor: str | None = None
    """Organization that produced the image."""
    version: str | None = None
    """Version of the image."""


class ImageMetadata(_Object):
    """What an AIM image's labels say."""

    model: ModelMetadata | None = None
    """AMD Silogen's model labels."""
    oci: OciMetadata | None = None
    """The OCI labels."""
    original_labels: dict[str, str] | None = None
    """Every label of the image, as it is."""


class AIMModelSpec(_Object):
    """An AIM model image and the files it serves. Its discovery Job lists the profiles the image supports."""

    image: str = Field(min_length=1)
    """Container image of the AIM model; the discovery Job and the inference container run it."""
    runtime_config_name: str | None = None
    """Name of the AIMRuntimeConfig / AIMClusterRuntimeConfig to use; "default" when unset (and then a missing
    config is not an error). A cluster model looks the namespaced config up in the operator namespace."""
    model_sources: ModelSourceList
    """The model's files; profiles inherit them unless discovery names their own."""
    env: EnvList
    """Environment of the discovery Job; merged by name over the runtime config's env."""
    discovery: ModelDiscovery | None = None
    """Profile discovery; enabled when unset."""


class AIMModelStatus(ConsumerStatus):
    """Observed state of a model."""

    status: Literal["Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable"] | None = None
    """Overall state: Pending until discovery ran, Ready with its profiles, Failed on a missing explicit config or a
    failed discovery. A model written in v1alpha1: upstream's roll-up of its image metadata and templates
    (NotAvailable when none of its templates is)."""
    profile_count: int | None = None
    """Number of profiles discovery found."""
    image_metadata: ImageMetadata | None = None
    """A model written in v1alpha1: its image's metadata, read or given (upstream's v1alpha1
    `status.imageMetadata`, same shape)."""
    source_type: Literal["Image", "Custom"] | None = None
    """A model written in v1alpha1: Image (templates from the image's labels) or Custom (spec.modelSources)
    (upstream's v1alpha1 `status.sourceType`)."""


class AIMClusterModel(_AIMResource):
    """A cluster-wide AIM model; its discovery Job runs in the operator namespace (AIM_SYSTEM_NAMESPACE) and its
    profiles are AIMClusterProfiles."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMClusterModel"
    """Kind of the object."""
    spec: AIMModelSpec | None = None
    status: AIMModelStatus | None = None


class AIMModel(AIMClusterModel):
    """An AIM model of one namespace; its discovery Job runs there and its profiles are AIMProfiles."""

    kind: str | None = "AIMModel"
    """Kind of the object."""


class ProfileFields(_Object):
    """The self-contained runtime configuration of a profile: hardware, precision, goal and environment."""

    profile_id: str | None = None
    """The id the model image knows the profile by (AIM_PROFILE_ID)."""
    gpu: str | None = None
    """GPU model, e.g. MI300X."""
    gpu_count: int | None = Field(default=None, ge=0)
    """GPUs per replica."""
    precision: str | None = None
    """Numeric precision, e.g. fp8, bf16."""
    metric: str | None = None
    """What the profile optimises, e.g. latency or throughput."""
    container_env: EnvList
    """Environment of the inference container and of the download Jobs built from this profile; over the runtime
    config's env, under the artifact's or service's own."""
    engine_env: EnvList
    """Engine arguments as environment; over containerEnv, under the artifact's or service's own env."""
    model_sources: ModelSourceList
    """The files the profile serves; one artifact each when it is cached."""


class AIMProfileSpec(ProfileFields):
    """A self-contained runtime configuration of a model."""

    model_name: str = Field(min_length=1)
    """The AIMModel (in the namespace) or AIMClusterModel the profile belongs to."""
    image: str | None = None
    """Container image; the model's when unset."""
    runtime_config_name: str | None = None
    """Name of the runtime config used when the profile is cached; "default" when unset."""
    storage_class_name: str | None = None
    """Storage class of the profile's cache PVCs; wins over the runtime config's defaultStorageClassName."""


class AIMProfileStatus(ConsumerStatus):
    """Observed state of a profile."""

    status: ObjectStatus | None = None
    """Ready once its runtime config resolves; Failed on a missing explicit config."""


class AIMClusterProfile(_AIMResource):
    """A cluster-wide profile, discovered from an AIMClusterModel."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMClusterProfile"
    """Kind of the object."""
    spec: AIMProfileSpec | None = None
    status: AIMProfileStatus | None = None


class AIMProfile(AIMClusterProfile):
    """A profile of one namespace: discovered from an AIMModel or derived from an AIMProfileSet."""

    kind: str | None = "AIMProfile"
    """Kind of the object."""


class ProfileRef(_Object):
    """A profile that already exists."""

    kind: Literal["AIMProfile", "AIMClusterProfile"]
    """AIMProfile (in the set's namespace) or AIMClusterProfile."""
    name: str = Field(min_length=1)
    """Name of the profile."""


class ProfileSetEntry(ProfileFields):
    """One profile of a set: derived as AIMProfile <set>-<name>, unless profileRef names an existing profile."""

    name: str = Field(min_length=1, max_length=63)
    """Name of the entry, unique within the set."""
    profile_ref: ProfileRef | None = None
    """The existing profile this entry records (a model's discovered profiles); nothing is derived for it."""


class AIMProfileSetSpec(_Object):
    """A set of profiles of one model."""

    model_name: str = Field(min_length=1)
    """The AIMModel or AIMClusterModel the profiles belong to."""
    runtime_config_name: str | None = None
    """Name of the runtime config; "default" when unset. Copied to the derived profiles."""
    profiles: Annotated[list[ProfileSetEntry] | None, Field(default=None, json_schema_extra=list_map("name"))]
    """The profiles of the set."""


class AIMProfileSetStatus(ConsumerStatus):
    """Observed state of a profile set."""

    status: ObjectStatus | None = None
    """Ready once its runtime config resolves and its profiles exist."""
    profile_count: int | None = None
    """Number of profiles in the set."""


class AIMProfileSet(_AIMResource):
    """A set of profiles of a model: a model's discovery result, or a hand-written set from which AIMProfiles are
    derived."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMProfileSet"
    """Kind of the object."""
    spec: AIMProfileSetSpec | None = None
    status: AIMProfileSetStatus | None = None


class AIMProfileCacheSpec(_Object):
    """The cached files of one profile."""

    profile_name: str = Field(min_length=1)
    """The profile whose model sources are cached."""
    profile_scope: Literal["Namespace", "Cluster"] | None = None
    """Namespace (an AIMProfile in the cache's namespace) or Cluster (an AIMClusterProfile); Namespace when unset."""
    runtime_config_name: str | None = None
    """Name of the runtime config (downloader env, storage defaults); "default" when unset. Copied to the
    artifacts."""
    storage_class_name: str | None = None
    """Storage class of the artifacts' PVCs; wins over the runtime config's defaultStorageClassName."""
    env: EnvList
    """Environment of the download Jobs; each model source's env is merged over it by name."""
    model_sources: ModelSourceList
    """The files to cache; the profile's when unset."""
    download_image: str | None = None
    """Image of the download Jobs; the operator's downloader when unset."""


class CachedArtifact(_Object):
    """One artifact of a cache."""

    name: str
    """Name of the AIMArtifact."""
    source_name: str | None = None
    """The model source it downloads."""
    model_id: str | None = None
    """Model id of the source."""
    status: ArtifactStatus | None = None
    """The artifact's status."""
    persistent_volume_claim: str | None = None
    """Its PVC."""


class AIMProfileCacheStatus(ConsumerStatus):
    """Observed state of a profile cache."""

    status: CacheStatus | None = None
    """Ready when every artifact is Ready; Failed when one failed."""
    artifacts: Annotated[list[CachedArtifact] | None, Field(default=None, json_schema_extra=list_map("name"))]
    """The cache's artifacts."""


class AIMProfileCache(_AIMResource):
    """The model files of a profile, downloaded into PVCs by one AIMArtifact per model source."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMProfileCache"
    """Kind of the object."""
    spec: AIMProfileCacheSpec | None = None
    status: AIMProfileCacheStatus | None = None


class AIMArtifactSpec(_Object):
    """One set of model files, downloaded into a PVC by a Job."""

    source_uri: str = Field(min_length=1, json_schema_extra=immutable(SOURCE_URI_IMMUTABLE))
    """Where the files are, e.g. hf://Qwen/Qwen3-32B. Immutable (upstream's rule): other files are another
    artifact."""
    model_id: str | None = None
    """Model id the inference container knows the files by."""
    size: Quantity
    """Size of the files; the PVC is this plus the runtime config's headroom (10 % when unset), rounded up to Gi."""
    storage_class_name: str | None = None
    """Storage class of the PVC; wins over the runtime config's defaultStorageClassName."""
    env: EnvList
    """Environment of the download Job: the top layer, over the profile's and the runtime config's env."""
    download_image: str | None = None
    """Image of the download Job; ghcr.io/silogen/aim-artifact-downloader:0.2.0 when unset."""
    runtime_config_name: str | None = None
    """Name of the runtime config (downloader env, storage defaults); "default" when unset."""
    profile_name: str | None = None
    """The profile whose containerEnv/engineEnv the download Job's env takes, when the artifact was made for one."""
    profile_scope: Literal["Namespace", "Cluster"] | None = None
    """Namespace (AIMProfile) or Cluster (AIMClusterProfile); Namespace when unset."""

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        return _check_quantity(value)


class ArtifactDownload(_Object):
    """Progress of an artifact's download."""

    job: str | None = None
    """Name of the download Job."""
    protocol: str | None = None
    """The protocol in use (the first of the sequence until the downloader reports another)."""
    protocol_sequence: str | None = None
    """AIM_DOWNLOADER_PROTOCOL of the Job, e.g. XET,HF_TRANSFER."""
    attempt: int | None = None
    """The protocol attempt, from 1."""
    total_attempts: int | None = None
    """Number of protocols in the sequence."""
    message: str | None = None
    """Last message of the download."""


class ArtifactProgress(_Object):
    """How far the download is, as the downloader reports it (upstream's `progress`)."""

    total_bytes: int | None = Field(default=None, json_schema_extra=INT64)
    """Expected size of the files."""
    downloaded_bytes: int | None = Field(default=None, json_schema_extra=INT64)
    """Bytes downloaded so far."""
    percentage: int | None = Field(default=None, ge=0, le=100, json_schema_extra=INT32)
    """0-100; the downloader stops at 99 until the download is complete, 100 while it verifies the files."""
    display_percentage: str | None = None
    """e.g. "45 %"; "N/A" once the download failed."""


class AIMArtifactStatus(ConsumerStatus):
    """Observed state of an artifact."""

    status: ArtifactStatus | None = None
    """Pending until its Job runs, Downloading while it runs, Ready when it completed, Failed when it failed,
    Degraded while an infrastructure error outlasts its grace period."""
    persistent_volume_claim: str | None = None
    """Name of the PVC holding the files."""
    allocated_size: str | None = None
    """Size of the PVC, e.g. 72Gi."""
    download: ArtifactDownload | None = None
    """Progress of the download."""
    progress: ArtifactProgress | None = None
    """Bytes and percentage of the download, written by the downloader while it runs and by the controller at the
    end."""
    discovered_size_bytes: int | None = Field(default=None, json_schema_extra=INT64)
    """Size of the files found by the check-size Job when `spec.size` is not set."""


class AIMArtifact(_AIMResource):
    """Model files downloaded into a PVC by a Job; the InferenceService mounts them once Ready."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMArtifact"
    """Kind of the object."""
    spec: AIMArtifactSpec | None = None
    status: AIMArtifactStatus | None = None


class SourcedModel(AIMModelSpec):
    """One AIMClusterModel a source creates."""

    name: str = Field(min_length=1, max_length=253)
    """Name of the AIMClusterModel."""


class AIMClusterModelSourceSpec(_Object):
    """The AIMClusterModels to create, listed here (a source written in v1alpha1 scans a registry instead)."""

    runtime_config_name: str | None = None
    """Name of the runtime config (label propagation); "default" when unset. Copied to models that set none."""
    models: Annotated[list[SourcedModel] | None, Field(default=None, json_schema_extra=list_map("name"))]
    """The models, each an AIMClusterModel of that name."""


class AIMClusterModelSourceStatus(ConsumerStatus):
    """Observed state of a model source."""

    status: ObjectStatus | None = None
    """Ready once its models exist."""
    model_count: int | None = None
    """Number of AIMClusterModels the source created."""
    available_models: int | None = None
    """Images a registry scan found (a source written in v1alpha1)."""
    models_limit_reached: bool | None = None
    """Whether a registry scan found more images than maxModels lets it make models of."""
    last_sync_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the registry was last scanned."""


class AIMClusterModelSource(_AIMResource):
    """A list of AIMClusterModels to create and keep (at v1alpha1: a registry scan that makes them)."""

    api_version: str | None = f"{GROUP}/{V1ALPHA2}"
    """APIVersion of the object's schema."""
    kind: str | None = "AIMClusterModelSource"
    """Kind of the object."""
    spec: AIMClusterModelSourceSpec | None = None
    status: AIMClusterModelSourceStatus | None = None


# ---------------------------------------------------------------------------------------------------------
# Legacy template path (v1alpha1 only): served and reconciled (controller/aim/legacy.py)

TEMPLATE_CACHE_VERSIONS: Final = (V1ALPHA1,)
"""The versions an AIMTemplateCache is served in (upstream's legacy kind, v1alpha1 only)."""
MODEL_ID_PATTERN: Final = r"^[a-zA-Z0-9_-]+/[a-zA-Z0-9._-]+$"
LEGACY_SOURCE_URI_PATTERN: Final = r"^(hf|s3)://[^ \t\r\n]+$"


class AimLocalObjectReference(ome.LocalObjectReference):
    """A reference to a Secret in the same namespace; its CRD schema is Kubernetes' LocalObjectReference."""

    model_config = ome.k8s_model(ome.CORE + "LocalObjectReference")


class LegacyModelSource(_Object):
    """One set of model files a template cache downloads (upstream's v1alpha1 model source: no name, keyed by
    modelId)."""

    model_id: str = Field(pattern=MODEL_ID_PATTERN)
    """Model id the inference container knows the files by, `<org>/<name>`."""
    source_uri: str = Field(pattern=LEGACY_SOURCE_URI_PATTERN)
    """Where the files are: hf://<repo> or s3://<bucket>/<prefix>."""
    size: Quantity
    """Size of the files, a quantity such as 65Gi."""
    env: EnvList
    """Environment of the download Job for this source."""

    @field_validator("size")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        return _check_quantity(value)


CONDITION_TYPE_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)
CONDITION_REASON_PATTERN: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"


class MetaCondition(_Object):
    """A Kubernetes metav1.Condition, constrained as its Go markers constrain it in every generated CRD."""

    type: str = Field(max_length=316, pattern=CONDITION_TYPE_PATTERN)
    """Type of the condition, e.g. Ready."""
    status: Literal["True", "False", "Unknown"]
    """True, False or Unknown."""
    observed_generation: int | None = Field(default=None, ge=0, json_schema_extra={"format": "int64"})
    """The metadata.generation the condition was computed from."""
    last_transition_time: str = Field(json_schema_extra={"format": "date-time"})
    """When the status last changed."""
    reason: str = Field(min_length=1, max_length=1024, pattern=CONDITION_REASON_PATTERN)
    """Machine-readable reason for the last transition, in CamelCase."""
    message: str = Field(max_length=32768)
    """Human-readable detail of the last transition."""


MetaConditionList = Annotated[list[MetaCondition] | None, Field(default=None, json_schema_extra=list_map("type"))]
Int64 = Annotated[int | None, Field(default=None, json_schema_extra={"format": "int64"})]


class AIMTemplateCacheSpec(_Object):
    """The cached model files of one service template (the legacy counterpart of AIMProfileCache)."""

    template_name: str = Field(min_length=1)
    """The AIMServiceTemplate or AIMClusterServiceTemplate whose model sources are cached."""
    template_scope: Literal["Namespace", "Cluster", "Unknown"]
    """Namespace (a template in the cache's namespace) or Cluster (a cluster template)."""
    mode: Literal["Dedicated", "Shared"] = ome.crd_default("Shared")
    """Shared caches may serve several services; Dedicated ones belong to one."""
    runtime_config_name: str | None = None
    """Name of the runtime config (downloader env, storage defaults)."""
    storage_class_name: str | None = None
    """Storage class of the cache's PVCs."""
    env: EnvList
    """Environment of the download Jobs."""
    model_sources: list[LegacyModelSource] | None = None
    """The files to cache; the template's when unset."""
    download_image: str | None = None
    """Image of the download Jobs."""
    image_pull_secrets: list[AimLocalObjectReference] | None = None
    """Secrets for pulling the download image."""


class TemplateCacheArtifact(_Object):
    """One artifact of a template cache."""

    uid: str
    """UID of the AIMArtifact."""
    name: str
    """Name of the AIMArtifact."""
    model: str
    """The model whose files it holds."""
    status: str
    """The artifact's status."""
    persistent_volume_claim: str | None = None
    """Its PVC, once there is one."""
    mount_point: str | None = None
    """Where the inference container mounts it."""


class AIMTemplateCacheStatus(_Object):
    """Observed state of a template cache, as upstream's controller publishes it."""

    status: Literal["Pending", "Progressing", "Ready", "Failed", "Degraded", "NotAvailable"] = ome.crd_default(
        "Pending"
    )
    """The cache's overall state."""
    conditions: MetaConditionList
    """Conditions of the cache."""
    observed_generation: Int64
    """The metadata.generation this status was computed from."""
    resolved_runtime_config: LegacyResolvedReference | None = None
    """The runtime config in use."""
    resolved_template_kind: str | None = None
    """AIMServiceTemplate or AIMClusterServiceTemplate."""
    artifacts: dict[str, TemplateCacheArtifact] | None = None
    """The cache's artifacts by the name of the model whose files each holds."""


class AIMTemplateCache(_AIMResource):
    """Upstream's legacy (v1alpha1) cache of a service template's model files: one AIMArtifact per model source."""

    kind: str | None = "AIMTemplateCache"
    """Kind of the object."""
    spec: AIMTemplateCacheSpec | None = None
    status: AIMTemplateCacheStatus | None = None


# Service templates (upstream's AIMServiceTemplate / AIMClusterServiceTemplate): served and reconciled.

SERVICE_TEMPLATE_VERSIONS: Final = (V1ALPHA1,)
"""The versions a service template is served in (upstream's legacy kinds, v1alpha1 only)."""
GPU_MODEL_OR_MIN_VRAM: Final[dict[str, Any]] = {
    "rule": "!(has(self.model) && size(self.model) > 0 && has(self.minVram))",
    "message": "model and minVram are mutually exclusive; specify either a specific GPU model OR a minimum VRAM "
    "requirement, not both",
}
GPU_OR_CPU: Final[dict[str, Any]] = {
    "rule": "has(self.gpu) || has(self.cpu)",
    "message": "at least one of gpu or cpu must be specified",
}
"""Upstream's rules on a template's hardware, word for word."""


MetricName = Literal["latency", "throughput"]
PrecisionName = Literal["auto", "fp4", "fp8", "fp16", "fp32", "bf16", "int4", "int8"]
TemplateTypeName = Literal["optimized", "preview", "unoptimized"]


def upstream_enum(names: Any) -> WithJsonSchema:
    """The CRD schema of a Literal as upstream's CRDs write a field whose Go type and field both carry the enum
    marker: the enum twice, under `allOf`. Kept so a value outside it is refused with kube-apiserver's errors for
    upstream's CRD."""
    values = list(get_args(names))
    return WithJsonSchema({"type": "string", "allOf": [{"enum": values}, {"enum": values}]})


Metric = Annotated[MetricName, upstream_enum(MetricName)]
Precision = Annotated[PrecisionName, upstream_enum(PrecisionName)]
TemplateType = Annotated[TemplateTypeName, upstream_enum(TemplateTypeName)]
RequiredQuantity = Annotated[IntOrString, Field(json_schema_extra={"pattern": QUANTITY_PATTERN})]


class GpuRequirements(_Object):
    """The GPUs a template runs on: a GPU model or a minimum of memory per GPU, not both (upstream's rule)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [GPU_MODEL_OR_MIN_VRAM]})

    requests: int | None = Field(default=None, ge=0, json_schema_extra=INT32)
    """GPUs per replica."""
    model: str | None = Field(default=None, max_length=64)
    """GPU model, e.g. MI300X."""
    min_vram: Quantity
    """Least memory per GPU, a quantity such as 64Gi; any GPU model with as much will do."""
    resource_name: str = ome.crd_default("amd.com/gpu")
    """Extended resource name of the GPUs."""

    @field_validator("min_vram")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        return _check_quantity(value)


class CpuRequirements(_Object):
    """The CPU of a CPU-only template."""

    requests: RequiredQuantity
    """CPU requested per replica, a quantity such as 500m."""
    limits: Quantity
    """CPU limit per replica."""

    @field_validator("requests", "limits")
    @classmethod
    def _quantity(cls, value: IntOrString | None) -> IntOrString | None:
        return _check_quantity(value)


class TemplateHardware(_Object):
    """What a template runs on: GPUs, or CPU alone; at least one of them (upstream's rule)."""

    model_config = ConfigDict(json_schema_extra={"x-kubernetes-validations": [GPU_OR_CPU]})

    gpu: GpuRequirements | None = None
    """GPUs per replica."""
    cpu: CpuRequirements | None = None
    """CPU per replica, for a template with no GPU."""


class TemplateCaching(_Object):
    """Caching of a namespaced template's model files."""

    enabled: bool = ome.crd_default(False)
    """Cache the model files in an AIMTemplateCache before serving."""
    env: EnvList
    """Environment of the cache's download Jobs."""


class AIMClusterServiceTemplateSpec(_Object):
    """One way to serve a model: its hardware, precision and optimisation goal. modelName, hardware, metric and
    precision cannot change once the template exists (upstream's rules)."""

    model_name: str = Field(min_length=1, json_schema_extra=immutable("model name is immutable"))
    """The AIMModel (in the namespace) or AIMClusterModel the template serves."""
    metric: Annotated[Metric | None, Field(default=None, json_schema_extra=immutable("metric is immutable"))]
    """What the template optimises: latency or throughput."""
    precision: Annotated[Precision | None, Field(default=None, json_schema_extra=immutable("precision is immutable"))]
    """Numeric precision of the weights, e.g. fp8, bf16."""
    hardware: Annotated[
        TemplateHardware | None,
        Field(
            default=None,
            json_schema_extra={"x-kubernetes-validations": [immutable_rule("hardware is immutable"), GPU_OR_CPU]},
        ),
    ]
    """GPUs, or CPU alone, per replica."""
    type: TemplateType | None = None
    """How far the profile is tuned: optimized, preview or unoptimized; discovery says when unset."""
    profile_id: str | None = None
    """The profile of the model image the template runs (AIM_PROFILE_ID)."""
    runtime_config_name: str | None = None
    """Name of the runtime config; "default" when unset."""
    env: EnvList
    """Environment of the inference container."""
    model_sources: list[LegacyModelSource] | None = None
    """The model files; given here, discovery does not look for them."""
    resources: Annotated[ResourceRequirements, ome.k8s_type(ome.CORE + "ResourceRequirements")] | None = None
    """Default compute resources of the services made from the template; a service's own win."""
    image_pull_secrets: list[AimLocalObjectReference] | None = None
    """Secrets for pulling the model image (discovery and inference)."""
    service_account_name: str | None = None
    """Service account of the discovery Job and the inference pods."""


class AIMServiceTemplateSpec(AIMClusterServiceTemplateSpec):
    """A namespaced template: a cluster template's fields plus caching."""

    caching: TemplateCaching | None = None
    """Caching of the model files."""


class TemplateDiscovery(_Object):
    """How the template's discovery went."""

    attempts: int | None = Field(default=None, json_schema_extra=INT32)
    """Discovery runs so far."""
    last_attempt_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When discovery last ran."""
    last_failure_reason: str | None = None
    """Why the last run failed."""
    spec_hash: str | None = None
    """Hash of the spec discovery last ran for."""


class ProfileMetadata(_Object):
    """What the discovered profile runs on and optimises."""

    engine: str | None = None
    """Inference engine, e.g. vllm."""
    gpu: str | None = None
    """GPU model."""
    gpu_count: int | None = Field(default=None, json_schema_extra=INT32)
    """GPUs per replica."""
    metric: MetricName | None = None
    """What the profile optimises."""
    precision: PrecisionName | None = None
    """Numeric precision."""
    type: TemplateTypeName | None = None
    """How far the profile is tuned."""


AnyValue = Annotated[Any, WithJsonSchema({"x-kubernetes-preserve-unknown-fields": True})]
"""Any JSON value, kept as written."""


class TemplateProfile(_Object):
    """The profile discovery found for the template."""

    engine_args: AnyValue = Field(default=None, alias="engine_args")
    """Arguments of the inference engine."""
    env_vars: dict[str, str] | None = Field(default=None, alias="env_vars")
    """Environment of the inference container."""
    metadata: ProfileMetadata | None = None
    """What the profile runs on and optimises."""
    original_discovery_output: AnyValue = None
    """The discovery Job's output, as written."""


class AIMServiceTemplateStatus(_Object):
    """Observed state of a service template, as upstream's controller publishes it."""

    status: Literal["Pending", "Progressing", "Ready", "Degraded", "Failed", "NotAvailable"] = ome.crd_default(
        "Pending"
    )
    """Overall state of the template."""
    conditions: MetaConditionList
    """Conditions of the template."""
    observed_generation: Int64
    """The metadata.generation this status was computed from."""
    resolved_runtime_config: LegacyResolvedReference | None = None
    """The runtime config in use."""
    resolved_model: LegacyResolvedReference | None = None
    """The model the template serves."""
    resolved_cache: LegacyResolvedReference | None = None
    """The template cache holding its model files."""
    discovery_job: LegacyResolvedReference | None = None
    """The discovery Job."""
    discovery: TemplateDiscovery | None = None
    """How discovery went."""
    profile: TemplateProfile | None = None
    """The profile discovery found."""
    resolved_hardware: TemplateHardware | None = None
    """The hardware discovery resolved."""
    hardware_summary: str | None = None
    """The hardware in a few words, e.g. 1 x MI300X or CPU."""
    resolved_node_affinity: Annotated[Unstructured, ome.k8s_type(ome.CORE + "NodeAffinity")] | None = None
    """Node affinity of the inference pods, from the resolved hardware."""
    model_sources: list[LegacyModelSource] | None = None
    """The model files, given or discovered."""


class AIMClusterServiceTemplate(_AIMResource):
    """Upstream's legacy (v1alpha1) cluster-wide service template: one way to serve an AIMClusterModel."""

    kind: str | None = "AIMClusterServiceTemplate"
    """Kind of the object."""
    spec: AIMClusterServiceTemplateSpec | None = None
    status: AIMServiceTemplateStatus | None = None


class AIMServiceTemplate(_AIMResource):
    """Upstream's legacy (v1alpha1) service template of one namespace: one way to serve a model, with caching."""

    kind: str | None = "AIMServiceTemplate"
    """Kind of the object."""
    spec: AIMServiceTemplateSpec | None = None
    status: AIMServiceTemplateStatus | None = None
