"""Informers by kind, each indexed by effective runtime-config name, with the handler every AIM kind reconciled on its
own shares: a create, or an update of the spec, labels or annotations, queues the object itself (work key kind
`aim.eai.amd.com/<Kind>`); our own status writes and deletions do not. The base of `consumers_watch.ConsumerWatch`
and `legacy_watch.LegacyWatch`, which add the handlers of their children and references.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.core.aim.resolution import effective_config_name
from omectl.kube.informer import Informer
from omectl.kube.resources import ResourceRef
from omectl.tracing.spans import object_event_context

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

KEY_PREFIX: Final = "aim.eai.amd.com/"
CONFIG_NAME_INDEX: Final = "aim.eai.amd.com/runtime-config-name"
"""Objects by effective runtime-config name (`default` when `spec.runtimeConfigName` is omitted)."""


def work_kind(kind: str) -> str:
    return f"{KEY_PREFIX}{kind}"


def work_keys(resources: Mapping[str, ResourceRef]) -> dict[str, str]:
    """Work key kind (`aim.eai.amd.com/<Kind>`) → kind."""
    return {work_kind(kind): kind for kind in resources}


def metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def config_name_index(obj: dict[str, Any]) -> list[str]:
    return [effective_config_name(obj)]


def self_relevant_change(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    """A change of the spec (generation), labels or annotations: what a user edits, not a status write."""
    if old is None:
        return True
    meta, old_meta = metadata(obj), metadata(old)
    return any(meta.get(k) != old_meta.get(k) for k in ("generation", "labels", "annotations"))


class KindWatch:
    """One informer per kind of `resources` in one cluster (`kinds`), each indexed by `CONFIG_NAME_INDEX` and queueing
    the object itself on a relevant change."""

    def __init__(self, watch: AimWatch, resources: Mapping[str, ResourceRef]) -> None:
        self.watch = watch  # the cluster's AimWatch
        self.cluster = watch.cluster
        self.kinds: dict[str, Informer] = {}
        for kind, resource in resources.items():
            informer = Informer(self.cluster.client, resource, handlers=[self._self_handler(kind)], optional=True)
            informer.cache.add_index(CONFIG_NAME_INDEX, config_name_index)
            self.kinds[kind] = informer

    def consumers_named(self, config_name: str) -> list[tuple[str, dict[str, Any]]]:
        """`(kind, object)` of every object whose effective runtime-config name is `config_name`."""
        return [
            (kind, obj)
            for kind, informer in self.kinds.items()
            for obj in informer.cache.by_index(CONFIG_NAME_INDEX, config_name)
        ]

    def enqueue(self, kind: str, namespace: str, name: str, trigger: Any, lane: Lane) -> None:
        key = WorkKey(self.cluster.name, work_kind(kind), namespace, name)
        self.cluster.enqueue(key, lane=lane, trigger=trigger)

    def status_relevant(self, kind: str, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
        """Whether a status-only change of an object of `kind` needs its reconcile (someone else wrote it)."""
        return False

    def _trigger(self, kind: str, obj: Mapping[str, Any]) -> Any:
        return object_event_context(self.cluster.name, kind, obj)

    def _self_handler(self, kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if event_type == "DELETED":
                return  # owner references let the API server collect the children
            changed = self_relevant_change(obj, old) or self.status_relevant(kind, obj, old)
            if event_type == "MODIFIED" and not changed:
                return  # our own status write
            meta = metadata(obj)
            lane = Lane.RESYNC if initial else Lane.EDIT
            self.enqueue(kind, str(meta.get("namespace") or ""), str(meta["name"]), self._trigger(kind, obj), lane)

        return on_event
