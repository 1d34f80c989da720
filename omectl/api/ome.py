"""Typed models of the `ome.io/v1beta1` resources omectl serves: runtimes, InferenceServices and base models.

These models are the one source of truth for the CRD YAML in `deploy/crds/` (see `omectl.api.crdgen`) and validate
objects at the edges (webhook input, the CLI). The hot path works on plain dicts, not on these models.

Conventions that the generated CRDs rely on:
- every optional field defaults to `None`, so "absent" stays absent (the merge treats absent, null, `[]`, `{}` and
  `""` alike); schema defaults exist only where `crd_default` marks one (upstream OME's: references' kind and
  apiGroup, modelFormat operator/weight, autoSync) and where the Kubernetes types have them (ports' protocol, ...);
- the Kubernetes core types (PodSpec, Container, Volume, probes, affinity, tolerations, ...) take their CRD schema
  from the Kubernetes OpenAPI definitions (`omectl.k8s_openapi`): a model marked `k8s_model(...)` is that type
  plus its own fields, a field marked `k8s_type(...)` / `pod_field(...)` is that type; `tests/api/test_upstream_crds.py`
  checks every field upstream OME's CRDs have is ours and as strictly typed;
- otherwise a model with `extra="allow"` (`_OpenObject`) becomes an object with
  `x-kubernetes-preserve-unknown-fields`, and so does a `dict[str, Any]` field;
- `int | str` fields become `x-kubernetes-int-or-string` (quantities, IntOrString).
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel as _PydanticModel
from pydantic import ConfigDict, Field, JsonValue, WithJsonSchema
from pydantic.alias_generators import to_camel

GROUP: Final = "ome.io"
VERSION: Final = "v1beta1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

# The JSON-schema key that tells the CRD generator to keep a field's default in the CRD.
CRD_DEFAULT_MARK: Final = "x-omectl-crd-default"
# The JSON-schema key that tells the CRD generator to take a Kubernetes type's schema (omectl.k8s_openapi).
K8S_MARK: Final = "x-omectl-k8s"
CORE: Final = "io.k8s.api.core.v1."

Unstructured = dict[str, Any]
"""A Kubernetes core object kept opaque in the CRD (`x-kubernetes-preserve-unknown-fields: true`)."""

IntOrString = int | str
"""A quantity or an IntOrString (`x-kubernetes-int-or-string: true`)."""

ObjectMetaSchema = WithJsonSchema({"type": "object"})

Int32 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int32"})]
Int64 = Annotated[int, WithJsonSchema({"type": "integer", "format": "int64"})]
NonNegativeInt64 = Annotated[int, Field(ge=0), WithJsonSchema({"type": "integer", "format": "int64", "minimum": 0})]
PositiveInt32 = Annotated[int, Field(ge=1), WithJsonSchema({"type": "integer", "format": "int32", "minimum": 1})]
AtomicStrings = Annotated[list[str], Field(json_schema_extra={"x-kubernetes-list-type": "atomic"})]


def crd_default(value: Any) -> Any:
    """A field default that also becomes the CRD schema's `default` (the API server fills it in)."""
    return Field(default=value, json_schema_extra={CRD_DEFAULT_MARK: True})


def list_map(*keys: str) -> Any:
    """Schema extras for a list whose items are identified by `keys` (server-side apply merges them by key)."""
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


_ATOMIC: Final[dict[str, JsonValue]] = {"x-kubernetes-list-type": "atomic"}


def k8s_model(definition: str) -> ConfigDict:
    """Model config of a copy of a Kubernetes type: its CRD schema is that type's, plus the model's own fields."""
    return ConfigDict(json_schema_extra={K8S_MARK: definition})


def k8s_type(definition: str, prop: str | None = None) -> WithJsonSchema:
    """A field that carries a Kubernetes type (or one property of one) as written; its CRD schema is derived."""
    return WithJsonSchema({K8S_MARK: definition if prop is None else [definition, prop]})


