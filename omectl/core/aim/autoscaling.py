"""An AIMService's replicas: a fixed count, or KEDA autoscaling between bounds; and its `status.runtime`.

Upstream's v1alpha1 service asks for autoscaling with `spec.minReplicas`, `spec.maxReplicas` and `spec.autoScaling`
(KEDA on custom pod metrics); v1alpha2 has no such fields, so they reach the controller through the carried
v1alpha1 fields (`v1alpha1_spec`). As upstream's service renders its InferenceService:

- **Autoscaling** (any of the three set): predictor `minReplicas` = `minReplicas`, else 1; `maxReplicas` =
  `maxReplicas`, else `minReplicas`, else 1; `autoScaling.metrics` from `spec.autoScaling.metrics` (each pod metric's
  backend, server address, metric names, query and operation over time, and its target's type, value, average value
  and average utilization; the quantities as written); annotations `serving.kserve.io/autoscalerClass: keda`,
  `sidecar.opentelemetry.io/inject: <name>-predictor` and `prometheus.kserve.io/port: "8000"`.
- **A fixed count** (none set): `minReplicas` = `maxReplicas` = `spec.replicas` (default 1) and
  `serving.kserve.io/autoscalerClass: none` beside the Prometheus port.

`status.runtime` (upstream's replica counts, v1alpha1's `REPLICAS` column; the same field in v1alpha2): from the
HorizontalPodAutoscaler KEDA makes for the InferenceService (`keda-hpa-<name>-predictor`) when there is one, its
`minReplicas`, `maxReplicas` and its status's current and desired replicas; else the fixed count upstream reports
without one: `minReplicas` (the service's), else `spec.replicas`, else 1, as all four. `replicas` is the display
string: the current count when min = max, else `current/desired (min-max)`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.status import Component
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_mapping
from omectl.core.layering import copy_json

AUTOSCALER_CLASS: Final = "serving.kserve.io/autoscalerClass"
OTEL_SIDECAR_INJECT: Final = "sidecar.opentelemetry.io/inject"
PROMETHEUS_PORT: Final = "prometheus.kserve.io/port"
PREDICTOR_SUFFIX: Final = "-predictor"
AUTOSCALING_FIELDS: Final = ("minReplicas", "maxReplicas", "autoScaling")
_POD_METRIC_FIELDS: Final = ("backend", "serverAddress", "metricNames", "query", "operationOverTime")
_TARGET_FIELDS: Final = ("value", "averageValue", "averageUtilization")


@dataclass(frozen=True)
class Replicas:
    """The predictor's bounds, and the autoscaling asked for (None: a fixed count)."""

    minimum: int
    maximum: int
    autoscaling: Mapping[str, Any] | None

    @property
    def autoscaled(self) -> bool:
        return self.autoscaling is not None


def replicas_of(service: Mapping[str, Any]) -> Replicas:
    """The service's replicas (module docstring): autoscaling when it was written in v1alpha1 with `minReplicas`,
    `maxReplicas` or `autoScaling`, else a fixed `spec.replicas`."""
    asked = _autoscaling_fields(service)
    if asked is not None:
        minimum = _count(asked.get("minReplicas"))
        maximum = _count(asked.get("maxReplicas"))
        low = minimum if minimum is not None else 1
        high = maximum if maximum is not None else low
        return Replicas(low, high, asked)
    fixed = _count(as_mapping(service.get("spec")).get("replicas"))
    count = fixed if fixed is not None else 1
    return Replicas(count, count, None)


def predictor_autoscaling(replicas: Replicas) -> dict[str, Any] | None:
    """KServe's `predictor.autoScaling` for `spec.autoScaling`, or None when the service gives none."""
    if replicas.autoscaling is None:
        return None
    given = replicas.autoscaling.get("autoScaling")
    if not isinstance(given, Mapping):
        return None
    metrics = given.get("metrics")
    if not isinstance(metrics, list) or not metrics:
        return {}
    return {"metrics": [_metric(m) for m in metrics if isinstance(m, Mapping)]}


def autoscaling_annotations(inference_service_name: str, replicas: Replicas, port: int) -> dict[str, str]:
    """The InferenceService's autoscaler annotations (module docstring)."""
    annotations = {PROMETHEUS_PORT: str(port)}
    if replicas.autoscaled:
        annotations[AUTOSCALER_CLASS] = "keda"
        annotations[OTEL_SIDECAR_INJECT] = inference_service_name + PREDICTOR_SUFFIX
    else:
        annotations[AUTOSCALER_CLASS] = "none"
    return annotations


