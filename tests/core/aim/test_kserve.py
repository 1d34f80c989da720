"""The InferenceService and model-cache PVC rendered for an AIMService: names, labels, replicas, image, env,
GPU resources, storage class precedence and ownership."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from omectl.core.aim.kserve import (
    container_resources,
    model_image,
    render_inference_service,
    render_model_cache_pvc,
    storage_class_name,
)
from omectl.core.aim.versions import convert


def service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMService",
        "metadata": {"name": "qwen-chat", "namespace": "ml-team", "uid": "svc-uid"},
        "spec": {"model": {"name": "qwen-qwen3-32b"}, **spec},
    }


OWNER = {
    "apiVersion": "aim.eai.amd.com/v1alpha1",
    "kind": "AIMService",
    "name": "qwen-chat",
    "uid": "svc-uid",
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_inference_service() -> None:
    svc = service(
        model={"image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.4"},
        replicas=2,
        env=[{"name": "HF_TOKEN", "value": "svc"}],
        resources={"limits": {"amd.com/gpu": "2", "memory": "64Gi"}},
    )
    config = {"env": [{"name": "HF_TOKEN", "value": "cfg"}, {"name": "CFG", "value": "1"}]}
    isvc = render_inference_service(svc, config)
    assert isvc == {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {
            "name": "qwen-chat",
            "namespace": "ml-team",
            "labels": {
                "app.kubernetes.io/component": "inference",
                "app.kubernetes.io/managed-by": "omectl",
                "aim.eai.amd.com/service": "qwen-chat",
            },
            "annotations": {"prometheus.kserve.io/port": "8000", "serving.kserve.io/autoscalerClass": "none"},
            "ownerReferences": [OWNER],
        },
        "spec": {
            "predictor": {
                "minReplicas": 2,
                "maxReplicas": 2,
                "containers": [
                    {
                        "name": "kserve-container",
                        "image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.4",
                        "env": [
                            {"name": "AIM_CACHE_PATH", "value": "/workspace/cache"},
                            {"name": "VLLM_ENABLE_METRICS", "value": "true"},
                            {"name": "HF_TOKEN", "value": "svc"},
                            {"name": "CFG", "value": "1"},
                        ],
                        "ports": [{"name": "http", "containerPort": 8000, "protocol": "TCP"}],
                        "resources": {
                            "limits": {"amd.com/gpu": "2", "memory": "64Gi"},
                            "requests": {"amd.com/gpu": "2"},
                        },
                        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
                    }
                ],
                "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}],
            }
        },
    }


def test_a_v1alpha1_services_pull_secrets_and_service_account_reach_the_predictor() -> None:
    """v1alpha2 has neither field: the service written in v1alpha1 carries them in its annotation, as stored."""
    written = service(imagePullSecrets=[{"name": "regcred"}], serviceAccountName="aim")
    stored = convert(written, "aim.eai.amd.com/v1alpha2")
    assert "imagePullSecrets" not in stored["spec"]
    predictor = render_inference_service(stored, {})["spec"]["predictor"]
    assert (predictor["imagePullSecrets"], predictor["serviceAccountName"]) == ([{"name": "regcred"}], "aim")
    assert "imagePullSecrets" not in render_inference_service(service(), {})["spec"]["predictor"]


def test_inputs_are_untouched() -> None:
    svc = service(resources={"limits": {"amd.com/gpu": "1"}}, env=[{"name": "A", "value": "1"}])
    before = copy.deepcopy(svc)
    render_inference_service(svc, {})
    assert svc == before


@pytest.mark.parametrize(
    ("spec", "resolved", "image"),
    [
        ({"model": {"name": "qwen-qwen3-32b"}}, None, "docker.io/amdenterpriseai/aim-qwen-qwen3-32b:latest"),
        ({"model": {"image": "reg/x:1"}}, None, "reg/x:1"),
        ({"model": {"name": "qwen-qwen3-32b"}}, "reg/resolved:2", "reg/resolved:2"),
    ],
)
def test_model_image(spec: dict[str, Any], resolved: str | None, image: str) -> None:
    assert model_image(service(**spec), resolved) == image


def test_model_image_requires_a_model() -> None:
    with pytest.raises(ValueError, match="names no model"):
        model_image(service(model={}))


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        (None, {"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "1"}}),
        (
            {"requests": {"nvidia.com/gpu": 4, "cpu": "8"}},
            {"requests": {"nvidia.com/gpu": 4, "cpu": "8"}, "limits": {"nvidia.com/gpu": 4}},
        ),
        (
            {"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "1"}},
            {"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "1"}},
        ),
        ({"requests": {"cpu": "1"}}, {"requests": {"cpu": "1"}}),
    ],
)
def test_container_resources_request_gpus(resources: dict[str, Any] | None, expected: dict[str, Any]) -> None:
    svc = service(resources=resources) if resources is not None else service()
    assert container_resources(svc) == expected


@pytest.mark.parametrize(
    ("own", "config", "expected"),
    [
        ("own-class", {"storage": {"defaultStorageClassName": "team-ssd"}}, "own-class"),
        (None, {"storage": {"defaultStorageClassName": "team-ssd"}}, "team-ssd"),
        ("", {"storage": {"defaultStorageClassName": "team-ssd"}}, "team-ssd"),
        (None, {}, None),
    ],
)
def test_storage_class_precedence(own: str | None, config: dict[str, Any], expected: str | None) -> None:
    assert storage_class_name(own, config) == expected


def test_model_cache_pvc_and_its_mount() -> None:
    svc = service(storage={"size": "200Gi"})
    config = {"storage": {"defaultStorageClassName": "team-ssd"}}
    pvc = render_model_cache_pvc(svc, config)
    assert pvc == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "qwen-chat-model-cache",
            "namespace": "ml-team",
            "labels": {
                "app.kubernetes.io/component": "model-cache",
                "app.kubernetes.io/managed-by": "omectl",
                "aim.eai.amd.com/service": "qwen-chat",
            },
            "ownerReferences": [OWNER],
        },
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "resources": {"requests": {"storage": "200Gi"}},
            "storageClassName": "team-ssd",
        },
    }
    predictor = render_inference_service(svc, config)["spec"]["predictor"]
    assert predictor["volumes"][1] == {
        "name": "model-cache",
        "persistentVolumeClaim": {"claimName": "qwen-chat-model-cache"},
    }
    assert predictor["containers"][0]["volumeMounts"][1] == {"name": "model-cache", "mountPath": "/workspace/cache"}


def test_model_cache_pvc_own_class_and_modes_and_no_class() -> None:
    own = render_model_cache_pvc(
        service(storage={"size": "1Ti", "storageClassName": "fast", "accessModes": ["ReadWriteOnce"]}),
        {"storage": {"defaultStorageClassName": "team-ssd"}},
    )
    assert own is not None
    assert (own["spec"]["storageClassName"], own["spec"]["accessModes"]) == ("fast", ["ReadWriteOnce"])
    unset = render_model_cache_pvc(service(storage={"size": "1Ti"}), {})
    assert unset is not None and "storageClassName" not in unset["spec"]


def test_no_size_no_pvc() -> None:
    assert render_model_cache_pvc(service(), {"storage": {"defaultStorageClassName": "x"}}) is None
    assert render_model_cache_pvc(service(storage={"storageClassName": "x"}), {}) is None
    assert len(render_inference_service(service(), {})["spec"]["predictor"]["volumes"]) == 1
