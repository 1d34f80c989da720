"""AIM runtime configs end to end: every runtime-config example (deploy/samples/aim/) through the real kubectl.

One embedded cluster with the AIM, KServe and Gateway API CRDs, the workload simulator (AMD GPU nodes) and the
controller. The spec's samples live in `deploy/samples/aim/`; scenarios that would collide on the spec's names run in
namespaces of their own (the samples' namespace rewritten). Tests run in any order (pytest-randomly): the one
cluster-wide object they share, the `default` AIMClusterRuntimeConfig, is set by each test that depends on it
(applied from its sample, or deleted by the test that needs none).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.controller.app import ControllerApp
from omectl.sim.fleet import BackgroundFleet
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import running_fleet
from tests.support import ClusterKubectl, Kubectl, until

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "deploy" / "samples" / "aim"
CLUSTER = "aim-1"
KSERVE = "inferenceservices.serving.kserve.io"
ROUTES = "httproutes.gateway.networking.k8s.io"
pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]


class Env(ClusterKubectl):
    def __init__(self, bg: BackgroundFleet, app: ControllerApp, kubectl: Kubectl) -> None:
        super().__init__(kubectl, CLUSTER)
        self.bg, self.app = bg, app

    def service(self, name: str, namespace: str) -> dict[str, Any]:
        found = self.get("aimservices", name, namespace)
        assert found is not None
        return found

    def status(self, name: str, namespace: str) -> dict[str, Any]:
        return self.service(name, namespace).get("status") or {}

    def condition(self, name: str, namespace: str, condition_type: str) -> dict[str, Any]:
        conditions = self.status(name, namespace).get("conditions") or []
        return next((c for c in conditions if c["type"] == condition_type), {})

    def events(self, name: str, namespace: str, reason: str) -> list[dict[str, Any]]:
        items = json.loads(self.k("get", "events", "-n", namespace, "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]

    def reconciles(self, name: str, namespace: str) -> int:
        return self.app.reconcilers.aim.reconciles[(CLUSTER, namespace, name)]

    def idle(self) -> bool:
        return self.app.controller.queue.depth() == 0


def sample(path: str, namespace: str | None = None) -> list[dict[str, Any]]:
    """The sample's documents, moved to `namespace` when given (namespaced objects only)."""
    docs = [d for d in yaml.safe_load_all((SAMPLES / path).read_text()) if d]
    if namespace is not None:
        for doc in docs:
            if "namespace" in doc["metadata"]:
                doc["metadata"]["namespace"] = namespace
    return docs


def service(name: str, namespace: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": meta,
        "spec": {"model": {"name": "qwen-qwen3-32b"}, **spec},
    }


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def env_of(isvc: dict[str, Any]) -> dict[str, str]:
    (container,) = isvc["spec"]["predictor"]["containers"]
    return {e["name"]: e.get("value", "") for e in container.get("env") or []}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(pools=(NodePool(count=4, gpus_per_node=8, gpu_resource="amd.com/gpu"),))
    base = tmp_path_factory.mktemp("aim")
    with running_fleet(base, 1, "aim-", simulator=simulator, install_webhooks=False) as fleet:
        env = Env(fleet.bg, fleet.app, fleet.kubectl)
        env.k("apply", "-f", str(SAMPLES / "00-namespaces.yaml"), "-f", str(SAMPLES / "gateway.yaml"))
        yield env


# --- Missing default config ----------------------------------------------------------------------------------


def test_a_missing_default_config_is_not_an_error_and_emits_one_normal_event(env: Env) -> None:
    env.k("delete", "aimclusterruntimeconfigs", "default", "--ignore-not-found")
    env.apply(namespace("fresh"), service("plain", "fresh"))
    ready = until(
        lambda: (
            env.condition("plain", "fresh", "RuntimeConfigReady").get("reason") == "DefaultConfigNotFound"
            and env.condition("plain", "fresh", "RuntimeConfigReady")
        ),
        "RuntimeConfigReady=True/DefaultConfigNotFound",
    )
    assert (ready["status"], ready["message"]) == ("True", "Default config was not found")
    status = env.status("plain", "fresh")
    assert "resolvedRuntimeConfig" not in status
    assert "ConfigValid" not in {c["type"] for c in status["conditions"]}
    assert env.get(KSERVE, "plain", "fresh") is not None  # reconciliation continues without overrides
    # later reconciles (a label edit, the InferenceService turning ready) emit no second event
    before = env.reconciles("plain", "fresh")
    env.k("label", "aimservices", "plain", "-n", "fresh", "touched=yes")
    until(lambda: env.reconciles("plain", "fresh") > before and env.idle(), "a second reconcile")
    (event,) = until(lambda: env.events("plain", "fresh", "DefaultConfigNotFound"), "the Normal event")
    assert event["type"] == "Normal"
    assert event["message"] == "Default config was not found"
    assert event.get("count", 1) == 1


