"""Profile discovery of an AIMModel / AIMClusterModel: the discovery Job, its result ConfigMap, and the AIMProfiles /
AIMClusterProfiles and the child AIMProfileSet made from it (docs/aim-resources.md).

Discovery Job (`render_discovery_job`), unless `spec.discovery.enabled` is false: in the model's namespace, or in the
operator namespace (`AIM_SYSTEM_NAMESPACE`, default `aim-system`) for an AIMClusterModel, whose namespaced runtime
config is also looked up there (`omectl.core.aim.resolution.lookup_namespace`). Name (and result ConfigMap name)
`<model>-discovery`, `<model>-cluster-discovery` for a cluster model (at most 63 characters). One container
`discovery` running the model image with args `["discover"]`; env, lowest first, merged by name: `AIM_DISCOVERY_
CONFIGMAP` / `AIM_DISCOVERY_NAMESPACE` (where to write the result) < the model's resolved config `env` < the model's
`spec.env`. backoffLimit 2, no TTL (the ConfigMap is the record). Labels `app.kubernetes.io/component: discovery`,
`aim.eai.amd.com/component: discovery`, `aim.eai.amd.com/model` (or `aim.eai.amd.com/cluster-model`), and the model's
labels propagated with the model's config, on the Job and on its pod template. Annotation
`aim.eai.amd.com/discovery-inputs: <hash8 of image, env, model sources>`: a Job whose annotation differs from the
rendered one is stale (`discovery_current`) and is replaced. Owned by the model.

Result ConfigMap (written by the discovery container; in the simulator from the model's annotation
`sim.omectl.io/discovery-result`, which the Job carries, see `simulated_discovery_configmap`): same name and
namespace as the Job, key `profiles.yaml`, a YAML (or JSON) list of profiles, or a mapping with that list under
`profiles`:

    - id: vllm-mi300x-fp8-tp1-latency   # required, unique
      gpu: MI300X
      gpuCount: 1
      precision: fp8
      metric: latency
      engineEnv: {VLLM_TENSOR_PARALLEL_SIZE: "1"}     # a name → value map or an env list
      containerEnv: [{name: HIP_FORCE_DEV_KERNARG, value: "1"}]
      modelSources: [...]                               # optional; the model's when absent

Profiles (`profiles_from_discovery`): one per entry, an AIMProfile in the model's namespace (AIMClusterProfile for a
cluster model) named `<model>-<id>` (id as a DNS label, at most 63 characters): `spec.modelName`, `image`,
`profileId`, `gpu`, `gpuCount`, `precision`, `metric`, `containerEnv`, `engineEnv`, `modelSources`, and the model's
`runtimeConfigName` when it names one. Labels `app.kubernetes.io/component: profile`, `aim.eai.amd.com/model` (or
`cluster-model`), the model's labels propagated with the model's config. Owned by the model.

Child AIMProfileSet (`profile_set_for`): named like the model, in the Job's namespace, `spec.modelName`,
`spec.runtimeConfigName` (the model's), one entry per discovered profile (`name` = the id, gpu, gpuCount, precision,
metric, profileId, `profileRef` to the discovered profile, so nothing is derived twice). Owned by the model, labels
propagated from it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

import yaml

from omectl.core.aim.consumers import (
    AIM_COMPONENT_LABEL,
    AIM_V1ALPHA2,
    CLUSTER_MODEL,
    CLUSTER_MODEL_LABEL,
    CLUSTER_PROFILE,
    MODEL_LABEL,
    PROFILE,
    base_labels,
    bounded_name,
    dns_label,
    hash8,
    is_cluster_scoped,
    owner_reference,
    propagate_edge,
    spec_of,
    text,
)
from omectl.core.aim.env import env_var, merge_env
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.resolution import DEFAULT_OPERATOR_NAMESPACE
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

RESULT_KEY: Final = "profiles.yaml"
"""The ConfigMap key holding the discovery result."""
INPUTS_ANNOTATION: Final = "aim.eai.amd.com/discovery-inputs"
SIMULATED_RESULT_ANNOTATION: Final = "sim.omectl.io/discovery-result"
"""On an AIMModel / AIMClusterModel (copied to its discovery Job): the result the simulated discovery writes."""
DISCOVERY_COMPONENT: Final = "discovery"
DISCOVERY_CONTAINER: Final = "discovery"
DISCOVERY_BACKOFF_LIMIT: Final = 2
PROFILE_COMPONENT: Final = "profile"
PROFILE_SET_COMPONENT: Final = "profile-set"

PROFILE_FIELDS: Final = ("gpu", "gpuCount", "precision", "metric")


class DiscoveryResultError(ValueError):
    """A discovery result that is not the documented format."""


def discovery_enabled(model: Mapping[str, Any]) -> bool:
    discovery = spec_of(model).get("discovery")
    return not (isinstance(discovery, Mapping) and discovery.get("enabled") is False)


def discovery_namespace(model: Mapping[str, Any], operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE) -> str:
    """The model's namespace, or the operator namespace for a cluster model."""
    return operator_namespace if is_cluster_scoped(model) else namespace_of(model)


