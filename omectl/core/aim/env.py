"""Environment variables of AIM workloads, by precedence.

Lowest first, each layer merged by `name` (`merge_env`: the lower layer's order is kept, an entry of an upper layer
replaces the entry of the same name whole, in place, and new names are appended in the upper layer's order):

1. Operator defaults: for a download Job `AIM_DOWNLOADER_PROTOCOL=XET,HF_TRANSFER`, `TMPDIR=/tmp/`,
   `HF_HOME=/tmp/.hf`, `EXPECTED_SIZE_BYTES` (when the size is known), `MOUNT_PATH=/cache`, `ARTIFACT_NAME`,
   `ARTIFACT_NAMESPACE`, `STALL_TIMEOUT=120`, `TARGET_DIR=/cache` (upstream `buildDownloadJob`); for the inference
   container `AIM_CACHE_PATH=/workspace/cache`, `VLLM_ENABLE_METRICS=true` (upstream `buildMergedEnvVars`).
2. The resolved runtime config's `env`: cluster < namespace (< the AIMService's inline `spec.runtimeConfig.env`),
   already merged by `omectl.core.aim.layers`.
3. For the inference container of a service written in v1alpha1 that selects a template by name
   (`omectl.core.aim.service_templates`): the template's `AIM_PROFILE_ID`, `AIM_METRIC`, `AIM_PRECISION`, its
   `spec.env`, then `AIM_MODEL_ID` (`template_env`), as upstream's service merges them.
4. The profile (AIMProfile / AIMClusterProfile), when the workload is built from one: `spec.containerEnv`, then
   `spec.engineEnv` over it (engine arguments as env), for the inference container and for a download Job alike
   (the spec's "AIMProfile.spec.containerEnv / engineEnv" layer of the merge precedence).
5. The workload's owner: `AIMArtifact.spec.env` for a download Job, `AIMService.spec.env` for the inference
   container.

Entries are copied; the result shares nothing with the inputs. An entry without a name is dropped.

`AIM_ENGINE_ARGS` holds the engine's arguments as a JSON object. Where upstream merges it (the runtime-config
layers and the inference container, not a download Job), an upper layer's object is deep-merged into the lower's
(`merge_engine_args`) instead of replacing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from omectl.core.aim.engine_args import ENGINE_ARGS, merge_engine_args
from omectl.core.jsonish import as_mapping
from omectl.core.layering import copy_json

DOWNLOADER_PROTOCOL: Final = "AIM_DOWNLOADER_PROTOCOL"
DEFAULT_DOWNLOADER_PROTOCOL: Final = "XET,HF_TRANSFER"
CACHE_MOUNT_PATH: Final = "/cache"
"""Where a download Job mounts the artifact's PVC."""
INFERENCE_CACHE_PATH: Final = "/workspace/cache"
"""Where the inference container finds cached models."""

EnvList = list[dict[str, Any]]


def env_var(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value}


def merge_env(*layers: Sequence[Mapping[str, Any]] | None, json_keys: Sequence[str] = ()) -> EnvList:
    """Merge env lists by name, lowest first; None or an empty list adds nothing. The values of the names in
    `json_keys` are JSON objects merged key by key (`merge_engine_args`)."""
    out: EnvList = []
    positions: dict[str, int] = {}
    for layer in layers:
        for item in layer or ():
            name = item.get("name") if isinstance(item, Mapping) else None
            if not isinstance(name, str) or not name:
                continue
            entry = copy_json(item)
            position = positions.get(name)
            if position is None:
                positions[name] = len(out)
                out.append(entry)
            else:
                out[position] = merge_engine_args(out[position], entry) if name in json_keys else entry
    return out


