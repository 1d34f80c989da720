"""Model caching on the v1alpha2 path (docs/aim-resources.md): AIMService → AIMProfileCache → AIMArtifacts → PVC and
download Job, and the InferenceService mounting the Ready artifacts.

- **An AIMService's profile** (only looked up when `spec.caching.enabled`): the profile named by the service's
  annotation `aim.eai.amd.com/profile` when it has one, else the first by name of the profiles of its model
  (`spec.model.name`): the AIMProfiles in the service's namespace whose `spec.modelName` is that name, else the
  AIMClusterProfiles whose `spec.modelName` is. A service naming its model by image has no profile (nothing cached).
  The service applies its dedicated AIMProfileCache (`render_profile_cache`) and mounts the cache's Ready artifacts
  read-only into the InferenceService (`mount_artifacts`); the profile's `containerEnv` / `engineEnv` reach the
  inference container.
- **AIMProfileCache** (`reconcile_profile_cache`): its profile (`spec.profileName`, `spec.profileScope`) when it
  exists; applies one AIMArtifact per model source (`render_artifacts`); status from the live artifacts
  (`profile_cache_status`).
- **AIMArtifact** (`reconcile_artifact`): its namespace's status-updater RoleBinding when missing
  (`ensure_status_updater`: the downloader patches the artifact's `status.progress`); while neither `spec.size`
  nor a discovered size is known, its check-size Job (`render_check_size_job`), whose Succeeded pod's termination
  message gives `status.discoveredSizeBytes`; then
  its PVC (`render_artifact_pvc`; a refused change to a bound claim is a Warning event) and, while the artifact is
  not Ready (`download_job_due`), its download Job (`render_download_job`, env from the artifact, its profile, the
  resolved config and the operator defaults); status from the Jobs, their pods (and a pending pod's Events,
  `pending_pod_events`) and the claim (`artifact_status`),
  an infrastructure error's grace period and `DependenciesReachable` laid over it (`reachability`);
  one event when it turns Failed, Degraded or Ready (`note_artifact_transition`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.aim.consumers_watch import CACHE_INDEX, MODEL_NAME_INDEX
from omectl.controller.aim.reachability import with_reachability
from omectl.controller.runtime.apply import apply_render
from omectl.core.aim.artifact_status_updater import STATUS_UPDATER, render_status_updater_binding
from omectl.core.aim.artifacts import (
    FAILED,
    READY,
    artifact_status,
    check_size_due,
    check_size_job_name,
    download_job_due,
    download_job_name,
    pvc_name,
    render_artifact_pvc,
    render_check_size_job,
    render_download_job,
)
from omectl.core.aim.caches import caching_enabled, profile_cache_name, profile_cache_status, render_artifacts
from omectl.core.aim.consumers import (
    ARTIFACT,
    CLUSTER_PROFILE,
    PROFILE,
    SCOPE_CLUSTER,
    spec_of,
    text,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.predictor_pods import EventsOf, pending_pods
from omectl.core.aim.reachability import DEGRADED
from omectl.core.jsonish import as_mapping
from omectl.kube.field_managers import FIELD_MANAGER
from omectl.kube.resources import EVENTS, ROLE_BINDINGS

if TYPE_CHECKING:
    from omectl.controller.aim.consumers import AimConsumerReconciler
    from omectl.controller.aim.watch import AimWatch

PROFILE_ANNOTATION: Final = "aim.eai.amd.com/profile"
"""On an AIMService with caching: the AIMProfile (in its namespace) or AIMClusterProfile it caches."""
PVC_KIND: Final = "PersistentVolumeClaim"


# --- the AIMService side -----------------------------------------------------------------------------------------


def service_profile(aim: AimWatch, service: Mapping[str, Any]) -> dict[str, Any] | None:
    """The profile an AIMService with caching caches (module docstring), with its kind; None without caching or
    when no profile exists (yet)."""
    if not caching_enabled(service):
        return None
    consumers = aim.consumers
    namespace = namespace_of(service)
    profiles, cluster_profiles = consumers.kinds[PROFILE].cache, consumers.kinds[CLUSTER_PROFILE].cache
    pinned = text(((service.get("metadata") or {}).get("annotations") or {}).get(PROFILE_ANNOTATION))
    if pinned is not None:
        found = profiles.get(namespace, pinned)
        if found is not None:
            return dict(found, kind=PROFILE)
        found = cluster_profiles.get("", pinned)
        return dict(found, kind=CLUSTER_PROFILE) if found is not None else None
    model = text(as_mapping(spec_of(service).get("model")).get("name"))
    if model is None:
        return None
    own = sorted((p for p in profiles.by_index(MODEL_NAME_INDEX, model) if namespace_of(p) == namespace), key=name_of)
    if own:
        return dict(own[0], kind=PROFILE)
    shared = sorted(cluster_profiles.by_index(MODEL_NAME_INDEX, model), key=name_of)
    return dict(shared[0], kind=CLUSTER_PROFILE) if shared else None


def cache_artifacts(aim: AimWatch, service: Mapping[str, Any], profile: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The live AIMArtifacts of the service's cache for `profile`."""
    cache = profile_cache_name(service, profile)
    index = f"{namespace_of(service)}/{cache}"
    return list(aim.consumers.kinds[ARTIFACT].cache.by_index(CACHE_INDEX, index))


