"""A v1alpha1 AIMClusterModelSource's registry scan (docs/aim-versions.md, "What a v1alpha1 source scans"): each
filter's images read from its registry as upstream's aimclustermodelsource controller reads them, then the models and
status `omectl.core.aim.source_scan` composes.

A filter's registry is the one its image names, else the source's `spec.registry`, else docker.io. Its images:

1. a tag and no `*`: that one image, without asking the registry;
2. no `*`: the repository's tags (`tags/list`) that match the filter; an error fails the filter;
3. a `*` on Docker Hub: the public repositories of the pattern's namespace (its first part, `*`s trimmed; none:
   the filter fails) from Docker Hub's API, those matching the pattern, and their tags that match; a repository whose
   tags cannot be read is skipped;
4. a `*` on ghcr.io: the registry's catalog (`_catalog`; upstream reads GitHub's packages API with the pull secret's
   token, omectl the registry API it reads elsewhere), then the tags of the repositories matching; the catalog's
   error fails the filter, and so does any repository's (with the images of the others: a partial result);
5. a `*` on another registry: the catalog, then the tags as on Docker Hub.

Credentials: the source's `imagePullSecrets` in the operator namespace (those missing are skipped), the first that
holds the registry's. The scan runs on every reconcile of the source (a spec,
label or annotation change, a model of its changed, a resync) and once more `spec.syncInterval` after it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from omectl.controller.aim.kind_watch import work_kind
from omectl.controller.runtime.queue import WorkKey
from omectl.core.aim.consumers import CLUSTER_MODEL, MODEL_SOURCE_LABEL, spec_of
from omectl.core.aim.meta import name_of
from omectl.core.aim.source_filters import FoundImage, matches_filter, matches_wildcard, parse_filter
from omectl.core.aim.source_scan import (
    FilterResult,
    plan_scan,
    render_scanned_model,
    scan_status,
    sync_interval,
)
from omectl.core.jsonish import as_list, as_mapping
from omectl.kube import timestamps
from omectl.kube.errors import NotFound
from omectl.kube.resources import SECRETS
from omectl.oci.client import RegistryClient, RegistryError
from omectl.oci.credentials import Credentials, credentials_for
from omectl.oci.reference import DOCKER_HUB

if TYPE_CHECKING:
    from omectl.controller.aim.consumers import AimConsumerReconciler
    from omectl.controller.aim.watch import AimWatch

log = logging.getLogger(__name__)

GHCR: Final = "ghcr.io"


async def reconcile_scanning_source(
    reconciler: AimConsumerReconciler,
    cluster: AimWatch,
    source: dict[str, Any],
    spec: Mapping[str, Any],
    config: Mapping[str, Any],
) -> dict[str, Any]:
    """Scan, create the new models, and answer the source's own status; the next scan is queued."""
    name = name_of(source)
    cache = cluster.consumers.cache(CLUSTER_MODEL)
    existing = {
        str(spec_of(m).get("image") or "")
        for m in (cache.list() if cache is not None else [])
        if as_mapping(as_mapping(m.get("metadata")).get("labels")).get(MODEL_SOURCE_LABEL) == name
    }
    secrets = await _secrets(cluster, spec, reconciler.operator_namespace)
    results = [
        await fetch_filter(reconciler.image_registry, spec, as_mapping(entry), secrets)
        for entry in as_list(spec.get("filters"))
    ]
    plan = plan_scan(spec, results, existing)
    for image in plan.new_images:
        await reconciler.apply(cluster, source, render_scanned_model(source, spec, image), config)
    key = WorkKey(cluster.name, work_kind(str(source.get("kind") or "AIMClusterModelSource")), "", name)
    cluster.enqueue_after(key, sync_interval(spec))
    now = timestamps.now()
    return scan_status(results, plan, len(existing), now)


async def fetch_filter(
    registry_client: RegistryClient,
    spec: Mapping[str, Any],
    entry: Mapping[str, Any],
    secrets: list[dict[str, Any]],
) -> FilterResult:
    """The images one filter takes (module docstring)."""
    parsed = parse_filter(str(entry.get("image") or ""))
    registry = parsed.registry or str(spec.get("registry") or "") or DOCKER_HUB
    versions = [str(v) for v in as_list(spec.get("versions"))]
    credentials = credentials_for(registry, secrets)
    if parsed.tag is not None and not parsed.wildcard:
        return FilterResult((FoundImage(registry, parsed.repository, parsed.tag),))
    try:
        if not parsed.wildcard:
            tags = await registry_client.tags(registry, parsed.repository, credentials)
            return FilterResult(_matching(registry, parsed.repository, tags, entry, versions))
        if registry == DOCKER_HUB or "hub.docker.com" in registry:
            namespace = parsed.repository.split("/", 1)[0].rstrip("*")
            if not namespace:
                return FilterResult(error=f"cannot extract namespace from pattern: {entry.get('image')}")
            repositories = await registry_client.hub_repositories(namespace)
            registry = DOCKER_HUB
        else:
            repositories = await registry_client.catalog(registry, credentials)
    except RegistryError as error:
        return FilterResult(error=str(error))
    return await _tags_of_matching(
        registry_client, registry, repositories, parsed.repository, entry, versions, credentials
    )


async def _tags_of_matching(
    registry_client: RegistryClient,
    registry: str,
    repositories: list[str],
    pattern: str,
    entry: Mapping[str, Any],
    versions: list[str],
    credentials: Credentials | None,
) -> FilterResult:
    images: list[FoundImage] = []
    errors: list[str] = []
    for repository in repositories:
        if not matches_wildcard(pattern, repository):
            continue
        try:
            tags = await registry_client.tags(registry, repository, credentials)
        except RegistryError as error:
            log.info("registry %s: the tags of %s could not be read: %s", registry, repository, error)
            errors.append(f"package {repository!r}: {error}")
            continue
        images.extend(_matching(registry, repository, tags, entry, versions))
    if errors and registry == GHCR:
        prefix = "partial results, encountered errors" if images else "no images found"
        return FilterResult(tuple(images), f"{prefix}: {'; '.join(errors)}")
    return FilterResult(tuple(images))


def _matching(
    registry: str, repository: str, tags: list[str], entry: Mapping[str, Any], versions: list[str]
) -> tuple[FoundImage, ...]:
    found = (FoundImage(registry, repository, tag) for tag in tags)
    return tuple(image for image in found if matches_filter(image, entry, versions))


async def _secrets(cluster: AimWatch, spec: Mapping[str, Any], namespace: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for item in as_list(spec.get("imagePullSecrets")):
        name = str(as_mapping(item).get("name") or "")
        if not name:
            continue
        try:
            found.append(await cluster.client.get(SECRETS, name, namespace=namespace))
        except NotFound:
            log.info("imagePullSecret %s not found in namespace %s: skipped", name, namespace)
    return found
