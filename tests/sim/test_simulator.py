"""The workload simulator: GPU nodes, the model agent's labels, scheduling and the status of each workload kind."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from kubernetes_asyncio import client as k8s_client

from omectl.core.ome.merge import merge_spec
from omectl.core.ome.render import model_node_selector_key, render_workloads
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet
from omectl.sim.simulator import NodePool, SimulatorConfig, gpu_requests, parse_nodes_option, parse_pools
from omectl.sim.simulator.status import job_status
from tests.support import RawClient

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "deploy" / "samples" / "ome"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
LWS = "/apis/leaderworkerset.x-k8s.io/v1/namespaces/default/leaderworkersets"
KSERVE = "/apis/serving.kserve.io/v1beta1/namespaces/default/inferenceservices"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
EVENTS = "/api/v1/namespaces/default/events"
NODES = "/api/v1/nodes"
MERGE = "application/merge-patch+json"
TWO_H100_NODES = SimulatorConfig((NodePool(count=2, gpus_per_node=8, gpu_resource="nvidia.com/gpu", gpu_type="H100"),))
INSUFFICIENT = "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."
NO_MATCH = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    """One cluster with two simulated 8-GPU H100 nodes (the `raw` and `kube` fixtures use it)."""
    srv = EmbeddedAPIServer("sim", simulator=TWO_H100_NODES)
    await srv.start()
    yield srv
    await srv.stop()


async def settle(server: EmbeddedAPIServer) -> None:
    assert server.simulator is not None
    await server.simulator.wait_idle()


def load_yaml(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text())
    return loaded


def deployment(name: str, *, replicas: int = 1, gpus: int = 8, node_selector: dict[str, str] | None = None) -> dict:
    pod: dict[str, Any] = {
        "containers": [{"name": "engine", "image": "img", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]
    }
    if node_selector:
        pod["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod},
        },
    }


def leader_worker_set(name: str, *, replicas: int, size: int, gpus: int) -> dict[str, Any]:
    def template(image: str) -> dict[str, Any]:
        container = {"name": "engine", "image": image, "resources": {"requests": {"nvidia.com/gpu": gpus}}}
        return {"metadata": {"labels": {"app": name}}, "spec": {"containers": [container]}}

    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "leaderWorkerTemplate": {"size": size, "leaderTemplate": template("lead"), "workerTemplate": template("w")},
        },
    }


def kserve_crd() -> dict[str, Any]:
    """A tiny stand-in for KServe's CRD: status subresource, fields kept as given."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "inferenceservices.serving.kserve.io"},
        "spec": {
            "group": "serving.kserve.io",
            "scope": "Namespaced",
            "names": {"plural": "inferenceservices", "singular": "inferenceservice", "kind": "InferenceService"},
            "versions": [
                {
                    "name": "v1beta1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                            },
                        }
                    },
                }
            ],
        },
    }


def kserve_isvc(name: str, *, gpus: int, min_replicas: int | None = None) -> dict[str, Any]:
    predictor: dict[str, Any] = {
        "model": {
            "modelFormat": {"name": "huggingface"},
            "storageUri": "hf://meta-llama/Llama-3.2-3B-Instruct",
            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
        }
    }
    if min_replicas is not None:
        predictor["minReplicas"] = min_replicas
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"predictor": predictor},
    }


async def create(raw: RawClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await raw.post(path, body)
    assert reply.status == 201, reply.body
    created: dict[str, Any] = reply.body
    return created


async def status_of(raw: RawClient, path: str) -> dict[str, Any]:
    reply = await raw.get(path)
    assert reply.status == 200, reply.body
    status: dict[str, Any] = reply.body.get("status") or {}
    return status


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in status["conditions"] if c["type"] == type_)
    return found


async def failed_scheduling(raw: RawClient, name: str) -> list[str]:
    events = (await raw.get(EVENTS + "?fieldSelector=reason=FailedScheduling")).body["items"]
    return [e["message"] for e in events if e["involvedObject"]["name"] == name and e["type"] == "Warning"]