def pod_field(prop: str) -> WithJsonSchema:
    """A field that is core/v1 PodSpec's field `prop`."""
    return k8s_type(CORE + "PodSpec", prop)


class _Object(_PydanticModel):
    """A typed Kubernetes object: camelCase on the wire, unknown fields dropped (the CRD prunes them too)."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        use_attribute_docstrings=True,
        extra="ignore",
    )

    def to_dict(self) -> dict[str, Any]:
        """The wire form: camelCase keys, only the fields that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class _OpenObject(_Object):
    """A partly typed Kubernetes object whose other fields are kept as they are."""

    model_config = ConfigDict(extra="allow")


class ObjectMeta(_OpenObject):
    """Standard object metadata; the API server owns its schema, so the CRD says only `type: object`."""

    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    finalizers: list[str] | None = None
    owner_references: list[Unstructured] | None = None


class Resource(_Object):
    """A top-level object: apiVersion, kind, metadata, spec and status."""

    api_version: str | None = API_VERSION
    """APIVersion of the object's schema."""
    kind: str | None = None
    """Kind of the object."""
    metadata: Annotated[ObjectMeta | None, ObjectMetaSchema] = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form, with apiVersion and kind always present."""
        body = super().to_dict()
        return {"apiVersion": self.api_version, "kind": self.kind, **body}


# ---------------------------------------------------------------------------------------------------------
# Kubernetes core types: the fields the code and `kubectl explain` name; their CRD schema is Kubernetes' own


class EnvVar(_Object):
    """An environment variable of a container."""

    name: str
    """Name of the environment variable."""
    value: str | None = None
    """Value; `$(VAR)` references to earlier variables are expanded by the kubelet."""
    value_from: Unstructured | None = None
    """Source for the value (configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef)."""


class ContainerPort(_Object):
    """A network port a container exposes."""

    container_port: int = Field(ge=1, le=65535)
    """Port number on the pod's IP address."""
    name: str | None = None
    """IANA_SVC_NAME of the port, unique within the pod."""
    protocol: str | None = None
    """UDP, TCP or SCTP; Kubernetes assumes TCP when unset."""
    host_port: int | None = None
    """Port number on the host."""
    host_ip: str | None = Field(default=None, alias="hostIP")
    """Host IP to bind the external port to."""


class VolumeMount(_Object):
    """A volume mounted into a container."""

    name: str
    """Name of the pod volume to mount."""
    mount_path: str
    """Path inside the container at which the volume is mounted."""
    read_only: bool | None = None
    """Mount read-only."""
    sub_path: str | None = None
    """Path within the volume to mount instead of its root."""
    sub_path_expr: str | None = None
    """Like subPath, with $(VAR) references expanded from the container's environment."""
    mount_propagation: str | None = None
    """How mounts propagate between host and container (None, HostToContainer, Bidirectional)."""
    recursive_read_only: str | None = None
    """Whether a read-only mount is recursively read-only (Disabled, IfPossible, Enabled)."""


class ResourceRequirements(_Object):
    """Compute resources of a container; requests and limits merge by key during inheritance."""

    requests: dict[str, IntOrString] | None = None
    """Minimum resources required, e.g. cpu, memory, nvidia.com/gpu."""
    limits: dict[str, IntOrString] | None = None
    """Maximum resources allowed."""
    claims: list[Unstructured] | None = None
    """Dynamic resource claims used by this container."""


