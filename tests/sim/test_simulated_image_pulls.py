"""The simulated registry: a pod whose image it lacks waits in ImagePullBackOff, as kubelet reports it, and its
workload stays unavailable saying why; every other image is pulled. Also the other pods the simulator makes and the
objects beside them: a KServe predictor's pods (Running and ready once placed; Pending with the scheduler's Event
while no node fits), and KEDA's HPA."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import watch as k8s_watch

from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.simulator import ImageRegistry, NodePool, SimulatorConfig, parse_nodes_option
from omectl.sim.simulator.images import qualified_reference
from tests.support import Kubectl, RawClient, kubectl_path

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LWS = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets"
KSERVE = "/apis/serving.kserve.io/v1beta1/namespaces/default/inferenceservices"
PODS = "/api/v1/namespaces/default/pods"
EVENTS = "/api/v1/namespaces/default/events"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"
THIRD_PARTY = Path(__file__).resolve().parents[2] / "deploy" / "crds" / "thirdparty"

GOOD = "docker.io/lmsysorg/sglang:v0.5.6-cu129-amd64"
BAD = "lmsysorg/sglang:v0.5.6-cu192-amd64"  # a typo in the tag: the registry has no such image
BAD_REFERENCE = "docker.io/lmsysorg/sglang:v0.5.6-cu192-amd64"
PULL_ERROR = (
    f'rpc error: code = NotFound desc = failed to pull and unpack image "{BAD_REFERENCE}": '
    f'failed to resolve reference "{BAD_REFERENCE}": {BAD_REFERENCE}: not found'
)
BACK_OFF = f'Back-off pulling image "{BAD}"'
UNAVAILABLE = f"Deployment does not have minimum availability. ImagePullBackOff: {BACK_OFF}"
REGISTRY = ImageRegistry(missing=("*-cu192-*",))
NODES = SimulatorConfig((NodePool(count=2, gpus_per_node=8),), registry=REGISTRY)


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    """One cluster with two 8-GPU nodes whose registry lacks every `*-cu192-*` image."""
    srv = EmbeddedAPIServer("pull", simulator=NODES)
    await srv.start()
    yield srv
    await srv.stop()


async def settle(server: EmbeddedAPIServer) -> None:
    assert server.simulator is not None
    await server.simulator.wait_idle()


def deployment(name: str, image: str, *, replicas: int = 1, gpus: int = 1) -> dict[str, Any]:
    engine = {"name": "engine", "image": image, "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [engine]}},
        },
    }


async def create(raw: RawClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await raw.post(path, body)
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.body
    return created


async def pods_of(raw: RawClient, owner: str) -> list[dict[str, Any]]:
    pods = (await raw.get(PODS)).body["items"]
    return [p for p in pods if any(r["name"] == owner for r in p["metadata"].get("ownerReferences") or [])]


def third_party_crd(file: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((THIRD_PARTY / file).read_text())
    return loaded


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in status["conditions"] if c["type"] == type_)
    return found


# --- the registry ----------------------------------------------------------------------------------------------


def test_references_are_qualified_as_containerd_resolves_them() -> None:
    assert qualified_reference("nginx") == "docker.io/library/nginx:latest"
    assert qualified_reference("docker.io/nginx:1.27") == "docker.io/library/nginx:1.27"
    assert qualified_reference("lmsysorg/sglang:v1") == "docker.io/lmsysorg/sglang:v1"
    assert qualified_reference("ghcr.io/org/img") == "ghcr.io/org/img:latest"
    assert qualified_reference("localhost:5000/img:v2") == "localhost:5000/img:v2"
    assert qualified_reference("quay.io/org/img@sha256:abc") == "quay.io/org/img@sha256:abc"


def test_the_registry_lacks_only_the_images_its_patterns_match() -> None:
    registry = ImageRegistry(missing=("*-cu192-*", "docker.io/library/nginx:*"))
    assert registry.pull_error(BAD) == PULL_ERROR
    assert registry.pull_error("nginx") is not None  # matched by its qualified reference
    assert registry.pull_error(GOOD) is None
    assert ImageRegistry().pull_error(BAD) is None


def test_the_nodes_option_gives_every_cluster_the_registry() -> None:
    configs = parse_nodes_option(["2x8", "b=1x8:amd"], registry=REGISTRY)
    assert configs("a").registry == configs("b").registry == REGISTRY
    assert configs("a").describe() == "2x8 nvidia.com/gpu H100; registry lacks *-cu192-*"


# --- a Deployment whose image is missing -----------------------------------------------------------------


async def test_each_replica_is_a_pod_in_image_pull_back_off_as_kubelet_reports_it(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("typo", BAD, replicas=2))
    await settle(server)
    pods = await pods_of(raw, "typo")
    assert len(pods) == 2
    for pod in pods:
        meta, status = pod["metadata"], pod["status"]
        template_hash = meta["labels"]["pod-template-hash"]
        assert meta["name"].startswith(f"typo-{template_hash}-")
        assert meta["labels"]["app"] == "typo"
        assert pod["spec"]["nodeName"].startswith("pull-gpu-node-")
        assert status["phase"] == "Pending"
        unready = "containers with unready status: [engine]"
        for type_ in ("Ready", "ContainersReady"):
            assert {k: condition(status, type_)[k] for k in ("status", "reason", "message")} == {
                "status": "False",
                "reason": "ContainersNotReady",
                "message": unready,
            }
        assert condition(status, "PodScheduled")["status"] == "True"
        (container,) = status["containerStatuses"]
        assert container["state"] == {"waiting": {"reason": "ImagePullBackOff", "message": BACK_OFF}}
        assert (container["ready"], container["started"], container["restartCount"]) == (False, False, 0)


async def test_the_pod_waits_with_err_image_pull_then_image_pull_back_off(
    server: EmbeddedAPIServer, raw: RawClient, kube: k8s_client.ApiClient
) -> None:
    core = k8s_client.CoreV1Api(kube)
    start = (await raw.get(PODS)).body["metadata"]["resourceVersion"]
    await create(raw, DEPLOYMENTS, deployment("typo", BAD))
    seen: list[tuple[str, str]] = []
    watcher = k8s_watch.Watch()
    async with asyncio.timeout(10):
        async for event in watcher.stream(core.list_namespaced_pod, "default", resource_version=start):
            for container in event["object"].status.container_statuses or []:
                seen.append((container.state.waiting.reason, container.state.waiting.message))
            if seen and seen[-1][0] == "ImagePullBackOff":
                watcher.stop()
    assert seen == [("ErrImagePull", PULL_ERROR), ("ImagePullBackOff", BACK_OFF)]


async def test_kubelet_records_the_failed_pull_as_events_on_the_pod(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, DEPLOYMENTS, deployment("typo", BAD))
    await settle(server)
    (pod,) = await pods_of(raw, "typo")
    events = [
        e for e in (await raw.get(EVENTS)).body["items"] if e["involvedObject"]["name"] == pod["metadata"]["name"]
    ]
    assert [(e["type"], e["reason"], e["message"], e["source"]["component"]) for e in events] == [
        (
            "Normal",
            "Scheduled",
            f"Successfully assigned default/{pod['metadata']['name']} to pull-gpu-node-1",
            "default-scheduler",
        ),
        ("Normal", "Pulling", f'Pulling image "{BAD}"', "kubelet"),
        ("Warning", "Failed", f'Failed to pull image "{BAD}": {PULL_ERROR}', "kubelet"),
        ("Warning", "Failed", "Error: ErrImagePull", "kubelet"),
        ("Normal", "BackOff", BACK_OFF, "kubelet"),
        ("Warning", "Failed", "Error: ImagePullBackOff", "kubelet"),
    ]
    assert {e["involvedObject"].get("fieldPath") for e in events[1:]} == {"spec.containers{engine}"}
    assert {e["source"].get("host") for e in events[1:]} == {"pull-gpu-node-1"}


async def test_the_deployment_stays_unavailable_saying_which_image_and_keeps_its_gpus(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("typo", BAD, replicas=2, gpus=8))
    await create(raw, DEPLOYMENTS, deployment("late", GOOD, gpus=8))
    await settle(server)
    status = (await raw.get(DEPLOYMENTS + "/typo")).body["status"]
    available = condition(status, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "False",
        "MinimumReplicasUnavailable",
        UNAVAILABLE,
    )
    assert condition(status, "Progressing")["reason"] == "ReplicaSetUpdated"
    assert {k: status.get(k) for k in ("replicas", "updatedReplicas", "readyReplicas", "unavailableReplicas")} == {
        "replicas": 2,
        "updatedReplicas": 2,
        "readyReplicas": None,
        "unavailableReplicas": 2,
    }
    late = condition((await raw.get(DEPLOYMENTS + "/late")).body["status"], "Available")
    assert late["status"] == "False"  # the stuck pods hold both nodes' GPUs, as scheduled pods do
    assert "Insufficient nvidia.com/gpu" in late["message"]


async def test_kubectl_shows_the_pod_in_image_pull_back_off(
    server: EmbeddedAPIServer, raw: RawClient, tmp_path: Path
) -> None:
    kubectl = Kubectl(kubectl_path(), server.write_kubeconfig(tmp_path / "kubeconfig"), tmp_path / "cache")
    await create(raw, DEPLOYMENTS, deployment("typo", BAD))
    await settle(server)
    _, out, _ = await kubectl.arun("get", "pods", "-l", "app=typo", "--no-headers")
    (row,) = out.splitlines()
    assert row.split()[1:4] == ["0/1", "ImagePullBackOff", "0"]
    _, out, _ = await kubectl.arun("get", "deployment", "typo", "--no-headers")
    assert out.split()[1:4] == ["0/1", "1", "0"]


async def test_a_fixed_image_deletes_the_stuck_pods_and_the_deployment_becomes_available(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("typo", BAD))
    await settle(server)
    assert len(await pods_of(raw, "typo")) == 1
    fixed = {"spec": {"template": {"spec": {"containers": [{"name": "engine", "image": GOOD}]}}}}
    reply = await raw.patch(DEPLOYMENTS + "/typo", fixed, "application/strategic-merge-patch+json")
    assert reply.status == 200, reply.body
    await settle(server)
    assert await pods_of(raw, "typo") == []
    available = condition((await raw.get(DEPLOYMENTS + "/typo")).body["status"], "Available")
    assert (available["status"], available["message"]) == ("True", "Deployment has minimum availability.")


async def test_another_missing_image_replaces_the_pods_with_ones_waiting_on_it(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("typo", BAD))
    await settle(server)
    (before,) = await pods_of(raw, "typo")
    other = "lmsysorg/sglang:v0.5.7-cu192-amd64"
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "engine", "image": other}]}}}}
    await raw.patch(DEPLOYMENTS + "/typo", patch, "application/strategic-merge-patch+json")
    await settle(server)
    (after,) = await pods_of(raw, "typo")
    assert after["metadata"]["name"] != before["metadata"]["name"]
    assert after["status"]["containerStatuses"][0]["state"]["waiting"]["message"] == f'Back-off pulling image "{other}"'
    message = condition((await raw.get(DEPLOYMENTS + "/typo")).body["status"], "Available")["message"]
    assert message.endswith(f'ImagePullBackOff: Back-off pulling image "{other}"')


async def test_a_stuck_pod_deleted_by_hand_comes_back_and_goes_with_its_deployment(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("typo", BAD))
    await settle(server)
    (pod,) = await pods_of(raw, "typo")
    assert (await raw.delete(f"{PODS}/{pod['metadata']['name']}")).status == 200
    await settle(server)
    (again,) = await pods_of(raw, "typo")
    assert again["metadata"]["uid"] != pod["metadata"]["uid"]
    assert again["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
    assert (await raw.delete(DEPLOYMENTS + "/typo")).status == 200
    await server.controllers.idle.wait()
    await settle(server)
    assert await pods_of(raw, "typo") == []


async def test_an_unschedulable_workload_makes_no_pods_even_if_its_image_is_missing(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("huge", BAD, gpus=16))
    await settle(server)
    assert await pods_of(raw, "huge") == []  # kubelet never saw it: only the scheduler's reason
    message = condition((await raw.get(DEPLOYMENTS + "/huge")).body["status"], "Available")["message"]
    assert (
        message
        == "Deployment does not have minimum availability. 0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    )


# --- the other scheduled kinds ---------------------------------------------------------------------------


async def test_a_leader_worker_set_waits_on_its_workers_missing_image(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, third_party_crd("leaderworkerset.x-k8s.io_leaderworkersets.yaml"))
    await settle(server)

    def template(image: str) -> dict[str, Any]:
        container = {"name": "engine", "image": image, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        return {"metadata": {"labels": {"app": "mn"}}, "spec": {"containers": [container]}}

    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "mn", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {"size": 3, "leaderTemplate": template(GOOD), "workerTemplate": template(BAD)},
        },
    }
    await create(raw, LWS, lws)
    await settle(server)
    pods = await pods_of(raw, "mn")
    assert sorted(p["metadata"]["name"] for p in pods) == ["mn-0-1", "mn-0-2"]  # the leader pulled its image
    labels = next(p for p in pods if p["metadata"]["name"] == "mn-0-2")["metadata"]["labels"]
    assert labels["leaderworkerset.sigs.k8s.io/group-index"] == "0"
    assert labels["leaderworkerset.sigs.k8s.io/worker-index"] == "2"
    available = condition((await raw.get(LWS + "/mn")).body["status"], "Available")
    assert (available["status"], available["message"]) == (
        "False",
        f"Replicas are progressing. ImagePullBackOff: {BACK_OFF}",
    )


async def test_a_kserve_predictor_naming_a_missing_image_is_not_ready(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, third_party_crd("serving.kserve.io_inferenceservices.yaml"))
    await settle(server)
    model = {"modelFormat": {"name": "huggingface"}, "image": BAD, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "chat", "namespace": "default"},
        "spec": {"predictor": {"model": model}},
    }
    await create(raw, KSERVE, isvc)
    await settle(server)
    (pod,) = await pods_of(raw, "chat")
    assert pod["metadata"]["name"].startswith("chat-predictor-")
    assert pod["status"]["containerStatuses"][0]["name"] == "kserve-container"
    ready = condition((await raw.get(KSERVE + "/chat")).body["status"], "Ready")
    assert (ready["status"], ready["message"]) == ("False", UNAVAILABLE)


async def test_a_kserve_predictor_runs_as_a_ready_pod_or_waits_as_a_pending_one_until_gpus_free_up(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, third_party_crd("serving.kserve.io_inferenceservices.yaml"))
    await settle(server)

    def isvc(name: str, gpus: int) -> dict[str, Any]:
        limits = {"nvidia.com/gpu": str(gpus)}
        model = {"modelFormat": {"name": "huggingface"}, "image": GOOD, "resources": {"limits": limits}}
        return {
            "apiVersion": "serving.kserve.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": name, "namespace": "default", "labels": {"aim.eai.amd.com/service": name}},
            "spec": {"predictor": {"model": model}},
        }

    big = await create(raw, KSERVE, isvc("big", 8))
    await create(raw, KSERVE, isvc("next", 8))
    await create(raw, KSERVE, isvc("wait", 8))  # two 8-GPU nodes: the third fits nowhere
    await settle(server)
    # each running predictor is a pod on its node, Running and ready, labelled as KServe labels it
    (running,) = await pods_of(raw, "big")
    assert running["metadata"]["name"].startswith("big-predictor-")
    labels = running["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k != "pod-template-hash"} == {
        "aim.eai.amd.com/service": "big",
        "serving.kserve.io/inferenceservice": "big",
        "component": "predictor",
        "app": "isvc.big-predictor",
    }
    (owner,) = running["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "InferenceService",
        "big",
        big["metadata"]["uid"],
        True,
    )
    assert (running["status"]["phase"], running["spec"]["nodeName"]) == ("Running", "pull-gpu-node-1")
    assert [(c["type"], c["status"]) for c in running["status"]["conditions"] if "Ready" in c["type"]] == [
        ("PodReadyToStartContainers", "True"),
        ("Ready", "True"),
        ("ContainersReady", "True"),
    ]
    (container,) = running["status"]["containerStatuses"]
    assert (container["name"], container["ready"], list(container["state"])) == ("kserve-container", True, ["running"])
    (next_pod,) = await pods_of(raw, "next")
    assert (next_pod["status"]["phase"], next_pod["spec"]["nodeName"]) == ("Running", "pull-gpu-node-2")
    (pod,) = await pods_of(raw, "wait")
    message = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
    assert pod["metadata"]["labels"]["serving.kserve.io/inferenceservice"] == "wait"
    assert (pod["status"]["phase"], pod["spec"].get("nodeName")) == ("Pending", None)
    scheduled = condition(pod["status"], "PodScheduled")
    assert (scheduled["status"], scheduled["reason"], scheduled["message"]) == ("False", "Unschedulable", message)
    events = [e for e in (await raw.get(EVENTS)).body["items"] if e["involvedObject"]["uid"] == pod["metadata"]["uid"]]
    assert [(e["type"], e["reason"], e["message"]) for e in events] == [("Warning", "FailedScheduling", message)]
    assert events[0]["source"]["component"] == "default-scheduler"

    assert (await raw.delete(KSERVE + "/big")).status == 200  # its node's GPUs go to the waiting one
    await settle(server)
    await server.controllers.wait_idle()  # the garbage collector takes its pod with it
    assert await pods_of(raw, "big") == []
    (bound,) = await pods_of(raw, "wait")
    assert bound["metadata"]["uid"] == pod["metadata"]["uid"], "the pending pod is bound, not made anew"
    assert (bound["status"]["phase"], bound["spec"]["nodeName"]) == ("Running", "pull-gpu-node-1")
    assert condition(bound["status"], "PodScheduled")["status"] == "True"
    assert condition(bound["status"], "Ready")["status"] == "True"
    assert condition((await raw.get(KSERVE + "/wait")).body["status"], "Ready")["status"] == "True"


async def test_a_kserve_predictor_autoscaled_by_keda_gets_kedas_hpa_until_it_is_not(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, third_party_crd("serving.kserve.io_inferenceservices.yaml"))
    await settle(server)
    model = {"modelFormat": {"name": "huggingface"}, "image": GOOD, "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    isvc = {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "scaled",
            "namespace": "default",
            "labels": {"aim.eai.amd.com/service": "scaled"},
            "annotations": {"serving.kserve.io/autoscalerClass": "keda"},
        },
        "spec": {"predictor": {"model": model, "minReplicas": 2, "maxReplicas": 4}},
    }
    await create(raw, KSERVE, isvc)
    await settle(server)
    hpas = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
    hpa = (await raw.get(hpas + "/keda-hpa-scaled-predictor")).body
    assert hpa["metadata"]["labels"]["aim.eai.amd.com/service"] == "scaled", "the InferenceService's labels"
    assert hpa["metadata"]["labels"]["scaledobject.keda.sh/name"] == "scaled-predictor"
    assert hpa["metadata"]["ownerReferences"][0]["name"] == "scaled"
    assert hpa["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "scaled-predictor"},
        "minReplicas": 2,
        "maxReplicas": 4,
    }
    assert (hpa["status"]["currentReplicas"], hpa["status"]["desiredReplicas"]) == (2, 2)
    assert condition(hpa["status"], "ScalingActive")["status"] == "True"
    assert condition(hpa["status"], "AbleToScale")["status"] == "True"

    # a fixed count, as omectl renders it: the class and the bounds change together (a spec change)
    body = {
        "metadata": {"annotations": {"serving.kserve.io/autoscalerClass": "none"}},
        "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1}},
    }
    assert (await raw.patch(KSERVE + "/scaled", body, content_type=MERGE)).status == 200
    await settle(server)
    assert (await raw.get(hpas + "/keda-hpa-scaled-predictor")).status == 404


@pytest.mark.parametrize(
    ("strategy", "counts"),
    [
        # omectl's render: no old pod may go before a new one is available: 4 serve beside 1 new
        (
            {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            {"replicas": 5, "updatedReplicas": 1, "readyReplicas": 4, "availableReplicas": 4},
        ),
        # kube's default (25% each): one old pod goes, two new ones wait
        (None, {"replicas": 5, "updatedReplicas": 2, "readyReplicas": 3, "availableReplicas": 3}),
        ({"type": "Recreate"}, None),  # every old pod goes first: unavailable
    ],
)
async def test_a_rolling_update_to_a_missing_image_keeps_old_pods_serving_as_its_strategy_allows(
    server: EmbeddedAPIServer, raw: RawClient, strategy: dict[str, Any] | None, counts: dict[str, int] | None
) -> None:
    body = deployment("engine", GOOD, replicas=4)
    if strategy is not None:
        body["spec"]["strategy"] = strategy
    await create(raw, DEPLOYMENTS, body)
    await settle(server)
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "engine", "image": BAD}]}}}}
    assert (await raw.patch(DEPLOYMENTS + "/engine", patch, "application/strategic-merge-patch+json")).status == 200
    await settle(server)
    status = (await raw.get(DEPLOYMENTS + "/engine")).body["status"]
    if counts is None:
        assert condition(status, "Available")["message"] == UNAVAILABLE
        return
    assert {k: status.get(k) for k in counts} == counts
    assert status.get("unavailableReplicas", 0) == 4 - counts["availableReplicas"]  # what full capacity lacks
    available = condition(status, "Available")  # as many available as the strategy requires
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")
    progressing = condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "ReplicaSetUpdated")
    assert progressing["message"].startswith('ReplicaSet "engine-')
    assert progressing["message"].endswith('" is progressing.')
    waiting = [p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] for p in await pods_of(raw, "engine")]
    assert waiting and set(waiting) == {"ImagePullBackOff"}
    # Fixed: the rollout completes.
    fixed = {"spec": {"template": {"spec": {"containers": [{"name": "engine", "image": GOOD}]}}}}
    await raw.patch(DEPLOYMENTS + "/engine", fixed, "application/strategic-merge-patch+json")
    await settle(server)
    status = (await raw.get(DEPLOYMENTS + "/engine")).body["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (4, 4, 4)
