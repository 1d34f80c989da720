"""Env precedence for download Jobs and inference containers: every layer present, each one missing, merge order."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.env import (
    download_job_defaults,
    download_job_env,
    env_value,
    inference_env,
    merge_env,
)
from omectl.core.aim.layers import merge_layers

ARTIFACT = {"metadata": {"name": "qwen-art", "namespace": "ml-team"}, "spec": {}}


def with_env(obj: dict[str, Any], env: list[dict[str, Any]], field: str = "env") -> dict[str, Any]:
    return {**obj, "spec": {**obj.get("spec", {}), field: env}}


def test_download_defaults_in_upstream_order() -> None:
    assert download_job_defaults("qwen-art", "ml-team", 1234) == [
        {"name": "AIM_DOWNLOADER_PROTOCOL", "value": "XET,HF_TRANSFER"},
        {"name": "TMPDIR", "value": "/tmp/"},
        {"name": "HF_HOME", "value": "/tmp/.hf"},
        {"name": "EXPECTED_SIZE_BYTES", "value": "1234"},
        {"name": "MOUNT_PATH", "value": "/cache"},
        {"name": "ARTIFACT_NAME", "value": "qwen-art"},
        {"name": "ARTIFACT_NAMESPACE", "value": "ml-team"},
        {"name": "STALL_TIMEOUT", "value": "120"},
        {"name": "TARGET_DIR", "value": "/cache"},
    ]
    assert env_value(download_job_defaults("a", "n"), "EXPECTED_SIZE_BYTES") is None


CONFIG = {"env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP"}, {"name": "CFG", "value": "config"}]}
PROFILE = {
    "spec": {"containerEnv": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "XET"}, {"name": "PROF", "value": "p"}]}
}
OWN = [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "XET,HTTP"}]


@pytest.mark.parametrize(
    ("config", "profile", "own", "protocol"),
    [
        (CONFIG, PROFILE, OWN, "XET,HTTP"),  # the artifact wins
        (CONFIG, PROFILE, None, "XET"),  # then the profile
        (CONFIG, None, None, "HTTP"),  # then the config
        ({}, None, None, "XET,HF_TRANSFER"),  # then the operator default
        ({}, PROFILE, None, "XET"),
        ({}, None, OWN, "XET,HTTP"),
        (CONFIG, None, OWN, "XET,HTTP"),
    ],
)
def test_download_protocol_precedence(
    config: dict[str, Any], profile: dict[str, Any] | None, own: list[dict[str, Any]] | None, protocol: str
) -> None:
    artifact = with_env(ARTIFACT, own) if own is not None else ARTIFACT
    env = download_job_env(artifact, config, profile)
    assert env_value(env, "AIM_DOWNLOADER_PROTOCOL") == protocol
    assert [e["name"] for e in env].count("AIM_DOWNLOADER_PROTOCOL") == 1
    assert env[0]["name"] == "AIM_DOWNLOADER_PROTOCOL"  # replaced in place, keeping the defaults' order


def test_download_env_order_and_every_layer() -> None:
    env = download_job_env(with_env(ARTIFACT, [{"name": "OWN", "value": "o"}, *OWN]), CONFIG, PROFILE)
    assert [e["name"] for e in env] == [
        "AIM_DOWNLOADER_PROTOCOL",
        "TMPDIR",
        "HF_HOME",
        "MOUNT_PATH",
        "ARTIFACT_NAME",
        "ARTIFACT_NAMESPACE",
        "STALL_TIMEOUT",
        "TARGET_DIR",
        "CFG",
        "PROF",
        "OWN",
    ]


def test_download_env_takes_the_profiles_engine_env_over_its_container_env() -> None:
    profile = {"spec": {"engineEnv": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "ENGINE"}]}}
    assert env_value(download_job_env(ARTIFACT, {}, profile), "AIM_DOWNLOADER_PROTOCOL") == "ENGINE"
    profile["spec"]["containerEnv"] = [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "CONTAINER"}]
    assert env_value(download_job_env(ARTIFACT, CONFIG, profile), "AIM_DOWNLOADER_PROTOCOL") == "ENGINE"
    assert (
        env_value(download_job_env(with_env(ARTIFACT, OWN), CONFIG, profile), "AIM_DOWNLOADER_PROTOCOL") == "XET,HTTP"
    )


SERVICE = {"metadata": {"name": "qwen-chat", "namespace": "ml-team"}, "spec": {}}


@pytest.mark.parametrize(
    ("config_value", "container_value", "engine_value", "service_value", "expected"),
    [
        ("cfg", "container", "engine", "svc", "svc"),
        ("cfg", "container", "engine", None, "engine"),
        ("cfg", "container", None, None, "container"),
        ("cfg", None, None, None, "cfg"),
        (None, None, None, None, "true"),
        (None, None, "engine", None, "engine"),
        ("cfg", None, None, "svc", "svc"),
    ],
)
def test_inference_env_precedence(
    config_value: str | None,
    container_value: str | None,
    engine_value: str | None,
    service_value: str | None,
    expected: str,
) -> None:
    def layer(value: str | None) -> list[dict[str, Any]]:
        return [{"name": "VLLM_ENABLE_METRICS", "value": value}] if value is not None else []

    profile = {"spec": {"containerEnv": layer(container_value), "engineEnv": layer(engine_value)}}
    env = inference_env(with_env(SERVICE, layer(service_value)), {"env": layer(config_value)}, profile)
    assert env_value(env, "VLLM_ENABLE_METRICS") == expected
    assert env[:2] == [
        {"name": "AIM_CACHE_PATH", "value": "/workspace/cache"},
        {"name": "VLLM_ENABLE_METRICS", "value": expected},
    ]


def test_merge_env_replaces_entries_whole_and_copies() -> None:
    lower = [{"name": "T", "value": "x"}, {"name": "U", "value": "u"}]
    upper = [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}, {"value": "nameless"}]
    merged = merge_env(lower, None, [], upper)
    assert merged == [
        {"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "U", "value": "u"},
    ]
    merged[0]["valueFrom"]["secretKeyRef"]["key"] = "changed"
    assert upper[0]["valueFrom"]["secretKeyRef"]["key"] == "k"


def engine_args(value: str) -> dict[str, Any]:
    return {"name": "AIM_ENGINE_ARGS", "value": value}


def test_engine_args_are_deep_merged_across_cluster_namespace_and_service() -> None:
    cluster = {"env": [engine_args('{"tensor-parallel-size":1,"kv":{"dtype":"fp8","block":16}}')]}
    namespace = {"env": [engine_args('{"gpu-memory-utilization":0.9,"kv":{"block":32}}')]}
    config = merge_layers([("cluster", cluster), ("namespace", namespace)]).config
    service = with_env({}, [engine_args('{"tensor-parallel-size":2,"max-model-len":8192}')])
    merged = env_value(inference_env(service, config), "AIM_ENGINE_ARGS")
    assert merged == (
        '{"gpu-memory-utilization":0.9,"kv":{"block":32,"dtype":"fp8"},"max-model-len":8192,"tensor-parallel-size":2}'
    )


@pytest.mark.parametrize(
    ("lower", "upper", "expected"),
    [
        ('{"a":1}', "--tp 2", "--tp 2"),  # not an object above: the upper verbatim
        ("--tp 2", '{"a":1}', '{"a":1}'),  # not an object below: the upper verbatim
        ('{"a":1}', "", '{"a":1}'),  # an empty upper takes the lower
        ("", '{"b":2}', '{"b":2}'),
        ('{"a":{"x":1}}', '{"a":3}', '{"a":3}'),  # a scalar above replaces an object below
    ],
)
def test_engine_args_merge_edges(lower: str, upper: str, expected: str) -> None:
    merged = merge_env([engine_args(lower)], [engine_args(upper)], json_keys=("AIM_ENGINE_ARGS",))
    assert merged == [engine_args(expected)]


def test_a_download_job_replaces_engine_args_whole() -> None:
    artifact = with_env(ARTIFACT, [engine_args('{"b":2}')])
    env = download_job_env(artifact, {"env": [engine_args('{"a":1}')]})
    assert env_value(env, "AIM_ENGINE_ARGS") == '{"b":2}'