class Container(_Object):
    """A container (core/v1 Container). As a runner it overrides the component's main container."""

    model_config = k8s_model(CORE + "Container")

    name: str
    """Name of the container; every runner needs one (it is how the runner finds its container)."""
    image: str | None = None
    """Container image name."""
    command: list[str] | None = None
    """Entrypoint array; a child's list replaces its parent's whole list."""
    args: list[str] | None = None
    """Arguments to the entrypoint; a child's list replaces its parent's whole list."""
    working_dir: str | None = None
    """Working directory of the container."""
    ports: list[ContainerPort] | None = None
    """Ports to expose; merged by containerPort during inheritance."""
    env_from: list[Unstructured] | None = None
    """Sources (ConfigMaps, Secrets) to populate environment variables from."""
    env: list[EnvVar] | None = None
    """Environment variables; merged by name during inheritance."""
    resources: ResourceRequirements | None = None
    """Compute resources required by this container."""
    resize_policy: list[Unstructured] | None = None
    """Resize policy per resource."""
    restart_policy: str | None = None
    """Restart policy of an init container (Always makes it a sidecar)."""
    volume_mounts: list[VolumeMount] | None = None
    """Volumes to mount; merged by mountPath during inheritance."""
    volume_devices: list[Unstructured] | None = None
    """Block devices to use."""
    liveness_probe: Unstructured | None = None
    """Periodic probe of container liveness."""
    readiness_probe: Unstructured | None = None
    """Periodic probe of container service readiness."""
    startup_probe: Unstructured | None = None
    """Probe that must succeed before the other probes start."""
    lifecycle: Unstructured | None = None
    """Actions to take on container lifecycle events."""
    termination_message_path: str | None = None
    """File the container's termination message is written to."""
    termination_message_policy: str | None = None
    """How the termination message is populated (File, FallbackToLogsOnError)."""
    image_pull_policy: str | None = None
    """Always, Never or IfNotPresent."""
    security_context: Unstructured | None = None
    """Security options the container runs with."""
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None


class Volume(_OpenObject):
    """A pod volume: a name plus one volume source (emptyDir, hostPath, configMap, ...), kept as written."""

    model_config = k8s_model(CORE + "Volume")

    name: str
    """Name of the volume; volumes merge by name during inheritance."""


class OpaqueContainer(_OpenObject):
    """A pod container carried as written: only its name, the key it merges by, is typed."""

    model_config = k8s_model(CORE + "Container")

    name: str
    """Name of the container; containers merge by name during inheritance."""


class LocalObjectReference(_Object):
    """A reference to an object in the same namespace."""

    name: str | None = None


class PodSpec(_Object):
    """Pod-level fields of a component (OME's copy of core/v1 PodSpec)."""

    model_config = k8s_model(CORE + "PodSpec")

    volumes: list[Volume] | None = None
    """Volumes that containers of the pod can mount; merged by name."""
    init_containers: list[OpaqueContainer] | None = None
    """Init containers (core/v1 Container); merged by name."""
    containers: list[OpaqueContainer] | None = None
    """Extra containers of the pod (core/v1 Container); merged by name."""
    ephemeral_containers: list[Unstructured] | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    active_deadline_seconds: int | None = None
    dns_policy: str | None = None
    node_selector: dict[str, str] | None = None
    """Node labels the pod must match; merged by key."""
    service_account_name: str | None = None
    service_account: str | None = None
    automount_service_account_token: bool | None = None
    node_name: str | None = None
    host_network: bool | None = None
    host_pid: bool | None = Field(default=None, alias="hostPID")
    host_ipc: bool | None = Field(default=None, alias="hostIPC")
    share_process_namespace: bool | None = None
    security_context: Unstructured | None = None
    image_pull_secrets: list[LocalObjectReference] | None = None
    """Secrets for pulling images; merged by name."""
    hostname: str | None = None
    subdomain: str | None = None
    affinity: Unstructured | None = None
    """Scheduling constraints (node, pod and pod anti-affinity)."""
    scheduler_name: str | None = None
    tolerations: list[Unstructured] | None = None
    """Tolerations; a child's list replaces its parent's."""
    host_aliases: list[Unstructured] | None = None
    priority_class_name: str | None = None
    priority: int | None = None
    dns_config: Unstructured | None = None
    readiness_gates: list[Unstructured] | None = None
    runtime_class_name: str | None = None
    enable_service_links: bool | None = None
    preemption_policy: str | None = None
    overhead: dict[str, IntOrString] | None = None
    topology_spread_constraints: list[Unstructured] | None = None
    """Topology spread constraints; merged by topologyKey."""
    set_hostname_as_fqdn: bool | None = Field(default=None, alias="setHostnameAsFQDN")
    os: Unstructured | None = None
    host_users: bool | None = None
    scheduling_gates: list[Unstructured] | None = None
    resource_claims: list[Unstructured] | None = None