# --- nodes -------------------------------------------------------------------------------------------------


async def test_simulated_nodes_register_ready_with_gpu_capacity_and_labels(
    server: EmbeddedAPIServer, kube: k8s_client.ApiClient
) -> None:
    nodes = (await k8s_client.CoreV1Api(kube).list_node()).items
    assert [n.metadata.name for n in nodes] == ["sim-gpu-node-1", "sim-gpu-node-2"]
    node = nodes[0]
    assert node.status.capacity["nvidia.com/gpu"] == "8"
    assert node.status.allocatable["nvidia.com/gpu"] == "8"
    assert {"cpu", "memory", "pods"} <= set(node.status.allocatable)
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason) == ("True", "KubeletReady")
    labels = node.metadata.labels
    assert labels["kubernetes.io/hostname"] == "sim-gpu-node-1"
    assert labels["gpu.omectl.io/type"] == "H100"
    assert labels["gpu.omectl.io/vendor"] == "nvidia"
    assert labels["node.kubernetes.io/instance-type"]
    # as NVIDIA's GPU feature discovery labels it
    assert (labels["nvidia.com/gpu.product"], labels["nvidia.com/gpu.memory"]) == ("NVIDIA-H100-80GB-HBM3", "81559")


async def test_several_pools_number_their_nodes_and_offer_their_own_gpu_resource() -> None:
    config = SimulatorConfig(
        (NodePool(count=1), NodePool(count=1, gpu_resource="amd.com/gpu", gpu_type="MI300X", gpus_per_node=4))
    )
    async with EmbeddedAPIServer("mix", simulator=config) as srv, aiohttp.ClientSession() as session:
        nodes = (await RawClient(srv.url, session, srv.auth_headers).get(NODES)).body["items"]
    by_name = {n["metadata"]["name"]: n for n in nodes}
    assert sorted(by_name) == ["mix-gpu-node-1", "mix-gpu-node-2"]
    amd = by_name["mix-gpu-node-2"]
    assert amd["status"]["allocatable"]["amd.com/gpu"] == "4"
    assert "nvidia.com/gpu" not in amd["status"]["allocatable"]
    assert amd["metadata"]["labels"]["gpu.omectl.io/vendor"] == "amd"
    assert amd["metadata"]["labels"]["gpu.omectl.io/type"] == "MI300X"
    # as the AMD GPU operator labels it: the device id of an MI300X, its family and memory per GPU
    gpu = {k: v for k, v in amd["metadata"]["labels"].items() if k.startswith("amd.com/")}
    assert gpu == {"amd.com/gpu.device-id": "74a1", "amd.com/gpu.family": "AI", "amd.com/gpu.vram": "192G"}


async def test_the_simulator_is_off_by_default() -> None:
    async with EmbeddedAPIServer("plain") as srv, aiohttp.ClientSession() as session:
        raw = RawClient(srv.url, session, srv.auth_headers)
        assert srv.simulator is None
        assert (await raw.get(NODES)).body["items"] == []
        await create(raw, DEPLOYMENTS, deployment("d"))
        await srv.controllers.wait_idle()
        assert (await raw.get(DEPLOYMENTS + "/d")).body["status"] == {}  # as created: nothing wrote one


# --- Deployments -------------------------------------------------------------------------------------------