def discovery_name(model: Mapping[str, Any]) -> str:
    """Name of the discovery Job and of its result ConfigMap."""
    suffix = "-cluster-discovery" if model.get("kind") == CLUSTER_MODEL else "-discovery"
    return bounded_name(name_of(model), suffix)


def discovery_inputs(model: Mapping[str, Any]) -> str:
    """hash8 of what the discovery depends on: image, env and model sources."""
    spec = spec_of(model)
    inputs = {k: spec.get(k) for k in ("image", "env", "modelSources")}
    return hash8(json.dumps(inputs, sort_keys=True, separators=(",", ":")))


IMAGE_NOT_SPECIFIED: Final = "ImageNotSpecified"


def has_image(model: Mapping[str, Any]) -> bool:
    return text(spec_of(model).get("image")) is not None


def image_not_specified_message(model: Mapping[str, Any]) -> str:
    return f"{model.get('kind') or 'AIMModel'} {name_of(model)!r} has no spec.image: there is nothing to discover"


def render_discovery_job(
    model: Mapping[str, Any], config: Mapping[str, Any], operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE
) -> dict[str, Any]:
    """The model's discovery Job (module docstring). `config` is the model's resolved runtime config."""
    spec = spec_of(model)
    image = text(spec.get("image"))
    if image is None:
        raise ValueError(f"{model.get('kind')} {name_of(model)!r} has no spec.image")
    namespace = discovery_namespace(model, operator_namespace)
    name = discovery_name(model)
    model_label = CLUSTER_MODEL_LABEL if is_cluster_scoped(model) else MODEL_LABEL
    labels = base_labels(DISCOVERY_COMPONENT, {AIM_COMPONENT_LABEL: DISCOVERY_COMPONENT, model_label: name_of(model)})
    env = merge_env(
        [env_var("AIM_DISCOVERY_CONFIGMAP", name), env_var("AIM_DISCOVERY_NAMESPACE", namespace)],
        as_list(config.get("env")),
        as_list(spec.get("env")),
    )
    annotations = {INPUTS_ANNOTATION: discovery_inputs(model)}
    simulated = as_mapping(as_mapping(model.get("metadata")).get("annotations")).get(SIMULATED_RESULT_ANNOTATION)
    if isinstance(simulated, str):
        annotations[SIMULATED_RESULT_ANNOTATION] = simulated
    pod = {
        "restartPolicy": "Never",
        "containers": [{"name": DISCOVERY_CONTAINER, "image": image, "args": ["discover"], "env": env}],
    }
    job = discovery_job(model, name, namespace, labels, annotations, {"backoffLimit": DISCOVERY_BACKOFF_LIMIT}, pod)
    return propagate_edge(model, job, config)


def discovery_job(
    owner: Mapping[str, Any],
    name: str,
    namespace: str,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    job_spec: Mapping[str, Any],
    pod: dict[str, Any],
) -> dict[str, Any]:
    """A discovery Job owned by `owner`: `labels` on the Job and on its pod template, `job_spec` (backoffLimit and
    the like) before the template."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": dict(labels),
            "annotations": dict(annotations),
            "ownerReferences": [owner_reference(owner)],
        },
        "spec": {**job_spec, "template": {"metadata": {"labels": dict(labels)}, "spec": pod}},
    }


def discovery_current(model: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """Whether a live discovery Job ran for the model's current image, env and model sources."""
    annotations = as_mapping(as_mapping(job.get("metadata")).get("annotations"))
    return annotations.get(INPUTS_ANNOTATION) == discovery_inputs(model)


def discovery_configmap(job: Mapping[str, Any], result: str) -> dict[str, Any]:
    """The result ConfigMap as the discovery container writes it for `job` (same name and namespace)."""
    metadata = as_mapping(job.get("metadata"))
    annotations = {}
    inputs = as_mapping(metadata.get("annotations")).get(INPUTS_ANNOTATION)
    if isinstance(inputs, str):
        annotations[INPUTS_ANNOTATION] = inputs
    out: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name_of(job),
            "namespace": namespace_of(job),
            "labels": dict(as_mapping(metadata.get("labels"))),
        },
        "data": {RESULT_KEY: result},
    }
    if annotations:
        out["metadata"]["annotations"] = annotations
    return out