class ScaledObjectAuthRef(_Object):
    """The KEDA TriggerAuthentication a component's scaler uses."""

    name: str = Field(min_length=1)
    kind: Literal["TriggerAuthentication", "ClusterTriggerAuthentication"] = crd_default("TriggerAuthentication")


class KedaConfig(_Object):
    """KEDA autoscaling of a component from a Prometheus query."""

    enable_keda: bool | None = None
    prom_server_address: str | None = None
    custom_prom_query: str | None = None
    scaling_threshold: str | None = None
    scaling_operator: str | None = None
    auth_modes: str | None = None
    authentication_ref: ScaledObjectAuthRef | None = None


class AcceleratorConstraints(_Object):
    """Limits on the accelerator classes a component may be placed on."""

    min_memory: Int64 | None = None
    max_memory: Int64 | None = None
    min_compute_performance_tflops: Int64 | None = Field(default=None, alias="minComputePerformanceTFLOPS")
    required_features: AtomicStrings | None = None
    preferred_precisions: AtomicStrings | None = None
    architecture_families: AtomicStrings | None = None
    excluded_classes: AtomicStrings | None = None
    min_architecture_version: str | None = None


class AcceleratorSelector(_Object):
    """Which accelerator class a component runs on: a named class, or the best fit under constraints."""

    accelerator_class: str | None = None
    constraints: AcceleratorConstraints | None = None
    policy: Literal["BestFit", "Cheapest", "MostCapable", "FirstAvailable"] | None = None


class ComponentExtensionSpec(_Object):
    """Scaling and workload settings shared by the engine, decoder and router."""

    min_replicas: int | None = None
    """Minimum number of replicas; 0 makes the component serverless."""
    max_replicas: int | None = None
    """Maximum number of replicas for autoscaling."""
    scale_target: int | None = None
    """Autoscaling target value for scaleMetric."""
    scale_metric: Literal["cpu", "memory", "concurrency", "rps"] | None = None
    """Metric the autoscaler scales on."""
    container_concurrency: Int64 | None = None
    timeout_seconds: Int64 | None = None
    canary_traffic_percent: Int64 | None = None
    labels: dict[str, str] | None = None
    """Labels added to the component's workload objects; merged by key."""
    annotations: dict[str, str] | None = None
    """Annotations added to the component's workload objects; merged by key."""
    min_available: IntOrString | None = None
    """PodDisruptionBudget minAvailable."""
    max_unavailable: IntOrString | None = None
    """PodDisruptionBudget maxUnavailable."""
    deployment_strategy: Annotated[Unstructured, k8s_type("io.k8s.api.apps.v1.DeploymentStrategy")] | None = None
    """apps/v1 DeploymentStrategy of the component's Deployment."""
    keda_config: KedaConfig | None = None
    """KEDA autoscaling of the component."""


class LeaderSpec(PodSpec):
    """The leader pod of a multi-node component."""

    runner: Container | None = None
    """Main container of the leader pod."""


class WorkerSpec(PodSpec):
    """The worker pods of a multi-node component."""

    size: int | None = None
    """Number of worker pods per leader."""
    runner: Container | None = None
    """Main container of the worker pods."""


class EngineSpec(PodSpec, ComponentExtensionSpec):
    """The engine component (prefill, or the whole model when there is no decoder)."""

    runner: Container | None = None
    """Main container of the engine pods."""
    leader: LeaderSpec | None = None
    """Leader pod of a multi-node engine."""
    worker: WorkerSpec | None = None
    """Worker pods of a multi-node engine."""
    accelerator_override: AcceleratorSelector | None = None
    """Accelerator class selection for this component."""


