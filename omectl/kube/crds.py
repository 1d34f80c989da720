"""Whether a cluster's ome.io runtime CRDs are the ones omectl needs: upstream OME's have no status subresource,
so every write of a runtime's InheritanceReady condition would fail there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.kube.client import ClusterClient
from omectl.kube.errors import NotFound

RUNTIME_CRDS: Final = ("servingruntimes.ome.io", "clusterservingruntimes.ome.io")
GROUP_VERSION: Final = "ome.io/v1beta1"
INSTALL_CRDS: Final = "kubectl apply --server-side --force-conflicts -f deploy/crds/"
"""How to install or replace omectl's CRDs (server-side: the runtime CRDs are too big for client-side apply's
last-applied annotation)."""


def lacks_status_subresource(crd: Mapping[str, Any]) -> bool:
    served = [v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]
    return any("status" not in (v.get("subresources") or {}) for v in served)


def status_subresource_problem(crd_name: str) -> str:
    return f"{crd_name} has no status subresource (upstream OME's CRD): every InheritanceReady write fails"


async def runtime_crds_without_status(client: ClusterClient) -> list[str]:
    """The runtime CRDs the cluster serves without the status subresource, from API discovery (a few hundred bytes,
    readable by any authenticated user; the CRD objects themselves are over half a megabyte each)."""
    try:
        discovery = await client.request("GET", f"/apis/{GROUP_VERSION}")
    except NotFound:
        return []  # ome.io not served at all: the missing CRDs are reported elsewhere
    served = {resource.get("name") for resource in (discovery or {}).get("resources") or []}
    return [
        name
        for name in RUNTIME_CRDS
        if (plural := name.partition(".")[0]) in served and f"{plural}/status" not in served
    ]
