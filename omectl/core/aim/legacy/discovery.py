"""A service template's discovery: the Job that asks the model image which profile serves the template, and what
its result becomes (docs/aim-resources.md, "The legacy template path").

Job (`render_discovery_job`): `discover-<template>-<hash8 of the inputs>` (upstream's name; a change of any input
makes a new Job), in the template's namespace, or the operator namespace (`AIM_SYSTEM_NAMESPACE`) for a cluster
template; owned by the template; backoffLimit 0 and ttlSecondsAfterFinished 60 (upstream's: a failed run is retried
once its Job is gone). One container `discovery` running the model's image with upstream's args `dry-run
--format=json`, the model's imagePullSecrets and serviceAccountName. Env, lowest first, merged by name:
`AIM_LOG_LEVEL_ROOT` / `AIM_LOG_LEVEL` = CRITICAL and `AIM_DISCOVERY_CONFIGMAP` / `AIM_DISCOVERY_NAMESPACE` (where the
result goes) < the template's resolved runtime config `env` < the template's `spec.env` < what the template asks for
(`AIM_METRIC`, `AIM_PRECISION`, `AIM_GPU_MODEL`, `AIM_GPU_COUNT`, `AIM_PROFILE_ID`). Labels on the Job and its pods:
upstream's (`app.kubernetes.io/name: aim-discovery`, `app.kubernetes.io/component: discovery`,
`aim.eai.amd.com/template: <template>`), `aim.eai.amd.com/component: discovery`, managed-by omectl, and the
template's labels propagated under its config. Annotation `aim.eai.amd.com/discovery-inputs: <hash>`.

Result: the discovery container writes a ConfigMap with the Job's name, namespace and labels, key `profiles.yaml`
(omectl's v1alpha2 discovery result ConfigMap; in the simulated clusters written from the Job's
`sim.omectl.io/discovery-result` annotation, copied from the template's, else the model's). Two forms are read
(`parse_template_result`):

- upstream's dry-run output, a JSON (or YAML) list whose first entry is `{profile: {metadata: {engine, gpu,
  precision, gpu_count, metric, type}, engine_args, env_vars}, models: [{name, source, size_gb}]}`: the profile as
  it is (`status.profile`), the models as model sources (`size_gb` * 2^30 bytes, written as Kubernetes writes a
  binary quantity: `512Mi`);
- omectl's profile list (v1alpha2 discovery, `omectl.core.aim.discovery`): the entry whose `id` is the template's
  `profileId`, else the first whose metric, precision, GPU and GPU count the template does not contradict; its
  containerEnv / engineEnv become `env_vars`, its model sources (or the model's) the template's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.consumers import base_labels
from omectl.core.aim.discovery import (
    INPUTS_ANNOTATION,
    SIMULATED_RESULT_ANNOTATION,
    DiscoveryResultError,
    discovery_job,
    load_result,
    parse_discovery_result,
)
from omectl.core.aim.env import env_var, merge_env
from omectl.core.aim.legacy.gpus import gpu_spec, normalize_gpu_model
from omectl.core.aim.legacy.kinds import TEMPLATE_LABEL, is_cluster_template, propagate_legacy_edge
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.resolution import DEFAULT_OPERATOR_NAMESPACE
from omectl.core.jsonish import as_list, as_mapping
from omectl.core.layering import copy_json

DISCOVERY_COMPONENT: Final = "discovery"
AIM_COMPONENT_LABEL: Final = "aim.eai.amd.com/component"
SIMULATED_JOB_RESULT: Final = "sim.omectl.io/result"
"""On a template (copied to its discovery Job): `Failed` makes the simulated Job fail."""
DISCOVERY_TTL_SECONDS: Final = 60
METRICS: Final = ("latency", "throughput")
PRECISIONS: Final = ("auto", "fp4", "fp8", "fp16", "fp32", "bf16", "int4", "int8")
PROFILE_TYPES: Final = ("optimized", "preview", "unoptimized")
_BINARY_SUFFIXES: Final = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


@dataclass(frozen=True)
class TemplateDiscovery:
    """What discovery found for a template."""

    profile: dict[str, Any]
    """`status.profile`: `metadata`, and `engine_args` / `env_vars` when discovery gave them."""
    model_sources: list[dict[str, Any]]
    """`status.modelSources`: `{modelId, sourceUri, size?, env?}`."""


def discovery_inputs(template: Mapping[str, Any], model: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """hash8 of what a discovery run depends on: the model's image, pull secrets and service account, the template's
    model name, env, metric, precision, GPU and profile id, and the config's env."""
    spec, model_spec = as_mapping(template.get("spec")), as_mapping(model.get("spec"))
    inputs = {
        "image": model_spec.get("image"),
        "imagePullSecrets": model_spec.get("imagePullSecrets"),
        "serviceAccountName": model_spec.get("serviceAccountName"),
        "configEnv": config.get("env"),
        **{k: spec.get(k) for k in ("modelName", "env", "metric", "precision", "profileId")},
        "gpu": {k: gpu_spec(template).get(k) for k in ("model", "requests")},
    }
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:8]


