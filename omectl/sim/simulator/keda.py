"""KServe's and KEDA's part for an autoscaled KServe InferenceService (`serving.kserve.io/autoscalerClass: keda`):
the HorizontalPodAutoscaler KEDA makes from the ScaledObject KServe makes for its predictor, collapsed into one step
(the simulator serves no ScaledObject).

The HPA is `autoscaling/v2`, named as KEDA names it, `keda-hpa-<name>-predictor`, in the InferenceService's
namespace, owned by it (KEDA's is owned by the ScaledObject, which the InferenceService owns), with its labels (KServe
copies them onto the ScaledObject, KEDA onto the HPA) and KEDA's own; spec: `scaleTargetRef` the predictor's
Deployment `<name>-predictor`, the predictor's `minReplicas` (at least 1) and `maxReplicas` (default the minimum);
no metrics (KEDA's are external metrics the simulator does not serve). Its status, as the HPA controller writes it
once metrics flow: `currentReplicas` the replicas placed, `desiredReplicas` the minimum, `AbleToScale` True
`ReadyForNewScale`, `ScalingActive` True `ValidMetricFound`, `ScalingLimited` False `DesiredWithinRange`. An
InferenceService that is not autoscaled by KEDA has none (one left from before is deleted). Like the InferenceService's
status, the HPA follows its spec changes (generation); an edit of its annotations alone is seen with the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.jsonish import as_mapping

AUTOSCALER_CLASS: Final = "serving.kserve.io/autoscalerClass"
KEDA_MANAGER: Final = "keda-operator"


def keda_autoscaled(isvc: Mapping[str, Any]) -> bool:
    annotations = as_mapping(as_mapping(isvc.get("metadata")).get("annotations"))
    return annotations.get(AUTOSCALER_CLASS) == "keda"


def hpa_name(isvc: Mapping[str, Any]) -> str:
    return f"keda-hpa-{as_mapping(isvc.get('metadata')).get('name')}-predictor"


def bounds(isvc: Mapping[str, Any]) -> tuple[int, int]:
    predictor = as_mapping(as_mapping(isvc.get("spec")).get("predictor"))
    low = predictor.get("minReplicas")
    minimum = low if type(low) is int and low >= 1 else 1  # KEDA scales to zero itself: its HPA's floor is 1
    high = predictor.get("maxReplicas")
    return minimum, high if type(high) is int and high > 0 else max(minimum, 1)


def keda_hpa(isvc: Mapping[str, Any]) -> dict[str, Any]:
    """The HPA KEDA makes for an autoscaled InferenceService (module docstring), without status."""
    meta = as_mapping(isvc.get("metadata"))
    name, scaled_object = hpa_name(isvc), f"{meta.get('name')}-predictor"
    minimum, maximum = bounds(isvc)
    labels = {
        **{str(k): str(v) for k, v in as_mapping(meta.get("labels")).items()},
        "app.kubernetes.io/managed-by": KEDA_MANAGER,
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/part-of": scaled_object,
        "scaledobject.keda.sh/name": scaled_object,
    }
    owner = {
        "apiVersion": isvc.get("apiVersion"),
        "kind": isvc.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": meta.get("namespace"), "labels": labels, "ownerReferences": [owner]},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": scaled_object},
            "minReplicas": minimum,
            "maxReplicas": maximum,
        },
    }


def hpa_status(hpa: Mapping[str, Any], current: int, now: str) -> dict[str, Any]:
    """The status the HPA controller writes while metrics flow: `current` replicas, the minimum desired."""
    spec = as_mapping(hpa.get("spec"))
    previous = {
        c.get("type"): c for c in as_mapping(hpa.get("status")).get("conditions") or [] if isinstance(c, Mapping)
    }

    def condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
        before = previous.get(type_) or {}
        since = before.get("lastTransitionTime") if before.get("status") == status else None
        return {
            "type": type_,
            "status": status,
            "lastTransitionTime": since or now,
            "reason": reason,
            "message": message,
        }

    desired = spec.get("minReplicas", 1)
    return {
        "currentReplicas": current,
        "desiredReplicas": desired,
        "conditions": [
            condition("AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size"),
            condition(
                "ScalingActive",
                "True",
                "ValidMetricFound",
                "the HPA was able to successfully calculate a replica count from external metric",
            ),
            condition(
                "ScalingLimited", "False", "DesiredWithinRange", "the desired count is within the acceptable range"
            ),
        ],
    }
