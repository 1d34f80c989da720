"""`omectl run --ha`: this replica runs only the clusters whose ownership Leases it holds (`omectl.fleet.sharding`).

`shard_registry` wraps the registration provider in a `ShardedProvider`, names the replica in every request's
User-Agent (`omectl/<version> (replica=<id>)`, so API servers' logs tell replicas apart) and puts the write fence
on every cluster client the controller creates: a write is sent only while `ShardCoordinator.may_write` holds.
"""

from __future__ import annotations

import logging

from omectl import __version__
from omectl.controller.manager import ClusterRuntime, FleetController
from omectl.fleet.providers import RegistrationProvider
from omectl.fleet.sharding import ShardCoordinator, ShardedProvider, default_replica_id, fence_writes
from omectl.kube.client import ClusterClient, set_user_agent
from omectl.settings import Settings

__all__ = ["replica_user_agent", "shard_registry"]

log = logging.getLogger(__name__)


def replica_user_agent(replica_id: str) -> str:
    return f"omectl/{__version__} (replica={replica_id})"


async def shard_registry(
    controller: FleetController, inner: RegistrationProvider, settings: Settings
) -> ShardedProvider:
    """The provider the controller follows in HA mode; Leases live in `ha_kubeconfig`'s cluster, else the hub's."""
    replica_id = settings.replica_id or default_replica_id()
    set_user_agent(replica_user_agent(replica_id))
    kubeconfig = settings.ha_kubeconfig or settings.hub_kubeconfig
    client = await ClusterClient.from_kubeconfig(kubeconfig, context=settings.ha_context, name="ha-coordination")
    namespace, timings = settings.ha_namespace, settings.lease_timings()
    coordinator = ShardCoordinator(client, replica_id, namespace=namespace, timings=timings, owns_client=True)

    async def fence(cluster: ClusterRuntime) -> None:
        # Runs before any task of the cluster does (first of the added callbacks): no write escapes the fence.
        fence_writes(cluster.client, coordinator, cluster.name)

    controller.on_cluster_added.insert(0, fence)
    log.info(
        "ha: replica %s; leases in namespace %s of %s (duration %s s, renew deadline %s s, retry %s s)",
        replica_id,
        namespace,
        client.server,
        timings.lease_duration,
        timings.renew_deadline,
        timings.retry_period,
    )
    return ShardedProvider(inner, coordinator)
