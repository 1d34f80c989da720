"""AIM v1alpha2 models and caching end to end (docs/aim-resources.md) through the real kubectl: the spec's
multi-tenant cost-tracking example down to the download Jobs' pods, the download env and storage class precedence,
discovery to profiles (namespaced and cluster models), sources, derived profiles, every propagation edge, recovery
from a missing explicit config on every consumer kind, config changes re-reconciling consumers, and an artifact's
infrastructure errors (a 503 injected into its PVC writes, a lost PVC and the grace period, `GRACE_S`).

One embedded cluster with the workload simulator (it completes Jobs, binds PVCs and writes a discovery result given
as the model's `sim.omectl.io/discovery-result` annotation) and the controller. Scenarios use namespaces and config
names of their own; the cluster-wide `default` config is the cost-tracking one (label propagation only).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ControlledFleet, running_fleet
from tests.support import ClusterKubectl, Kubectl, until

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "deploy" / "samples" / "aim"
CLUSTER = "aimc-1"
V2 = "aim.eai.amd.com/v1alpha2"
V1 = "aim.eai.amd.com/v1alpha1"
KSERVE = "inferenceservices.serving.kserve.io"
ROUTES = "httproutes.gateway.networking.k8s.io"
COST = {
    "org.example/cost-center": "eng-ml",
    "org.example/department": "engineering",
    "org.example/project": "chatbot-v2",
}
pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]


GRACE_S = 2.0
"""The module controller's grace period for an artifact's infrastructure errors (upstream's is 10 s)."""


class Env(ClusterKubectl):
    def __init__(self, kubectl: Kubectl, fleet: ControlledFleet | None = None) -> None:
        super().__init__(kubectl, CLUSTER)
        self.fleet = fleet

    def items(self, resource: str, namespace: str | None = None, selector: str | None = None) -> list[dict[str, Any]]:
        args = ["get", resource, "-o", "json", *(["-n", namespace] if namespace else [])]
        if selector:
            args += ["-l", selector]
        return json.loads(self.k(*args))["items"]  # type: ignore[no-any-return]

    def status(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        found = self.get(resource, name, namespace)
        return (found or {}).get("status") or {}

    def condition(self, resource: str, name: str, namespace: str | None, condition_type: str) -> dict[str, Any]:
        conditions = self.status(resource, name, namespace).get("conditions") or []
        return next((c for c in conditions if c["type"] == condition_type), {})


def obj(kind: str, name: str, namespace: str | None = None, labels: dict[str, str] | None = None, **spec: Any):  # type: ignore[no-untyped-def]
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = labels
    version = V1 if kind.endswith("RuntimeConfig") else V2
    return {"apiVersion": version, "kind": kind, "metadata": meta, "spec": spec}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def env_value(env: list[dict[str, Any]], name: str) -> str | None:
    return next((e.get("value") for e in env if e["name"] == name), None)


def job_env(job: dict[str, Any]) -> list[dict[str, Any]]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container.get("env") or []  # type: ignore[no-any-return]


WEIGHTS = {"name": "weights", "sourceUri": "hf://Qwen/Qwen3-32B", "modelId": "Qwen/Qwen3-32B", "size": "65Gi"}
DISCOVERY_RESULT = """\
- id: vllm-mi300x-fp8-tp1-latency
  gpu: MI300X
  gpuCount: 1
  precision: fp8
  metric: latency
  engineEnv: {VLLM_TENSOR_PARALLEL_SIZE: "1"}
- id: vllm-mi300x-bf16-tp2-throughput
  gpu: MI300X
  gpuCount: 2
  precision: bf16
  metric: throughput
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(pools=(NodePool(count=2, gpus_per_node=8, gpu_resource="amd.com/gpu"),))
    base = tmp_path_factory.mktemp("aimc")
    with running_fleet(
        base, 1, "aimc-", simulator=simulator, install_webhooks=False, aim_degradation_threshold_seconds=GRACE_S
    ) as fleet:
        env = Env(fleet.kubectl, fleet)
        env.k("apply", "-f", str(SAMPLES / "00-namespaces.yaml"), "-f", str(SAMPLES / "gateway.yaml"))
        env.apply(namespace("aim-system"))
        env.k("apply", "-f", str(SAMPLES / "cost-tracking" / "cluster-default.yaml"))
        yield env


# --- the spec's multi-tenant cost tracking ---------------------------------------------------------------------


def test_cost_tracking_labels_reach_every_child_down_to_the_download_pods(env: Env) -> None:
    env.apply(
        obj("AIMProfile", "qwen3-mi300x", "ml-team", modelName="qwen-qwen3-32b", modelSources=[WEIGHTS]),
        obj(
            "AIMService",
            "qwen-chat",
            "ml-team",
            labels=COST,
            model={"name": "qwen-qwen3-32b"},
            caching={"enabled": True},
            routing={"enabled": True, "gatewayRef": {"name": "inference-gateway", "namespace": "gateways"}},
        ),
    )
    cache = "qwen-chat-qwen3-mi300x"
    artifact = f"{cache}-weights"
    until(lambda: env.status("aimartifacts", artifact, "ml-team").get("status") == "Ready", "the artifact Ready")
    until(lambda: env.status("aimprofilecaches", cache, "ml-team").get("status") == "Ready", "the cache Ready")
    columns = ",".join(COST)
    expected = re.compile(r"\beng-ml\s+engineering\s+chatbot-v2\s*$", re.M)  # the three -L columns
    for resource, selector_or_name in [
        (KSERVE, "qwen-chat"),
        (ROUTES, "qwen-chat"),
        ("aimprofilecaches", cache),
        ("aimartifacts", artifact),
    ]:
        out = until(
            lambda r=resource, n=selector_or_name: (
                (o := env.k("get", r, n, "-n", "ml-team", "-L", columns)) and expected.search(o) and o
            ),
            f"the cost labels on {resource}",
        )
        assert expected.search(out)
    for resource in ("pvc", "jobs"):
        out = env.k("get", resource, "-n", "ml-team", "-l", f"aim.eai.amd.com/artifact={artifact}", "-L", columns)
        assert len(out.strip().splitlines()) == 2 and expected.search(out), out
    pods = env.k(
        "get",
        "jobs",
        "-n",
        "ml-team",
        "-l",
        f"aim.eai.amd.com/artifact={artifact}",
        "-o",
        "jsonpath={.items[0].spec.template.metadata.labels}",
    )
    assert {k: json.loads(pods)[k] for k in COST} == COST
    # the InferenceService mounts the Ready artifact read-only
    isvc = until(
        lambda: (i := env.get(KSERVE, "qwen-chat", "ml-team")) and len(i["spec"]["predictor"]["volumes"]) > 1 and i,
        "the artifact mounted",
    )
    claim = env.status("aimartifacts", artifact, "ml-team")["persistentVolumeClaim"]
    assert {"name": f"artifact-{artifact}", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}} in isvc[
        "spec"
    ]["predictor"]["volumes"]
    (container,) = isvc["spec"]["predictor"]["containers"]
    assert {"name": f"artifact-{artifact}", "mountPath": "/workspace/cache/Qwen/Qwen3-32B", "readOnly": True} in (
        container["volumeMounts"]
    )
    # a label the service drops leaves every child
    env.k("label", "aimservices", "qwen-chat", "-n", "ml-team", "org.example/project-")
    until(
        lambda: "org.example/project" not in env.get("pvc", claim, "ml-team")["metadata"]["labels"],  # type: ignore[index]
        "the dropped label removed from the PVC",
    )
    job = env.items("jobs", "ml-team", f"aim.eai.amd.com/artifact={artifact}")[0]
    until(
        lambda: "org.example/project" not in env.get("jobs", job["metadata"]["name"], "ml-team")["metadata"]["labels"],  # type: ignore[index]
        "the dropped label removed from the Job",
    )
    env.k("label", "aimservices", "qwen-chat", "-n", "ml-team", "org.example/project=chatbot-v2")


# --- download env precedence --------------------------------------------------------------------------------------

LAYERS = ("artifact", "engineEnv", "containerEnv", "namespace", "cluster")
PROTOCOL = {
    "artifact": "XET",
    "engineEnv": "HF_TRANSFER",
    "containerEnv": "HTTP,HF_TRANSFER",
    "namespace": "HTTP",
    "cluster": "HTTP,XET",
}


@pytest.mark.parametrize(
    "present",
    [
        LAYERS,
        LAYERS[1:],
        LAYERS[2:],
        LAYERS[3:],
        LAYERS[4:],
        (),
        ("artifact", "namespace"),
        ("engineEnv", "cluster"),
        ("artifact", "engineEnv", "containerEnv", "cluster"),
    ],
    ids=lambda p: "+".join(p) or "operator-defaults",
)
def test_download_env_follows_the_merge_precedence(env: Env, present: tuple[str, ...]) -> None:
    ns = "dl-" + ("-".join(p[:3].lower() for p in present) or "none")
    config = f"cfg-{ns}"
    docs: list[dict[str, Any]] = [namespace(ns)]

    def layer_env(layer: str) -> list[dict[str, str]]:
        return [
            {"name": "AIM_DOWNLOADER_PROTOCOL", "value": PROTOCOL[layer]},
            {"name": f"LAYER_{layer.upper()}", "value": "1"},
        ]

    if "cluster" in present:
        docs.append(obj("AIMClusterRuntimeConfig", config, env=layer_env("cluster")))
    if "namespace" in present:
        docs.append(obj("AIMRuntimeConfig", config, ns, env=layer_env("namespace")))
    spec: dict[str, Any] = {"sourceUri": "hf://Qwen/Qwen3-32B", "size": "1Gi"}
    if "cluster" in present or "namespace" in present:
        spec["runtimeConfigName"] = config
    profile: dict[str, Any] = {}
    for layer in ("engineEnv", "containerEnv"):
        if layer in present:
            profile[layer] = layer_env(layer)
    if profile:
        docs.append(obj("AIMProfile", "p", ns, modelName="m", **profile))
        spec["profileName"] = "p"
    if "artifact" in present:
        spec["env"] = layer_env("artifact")
    docs.append(obj("AIMArtifact", "weights", ns, **spec))
    env.apply(*docs)
    jobs = until(lambda: env.items("jobs", ns, "aim.eai.amd.com/artifact=weights"), "the download Job")
    variables = job_env(jobs[0])
    top = next((layer for layer in LAYERS if layer in present), None)
    assert env_value(variables, "AIM_DOWNLOADER_PROTOCOL") == (PROTOCOL[top] if top else "XET,HF_TRANSFER")
    for layer in LAYERS:
        assert (env_value(variables, f"LAYER_{layer.upper()}") == "1") == (layer in present), layer
    assert env_value(variables, "ARTIFACT_NAME") == "weights"
    assert env_value(variables, "MOUNT_PATH") == "/cache"
    status = until(
        lambda: (s := env.status("aimartifacts", "weights", ns)).get("status") == "Ready" and s, "artifact Ready"
    )
    assert status["download"]["protocolSequence"] == env_value(variables, "AIM_DOWNLOADER_PROTOCOL")


# --- storage class precedence -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "artifact_class", "config_spec", "expected"),
    [
        ("own", "mine", {"storage": {"defaultStorageClassName": "cfg"}, "defaultStorageClassName": "old"}, "mine"),
        ("config", None, {"storage": {"defaultStorageClassName": "cfg"}, "defaultStorageClassName": "old"}, "cfg"),
        ("deprecated", None, {"defaultStorageClassName": "old"}, "old"),
        ("cluster-default", None, {"env": [{"name": "X", "value": "1"}]}, None),
    ],
)
def test_artifact_pvc_storage_class_precedence(
    env: Env, case: str, artifact_class: str | None, config_spec: dict[str, Any], expected: str | None
) -> None:
    ns = f"sc-{case}"
    spec: dict[str, Any] = {"sourceUri": "s3://bucket/model", "size": "65Gi", "runtimeConfigName": "storage"}
    if artifact_class:
        spec["storageClassName"] = artifact_class
    env.apply(namespace(ns), obj("AIMRuntimeConfig", "storage", ns, **config_spec), obj("AIMArtifact", "a", ns, **spec))
    (pvc,) = until(lambda: env.items("pvc", ns, "aim.eai.amd.com/artifact=a"), "the artifact PVC")
    assert pvc["spec"].get("storageClassName") == expected
    assert pvc["spec"]["resources"]["requests"]["storage"] == "72Gi"  # 65Gi + 10% headroom, rounded up
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    status = until(lambda: (s := env.status("aimartifacts", "a", ns)).get("status") == "Ready" and s, "Ready")
    assert status["persistentVolumeClaim"] == pvc["metadata"]["name"]
    assert status["resolvedRuntimeConfig"]["scope"] == "Namespace"


# --- discovery, profiles, profile sets, sources -----------------------------------------------------------------


def test_a_model_discovers_profiles_and_its_profile_set(env: Env) -> None:
    ns = "disc"
    env.apply(
        namespace(ns),
        obj(
            "AIMRuntimeConfig",
            "default",
            ns,
            env=[{"name": "HF_ENDPOINT", "value": "https://mirror.example"}],
            labelPropagation={"enabled": True, "match": ["org.example/*"]},
        ),
    )
    model = obj(
        "AIMModel",
        "qwen",
        ns,
        labels={"org.example/cost-center": "eng-ml"},
        image="docker.io/amdenterpriseai/aim-qwen-qwen3-32b:0.8.4",
        modelSources=[WEIGHTS],
        env=[{"name": "AIM_LOG_LEVEL", "value": "debug"}],
    )
    model["metadata"]["annotations"] = {"sim.omectl.io/discovery-result": DISCOVERY_RESULT}
    env.apply(model)
    status = until(lambda: (s := env.status("aimmodels", "qwen", ns)).get("status") == "Ready" and s, "model Ready")
    assert status["profileCount"] == 2
    job = env.get("jobs", "qwen-discovery", ns)
    assert job is not None
    variables = job_env(job)
    assert env_value(variables, "HF_ENDPOINT") == "https://mirror.example"  # the model's runtime-config env
    assert env_value(variables, "AIM_LOG_LEVEL") == "debug"
    assert env_value(variables, "AIM_DISCOVERY_CONFIGMAP") == "qwen-discovery"
    for labels in (job["metadata"]["labels"], job["spec"]["template"]["metadata"]["labels"]):
        assert labels["org.example/cost-center"] == "eng-ml"  # AIMModel -> discovery Job (and its pods)
        assert labels["aim.eai.amd.com/model"] == "qwen"
    assert env.get("configmaps", "qwen-discovery", ns) is not None
    names = {"qwen-vllm-mi300x-fp8-tp1-latency", "qwen-vllm-mi300x-bf16-tp2-throughput"}
    profiles = until(
        lambda: (p := env.items("aimprofiles", ns, "aim.eai.amd.com/model=qwen")) and len(p) == 2 and p, "profiles"
    )
    assert {p["metadata"]["name"] for p in profiles} == names
    fp8 = next(p for p in profiles if "fp8" in p["metadata"]["name"])
    assert fp8["spec"]["engineEnv"] == [{"name": "VLLM_TENSOR_PARALLEL_SIZE", "value": "1"}]
    assert fp8["spec"]["modelSources"] == [WEIGHTS]
    assert fp8["metadata"]["labels"]["org.example/cost-center"] == "eng-ml"  # AIMModel -> AIMProfile
    profile_set = until(lambda: env.get("aimprofilesets", "qwen", ns), "the profile set")
    assert profile_set["metadata"]["labels"]["org.example/cost-center"] == "eng-ml"  # AIMModel -> AIMProfileSet
    assert {e["profileRef"]["name"] for e in profile_set["spec"]["profiles"]} == names
    until(lambda: env.status("aimprofilesets", "qwen", ns).get("profileCount") == 2, "the set's status")
    until(lambda: env.status("aimprofiles", fp8["metadata"]["name"], ns).get("status") == "Ready", "profile Ready")

    # a label change of the model reaches its children; a new image re-runs discovery
    env.k("label", "aimmodels", "qwen", "-n", ns, "org.example/cost-center=finance", "--overwrite")
    until(
        lambda: env.get("aimprofilesets", "qwen", ns)["metadata"]["labels"]["org.example/cost-center"] == "finance",  # type: ignore[index]
        "the relabelled profile set",
    )
    old_uid = job["metadata"]["uid"]
    env.k("patch", "aimmodels", "qwen", "-n", ns, "--type=merge", "-p", '{"spec":{"image":"example/qwen:0.9"}}')
    rerun = until(
        lambda: (j := env.get("jobs", "qwen-discovery", ns)) and j["metadata"]["uid"] != old_uid and j, "a new Job"
    )
    assert rerun["spec"]["template"]["spec"]["containers"][0]["image"] == "example/qwen:0.9"
    until(
        lambda: all(
            p["spec"]["image"] == "example/qwen:0.9" for p in env.items("aimprofiles", ns, "aim.eai.amd.com/model=qwen")
        ),
        "the profiles of the new run",
    )


def test_a_cluster_model_discovers_in_the_operator_namespace_with_the_config_there(env: Env) -> None:
    env.apply(
        obj(
            "AIMRuntimeConfig",
            "ops",
            "aim-system",
            env=[{"name": "AIM_OPS", "value": "from-aim-system"}],
            labelPropagation={"enabled": True, "match": ["org.example/team"]},
        )
    )
    model = obj(
        "AIMClusterModel",
        "llama",
        labels={"org.example/team": "platform"},
        image="docker.io/amdenterpriseai/aim-llama:0.8.4",
        runtimeConfigName="ops",
        modelSources=[WEIGHTS],
    )
    model["metadata"]["annotations"] = {"sim.omectl.io/discovery-result": DISCOVERY_RESULT}
    env.apply(model)
    status = until(lambda: (s := env.status("aimclustermodels", "llama")).get("status") == "Ready" and s, "Ready")
    assert status["resolvedRuntimeConfig"]["namespace"] == "aim-system"
    assert status["resolvedRuntimeConfig"]["scope"] == "Namespace"
    job = env.get("jobs", "llama-cluster-discovery", "aim-system")
    assert job is not None
    assert env_value(job_env(job), "AIM_OPS") == "from-aim-system"
    assert env_value(job_env(job), "AIM_DISCOVERY_NAMESPACE") == "aim-system"
    assert job["spec"]["template"]["metadata"]["labels"]["org.example/team"] == "platform"
    profiles = until(
        lambda: (
            (p := env.items("aimclusterprofiles", None, "aim.eai.amd.com/cluster-model=llama")) and len(p) == 2 and p
        ),
        "the cluster profiles",
    )
    assert all(p["metadata"]["labels"]["org.example/team"] == "platform" for p in profiles)
    assert all(p["spec"]["runtimeConfigName"] == "ops" for p in profiles)
    profile_set = until(lambda: env.get("aimprofilesets", "llama", "aim-system"), "the profile set in aim-system")
    assert profile_set["metadata"]["labels"]["org.example/team"] == "platform"
    assert {e["profileRef"]["kind"] for e in profile_set["spec"]["profiles"]} == {"AIMClusterProfile"}


def test_a_profile_set_derives_profiles_and_a_source_lists_cluster_models(env: Env) -> None:
    ns = "sets"
    env.apply(
        namespace(ns),
        obj("AIMRuntimeConfig", "default", ns, labelPropagation={"enabled": True, "match": ["org.example/*"]}),
    )
    env.apply(
        obj(
            "AIMProfileSet",
            "variants",
            ns,
            labels={"org.example/team": "chat"},
            modelName="qwen",
            profiles=[
                {"name": "eight-gpu", "gpu": "MI300X", "gpuCount": 8, "precision": "fp8", "metric": "throughput"},
                {"name": "existing", "profileRef": {"kind": "AIMProfile", "name": "elsewhere"}},
            ],
        )
    )
    derived = until(lambda: env.get("aimprofiles", "variants-eight-gpu", ns), "the derived profile")
    assert derived["spec"]["gpuCount"] == 8
    assert derived["metadata"]["labels"]["org.example/team"] == "chat"  # AIMProfileSet -> AIMProfile
    assert derived["metadata"]["ownerReferences"][0]["kind"] == "AIMProfileSet"
    assert env.get("aimprofiles", "variants-existing", ns) is None
    until(lambda: env.status("aimprofilesets", "variants", ns).get("profileCount") == 2, "the set's status")

    # the cluster default propagates org.example/cost-center (the cost-tracking config)
    env.apply(
        obj(
            "AIMClusterModelSource",
            "catalog",
            labels={"org.example/cost-center": "platform"},
            models=[
                {"name": "catalog-a", "image": "example/a:1", "discovery": {"enabled": False}},
                {"name": "catalog-b", "image": "example/b:1", "discovery": {"enabled": False}},
            ],
        )
    )
    status = until(
        lambda: (s := env.status("aimclustermodelsources", "catalog")).get("status") == "Ready" and s, "source Ready"
    )
    assert status["modelCount"] == 2
    for name in ("catalog-a", "catalog-b"):
        model = until(lambda n=name: env.get("aimclustermodels", n), name)
        assert model["metadata"]["labels"]["org.example/cost-center"] == "platform"  # source -> AIMClusterModel
        assert model["metadata"]["ownerReferences"][0]["kind"] == "AIMClusterModelSource"
        until(lambda n=name: env.status("aimclustermodels", n).get("status") == "Ready", f"{name} Ready")


# --- a missing explicit config, and config changes ---------------------------------------------------------------

CONSUMERS: dict[str, tuple[str, bool, dict[str, Any]]] = {
    # kind: (plural, namespaced, spec)
    "AIMModel": ("aimmodels", True, {"image": "example/m:1", "discovery": {"enabled": False}}),
    "AIMClusterModel": ("aimclustermodels", False, {"image": "example/m:1", "discovery": {"enabled": False}}),
    "AIMProfile": ("aimprofiles", True, {"modelName": "m"}),
    "AIMClusterProfile": ("aimclusterprofiles", False, {"modelName": "m"}),
    "AIMProfileSet": ("aimprofilesets", True, {"modelName": "m"}),
    "AIMProfileCache": ("aimprofilecaches", True, {"profileName": "p"}),
    "AIMArtifact": ("aimartifacts", True, {"sourceUri": "hf://org/repo", "size": "1Gi"}),
    "AIMClusterModelSource": ("aimclustermodelsources", False, {"models": []}),
}


@pytest.mark.parametrize("kind", list(CONSUMERS))
def test_every_consumer_fails_on_a_missing_explicit_config_and_recovers_when_it_appears(env: Env, kind: str) -> None:
    plural, namespaced, spec = CONSUMERS[kind]
    ns = "late" if namespaced else None
    config = f"late-{kind.lower()}"
    env.apply(namespace("late"), obj(kind, f"late-{kind.lower()}", ns, runtimeConfigName=config, **spec))
    name = f"late-{kind.lower()}"
    failed = until(
        lambda: (s := env.status(plural, name, ns)).get("status") == "Failed" and s, "Failed / ReferenceNotFound"
    )
    reasons = {c["type"]: (c["status"], c["reason"]) for c in failed["conditions"]}
    assert reasons["ConfigValid"] == ("False", "ReferenceNotFound")
    assert reasons["RuntimeConfigReady"] == ("False", "ReferenceNotFound")
    assert reasons["Ready"] == ("False", "ReferenceNotFound")
    assert "resolvedRuntimeConfig" not in failed
    # a namespaced consumer's config in its namespace; a cluster-scoped one's in the operator namespace
    env.apply(obj("AIMRuntimeConfig", config, ns or "aim-system", env=[{"name": "X", "value": "1"}]))
    recovered = until(
        lambda: (s := env.status(plural, name, ns)).get("status") not in (None, "Failed") and s, "recovery", timeout=10
    )
    reasons = {c["type"]: (c["status"], c["reason"]) for c in recovered["conditions"]}
    assert reasons["ConfigValid"] == ("True", "ConfigurationValid")
    assert reasons["RuntimeConfigReady"] == ("True", "RuntimeConfigResolved")
    assert recovered["resolvedRuntimeConfig"]["namespace"] == (ns or "aim-system")


def test_a_config_change_re_reconciles_its_consumers(env: Env) -> None:
    ns = "chg"
    env.apply(namespace(ns), obj("AIMClusterRuntimeConfig", "chg"))
    artifact = obj(
        "AIMArtifact",
        "a",
        ns,
        labels={"org.example/team": "t1"},
        sourceUri="hf://o/r",
        size="1Gi",
        runtimeConfigName="chg",
    )
    env.apply(artifact)
    status = until(lambda: (s := env.status("aimartifacts", "a", ns)).get("resolvedRuntimeConfig") and s, "resolved")
    assert status["resolvedRuntimeConfig"]["scope"] == "Cluster"
    (pvc,) = until(lambda: env.items("pvc", ns, "aim.eai.amd.com/artifact=a"), "the PVC")
    assert "org.example/team" not in pvc["metadata"]["labels"]
    # the cluster config starts propagating the label: the PVC and the Job get it
    env.apply(obj("AIMClusterRuntimeConfig", "chg", labelPropagation={"enabled": True, "match": ["org.example/team"]}))
    until(
        lambda: all(
            o["metadata"]["labels"].get("org.example/team") == "t1"
            for resource in ("pvc", "jobs")
            for o in env.items(resource, ns, "aim.eai.amd.com/artifact=a")
        ),
        "the label on the PVC and the Job",
    )
    # a namespace config of that name appears: the artifact now resolves it
    env.apply(obj("AIMRuntimeConfig", "chg", ns, labelPropagation={"enabled": False}))
    until(
        lambda: env.status("aimartifacts", "a", ns).get("resolvedRuntimeConfig", {}).get("scope") == "Namespace",
        "the namespace config resolved",
    )
    until(
        lambda: "org.example/team" not in env.items("pvc", ns, "aim.eai.amd.com/artifact=a")[0]["metadata"]["labels"],
        "propagation turned off by the namespace config",
    )


@pytest.mark.parametrize("kind", ["AIMModel", "AIMClusterModel"])
def test_a_model_without_spec_fails_once_with_a_reason_and_one_warning(env: Env, kind: str) -> None:
    ns = "bare" if kind == "AIMModel" else None
    name = f"bare-{kind.lower()}"
    docs = [namespace("bare")] if ns else []
    bare = {"apiVersion": V2, "kind": kind, "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
    env.apply(*docs, bare)
    plural = "aimmodels" if ns else "aimclustermodels"
    ready = until(lambda: env.condition(plural, name, ns, "Ready") or None, f"{kind} {name} gets a status")
    assert (ready["status"], ready["reason"]) == ("False", "ImageNotSpecified")
    assert env.status(plural, name, ns)["status"] == "Failed"
    assert "has no spec.image" in ready["message"]
    event_ns = ns or "default"
    events = until(
        lambda: [
            e
            for e in env.items("events", event_ns)
            if e["involvedObject"]["name"] == name and e["reason"] == "ImageNotSpecified"
        ],
        f"the Warning event of {name}",
    )
    assert [(e["type"], e.get("count", 1)) for e in events] == [("Warning", 1)]
    # given an image it goes on to discovery
    env.apply({**bare, "spec": {"image": "registry.example/qwen:1", "discovery": {"enabled": False}}})
    until(lambda: env.condition(plural, name, ns, "Ready").get("reason") == "DiscoveryDisabled", f"{name} recovers")


def test_a_paused_object_is_left_alone_until_the_annotation_goes(env: Env) -> None:
    ns = "paused"
    paused = {"aim.eai.amd.com/reconciliation-paused": "true"}
    model = obj("AIMModel", "paused-model", ns, image="registry.example/qwen:1", discovery={"enabled": False})
    model["metadata"]["annotations"] = paused
    witness = obj("AIMModel", "witness-model", ns, image="registry.example/qwen:1", discovery={"enabled": False})
    env.apply(namespace(ns), model, witness)
    until(lambda: env.status("aimmodels", "witness-model", ns).get("status") == "Ready", "the witness is reconciled")
    assert env.status("aimmodels", "paused-model", ns) == {}, "a paused model gets no status"
    env.k("annotate", "aimmodel", "paused-model", "-n", ns, "aim.eai.amd.com/reconciliation-paused-")
    until(lambda: env.status("aimmodels", "paused-model", ns).get("status") == "Ready", "reconciled once unpaused")


def test_upstream_config_fields_apply_and_gateway_refs_are_checked_as_the_gateway_api_does(env: Env) -> None:
    # upstream's Helm values example carries model.autoDiscovery: accepted and kept
    config = obj("AIMClusterRuntimeConfig", "upstream-helm", model={"autoDiscovery": True})
    env.apply(config)
    assert (env.get("aimclusterruntimeconfigs", "upstream-helm") or {})["spec"]["model"] == {"autoDiscovery": True}
    bad = obj(
        "AIMClusterRuntimeConfig",
        "bad-gateway",
        routing={"gatewayRef": {"name": "gw", "namespace": "Bad_NS", "sectionName": "HTTP_1", "kind": "-x"}},
    )
    proc = env.kubectl.run(f"--context={CLUSTER}", "apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert proc.returncode == 1
    for field in ("namespace", "sectionName", "kind"):
        assert f"spec.routing.gatewayRef.{field}: Invalid value" in proc.stderr, proc.stderr
    assert env.get("aimclusterruntimeconfigs", "bad-gateway") is None


def test_a_kind_not_served_at_a_version_gets_kubectls_real_cluster_error(env: Env) -> None:
    # AIMService, issue 18's example, is served at v1alpha1 now (docs/aim-versions.md); AIMProfile is omectl's own
    profile = {"apiVersion": V1, "kind": "AIMProfile", "metadata": {"name": "old", "namespace": "default"}}
    proc = env.kubectl.run(f"--context={CLUSTER}", "apply", "-f", "-", input=yaml.safe_dump(profile), check=False)
    assert proc.returncode == 1
    assert 'no matches for kind "AIMProfile" in version "aim.eai.amd.com/v1alpha1"' in proc.stderr, proc.stderr


def test_a_changed_model_source_replaces_its_artifact_rather_than_retrying_a_refused_update(env: Env) -> None:
    """An artifact's `spec.sourceUri` is immutable (upstream's CEL rule): when a cache's model source points at
    other files, the controller deletes the artifact of that name and makes it again, instead of applying a change
    the API server refuses on every retry."""
    ns = "source-swap"
    source = {"name": "weights", "sourceUri": "hf://org/model-a", "size": "1Gi"}
    env.apply(namespace(ns), obj("AIMProfileCache", "c", ns, profileName="p", modelSources=[source]))
    first = until(lambda: env.get("aimartifacts", "c-weights", ns), "the artifact")
    assert first["spec"]["sourceUri"] == "hf://org/model-a"
    env.apply(obj("AIMProfileCache", "c", ns, profileName="p", modelSources=[{**source, "sourceUri": "hf://org/b"}]))
    second = until(
        lambda: (a := env.get("aimartifacts", "c-weights", ns)) and a["spec"]["sourceUri"] == "hf://org/b" and a,
        "the artifact made again with the new source",
    )
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    until(lambda: env.status("aimprofilecaches", "c", ns).get("status") == "Ready", "the cache Ready again")


def test_an_artifacts_infrastructure_errors_follow_upstreams_state_engine(env: Env) -> None:
    """A child write answered 503: `DependenciesReachable` False (`Failed to apply resources: ...`), nothing else
    changed, then True / `Reachable` once the writes pass. A lost PVC under a Ready artifact: False (`Cannot reach
    dependencies`) at once, the artifact kept Ready for the grace period (`GRACE_S` here), then Degraded as upstream
    words it (one Warning event), and Ready again with `DependenciesReachable` True once the claim is Bound."""
    if env.fleet is None or env.fleet.bg is None or env.fleet.real_api_server:
        pytest.skip("injects faults into the embedded API server")
    (server,) = env.fleet.bg.fleet.servers
    ns = "infra-errors"
    env.apply(namespace(ns))

    def artifact() -> dict[str, Any]:
        status = env.status("aimartifacts", "a", ns)
        return {**status, "by_type": {c["type"]: c for c in status.get("conditions") or ()}}

    def reachable(status: dict[str, Any]) -> tuple[str, str, str] | None:
        found = status["by_type"].get("DependenciesReachable")
        return None if found is None else (found["status"], found["reason"], found["message"])

    server.faults.fail_next(10_000, 503, method="PATCH", path_contains=f"/namespaces/{ns}/persistentvolumeclaims")
    try:
        env.apply(obj("AIMArtifact", "a", ns, sourceUri="hf://org/infra", size="1Gi"))
        failed = until(lambda: (s := artifact())["by_type"].get("DependenciesReachable") and s, "the PVC write failing")
        status, reason, message = reachable(failed) or ("", "", "")
        assert (status, reason) == ("False", "InfrastructureError")
        assert message.startswith("Failed to apply resources: ") and "503" in message
        assert failed.get("status") in (None, "Pending"), "nothing else changed"
        assert not env.items("persistentvolumeclaims", ns)
    finally:
        server.faults.clear()
    ready = until(lambda: (s := artifact()).get("status") == "Ready" and s, "Ready once the writes pass")
    assert reachable(ready) == ("True", "Reachable", "All dependencies are reachable")

    lost = '{"status":{"phase":"Lost"}}'
    env.k("patch", "pvc", ready["persistentVolumeClaim"], "-n", ns, "--subresource=status", "--type=merge", "-p", lost)
    held = until(lambda: (s := artifact()) and (reachable(s) or ("",))[0] == "False" and s, "unreachable")
    assert reachable(held) == ("False", "InfrastructureError", "Cannot reach dependencies")
    assert held["status"] == "Ready", "within the grace period the Ready artifact keeps its status"
    degraded = until(lambda: (s := artifact()).get("status") == "Degraded" and s, "Degraded after the grace")
    condition, unreachable = degraded["by_type"]["Ready"], degraded["by_type"]["DependenciesReachable"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "PvcLost",
        "Component CachePvc is not ready: PVC lost its underlying volume",
    )
    assert degraded["by_type"]["CachePvcReady"]["reason"] == "PvcLost"
    since = datetime.fromisoformat(unreachable["lastTransitionTime"].replace("Z", "+00:00"))
    turned = datetime.fromisoformat(condition["lastTransitionTime"].replace("Z", "+00:00"))
    assert (turned - since).total_seconds() >= GRACE_S - 1, "Ready turned False a grace period after the error"
    warnings = [
        (e["type"], e["message"])
        for e in env.items("events", ns)
        if e["involvedObject"]["name"] == "a" and e["reason"] == "PvcLost"
    ]
    assert warnings == [("Warning", condition["message"])], "one Warning as it turns Degraded"

    bound = '{"status":{"phase":"Bound"}}'
    env.k("patch", "pvc", ready["persistentVolumeClaim"], "-n", ns, "--subresource=status", "--type=merge", "-p", bound)
    again = until(lambda: (s := artifact()).get("status") == "Ready" and s, "Ready again")
    assert reachable(again) == ("True", "Reachable", "All dependencies are reachable")
