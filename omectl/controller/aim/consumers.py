"""The reconciler of the AIM v1alpha2 consumers besides AIMService (docs/aim-resources.md): AIMModel,
AIMClusterModel, AIMProfile, AIMClusterProfile, AIMProfileSet, AIMProfileCache, AIMArtifact, AIMClusterModelSource.

One reconcile (work key kind `aim.eai.amd.com/<Kind>`, see `aim_consumers_watch`):

1. Resolve the object's runtime config from the informer caches (`resolve`; a cluster-scoped kind looks the
   namespaced config up in the operator namespace, `AIM_SYSTEM_NAMESPACE`).
2. An explicit `runtimeConfigName` that does not exist: status `Failed` with `RuntimeConfigReady=False`,
   `ConfigValid=False` and `Ready=False` (`ReferenceNotFound`), a Warning event, nothing applied, `RetryLater`
   (backoff; the config's creation queues the object at once). The implicit `default` missing: one Normal
   `DefaultConfigNotFound` event on the first reconcile that finds it missing.
3. (An AIMArtifact a deleted template cache left not Ready is deleted instead:
   `legacy_caches.delete_abandoned_artifact`.) The kind's own step (`aim_caching`, `aim_models`) applies its
   children (a v1alpha1 model's AIMServiceTemplates too), each server-side applied with the hash of its render
   (`omectl.io/render-hash`: an unchanged render makes no write) and with the parent's labels propagated
   under the parent's own config against the live child (keys propagated before are read from its
   `aim.eai.amd.com/propagated-labels` annotation, so a dropped label leaves the child; the child's own labels are
   never touched). A Job is created whole, labels on its metadata and pod template; an existing Job's template is
   immutable, so later label changes reach its metadata only (a merge patch of labels and annotations).
4. Status (`consumer_status` over the kind's own part): `status`, kind fields, conditions (each keeps its
   `lastTransitionTime` while its status is unchanged), `resolvedRuntimeConfig`, `observedGeneration`. An unchanged
   status sends no write. After a write, a model written in v1alpha1 records upstream's events for its conditions'
   transitions (`aim_models.record_status_events`) and an artifact whose status turns Failed or Ready gets one event
   (`aim_caching.note_artifact_transition`). A step that raises `RetryAfterStatus` (a v1alpha1 model whose registry
   failed) has its status written, then the object is retried with the work queue's backoff (`RetryLater`), as has
   an artifact whose component has an infrastructure error (its grace period; `aim_caching` and `reachability`).
   An object whose child write failed with a server error, a throttle or no answer has its previous status written
   with `DependenciesReachable` False (`Failed to apply resources: ...`), and the error is raised on (the queue's
   backoff); a later status with no such error has it True / `Reachable` (`reachability.with_recovery`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, NamedTuple, cast

from omectl.controller.aim import caching as aim_caching
from omectl.controller.aim import models as aim_models
from omectl.controller.aim.config_consumer import ConfigConsumerReconciler
from omectl.controller.aim.consumers_watch import CONSUMER_KEYS, CONSUMER_RESOURCES
from omectl.controller.aim.legacy_caches import delete_abandoned_artifact
from omectl.controller.aim.model_templates import RetryAfterStatus
from omectl.controller.aim.reachability import is_write_failure, with_recovery, write_failed
from omectl.controller.aim.service import apply_propagated, with_propagated_labels
from omectl.controller.aim.watch import AimWatch
from omectl.controller.runtime.apply import RENDER_HASH, live_object, object_hash
from omectl.controller.runtime.queue import RetryLater
from omectl.core.aim.artifacts import DOWNLOADING
from omectl.core.aim.consumers import AIM_V1ALPHA2, ARTIFACT, consumer_status
from omectl.core.aim.labels import PROPAGATED_LABELS_ANNOTATION, read_propagated_keys
from omectl.core.aim.legacy.kinds import CLUSTER_SERVICE_TEMPLATE, SERVICE_TEMPLATE
from omectl.core.aim.reachability import DEGRADATION_THRESHOLD_S
from omectl.core.aim.resolution import Resolution
from omectl.core.conditions import stamp_all
from omectl.kube import timestamps
from omectl.kube.errors import NotFound
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import (
    AIM_CLUSTER_SERVICE_TEMPLATES,
    AIM_SERVICE_TEMPLATES,
    CONFIG_MAPS,
    JOBS,
    PERSISTENT_VOLUME_CLAIMS,
    ROLE_BINDINGS,
    ResourceRef,
)
from omectl.oci.client import RegistryClient

log = logging.getLogger(__name__)

Step = Callable[["AimConsumerReconciler", AimWatch, dict[str, Any], Mapping[str, Any]], Awaitable[dict[str, Any]]]
"""`(reconciler, cluster, object, config)` → the kind's own status part."""

