"""Render the Kubernetes objects that serve an InferenceService from its merged runtime spec (OME's ISVC render).

What `render_workloads` builds, component by component (engine, then decoder, then router):

- A component exists only when the InferenceService declares it (`spec.engine`, `spec.decoder`, `spec.router`;
  `{}` declares it). The engine is required. Each declared block is laid over the runtime's `engineConfig`,
  `decoderConfig` or `routerConfig` with `merge_spec`, so the spec's merge rules hold here too: the
  InferenceService's `command` and `args` replace the runtime's, env merges by name, and so on.
- Deployment mode per component (`component_deployment_modes`), from the merged block: the engine takes a valid
  `ome.io/deploymentMode` annotation of its own, else `MultiNode` with a leader or worker, else `Serverless` with
  `minReplicas: 0`, else `RawDeployment`; a decoder is `MultiNode` with a leader or worker, else `RawDeployment`, and
  turns a serverless engine into `RawDeployment`; a router is `Serverless` with `minReplicas: 0`, else
  `RawDeployment`. `deployment_mode` gives the InferenceService's mode: `PDDisaggregated` with a decoder, else the
  engine's. omectl does not manage Knative, so a serverless component is refused (`RenderError`, reason
  `ServerlessModeRejected`), as upstream refuses it where Knative is absent.
- RawDeployment: an `apps/v1` Deployment `<isvc>-<component>` and a Service of the same name. MultiNode: a
  `leaderworkerset.x-k8s.io/v1` LeaderWorkerSet `lws-<last 50 characters of <isvc>-<component>>` with group size
  `worker.size + 1`, and a Service `<isvc>-<component>` for its leaders. A router also gets the ServiceAccount,
  Role and RoleBinding `<isvc>-router` its pods run as.
- Pods: the merged block's pod fields (the leader's or the worker's for MultiNode); its `runner` is merged into the
  pod container of the same name (appended when there is none; `ome-container` when the runner has no name), the
  container's own args followed by the runner's. Only that runner container gets its `{{...}}` placeholders filled
  from the InferenceService's metadata (`omectl.core.ome.placeholders`; an unknown placeholder is a `RenderError`,
  as upstream's template fails). `$(MODEL_PATH)` stays literal for the kubelet.
- Model (engine and decoder, when the InferenceService has `spec.model`): env `MODEL_PATH` and a read-only mount of
  the model's `spec.storage.path` (unless set already, or the InferenceService injects the model itself), a
  `hostPath` volume named after the model, and the node selector `models.ome.io/clusterbasemodel.<model>` (or
  `models.ome.io/<ns>.basemodel.<model>`) `: "Ready"`. Without `spec.model` none of this.
  `PARALLELISM_SIZE` = GPUs per pod * (1 + worker size) when the runner has an `nvidia.com/gpu` limit (else request).
- Labels and annotations as upstream (`ome.io/inferenceservice`, `component`, `serving-runtime`, `base-model-*`,
  `ome.io/serving-runtime`, `ome.io/base-model-*`), plus, on the workload object only (not its pods, so they never
  roll pods by themselves), `ome.io/runtime-kind` and, when given, `ome.io/runtime-revision`.
- Every object is owned by the InferenceService (`controller: true`, `blockOwnerDeletion: true`).
- Rollout: RollingUpdate with maxUnavailable 0 and maxSurge 1 unless the block sets `deploymentStrategy`,
  revisionHistoryLimit 10, progressDeadlineSeconds 600; a LeaderWorkerSet rolls 1 group at a time (1/1).
  omectl renders no HPA: a Deployment's `replicas` is `max(minReplicas, 1)`.

The result is deterministic: the same inputs give equal lists, objects in the order above and maps with sorted
keys, so `render_hash` (sha256 of canonical JSON) detects a change without comparing objects field by field. The
inputs are never modified and the result shares nothing with them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.jsonish import as_mapping
from omectl.core.layering import copy_json
from omectl.core.ome.merge import merge_spec
from omectl.core.ome.placeholders import PlaceholderError, fill_in_value
from omectl.core.ome.runtimes import RUNTIME_KINDS

ENGINE: Final = "engine"
DECODER: Final = "decoder"
ROUTER: Final = "router"
COMPONENTS: Final = (ENGINE, DECODER, ROUTER)
RUNTIME_CONFIG_FIELDS: Final[Mapping[str, str]] = {
    ENGINE: "engineConfig",
    DECODER: "decoderConfig",
    ROUTER: "routerConfig",
}
"""Component → the field of a runtime spec that configures it."""

RAW_DEPLOYMENT: Final = "RawDeployment"
MULTI_NODE: Final = "MultiNode"
SERVERLESS: Final = "Serverless"
PD_DISAGGREGATED: Final = "PDDisaggregated"
# Valid values of the annotation upstream; the last two are modes omectl does not render.
_ANNOTATION_MODES: Final = frozenset({RAW_DEPLOYMENT, MULTI_NODE, SERVERLESS, "MultiNodeRayVLLM", "VirtualDeployment"})

DEPLOYMENT_MODE_ANNOTATION: Final = "ome.io/deploymentMode"
SERVICE_TYPE_ANNOTATION: Final = "ome.io/service-type"
INJECT_MODEL_INIT_ANNOTATION: Final = "ome.io/inject-model-init"
FT_MERGED_WEIGHTS_ANNOTATION: Final = "ome.io/fine-tuned-serving-with-merged-weights"
RUNTIME_KIND_ANNOTATION: Final = "ome.io/runtime-kind"
RUNTIME_REVISION_ANNOTATION: Final = "ome.io/runtime-revision"
MODEL_CATEGORY_ANNOTATION: Final = "models.ome.io/category"

RUNNER_CONTAINER: Final = "ome-container"
GPU_RESOURCE: Final = "nvidia.com/gpu"
LWS_API_VERSION: Final = "leaderworkerset.x-k8s.io/v1"
ISVC_API_VERSION: Final = "ome.io/v1beta1"
DEFAULT_HTTP_PORT: Final = 8080
MAX_NAME_LENGTH: Final = 63

_DROPPED_ISVC_ANNOTATIONS: Final = frozenset(
    {
        "autoscaling.knative.dev/min-scale",
        "autoscaling.knative.dev/max-scale",
        "internal.ome.io/storage-initializer-sourceuri",
        "kubectl.kubernetes.io/last-applied-configuration",
    }
)
# Annotations meant for pods only; Services do not carry them.
_POD_ONLY_ANNOTATION_PREFIXES: Final = (
    "k8s.grafana.com/",
    "loki.grafana.com/",
    "prometheus.io/",
    "networking.gke.io/",
    "rdma.ome.io/",
    "ome.io/inject-model-init",
    "ome.io/inject-fine-tuned-adapter",
    "ome.io/inject-serving-sidecar",
)
_WORKER_DROPPED_ANNOTATIONS: Final = frozenset({"prometheus.io/path", "prometheus.io/port", "prometheus.io/scrape"})

POD_SPEC_FIELDS: Final = (
    "volumes",
    "initContainers",
    "containers",
    "ephemeralContainers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
)
"""Fields of a component block (and of its leader and worker) that belong to the pod spec, in output order."""

_POD_DEFAULTS: Final[Mapping[str, Any]] = {
    "dnsPolicy": "ClusterFirst",
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "securityContext": {},
    "schedulerName": "default-scheduler",
}
_CONTAINER_DEFAULTS: Final[Mapping[str, Any]] = {
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
    "imagePullPolicy": "IfNotPresent",
}


class RenderError(Exception):
    """The InferenceService and its runtime cannot be rendered; `reason` names the event to record."""

    def __init__(self, message: str, reason: str = "RenderError") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


@dataclass(frozen=True)
class _Model:
    name: str
    kind: str
    namespace: str
    path: str
    annotations: Mapping[str, str]
    vendor: str | None
    format_name: str | None
    format_version: str | None


@dataclass(frozen=True)
class _Context:
    isvc_name: str
    namespace: str
    metadata: Mapping[str, Any]
    owner_references: list[dict[str, Any]]
    runtime_name: str
    runtime_kind: str
    revision: str | None
    runtime_spec: Mapping[str, Any]
    model: _Model | None
    inject_model_files: bool


# ----------------------------------------------------------------------------------------------- public helpers


def component_name(isvc_name: str, component: str) -> str:
    """Name of a component's Deployment and Service: `<isvc>-<component>`."""
    return f"{isvc_name}-{component}"