def download_job_defaults(artifact_name: str, namespace: str, expected_size_bytes: int | None = None) -> EnvList:
    """The operator's defaults for an artifact's download Job, in upstream's order."""
    env = [
        env_var(DOWNLOADER_PROTOCOL, DEFAULT_DOWNLOADER_PROTOCOL),
        env_var("TMPDIR", "/tmp/"),
        env_var("HF_HOME", "/tmp/.hf"),
    ]
    if expected_size_bytes is not None:
        env.append(env_var("EXPECTED_SIZE_BYTES", str(expected_size_bytes)))
    env += [
        env_var("MOUNT_PATH", CACHE_MOUNT_PATH),
        env_var("ARTIFACT_NAME", artifact_name),
        env_var("ARTIFACT_NAMESPACE", namespace),
        env_var("STALL_TIMEOUT", "120"),
        env_var("TARGET_DIR", CACHE_MOUNT_PATH),
    ]
    return env


def inference_defaults() -> EnvList:
    """The operator's defaults for the inference container."""
    return [env_var("AIM_CACHE_PATH", INFERENCE_CACHE_PATH), env_var("VLLM_ENABLE_METRICS", "true")]


def download_job_env(
    artifact: Mapping[str, Any],
    config: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
    *,
    expected_size_bytes: int | None = None,
) -> EnvList:
    """Env of an AIMArtifact's download Job, the spec's merge precedence: operator defaults < config env (cluster <
    namespace, already merged) < profile `containerEnv` < profile `engineEnv` < artifact `spec.env`."""
    metadata = as_mapping(artifact.get("metadata"))
    defaults = download_job_defaults(
        str(metadata.get("name") or ""), str(metadata.get("namespace") or ""), expected_size_bytes
    )
    return merge_env(
        defaults,
        _env(config.get("env")),
        _env(_spec(profile).get("containerEnv")),
        _env(_spec(profile).get("engineEnv")),
        _env(_spec(artifact).get("env")),
    )


def template_env(template: Mapping[str, Any] | None) -> tuple[EnvList, EnvList, EnvList]:
    """What a service's selected AIMServiceTemplate / AIMClusterServiceTemplate gives its inference container, in
    upstream's three steps (`buildMergedEnvVars`): `AIM_PROFILE_ID` (`spec.profileId`), `AIM_METRIC` (`spec.metric`)
    and `AIM_PRECISION` (`spec.precision`); then the template's `spec.env`; then `AIM_MODEL_ID`, the first of its
    `spec.modelSources` (a custom model's). Empty without a template."""
    spec = _spec(template)
    named = [
        env_var(name, value)
        for name, value in (
            ("AIM_PROFILE_ID", spec.get("profileId")),
            ("AIM_METRIC", spec.get("metric")),
            ("AIM_PRECISION", spec.get("precision")),
        )
        if isinstance(value, str) and value
    ]
    sources = spec.get("modelSources")
    first = as_mapping(sources[0]) if isinstance(sources, list) and sources else {}
    model_id = first.get("modelId")
    model = [env_var("AIM_MODEL_ID", model_id)] if isinstance(model_id, str) and model_id else []
    own = _env(spec.get("env"))
    return named, [dict(item) for item in own or () if isinstance(item, Mapping)], model


def inference_env(
    service: Mapping[str, Any],
    config: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
    template: Mapping[str, Any] | None = None,
) -> EnvList:
    """Env of an AIMService's inference container: defaults < config env < the selected template's (`template_env`)
    < profile `containerEnv` < profile `engineEnv` < service `spec.env`; `AIM_ENGINE_ARGS` deep-merged across them."""
    profile_spec = _spec(profile)
    return merge_env(
        inference_defaults(),
        _env(config.get("env")),
        *template_env(template),
        _env(profile_spec.get("containerEnv")),
        _env(profile_spec.get("engineEnv")),
        _env(_spec(service).get("env")),
        json_keys=(ENGINE_ARGS,),
    )


def env_value(env: Iterable[Mapping[str, Any]], name: str) -> Any:
    """The `value` of the entry named `name`, or None."""
    for item in env:
        if item.get("name") == name:
            return item.get("value")
    return None


def _env(value: Any) -> Sequence[Mapping[str, Any]] | None:
    return value if isinstance(value, list | tuple) else None


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return as_mapping(obj.get("spec")) if obj is not None else {}
