"""The reconciler of upstream's legacy template path (docs/aim-resources.md, "The legacy template path"):
AIMServiceTemplate, AIMClusterServiceTemplate and AIMTemplateCache, at `aim.eai.amd.com/v1alpha1`.

One reconcile (work key kind `aim.eai.amd.com/<Kind>`, see `legacy_watch`):

1. Resolve the object's runtime config from the informer caches as every AIM consumer does (`resolve`; a cluster
   template looks the namespaced config up in the operator namespace, `AIM_SYSTEM_NAMESPACE`).
2. An explicit `runtimeConfigName` that does not exist: status `Failed` with `RuntimeConfigReady=False`,
   `ConfigValid=False` and `Ready=False` (`ReferenceNotFound`, `RuntimeConfig <name> not found`), a Warning event,
   nothing applied, `RetryLater` (backoff; the config's creation queues the object at once). The implicit
   `default` missing: `RuntimeConfigReady=True` / `DefaultConfigNotFound` and one Normal event on the first
   reconcile that finds it missing.
3. The kind's own step (`STEPS`) applies its children and says how its components stand and which status fields
   it sets (`Outcome`).
4. Status in upstream's shape (`omectl.core.aim.legacy.status.legacy_status`): `status`, metav1 conditions (each
   with reason, message and `lastTransitionTime`, kept while its status is unchanged), `resolvedRuntimeConfig`
   (absent when nothing resolved), the kind's fields, `observedGeneration`. An unchanged status sends no write. A
   status that turns Failed, NotAvailable or Degraded records one Warning event with the `Ready` reason and message.

A child write of the step that fails with a server error, a throttle or no answer (`reachability.is_write_failure`)
writes the previous status with `DependenciesReachable` False (`Failed to apply resources: ...`), and the error is
raised on (the work queue's backoff); a later status with no such error has it True / `Reachable`
(`reachability.with_recovery`), as upstream's pipeline handles a failed apply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Final, cast

from omectl.controller.aim.config_consumer import ConfigConsumerReconciler
from omectl.controller.aim.consumers import AimConsumerReconciler
from omectl.controller.aim.legacy_caches import delete_abandoned_cache, reconcile_template_cache
from omectl.controller.aim.legacy_outcome import Outcome
from omectl.controller.aim.legacy_templates import reconcile_template
from omectl.controller.aim.legacy_watch import LEGACY_KEYS, LEGACY_RESOURCES
from omectl.controller.aim.reachability import failed_write_status, is_write_failure, with_recovery
from omectl.controller.aim.watch import AimWatch
from omectl.controller.runtime.apply import live_object
from omectl.core.aim.legacy.kinds import (
    AIM_V1ALPHA1,
    CLUSTER_SERVICE_TEMPLATE,
    SERVICE_TEMPLATE,
    TEMPLATE_CACHE,
)
from omectl.core.aim.legacy.status import (
    ERROR_STATES,
    LegacyStatus,
    legacy_status,
    runtime_config_component,
)
from omectl.core.aim.resolution import Resolution
from omectl.core.aim.status import READY
from omectl.core.conditions import stamp_all
from omectl.kube import timestamps

Step = Callable[["LegacyReconciler", AimWatch, dict[str, Any], Resolution], Awaitable[Outcome]]


STEPS: Final[dict[str, Step]] = {
    SERVICE_TEMPLATE: reconcile_template,
    CLUSTER_SERVICE_TEMPLATE: reconcile_template,
    TEMPLATE_CACHE: reconcile_template_cache,
}


class LegacyReconciler(ConfigConsumerReconciler):
    """Reconciles the legacy kinds (module docstring): the work keys of `LEGACY_KEYS`, registered for it in
    `omectl.controller.app`."""

    def __init__(self, *, operator_namespace: str, children: AimConsumerReconciler) -> None:
        super().__init__(
            operator_namespace=operator_namespace,
            keys=LEGACY_KEYS,
            resources=LEGACY_RESOURCES,
            api_version=AIM_V1ALPHA1,
        )
        self.children = children
        """Applies and reads the children the legacy kinds share with the v1alpha2 consumers (Jobs, artifacts)."""

    async def write_refused(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, previous: list[Any]
    ) -> None:
        config = runtime_config_component(resolution)
        await self.write_status(cluster, obj, resolution, legacy_status([config], previous_conditions=previous))

    async def reconcile_kind(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, previous: list[Any]
    ) -> None:
        if obj["kind"] == TEMPLATE_CACHE and await delete_abandoned_cache(cluster, obj):
            self.writes += 1
            return
        try:
            outcome = await STEPS[obj["kind"]](self, cluster, obj, resolution)
        except Exception as error:
            if not is_write_failure(error):
                raise
            await self.write_desired_status(
                cluster, obj, partial(failed_write_status, error=error, now=timestamps.now())
            )
            raise  # retried with the queue's backoff, a server's Retry-After honoured
        status = legacy_status(
            [runtime_config_component(resolution), *outcome.components],
            extra_conditions=outcome.conditions,
            previous_conditions=previous,
        )
        await self.write_status(cluster, obj, resolution, status, outcome.fields)

    async def live(self, cluster: AimWatch, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """A legacy object from its informer cache (else the API server); None when it does not exist."""
        informer = cluster.legacy.kinds[kind]
        found = await live_object(cluster.client, informer.resource, informer.cache, namespace, name)
        return cast("dict[str, Any] | None", found)  # caches and the client hold plain dicts

    async def write_status(
        self,
        cluster: AimWatch,
        obj: Mapping[str, Any],
        resolution: Resolution,
        rolled: LegacyStatus,
        fields: Mapping[str, Any] | None = None,
    ) -> None:
        now = timestamps.now()

        def desired(live: Mapping[str, Any]) -> dict[str, Any] | None:
            current = dict(live.get("status") or {})
            status = dict(current, status=rolled.status)
            for key, value in (fields or {}).items():
                if value is None:
                    status.pop(key, None)
                else:
                    status[key] = value
            if resolution.resolved_ref is not None:
                status["resolvedRuntimeConfig"] = dict(resolution.resolved_ref)
            else:
                status.pop("resolvedRuntimeConfig", None)
            previous = list(current.get("conditions") or [])
            status["conditions"] = stamp_all(with_recovery(list(rolled.conditions), previous), previous, now)
            generation = (live.get("metadata") or {}).get("generation")
            if generation is not None:
                status["observedGeneration"] = generation
            return None if status == current else status

        if await self.write_desired_status(cluster, obj, desired):
            self._note_failure(cluster, obj, rolled)

    @staticmethod
    def _note_failure(cluster: AimWatch, obj: Mapping[str, Any], rolled: LegacyStatus) -> None:
        """One Warning event when the status turns Failed, NotAvailable or Degraded (a missing runtime config has
        its own event, on every reconcile)."""
        before = (obj.get("status") or {}).get("status")
        if rolled.status not in ERROR_STATES or rolled.status == before:
            return
        ready = next(c for c in rolled.conditions if c["type"] == READY)
        if ready["reason"] == "ReferenceNotFound" and ready["message"].startswith("RuntimeConfig "):
            return
        cluster.record_event(obj, "Warning", ready["reason"], ready["message"])