STEPS: Final[Mapping[str, Step]] = {
    "AIMModel": aim_models.reconcile_model,
    "AIMClusterModel": aim_models.reconcile_model,
    "AIMProfile": aim_models.reconcile_profile,
    "AIMClusterProfile": aim_models.reconcile_profile,
    "AIMProfileSet": aim_models.reconcile_profile_set,
    "AIMClusterModelSource": aim_models.reconcile_model_source,
    "AIMProfileCache": aim_caching.reconcile_profile_cache,
    "AIMArtifact": aim_caching.reconcile_artifact,
}
CHILD_RESOURCES: Final[Mapping[str, ResourceRef]] = {
    **CONSUMER_RESOURCES,
    "Job": JOBS,
    "PersistentVolumeClaim": PERSISTENT_VOLUME_CLAIMS,
    "ConfigMap": CONFIG_MAPS,
    "RoleBinding": ROLE_BINDINGS,
    SERVICE_TEMPLATE: AIM_SERVICE_TEMPLATES,
    CLUSTER_SERVICE_TEMPLATE: AIM_CLUSTER_SERVICE_TEMPLATES,
}
"""Every kind a consumer reads or applies, by kind."""


class StatusWritten(NamedTuple):
    """A status write `AimConsumerReconciler.write_status` sent."""

    status: dict[str, Any]
    """The status written."""
    replaced: Any
    """The live `status.status` it replaced."""