class DecoderSpec(EngineSpec):
    """The decoder component of a prefill/decode disaggregated deployment."""


class RouterSpec(PodSpec, ComponentExtensionSpec):
    """The router component in front of the engine and decoder."""

    runner: Container | None = None
    """Main container of the router pods."""
    config: dict[str, str] | None = None
    """Router settings, passed to the router as environment variables."""


# ---------------------------------------------------------------------------------------------------------
# ServingRuntime / ClusterServingRuntime


class ModelFormat(_Object):
    """A model storage format, e.g. safetensors."""

    name: str
    """Name of the format."""
    version: str | None = None
    """Version of the format: major, major.minor or major.minor.patch."""
    operator: str = crd_default("Equal")
    """How the version is compared during selection: Equal, GreaterThan or GreaterThanOrEqual."""
    weight: Int64 = crd_default(1)
    """Weight of this match in the selection score."""


class ModelFrameworkSpec(ModelFormat):
    """The library a model is written for, e.g. transformers."""

    name: str
    """Name of the framework."""
    version: str | None = None
    """Version of the framework, e.g. 4.45.0.dev0."""


class DiffusionComponent(_Object):
    """One component of a diffusion pipeline: its class and the library it comes from."""

    type: str | None = None
    library: str | None = None


class DiffusionPipeline(_Object):
    """The parts of a diffusion model (diffusers' model_index.json)."""

    class_name: str | None = None
    scheduler: DiffusionComponent | None = None
    text_encoder: DiffusionComponent | None = None
    tokenizer: DiffusionComponent | None = None
    transformer: DiffusionComponent | None = None
    vae: DiffusionComponent | None = None
    additional_components: (
        Annotated[dict[str, DiffusionComponent], Field(json_schema_extra={"x-kubernetes-map-type": "atomic"})] | None
    ) = None


class TensorParallelismConfig(_Object):
    """Parallelism sizes for one accelerator class."""

    tensor_parallel_size: NonNegativeInt64 | None = None
    pipeline_parallel_size: NonNegativeInt64 | None = None
    data_parallel_size: NonNegativeInt64 | None = None


class AcceleratorModelConfig(_Object):
    """How a runtime serves a format on one accelerator class."""

    min_memory_per_billion_params: NonNegativeInt64 | None = None
    tensor_parallelism_override: TensorParallelismConfig | None = None
    environment_override: dict[str, str] | None = None
    runtime_args_override: AtomicStrings | None = None


class SupportedModelFormat(_Object):
    """One model format a runtime can serve."""

    name: str | None = None
    """Deprecated: the model format name; use modelFormat.name."""
    model_format: ModelFormat
    """Format of the model."""
    model_type: str | None = None
    """Deprecated."""
    version: str | None = None
    """Version of the model format."""
    model_framework: ModelFrameworkSpec
    """Framework of the model."""
    model_architecture: str | None = None
    """Architecture, e.g. LlamaForCausalLM."""
    quantization: str | None = None
    """Quantization, e.g. fp8, fbgemm_fp8, int4."""
    diffusion_pipeline: DiffusionPipeline | None = None
    """Diffusion pipeline the format requires."""
    auto_select: bool | None = None
    """Allow OME to choose this runtime on its own for this format; false when unset."""
    priority: (
        Annotated[int, Field(ge=1), WithJsonSchema({"type": "integer", "format": "int32", "minimum": 1})] | None
    ) = None
    """Priority among auto-selected runtimes for the same format; higher wins."""
    accelerator_config: dict[str, AcceleratorModelConfig] | None = None
    """Per accelerator class overrides (memory per billion parameters, parallelism, args, env)."""