async def test_a_deployment_that_fits_becomes_available(server: EmbeddedAPIServer, kube: k8s_client.ApiClient) -> None:
    apps = k8s_client.AppsV1Api(kube)
    await apps.create_namespaced_deployment("default", deployment("engine", replicas=2, gpus=8))
    await settle(server)
    got = await apps.read_namespaced_deployment("engine", "default")
    status = got.status
    assert (status.observed_generation, status.replicas, status.updated_replicas) == (1, 2, 2)
    assert (status.ready_replicas, status.available_replicas, status.unavailable_replicas) == (2, 2, None)
    available = next(c for c in status.conditions if c.type == "Available")
    assert (available.status, available.reason, available.message) == (
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    progressing = next(c for c in status.conditions if c.type == "Progressing")
    assert (progressing.status, progressing.reason) == ("True", "NewReplicaSetAvailable")
    assert progressing.message.startswith('ReplicaSet "engine-') and progressing.message.endswith(
        '" has successfully progressed.'
    )


async def test_a_deployment_needing_more_gpus_than_are_free_is_unavailable_with_the_scheduler_message(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("big", replicas=3, gpus=8))
    await settle(server)
    status = await status_of(raw, DEPLOYMENTS + "/big")
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 2,
        "availableReplicas": 2,
        "unavailableReplicas": 1,
    }
    available = condition(status, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "False",
        "MinimumReplicasUnavailable",
        f"Deployment does not have minimum availability. {INSUFFICIENT}",
    )
    assert condition(status, "Progressing")["reason"] == "ReplicaSetUpdated"
    assert await failed_scheduling(raw, "big") == [INSUFFICIENT]


async def test_a_pod_larger_than_any_node_never_fits(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, DEPLOYMENTS, deployment("huge", gpus=16))
    await settle(server)
    status = await status_of(raw, DEPLOYMENTS + "/huge")
    assert "readyReplicas" not in status and status["unavailableReplicas"] == 1
    assert condition(status, "Available")["message"].endswith(INSUFFICIENT)
    assert await failed_scheduling(raw, "huge") == [INSUFFICIENT]


async def test_a_node_selector_no_node_matches_leaves_the_deployment_unavailable(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("picky", gpus=1, node_selector={"gpu.omectl.io/type": "B200"}))
    await settle(server)
    available = condition(await status_of(raw, DEPLOYMENTS + "/picky"), "Available")
    assert (available["status"], available["message"]) == (
        "False",
        f"Deployment does not have minimum availability. {NO_MATCH}",
    )
    event = (await raw.get(EVENTS + "?fieldSelector=involvedObject.name=picky")).body["items"][0]
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "FailedScheduling", NO_MATCH)
    assert event["involvedObject"]["kind"] == "Deployment"
    assert event["source"] == {"component": "default-scheduler"}


async def test_a_node_selector_on_the_gpu_type_label_schedules(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, DEPLOYMENTS, deployment("h100", gpus=4, node_selector={"gpu.omectl.io/type": "H100"}))
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/h100"), "Available")["status"] == "True"


async def test_deleting_a_workload_frees_its_gpus_for_a_pending_one(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, DEPLOYMENTS, deployment("first", replicas=2, gpus=8))
    await settle(server)
    await create(raw, DEPLOYMENTS, deployment("second", gpus=8))
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/second"), "Available")["status"] == "False"
    assert (await raw.delete(DEPLOYMENTS + "/first")).status == 200
    await settle(server)
    status = await status_of(raw, DEPLOYMENTS + "/second")
    assert condition(status, "Available")["status"] == "True"
    assert status["readyReplicas"] == 1 and "unavailableReplicas" not in status


async def test_scaling_down_releases_gpus_and_scaling_up_past_capacity_waits(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("scaled", replicas=2, gpus=8))
    await create(raw, DEPLOYMENTS, deployment("waiting", gpus=8))
    await settle(server)
    await raw.patch(DEPLOYMENTS + "/scaled", {"spec": {"replicas": 1}}, MERGE)
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/waiting"), "Available")["status"] == "True"
    scaled = await status_of(raw, DEPLOYMENTS + "/scaled")
    assert (scaled["observedGeneration"], scaled["replicas"], scaled["readyReplicas"]) == (2, 1, 1)
    await raw.patch(DEPLOYMENTS + "/scaled", {"spec": {"replicas": 2}}, MERGE)
    await settle(server)
    scaled = await status_of(raw, DEPLOYMENTS + "/scaled")
    assert (scaled["readyReplicas"], scaled["unavailableReplicas"]) == (1, 1)