# --- Path templates -------------------------------------------------------------------------------------------


def test_the_ml_team_routing_example_renders_its_path_and_the_override_wins(env: Env) -> None:
    env.apply(*sample("routing/ml-team-default.yaml"), *sample("routing/qwen-chat.yaml"))
    path = until(lambda: env.status("qwen-chat", "ml-team").get("routing", {}).get("path"), "status.routing.path")
    assert path == "/ml/ml-team/conversational-ai"
    route = until(lambda: env.get(ROUTES, "qwen-chat", "ml-team"), "the HTTPRoute")
    (rule,) = route["spec"]["rules"]
    assert rule["matches"] == [{"path": {"type": "PathPrefix", "value": "/ml/ml-team/conversational-ai"}}]
    assert route["spec"]["parentRefs"] == [{"name": "inference-gateway", "namespace": "gateways"}]
    assert rule["backendRefs"][0]["name"] == "qwen-chat-predictor"
    config = env.get("aimruntimeconfigs", "default", "ml-team")
    assert config is not None
    status = env.status("qwen-chat", "ml-team")
    assert status["resolvedRuntimeConfig"] == {
        "kind": "AIMRuntimeConfig",
        "name": "default",
        "namespace": "ml-team",
        "scope": "Namespace",
        "uid": config["metadata"]["uid"],
    }
    resolved = env.condition("qwen-chat", "ml-team", "RuntimeConfigReady")
    assert (resolved["status"], resolved["reason"]) == ("True", "RuntimeConfigResolved")
    assert status["observedGeneration"] == env.service("qwen-chat", "ml-team")["metadata"]["generation"]

    env.apply(*sample("routing-override/qwen-chat.yaml"))
    until(
        lambda: env.status("qwen-chat", "ml-team").get("routing", {}).get("path") == "/custom/qwen-chat",
        "the overriding template's path",
    )
    route = until(
        lambda: (
            (r := env.get(ROUTES, "qwen-chat", "ml-team"))
            and r["spec"]["rules"][0]["matches"][0]["path"]["value"] == "/custom/qwen-chat"
            and r
        ),
        "the HTTPRoute on /custom/qwen-chat",
    )
    assert route["metadata"]["ownerReferences"][0]["kind"] == "AIMService"


def test_a_path_template_that_does_not_render_keeps_the_inference_service_and_skips_the_route(env: Env) -> None:
    env.apply(namespace("badpath"), *sample("routing/ml-team-default.yaml", "badpath"))
    good = {"pathTemplate": "/ok/{.metadata.name}"}
    env.apply(service("svc", "badpath", routing=good))
    until(lambda: env.get(ROUTES, "svc", "badpath"), "the HTTPRoute on /ok/svc")
    # the same service now names a label it does not have
    env.apply(service("svc", "badpath", routing={"pathTemplate": "/x/{.metadata.labels['missing']}"}))
    route_ready = until(
        lambda: (c := env.condition("svc", "badpath", "HTTPRouteReady")).get("reason") == "PathTemplateInvalid" and c,
        "HTTPRouteReady=False/PathTemplateInvalid",
    )
    assert route_ready["status"] == "False" and route_ready["message"]
    status = env.status("svc", "badpath")
    assert status["status"] == "Degraded"
    assert "path" not in (status.get("routing") or {})
    assert env.get(KSERVE, "svc", "badpath") is not None
    route = env.get(ROUTES, "svc", "badpath")
    assert route is not None  # left alone: not updated, not deleted
    assert route["spec"]["rules"][0]["matches"][0]["path"]["value"] == "/ok/svc"

    # a service of the namespace whose template renders nothing gets no route at all
    env.apply(service("fresh-svc", "badpath", routing={"pathTemplate": "/{.metadata.labels['team']}"}))
    until(
        lambda: env.condition("fresh-svc", "badpath", "HTTPRouteReady").get("reason") == "PathTemplateInvalid",
        "PathTemplateInvalid on a new service",
    )
    assert env.get(KSERVE, "fresh-svc", "badpath") is not None
    assert env.get(ROUTES, "fresh-svc", "badpath") is None

    # routing enabled with no gateway anywhere
    env.apply(namespace("nogateway"), service("svc", "nogateway", routing={"enabled": True}))
    no_gateway = until(
        lambda: (
            (c := env.condition("svc", "nogateway", "HTTPRouteReady")).get("reason") == "GatewayNotConfigured" and c
        ),
        "HTTPRouteReady=False/GatewayNotConfigured",
    )
    assert no_gateway["message"] == "Routing is enabled but no gatewayRef is configured in service or runtime config"
    assert env.status("svc", "nogateway")["status"] == "Degraded"
    assert env.get(ROUTES, "svc", "nogateway") is None