def lws_name(component_object_name: str) -> str:
    """Name of a component's LeaderWorkerSet: `lws-` and the last 50 characters of the component name."""
    return f"lws-{component_object_name[-50:]}"


def model_node_selector_key(model_kind: str, model_namespace: str, model_name: str) -> str:
    """The node label that marks a node holding the model (upstream's key, hashed when too long for a label)."""
    domain, max_length, hash_length = "models.ome.io", 49, 8
    if model_kind == "ClusterBaseModel":
        room = max_length - len("clusterbasemodel") - 1
        return f"{domain}/clusterbasemodel.{_truncate_with_hash(model_name, room, hash_length)}"
    room = max_length - len("basemodel.") - 1
    if len(model_namespace) + len(model_name) <= room:
        return f"{domain}/{model_namespace}.basemodel.{model_name}"
    minimum = 8
    if room < minimum * 2:
        namespace_room = room // 2
    elif len(model_namespace) <= minimum:
        namespace_room = len(model_namespace)
    else:
        namespace_room = minimum
    namespace = _truncate_with_hash(model_namespace, namespace_room, hash_length)
    name = _truncate_with_hash(model_name, room - namespace_room, hash_length)
    return f"{domain}/{namespace}.basemodel.{name}"


def merge_component(runtime_block: Mapping[str, Any] | None, isvc_block: Mapping[str, Any]) -> dict[str, Any]:
    """The InferenceService's component block laid over the runtime's (the runtime's alone when it has none)."""
    return merge_spec(runtime_block or {}, isvc_block)


