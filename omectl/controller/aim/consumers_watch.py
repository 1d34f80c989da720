"""What one cluster watches for the AIM v1alpha2 consumers besides AIMService (docs/aim-resources.md), and which
watch events become their reconciles. Held by `AimWatch.consumers`; every informer is optional (a cluster without
the AIM CRDs counts as synced and empty).

- The eight kinds (AIMModel, AIMClusterModel, AIMProfile, AIMClusterProfile, AIMProfileSet, AIMProfileCache,
  AIMArtifact, AIMClusterModelSource), each indexed by effective runtime-config name. A create, or an update of the
  spec, labels or annotations, queues the object itself (work key kind `aim.eai.amd.com/<Kind>`); our own status
  writes do not. A runtime config change queues the consumers it reaches (`AimWatch._config_handler`).
- Children: a status change or a deletion of a child queues its controller owner (an AIMArtifact's PVC and download
  Job → the artifact; a discovery Job → the model; an artifact → its cache; a cache → its AIMService; a profile,
  profile set or cluster model → its model, set or source, which re-applies it). Jobs are watched by the label
  `aim.eai.amd.com/component`, PVCs by `aim.eai.amd.com/artifact`. A discovery result ConfigMap (label
  `aim.eai.amd.com/component=discovery`) queues its model, found by its `aim.eai.amd.com/model` (namespace) or
  `aim.eai.amd.com/cluster-model` label, whenever it appears, changes or goes. The pods of an artifact's Jobs
  (label `aim.eai.amd.com/artifact`, which the Jobs' pod templates carry) queue the artifact when they appear or
  their phase changes: a failed pod says why, a check-size pod's termination message says the size.
- The artifacts' status-updater RoleBinding (`aim-engine-artifact-status-updater`, watched by that name as
  upstream's controller watches it): its deletion queues the namespace's artifacts, which create it again.
- An artifact's own status write by its downloader (`status.progress`, upstream's progress monitor) queues it: the
  controller's `DownloadComplete` follows the percentage.
- References that are not ownership: a profile's create, change or delete queues the caches and artifacts that
  name it (`spec.profileName` / `spec.profileScope`) and the AIMServices with caching whose model it belongs to
  (`spec.model.name` = the profile's `spec.modelName`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.aim.kind_watch import KindWatch, metadata, self_relevant_change, work_keys
from omectl.controller.runtime.apply import child_status_changed
from omectl.controller.runtime.queue import Lane
from omectl.core.aim.artifact_status_updater import STATUS_UPDATER
from omectl.core.aim.consumers import (
    AIM_COMPONENT_LABEL,
    ARTIFACT,
    ARTIFACT_LABEL,
    CLUSTER_MODEL,
    CLUSTER_MODEL_LABEL,
    CLUSTER_MODEL_SOURCE,
    CLUSTER_PROFILE,
    MODEL,
    MODEL_LABEL,
    PROFILE,
    PROFILE_CACHE,
    PROFILE_SET,
    SCOPE_CLUSTER,
    SCOPE_NAMESPACE,
)
from omectl.core.aim.discovery import DISCOVERY_COMPONENT
from omectl.core.aim.meta import AIM_SERVICE_KIND
from omectl.kube.cache import ObjectCache
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    AIM_ARTIFACTS,
    AIM_CLUSTER_MODEL_SOURCES,
    AIM_CLUSTER_MODELS,
    AIM_CLUSTER_PROFILES,
    AIM_MODELS,
    AIM_PROFILE_CACHES,
    AIM_PROFILE_SETS,
    AIM_PROFILES,
    CONFIG_MAPS,
    JOBS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    ROLE_BINDINGS,
    ResourceRef,
)

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

CONSUMER_RESOURCES: Final[Mapping[str, ResourceRef]] = {
    MODEL: AIM_MODELS,
    CLUSTER_MODEL: AIM_CLUSTER_MODELS,
    PROFILE: AIM_PROFILES,
    CLUSTER_PROFILE: AIM_CLUSTER_PROFILES,
    PROFILE_SET: AIM_PROFILE_SETS,
    PROFILE_CACHE: AIM_PROFILE_CACHES,
    ARTIFACT: AIM_ARTIFACTS,
    CLUSTER_MODEL_SOURCE: AIM_CLUSTER_MODEL_SOURCES,
}
"""The v1alpha2 consumer kinds this module watches, by kind."""
CONSUMER_KEYS: Final[Mapping[str, str]] = work_keys(CONSUMER_RESOURCES)
"""Work key kind (`aim.eai.amd.com/<Kind>`) → kind."""
PROFILE_REF_INDEX: Final = "aim.eai.amd.com/profile-ref"
"""Caches and artifacts by `<scope>/<profileName>`."""
MODEL_NAME_INDEX: Final = "aim.eai.amd.com/model-name"
"""Profiles by `spec.modelName`."""
CACHE_INDEX: Final = "aim.eai.amd.com/profile-cache"
"""Artifacts by `<namespace>/<their cache's name>` (the `aim.eai.amd.com/profile-cache` label)."""


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (obj or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def profile_ref_index(obj: dict[str, Any]) -> list[str]:
    spec = _spec(obj)
    name = spec.get("profileName")
    if not isinstance(name, str) or not name:
        return []
    return [f"{spec.get('profileScope') or SCOPE_NAMESPACE}/{name}"]


def model_name_index(obj: dict[str, Any]) -> list[str]:
    name = _spec(obj).get("modelName")
    return [name] if isinstance(name, str) and name else []


def cache_index(obj: dict[str, Any]) -> list[str]:
    meta = metadata(obj)
    cache = (meta.get("labels") or {}).get("aim.eai.amd.com/profile-cache")
    return [f"{meta.get('namespace') or ''}/{cache}"] if cache else []


def controller_owner(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """`(kind, name)` of the object's controller owner reference."""
    for ref in metadata(obj).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("controller") and ref.get("kind") and ref.get("name"):
            return str(ref["kind"]), str(ref["name"])
    return None