# --- Missing explicit config ----------------------------------------------------------------------------------


def test_a_missing_explicit_config_fails_until_it_is_created(env: Env) -> None:
    env.apply(*sample("missing-config/qwen-chat-missing-config.yaml"))
    name = "qwen-chat-missing-config"
    until(lambda: env.status(name, "ml-team").get("status") == "Failed", "status Failed")
    message = "RuntimeConfig non-existent not found"
    for condition_type in ("ConfigValid", "RuntimeConfigReady", "Ready"):
        condition = env.condition(name, "ml-team", condition_type)
        assert (condition["status"], condition["reason"], condition["message"]) == (
            "False",
            "ReferenceNotFound",
            message,
        ), condition_type
    assert "resolvedRuntimeConfig" not in env.status(name, "ml-team")
    (event,) = until(lambda: env.events(name, "ml-team", "ReferenceNotFound"), "the Warning event")
    assert (event["type"], event["message"]) == ("Warning", message)
    assert env.get(KSERVE, name, "ml-team") is None  # nothing applied

    env.apply(
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMRuntimeConfig",
            "metadata": {"name": "non-existent", "namespace": "ml-team"},
            "spec": {"env": [{"name": "RECOVERED", "value": "yes"}]},
        }
    )
    until(
        lambda: env.condition(name, "ml-team", "RuntimeConfigReady").get("reason") == "RuntimeConfigResolved",
        "RuntimeConfigReady=True/RuntimeConfigResolved",
        timeout=15,
    )
    valid = env.condition(name, "ml-team", "ConfigValid")
    assert (valid["status"], valid["reason"]) == ("True", "ConfigurationValid")
    assert env.status(name, "ml-team")["status"] != "Failed"
    isvc = until(lambda: env.get(KSERVE, name, "ml-team"), "the InferenceService")
    assert env_of(isvc)["RECOVERED"] == "yes"


# --- Storage defaults -----------------------------------------------------------------------------------------


def test_storage_defaults_pick_the_pvc_storage_class(env: Env) -> None:
    env.apply(*sample("storage/cluster-default.yaml"))
    env.apply(namespace("storage-cluster"), namespace("storage-team"))
    env.apply(*sample("storage/ml-team-default.yaml", "storage-team"))
    cache = {"size": "100Gi"}
    env.apply(
        service("cached", "storage-cluster", storage=cache),
        service("cached", "storage-team", storage=cache),
        service("own-class", "storage-team", storage={**cache, "storageClassName": "own-ssd"}),
    )
    classes = {}
    for ns, name in (("storage-cluster", "cached"), ("storage-team", "cached"), ("storage-team", "own-class")):
        pvc = until(lambda ns=ns, name=name: env.get("pvc", f"{name}-model-cache", ns), f"{ns}/{name} PVC")
        classes[(ns, name)] = pvc["spec"].get("storageClassName")
        assert pvc["spec"]["resources"]["requests"]["storage"] == "100Gi"
    assert classes == {
        ("storage-cluster", "cached"): "fast-nvme",
        ("storage-team", "cached"): "team-ssd",
        ("storage-team", "own-class"): "own-ssd",
    }
    cluster_config = env.get("aimclusterruntimeconfigs", "default")
    team_config = env.get("aimruntimeconfigs", "default", "storage-team")
    assert cluster_config is not None and team_config is not None
    cluster_ref = until(
        lambda: env.status("cached", "storage-cluster").get("resolvedRuntimeConfig"), "cluster-only resolution"
    )
    assert cluster_ref == {
        "kind": "AIMClusterRuntimeConfig",
        "name": "default",
        "namespace": "",
        "scope": "Cluster",
        "uid": cluster_config["metadata"]["uid"],
    }
    merged_ref = env.status("cached", "storage-team")["resolvedRuntimeConfig"]
    assert merged_ref == {
        "kind": "AIMRuntimeConfig",
        "name": "default",
        "namespace": "storage-team",
        "scope": "Namespace",
        "uid": team_config["metadata"]["uid"],
    }


