"""An AIMService's template cache (upstream's caching on the template path): the decisions are
`omectl.core.aim.legacy.service_caches`, this module reads what they need and applies the cache.

For a service whose selected template is Ready and lists model sources: its cache from the template cache informer
(`find_template_cache`); none usable, the service applies the one it renders, once (`render_template_cache`; the
service's labels propagated onto it, the edge AIMService → AIMTemplateCache, by `apply`). While the cache is not
Ready and the InferenceService exists, the live InferenceService is read whole (the informer keeps its metadata and
status only): its claim volumes stay mounted, and say whether a deleted cache was lost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from omectl.core.aim.legacy.kinds import TEMPLATE_CACHE
from omectl.core.aim.legacy.service_caches import (
    CachePlan,
    cache_ready,
    find_template_cache,
    plan_cache,
    render_template_cache,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.service_templates import TemplateSelection
from omectl.kube.errors import NotFound
from omectl.kube.resources import KSERVE_INFERENCE_SERVICES

if TYPE_CHECKING:
    from omectl.controller.aim.watch import AimWatch

Apply = Callable[["AimWatch", Mapping[str, Any], dict[str, Any], Mapping[str, Any]], Awaitable[Any]]
"""Applies one child of the service with its labels propagated: `(cluster, service, rendered, config)`."""


async def plan_template_cache(
    cluster: AimWatch,
    service: Mapping[str, Any],
    selection: TemplateSelection,
    config: Mapping[str, Any],
    apply: Apply,
) -> CachePlan | None:
    """The service's template cache, applied when it has none (module docstring); None when its Ready template has
    nothing to cache."""
    if selection.template is None or selection.kind is None:
        return None
    template = dict(selection.template, kind=selection.kind)
    rendered = render_template_cache(service, template, config)
    if rendered is None:
        return None
    namespace, name = namespace_of(service), name_of(service)
    cache = find_template_cache(service, name_of(template), cluster.legacy.kinds[TEMPLATE_CACHE].cache.list(namespace))
    if cache is None:
        await apply(cluster, service, rendered, config)
    exists = cluster.inference_services.cache.get(namespace, name) is not None
    live = None
    if exists and not cache_ready(cache):
        try:
            live = await cluster.client.request("GET", KSERVE_INFERENCE_SERVICES.path(namespace, name))
        except NotFound:
            exists = False
    return plan_cache(service, cache, live, inference_service_exists=exists)