# --- AIMProfileCache ---------------------------------------------------------------------------------------------


async def profile_of(
    reconciler: AimConsumerReconciler, cluster: AimWatch, obj: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The AIMProfile / AIMClusterProfile an AIMProfileCache or AIMArtifact names, with its kind; None when it names
    none or it does not exist."""
    spec = spec_of(obj)
    name = text(spec.get("profileName"))
    if name is None:
        return None
    kind = CLUSTER_PROFILE if spec.get("profileScope") == SCOPE_CLUSTER else PROFILE
    found = await reconciler.live(cluster, kind, namespace_of(obj), name)
    return dict(found, kind=kind) if found is not None else None


async def reconcile_profile_cache(
    reconciler: AimConsumerReconciler, cluster: AimWatch, cache: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    profile = await profile_of(reconciler, cluster, cache)
    rendered = render_artifacts(cache, profile, config)
    live: dict[str, Mapping[str, Any]] = {}
    for artifact in rendered:
        if await _replaced(reconciler, cluster, artifact):
            continue  # Pending until the old artifact is gone; its deletion brings the cache back here
        applied = await reconciler.apply(cluster, cache, artifact, config)
        if applied is not None:
            live[name_of(artifact)] = applied
    return profile_cache_status(rendered, live)


async def _replaced(reconciler: AimConsumerReconciler, cluster: AimWatch, artifact: Mapping[str, Any]) -> bool:
    """Whether the live artifact of this name holds other files (another `spec.sourceUri`, which is immutable:
    applying the new one would be refused on every retry) or is going away; the old one is deleted, to be made
    again with the new source once it is gone."""
    existing = await reconciler.live(cluster, ARTIFACT, namespace_of(artifact), name_of(artifact))
    if existing is None:
        return False
    if (existing.get("metadata") or {}).get("deletionTimestamp"):
        return True
    if text(spec_of(existing).get("sourceUri")) == text(spec_of(artifact).get("sourceUri")):
        return False
    await reconciler.delete(cluster, ARTIFACT, namespace_of(artifact), name_of(artifact))
    return True


# --- AIMArtifact -------------------------------------------------------------------------------------------------


async def reconcile_artifact(
    reconciler: AimConsumerReconciler, cluster: AimWatch, artifact: dict[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    namespace = namespace_of(artifact)
    live_status = as_mapping(artifact.get("status"))
    await ensure_status_updater(reconciler, cluster, artifact)
    if check_size_due(artifact):
        profile = await profile_of(reconciler, cluster, artifact)
        rendered = render_check_size_job(artifact, config, profile)
        existed = await reconciler.live(cluster, "Job", namespace, check_size_job_name(artifact)) is not None
        check_job = await reconciler.apply_job(cluster, artifact, rendered, config)
        # upstream looks at a Job's pods when the Job was there as the reconcile began
        check_pods = job_pods(cluster, namespace, check_size_job_name(artifact)) if existed else None
        check_events = await pending_pod_events(cluster, namespace, check_pods or ())
        sized = artifact_status(
            artifact, None, None, check_job=check_job, check_pods=check_pods, check_pod_events=check_events
        )
        if "discoveredSizeBytes" not in sized:
            return with_reachability(live_status, sized, reconciler.degradation_threshold, check_pods=check_pods or ())
        # the size is known now: the PVC and the download Job go by it in this same pass
        artifact = dict(artifact, status={**(artifact.get("status") or {}), **sized})
    rendered_pvc = render_artifact_pvc(artifact, config)
    pvc = None
    if rendered_pvc is not None:
        pvc = await reconciler.apply(cluster, artifact, rendered_pvc, config, tolerate_invalid=True)
        if pvc is None:
            pvc = await reconciler.live(cluster, PVC_KIND, namespace, pvc_name(artifact))
    job = await reconciler.live(cluster, "Job", namespace, download_job_name(artifact))
    pods = job_pods(cluster, namespace, download_job_name(artifact)) if job is not None else None
    if (job is not None or download_job_due(artifact)) and text(spec_of(artifact).get("sourceUri")) is not None:
        # created while the artifact is not Ready; an existing one (until its TTL) keeps its labels up to date
        profile = await profile_of(reconciler, cluster, artifact)
        job = await reconciler.apply_job(cluster, artifact, render_download_job(artifact, config, profile), config)
    events = await pending_pod_events(cluster, namespace, pods or ())
    own = artifact_status(artifact, job, pvc, pods=pods, pod_events=events)
    return with_reachability(live_status, own, reconciler.degradation_threshold, pvc=pvc, pods=pods or ())


async def ensure_status_updater(
    reconciler: AimConsumerReconciler, cluster: AimWatch, artifact: Mapping[str, Any]
) -> None:
    """The namespace's status-updater RoleBinding (`render_status_updater_binding`), created when missing, as
    upstream does: shared by the namespace's artifacts, it has no owner, takes no propagated labels and is never
    updated."""
    if await reconciler.live(cluster, "RoleBinding", namespace_of(artifact), STATUS_UPDATER) is not None:
        return
    binding = render_status_updater_binding(artifact)
    _, wrote = await apply_render(cluster.client, ROLE_BINDINGS, binding, None, field_manager=FIELD_MANAGER)
    reconciler.writes += wrote


def job_pods(cluster: AimWatch, namespace: str, job: str) -> list[dict[str, Any]]:
    """The pods of an artifact's Job, from the pod informer (the Job controller labels them `job-name`)."""
    return [
        dict(pod)
        for pod in cluster.consumers.pods.cache.list(namespace)
        if ((pod.get("metadata") or {}).get("labels") or {}).get("job-name") == job
    ]


async def pending_pod_events(cluster: AimWatch, namespace: str, pods: Sequence[Mapping[str, Any]]) -> EventsOf:
    """The Events of the pending ones of a Job's `pods` (listed by `involvedObject.name` and `.uid`, as upstream
    lists them to tell a pod waiting to be scheduled or mounted), looked up by pod."""
    events: dict[str, list[dict[str, Any]]] = {}
    for pod in pending_pods(pods):
        meta = as_mapping(pod.get("metadata"))
        selector = f"involvedObject.name={meta.get('name')},involvedObject.uid={meta.get('uid')}"
        listed = await cluster.client.list(EVENTS, namespace, field_selector=selector)
        events[str(meta.get("uid"))] = [e for e in listed.get("items") or [] if isinstance(e, dict)]
    return lambda pod: events.get(str(as_mapping(pod.get("metadata")).get("uid")), [])


def note_artifact_transition(
    cluster: AimWatch, artifact: Mapping[str, Any], before: Any, own: Mapping[str, Any]
) -> None:
    """One event when the artifact's status turns Failed or Degraded (Warning, its `Ready` reason and message:
    upstream's `AuthError`, `InvalidSpec`, `StorageFull`, ... with the log line, `PvcLost`) or Ready (Normal
    `Verified`), as upstream's condition transitions record them. `before` is the live `status.status` the write
    replaced."""
    after = own.get("status")
    if after == before:
        return
    if after in (FAILED, DEGRADED):
        ready = next((c for c in own.get("conditions") or () if c.get("type") == "Ready"), None)
        if ready is not None:
            cluster.record_event(dict(artifact), "Warning", str(ready["reason"]), str(ready["message"]))
    elif after == READY:
        cluster.record_event(dict(artifact), "Normal", "Verified", "Download and verification complete")