async def test_a_spec_change_that_keeps_the_shape_only_moves_observed_generation(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("steady", gpus=8))
    await create(raw, DEPLOYMENTS, deployment("blocked", replicas=2, gpus=8))
    await settle(server)
    before = await status_of(raw, DEPLOYMENTS + "/steady")
    # a merge patch replaces the container list: the new one keeps the GPU limit, so the shape stays the same
    container = {"name": "engine", "image": "img:2", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
    image_change = {"spec": {"template": {"spec": {"containers": [container]}}}}
    await raw.patch(DEPLOYMENTS + "/steady", image_change, MERGE)
    await settle(server)
    after = await status_of(raw, DEPLOYMENTS + "/steady")
    assert after["observedGeneration"] == 2
    assert {k: v for k, v in after.items() if k not in ("observedGeneration", "conditions")} == {
        k: v for k, v in before.items() if k not in ("observedGeneration", "conditions")
    }
    assert condition(after, "Available") == condition(before, "Available")
    # the pending one did not move up: the GPUs stayed with `steady`
    assert condition(await status_of(raw, DEPLOYMENTS + "/blocked"), "Available")["status"] == "False"


async def test_status_and_metadata_writes_cause_no_simulator_writes(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, DEPLOYMENTS, deployment("quiet", gpus=1))
    await settle(server)
    labelled = (await raw.patch(DEPLOYMENTS + "/quiet", {"metadata": {"labels": {"team": "a"}}}, MERGE)).body
    await settle(server)
    got = (await raw.get(DEPLOYMENTS + "/quiet")).body
    assert got["metadata"]["resourceVersion"] == labelled["metadata"]["resourceVersion"]


async def test_a_burst_of_updates_ends_with_the_latest_generation_observed(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, DEPLOYMENTS, deployment("busy", gpus=1))
    for i in range(50):
        await raw.patch(DEPLOYMENTS + "/busy", {"spec": {"template": {"metadata": {"labels": {"n": str(i)}}}}}, MERGE)
    await settle(server)
    status = await status_of(raw, DEPLOYMENTS + "/busy")
    assert status["observedGeneration"] == 51
    assert condition(status, "Available")["status"] == "True"


async def test_placements_survive_a_restart(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, DEPLOYMENTS, deployment("kept", replicas=2, gpus=8))
    await create(raw, DEPLOYMENTS, deployment("pending", gpus=8))
    await settle(server)
    await server.restart(keep_data=True)
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/kept"), "Available")["status"] == "True"
    assert condition(await status_of(raw, DEPLOYMENTS + "/pending"), "Available")["status"] == "False"
    await raw.delete(DEPLOYMENTS + "/kept")
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/pending"), "Available")["status"] == "True"


async def test_a_restart_without_data_registers_the_nodes_again(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await server.restart(keep_data=False)
    names = [n["metadata"]["name"] for n in (await raw.get(NODES)).body["items"]]
    assert names == ["sim-gpu-node-1", "sim-gpu-node-2"]


# --- the model agent ---------------------------------------------------------------------------------------


async def install_model_crds(raw: RawClient) -> None:
    for file in ("ome.io_clusterbasemodels.yaml", "ome.io_basemodels.yaml"):
        await create(raw, CRDS, load_yaml(ROOT / "deploy" / "crds" / file))


async def node_labels(raw: RawClient) -> list[dict[str, str]]:
    return [n["metadata"].get("labels") or {} for n in (await raw.get(NODES)).body["items"]]


async def test_models_label_every_node_and_their_deletion_removes_the_label(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await install_model_crds(raw)
    cluster_model = load_yaml(SAMPLES / "clusterbasemodel.yaml")
    await create(raw, "/apis/ome.io/v1beta1/clusterbasemodels", cluster_model)
    base_model = copy.deepcopy(cluster_model)
    base_model.update(kind="BaseModel", metadata={"name": "mistral", "namespace": "default"})
    await create(raw, "/apis/ome.io/v1beta1/namespaces/default/basemodels", base_model)
    await settle(server)
    cluster_key = model_node_selector_key("ClusterBaseModel", "", "llama-3-2-3b-instruct")
    base_key = model_node_selector_key("BaseModel", "default", "mistral")
    assert cluster_key == "models.ome.io/clusterbasemodel.llama-3-2-3b-instruct"
    assert base_key == "models.ome.io/default.basemodel.mistral"
    for labels in await node_labels(raw):
        assert labels[cluster_key] == "Ready" and labels[base_key] == "Ready"
    model_status = await status_of(raw, "/apis/ome.io/v1beta1/clusterbasemodels/llama-3-2-3b-instruct")
    assert model_status == {"state": "Ready", "nodesReady": ["sim-gpu-node-1", "sim-gpu-node-2"]}

    await raw.delete("/apis/ome.io/v1beta1/namespaces/default/basemodels/mistral")
    await settle(server)
    for labels in await node_labels(raw):
        assert base_key not in labels and labels[cluster_key] == "Ready"


async def test_a_rendered_engine_deployment_schedules_once_its_model_is_on_the_nodes(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await install_model_crds(raw)
    model = load_yaml(SAMPLES / "clusterbasemodel.yaml")
    merged = merge_spec(load_yaml(SAMPLES / "profile.yaml")["spec"], load_yaml(SAMPLES / "runtime.yaml")["spec"])
    isvc = load_yaml(SAMPLES / "isvc.yaml")
    isvc["metadata"].update(namespace="default", uid="0b4e3c1a-9f2d-4c6e-8a1b-2d3f4e5a6b7c")
    objects = render_workloads(isvc, merged, runtime_name="rt", runtime_kind="ServingRuntime", model=model)
    engine = next(o for o in objects if o["kind"] == "Deployment")
    engine["metadata"].pop("ownerReferences", None)  # no owner here: keep it from the garbage collector
    name = engine["metadata"]["name"]
    await create(raw, DEPLOYMENTS, engine)
    await settle(server)
    waiting = condition(await status_of(raw, f"{DEPLOYMENTS}/{name}"), "Available")
    assert waiting["message"] == f"Deployment does not have minimum availability. {NO_MATCH}"
    await create(raw, "/apis/ome.io/v1beta1/clusterbasemodels", model)
    await settle(server)
    assert condition(await status_of(raw, f"{DEPLOYMENTS}/{name}"), "Available")["status"] == "True"


# --- LeaderWorkerSets --------------------------------------------------------------------------------------

LWS_CRD = ROOT / "deploy" / "crds" / "thirdparty" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"


async def test_leader_worker_set_pod_templates_are_typed_as_kubernetes_types_them(raw: RawClient) -> None:
    # the stand-in CRD's templates come from the Kubernetes OpenAPI: a bad quantity or an unknown field is refused
    await create(raw, CRDS, load_yaml(LWS_CRD))
    lots = leader_worker_set("lots", replicas=1, size=2, gpus=1)
    lots["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "lots"}
    }
    reply = await raw.post(LWS + "?fieldValidation=Strict", lots)
    assert (reply.status, reply.body["reason"]) == (422, "Invalid"), reply.body
    assert "spec.leaderWorkerTemplate.workerTemplate.spec.containers[0].resources.limits.cpu" in reply.body["message"]
    unknown = leader_worker_set("unknown", replicas=1, size=2, gpus=1)
    unknown["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["bogus"] = "x"
    reply = await raw.post(LWS + "?fieldValidation=Strict", unknown)
    assert reply.status == 400 and 'unknown field "spec.leaderWorkerTemplate.leaderTemplate' in reply.body["message"]
    good = await raw.post(LWS, leader_worker_set("good", replicas=1, size=2, gpus=1))
    assert good.status == 201
    assert good.body["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["metadata"]["labels"] == {"app": "good"}


async def test_leader_worker_set_ready_replicas_count_the_groups_fully_placed(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, load_yaml(LWS_CRD))
    # a group is a leader and one worker of 8 GPUs each: one group fills the cluster
    await create(raw, LWS, leader_worker_set("multi", replicas=2, size=2, gpus=8))
    await settle(server)
    status = await status_of(raw, LWS + "/multi")
    assert (status["replicas"], status["updatedReplicas"], status["readyReplicas"]) == (2, 2, 1)
    assert status["hpaPodSelector"] == (
        "leaderworkerset.sigs.k8s.io/name=multi,leaderworkerset.sigs.k8s.io/worker-index=0"
    )
    available = condition(status, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "False",
        "GroupsProgressing",
        f"Replicas are progressing. {INSUFFICIENT}",
    )
    assert condition(status, "Progressing")["status"] == "True"
    assert await failed_scheduling(raw, "multi") == [INSUFFICIENT]

    await raw.patch(LWS + "/multi", {"spec": {"replicas": 1}}, MERGE)
    await settle(server)
    status = await status_of(raw, LWS + "/multi")
    assert (status["replicas"], status["readyReplicas"]) == (1, 1)
    available = condition(status, "Available")
    assert (available["status"], available["reason"], available["message"]) == (
        "True",
        "AllGroupsReady",
        "All replicas are ready",
    )
    assert condition(status, "Progressing")["status"] == "False"


async def test_a_rendered_multi_node_workload_is_accepted_and_scheduled(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, load_yaml(LWS_CRD))
    multi_node = {
        "engineConfig": {
            "leader": {"runner": {"name": "ome-container", "image": "lead"}},
            "worker": {
                "size": 1,
                "runner": {"name": "ome-container", "image": "w", "resources": {"limits": {"nvidia.com/gpu": "8"}}},
            },
        }
    }
    isvc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "big", "namespace": "default", "uid": "uid-1"},
        "spec": {"engine": {}},
    }
    objects = render_workloads(isvc, multi_node, runtime_name="rt", runtime_kind="ServingRuntime", model=None)
    lws = next(o for o in objects if o["kind"] == "LeaderWorkerSet")
    lws["metadata"].pop("ownerReferences", None)
    reply = await raw.post(LWS + "?fieldValidation=Strict", lws)
    assert reply.status == 201, reply.body
    await settle(server)
    status = await status_of(raw, f"{LWS}/{lws['metadata']['name']}")
    assert condition(status, "Available")["status"] == "True"
    assert gpu_requests(lws) == {"nvidia.com/gpu": 8}


async def test_a_crd_installed_after_start_is_picked_up(server: EmbeddedAPIServer, raw: RawClient) -> None:
    assert (await raw.get(LWS)).status == 404
    await create(raw, CRDS, load_yaml(LWS_CRD))
    await create(raw, LWS, leader_worker_set("late", replicas=1, size=2, gpus=4))
    await settle(server)
    status = await status_of(raw, LWS + "/late")
    assert status["readyReplicas"] == 1
    assert condition(status, "Available")["status"] == "True"


async def test_deleting_a_workload_crd_frees_the_gpus_of_its_objects(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, CRDS, load_yaml(LWS_CRD))
    await create(raw, LWS, leader_worker_set("all", replicas=1, size=2, gpus=8))
    await create(raw, DEPLOYMENTS, deployment("next", gpus=8))
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/next"), "Available")["status"] == "False"
    await raw.delete(CRDS + "/leaderworkersets.leaderworkerset.x-k8s.io")
    await server.controllers.wait_idle()
    await settle(server)
    assert condition(await status_of(raw, DEPLOYMENTS + "/next"), "Available")["status"] == "True"


# --- Jobs and claims ---------------------------------------------------------------------------------------


def job(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    container = {"name": "download", "image": "busybox"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}},
    }


async def test_a_job_completes(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, JOBS, job("download"))
    await settle(server)
    status = await status_of(raw, JOBS + "/download")
    assert status["succeeded"] == 1 and status["active"] == 0 and status["ready"] == 0
    assert status["startTime"] and status["completionTime"]
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "True", "CompletionsReached"),
        ("Complete", "True", "CompletionsReached"),
    ]


async def test_a_job_annotated_to_fail_fails(server: EmbeddedAPIServer, raw: RawClient) -> None:
    await create(raw, JOBS, job("broken", {"sim.omectl.io/result": "Failed"}))
    await settle(server)
    status = await status_of(raw, JOBS + "/broken")
    assert status["failed"] == 1 and "succeeded" not in status and "completionTime" not in status
    failed = condition(status, "Failed")
    assert (failed["status"], failed["reason"]) == ("True", "BackoffLimitExceeded")


@pytest.mark.parametrize(("value", "failed"), [("true", True), ("1", True), ("", False)])
def test_a_job_whose_container_sets_upstreams_debug_failure_variable_fails(value: str, failed: bool) -> None:
    """As upstream's artifact downloader: `AIM_DEBUG_CAUSE_FAILURE` set and not empty fails it at once."""
    doc = job("download")
    doc["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "AIM_DEBUG_CAUSE_FAILURE", "value": value}]
    status = job_status(doc, "2026-01-01T00:00:00Z")
    assert (status.get("failed") == 1, "succeeded" in status) == (failed, not failed)
    assert condition(status, "Failed" if failed else "Complete")["status"] == "True"


async def test_a_claim_is_bound_to_a_volume_of_its_size_and_a_lost_one_stays_lost(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "models"},
        "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "500Gi"}}},
    }
    created = await create(raw, CLAIMS, claim)
    await settle(server)
    got = (await raw.get(CLAIMS + "/models")).body
    assert got["spec"]["volumeName"] == f"pvc-{created['metadata']['uid']}"
    assert got["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert got["status"] == {"phase": "Bound", "accessModes": ["ReadWriteMany"], "capacity": {"storage": "500Gi"}}
    # a claim whose volume is gone (a test sets it Lost) stays Lost: the binder does not bind it again
    await raw.patch(CLAIMS + "/models/status", {"status": {"phase": "Lost"}}, MERGE)
    await settle(server)
    assert (await raw.get(CLAIMS + "/models")).body["status"]["phase"] == "Lost"


# --- KServe InferenceServices ------------------------------------------------------------------------------


async def test_a_kserve_inference_service_becomes_ready_or_says_why_not(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    await create(raw, CRDS, kserve_crd())
    await create(raw, KSERVE, kserve_isvc("small", gpus=8))
    await create(raw, KSERVE, kserve_isvc("wide", gpus=8, min_replicas=2))
    await settle(server)
    small = await status_of(raw, KSERVE + "/small")
    url = "http://small.default.svc.cluster.local"
    assert (small["url"], small["address"], small["observedGeneration"]) == (url, {"url": url}, 1)
    assert [(c["type"], c["status"]) for c in small["conditions"]] == [("PredictorReady", "True"), ("Ready", "True")]
    wide = await status_of(raw, KSERVE + "/wide")
    ready = condition(wide, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "MinimumReplicasUnavailable",
        f"Deployment does not have minimum availability. {INSUFFICIENT}",
    )
    assert condition(wide, "PredictorReady")["status"] == "False"
    assert await failed_scheduling(raw, "wide") == [INSUFFICIENT]


# --- the gateway controller ----------------------------------------------------------------------------------

ROUTES = "/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes"
GATEWAYS = "/apis/gateway.networking.k8s.io/v1/namespaces/gateways/gateways"
THIRD_PARTY = ROOT / "deploy" / "crds" / "thirdparty"


def route(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parentRefs": [{"name": "inference-gateway", "namespace": "gateways"}],
            "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": f"/{name}"}}]}],
        },
    }