class AimConsumerReconciler(ConfigConsumerReconciler):
    """Reconciles the v1alpha2 consumer kinds (module docstring): the work keys of `CONSUMER_KEYS`, registered for it
    in `omectl.controller.app`."""

    def __init__(
        self,
        *,
        operator_namespace: str,
        image_registry: RegistryClient | None = None,
        degradation_threshold: float = DEGRADATION_THRESHOLD_S,
    ) -> None:
        super().__init__(
            operator_namespace=operator_namespace,
            keys=CONSUMER_KEYS,
            resources=CONSUMER_RESOURCES,
            api_version=AIM_V1ALPHA2,
        )
        self.image_registry = image_registry or RegistryClient()
        """Reads a v1alpha1 model's image labels (`omectl.controller.aim.image_metadata`)."""
        self.degradation_threshold = degradation_threshold
        """Seconds an artifact's infrastructure error may last before a Ready artifact degrades (upstream's 10 s)."""

    async def write_refused(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, previous: list[Any]
    ) -> None:
        await self.write_status(cluster, obj, resolution, {"status": "Failed"})

    async def reconcile_kind(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, previous: list[Any]
    ) -> None:
        if obj["kind"] == ARTIFACT and await delete_abandoned_artifact(cluster, obj):
            self.writes += 1
            return
        try:
            own = await STEPS[obj["kind"]](self, cluster, obj, resolution.config)
        except RetryAfterStatus as retry:
            await self.write_status_and_note(cluster, obj, resolution, retry.own)
            raise RetryLater(str(retry)) from None
        except Exception as error:
            if not is_write_failure(error):
                raise
            await self.write_status_and_note(cluster, obj, resolution, write_failed(obj, error))
            raise  # retried with the queue's backoff, a server's Retry-After honoured, as before
        await self.write_status_and_note(cluster, obj, resolution, own)

    async def write_status_and_note(
        self, cluster: AimWatch, obj: dict[str, Any], resolution: Resolution, own: Mapping[str, Any]
    ) -> None:
        """Write the status; when a write was sent, the events its transitions call for."""
        written = await self.write_status(cluster, obj, resolution, own)
        if written is None:
            return
        aim_models.record_status_events(cluster, obj, written.status)
        if obj["kind"] == ARTIFACT:
            aim_caching.note_artifact_transition(cluster, obj, written.replaced, own)

    # --- children ----------------------------------------------------------------------------------------

    async def live(self, cluster: AimWatch, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        """The child from the informer cache, else from the API server; None when it does not exist."""
        cache = cluster.consumers.cache(kind)
        if cache is None and kind in cluster.legacy.kinds:
            cache = cluster.legacy.kinds[kind].cache  # a model's templates
        found = await live_object(cluster.client, CHILD_RESOURCES[kind], cache, namespace, name)
        return cast("dict[str, Any] | None", found)  # caches and the client hold plain dicts

    async def apply(
        self,
        cluster: AimWatch,
        parent: Mapping[str, Any],
        rendered: dict[str, Any],
        config: Mapping[str, Any],
        *,
        tolerate_invalid: bool = False,
    ) -> dict[str, Any] | None:
        """Server-side apply one child with the parent's labels propagated against the live child, unless the
        cluster holds this render; returns the live (or written) object. A Job goes to `apply_job`."""
        if rendered["kind"] == "Job":
            return await self.apply_job(cluster, parent, rendered, config)
        resource = CHILD_RESOURCES[rendered["kind"]]
        meta = rendered["metadata"]
        namespace = str(meta.get("namespace") or "")
        live = await self.live(cluster, rendered["kind"], namespace, meta["name"])
        applied, wrote = await apply_propagated(
            cluster, parent, rendered, live, config, resource, tolerate_invalid=tolerate_invalid
        )
        self.writes += wrote
        return None if applied is None else dict(applied)

    async def apply_job(
        self, cluster: AimWatch, parent: Mapping[str, Any], rendered: dict[str, Any], config: Mapping[str, Any]
    ) -> dict[str, Any] | None:
        """A Job: created whole (labels propagated on the Job and its pod template); an existing one only has its
        metadata labels and annotations brought up to date (its template is immutable)."""
        meta = rendered["metadata"]
        namespace = str(meta.get("namespace") or "")
        live = await self.live(cluster, "Job", namespace, meta["name"])
        obj = with_propagated_labels(parent, rendered, live, config)
        spec = dict(obj.get("spec") or {})
        template = with_propagated_labels(parent, dict(spec.get("template") or {}), None, config)
        obj["spec"] = dict(spec, template=template)
        digest = object_hash(obj)
        annotations = {**_annotations(obj), RENDER_HASH: digest}
        if live is None:
            body = dict(obj, metadata=dict(obj["metadata"], annotations=annotations))
            written: dict[str, Any] = await cluster.client.patch(
                JOBS,
                meta["name"],
                body,
                namespace=namespace,
                patch_type="apply",
                field_manager=FIELD_MANAGER,
                force=True,
            )
            self.writes += 1
            return written
        live_annotations = live["metadata"].get("annotations") or {}
        if live_annotations.get(RENDER_HASH) == digest:
            return live
        labels: dict[str, Any] = dict(obj["metadata"].get("labels") or {})
        for key in read_propagated_keys(live):
            labels.setdefault(key, None)  # propagated before, not now: removed
        patch_annotations: dict[str, Any] = dict(annotations)
        if PROPAGATED_LABELS_ANNOTATION in live_annotations and PROPAGATED_LABELS_ANNOTATION not in annotations:
            patch_annotations[PROPAGATED_LABELS_ANNOTATION] = None
        written = await cluster.client.patch(
            JOBS,
            meta["name"],
            {"metadata": {"labels": labels, "annotations": patch_annotations}},
            namespace=namespace,
            patch_type="merge",
        )
        self.writes += 1
        return written

    async def delete(self, cluster: AimWatch, kind: str, namespace: str, name: str) -> None:
        resource = CHILD_RESOURCES[kind]
        try:
            await cluster.client.delete(resource, name, namespace=namespace or None, propagation_policy="Background")
            self.writes += 1
        except NotFound:
            pass

    # --- status ------------------------------------------------------------------------------------------

    async def write_status(
        self, cluster: AimWatch, obj: Mapping[str, Any], resolution: Resolution, own: Mapping[str, Any]
    ) -> StatusWritten | None:
        """Write the object's status; what was written and what it replaced, None when it was already so."""
        now = timestamps.now()
        written: StatusWritten | None = None

        def desired(live: Mapping[str, Any]) -> dict[str, Any] | None:
            nonlocal written
            current = dict(live.get("status") or {})
            previous = list(current.get("conditions") or [])
            status = consumer_status(
                resolution,
                own,
                generation=(live.get("metadata") or {}).get("generation"),
                previous_conditions=previous,
            )
            status["conditions"] = stamp_all(with_recovery(status["conditions"], previous), previous, now)
            if "progress" in current and "progress" not in status and status.get("status") == DOWNLOADING:
                status["progress"] = current["progress"]  # the downloader's, newer than the cache's
            written = None if status == current else StatusWritten(status, current.get("status"))
            return None if written is None else written.status

        return written if await self.write_desired_status(cluster, obj, desired) else None


def _annotations(obj: Mapping[str, Any]) -> dict[str, Any]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})
