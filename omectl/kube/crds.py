"""Whether a cluster's ome.io runtime CRDs are the ones omectl needs: upstream OME's have no status subresource,
so every write of a runtime's InheritanceReady condition would fail there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.resources import CUSTOM_RESOURCE_DEFINITIONS

RUNTIME_CRDS: Final = ("servingruntimes.ome.io", "clusterservingruntimes.ome.io")
INSTALL_CRDS: Final = "kubectl apply --server-side --force-conflicts -f deploy/crds/"
"""How to install or replace omectl's CRDs (server-side: the runtime CRDs are too big for client-side apply's
last-applied annotation)."""


def lacks_status_subresource(crd: Mapping[str, Any]) -> bool:
    served = [v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")]
    return any("status" not in (v.get("subresources") or {}) for v in served)


def status_subresource_problem(crd_name: str) -> str:
    return f"{crd_name} has no status subresource (upstream OME's CRD): every InheritanceReady write fails"


async def runtime_crds_without_status(client: ClusterClient) -> list[str]:
    """The runtime CRDs installed on the cluster without the status subresource (absent ones are not listed)."""
    lacking: list[str] = []
    for name in RUNTIME_CRDS:
        try:
            crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
        except KubeAPIError as exc:
            if exc.status == 404:
                continue
            raise
        if lacks_status_subresource(crd):
            lacking.append(name)
    return lacking
