"""What a selected template gives the InferenceService beside its env (core/aim/template_serving.py, through
kserve.render_inference_service): upstream's resources from the template's resolved GPU (aim-engine
9223504d74b01fec2e99d250933ea2884aef3b87 internal/aimservice/kserve.go resolveResources), its labels and its node
affinity."""

from __future__ import annotations

from typing import Any

from omectl.core.aim.kserve import render_inference_service
from omectl.core.aim.template_serving import template_gpu, template_resources
from tests.core.aim.test_service_templates import service

AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "amd.com/gpu.device-id", "operator": "In", "values": ["74a1"]}]}
        ]
    }
}


def template(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha1",
        "kind": "AIMServiceTemplate",
        "metadata": {"name": "Qwen3 MI300X", "namespace": "team"},
        "spec": {"modelName": "qwen3", "hardware": {"gpu": {"model": "MI300X", "requests": 1}}},
        "status": {"status": "Ready", **status},
    }


def test_the_gpu_comes_from_the_resolved_hardware_else_the_spec() -> None:
    resolved = template(resolvedHardware={"gpu": {"requests": 2, "resourceName": "amd.com/gpu-partition"}})
    assert template_gpu(resolved) == (2, "amd.com/gpu-partition")
    assert template_gpu(template()) == (1, "amd.com/gpu")
    cpu = template()
    cpu["spec"].pop("hardware")
    assert template_gpu(cpu) == (0, "amd.com/gpu")


def test_resources_are_upstreams_defaults_for_the_gpu_count_under_the_templates_and_the_services() -> None:
    served = template(resolvedHardware={"gpu": {"requests": 2}})
    assert template_resources(service(), served) == {
        "requests": {"cpu": "8", "memory": "64Gi", "amd.com/gpu": "2"},
        "limits": {"memory": "96Gi", "amd.com/gpu": "2"},
    }
    served["spec"]["resources"] = {"requests": {"memory": "100Gi"}}
    own = service(resources={"limits": {"amd.com/gpu": "4"}, "requests": {"cpu": "2"}})
    assert template_resources(own, served) == {
        "requests": {"cpu": "2", "memory": "100Gi", "amd.com/gpu": "4"},
        "limits": {"memory": "96Gi", "amd.com/gpu": "4"},
    }, "the service's GPU on both sides"


def test_the_inference_service_carries_the_templates_resources_labels_and_node_affinity() -> None:
    served = template(
        resolvedHardware={"gpu": {"requests": 1}},
        resolvedNodeAffinity=AFFINITY,
        profile={"metadata": {"metric": "latency", "precision": "FP8"}},
    )
    isvc = render_inference_service(service(), {}, template=served)
    labels = isvc["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("aim.eai.amd.com/") and k != "aim.eai.amd.com/service"} == {
        "aim.eai.amd.com/template": "qwen3_mi300x",
        "aim.eai.amd.com/model": "qwen3",
        "aim.eai.amd.com/metric": "latency",
        "aim.eai.amd.com/precision": "fp8",
    }
    predictor = isvc["spec"]["predictor"]
    assert predictor["affinity"] == {"nodeAffinity": AFFINITY}
    assert predictor["containers"][0]["resources"]["limits"]["amd.com/gpu"] == "1"
    plain = render_inference_service(service(), {})
    assert (
        "affinity" not in plain["spec"]["predictor"] and "aim.eai.amd.com/template" not in plain["metadata"]["labels"]
    )
    assert plain["spec"]["predictor"]["containers"][0]["resources"] == {
        "requests": {"amd.com/gpu": "1"},
        "limits": {"amd.com/gpu": "1"},
    }
