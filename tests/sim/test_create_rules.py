"""What a new built-in object gets beyond its defaults: its starting status, the default admission plugins'
mutations of a Pod, and a Job's generated selector, as on kube-apiserver."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.sim.apiserver.create_rules import prepare_builtin_create, qos_class
from tests.support import RawClient

NS = "/api/v1/namespaces/default"


def container(**resources: dict[str, str]) -> dict[str, Any]:
    return {"name": "c", "image": "i:1", "resources": resources}


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([container()], "BestEffort"),
        ([container(limits={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
        ([container(limits={"cpu": "1", "memory": "1Gi"}, requests={"cpu": "500m"})], "Burstable"),
        ([container(limits={"cpu": "1", "memory": "1Gi"}), container()], "Burstable"),
        ([container(requests={"nvidia.com/gpu": "1"})], "BestEffort"),
    ],
)
def test_the_qos_class_follows_cpu_and_memory(containers: list[dict[str, Any]], expected: str) -> None:
    assert qos_class({"containers": containers}) == expected


def test_a_pod_gets_its_priority_the_node_condition_tolerations_and_a_pending_status() -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    pod: dict[str, Any] = {"metadata": {"uid": "u"}, "spec": {"containers": [container()], "tolerations": [own]}}
    pod["status"] = {"phase": "Running"}
    prepare_builtin_create("", "Pod", pod)
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert pod["spec"]["tolerations"] == [
        own,
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
    ]
    assert pod["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    classed: dict[str, Any] = {"metadata": {"uid": "u"}, "spec": {"containers": [], "priorityClassName": "high"}}
    prepare_builtin_create("", "Pod", classed)
    assert "priority" not in classed["spec"]


def test_a_job_is_labelled_with_its_uid_and_selects_by_it() -> None:
    job: dict[str, Any] = {
        "metadata": {"name": "j", "uid": "u-1"},
        "spec": {"template": {"metadata": {"labels": {"app": "a"}}, "spec": {}}},
        "status": {"succeeded": 1},
    }
    prepare_builtin_create("batch", "Job", job)
    generated = {
        "batch.kubernetes.io/controller-uid": "u-1",
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": "u-1",
        "job-name": "j",
    }
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "a", **generated}
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert job["spec"]["manualSelector"] is False
    assert job["metadata"]["labels"] == {"app": "a", **generated}
    assert job["status"] == {}
    manual: dict[str, Any] = {
        "metadata": {"name": "m", "uid": "u-2", "labels": {"mine": "x"}},
        "spec": {"manualSelector": True, "selector": {"matchLabels": {"a": "b"}}, "template": {}},
    }
    prepare_builtin_create("batch", "Job", manual)
    assert manual["spec"]["selector"] == {"matchLabels": {"a": "b"}}
    assert "metadata" not in manual["spec"]["template"]
    assert manual["metadata"]["labels"] == {"mine": "x"}


async def test_through_the_server_the_status_sent_is_replaced(raw: RawClient) -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "p"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}},
        "status": {"disruptionsAllowed": 5},
    }
    created = await raw.post("/apis/policy/v1/namespaces/default/poddisruptionbudgets", pdb)
    assert created.body["status"] == {
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "disruptionsAllowed": 0,
        "expectedPods": 0,
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "q"},
        "spec": {"containers": [container(limits={"cpu": "1", "memory": "1Gi"})]},
    }
    body = (await raw.post(f"{NS}/pods", pod)).body
    assert body["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi"}
    assert body["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container()]}}},
    }
    created_job = (await raw.post("/apis/batch/v1/namespaces/default/jobs", job)).body
    uid = created_job["metadata"]["uid"]
    assert created_job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}


def test_a_deployment_starts_with_an_empty_status() -> None:
    deployment: dict[str, Any] = {"metadata": {"uid": "u"}, "spec": {}, "status": {"readyReplicas": 3}}
    prepare_builtin_create("apps", "Deployment", deployment)
    assert deployment["status"] == {}
