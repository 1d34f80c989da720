"""Cluster ownership wired into `omectl run`: the controller runs only the clusters whose Leases it holds.

`own_registry` wraps the registration provider in a `ShardedProvider` (`omectl.fleet.sharding`), with or without
`--ha`: every member's ownership Lease is in that member; `--ha` adds the membership Lease in the coordination
cluster (`ha_kubeconfig`, else the hub's). It names the process in every request's User-Agent
(`omectl/<version> (replica=<id>_<nonce>)`, so API servers' logs tell processes apart) and puts the write fence on
every cluster client the controller creates: a write is sent only while `ShardCoordinator.may_write` holds.
"""

from __future__ import annotations

from omectl import __version__
from omectl.controller.runtime.manager import ClusterRuntime, FleetController
from omectl.fleet.providers import RegistrationProvider
from omectl.fleet.sharding import LEASE_NAME, Holder, Membership, ShardCoordinator, ShardedProvider, fence_writes
from omectl.kube.client import ClusterClient, set_user_agent
from omectl.settings import Settings

__all__ = ["describe", "own_registry", "replica_user_agent"]


def replica_user_agent(identity: str) -> str:
    return f"omectl/{__version__} (replica={identity})"


async def own_registry(
    controller: FleetController, inner: RegistrationProvider, settings: Settings, holder: Holder
) -> ShardedProvider:
    """The provider the controller follows: only the clusters whose ownership Leases this process holds."""
    set_user_agent(replica_user_agent(holder.identity))
    timings = settings.lease_timings()
    membership: Membership | None = None
    if settings.ha:
        kubeconfig = settings.ha_kubeconfig or settings.hub_kubeconfig
        client = await ClusterClient.from_kubeconfig(kubeconfig, context=settings.ha_context, name="ha-coordination")
        membership = Membership(client, holder, namespace=settings.ha_namespace, timings=timings, owns_client=True)
    coordinator = ShardCoordinator(holder, namespace=settings.lease_namespace, timings=timings, membership=membership)

    async def fence(cluster: ClusterRuntime) -> None:
        # Runs before any task of the cluster does (first of the added callbacks): no write escapes the fence.
        fence_writes(cluster.client, coordinator, cluster.name)

    controller.on_cluster_added.insert(0, fence)
    return ShardedProvider(inner, coordinator)


def describe(settings: Settings, coordinator: ShardCoordinator) -> str:
    """One log line once started: who this process is and where its Leases are."""
    timings = coordinator.timings
    text = (
        f"{coordinator.identity}: ownership Lease {settings.lease_namespace}/{LEASE_NAME} in each member (duration "
        f"{timings.lease_duration:g} s, renew deadline {timings.renew_deadline:g} s, retry {timings.retry_period:g} s)"
    )
    if coordinator.membership is not None:
        text += f"; --ha membership in {settings.ha_namespace} of {coordinator.membership.client.server}"
    return text