def keda_hpa_name(inference_service_name: str) -> str:
    """The HorizontalPodAutoscaler KEDA makes for an InferenceService's predictor."""
    return f"keda-hpa-{inference_service_name}{PREDICTOR_SUFFIX}"


def runtime_status(service: Mapping[str, Any], hpa: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`status.runtime` (module docstring): from KEDA's HPA when there is one, else the service's fixed count."""
    if hpa is not None:
        spec = as_mapping(hpa.get("spec"))
        observed = as_mapping(hpa.get("status"))
        minimum = _count(spec.get("minReplicas")) or 0
        maximum = _count(spec.get("maxReplicas")) or 0
        current = _count(observed.get("currentReplicas")) or 0
        desired = _count(observed.get("desiredReplicas")) or 0
    else:
        asked = _autoscaling_fields(service) or {}
        count = _count(asked.get("minReplicas"))
        if count is None:
            count = _count(as_mapping(service.get("spec")).get("replicas"))
        minimum = maximum = current = desired = count if count is not None else 1
    shown = str(current) if minimum == maximum else f"{current}/{desired} ({minimum}-{maximum})"
    counts = {"currentReplicas": current, "desiredReplicas": desired, "minReplicas": minimum, "maxReplicas": maximum}
    # upstream's fields are omitempty int32s: a zero is not written
    return {**{key: value for key, value in counts.items() if value}, "replicas": shown}


def _autoscaling_fields(service: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The service's `minReplicas`, `maxReplicas` and `autoScaling` (carried v1alpha1 fields); None when it sets
    none."""
    carried = v1alpha1_spec(service)
    asked = {key: carried[key] for key in AUTOSCALING_FIELDS if carried.get(key) is not None}
    return asked or None


def _metric(metric: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": metric.get("type")}
    pod = metric.get("podmetric")
    if metric.get("type") != "PodMetric" or not isinstance(pod, Mapping):
        return out
    source: dict[str, Any] = {}
    given_metric = pod.get("metric")
    if isinstance(given_metric, Mapping):
        source["metric"] = {k: copy_json(given_metric[k]) for k in _POD_METRIC_FIELDS if given_metric.get(k)}
    target = pod.get("target")
    if isinstance(target, Mapping):
        kept = {"type": target.get("type")}
        kept.update({k: copy_json(target[k]) for k in _TARGET_FIELDS if target.get(k) not in (None, "")})
        source["target"] = kept
    out["podmetric"] = source
    return out


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


# --- the HPA component -----------------------------------------------------------------------------------------

HPA: Final = "HPA"
HPA_READY: Final = f"{HPA}Ready"
HPA_NOT_FOUND: Final = "Waiting for KEDA to create HorizontalPodAutoscaler"


def autoscaled(service: Mapping[str, Any]) -> bool:
    """Whether the service asks for autoscaling (`minReplicas`, `maxReplicas` or `autoScaling`)."""
    return _autoscaling_fields(service) is not None


def hpa_component(service: Mapping[str, Any], hpa: Mapping[str, Any] | None, serving: bool) -> Component | None:
    """Upstream's `HPA` component of an autoscaled service (None for any other), from KEDA's HPA and whether the
    InferenceService is Ready (`serving`): missing, Progressing / `HPANotFound`; `ScalingActive` not True,
    Progressing / `WaitingForMetrics` while the InferenceService is not Ready, else Failed / `MetricsFailed`;
    `AbleToScale` not True, Progressing / `ScaleTargetNotReady`; else Ready / `HPAOperational`."""
    if not autoscaled(service):
        return None
    if hpa is None:
        return Component(HPA, "Progressing", "HPANotFound", HPA_NOT_FOUND)
    conditions = {
        c.get("type"): c for c in as_mapping(hpa.get("status")).get("conditions") or () if isinstance(c, Mapping)
    }
    active, able = conditions.get("ScalingActive"), conditions.get("AbleToScale")
    if active is None or active.get("status") != "True":
        if not serving:
            message = "Waiting for InferenceService to be ready before metrics are available"
            return Component(HPA, "Progressing", "WaitingForMetrics", message)
        if active is None:
            return Component(HPA, "Failed", "MetricsFailed", "HPA ScalingActive condition not found")
        return Component(HPA, "Failed", "MetricsFailed", f"HPA cannot get metrics: {active.get('message') or ''}")
    if able is not None and able.get("status") != "True":
        message = f"HPA cannot update scale target: {able.get('message') or ''}"
        return Component(HPA, "Progressing", "ScaleTargetNotReady", message)
    return Component(HPA, "Ready", "HPAOperational", "HorizontalPodAutoscaler is actively scaling")
