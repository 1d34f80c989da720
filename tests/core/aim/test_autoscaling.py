"""An AIMService's replicas as upstream renders them (a fixed count, or KEDA autoscaling between bounds) and its
`status.runtime`, for services written in v1alpha1 and converted to v1alpha2 as the API server stores them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.core.aim.autoscaling import hpa_component, keda_hpa_name, replicas_of, runtime_status
from omectl.core.aim.kserve import render_inference_service
from omectl.core.aim.versions import convert

UPSTREAM = Path(__file__).resolve().parents[2] / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimservice"
V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"


def stored(**spec: Any) -> dict[str, Any]:
    """A service written in v1alpha1 (with upstream's default `replicas: 1`), as v1alpha2 stores it."""
    doc = {
        "apiVersion": V1,
        "kind": "AIMService",
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"model": {"name": "m"}, "replicas": 1, **spec},
    }
    return convert(doc, V2)


def upstream(path: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
    doc["metadata"]["namespace"] = "ns"
    doc["spec"].setdefault("replicas", 1)  # the CRD's default
    return convert(doc, V2)


@pytest.mark.parametrize(
    ("spec", "bounds", "autoscaled"),
    [
        ({}, (1, 1), False),
        ({"replicas": 3}, (3, 3), False),
        ({"replicas": 0}, (0, 0), False),
        ({"minReplicas": 2, "maxReplicas": 5}, (2, 5), True),
        ({"minReplicas": 2}, (2, 2), True),  # max: min
        ({"maxReplicas": 4}, (1, 4), True),  # min: 1
        ({"autoScaling": {}}, (1, 1), True),  # autoscaling with neither bound: 1 to 1
        ({"replicas": 3, "maxReplicas": 4}, (1, 4), True),  # autoscaling wins over replicas
    ],
)
def test_replicas_as_upstream_bounds_them(spec: dict[str, Any], bounds: tuple[int, int], autoscaled: bool) -> None:
    replicas = replicas_of(stored(**spec))
    assert ((replicas.minimum, replicas.maximum), replicas.autoscaled) == (bounds, autoscaled)


def test_upstreams_autoscaling_service_renders_keda_bounds_and_its_metrics() -> None:
    service = upstream("common/autoscaling/service.yaml")
    assert "minReplicas" not in service["spec"]  # v1alpha2 holds none of it: the carried fields ask for it
    isvc = render_inference_service(service, {})
    assert isvc["metadata"]["annotations"] == {
        "serving.kserve.io/autoscalerClass": "keda",
        "sidecar.opentelemetry.io/inject": "test-autoscaling-service-predictor",
        "prometheus.kserve.io/port": "8000",
    }
    predictor = isvc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (1, 3)
    assert predictor["autoScaling"] == {
        "metrics": [
            {
                "type": "PodMetric",
                "podmetric": {
                    "metric": {
                        "backend": "opentelemetry",
                        "metricNames": ["vllm:num_requests_running"],
                        "query": "vllm:num_requests_running",
                        "operationOverTime": "avg",
                    },
                    "target": {"type": "Value", "value": "1"},
                },
            }
        ]
    }


def test_a_fixed_count_disables_the_autoscaler_and_has_no_autoscaling_block() -> None:
    isvc = render_inference_service(upstream("common/replicas/service.yaml"), {})
    assert isvc["metadata"]["annotations"] == {
        "serving.kserve.io/autoscalerClass": "none",
        "prometheus.kserve.io/port": "8000",
    }
    predictor = isvc["spec"]["predictor"]
    assert (predictor["minReplicas"], predictor["maxReplicas"]) == (3, 3)
    assert "autoScaling" not in predictor


def test_a_metric_keeps_only_the_fields_upstream_copies() -> None:
    metric = {
        "type": "PodMetric",
        "podmetric": {
            "metric": {"backend": "opentelemetry", "serverAddress": "otel:4317", "metricNames": []},
            "target": {"type": "AverageValue", "averageValue": "500m", "averageUtilization": 80, "value": ""},
        },
    }
    isvc = render_inference_service(stored(autoScaling={"metrics": [metric]}), {})
    assert isvc["spec"]["predictor"]["autoScaling"]["metrics"] == [
        {
            "type": "PodMetric",
            "podmetric": {
                "metric": {"backend": "opentelemetry", "serverAddress": "otel:4317"},
                "target": {"type": "AverageValue", "averageValue": "500m", "averageUtilization": 80},
            },
        }
    ]


@pytest.mark.parametrize(
    ("spec", "runtime"),
    [
        ({}, {"currentReplicas": 1, "desiredReplicas": 1, "minReplicas": 1, "maxReplicas": 1, "replicas": "1"}),
        (
            {"replicas": 3},
            {"currentReplicas": 3, "desiredReplicas": 3, "minReplicas": 3, "maxReplicas": 3, "replicas": "3"},
        ),
        # no HPA (no KEDA): upstream reports minReplicas as every count, even when autoscaling
        (
            {"minReplicas": 2, "maxReplicas": 5},
            {"currentReplicas": 2, "desiredReplicas": 2, "minReplicas": 2, "maxReplicas": 2, "replicas": "2"},
        ),
        ({"replicas": 0}, {"replicas": "0"}),  # upstream's counts are omitempty
    ],
)
def test_runtime_status_without_an_autoscaler(spec: dict[str, Any], runtime: dict[str, Any]) -> None:
    assert runtime_status(stored(**spec)) == runtime


def test_runtime_status_from_kedas_hpa() -> None:
    hpa = {
        "metadata": {"name": keda_hpa_name("svc")},
        "spec": {"minReplicas": 1, "maxReplicas": 3},
        "status": {"currentReplicas": 2, "desiredReplicas": 3},
    }
    assert keda_hpa_name("svc") == "keda-hpa-svc-predictor"
    assert runtime_status(stored(minReplicas=1, maxReplicas=3), hpa) == {
        "currentReplicas": 2,
        "desiredReplicas": 3,
        "minReplicas": 1,
        "maxReplicas": 3,
        "replicas": "2/3 (1-3)",
    }


def hpa(**conditions: tuple[str, str]) -> dict[str, Any]:
    listed = [{"type": t, "status": s, "message": m} for t, (s, m) in conditions.items()]
    return {"spec": {"minReplicas": 1, "maxReplicas": 3}, "status": {"conditions": listed}}


@pytest.mark.parametrize(
    ("autoscaler", "serving", "expected"),
    [
        (None, True, ("Progressing", "HPANotFound", "Waiting for KEDA to create HorizontalPodAutoscaler")),
        (
            hpa(ScalingActive=("False", "no metrics")),
            False,
            (
                "Progressing",
                "WaitingForMetrics",
                "Waiting for InferenceService to be ready before metrics are available",
            ),
        ),
        (
            hpa(ScalingActive=("False", "no metrics")),
            True,
            ("Failed", "MetricsFailed", "HPA cannot get metrics: no metrics"),
        ),
        (hpa(), True, ("Failed", "MetricsFailed", "HPA ScalingActive condition not found")),
        (
            hpa(ScalingActive=("True", ""), AbleToScale=("False", "no scale subresource")),
            True,
            ("Progressing", "ScaleTargetNotReady", "HPA cannot update scale target: no scale subresource"),
        ),
        (
            hpa(ScalingActive=("True", ""), AbleToScale=("True", "")),
            True,
            ("Ready", "HPAOperational", "HorizontalPodAutoscaler is actively scaling"),
        ),
    ],
)
def test_an_autoscaled_services_hpa_component_reads_kedas_hpa_as_upstream(
    autoscaler: dict[str, Any] | None, serving: bool, expected: tuple[str, str, str]
) -> None:
    component = hpa_component(stored(minReplicas=1, maxReplicas=3), autoscaler, serving)
    assert component is not None and component.condition_type == "HPAReady"
    assert (component.state, component.reason, component.message) == expected


def test_a_service_with_a_fixed_count_has_no_hpa_component() -> None:
    assert hpa_component(stored(replicas=2), None, True) is None