def simulated_discovery_configmap(job: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a simulated node writes when it completes a discovery Job: the ConfigMap holding the Job's
    `sim.omectl.io/discovery-result` annotation, or None when the Job has none."""
    result = as_mapping(as_mapping(job.get("metadata")).get("annotations")).get(SIMULATED_RESULT_ANNOTATION)
    return discovery_configmap(job, result) if isinstance(result, str) else None


def load_result(data: Mapping[str, Any] | None) -> Any:
    """The YAML (or JSON) under `RESULT_KEY` of a result ConfigMap's `data`, as it is. Raises DiscoveryResultError."""
    raw = (data or {}).get(RESULT_KEY)
    if not isinstance(raw, str):
        raise DiscoveryResultError(f"the result ConfigMap has no {RESULT_KEY!r} key")
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as error:
        raise DiscoveryResultError(f"{RESULT_KEY} is not YAML: {error}") from error


def parse_discovery_result(data: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The profile entries of a result ConfigMap's `data`, normalised: `id`, the fields present of gpu, gpuCount,
    precision, metric, `containerEnv` / `engineEnv` as env lists, `modelSources`. Raises DiscoveryResultError."""
    parsed = load_result(data)
    if isinstance(parsed, Mapping):
        parsed = parsed.get("profiles")
    if parsed is None:
        return []
    if not isinstance(parsed, list):
        raise DiscoveryResultError(f"{RESULT_KEY} must hold a list of profiles")
    entries: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(parsed):
        if not isinstance(item, Mapping):
            raise DiscoveryResultError(f"profile {index} is not a mapping")
        profile_id = item.get("id")
        if not isinstance(profile_id, str) or not profile_id:
            raise DiscoveryResultError(f"profile {index} has no id")
        if profile_id in seen:
            raise DiscoveryResultError(f"profile id {profile_id!r} appears twice")
        seen.add(profile_id)
        entry: dict[str, Any] = {"id": profile_id}
        for field in PROFILE_FIELDS:
            value = item.get(field)
            if value is None:
                continue
            if field == "gpuCount":
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise DiscoveryResultError(f"profile {profile_id!r}: gpuCount must be a non-negative integer")
            else:
                value = str(value)
            entry[field] = value
        for field in ("containerEnv", "engineEnv"):
            env = _env_list(item.get(field), f"profile {profile_id!r}: {field}")
            if env:
                entry[field] = env
        sources = item.get("modelSources")
        if sources is not None:
            if not isinstance(sources, list):
                raise DiscoveryResultError(f"profile {profile_id!r}: modelSources must be a list")
            entry["modelSources"] = copy_json(sources)
        entries.append(entry)
    return entries


def profile_name(model: Mapping[str, Any], profile_id: str) -> str:
    return bounded_name(f"{name_of(model)}-{dns_label(profile_id)}")


def profiles_from_discovery(
    model: Mapping[str, Any], configmap_data: Mapping[str, Any] | None, config: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The AIMProfiles (AIMClusterProfiles for a cluster model) of a discovery result (module docstring). `config`
    is the model's resolved runtime config (for label propagation). Raises DiscoveryResultError."""
    cluster = is_cluster_scoped(model)
    model_spec = spec_of(model)
    model_label = CLUSTER_MODEL_LABEL if cluster else MODEL_LABEL
    out: list[dict[str, Any]] = []
    for entry in parse_discovery_result(configmap_data):
        spec: dict[str, Any] = {"modelName": name_of(model)}
        image = text(model_spec.get("image"))
        if image is not None:
            spec["image"] = image
        config_name = text(model_spec.get("runtimeConfigName"))
        if config_name is not None:
            spec["runtimeConfigName"] = config_name
        spec["profileId"] = entry["id"]
        for field in (*PROFILE_FIELDS, "containerEnv", "engineEnv"):
            if field in entry:
                spec[field] = entry[field]
        sources = entry.get("modelSources") or model_spec.get("modelSources")
        if sources:
            spec["modelSources"] = copy_json(sources)
        metadata: dict[str, Any] = {
            "name": profile_name(model, entry["id"]),
            "labels": base_labels(PROFILE_COMPONENT, {model_label: name_of(model)}),
            "ownerReferences": [owner_reference(model)],
        }
        if not cluster:
            metadata["namespace"] = namespace_of(model)
        profile = {
            "apiVersion": AIM_V1ALPHA2,
            "kind": CLUSTER_PROFILE if cluster else PROFILE,
            "metadata": metadata,
            "spec": spec,
        }
        out.append(propagate_edge(model, profile, config or {}))
    return out


def profile_set_for(
    model: Mapping[str, Any],
    profiles: Sequence[Mapping[str, Any]],
    config: Mapping[str, Any] | None = None,
    *,
    operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE,
) -> dict[str, Any]:
    """The model's child AIMProfileSet recording its discovered `profiles` (module docstring)."""
    entries: list[dict[str, Any]] = []
    for profile in profiles:
        spec = spec_of(profile)
        entry: dict[str, Any] = {"name": dns_label(str(spec.get("profileId") or name_of(profile)))[:63]}
        if text(spec.get("profileId")):
            entry["profileId"] = spec["profileId"]
        for field in PROFILE_FIELDS:
            if spec.get(field) is not None:
                entry[field] = spec[field]
        entry["profileRef"] = {"kind": str(profile.get("kind") or PROFILE), "name": name_of(profile)}
        entries.append(entry)
    spec_out: dict[str, Any] = {"modelName": name_of(model)}
    config_name = text(spec_of(model).get("runtimeConfigName"))
    if config_name is not None:
        spec_out["runtimeConfigName"] = config_name
    if entries:
        spec_out["profiles"] = entries
    model_label = CLUSTER_MODEL_LABEL if is_cluster_scoped(model) else MODEL_LABEL
    profile_set = {
        "apiVersion": AIM_V1ALPHA2,
        "kind": "AIMProfileSet",
        "metadata": {
            "name": name_of(model),
            "namespace": discovery_namespace(model, operator_namespace),
            "labels": base_labels(PROFILE_SET_COMPONENT, {model_label: name_of(model)}),
            "ownerReferences": [owner_reference(model)],
        },
        "spec": spec_out,
    }
    return propagate_edge(model, profile_set, config or {})


def model_status(
    model: Mapping[str, Any], job: Mapping[str, Any] | None, configmap: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The model's own status from its discovery: `status`, `profileCount`, conditions `DiscoveryReady`, `Ready`.

    Discovery disabled → Ready. No `spec.image` → Failed / `ImageNotSpecified` (nothing to discover; the CRD allows
    a model without one). A result ConfigMap that parses → Ready with its profile count; one that does not →
    Failed / `DiscoveryResultInvalid`. Else: a failed Job → Failed / `DiscoveryFailed`; a completed Job whose result
    is not there yet → Progressing / `DiscoveryResultPending`; a running Job → Progressing / `Discovering`; no Job
    → Pending / `DiscoveryPending`."""
    count: int | None = None
    if not discovery_enabled(model):
        status, reason, message = "Ready", "DiscoveryDisabled", "Discovery is disabled"
    elif not has_image(model):
        status, reason, message = "Failed", IMAGE_NOT_SPECIFIED, image_not_specified_message(model)
    elif configmap is not None:
        try:
            count = len(parse_discovery_result(as_mapping(configmap.get("data"))))
            status, reason, message = "Ready", "ProfilesDiscovered", f"{count} profiles discovered"
        except DiscoveryResultError as error:
            status, reason, message = "Failed", "DiscoveryResultInvalid", str(error)
    elif _job_true(job, "Failed"):
        status, reason, message = "Failed", "DiscoveryFailed", "The discovery Job failed"
    elif _job_true(job, "Complete"):
        status, reason, message = "Progressing", "DiscoveryResultPending", "Waiting for the discovery result"
    elif job is not None:
        status, reason, message = "Progressing", "Discovering", "The discovery Job is running"
    else:
        status, reason, message = "Pending", "DiscoveryPending", "The discovery Job is not created yet"
    ready = str(status == "Ready")
    out: dict[str, Any] = {
        "status": status,
        "conditions": [
            {"type": "DiscoveryReady", "status": ready, "reason": reason, "message": message},
            {"type": "Ready", "status": ready, "reason": reason, "message": message},
        ],
    }
    if count is not None:
        out["profileCount"] = count
    return out


def _job_true(job: Mapping[str, Any] | None, condition_type: str) -> bool:
    conditions = as_mapping((job or {}).get("status")).get("conditions") or ()
    return any(
        isinstance(c, Mapping) and c.get("type") == condition_type and c.get("status") == "True" for c in conditions
    )


def _env_list(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [env_var(str(k), "" if v is None else str(v)) for k, v in value.items()]
    if isinstance(value, list):
        if not all(isinstance(i, Mapping) and isinstance(i.get("name"), str) and i.get("name") for i in value):
            raise DiscoveryResultError(f"{where}: every entry needs a name")
        return merge_env(value)
    raise DiscoveryResultError(f"{where} must be a name → value mapping or an env list")