def discovery_namespace(template: Mapping[str, Any], operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE) -> str:
    return operator_namespace if is_cluster_template(template) else namespace_of(template)


def discovery_job_name(template: Mapping[str, Any], inputs: str) -> str:
    """`discover-<template, cut to fit 63>-<inputs>`."""
    return f"discover-{name_of(template)[: 63 - len('discover-') - 1 - len(inputs)]}-{inputs}"


def render_discovery_job(
    template: Mapping[str, Any],
    model: Mapping[str, Any],
    config: Mapping[str, Any],
    operator_namespace: str = DEFAULT_OPERATOR_NAMESPACE,
) -> dict[str, Any]:
    """The template's discovery Job (module docstring); `config` is the template's resolved runtime config."""
    spec, model_spec = as_mapping(template.get("spec")), as_mapping(model.get("spec"))
    inputs = discovery_inputs(template, model, config)
    name = discovery_job_name(template, inputs)
    namespace = discovery_namespace(template, operator_namespace)
    labels = base_labels(
        DISCOVERY_COMPONENT,
        {
            "app.kubernetes.io/name": "aim-discovery",
            AIM_COMPONENT_LABEL: DISCOVERY_COMPONENT,
            TEMPLATE_LABEL: name_of(template),
        },
    )
    asked = []
    for field, variable in (("metric", "AIM_METRIC"), ("precision", "AIM_PRECISION")):
        if isinstance(spec.get(field), str) and spec[field]:
            asked.append(env_var(variable, spec[field]))
    gpu = gpu_spec(template)
    if isinstance(gpu.get("model"), str) and gpu["model"]:
        asked.append(env_var("AIM_GPU_MODEL", gpu["model"]))
    if isinstance(gpu.get("requests"), int) and gpu["requests"] > 0:
        asked.append(env_var("AIM_GPU_COUNT", str(gpu["requests"])))
    if isinstance(spec.get("profileId"), str) and spec["profileId"]:
        asked.append(env_var("AIM_PROFILE_ID", spec["profileId"]))
    env = merge_env(
        [
            env_var("AIM_LOG_LEVEL_ROOT", "CRITICAL"),
            env_var("AIM_LOG_LEVEL", "CRITICAL"),
            env_var("AIM_DISCOVERY_CONFIGMAP", name),
            env_var("AIM_DISCOVERY_NAMESPACE", namespace),
        ],
        as_list(config.get("env")),
        as_list(spec.get("env")),
        asked,
    )
    annotations = {INPUTS_ANNOTATION: inputs}
    for key in (SIMULATED_RESULT_ANNOTATION, SIMULATED_JOB_RESULT):
        value = _annotation(template, key) or _annotation(model, key)
        if value is not None:
            annotations[key] = value
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {"name": "discovery", "image": model_spec.get("image"), "args": ["dry-run", "--format=json"], "env": env}
        ],
    }
    if model_spec.get("imagePullSecrets"):
        pod["imagePullSecrets"] = copy_json(model_spec["imagePullSecrets"])
    if isinstance(model_spec.get("serviceAccountName"), str) and model_spec["serviceAccountName"]:
        pod["serviceAccountName"] = model_spec["serviceAccountName"]
    job_spec = {"backoffLimit": 0, "ttlSecondsAfterFinished": DISCOVERY_TTL_SECONDS}
    job = discovery_job(template, name, namespace, labels, annotations, job_spec, pod)
    return propagate_legacy_edge(template, job, config)


def parse_template_result(
    data: Mapping[str, Any] | None, template: Mapping[str, Any], model: Mapping[str, Any]
) -> TemplateDiscovery:
    """The profile and model sources a result ConfigMap's `data` holds for `template` (module docstring). Raises
    DiscoveryResultError."""
    parsed = load_result(data)
    entries = parsed.get("profiles") if isinstance(parsed, Mapping) else parsed
    if not isinstance(entries, list) or not entries:
        raise DiscoveryResultError("discovery output contains empty array")
    first = entries[0]
    if isinstance(first, Mapping) and ("profile" in first or "models" in first):
        return _from_dry_run(first)
    return _from_profile_list(data or {}, template, model)