class ModelSizeRange(_Object):
    """The range of model parameter counts a runtime supports, e.g. 2B to 4B; a missing bound is unbounded."""

    min: str | None = None
    """Smallest supported model size, e.g. 2B."""
    max: str | None = None
    """Largest supported model size, e.g. 4B."""


class AcceleratorRequirements(_Object):
    """Accelerators a runtime can run on."""

    accelerator_classes: AtomicStrings | None = None
    min_memory: NonNegativeInt64 | None = None
    min_compute_performance_tflops: NonNegativeInt64 | None = Field(default=None, alias="minComputePerformanceTFLOPS")
    min_architecture_version: str | None = None
    required_features: AtomicStrings | None = None
    preferred_precisions: AtomicStrings | None = None


class ServingRuntimePodSpec(_Object):
    """Legacy top-level pod fields of a runtime."""

    containers: Annotated[list[OpaqueContainer], pod_field("containers")] | None = None
    """Legacy containers (core/v1 Container); the one named like a runner gives fallback resources."""
    volumes: Annotated[list[Volume], pod_field("volumes")] | None = None
    node_selector: dict[str, str] | None = None
    """Node labels merged into engine and decoder pods; merged by key."""
    affinity: Annotated[Unstructured, pod_field("affinity")] | None = None
    tolerations: Annotated[list[Unstructured], pod_field("tolerations")] | None = None
    labels: dict[str, str] | None = None
    """Labels; merged by key during inheritance."""
    annotations: dict[str, str] | None = None
    """Annotations; merged by key during inheritance."""
    image_pull_secrets: Annotated[list[LocalObjectReference], pod_field("imagePullSecrets")] | None = None
    scheduler_name: str | None = None
    host_ipc: bool | None = Field(default=None, alias="hostIPC")
    dns_policy: str | None = None
    host_network: bool | None = None


class WorkerPodSpec(ServingRuntimePodSpec):
    """Legacy multi-node workers of a runtime."""

    size: int | None = None
    """Number of worker pods."""


class ServingRuntimeSpec(ServingRuntimePodSpec):
    """What a runtime serves and how its components run. A child runtime sets only what differs from its parent."""

    supported_model_formats: list[SupportedModelFormat] | None = Field(default=None, json_schema_extra=_ATOMIC)
    """Model formats the runtime supports; a child's list replaces its parent's."""
    model_size_range: ModelSizeRange | None = None
    """Model sizes the runtime supports."""
    disabled: bool | None = None
    """Disable the runtime: no InferenceService may use it. A profile sets true; a child can set false."""
    router_config: RouterSpec | None = None
    """Router component."""
    engine_config: EngineSpec | None = None
    """Engine component."""
    decoder_config: DecoderSpec | None = None
    """Decoder component."""
    protocol_versions: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    """Supported protocols (openAI, openInference-v1, openInference-v2); replaced whole."""
    workers: WorkerPodSpec | None = None
    """Legacy multi-node workers."""
    accelerator_requirements: AcceleratorRequirements | None = None
    """Accelerators the runtime can run on."""


class Condition(_Object):
    """An observation of one aspect of an object's state."""

    type: str
    """Type of the condition, e.g. InheritanceReady."""
    status: str
    """True, False or Unknown."""
    reason: str | None = None
    """Machine-readable reason for the last transition, in CamelCase."""
    message: str | None = None
    """Human-readable detail of the last transition."""
    last_transition_time: str | None = Field(default=None, json_schema_extra={"format": "date-time"})
    """When the status last changed."""
    observed_generation: int | None = None
    """The metadata.generation the condition was computed from."""
    severity: str | None = None
    """Knative-style severity of a non-True condition (Error, Warning, Info)."""


ConditionList = Annotated[list[Condition] | None, Field(default=None, json_schema_extra=list_map("type"))]