async def test_a_route_is_accepted_once_its_gateway_exists_and_refused_when_it_goes(
    server: EmbeddedAPIServer, raw: RawClient
) -> None:
    for crd in ("gateway.networking.k8s.io_gateways.yaml", "gateway.networking.k8s.io_httproutes.yaml"):
        await create(raw, CRDS, load_yaml(THIRD_PARTY / crd))
    await create(raw, "/api/v1/namespaces", {"metadata": {"name": "gateways"}})
    await create(raw, ROUTES, route("chat"))
    await settle(server)
    (parent,) = (await status_of(raw, ROUTES + "/chat"))["parents"]
    accepted = condition(parent, "Accepted")
    assert (accepted["status"], accepted["reason"]) == ("False", "NoMatchingParent")
    assert accepted["message"] == "Gateway gateways/inference-gateway not found"
    gateway = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "inference-gateway", "namespace": "gateways"},
        "spec": {"gatewayClassName": "sim", "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]},
    }
    await create(raw, GATEWAYS, gateway)
    await settle(server)
    (parent,) = (await status_of(raw, ROUTES + "/chat"))["parents"]
    assert parent["parentRef"] == {"name": "inference-gateway", "namespace": "gateways"}
    assert [(c["type"], c["status"], c["reason"]) for c in parent["conditions"]] == [
        ("Accepted", "True", "Accepted"),
        ("ResolvedRefs", "True", "ResolvedRefs"),
    ]
    assert (await raw.call("DELETE", GATEWAYS + "/inference-gateway")).status == 200
    await settle(server)
    (parent,) = (await status_of(raw, ROUTES + "/chat"))["parents"]
    assert condition(parent, "Accepted")["reason"] == "NoMatchingParent"