# --- Environment variable overrides ---------------------------------------------------------------------------


def test_the_namespace_downloader_protocol_beats_the_clusters(env: Env) -> None:
    env.apply(*sample("env/cluster-default.yaml"))
    env.apply(namespace("env-team"), namespace("env-cluster"))
    env.apply(*sample("env/ml-team-default.yaml", "env-team"))
    env.apply(service("dl", "env-team"), service("dl", "env-cluster"))

    def protocol(ns: str) -> str | None:
        isvc = env.get(KSERVE, "dl", ns)
        return env_of(isvc).get("AIM_DOWNLOADER_PROTOCOL") if isvc else None

    until(lambda: protocol("env-team") == "HTTP", "HTTP from the namespace config")
    until(lambda: protocol("env-cluster") == "HTTP,XET", "HTTP,XET from the cluster config")


# --- Label propagation ----------------------------------------------------------------------------------------


def test_cost_tracking_labels_reach_the_children_and_leave_when_dropped(env: Env) -> None:
    env.apply(*sample("cost-tracking/cluster-default.yaml"))
    env.apply(namespace("costs"))
    env.apply(*sample("routing/ml-team-default.yaml", "costs"))  # routing on, so there is an HTTPRoute
    (qwen,) = sample("cost-tracking/qwen-chat.yaml", "costs")
    qwen["metadata"]["labels"]["project"] = "chatbot"  # the namespace's path template names it
    env.apply(qwen)
    wanted = {
        "org.example/cost-center": "eng-ml",
        "org.example/department": "engineering",
        "org.example/project": "chatbot-v2",
    }

    def labels(resource: str) -> dict[str, str]:
        found = env.get(resource, "qwen-chat", "costs")
        return (found or {}).get("metadata", {}).get("labels") or {}

    for resource in (KSERVE, ROUTES):
        until(lambda r=resource: wanted.items() <= labels(r).items(), f"cost labels on the {resource}")  # type: ignore[misc]
    assert "project" not in labels(KSERVE)  # not matched by the config's patterns
    env.k("label", KSERVE, "qwen-chat", "-n", "costs", "owner.example/team=finance")  # the child's own label

    env.k("label", "aimservices", "qwen-chat", "-n", "costs", "org.example/project-")
    for resource in (KSERVE, ROUTES):
        until(
            lambda r=resource: "org.example/project" not in labels(r),  # type: ignore[misc]
            f"org.example/project removed from the {resource}",
        )
        current = labels(resource)
        assert current["org.example/cost-center"] == "eng-ml"
        assert current["org.example/department"] == "engineering"
    assert labels(KSERVE)["owner.example/team"] == "finance"
    annotations = env.get(KSERVE, "qwen-chat", "costs")["metadata"]["annotations"]  # type: ignore[index]
    assert annotations["aim.eai.amd.com/propagated-labels"] == "org.example/cost-center,org.example/department"


# --- Config changes fan out -----------------------------------------------------------------------------------


def test_a_config_change_reconciles_exactly_the_services_that_use_it(env: Env) -> None:
    env.apply(namespace("fanout"), namespace("fanout-other"))
    for name in ("default", "other"):
        env.apply(
            {
                "apiVersion": "aim.eai.amd.com/v1alpha1",
                "kind": "AIMRuntimeConfig",
                "metadata": {"name": name, "namespace": "fanout"},
                "spec": {"env": [{"name": "GENERATION", "value": "1"}]},
            }
        )
    env.apply(
        service("implicit", "fanout"),
        service("explicit", "fanout", runtimeConfigName="default"),
        service("other", "fanout", runtimeConfigName="other"),
        service("elsewhere", "fanout-other"),
    )
    services = (("fanout", "implicit"), ("fanout", "explicit"), ("fanout", "other"), ("fanout-other", "elsewhere"))
    for ns, name in services:
        until(lambda ns=ns, name=name: env.get(KSERVE, name, ns), f"{ns}/{name} InferenceService")
    until(env.idle, "an idle queue")
    untouched = {("fanout", "other"), ("fanout-other", "elsewhere")}
    before = {key: env.reconciles(key[1], key[0]) for key in untouched}
    versions = {key: env.service(key[1], key[0])["metadata"]["resourceVersion"] for key in untouched}
    isvc_versions = {key: env.get(KSERVE, key[1], key[0])["metadata"]["resourceVersion"] for key in untouched}  # type: ignore[index]

    env.apply(
        {
            "apiVersion": "aim.eai.amd.com/v1alpha1",
            "kind": "AIMRuntimeConfig",
            "metadata": {"name": "default", "namespace": "fanout"},
            "spec": {"env": [{"name": "GENERATION", "value": "2"}]},
        }
    )
    for name in ("implicit", "explicit"):
        until(
            lambda name=name: (
                env_of(env.get(KSERVE, name, "fanout") or {"spec": {"predictor": {"containers": [{}]}}}).get(
                    "GENERATION"
                )
                == "2"
            ),
            f"{name} re-rendered with GENERATION=2",
        )
    until(env.idle, "an idle queue")
    assert {key: env.reconciles(key[1], key[0]) for key in untouched} == before
    assert {key: env.service(key[1], key[0])["metadata"]["resourceVersion"] for key in untouched} == versions
    assert {
        key: env.get(KSERVE, key[1], key[0])["metadata"]["resourceVersion"]  # type: ignore[index]
        for key in untouched
    } == isvc_versions