class ServingRuntimeStatus(_Object):
    """What omectl observed about a runtime's inheritance chain."""

    inheritance_chain: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    """The runtime's chain, root first; kept from the last chain that resolved."""
    conditions: ConditionList
    """InheritanceReady tells whether the chain resolves."""
    observed_generation: int | None = None
    """The metadata.generation this status was computed from."""


class ServingRuntime(Resource):
    """A namespaced serving runtime: how to serve a family of models. `ome.io/inherit-from` names its parent."""

    kind: str | None = "ServingRuntime"
    spec: ServingRuntimeSpec | None = None
    status: ServingRuntimeStatus | None = None


class ClusterServingRuntime(ServingRuntime):
    """A cluster-scoped serving runtime; its parents are ClusterServingRuntimes."""

    kind: str | None = "ClusterServingRuntime"


# ---------------------------------------------------------------------------------------------------------
# InferenceService


class ModelRef(_Object):
    """The base model an InferenceService serves."""

    name: str
    """Name of a BaseModel in the namespace or of a ClusterBaseModel."""
    kind: str = crd_default("ClusterBaseModel")
    """BaseModel or ClusterBaseModel (informational: the namespace is searched first)."""
    api_group: str = crd_default(GROUP)
    """API group of the model kind."""
    fine_tuned_weights: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    """Fine-tuned weights applied to the base model."""


class ServingRuntimeRef(_Object):
    """The runtime an InferenceService names."""

    name: str
    """Name of a ServingRuntime in the namespace or of a ClusterServingRuntime."""
    kind: str = crd_default("ClusterServingRuntime")
    """ServingRuntime or ClusterServingRuntime (informational: the namespace is searched first)."""
    api_group: str = crd_default(GROUP)
    """API group of the runtime kind."""
    auto_sync: bool = crd_default(True)
    """Follow the runtime's live merged spec (true), or keep the pinned snapshot and report drift (false)."""
    revision: str | None = None
    """Pin to this runtime revision (ControllerRevision name), whatever autoSync says."""


class PredictorModel(Container):
    """Deprecated: the model container of a predictor, with the model and runtime it names."""

    name: str | None = None  # type: ignore[assignment]
    """Name of the container."""
    base_model: str | None = None
    fine_tuned_weights: AtomicStrings | None = None
    runtime: str | None = None
    runtime_version: str | None = None
    protocol_version: str | None = None
    storage_uri: str | None = None


class PredictorSpec(PodSpec, ComponentExtensionSpec):
    """Deprecated: the component InferenceServices had before engine; migrated into engine."""

    model: PredictorModel | None = None
    worker_spec: WorkerSpec | None = None


class InferenceServiceSpec(_Object):
    """The model to serve, the runtime to serve it with, and per-service overrides of its components."""

    predictor: PredictorSpec | None = None
    """Deprecated: migrated into engine."""
    engine: EngineSpec | None = None
    """Engine component; laid over the runtime's engineConfig."""
    decoder: DecoderSpec | None = None
    """Decoder component; laid over the runtime's decoderConfig."""
    model: ModelRef | None = None
    """Base model to serve."""
    runtime: ServingRuntimeRef | None = None
    """Runtime to use; without it OME selects one (no inheritance)."""
    router: RouterSpec | None = None
    """Router component; laid over the runtime's routerConfig."""
    keda_config: KedaConfig | None = None
    """KEDA autoscaling of the service."""
    accelerator_selector: AcceleratorSelector | None = None
    """Accelerator class selection (acceleratorClass, constraints, policy)."""


class RuntimeRevisionStatus(_OpenObject):
    """The runtime revision an InferenceService renders from."""

    name: str | None = None
    """Runtime name."""
    kind: str | None = None
    """ServingRuntime or ClusterServingRuntime."""
    chain: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    """The runtime's inheritance chain, root first."""
    revision: str | None = None
    """Name of the runtime revision (ControllerRevision) in use."""
    hash: str | None = None
    """Hash of the merged runtime spec."""