# --- fleets, options and the GPU request helper ------------------------------------------------------------


async def test_a_fleet_gives_each_cluster_its_own_nodes() -> None:
    amd = SimulatorConfig((NodePool(count=1, gpu_resource="amd.com/gpu", gpu_type="MI300X"),))
    fleet = await EmbeddedFleet(3, name_prefix="f-", simulator={"f-1": TWO_H100_NODES, "f-2": amd}).start()
    try:
        async with aiohttp.ClientSession() as session:
            raws = [RawClient(s.url, session, s.auth_headers) for s in fleet.servers]
            counts = [len((await raw.get(NODES)).body["items"]) for raw in raws]
    finally:
        await fleet.stop()
    assert counts == [2, 1, 0]
    assert fleet["f-3"].simulator is None


def test_the_nodes_option_names_pools_per_cluster_with_a_default_for_the_rest() -> None:
    config_for = parse_nodes_option(["1x4", "sim-2=2x8:amd:MI325X,1x8:nvidia.com/gpu:B200", "sim-3=none"])
    assert config_for("sim-1").pools == (NodePool(count=1, gpus_per_node=4),)
    assert config_for("sim-2").pools == (
        NodePool(count=2, gpus_per_node=8, gpu_resource="amd.com/gpu", gpu_type="MI325X"),
        NodePool(count=1, gpus_per_node=8, gpu_resource="nvidia.com/gpu", gpu_type="B200"),
    )
    assert config_for("sim-3").pools == ()
    assert parse_nodes_option([])("any") == SimulatorConfig()
    assert parse_pools("1x8:amd") == (NodePool(count=1, gpu_resource="amd.com/gpu", gpu_type="MI300X"),)
    with pytest.raises(ValueError, match="COUNTxGPUS"):
        parse_pools("eight")


def test_gpu_requests_totals_each_workload_kind() -> None:
    two_by_eight = deployment("d", replicas=2, gpus=8)
    assert gpu_requests(two_by_eight) == {"nvidia.com/gpu": 16}
    init_heavy = deployment("i", gpus=2)
    pod = init_heavy["spec"]["template"]["spec"]
    pod["containers"].append({"name": "side", "resources": {"requests": {"amd.com/gpu": 1}, "limits": {}}})
    pod["initContainers"] = [{"name": "warm", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]
    assert gpu_requests(init_heavy) == {"amd.com/gpu": 1, "nvidia.com/gpu": 4}
    requests_win = deployment("r", gpus=8)
    requests_win["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"] = {"nvidia.com/gpu": "2"}
    assert gpu_requests(requests_win) == {"nvidia.com/gpu": 2}
    assert gpu_requests(leader_worker_set("l", replicas=2, size=3, gpus=8)) == {"nvidia.com/gpu": 48}
    assert gpu_requests(kserve_isvc("k", gpus=1, min_replicas=3)) == {"nvidia.com/gpu": 3}
    assert gpu_requests({"apiVersion": "v1", "kind": "ConfigMap"}) == {}
