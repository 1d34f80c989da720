"""AIMArtifact: PVC sizing and storage class, the download Job's env precedence and labels, status from the Job."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.artifacts import (
    DEFAULT_DOWNLOAD_IMAGE,
    artifact_status,
    download_job_due,
    headroom_percent,
    mount_artifacts,
    parse_quantity,
    pvc_condition,
    pvc_size_gi,
    render_artifact_pvc,
    render_download_job,
    storage_class_name,
)
from omectl.core.aim.consumers import hash8
from omectl.core.aim.env import env_value
from omectl.core.aim.kserve import render_inference_service
from omectl.core.aim.resolution import resolve

GI = 1 << 30


def artifact(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMArtifact",
        "metadata": {"name": "qwen-weights", "namespace": "ml-team", "uid": "uid-1", "labels": {"team": "a"}},
        "spec": {"sourceUri": "hf://Qwen/Qwen3-32B", "size": "10Gi", **spec},
    }


@pytest.mark.parametrize(
    ("value", "expected"),
    [("10Gi", 10 * GI), ("1.5Ti", 3 * (1 << 39)), ("500M", 500 * 10**6), ("1e9", 10**9), (1024, 1024), ("2k", 2000)],
)
def test_quantities(value: Any, expected: int) -> None:
    assert parse_quantity(value) == expected


def test_a_bad_quantity_is_an_error() -> None:
    with pytest.raises(ValueError, match="quantity"):
        parse_quantity("lots")


@pytest.mark.parametrize(
    ("config", "headroom"),
    [
        ({}, 10),
        ({"storage": {"pvcHeadroomPercent": 25}}, 25),
        ({"pvcHeadroomPercent": 30}, 30),  # deprecated top level
        ({"storage": {"pvcHeadroomPercent": 5}, "pvcHeadroomPercent": 30}, 5),  # storage wins
        ({"storage": {"pvcHeadroomPercent": 0}, "pvcHeadroomPercent": 30}, 0),  # a present 0 counts
    ],
)
def test_headroom_precedence(config: dict[str, Any], headroom: int) -> None:
    assert headroom_percent(config) == headroom


@pytest.mark.parametrize(
    ("size", "headroom", "gi"),
    [
        ("10Gi", 10, 11),
        ("65Gi", 10, 72),  # 71.5 rounds up
        ("100Gi", 0, 100),
        ("1Gi", 50, 2),  # 1.5 rounds up
        ("100M", 10, 1),  # at least 1Gi
        ("20Gi", 25, 25),
    ],
)
def test_pvc_size_is_size_plus_headroom_rounded_up_to_gi(size: str, headroom: int, gi: int) -> None:
    assert pvc_size_gi(int(parse_quantity(size)), headroom) == gi
    pvc = render_artifact_pvc(artifact(size=size), {"storage": {"pvcHeadroomPercent": headroom}})
    assert pvc is not None
    assert pvc["spec"]["resources"]["requests"]["storage"] == f"{gi}Gi"


@pytest.mark.parametrize(
    ("own", "config", "expected"),
    [
        ("mine", {"storage": {"defaultStorageClassName": "fast"}, "defaultStorageClassName": "old"}, "mine"),
        (None, {"storage": {"defaultStorageClassName": "fast"}, "defaultStorageClassName": "old"}, "fast"),
        (None, {"defaultStorageClassName": "old"}, "old"),
        ("", {"storage": {"defaultStorageClassName": ""}}, None),
        (None, {}, None),
    ],
)
def test_storage_class_precedence(own: str | None, config: dict[str, Any], expected: str | None) -> None:
    obj = artifact(storageClassName=own) if own is not None else artifact()
    assert storage_class_name(obj, config) == expected
    pvc = render_artifact_pvc(obj, config)
    assert pvc is not None
    assert pvc["spec"].get("storageClassName") == expected
    assert "storageClassName" in pvc["spec"] or expected is None


def test_pvc_name_access_mode_owner_and_labels() -> None:
    config = {"labelPropagation": {"enabled": True, "match": ["team"]}}
    pvc = render_artifact_pvc(artifact(), config)
    assert pvc is not None
    assert pvc["metadata"]["name"] == f"qwen-weights-cache-{hash8('uid-1')}"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["metadata"]["ownerReferences"][0]["kind"] == "AIMArtifact"
    assert pvc["metadata"]["labels"]["team"] == "a"
    assert pvc["metadata"]["labels"]["aim.eai.amd.com/artifact"] == "qwen-weights"
    assert render_artifact_pvc(artifact(), {}) is not None
    assert "team" not in render_artifact_pvc(artifact(), {})["metadata"]["labels"]  # type: ignore[index]


def test_no_size_no_pvc() -> None:
    obj = artifact()
    del obj["spec"]["size"]
    assert render_artifact_pvc(obj, {}) is None
    assert not download_job_due(obj)


# -- the download Job's env: AIMArtifact.spec.env > profile engineEnv > containerEnv > namespace > cluster > defaults


def cfg(name: str) -> dict[str, Any]:
    return {"metadata": {"uid": name}, "spec": {"env": [{"name": "P", "value": name}, {"name": name, "value": "x"}]}}


LAYERS = ("artifact", "engine", "container", "namespace", "cluster")


@pytest.mark.parametrize(
    "present",
    [
        LAYERS,
        *[tuple(layer for layer in LAYERS if layer != missing) for missing in LAYERS],
        ("cluster",),
        (),
    ],
    ids=lambda p: "+".join(p) or "defaults-only",
)
def test_download_env_precedence_with_each_layer_missing(present: tuple[str, ...]) -> None:
    def layer(name: str) -> list[dict[str, str]]:
        return [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": name}, {"name": f"ONLY_{name.upper()}", "value": name}]

    configs = {
        ("ml-team", "default"): {"spec": {"env": layer("namespace")}},
        ("", "default"): {"spec": {"env": layer("cluster")}},
    }
    if "namespace" not in present:
        del configs[("ml-team", "default")]
    if "cluster" not in present:
        del configs[("", "default")]
    obj = artifact(env=layer("artifact")) if "artifact" in present else artifact()
    resolution = resolve(obj, lambda ns, name: configs.get((ns, name)))
    profile_spec: dict[str, Any] = {}
    if "container" in present:
        profile_spec["containerEnv"] = layer("container")
    if "engine" in present:
        profile_spec["engineEnv"] = layer("engine")
    job = render_download_job(obj, resolution.config, {"kind": "AIMProfile", "spec": profile_spec})
    env = job["spec"]["template"]["spec"]["containers"][0]["env"]
    winner = present[0] if present else "XET,HF_TRANSFER"
    assert env_value(env, "AIM_DOWNLOADER_PROTOCOL") == winner
    assert env[0]["name"] == "AIM_DOWNLOADER_PROTOCOL"  # overridden in place
    names = [e["name"] for e in env]
    assert len(names) == len(set(names))
    # every layer present contributes; the extra names come after the defaults, lowest layer first
    extras = [n for n in names if n.startswith("ONLY_")]
    assert extras == [f"ONLY_{layer.upper()}" for layer in reversed(LAYERS) if layer in present]
    assert env_value(env, "ARTIFACT_NAME") == "qwen-weights"
    assert env_value(env, "EXPECTED_SIZE_BYTES") == str(10 * GI)


def test_download_job_shape_and_labels_on_job_and_pod() -> None:
    config = {"labelPropagation": {"enabled": True, "match": ["team"]}}
    obj = artifact(downloadImage="example.com/dl:1")
    obj["metadata"]["labels"]["aim.eai.amd.com/service"] = "qwen-chat"
    job = render_download_job(obj, config)
    assert job["metadata"]["name"] == f"qwen-weights-download-{hash8('uid-1')}"
    assert job["spec"]["backoffLimit"] == 2
    assert job["spec"]["ttlSecondsAfterFinished"] == 600
    pod = job["spec"]["template"]
    for labels in (job["metadata"]["labels"], pod["metadata"]["labels"]):
        assert labels["team"] == "a"
        assert labels["aim.eai.amd.com/service"] == "qwen-chat"  # aim.eai.amd.com/* always propagates
        assert labels["aim.eai.amd.com/component"] == "download"
        assert labels["aim.eai.amd.com/artifact"] == "qwen-weights"
    container = pod["spec"]["containers"][0]
    assert container["image"] == "example.com/dl:1"
    assert container["args"] == ["hf://Qwen/Qwen3-32B"]
    assert container["volumeMounts"] == [{"name": "cache", "mountPath": "/cache"}]
    pvc = render_artifact_pvc(obj, config)
    assert pvc is not None
    assert pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
    assert pod["spec"]["restartPolicy"] == "Never"
    assert render_download_job(artifact(), {})["spec"]["template"]["spec"]["containers"][0]["image"] == (
        DEFAULT_DOWNLOAD_IMAGE
    )


def test_long_artifact_names_give_job_names_of_at_most_63() -> None:
    obj = artifact()
    obj["metadata"]["name"] = "a" * 120
    assert len(render_download_job(obj, {})["metadata"]["name"]) <= 63


# -- status follows the Job


def job(*conditions: str) -> dict[str, Any]:
    env = [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "XET,HTTP"}]
    return {
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "downloader", "env": env}]}}},
        "status": {"conditions": [{"type": c, "status": "True", "message": f"{c} msg"} for c in conditions]},
    }


PVC = {
    "metadata": {"name": "p"},
    "spec": {"resources": {"requests": {"storage": "11Gi"}}},
    "status": {"phase": "Bound"},
}


@pytest.mark.parametrize(
    ("live_job", "pvc", "status", "protocol", "attempt"),
    [
        (None, None, "Downloading", None, None),
        (job(), PVC, "Downloading", "XET", 1),
        (job("SuccessCriteriaMet", "Complete"), PVC, "Ready", "XET", 1),
        (job("FailureTarget", "Failed"), PVC, "Failed", "HTTP", 2),
    ],
)
def test_status_follows_the_job(
    live_job: dict[str, Any] | None, pvc: dict[str, Any] | None, status: str, protocol: str | None, attempt: int | None
) -> None:
    got = artifact_status(artifact(), live_job, pvc)
    assert got["status"] == status
    conditions = {c["type"]: c for c in got["conditions"]}
    assert conditions["Ready"]["status"] == str(status == "Ready")
    # upstream's component conditions: the claim's, the Job's (reasons as upstream derives them)
    assert conditions["CachePvcReady"]["status"] == str(pvc is not None)
    job_ready = {
        "Downloading": ("False", "JobRunning" if live_job is not None else "ResourceNotReady"),
        "Ready": ("True", "Ready"),
        "Failed": ("False", "JobFailed"),
    }[status]
    assert (conditions["DownloadJobReady"]["status"], conditions["DownloadJobReady"]["reason"]) == job_ready
    if live_job is None:  # upstream's Progressing (v1alpha2's Downloading) before its claim and Job exist
        assert (conditions["Ready"]["reason"], conditions["Ready"]["message"]) == (
            "Progressing",
            "Waiting for components to become ready",
        )
        assert "DownloadJobPodsReady" not in conditions, "no pods looked at before the Job exists"
    elif status == "Ready":
        assert "DownloadJobPodsReady" not in conditions, "nor once it completed"
    elif status == "Downloading":
        assert conditions["DownloadJobPodsReady"] == {
            "type": "DownloadJobPodsReady",
            "status": "False",
            "reason": "NoPods",
            "message": "No pods found",
        }
    if status == "Ready":
        assert (conditions["Ready"]["reason"], conditions["Ready"]["message"]) == (
            "AllComponentsReady",
            "All components are ready",
        )
    assert got["download"].get("protocol") == protocol
    assert got["download"].get("attempt") == attempt
    if live_job is not None:
        assert got["download"]["protocolSequence"] == "XET,HTTP"
        assert got["download"]["totalAttempts"] == 2
    if pvc is not None:
        assert (got["persistentVolumeClaim"], got["allocatedSize"]) == ("p", "11Gi")


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ({"phase": "Bound"}, ("True", "Ready", "")),
        ({"phase": "Pending"}, ("False", "PvcPending", "PVC is pending")),
        ({"phase": "Lost"}, ("False", "PvcLost", "PVC lost its underlying volume")),
        (
            {"conditions": [{"type": "Resizing", "status": "False", "reason": "ProvisioningFailed", "message": "m"}]},
            ("False", "PvcProvisioningFailed", "PVC provisioning failed: m"),
        ),
        (None, ("False", "ResourceNotReady", "Downstream resource not found or being created")),
    ],
)
def test_cache_pvc_ready_is_upstreams_claim_health(status: dict[str, Any] | None, expected: tuple[str, ...]) -> None:
    condition = pvc_condition(None if status is None else {"metadata": {"name": "p"}, "status": status})
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "CachePvcReady",
        *expected,
    )


def test_a_ready_artifact_stays_ready_when_its_job_is_gone() -> None:
    obj = artifact()
    obj["status"] = {"status": "Ready", "download": {"protocol": "XET", "attempt": 1}}
    kept = [
        {"type": "DownloadJobReady", "status": "True", "reason": "Ready", "message": ""},
        {"type": "DownloadJobPodsReady", "status": "True", "reason": "PodsReady", "message": "Pods are ready"},
        {"type": "DownloadComplete", "status": "True", "reason": "Verified", "message": "m"},
        {"type": "Ready", "status": "True", "reason": "AllComponentsReady", "message": "All components are ready"},
    ]
    obj["status"]["conditions"] = kept
    got = artifact_status(obj, None, PVC)
    assert got["status"] == "Ready"
    # upstream no longer looks at the Job of a Ready artifact, nor its pods: their conditions stay as they were
    assert [c["type"] for c in got["conditions"]] == [
        "CachePvcReady",
        "DownloadJobReady",
        "DownloadJobPodsReady",
        "DownloadComplete",
        "Ready",
    ]
    assert got["conditions"][1:4] == kept[:3]
    assert got["download"]["protocol"] == "XET"
    assert not download_job_due(obj)
    assert download_job_due(artifact())


def pod(phase: str, ready: bool = False, waiting: str | None = None, uid: str = "p1") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    if waiting is not None:
        status["containerStatuses"] = [
            {"name": "downloader", "state": {"waiting": {"reason": "ImagePullBackOff", "message": waiting}}}
        ]
    return {"metadata": {"name": "j-x", "uid": uid}, "status": status}


SCHEDULING = {"reason": "FailedScheduling", "message": "0/1 nodes available", "lastTimestamp": "2026-12-06T00:00:00Z"}


@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        ([], ("False", "NoPods", "No pods found")),
        ([pod("Pending")], ("False", "PodsPending", "Pods are pending")),
        ([pod("Pending", uid="scheduling")], ("False", "FailedScheduling", "0/1 nodes available")),
        ([pod("Running")], ("False", "PodsStarting", "Pods are running, waiting for readiness")),
        ([pod("Running", ready=True)], ("True", "PodsReady", "Pods are ready")),
        ([pod("Succeeded")], ("True", "PodsReady", "Pods are ready")),
        ([pod("Unknown")], ("False", "PodsProgressing", "Pods are progressing")),
        (
            [pod("Pending", waiting='Back-off pulling image "dl:1"')],
            ("False", "ImagePullBackOff", 'Container downloader: Back-off pulling image "dl:1"'),
        ),
    ],
)
def test_download_job_pods_ready_is_upstreams_pods_health_while_the_job_runs(
    pods: list[dict[str, Any]], expected: tuple[str, str, str]
) -> None:
    got = artifact_status(
        artifact(),
        job(),
        PVC,
        pods=pods,
        pod_events=lambda p: [SCHEDULING] if p["metadata"]["uid"] == "scheduling" else [],
    )
    condition = next(c for c in got["conditions"] if c["type"] == "DownloadJobPodsReady")
    assert (condition["status"], condition["reason"], condition["message"]) == expected
    assert got["status"] == "Downloading"


def test_the_inference_service_mounts_ready_artifacts_only() -> None:
    service = {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {"name": "qwen-chat", "namespace": "ml-team", "uid": "s"},
        "spec": {"model": {"image": "img"}},
    }
    ready = artifact(modelId="Qwen/Qwen3-32B")
    ready["status"] = {"status": "Ready", "persistentVolumeClaim": "pvc-a"}
    pending = artifact()
    pending["metadata"]["name"] = "other"
    pending["status"] = {"status": "Downloading", "persistentVolumeClaim": "pvc-b"}
    isvc = render_inference_service(service, {})
    mounted = mount_artifacts(isvc, [pending, ready])
    predictor = mounted["spec"]["predictor"]
    assert predictor["volumes"][-1] == {
        "name": "artifact-qwen-weights",
        "persistentVolumeClaim": {"claimName": "pvc-a", "readOnly": True},
    }
    assert predictor["containers"][0]["volumeMounts"][-1] == {
        "name": "artifact-qwen-weights",
        "mountPath": "/workspace/cache/Qwen/Qwen3-32B",
        "readOnly": True,
    }
    assert len(predictor["volumes"]) == len(isvc["spec"]["predictor"]["volumes"]) + 1
    assert mount_artifacts(isvc, [pending]) == isvc
