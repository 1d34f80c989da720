"""The AMD AIM controller (DESIGN §4): what a cluster watches (`aim_watch`) and the AIMService reconciler
(`aim_service`). `omectl.controller.manager` hooks both in: `ClusterRuntime.aim` holds the informers and
`FleetController.process` sends work keys of kind `AIM_SERVICE_KEY` to `AimServiceReconciler.reconcile`."""

from __future__ import annotations

from omectl.controller.aim_service import AimServiceReconciler, aim_operator_namespace, desired_status
from omectl.controller.aim_watch import AIM_SERVICE_KEY, AimWatch

__all__ = ["AIM_SERVICE_KEY", "AimServiceReconciler", "AimWatch", "aim_operator_namespace", "desired_status"]
