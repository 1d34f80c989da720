"""A template cache's reconcile step (AIMTemplateCache; docs/aim-resources.md, "The legacy template path"): the
decisions are `omectl.core.aim.legacy.template_caches`, this module reads what they need and applies what they render.

1. Its template (`template_refs`, `template_component`) from the template informers; missing, the cache fails.
2. For each model source (`cache_sources`), the best live AIMArtifact holding it (`match_artifacts`); a source none
   holds gets its artifact (`render_artifact`), created once, as upstream creates it: later changes of the cache's
   labels do not reach an artifact (a Shared one may serve other caches).
3. Status: `ArtifactsReady` (`NoCaches` without a template or sources), `status.artifacts`,
   `status.resolvedTemplateKind`.

Before all that, a cache an AIMService made that is not Ready when the service is deleted is deleted
(`delete_abandoned_cache`; `omectl.core.aim.legacy.service_caches.abandoned`): the service's deletion, seen by the
watch (`AimWatch.deleted_services`), queues them. A deletion no controller saw is caught up by the same reconcile,
which every cache gets when the controller starts: a cache omectl made for a service that is gone, and not Ready,
is deleted too (`service_caches.orphaned_cache`). A cache anyone else labelled with a service that does not exist
(yet: applied before it) is left alone.

A deleted cache's artifacts that were not Ready then (`LegacyWatch.abandoned_artifacts`, noted at the deletion) are
deleted by their own reconcile, before anything else (`delete_abandoned_artifact`), unless they turned Ready since.
A deletion no controller saw (it ran while none did) is caught up by the same reconcile, which every artifact gets
when the controller starts: an artifact omectl made for a cache that is gone, and not Ready, is deleted too
(`template_caches.orphaned`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from omectl.controller.aim.legacy_outcome import Outcome
from omectl.core.aim.legacy.kinds import ARTIFACT, TEMPLATE_CACHE
from omectl.core.aim.legacy.service_caches import abandoned, made_by, orphaned_cache
from omectl.core.aim.legacy.status import Component
from omectl.core.aim.legacy.template_caches import (
    artifacts_component,
    artifacts_status,
    cache_sources,
    match_artifacts,
    orphaned,
    render_artifact,
    template_component,
    template_refs,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.resolution import Resolution
from omectl.kube.errors import Conflict, NotFound
from omectl.kube.resources import AIM_ARTIFACTS, AIM_TEMPLATE_CACHES

if TYPE_CHECKING:
    from omectl.controller.aim.legacy import LegacyReconciler
    from omectl.controller.aim.watch import AimWatch


async def reconcile_template_cache(
    reconciler: LegacyReconciler, cluster: AimWatch, cache: dict[str, Any], resolution: Resolution
) -> Outcome:
    template, kind = None, None
    for ref_kind, namespace, name in template_refs(cache):
        found = cluster.legacy.kinds[ref_kind].cache.get(namespace, name)
        if found is not None:
            template, kind = dict(found, kind=ref_kind), ref_kind
            break
    components: list[Component] = [template_component(cache, template)]
    fields: dict[str, Any] = {"resolvedTemplateKind": kind}
    if template is None or kind is None:
        return Outcome((*components, artifacts_component([])), (), fields)
    sources = cache_sources(cache, template)
    live = cluster.consumers.kinds[ARTIFACT].cache.list(namespace_of(cache))
    chosen = match_artifacts(cache, sources, live)
    for index, (source, artifact) in enumerate(zip(sources, chosen, strict=True)):
        if artifact is None:
            rendered = render_artifact(cache, source, index, kind, resolution.config)
            await reconciler.children.apply(cluster, cache, rendered, resolution.config)
    components.append(artifacts_component(chosen))
    fields["artifacts"] = artifacts_status(sources, chosen)
    return Outcome(tuple(components), (), fields)


async def delete_abandoned_cache(cluster: AimWatch, cache: dict[str, Any]) -> bool:
    """Delete `cache` when the service that made it was deleted and it is not Ready (module docstring): seen deleted,
    or, for a deletion no controller saw, `orphaned_cache`; True when it is to be gone."""
    maker, namespace = made_by(cache), namespace_of(cache)
    deleted = (
        maker is not None
        and (namespace, maker) in cluster.deleted_services
        and cluster.services.cache.get(namespace, maker) is None
    )
    if not abandoned(cache, deleted):
        services = cluster.services
        if not (services.served and services.synced.is_set()):
            return False  # no service can be told gone
        if not orphaned_cache(cache, services.cache.list(namespace)):
            return False
    uid = str((cache.get("metadata") or {}).get("uid") or "")
    with contextlib.suppress(NotFound, Conflict):  # gone already, or another cache of that name since
        await cluster.client.delete(AIM_TEMPLATE_CACHES, name_of(cache), namespace, preconditions={"uid": uid})
    return True


async def delete_abandoned_artifact(cluster: AimWatch, artifact: dict[str, Any]) -> bool:
    """Delete `artifact` when a deleted template cache left it not Ready (module docstring): noted at the deletion,
    or, for a deletion no controller saw, `orphaned`; True when it is to be gone."""
    key = (namespace_of(artifact), name_of(artifact))
    uid = str((artifact.get("metadata") or {}).get("uid") or "")
    noted = cluster.legacy.abandoned_artifacts.pop(key, None)
    if noted is None or noted != uid:  # not noted, or another artifact of that name since
        caches = cluster.legacy.kinds[TEMPLATE_CACHE]
        if not (caches.served and caches.synced.is_set()):
            return False  # no template cache can be told gone
        if not orphaned(artifact, caches.cache.list(key[0])):
            return False
    if (artifact.get("status") or {}).get("status") == "Ready":
        return False  # turned Ready since: it serves other caches
    with contextlib.suppress(NotFound, Conflict):  # gone already, or another artifact of that name since
        await cluster.client.delete(AIM_ARTIFACTS, key[1], key[0], preconditions={"uid": uid})
    return True
