"""What one cluster watches for upstream's legacy template path (docs/aim-resources.md, "The legacy template path"),
and which watch events become its reconciles. Held by `AimWatch.legacy`; every informer is optional (a cluster
without the legacy CRDs counts as synced and empty).

- AIMServiceTemplates, AIMClusterServiceTemplates and AIMTemplateCaches (work key kind `aim.eai.amd.com/<Kind>`),
  each indexed by effective runtime-config name. A create, or an update of the spec, labels or annotations, queues
  the object itself; our own status writes do not. A runtime config change queues the ones it reaches
  (`AimWatch._config_handler`, through `consumers_named`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.runtime.queue import Lane, WorkKey
from omectl.core.aim.legacy.kinds import CLUSTER_SERVICE_TEMPLATE, SERVICE_TEMPLATE, TEMPLATE_CACHE
from omectl.core.aim.resolution import effective_config_name
from omectl.kube.informer import Informer
from omectl.kube.resources import (
    AIM_CLUSTER_SERVICE_TEMPLATES,
    AIM_SERVICE_TEMPLATES,
    AIM_TEMPLATE_CACHES,
    ResourceRef,
)
from omectl.tracing.spans import object_event_context

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

KEY_PREFIX: Final = "aim.eai.amd.com/"
LEGACY_RESOURCES: Final[Mapping[str, ResourceRef]] = {
    SERVICE_TEMPLATE: AIM_SERVICE_TEMPLATES,
    CLUSTER_SERVICE_TEMPLATE: AIM_CLUSTER_SERVICE_TEMPLATES,
    TEMPLATE_CACHE: AIM_TEMPLATE_CACHES,
}
"""The legacy kinds this module watches, by kind."""
LEGACY_KEYS: Final[Mapping[str, str]] = {f"{KEY_PREFIX}{kind}": kind for kind in LEGACY_RESOURCES}
"""Work key kind (`aim.eai.amd.com/<Kind>`) → kind."""
CONFIG_NAME_INDEX: Final = "aim.eai.amd.com/runtime-config-name"


def work_kind(kind: str) -> str:
    return f"{KEY_PREFIX}{kind}"


def _metadata(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    meta = (obj or {}).get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def _self_relevant_change(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> bool:
    if old is None:
        return True
    meta, old_meta = _metadata(obj), _metadata(old)
    return any(meta.get(k) != old_meta.get(k) for k in ("generation", "labels", "annotations"))


class LegacyWatch:
    """The informers of the legacy kinds in one cluster."""

    def __init__(self, watch: AimWatch) -> None:
        self.watch = watch
        self.cluster = watch.cluster
        client = self.cluster.client
        self.kinds: dict[str, Informer] = {}
        for kind, resource in LEGACY_RESOURCES.items():
            informer = Informer(client, resource, handlers=[self._self_handler(kind)], optional=True)
            informer.cache.add_index(CONFIG_NAME_INDEX, lambda obj: [effective_config_name(obj)])
            self.kinds[kind] = informer

    @property
    def informers(self) -> list[Informer]:
        return list(self.kinds.values())

    def consumers_named(self, config_name: str) -> list[tuple[str, dict[str, Any]]]:
        """`(kind, object)` of every legacy object whose effective runtime-config name is `config_name`."""
        return [
            (kind, obj)
            for kind, informer in self.kinds.items()
            for obj in informer.cache.by_index(CONFIG_NAME_INDEX, config_name)
        ]

    def enqueue(self, kind: str, namespace: str, name: str, trigger: Any, lane: Lane) -> None:
        key = WorkKey(self.cluster.name, work_kind(kind), namespace, name)
        self.cluster.enqueue(key, lane=lane, trigger=trigger)

    def _trigger(self, kind: str, obj: Mapping[str, Any]) -> Any:
        return object_event_context(self.cluster.name, kind, obj)

    def _self_handler(self, kind: str) -> Any:
        def on_event(event_type: str, obj: dict[str, Any], old: dict[str, Any] | None, initial: bool = False) -> None:
            if event_type == "DELETED":
                return  # owner references let the API server collect the children
            if event_type == "MODIFIED" and not _self_relevant_change(obj, old):
                return  # our own status write
            meta = _metadata(obj)
            lane = Lane.RESYNC if initial else Lane.EDIT
            self.enqueue(kind, str(meta.get("namespace") or ""), str(meta["name"]), self._trigger(kind, obj), lane)

        return on_event