def _from_dry_run(result: Mapping[str, Any]) -> TemplateDiscovery:
    raw_profile = as_mapping(result.get("profile"))
    raw_meta = as_mapping(raw_profile.get("metadata"))
    metadata: dict[str, Any] = {}
    if isinstance(raw_meta.get("engine"), str) and raw_meta["engine"]:
        metadata["engine"] = raw_meta["engine"]
    if isinstance(raw_meta.get("gpu"), str) and raw_meta["gpu"]:
        metadata["gpu"] = raw_meta["gpu"]
    if isinstance(raw_meta.get("gpu_count"), int) and not isinstance(raw_meta["gpu_count"], bool):
        metadata["gpuCount"] = raw_meta["gpu_count"]
    metadata.update(_enums(raw_meta))
    profile: dict[str, Any] = {"metadata": metadata}
    if raw_profile.get("engine_args") is not None:
        profile["engine_args"] = copy_json(raw_profile["engine_args"])
    env_vars = as_mapping(raw_profile.get("env_vars"))
    if env_vars:
        profile["env_vars"] = {str(k): str(v) for k, v in env_vars.items()}
    sources = []
    for item in as_list(result.get("models")):
        item = as_mapping(item)
        if not isinstance(item.get("name"), str) or not isinstance(item.get("source"), str):
            raise DiscoveryResultError("every model of the discovery output needs a name and a source")
        source: dict[str, Any] = {"modelId": item["name"], "sourceUri": item["source"]}
        size_gb = item.get("size_gb")
        if isinstance(size_gb, int | float) and not isinstance(size_gb, bool) and size_gb > 0:
            source["size"] = binary_quantity(int(size_gb * 1024**3))
        sources.append(source)
    return TemplateDiscovery(profile, sources)


def _from_profile_list(
    data: Mapping[str, Any], template: Mapping[str, Any], model: Mapping[str, Any]
) -> TemplateDiscovery:
    entries = parse_discovery_result(data)
    spec = as_mapping(template.get("spec"))
    wanted = spec.get("profileId")
    chosen = next((e for e in entries if e["id"] == wanted), None) if wanted else None
    if chosen is None:
        chosen = next((e for e in entries if _fits(e, template)), None)
    if chosen is None:
        raise DiscoveryResultError("no discovered profile fits the template's metric, precision and GPU")
    metadata: dict[str, Any] = {}
    if chosen.get("gpu"):
        metadata["gpu"] = chosen["gpu"]
    if isinstance(chosen.get("gpuCount"), int):
        metadata["gpuCount"] = chosen["gpuCount"]
    metadata.update(_enums(chosen))
    profile: dict[str, Any] = {"metadata": metadata}
    env = merge_env(chosen.get("containerEnv"), chosen.get("engineEnv"))
    if env:
        profile["env_vars"] = {str(e["name"]): str(e.get("value") or "") for e in env}
    sources = chosen.get("modelSources") or as_list(as_mapping(model.get("spec")).get("modelSources"))
    return TemplateDiscovery(profile, [_legacy_source(s) for s in sources if isinstance(s, Mapping)])


def _fits(entry: Mapping[str, Any], template: Mapping[str, Any]) -> bool:
    spec = as_mapping(template.get("spec"))
    gpu = gpu_spec(template)
    for field in ("metric", "precision"):
        if spec.get(field) and entry.get(field) and spec[field] != entry[field]:
            return False
    if (
        gpu.get("model")
        and entry.get("gpu")
        and normalize_gpu_model(str(gpu["model"])) != normalize_gpu_model(str(entry["gpu"]))
    ):
        return False
    requests = gpu.get("requests")
    return not (isinstance(requests, int) and requests > 0 and entry.get("gpuCount") not in (None, requests))


def _legacy_source(source: Mapping[str, Any]) -> dict[str, Any]:
    """A v1alpha2 model source as upstream's v1alpha1 one: no name, keyed by modelId."""
    return {k: copy_json(source[k]) for k in ("modelId", "sourceUri", "size", "env") if source.get(k) not in (None, "")}


def _enums(meta: Mapping[str, Any]) -> dict[str, str]:
    """metric, precision and type, where they hold a value upstream's CRD accepts."""
    out = {}
    for field, allowed in (("metric", METRICS), ("precision", PRECISIONS), ("type", PROFILE_TYPES)):
        if meta.get(field) in allowed:
            out[field] = str(meta[field])
    return out


def binary_quantity(count: int) -> str:
    """`count` bytes as Kubernetes writes a binary-SI quantity: the largest suffix that keeps it whole."""
    value, suffix = count, ""
    for next_suffix in _BINARY_SUFFIXES:
        if value == 0 or value % 1024:
            break
        value, suffix = value // 1024, next_suffix
    return f"{value}{suffix}"


def _annotation(obj: Mapping[str, Any], key: str) -> str | None:
    value = as_mapping(as_mapping(obj.get("metadata")).get("annotations")).get(key)
    return value if isinstance(value, str) else None