class ComponentStatus(_OpenObject):
    """Status of one component (engine, decoder, router)."""

    latest_ready_revision: str | None = None
    latest_created_revision: str | None = None
    previous_rolledout_revision: str | None = None
    latest_rolledout_revision: str | None = None
    url: str | None = None
    rest_url: str | None = Field(default=None, alias="restURL")
    address: Unstructured | None = None
    traffic: list[Unstructured] | None = None
    selected_accelerator: Unstructured | None = None


class InferenceServiceStatus(_Object):
    """Observed state of an InferenceService."""

    conditions: ConditionList
    """Ready, component readiness, RuntimeDrifted, ..."""
    observed_generation: int | None = None
    annotations: dict[str, str] | None = None
    url: str | None = None
    """URL of the service."""
    address: Unstructured | None = None
    components: dict[str, ComponentStatus] | None = None
    """Status per component."""
    model_status: Unstructured | None = None
    runtime: RuntimeRevisionStatus | None = None
    """The runtime revision in use."""


class InferenceService(Resource):
    """Serves a base model with a runtime."""

    kind: str | None = "InferenceService"
    spec: InferenceServiceSpec | None = None
    status: InferenceServiceStatus | None = None


# ---------------------------------------------------------------------------------------------------------
# BaseModel / ClusterBaseModel


class StorageSpec(_Object):
    """Where the model's files come from and where they are stored on the node."""

    path: str | None = None
    """Absolute path of the model on the node."""
    storage_uri: str
    """Source of the model (oci://, pvc://, hf://, vendor://)."""
    key: str | None = None
    """Key of the Secret with the storage credentials."""
    schema_path: str | None = None
    parameters: dict[str, str] | None = None
    node_selector: Annotated[dict[str, str], Field(json_schema_extra={"x-kubernetes-map-type": "atomic"})] | None = None
    node_affinity: Annotated[Unstructured, k8s_type(CORE + "NodeAffinity")] | None = None
    download_policy: Literal["AlwaysDownload", "ReuseIfExists"] | None = None


class BaseModelSpec(_Object):
    """A model's files and the properties runtime selection matches on."""

    model_format: ModelFormat | None = None
    """Storage format, e.g. safetensors 1.0.0."""
    model_type: str | None = None
    """Architecture family (config.json model_type)."""
    model_framework: ModelFrameworkSpec | None = None
    """Framework, e.g. transformers 4.45.0.dev0."""
    model_architecture: str | None = None
    """Architecture, e.g. LlamaForCausalLM."""
    quantization: str | None = None
    """Quantization, e.g. fp8."""
    model_parameter_size: str | None = None
    """Parameter count, e.g. 3.21B."""
    model_capabilities: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    model_configuration: Unstructured | None = None
    diffusion_pipeline: DiffusionPipeline | None = None
    storage: StorageSpec
    """Storage of the model."""
    display_name: str | None = None
    version: str | None = None
    disabled: bool | None = None
    """Disable the model: no InferenceService may serve it."""
    vendor: str | None = None
    compartment_id: str | None = Field(default=None, alias="compartmentID")
    serving_mode: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    max_tokens: Int32 | None = None
    additional_metadata: dict[str, str] | None = None
    api_capabilities: AtomicStrings | None = None
    """API capabilities the model serves (e.g. chat, completions, embeddings)."""


class ModelStatus(_Object):
    """Observed state of a model's download."""

    lifecycle: str | None = None
    state: str | None = None
    """Creating, Importing, In_Transit, In_Training, Ready or Failed."""
    nodes_ready: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)
    nodes_failed: list[str] | None = Field(default=None, json_schema_extra=_ATOMIC)


class BaseModel(Resource):
    """A namespaced base model."""

    kind: str | None = "BaseModel"
    spec: BaseModelSpec | None = None
    status: ModelStatus | None = None


class ClusterBaseModel(BaseModel):
    """A cluster-scoped base model."""

    kind: str | None = "ClusterBaseModel"