def result_changed(event_type: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None, initial: bool) -> bool:
    """Whether a discovery result ConfigMap appeared, went or changed its data (its initial list queues nothing: every
    object that reads one is queued anyway)."""
    if initial:
        return False
    return not (event_type == "MODIFIED" and old is not None and old.get("data") == obj.get("data"))


class ConsumerWatch(KindWatch):
    """The informers of the v1alpha2 consumers and their children in one cluster."""

    def __init__(self, watch: AimWatch) -> None:
        super().__init__(watch, CONSUMER_RESOURCES)
        client = self.cluster.client
        for kind, informer in self.kinds.items():
            informer.add_handler(self._child_handler)
            if kind in (PROFILE, CLUSTER_PROFILE):
                informer.add_handler(self._profile_handler)
        for kind in (PROFILE_CACHE, ARTIFACT):
            self.kinds[kind].cache.add_index(PROFILE_REF_INDEX, profile_ref_index)
        for kind in (PROFILE, CLUSTER_PROFILE):
            self.kinds[kind].cache.add_index(MODEL_NAME_INDEX, model_name_index)
        self.kinds[ARTIFACT].cache.add_index(CACHE_INDEX, cache_index)
        self.jobs = Informer(
            client, JOBS, label_selector=AIM_COMPONENT_LABEL, handlers=[self._child_handler], optional=True
        )
        self.claims = Informer(
            client,
            PERSISTENT_VOLUME_CLAIMS,
            label_selector=ARTIFACT_LABEL,
            handlers=[self._child_handler],
            optional=True,
        )
        self.results = Informer(
            client,
            CONFIG_MAPS,
            label_selector=f"{AIM_COMPONENT_LABEL}={DISCOVERY_COMPONENT}",
            handlers=[self._result_handler],
            optional=True,
        )
        self.pods = Informer(client, PODS, label_selector=ARTIFACT_LABEL, handlers=[self._pod_handler], optional=True)
        self.status_updaters = Informer(
            client,
            ROLE_BINDINGS,
            field_selector=f"metadata.name={STATUS_UPDATER}",
            handlers=[self._status_updater_handler],
            optional=True,
        )

    @property
    def informers(self) -> list[Informer]:
        return [*self.kinds.values(), self.jobs, self.claims, self.results, self.pods, self.status_updaters]

    def status_relevant(self, kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
        """An artifact's downloader moved its progress (module docstring)."""
        if kind != ARTIFACT or old is None:
            return False
        return bool(_progress(obj) != _progress(old))

    def cache(self, kind: str) -> ObjectCache | None:
        """The cache of a consumer kind, or of a child kind (Job, artifact PVC, discovery ConfigMap)."""
        if kind in self.kinds:
            return self.kinds[kind].cache
        children = {
            "Job": self.jobs,
            "PersistentVolumeClaim": self.claims,
            "ConfigMap": self.results,
            "RoleBinding": self.status_updaters,
        }
        informer = children.get(kind)
        return informer.cache if informer is not None else None

    # --- handlers ----------------------------------------------------------------------------------------

    def _child_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if not child_status_changed(event_type, obj, old, initial):
            return
        owner = controller_owner(obj)
        if owner is None:
            return
        kind, name = owner
        namespace = str(metadata(obj).get("namespace") or "")
        trigger = self._trigger(str(obj.get("kind") or ""), obj)
        if kind == AIM_SERVICE_KIND:
            if self.watch.services.cache.get(namespace, name) is not None:
                self.watch.enqueue_service(namespace, name, trigger, Lane.FANOUT)
            return
        informer = self.kinds.get(kind)
        if informer is None:
            return
        owner_namespace = namespace if informer.resource.namespaced else ""
        if informer.cache.get(owner_namespace, name) is not None:
            self.enqueue(kind, owner_namespace, name, trigger, Lane.FANOUT)

    def _pod_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial or (event_type == "MODIFIED" and old is not None and _phase(obj) == _phase(old)):
            return
        meta = metadata(obj)
        artifact = (meta.get("labels") or {}).get(ARTIFACT_LABEL)
        namespace = str(meta.get("namespace") or "")
        if isinstance(artifact, str) and self.kinds[ARTIFACT].cache.get(namespace, artifact) is not None:
            self.enqueue(ARTIFACT, namespace, artifact, self._trigger("Pod", obj), Lane.FANOUT)

    def _status_updater_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial or event_type != "DELETED":
            return  # the artifacts create it before their download Jobs: only its deletion calls for them
        namespace = str(metadata(obj).get("namespace") or "")
        trigger = self._trigger("RoleBinding", obj)
        for artifact in self.kinds[ARTIFACT].cache.list(namespace):
            self.enqueue(ARTIFACT, namespace, str(metadata(artifact)["name"]), trigger, Lane.FANOUT)

    def _result_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if not result_changed(event_type, obj, old, initial):
            return
        meta = metadata(obj)
        labels = meta.get("labels") or {}
        trigger = self._trigger("ConfigMap", obj)
        if labels.get(CLUSTER_MODEL_LABEL):
            self.enqueue(CLUSTER_MODEL, "", str(labels[CLUSTER_MODEL_LABEL]), trigger, Lane.FANOUT)
        elif labels.get(MODEL_LABEL):
            self.enqueue(MODEL, str(meta.get("namespace") or ""), str(labels[MODEL_LABEL]), trigger, Lane.FANOUT)

    def _profile_handler(
        self, event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False
    ) -> None:
        if initial:
            return
        if event_type == "MODIFIED" and old is not None and not self_relevant_change(obj, old):
            return
        meta = metadata(obj)
        name = str(meta["name"])
        namespace = str(meta.get("namespace") or "")
        cluster_scoped = not namespace
        scope = SCOPE_CLUSTER if cluster_scoped else SCOPE_NAMESPACE
        trigger = self._trigger(str(obj.get("kind") or ""), obj)
        for kind in (PROFILE_CACHE, ARTIFACT):
            for ref in self.kinds[kind].cache.by_index(PROFILE_REF_INDEX, f"{scope}/{name}"):
                ref_meta = metadata(ref)
                if cluster_scoped or ref_meta.get("namespace") == namespace:
                    ref_ns = str(ref_meta.get("namespace") or "")
                    self.enqueue(kind, ref_ns, str(ref_meta["name"]), trigger, Lane.FANOUT)
        model = _spec(obj).get("modelName")
        if isinstance(model, str) and model:
            self.watch.enqueue_services_of_model(model, None if cluster_scoped else namespace, trigger)


def _progress(obj: Mapping[str, Any]) -> Any:
    return (obj.get("status") or {}).get("progress")


def _phase(obj: Mapping[str, Any]) -> Any:
    return (obj.get("status") or {}).get("phase")