def merged_components(merged_runtime_spec: Mapping[str, Any], isvc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The declared components, each runtime block ⊕ InferenceService block, in engine, decoder, router order."""
    spec = as_mapping(isvc.get("spec"))
    components: dict[str, dict[str, Any]] = {}
    for component in COMPONENTS:
        block = spec.get(component)
        if block is None:
            continue
        if not isinstance(block, Mapping):
            raise RenderError(f"spec.{component} of the InferenceService must be an object", "MergeSpecsError")
        runtime_block = merged_runtime_spec.get(RUNTIME_CONFIG_FIELDS[component])
        components[component] = merge_component(as_mapping(runtime_block), block)
    if ENGINE not in components:
        raise RenderError("engine component is required", "DeploymentModeError")
    return components


def component_deployment_modes(merged_spec: Mapping[str, Any], isvc: Mapping[str, Any]) -> dict[str, str]:
    """Deployment mode of each declared component (see the module docstring)."""
    return _modes(merged_components(merged_spec, isvc))


def deployment_mode(merged_spec: Mapping[str, Any], isvc: Mapping[str, Any]) -> str:
    """The InferenceService's deployment mode: `PDDisaggregated` with a decoder, else the engine's mode."""
    modes = component_deployment_modes(merged_spec, isvc)
    return PD_DISAGGREGATED if DECODER in modes else modes[ENGINE]


def render_hash(objects: Sequence[Mapping[str, Any]]) -> str:
    """sha256 (hex) of the canonical JSON of `objects`: equal for equal renders whatever their key order."""
    text = json.dumps(list(objects), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# ----------------------------------------------------------------------------------------------- rendering


def render_workloads(
    isvc: Mapping[str, Any],
    merged_runtime_spec: Mapping[str, Any],
    *,
    runtime_name: str,
    runtime_kind: str,
    model: Mapping[str, Any] | None,
    revision: str | None = None,
) -> list[dict[str, Any]]:
    """Every object that serves `isvc`, rendered from `merged_runtime_spec` (see the module docstring).

    `model` is the BaseModel or ClusterBaseModel that `spec.model` names (None when the InferenceService has no
    `spec.model`); `revision` the runtime revision rendered, recorded on the workload objects.
    """
    context = _context(isvc, merged_runtime_spec, runtime_name, runtime_kind, model, revision)
    components = merged_components(merged_runtime_spec, isvc)
    modes = _modes(components)
    objects: list[dict[str, Any]] = []
    for component, merged in components.items():
        objects.extend(_render_component(context, component, merged, modes[component], isvc))
    return objects


def _context(
    isvc: Mapping[str, Any],
    runtime_spec: Mapping[str, Any],
    runtime_name: str,
    runtime_kind: str,
    model: Mapping[str, Any] | None,
    revision: str | None,
) -> _Context:
    metadata = as_mapping(isvc.get("metadata"))
    name, namespace, uid = metadata.get("name"), metadata.get("namespace"), metadata.get("uid")
    if not isinstance(name, str) or not name or not isinstance(namespace, str) or not namespace:
        raise RenderError("the InferenceService needs metadata.name and metadata.namespace")
    if not isinstance(uid, str) or not uid:
        raise RenderError(f"InferenceService {namespace}/{name} has no metadata.uid to own its workloads by")
    if not runtime_name:
        raise RenderError(f"InferenceService {namespace}/{name}: no runtime name to render with")
    if runtime_kind not in RUNTIME_KINDS:
        raise RenderError(f"runtime kind must be one of {', '.join(RUNTIME_KINDS)}, not {runtime_kind!r}")
    owner = {
        "apiVersion": ISVC_API_VERSION,
        "kind": "InferenceService",
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    annotations = _string_map(metadata.get("annotations"))
    inject_files = (
        annotations.get(INJECT_MODEL_INIT_ANNOTATION) != "true"
        and annotations.get(FT_MERGED_WEIGHTS_ANNOTATION) != "true"
    )
    return _Context(
        isvc_name=name,
        namespace=namespace,
        metadata=metadata,
        owner_references=[owner],
        runtime_name=runtime_name,
        runtime_kind=runtime_kind,
        revision=revision or None,
        runtime_spec=runtime_spec,
        model=_model(as_mapping(isvc.get("spec")), model, namespace, name),
        inject_model_files=inject_files,
    )


def _model(spec: Mapping[str, Any], model: Mapping[str, Any] | None, namespace: str, isvc_name: str) -> _Model | None:
    ref = spec.get("model")
    ref_name = ref.get("name") if isinstance(ref, Mapping) else None
    if not ref_name:
        if model is not None:
            raise RenderError(f"InferenceService {namespace}/{isvc_name} has no spec.model, but a model was given")
        return None
    if isinstance(ref, Mapping) and ref.get("fineTunedWeights"):
        raise RenderError(f"InferenceService {namespace}/{isvc_name}: spec.model.fineTunedWeights is not supported")
    if model is None:
        raise RenderError(f"InferenceService {namespace}/{isvc_name} names model {ref_name}, but none was given")
    metadata = as_mapping(model.get("metadata"))
    kind = model.get("kind")
    if kind not in ("BaseModel", "ClusterBaseModel"):
        raise RenderError(f"model {ref_name} must be a BaseModel or a ClusterBaseModel, not {kind!r}")
    if metadata.get("name") != ref_name:
        raise RenderError(
            f"InferenceService {namespace}/{isvc_name} names model {ref_name}, not {metadata.get('name')}"
        )
    model_spec = as_mapping(model.get("spec"))
    path = as_mapping(model_spec.get("storage")).get("path")
    if not isinstance(path, str) or not path:
        raise RenderError(f"{kind} {ref_name} has no spec.storage.path to mount")
    model_format = as_mapping(model_spec.get("modelFormat"))
    vendor, format_name, format_version = (
        model_spec.get("vendor"),
        model_format.get("name"),
        model_format.get("version"),
    )
    return _Model(
        name=ref_name,
        kind=kind,
        namespace=str(metadata.get("namespace") or ""),
        path=path,
        annotations=_string_map(metadata.get("annotations")),
        vendor=vendor if isinstance(vendor, str) and vendor else None,
        format_name=format_name if isinstance(format_name, str) and format_name else None,
        format_version=format_version if isinstance(format_version, str) and format_version else None,
    )


def _modes(components: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    modes: dict[str, str] = {}
    for component, merged in components.items():
        if component == ROUTER:
            modes[component] = SERVERLESS if merged.get("minReplicas") == 0 else RAW_DEPLOYMENT
            continue
        multi_node = merged.get("leader") is not None or merged.get("worker") is not None
        if component == DECODER:
            modes[component] = MULTI_NODE if multi_node else RAW_DEPLOYMENT
            continue
        annotated = _string_map(merged.get("annotations")).get(DEPLOYMENT_MODE_ANNOTATION)
        if annotated in _ANNOTATION_MODES:
            modes[component] = annotated
        elif multi_node:
            modes[component] = MULTI_NODE
        elif merged.get("minReplicas") == 0:
            modes[component] = SERVERLESS
        else:
            modes[component] = RAW_DEPLOYMENT
    if DECODER in modes and modes[ENGINE] == SERVERLESS:
        modes[ENGINE] = RAW_DEPLOYMENT
    return modes


def _render_component(
    context: _Context, component: str, merged: Mapping[str, Any], mode: str, isvc: Mapping[str, Any]
) -> list[dict[str, Any]]:
    name = component_name(context.isvc_name, component)
    if len(name) > MAX_NAME_LENGTH:
        raise RenderError(
            f"component name {name} is longer than {MAX_NAME_LENGTH} characters; use a shorter InferenceService name"
        )
    if mode == SERVERLESS:
        annotated = _string_map(merged.get("annotations")).get(DEPLOYMENT_MODE_ANNOTATION) == SERVERLESS
        cause = f"annotation {DEPLOYMENT_MODE_ANNOTATION}: {SERVERLESS}" if annotated else "minReplicas 0"
        raise RenderError(
            f"the {component} of InferenceService {context.namespace}/{context.isvc_name} is Serverless ({cause}), "
            "which needs Knative Serving; omectl does not manage Knative and renders RawDeployment and MultiNode "
            f"only, so give the {component} minReplicas of 1 or more",
            "ServerlessModeRejected",
        )
    if mode not in (RAW_DEPLOYMENT, MULTI_NODE):
        raise RenderError(
            f"deployment mode {mode} of the {component} (annotation {DEPLOYMENT_MODE_ANNOTATION}) is not supported",
            "DeploymentModeError",
        )
    isvc_block = as_mapping(as_mapping(isvc.get("spec")).get(component))
    labels = _labels(context, component, merged)
    annotations = _annotations(context, merged)
    objects: list[dict[str, Any]] = []
    if component == ROUTER:
        objects.extend(_router_rbac(context, name, labels))
    if mode == MULTI_NODE:
        leader_pod, worker_pod, worker_size = _multi_node_pods(context, component, merged, isvc_block)
        objects.append(
            _leader_worker_set(context, name, merged, labels, annotations, leader_pod, worker_pod, worker_size)
        )
        service_pod, selector = leader_pod, {"app": name, "ray.io/node-type": "head"}
    else:
        pod = _pod(
            context,
            component,
            merged,
            as_mapping(merged.get("runner")) or None,
            isvc_runner=as_mapping(isvc_block.get("runner")),
            worker_size=0,
        )
        objects.append(_deployment(context, name, merged, labels, annotations, pod))
        service_pod, selector = pod, {"app": name}
    objects.append(_service(context, name, labels, annotations, service_pod, selector))
    return objects


def _multi_node_pods(
    context: _Context, component: str, merged: Mapping[str, Any], isvc_block: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], int]:
    worker = as_mapping(merged.get("worker"))
    size = worker.get("size")
    if not worker or type(size) is not int or size <= 0:
        raise RenderError(
            f"for MultiNode deployment of the {component}, worker must be defined and worker.size must be greater "
            "than 0",
            "DeploymentModeError",
        )
    component_runner = as_mapping(merged.get("runner")) or None
    leader = merged.get("leader")
    if leader is None:
        leader_source: Mapping[str, Any] = merged
        leader_runner = component_runner
        isvc_leader_runner = as_mapping(isvc_block.get("runner"))
    else:
        leader_source = as_mapping(leader)
        leader_runner = as_mapping(leader_source.get("runner")) or component_runner
        isvc_leader_runner = as_mapping(as_mapping(isvc_block.get("leader")).get("runner")) or as_mapping(
            isvc_block.get("runner")
        )
    leader_pod = _pod(
        context, component, leader_source, leader_runner, isvc_runner=isvc_leader_runner, worker_size=size
    )
    worker_pod = _pod(
        context,
        component,
        worker,
        as_mapping(worker.get("runner")) or component_runner,
        isvc_runner=as_mapping(as_mapping(isvc_block.get("worker")).get("runner")),
        worker_size=size,
    )
    return leader_pod, worker_pod, size


def _pod(
    context: _Context,
    component: str,
    source: Mapping[str, Any],
    runner: Mapping[str, Any] | None,
    *,
    isvc_runner: Mapping[str, Any],
    worker_size: int,
) -> dict[str, Any]:
    """The pod spec for one pod template: pod fields of `source`, the runner resolved into its container."""
    pod: dict[str, Any] = {field: copy_json(source[field]) for field in POD_SPEC_FIELDS if field in source}
    containers: list[dict[str, Any]] = pod.get("containers") or []
    pod["containers"] = containers
    serves_model = component != ROUTER
    if runner is None:
        if not containers:
            raise RenderError("no containers found in pod spec and no runner spec provided")
    else:
        runner_name = runner.get("name") or RUNNER_CONTAINER
        index = next((i for i, c in enumerate(containers) if c.get("name") == runner_name), None)
        if index is None:
            containers.append({"name": runner_name})
            index = len(containers) - 1
        container = _merge_runner(containers[index], runner, runner_name)
        if not as_mapping(isvc_runner.get("resources")):
            _fill_fallback_resources(container, context.runtime_spec, runner_name)
        try:
            container = fill_in_value(container, context.metadata)
        except PlaceholderError as error:
            raise RenderError(f"failed to replace placeholders in container {runner_name}: {error}") from error
        if serves_model:
            _inject_model(context, container)
            _inject_parallelism(container, worker_size)
        if component == ROUTER:
            _append_env(container, sorted(_string_map(source.get("config")).items()))
        if runner_name == RUNNER_CONTAINER and "readinessProbe" not in container:
            ports = container.get("ports") or [{}]
            container["readinessProbe"] = {"tcpSocket": {"port": ports[0].get("containerPort", DEFAULT_HTTP_PORT)}}
        containers[index] = container
    for volume in pod.get("volumes") or ():
        # The merge drops an `emptyDir: {}` as unset; the API server defaults a volume without a source to it.
        if volume.keys() <= {"name"}:
            volume["emptyDir"] = {}
    if serves_model and context.model is not None:
        volumes: list[dict[str, Any]] = pod.setdefault("volumes", [])
        if not any(v.get("name") == context.model.name for v in volumes):
            volumes.append({"name": context.model.name, "hostPath": {"path": context.model.path}})
    node_selector = _node_selector(context, serves_model, _string_map(pod.get("nodeSelector")))
    if node_selector:
        pod["nodeSelector"] = node_selector
    if component == ROUTER:
        pod["serviceAccountName"] = component_name(context.isvc_name, ROUTER)
    for field, default in _POD_DEFAULTS.items():
        pod.setdefault(field, copy_json(default))
    for list_field in ("initContainers", "containers"):
        for item in pod.get(list_field) or ():
            for field, default in _CONTAINER_DEFAULTS.items():
                item.setdefault(field, default)
    return {field: pod[field] for field in POD_SPEC_FIELDS if field in pod}


def _merge_runner(container: Mapping[str, Any], runner: Mapping[str, Any], runner_name: str) -> dict[str, Any]:
    """The pod's container with the runner laid over it; args are the container's followed by the runner's."""
    base_args = list(container.get("args") or ())
    runner_args = list(runner.get("args") or ())
    merged = merge_spec(
        {k: v for k, v in container.items() if k != "args"},
        {k: v for k, v in runner.items() if k != "args"},
    )
    merged["name"] = runner_name
    if base_args or runner_args:
        merged["args"] = base_args + runner_args
    return merged


def _fill_fallback_resources(container: dict[str, Any], runtime_spec: Mapping[str, Any], runner_name: str) -> None:
    """Add the request and limit keys that the runtime's top-level container of the runner's name sets."""
    legacy = next(
        (c for c in runtime_spec.get("containers") or () if isinstance(c, Mapping) and c.get("name") == runner_name),
        None,
    )
    fallback = as_mapping(as_mapping(legacy).get("resources"))
    if not fallback:
        return
    resources: dict[str, Any] = container.setdefault("resources", {})
    for kind in ("requests", "limits"):
        extra = as_mapping(fallback.get(kind))
        if not extra:
            continue
        current: dict[str, Any] = resources.setdefault(kind, {})
        for key, value in extra.items():
            current.setdefault(key, copy_json(value))


def _inject_model(context: _Context, container: dict[str, Any]) -> None:
    model = context.model
    if model is None or not context.inject_model_files:
        return
    _append_env(container, [("MODEL_PATH", model.path)])
    mounts: list[dict[str, Any]] = container.setdefault("volumeMounts", [])
    if not any(m.get("mountPath") == model.path for m in mounts):
        mounts.append({"name": model.name, "mountPath": model.path, "readOnly": True})


def _inject_parallelism(container: dict[str, Any], worker_size: int) -> None:
    resources = as_mapping(container.get("resources"))
    quantity = as_mapping(resources.get("limits")).get(GPU_RESOURCE)
    if quantity is None:
        quantity = as_mapping(resources.get("requests")).get(GPU_RESOURCE)
    try:
        gpus = int(str(quantity))
    except ValueError:
        return
    if gpus > 0:
        _append_env(container, [("PARALLELISM_SIZE", str(gpus * (1 + worker_size)))])


def _append_env(container: dict[str, Any], variables: Iterable[tuple[str, str]]) -> None:
    """Append each variable unless the container already has one of that name."""
    for name, value in variables:
        env: list[dict[str, Any]] = container.setdefault("env", [])
        if not any(item.get("name") == name for item in env):
            env.append({"name": name, "value": value})


def _node_selector(context: _Context, serves_model: bool, own: Mapping[str, str]) -> dict[str, str]:
    selector: dict[str, str] = {}
    if serves_model:
        if context.model is not None:
            model = context.model
            selector[model_node_selector_key(model.kind, model.namespace, model.name)] = "Ready"
        selector.update(_string_map(context.runtime_spec.get("nodeSelector")))
    selector.update(own)
    return dict(sorted(selector.items()))


def _labels(context: _Context, component: str, merged: Mapping[str, Any]) -> dict[str, str]:
    labels = {**_string_map(context.metadata.get("labels")), **_string_map(merged.get("labels"))}
    labels.update(
        {
            "ome.io/inferenceservice": context.isvc_name,
            "component": component,
            "serving-runtime": context.runtime_name,
            "fine-tuned-serving": "false",
        }
    )
    model = context.model
    if model is not None:
        labels["base-model-name"] = model.name
        labels["base-model-size"] = model.annotations.get(MODEL_CATEGORY_ANNOTATION, "SMALL")
        labels["base-model-type"] = "Serving"
        if model.vendor is not None:
            labels["base-model-vendor"] = model.vendor
    return dict(sorted(labels.items()))


def _annotations(context: _Context, merged: Mapping[str, Any]) -> dict[str, str]:
    annotations = {
        key: value
        for key, value in _string_map(context.metadata.get("annotations")).items()
        if key not in _DROPPED_ISVC_ANNOTATIONS
    }
    annotations.update(_string_map(merged.get("annotations")))
    model = context.model
    if model is not None:
        annotations["ome.io/base-model-name"] = model.name
        if model.vendor is not None:
            annotations["ome.io/base-model-vendor"] = model.vendor
        if model.format_name is not None:
            annotations["ome.io/base-model-format"] = model.format_name
        if model.format_version is not None:
            annotations["ome.io/base-model-format-version"] = model.format_version
    annotations["ome.io/serving-runtime"] = context.runtime_name
    return dict(sorted(annotations.items()))


def _object_metadata(
    context: _Context, name: str, labels: Mapping[str, str], annotations: Mapping[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": context.namespace, "labels": dict(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    metadata["ownerReferences"] = copy_json(context.owner_references)
    return metadata


def _workload_annotations(context: _Context, annotations: Mapping[str, str]) -> dict[str, str]:
    extra = {RUNTIME_KIND_ANNOTATION: context.runtime_kind}
    if context.revision is not None:
        extra[RUNTIME_REVISION_ANNOTATION] = context.revision
    return dict(sorted({**annotations, **extra}.items()))


def _deployment(
    context: _Context,
    name: str,
    merged: Mapping[str, Any],
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    pod: dict[str, Any],
) -> dict[str, Any]:
    min_replicas = merged.get("minReplicas")
    replicas = max(min_replicas, 1) if type(min_replicas) is int else 1
    strategy = as_mapping(merged.get("deploymentStrategy")) or {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    pod_labels = dict(sorted({**labels, "app": name}.items()))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _object_metadata(context, name, labels, _workload_annotations(context, annotations)),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": pod_labels, "annotations": dict(annotations)}, "spec": pod},
            "strategy": copy_json(strategy),
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
    }


def _leader_worker_set(
    context: _Context,
    name: str,
    merged: Mapping[str, Any],
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    leader_pod: dict[str, Any],
    worker_pod: dict[str, Any],
    worker_size: int,
) -> dict[str, Any]:
    min_replicas = merged.get("minReplicas")
    leader_labels = dict(sorted({**labels, "app": name, "ray.io/node-type": "head"}.items()))
    worker_annotations = {k: v for k, v in annotations.items() if k not in _WORKER_DROPPED_ANNOTATIONS}
    return {
        "apiVersion": LWS_API_VERSION,
        "kind": "LeaderWorkerSet",
        "metadata": _object_metadata(context, lws_name(name), labels, _workload_annotations(context, annotations)),
        "spec": {
            "replicas": min_replicas if type(min_replicas) is int else 1,
            "startupPolicy": "LeaderCreated",
            "networkConfig": {"subdomainPolicy": "Shared"},
            "rolloutStrategy": {
                "type": "RollingUpdate",
                "rollingUpdateConfiguration": {"maxUnavailable": 1, "maxSurge": 1},
            },
            "leaderWorkerTemplate": {
                "size": worker_size + 1,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": leader_labels, "annotations": dict(annotations)},
                    "spec": leader_pod,
                },
                "workerTemplate": {
                    "metadata": {"labels": dict(labels), "annotations": worker_annotations},
                    "spec": worker_pod,
                },
            },
        },
    }


def _service(
    context: _Context,
    name: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    pod: Mapping[str, Any],
    selector: Mapping[str, str],
) -> dict[str, Any]:
    service_annotations = {
        key: value for key, value in annotations.items() if not key.startswith(_POD_ONLY_ANNOTATION_PREFIXES)
    }
    service_type = annotations.get(SERVICE_TYPE_ANNOTATION)
    if service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        service_type = "ClusterIP"
    first = pod["containers"][0]
    ports: list[dict[str, Any]] = []
    for port in first.get("ports") or ():
        number = port.get("containerPort")
        service_port: dict[str, Any] = {"name": port["name"]} if port.get("name") else {}
        service_port.update({"port": number, "targetPort": number, "protocol": port.get("protocol") or "TCP"})
        ports.append(service_port)
    if not ports:
        ports.append(
            {"name": first["name"], "port": DEFAULT_HTTP_PORT, "targetPort": DEFAULT_HTTP_PORT, "protocol": "TCP"}
        )
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _object_metadata(context, name, labels, service_annotations),
        "spec": {"type": service_type, "selector": dict(sorted(selector.items())), "ports": ports},
    }


def _router_rbac(context: _Context, name: str, labels: Mapping[str, str]) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _object_metadata(context, name, labels)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": _object_metadata(context, name, labels),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _object_metadata(context, name, labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": context.namespace}],
        },
    ]


# ----------------------------------------------------------------------------------------------- small helpers


def _string_map(value: Any) -> dict[str, str]:
    """A map of strings as strings (labels, annotations, nodeSelector); anything else is empty."""
    if not isinstance(value, Mapping):
        return {}
    return {str(key): item if isinstance(item, str) else json.dumps(item) for key, item in value.items()}


def _truncate_with_hash(text: str, max_length: int, hash_length: int) -> str:
    """`text` if it fits, else the first characters of its sha256, `-` and the end of `text` (upstream's rule)."""
    if len(text) <= max_length:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:hash_length]
    suffix_length = max_length - hash_length - 1
    if suffix_length <= 0:
        return digest[:max_length]
    return f"{digest}-{text[-suffix_length:]}"