# --- Status roll-up -------------------------------------------------------------------------------------------


def test_the_service_runs_once_the_simulator_makes_its_inference_service_and_its_pod_ready(env: Env) -> None:
    env.apply(namespace("running"), service("llm", "running"), service("none", "running", replicas=0))
    until(lambda: env.status("llm", "running").get("status") == "Running", "status Running")
    isvc_ready = env.condition("llm", "running", "InferenceServiceReady")
    assert (isvc_ready["status"], isvc_ready["reason"]) == ("True", "InferenceServiceReady")
    ready = env.condition("llm", "running", "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "AllComponentsReady")
    assert ready["lastTransitionTime"]
    isvc = env.get(KSERVE, "llm", "running")
    assert isvc is not None
    assert isvc["metadata"]["labels"]["aim.eai.amd.com/service"] == "llm"
    assert isvc["metadata"]["ownerReferences"][0]["name"] == "llm"
    # its predictor pod, running and ready (made by the simulated KServe and kubelet), as upstream reads it
    pods_ready = env.condition("llm", "running", "InferenceServicePodsReady")
    assert (pods_ready["status"], pods_ready["reason"], pods_ready["message"]) == (
        "True",
        "PodsReady",
        "Pods are ready",
    )
    selector = "serving.kserve.io/inferenceservice=llm"
    (pod,) = json.loads(env.k("get", "pods", "-n", "running", "-l", selector, "-o", "json"))["items"]
    assert pod["metadata"]["ownerReferences"][0]["uid"] == isvc["metadata"]["uid"]
    assert pod["metadata"]["labels"]["aim.eai.amd.com/service"] == "llm", "the InferenceService's labels"
    assert (pod["status"]["phase"], pod["spec"]["containers"][0]["name"]) == ("Running", "kserve-container")
    assert {"type": "Ready", "status": "True"}.items() <= next(
        c for c in pod["status"]["conditions"] if c["type"] == "Ready"
    ).items()

    # no replicas: its InferenceService is ready without a pod, which upstream reports as NoPods (Progressing)
    def no_pods() -> dict[str, Any] | None:
        status = env.status("none", "running")
        found = {c["type"]: c for c in status.get("conditions") or []}
        isvc_up = (found.get("InferenceServiceReady") or {}).get("status") == "True"
        return found if isvc_up and (found.get("InferenceServicePodsReady") or {}).get("reason") == "NoPods" else None

    found = until(no_pods, "the replica-less service's InferenceService Ready, its pods NoPods")
    assert (found["InferenceServicePodsReady"]["status"], found["InferenceServicePodsReady"]["message"]) == (
        "False",
        "No pods found",
    )
    assert (found["Ready"]["status"], found["Ready"]["reason"]) == ("False", "Progressing")
    assert env.status("none", "running")["status"] == "Starting"
    # a settled service makes no further writes
    before = env.reconciles("llm", "running")
    annotated = json.loads(env.k("annotate", "aimservices", "llm", "-n", "running", "note=touched", "-o", "json"))
    until(lambda: env.reconciles("llm", "running") > before and env.idle(), "the annotation's reconcile")
    assert env.service("llm", "running")["metadata"]["resourceVersion"] == annotated["metadata"]["resourceVersion"]
