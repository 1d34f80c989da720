"""The v1alpha2 path: service → profile cache → artifacts; model discovery → profiles and profile set; profile set
→ derived profiles; model source → cluster models. Every propagation edge, each hop with its own config; the
runtime-config part of every consumer's status."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from omectl.core.aim.artifacts import render_artifact_pvc, render_download_job
from omectl.core.aim.caches import profile_cache_status, render_artifacts, render_profile_cache
from omectl.core.aim.consumers import PROPAGATION_EDGES, bounded_name, consumer_status, propagate_edge
from omectl.core.aim.discovery import (
    INPUTS_ANNOTATION,
    SIMULATED_RESULT_ANNOTATION,
    DiscoveryResultError,
    discovery_current,
    model_status,
    parse_discovery_result,
    profile_set_for,
    profiles_from_discovery,
    render_discovery_job,
    simulated_discovery_configmap,
)
from omectl.core.aim.env import env_value
from omectl.core.aim.labels import PROPAGATED_LABELS_ANNOTATION
from omectl.core.aim.profiles import derive_profiles, profile_set_status
from omectl.core.aim.resolution import resolve
from omectl.core.aim.sources import cluster_models_for, model_source_status

V2 = "aim.eai.amd.com/v1alpha2"
COST = {"org.example/cost-center": "eng-ml", "org.example/team": "chat", "env": "test"}


def propagating(*patterns: str) -> dict[str, Any]:
    return {"labelPropagation": {"enabled": True, "match": list(patterns)}}


def obj(kind: str, name: str, namespace: str | None = "ml-team", labels: dict[str, str] | None = None, **spec: Any):
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "labels": dict(labels or COST)}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"apiVersion": V2, "kind": kind, "metadata": metadata, "spec": spec}


SOURCES = [
    {"name": "weights", "sourceUri": "hf://Qwen/Qwen3-32B", "modelId": "Qwen/Qwen3-32B", "size": "65Gi"},
    {"name": "draft", "sourceUri": "hf://Qwen/Qwen3-0.6B", "size": "2Gi", "env": [{"name": "HF_TOKEN", "value": "s"}]},
]
PROFILE = obj(
    "AIMProfile",
    "qwen-mi300x-fp8",
    modelName="qwen",
    containerEnv=[{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP"}],
    engineEnv=[{"name": "VLLM_X", "value": "1"}],
    modelSources=SOURCES,
    storageClassName="profile-ssd",
)
SERVICE = obj(
    "AIMService",
    "qwen-chat",
    model={"name": "qwen"},
    runtimeConfigName="team",
    caching={"enabled": True},
    env=[{"name": "HF_TOKEN", "value": "svc"}, {"name": "HTTPS_PROXY", "value": "p"}],
)


# -- AIMService → AIMProfileCache → AIMArtifact → PVC, Job


def test_service_with_caching_makes_a_cache_for_its_profile() -> None:
    cache = render_profile_cache(SERVICE, PROFILE, propagating("org.example/*"))
    assert cache is not None
    assert cache["kind"] == "AIMProfileCache"
    assert cache["metadata"]["name"] == "qwen-chat-qwen-mi300x-fp8"
    assert cache["metadata"]["namespace"] == "ml-team"
    assert cache["metadata"]["ownerReferences"][0]["kind"] == "AIMService"
    assert cache["spec"] == {
        "profileName": "qwen-mi300x-fp8",
        "profileScope": "Namespace",
        "runtimeConfigName": "team",
        "storageClassName": "profile-ssd",
        "env": SERVICE["spec"]["env"],
    }
    labels = cache["metadata"]["labels"]
    assert labels["org.example/cost-center"] == "eng-ml" and "env" not in labels
    assert labels["aim.eai.amd.com/service"] == "qwen-chat"
    cluster_profile = {**PROFILE, "kind": "AIMClusterProfile"}
    assert render_profile_cache(SERVICE, cluster_profile)["spec"]["profileScope"] == "Cluster"  # type: ignore[index]


@pytest.mark.parametrize("caching", [None, {}, {"enabled": False}])
def test_no_caching_no_cache(caching: dict[str, Any] | None) -> None:
    service = obj("AIMService", "s", model={"name": "qwen"}, caching=caching)
    assert render_profile_cache(service, PROFILE) is None


def test_cache_makes_one_artifact_per_model_source() -> None:
    cache = render_profile_cache(SERVICE, PROFILE, {})
    assert cache is not None
    cache["metadata"]["uid"] = "uid-cache"
    artifacts = render_artifacts(cache, PROFILE, {})
    assert [a["metadata"]["name"] for a in artifacts] == [
        "qwen-chat-qwen-mi300x-fp8-weights",
        "qwen-chat-qwen-mi300x-fp8-draft",
    ]
    weights, draft = artifacts
    assert weights["spec"] == {
        "sourceUri": "hf://Qwen/Qwen3-32B",
        "modelId": "Qwen/Qwen3-32B",
        "size": "65Gi",
        "env": SERVICE["spec"]["env"],
        "storageClassName": "profile-ssd",
        "runtimeConfigName": "team",
        "profileName": "qwen-mi300x-fp8",
        "profileScope": "Namespace",
    }
    # cache env ⊕ source env, the source winning by name
    assert draft["spec"]["env"] == [{"name": "HF_TOKEN", "value": "s"}, {"name": "HTTPS_PROXY", "value": "p"}]
    assert weights["metadata"]["ownerReferences"][0]["kind"] == "AIMProfileCache"
    assert weights["metadata"]["labels"]["aim.eai.amd.com/profile-cache"] == cache["metadata"]["name"]
    assert weights["metadata"]["labels"]["aim.eai.amd.com/service"] == "qwen-chat"  # aim.eai.amd.com/* propagates
    # the cache's own modelSources win over the profile's
    own = {**cache, "spec": {**cache["spec"], "modelSources": SOURCES[:1]}}
    assert [a["spec"]["sourceUri"] for a in render_artifacts(own, PROFILE)] == ["hf://Qwen/Qwen3-32B"]


def test_the_chain_down_to_the_download_job_takes_every_env_layer() -> None:
    cache = render_profile_cache(SERVICE, PROFILE, {})
    assert cache is not None
    artifact = render_artifacts(cache, PROFILE)[0]
    configs = {
        ("ml-team", "team"): {"spec": {"env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "NS"}]}},
        ("", "team"): {"spec": {"env": [{"name": "CLUSTER_ONLY", "value": "c"}]}},
    }
    resolution = resolve(artifact, lambda ns, name: configs.get((ns, name)))
    job = render_download_job(artifact, resolution.config, PROFILE)
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env_value(env, "AIM_DOWNLOADER_PROTOCOL") == "HTTP"  # the profile's containerEnv over the namespace's
    assert env_value(env, "VLLM_X") == "1"  # the profile's engineEnv
    assert env_value(env, "CLUSTER_ONLY") == "c"
    assert env_value(env, "HF_TOKEN") == "svc"  # the service env, carried by the cache, on the artifact


def test_cache_status_from_its_artifacts() -> None:
    cache = render_profile_cache(SERVICE, PROFILE, {})
    assert cache is not None
    rendered = render_artifacts(cache, PROFILE)
    names = [a["metadata"]["name"] for a in rendered]

    def live(*states: str) -> dict[str, Any]:
        return {
            n: {"status": {"status": s, "persistentVolumeClaim": f"{n}-pvc"}}
            for n, s in zip(names, states, strict=False)
        }

    assert profile_cache_status(rendered, {})["status"] == "Pending"
    assert profile_cache_status(rendered, live("Downloading"))["status"] == "Progressing"
    assert profile_cache_status(rendered, live("Ready", "Pending"))["status"] == "Progressing"
    assert profile_cache_status(rendered, live("Ready", "Failed"))["status"] == "Failed"
    done = profile_cache_status(rendered, live("Ready", "Ready"))
    assert done["status"] == "Ready"
    assert done["artifacts"][0] == {
        "name": names[0],
        "status": "Ready",
        "sourceName": "weights",
        "modelId": "Qwen/Qwen3-32B",
        "persistentVolumeClaim": f"{names[0]}-pvc",
    }
    assert [c["status"] for c in done["conditions"]] == ["True", "True"]
    assert profile_cache_status([], {})["status"] == "Ready"


# -- discovery


RESULT = [
    {
        "id": "vllm-MI300X-fp8-tp1-latency",
        "gpu": "MI300X",
        "gpuCount": 1,
        "precision": "fp8",
        "metric": "latency",
        "engineEnv": {"VLLM_TENSOR_PARALLEL_SIZE": 1},
        "containerEnv": [{"name": "HIP_FORCE_DEV_KERNARG", "value": "1"}],
    },
    {"id": "vllm-mi300x-bf16-tp2-throughput", "gpu": "MI300X", "gpuCount": 2, "precision": "bf16"},
]


def model(kind: str = "AIMModel", **spec: Any) -> dict[str, Any]:
    namespace = None if kind == "AIMClusterModel" else "ml-team"
    return obj(kind, "qwen", namespace, image="amdenterpriseai/aim-qwen3-32b:0.8", modelSources=SOURCES[:1], **spec)


@pytest.mark.parametrize(
    ("kind", "namespace", "name", "model_label"),
    [
        ("AIMModel", "ml-team", "qwen-discovery", "aim.eai.amd.com/model"),
        ("AIMClusterModel", "aim-ops", "qwen-cluster-discovery", "aim.eai.amd.com/cluster-model"),
    ],
)
def test_discovery_job_namespace_env_and_labels(kind: str, namespace: str, name: str, model_label: str) -> None:
    subject = model(kind, env=[{"name": "HF_TOKEN", "value": "m"}], runtimeConfigName="team")
    subject["metadata"]["annotations"] = {SIMULATED_RESULT_ANNOTATION: json.dumps(RESULT)}
    configs = {
        ("aim-ops", "team"): {"spec": {**propagating("org.example/*"), "env": [{"name": "NS", "value": "n"}]}},
        ("ml-team", "team"): {"spec": {**propagating("org.example/*"), "env": [{"name": "NS", "value": "n"}]}},
        ("", "team"): {"spec": {"env": [{"name": "HF_TOKEN", "value": "cluster"}, {"name": "C", "value": "c"}]}},
    }
    resolution = resolve(subject, lambda ns, n: configs.get((ns, n)), operator_namespace="aim-ops")
    assert resolution.resolved_ref is not None
    assert resolution.resolved_ref["namespace"] == namespace  # a cluster model resolves in the operator namespace
    job = render_discovery_job(subject, resolution.config, "aim-ops")
    assert (job["metadata"]["namespace"], job["metadata"]["name"]) == (namespace, name)
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "amdenterpriseai/aim-qwen3-32b:0.8"
    env = container["env"]
    assert env_value(env, "AIM_DISCOVERY_CONFIGMAP") == name
    assert env_value(env, "AIM_DISCOVERY_NAMESPACE") == namespace
    assert env_value(env, "NS") == "n" and env_value(env, "C") == "c"
    assert env_value(env, "HF_TOKEN") == "m"  # the model's env over the config's
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert labels["org.example/cost-center"] == "eng-ml" and "env" not in labels
        assert labels[model_label] == "qwen"
        assert labels["aim.eai.amd.com/component"] == "discovery"
    assert job["metadata"]["ownerReferences"][0]["kind"] == kind
    assert discovery_current(subject, job)
    changed = {**subject, "spec": {**subject["spec"], "image": "amdenterpriseai/aim-qwen3-32b:0.9"}}
    assert not discovery_current(changed, job)
    configmap = simulated_discovery_configmap(job)
    assert configmap is not None
    assert (configmap["metadata"]["name"], configmap["metadata"]["namespace"]) == (name, namespace)
    assert configmap["metadata"]["annotations"][INPUTS_ANNOTATION] == job["metadata"]["annotations"][INPUTS_ANNOTATION]
    assert parse_discovery_result(configmap["data"])[0]["id"] == "vllm-MI300X-fp8-tp1-latency"
    assert simulated_discovery_configmap({**job, "metadata": {"name": name}}) is None


@pytest.mark.parametrize(
    ("kind", "profile_kind"), [("AIMModel", "AIMProfile"), ("AIMClusterModel", "AIMClusterProfile")]
)
def test_discovery_result_becomes_profiles_and_a_profile_set(kind: str, profile_kind: str) -> None:
    subject = model(kind, runtimeConfigName="team")
    data = {"profiles.yaml": yaml.safe_dump(RESULT)}
    profiles = profiles_from_discovery(subject, data, propagating("org.example/*"))
    assert [p["kind"] for p in profiles] == [profile_kind] * 2
    first = profiles[0]
    assert first["metadata"]["name"] == "qwen-vllm-mi300x-fp8-tp1-latency"
    assert ("namespace" in first["metadata"]) == (kind == "AIMModel")
    assert first["spec"] == {
        "modelName": "qwen",
        "image": "amdenterpriseai/aim-qwen3-32b:0.8",
        "runtimeConfigName": "team",
        "profileId": "vllm-MI300X-fp8-tp1-latency",
        "gpu": "MI300X",
        "gpuCount": 1,
        "precision": "fp8",
        "metric": "latency",
        "containerEnv": [{"name": "HIP_FORCE_DEV_KERNARG", "value": "1"}],
        "engineEnv": [{"name": "VLLM_TENSOR_PARALLEL_SIZE", "value": "1"}],
        "modelSources": SOURCES[:1],
    }
    assert first["metadata"]["labels"]["org.example/team"] == "chat"
    assert first["metadata"]["ownerReferences"][0]["kind"] == kind

    profile_set = profile_set_for(subject, profiles, propagating("org.example/*"), operator_namespace="aim-ops")
    assert profile_set["metadata"]["namespace"] == ("ml-team" if kind == "AIMModel" else "aim-ops")
    assert profile_set["metadata"]["name"] == "qwen"
    assert profile_set["spec"]["modelName"] == "qwen"
    assert profile_set["spec"]["profiles"][0] == {
        "name": "vllm-mi300x-fp8-tp1-latency",
        "profileId": "vllm-MI300X-fp8-tp1-latency",
        "gpu": "MI300X",
        "gpuCount": 1,
        "precision": "fp8",
        "metric": "latency",
        "profileRef": {"kind": profile_kind, "name": "qwen-vllm-mi300x-fp8-tp1-latency"},
    }
    assert profile_set["metadata"]["labels"]["org.example/cost-center"] == "eng-ml"
    assert derive_profiles(profile_set) == []  # recorded profiles are not derived twice
    assert profile_set_status(profile_set)["profileCount"] == 2


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- gpu: MI300X", "no id"),
        ("- id: a\n- id: a", "twice"),
        ("{not yaml", "not YAML"),
        ("a string", "list"),
        ("- id: a\n  gpuCount: -1", "gpuCount"),
        ("- id: a\n  engineEnv: [{value: x}]", "name"),
    ],
)
def test_bad_discovery_results(text: str, error: str) -> None:
    with pytest.raises(DiscoveryResultError, match=error):
        parse_discovery_result({"profiles.yaml": text})


def test_discovery_result_shapes() -> None:
    assert parse_discovery_result({"profiles.yaml": json.dumps({"profiles": RESULT})})[1]["id"] == RESULT[1]["id"]
    assert parse_discovery_result({"profiles.yaml": ""}) == []
    with pytest.raises(DiscoveryResultError, match="key"):
        parse_discovery_result({})


def done(condition: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": condition, "status": "True"}]}}


@pytest.mark.parametrize(
    ("spec", "job", "configmap", "status", "reason"),
    [
        ({"discovery": {"enabled": False}}, None, None, "Ready", "DiscoveryDisabled"),
        ({}, None, None, "Pending", "DiscoveryPending"),
        ({}, {"status": {}}, None, "Progressing", "Discovering"),
        ({}, done("Complete"), None, "Progressing", "DiscoveryResultPending"),
        ({}, done("Failed"), None, "Failed", "DiscoveryFailed"),
        ({}, done("Complete"), {"data": {"profiles.yaml": json.dumps(RESULT)}}, "Ready", "ProfilesDiscovered"),
        ({}, done("Complete"), {"data": {"profiles.yaml": "- {}"}}, "Failed", "DiscoveryResultInvalid"),
    ],
)
def test_model_status_follows_discovery(
    spec: dict[str, Any], job: dict[str, Any] | None, configmap: dict[str, Any] | None, status: str, reason: str
) -> None:
    got = model_status(model(**spec), job, configmap)
    assert got["status"] == status
    assert got["conditions"][0]["reason"] == reason
    assert got.get("profileCount") == (2 if reason == "ProfilesDiscovered" else None)


# -- profile sets, model sources


def test_profile_set_derives_profiles() -> None:
    profile_set = obj(
        "AIMProfileSet",
        "qwen-variants",
        modelName="qwen",
        runtimeConfigName="team",
        profiles=[
            {"name": "fast", "gpu": "MI300X", "gpuCount": 8, "engineEnv": [{"name": "TP", "value": "8"}]},
            {"name": "Cheap_One", "gpuCount": 1, "modelSources": SOURCES[:1]},
            {"name": "known", "profileRef": {"kind": "AIMProfile", "name": "qwen-x"}},
        ],
    )
    derived = derive_profiles(profile_set, propagating("org.example/team"))
    assert [p["metadata"]["name"] for p in derived] == ["qwen-variants-fast", "qwen-variants-cheap-one"]
    fast = derived[0]
    assert fast["kind"] == "AIMProfile" and fast["metadata"]["namespace"] == "ml-team"
    assert fast["spec"] == {
        "modelName": "qwen",
        "runtimeConfigName": "team",
        "gpu": "MI300X",
        "gpuCount": 8,
        "engineEnv": [{"name": "TP", "value": "8"}],
    }
    assert fast["metadata"]["labels"]["org.example/team"] == "chat"
    assert "org.example/cost-center" not in fast["metadata"]["labels"]
    assert fast["metadata"]["labels"]["aim.eai.amd.com/profile-set"] == "qwen-variants"
    assert fast["metadata"]["ownerReferences"][0]["kind"] == "AIMProfileSet"


def test_model_source_lists_cluster_models() -> None:
    source = obj(
        "AIMClusterModelSource",
        "amd-catalog",
        None,
        runtimeConfigName="catalog",
        models=[
            {"name": "qwen3-32b", "image": "amdenterpriseai/aim-qwen3-32b:0.8", "modelSources": SOURCES[:1]},
            {"name": "llama", "image": "amdenterpriseai/aim-llama:0.8", "runtimeConfigName": "own"},
        ],
    )
    models = cluster_models_for(source, propagating("org.example/*"))
    assert [(m["kind"], m["metadata"]["name"]) for m in models] == [
        ("AIMClusterModel", "qwen3-32b"),
        ("AIMClusterModel", "llama"),
    ]
    assert "namespace" not in models[0]["metadata"]
    assert models[0]["spec"] == {
        "image": "amdenterpriseai/aim-qwen3-32b:0.8",
        "modelSources": SOURCES[:1],
        "runtimeConfigName": "catalog",
    }
    assert models[1]["spec"]["runtimeConfigName"] == "own"
    assert models[0]["metadata"]["labels"]["org.example/cost-center"] == "eng-ml"
    assert models[0]["metadata"]["labels"]["aim.eai.amd.com/model-source"] == "amd-catalog"
    assert model_source_status(source, 2)["status"] == "Ready"
    assert model_source_status(source, 1)["status"] == "Progressing"


# -- every propagation edge, each hop with its own config


def edges() -> list[tuple[str, str, Any]]:
    """(parent kind, child kind, render(parent, config) -> child) for every v1alpha2 edge."""
    ns_model = model()
    cl_model = model("AIMClusterModel")
    data = {"profiles.yaml": json.dumps(RESULT)}
    profile_set = obj("AIMProfileSet", "set", modelName="qwen", profiles=[{"name": "a", "gpuCount": 1}])
    source = obj("AIMClusterModelSource", "src", None, models=[{"name": "m", "image": "i"}])
    cache = obj("AIMProfileCache", "cache", profileName="p", modelSources=SOURCES[:1])
    artifact = obj("AIMArtifact", "art", sourceUri="hf://x", size="1Gi")
    return [
        ("AIMService", "AIMProfileCache", lambda c: render_profile_cache(SERVICE, PROFILE, c)),
        ("AIMProfileCache", "AIMArtifact", lambda c: render_artifacts(cache, None, c)[0]),
        ("AIMArtifact", "PersistentVolumeClaim", lambda c: render_artifact_pvc(artifact, c)),
        ("AIMArtifact", "Job", lambda c: render_download_job(artifact, c)),
        ("AIMModel", "AIMProfile", lambda c: profiles_from_discovery(ns_model, data, c)[0]),
        ("AIMModel", "AIMProfileSet", lambda c: profile_set_for(ns_model, [], c)),
        ("AIMModel", "Job", lambda c: render_discovery_job(ns_model, c)),
        ("AIMClusterModel", "AIMClusterProfile", lambda c: profiles_from_discovery(cl_model, data, c)[0]),
        ("AIMClusterModel", "AIMProfileSet", lambda c: profile_set_for(cl_model, [], c)),
        ("AIMClusterModel", "Job", lambda c: render_discovery_job(cl_model, c)),
        ("AIMProfileSet", "AIMProfile", lambda c: derive_profiles(profile_set, c)[0]),
        ("AIMClusterModelSource", "AIMClusterModel", lambda c: cluster_models_for(source, c)[0]),
    ]


def test_the_edge_table_is_the_spec_graph() -> None:
    covered = {(p, c) for p, c, _ in edges()}
    table = {(p, c) for p, children in PROPAGATION_EDGES.items() for c in children}
    assert covered == table


@pytest.mark.parametrize(("parent", "child", "render"), edges(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_edge_propagates_with_the_parents_config(parent: str, child: str, render: Any) -> None:
    on = render(propagating("org.example/*"))
    off = render({})
    assert on["kind"] == child
    for target in [on["metadata"]] + ([on["spec"]["template"]["metadata"]] if child == "Job" else []):
        labels = target["labels"]
        assert labels["org.example/cost-center"] == "eng-ml"
        assert labels["org.example/team"] == "chat"
        assert "env" not in labels  # not matched
        assert set(target["annotations"][PROPAGATED_LABELS_ANNOTATION].split(",")) >= {
            "org.example/cost-center",
            "org.example/team",
        }
    for target in [off["metadata"]] + ([off["spec"]["template"]["metadata"]] if child == "Job" else []):
        assert not any(k.startswith("org.example/") for k in target["labels"])  # propagation off in this config


def test_a_childs_own_label_wins_and_unknown_edges_are_refused() -> None:
    parent = obj("AIMProfileSet", "set", labels={"team": "parent"})
    child = obj("AIMProfile", "p", labels={"team": "own"})
    assert propagate_edge(parent, child, propagating("team"))["metadata"]["labels"]["team"] == "own"
    with pytest.raises(ValueError, match="no propagation edge"):
        propagate_edge(obj("AIMArtifact", "a"), obj("AIMProfile", "p"), {})


# -- the runtime-config part of every consumer's status


def configs(**found: dict[str, Any]) -> Any:
    return lambda ns, name: found.get(f"{ns or 'cluster'}_{name}")


@pytest.mark.parametrize(
    "consumer",
    [
        model(),
        model("AIMClusterModel"),
        PROFILE,
        obj("AIMProfileSet", "s", modelName="q"),
        obj("AIMProfileCache", "c", profileName="p"),
        obj("AIMArtifact", "a", sourceUri="hf://x"),
        obj("AIMClusterModelSource", "src", None),
    ],
    ids=lambda c: c["kind"],
)
def test_missing_explicit_config_fails_and_recovers_when_it_appears(consumer: dict[str, Any]) -> None:
    subject = {**consumer, "spec": {**consumer["spec"], "runtimeConfigName": "recovery-test-config"}}
    own = {"status": "Ready", "conditions": [{"type": "Ready", "status": "True", "reason": "R", "message": ""}]}
    missing = consumer_status(resolve(subject, configs()), own, generation=3)
    assert missing["status"] == "Failed"
    conditions = {c["type"]: c for c in missing["conditions"]}
    assert conditions["ConfigValid"]["status"] == "False"
    assert conditions["ConfigValid"]["reason"] == "ReferenceNotFound"
    assert conditions["RuntimeConfigReady"]["status"] == "False"
    assert conditions["Ready"]["reason"] == "ReferenceNotFound"
    assert "resolvedRuntimeConfig" not in missing
    assert missing["observedGeneration"] == 3

    appeared = {("", "recovery-test-config"): {"metadata": {"uid": "u"}, "spec": {}}}
    resolution = resolve(subject, lambda ns, name: appeared.get((ns, name)))
    recovered = consumer_status(resolution, own, previous_conditions=missing["conditions"])
    assert recovered["status"] == "Ready"
    conditions = {c["type"]: c for c in recovered["conditions"]}
    assert conditions["ConfigValid"] == {
        "type": "ConfigValid",
        "status": "True",
        "reason": "ConfigurationValid",
        "message": "Configuration is valid",
    }
    assert conditions["RuntimeConfigReady"]["reason"] == "RuntimeConfigResolved"
    assert conditions["Ready"]["status"] == "True"
    assert recovered["resolvedRuntimeConfig"] == {
        "kind": "AIMClusterRuntimeConfig",
        "name": "recovery-test-config",
        "namespace": "",
        "scope": "Cluster",
        "uid": "u",
    }


def test_the_kinds_own_config_valid_wins_over_the_configs_recovery() -> None:
    """A v1alpha1 model's missing pull secret (its own `ConfigValid=False`) stays False on the next reconcile, though
    the previous status had `ConfigValid` and the runtime config is valid."""
    own_false = {"type": "ConfigValid", "status": "False", "reason": "ReferenceNotFound", "message": "m"}
    own = {"status": "Failed", "conditions": [own_false]}
    again = consumer_status(resolve(model(), configs()), own, previous_conditions=[own_false])
    assert [c for c in again["conditions"] if c["type"] == "ConfigValid"] == [own_false]


def test_missing_default_config_is_not_an_error() -> None:
    got = consumer_status(resolve(model(), configs()), {"status": "Pending"})
    assert got["status"] == "Pending"
    assert got["conditions"][0]["reason"] == "DefaultConfigNotFound"
    assert got["conditions"][0]["status"] == "True"


def test_bounded_names() -> None:
    assert bounded_name("abc", "-x") == "abc-x"
    long = bounded_name("a" * 80, "-download-12345678")
    assert len(long) == 63 and long.endswith("-download-12345678")
    assert bounded_name("a" * 80 + "b", "-x") != bounded_name("a" * 80 + "c", "-x")
