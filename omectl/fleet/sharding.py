"""Cluster ownership: one holder per member cluster, recorded in a Lease in that member; `--ha` shares the fleet.

Every `omectl run`, with `--ha` or without, runs a cluster only while it holds the cluster's **ownership Lease**:
`coordination.k8s.io` Lease `omectl-controller` in namespace `lease_namespace` (default `omectl-system`) *of that
member cluster*. `holderIdentity` is `<replica-id>_<nonce>` (unique per process, `omectl.fleet.leases.Holder`),
annotations name its host, pid and mode, `leaseTransitions` counts the hand-overs and `renewTime` moves every
retry period. Because the Lease lives in the member, renewing it is reaching the member: a holder cut off from a
member cannot renew, fences itself at the renew deadline, and the Lease expires for whoever can reach it; and any
two processes managing one member, whatever their registries call it and whether or not they run `--ha`, see
each other there.

- **Without `--ha`** a process wants every registered cluster. A cluster whose Lease another process holds and
  renews is *refused* (one line naming the holder; `omectl run` exits 1 when it refuses every cluster); a Lease
  left unchanged for a whole lease duration (its holder was killed) is taken over; a released one at once.
- **With `--ha`** each replica also renews a **membership** Lease `omectl-replica-<id>` in one namespace
  (`ha_namespace`) of a coordination cluster; a replica is live while its membership Lease is fresh (wall clock:
  membership only steers the assignment, never safety). A second process starting with a live replica id is
  refused. The owner a cluster *should* have is `omectl.fleet.assignment.assign` over the live replicas: balanced
  (no replica above ceil(clusters / replicas) while another has room), leaving out replicas that report they
  cannot reach the cluster. Each replica publishes in its membership Lease its webhook URL and CA (so a handover
  can re-point the webhook configuration at the next owner before letting go) and the clusters it has not
  reached for a renew deadline (so another replica takes them).

Each retry period a process renews every ownership Lease it holds (and its membership), then: it releases the
clusters now desired by another replica (stop that cluster's informers and workers first, then write
`holderIdentity: ""`), and acquires the clusters desired by it whose Lease is free, expired, or already its own.
Every Lease write carries the `resourceVersion` read, so of two processes racing for one Lease exactly one write
succeeds (the other gets 409 Conflict).

**Timing (why two holders never write to one cluster at once).** The defaults are client-go's and
controller-runtime's leader-election numbers (`manager/internal.go`: lease 15 s, renew deadline 10 s,
retry 2 s), with the same checks (`leaseDuration > renewDeadline > 1.2 * retryPeriod`).

1. *Expiry is judged on the observer's own clock*, as client-go does: a Lease counts as expired only when the
   observer has seen the same record (the same resourceVersion) for `leaseDurationSeconds` of its own monotonic
   time. The holder stamped `renewTime` at `t_s` before sending the write; the write committed at some `t_c >=
   t_s`; any observer sees it at `t_o >= t_c`, so it may acquire no earlier than `t_o + D >= t_s + D` (D: lease
   duration). Clock *offsets* between machines do not enter; only clock *rates* do.
2. *The holder fences itself at `t_s + R`* (R: renew deadline, on its monotonic clock, measured from the stamp
   of its last successful renewal): every write it sends to the cluster passes `writing(cluster)` first, which
   refuses it once `may_write(cluster)` is false: from `t_s + R` on, unless a later renewal succeeded. A
   renewal whose answer is lost does not count, which only fences earlier.
3. So the last write the old holder *sends* leaves before `t_s + R`, and the next holder starts no earlier than
   `t_s + D`: the `D - R` = 5 s between them must cover a write in flight (sent before the fence, committed
   after) and the drift between the two clocks' rates. Requests to a cluster time out well within that on a
   healthy network; a write delayed for longer than `D - R` inside the network could still land late (the same
   limit client-go's leader election has). The Lease sits in the cluster being written to, so a holder whose
   renewals cannot reach the member cannot reach it with writes either.
4. A graceful release (rebalancing, a cluster deregistered, a clean stop) first lets the listeners hand the
   cluster over (the webhook configuration re-pointed or deleted, while the Lease is still held), then refuses new
   writes, waits until every write in flight has its answer, stops the cluster's informers and workers, and only
   then writes the release (a write still unanswered after R/2 keeps the Lease until it expires instead). So
   every write of the old holder committed or failed before the next holder could acquire, let alone write. A
   deregistered cluster's Lease is deleted instead of released. A clean stop that cancels an acquisition whose
   answer was never read re-reads that Lease and releases it if the server took the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from omectl.background import BackgroundTasks, alongside
from omectl.fleet.assignment import assign, rendezvous_weight
from omectl.fleet.leases import (
    Holder,
    LeaseClock,
    LeaseRecord,
    Leases,
    LeaseTimings,
    SystemClock,
    default_replica_id,
    describe_holder,
    lease_spec,
    micro_time,
    validate_replica_id,
)
from omectl.fleet.providers import RegistrationProvider, RegistryChange
from omectl.fleet.registration import ClusterRegistration, resolve_kubeconfig
from omectl.kube.client import ClusterClient, KubeConnectionError, KubeError

__all__ = [
    "CLUSTER_NAME_LABEL",
    "DEFAULT_HA_NAMESPACE",
    "DEFAULT_LEASE_NAMESPACE",
    "LEASE_KIND_LABEL",
    "LEASE_NAME",
    "REPLICA_LEASE_PREFIX",
    "Fenced",
    "Holder",
    "LeaseRecord",
    "LeaseTimings",
    "Leases",
    "Membership",
    "OwnershipListener",
    "Replica",
    "ReplicaIdInUse",
    "ShardCoordinator",
    "ShardedProvider",
    "WriteFence",
    "assign",
    "default_replica_id",
    "fence_writes",
    "refusal_message",
    "rendezvous_weight",
    "validate_replica_id",
]

log = logging.getLogger(__name__)

DEFAULT_HA_NAMESPACE = "omectl-system"
DEFAULT_LEASE_NAMESPACE = "omectl-system"
LEASE_NAME = "omectl-controller"  # the ownership Lease in every member
REPLICA_LEASE_PREFIX = "omectl-replica-"
LEASE_KIND_LABEL = "omectl.io/ha-lease"  # "replica" (membership), "cluster" (ownership), "leader" (election.py)
CLUSTER_NAME_LABEL = "omectl.io/cluster-name"
WEBHOOK_URL_ANNOTATION = "omectl.io/webhook-url"
WEBHOOK_CA_ANNOTATION = "omectl.io/webhook-ca-bundle"
UNREACHABLE_ANNOTATION = "omectl.io/unreachable"


# --- who else is there -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replica:
    """A live process as the ownership needs to know it: its ids, where its webhooks answer, what it cannot reach."""

    replica_id: str
    identity: str
    webhook_url: str | None = None
    ca_bundle: str | None = None  # base64 PEM, as a webhook configuration's caBundle
    unreachable: frozenset[str] = frozenset()

    @classmethod
    def from_record(cls, record: LeaseRecord) -> Replica:
        notes = record.annotations
        unreachable = frozenset(c for c in notes.get(UNREACHABLE_ANNOTATION, "").split(",") if c)
        return cls(
            record.name.removeprefix(REPLICA_LEASE_PREFIX),
            record.holder,
            notes.get(WEBHOOK_URL_ANNOTATION) or None,
            notes.get(WEBHOOK_CA_ANNOTATION) or None,
            unreachable,
        )


class ReplicaIdInUse(Exception):
    """Another live process renews the membership Lease of this replica id."""

    def __init__(self, replica_id: str, record: LeaseRecord) -> None:
        super().__init__(
            f'replica id "{replica_id}" is in use by a live process: {describe_holder(record)}; give every replica '
            "its own --replica-id"
        )


def refusal_message(cluster: str, record: LeaseRecord, *, ha: bool) -> str:
    """The one line saying why this process does not run `cluster`: who holds it, and what to do."""
    if record.holder_runs_ha and not ha:
        hint = "run this omectl with --ha too to share the clusters with it"
    elif ha:
        hint = "that omectl runs without --ha and keeps every cluster it holds: restart it with --ha to share them"
    else:
        hint = "one omectl runs a cluster at a time: stop that one, or run every omectl of the fleet with --ha"
    return f"cluster {cluster} is held by another omectl: {describe_holder(record)}; {hint}"


class Membership:
    """A `--ha` replica's Lease in the coordination cluster: it is live while the Lease is fresh."""

    def __init__(
        self,
        client: ClusterClient,
        holder: Holder,
        *,
        namespace: str = DEFAULT_HA_NAMESPACE,
        timings: LeaseTimings | None = None,
        clock: LeaseClock | None = None,
        owns_client: bool = False,
    ) -> None:
        self.client = client
        self.holder = holder
        self.timings = timings or LeaseTimings()
        self.leases = Leases(client, namespace, request_timeout=self.timings.renew_deadline / 2)
        self.clock: LeaseClock = clock if clock is not None else SystemClock()
        self.owns_client = owns_client
        self.name = REPLICA_LEASE_PREFIX + holder.replica_id
        self.record: LeaseRecord | None = None
        self.live: dict[str, Replica] = {}

    def _spec(self, stamp: float, acquired: str) -> dict[str, Any]:
        return {
            "holderIdentity": self.holder.identity,
            "leaseDurationSeconds": self.timings.lease_seconds,
            "acquireTime": acquired,
            "renewTime": micro_time(stamp),
            "leaseTransitions": 0,
        }

    def _notes(self, advertised: dict[str, str]) -> dict[str, str]:
        return {**self.holder.annotations(), **advertised}

    async def claim(self, advertised: dict[str, str] | None = None) -> None:
        """Take this replica id's membership Lease; `ReplicaIdInUse` if another live process renews it.

        A Lease that is stale by the wall clock is taken at once (membership is never what keeps two writers
        apart); a fresh one of another process is watched: if it changes, its holder is alive; if it stays as it
        is for a lease duration, its holder died and the Lease is taken.
        """
        first_seen: tuple[str, float] | None = None
        labels = {LEASE_KIND_LABEL: "replica"}
        while True:
            current = await self.leases.get(self.name)
            mono = self.clock.monotonic()
            ours = current is None or not current.holder or current.holder == self.holder.identity
            if current is not None and not ours and current.fresh(self.clock.time()):
                if first_seen is not None and first_seen[0] != current.resource_version:
                    raise ReplicaIdInUse(self.holder.replica_id, current)
                if first_seen is None:
                    first_seen = (current.resource_version, mono)
                if mono - first_seen[1] < current.duration_seconds:
                    await self.clock.sleep(self.timings.retry_period)
                    continue
                log.info("ha: replica id %s: taking the membership lease of %s over", self.name, current.holder)
            stamp = self.clock.time()
            written = await self.leases.write(
                self.name, self._spec(stamp, micro_time(stamp)), labels, current, self._notes(advertised or {})
            )
            if written is not None:
                self.record = written
                return
            first_seen = None  # another process wrote first: look again

    async def renew(self, advertised: dict[str, str]) -> None:
        stamp = self.clock.time()
        previous = self.record
        acquired = previous.acquire_time if previous is not None else micro_time(stamp)
        labels = {LEASE_KIND_LABEL: "replica"}
        spec, notes = self._spec(stamp, acquired), self._notes(advertised)
        written = await self.leases.write(self.name, spec, labels, previous, notes)
        if written is None:  # our last answer was lost, or another process took the id: read, then decide
            current = await self.leases.get(self.name)
            if current is not None and current.holder not in ("", self.holder.identity) and current.fresh(stamp):
                raise ReplicaIdInUse(self.holder.replica_id, current)
            written = await self.leases.write(self.name, spec, labels, current, notes)
        self.record = written

    async def observe(self) -> dict[str, Replica]:
        """The live replicas (this one included), from the membership Leases."""
        records = await self.leases.list(f"{LEASE_KIND_LABEL}=replica")
        now = self.clock.time()
        live = {
            replica.replica_id: replica
            for record in records.values()
            if record.name.startswith(REPLICA_LEASE_PREFIX)
            and record.holder.startswith(record.name.removeprefix(REPLICA_LEASE_PREFIX) + "_")
            and record.fresh(now)
            for replica in [Replica.from_record(record)]
        }
        self.live = live
        return live

    async def leave(self) -> None:
        if self.record is not None:
            with contextlib.suppress(KubeError):
                await self.leases.delete(self.record)
            self.record = None
        if self.owns_client:
            await self.client.close()


# --- the coordinator ---------------------------------------------------------------------------------------


class OwnershipListener(Protocol):
    """What happens around the Leases: `acquired` right after one is taken; `handing_over` while one is still
    held, before a release (`successor`: the next owner, if known; `removed`: the cluster left the registry);
    `stopping` must return once nothing of the cluster runs any more; `lost` once one was lost or fenced."""

    def acquired(self, cluster: str) -> None: ...

    async def handing_over(self, cluster: str, successor: Replica | None, removed: bool) -> None: ...

    async def stopping(self, cluster: str) -> None: ...

    def lost(self, cluster: str) -> None: ...


@dataclass
class _Member:
    """One registered member cluster as the coordinator sees it."""

    client: ClusterClient
    leases: Leases
    record: LeaseRecord | None = None  # as last read or written
    seen: tuple[str, float] | None = None  # (resourceVersion, monotonic time first seen)
    alive: bool = False  # its holder (another process) was seen writing it
    failing_since: float | None = None  # monotonic: the first of the requests failing in a row
    last_error: str | None = None
    fenced_unreached: bool = False  # its Lease was not renewed within the renew deadline, and not reached since
    reported: str | None = None  # the holder whose refusal was last logged


@dataclass
class _Held:
    record: LeaseRecord
    deadline: float  # monotonic: writes stop at this instant unless a renewal moves it


@dataclass
class _Round:
    count: int = 0
    done: asyncio.Condition = field(default_factory=asyncio.Condition)


class ShardCoordinator:
    """This process's side of cluster ownership: the member Leases it holds, the write fence, and (`--ha`) its
    membership and the assignment. Clusters come and go with `add_member` / `remove_member`."""

    def __init__(
        self,
        holder: Holder,
        *,
        namespace: str = DEFAULT_LEASE_NAMESPACE,
        timings: LeaseTimings | None = None,
        membership: Membership | None = None,
        clock: LeaseClock | None = None,
    ) -> None:
        self.holder = holder
        self.identity = holder.identity
        self.namespace = namespace
        self.timings = timings or LeaseTimings()
        self.membership = membership
        self.clock: LeaseClock = clock if clock is not None else SystemClock()
        self.members: dict[str, _Member] = {}
        self.held: dict[str, _Held] = {}
        self.releasing: set[str] = set()
        self.draining: set[str] = set()
        self.desired: dict[str, str] = {}
        self.live_replicas: list[str] = [holder.replica_id]
        self.listeners: list[OwnershipListener] = []
        self.advertise: Callable[[], dict[str, str]] = dict  # extra membership annotations (the webhook endpoint)
        self.report_refusals = True  # log each refusal once (off while `omectl run` decides whether to start)
        self.last_error: str | None = None
        self.failure: Exception | None = None  # fatal: another process took this replica id
        self.failed = asyncio.Event()
        self._round = _Round()
        self._tasks = BackgroundTasks("ha")
        self._closing = False
        self._stopped = False
        self._in_flight: dict[str, int] = {}
        self._unsure: set[str] = set()  # clusters whose acquiring write was cancelled unanswered: close re-reads them
        self._drained: dict[str, asyncio.Future[None]] = {}

    @property
    def replica_id(self) -> str:
        return self.holder.replica_id

    @property
    def registered(self) -> set[str]:
        return set(self.members)

    @property
    def rounds(self) -> int:
        return self._round.count

    # --- members -------------------------------------------------------------------------------------------

    def add_member(self, cluster: str, client: ClusterClient) -> None:
        """Start watching a member's Lease through `client` (the coordinator closes it); a second call for the
        same cluster (its credentials rotated) swaps the client."""
        leases = Leases(client, self.namespace, request_timeout=self.timings.renew_deadline / 2)
        member = self.members.get(cluster)
        if member is None:
            self.members[cluster] = _Member(client, leases)
            return
        old, member.client, member.leases = member.client, client, leases
        self._spawn(old.close(), f"close-{cluster}")

    def client_for(self, cluster: str) -> ClusterClient | None:
        member = self.members.get(cluster)
        return member.client if member is not None else None

    async def remove_member(self, cluster: str) -> None:
        """The cluster left the registry: hand it over (its webhook configuration deleted) and delete its Lease."""
        if cluster in self.held:
            await self.release(cluster, removed=True)
        member = self.members.pop(cluster, None)
        if member is not None:
            await member.client.close()

    # --- the fence ---------------------------------------------------------------------------------------

    def may_write(self, cluster: str) -> bool:
        """Whether this process may send a write to `cluster` now: it holds the Lease and the deadline is ahead."""
        held = self.held.get(cluster)
        return (
            held is not None
            and not self._stopped
            and cluster not in self.draining
            and self.clock.monotonic() < held.deadline
        )

    @contextlib.contextmanager
    def writing(self, cluster: str) -> Iterator[None]:
        """Around one write to `cluster`: refused (`Fenced`) unless `may_write`, counted while in flight.

        A graceful release waits for the count to reach zero, so each write has its answer (committed or
        refused) before the Lease is released: none can land after the next holder's first write.
        """
        if not self.may_write(cluster):
            raise Fenced(cluster)
        self._in_flight[cluster] = self._in_flight.get(cluster, 0) + 1
        try:
            yield
        finally:
            left = self._in_flight[cluster] - 1
            if left:
                self._in_flight[cluster] = left
            else:
                del self._in_flight[cluster]
                waiter = self._drained.pop(cluster, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)

    async def _drain(self, cluster: str, timeout: float) -> bool:
        """Refuse new writes to `cluster` and wait for those in flight; False if they outlast `timeout`."""
        self.draining.add(cluster)
        if not self._in_flight.get(cluster):
            return True
        waiter = self._drained.setdefault(cluster, asyncio.get_running_loop().create_future())
        try:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError:
            return False
        return True

    def owned(self) -> list[str]:
        return sorted(self.held)

    # --- what the members say ----------------------------------------------------------------------------

    def _failed(self, member: _Member, exc: KubeError) -> None:
        if member.failing_since is None:
            member.failing_since = self.clock.monotonic()
        member.last_error = str(exc)

    @staticmethod
    def _reached(member: _Member) -> None:
        member.failing_since = None
        member.last_error = None
        member.fenced_unreached = False

    def unreachable(self) -> set[str]:
        """The members this process has failed to reach for at least a renew deadline."""
        now = self.clock.monotonic()
        return {
            name
            for name, m in self.members.items()
            if m.fenced_unreached
            or (m.failing_since is not None and now - m.failing_since >= self.timings.renew_deadline)
        }

    def unreached(self) -> dict[str, str]:
        """The clusters this process wants but has not reached to take their Lease, each with the last error."""
        return {
            name: m.last_error or "not reached"
            for name, m in self.members.items()
            if name not in self.held and m.failing_since is not None and self.desired.get(name) == self.replica_id
        }

    def taking(self) -> set[str]:
        """The clusters this process wants, has reached and is about to take: no other process holds their Lease.

        Between a member's first good answer and its Lease write the cluster is neither unreached nor held: the
        readiness probe must still wait on it.
        """
        return {
            name
            for name, m in self.members.items()
            if name not in self.held
            and m.failing_since is None
            and self.desired.get(name) == self.replica_id
            and not self._held_by_other(m)
        }

    def _observe(self, member: _Member, record: LeaseRecord | None, now_mono: float) -> None:
        if record is None:
            member.seen, member.alive = None, False
        elif member.seen is None or member.seen[0] != record.resource_version:
            member.alive = member.seen is not None and record.holder not in ("", self.identity)
            member.seen = (record.resource_version, now_mono)
        member.record = record

    def _expired(self, member: _Member, now_mono: float) -> bool:
        if member.seen is None or member.record is None:
            return False  # never judge a record not observed for a whole lease duration
        return now_mono >= member.seen[1] + member.record.duration_seconds

    def _held_by_other(self, member: _Member) -> bool:
        return member.record is not None and member.record.holder not in ("", self.identity)

    def refused(self) -> dict[str, str]:
        """The clusters this process wants but another live process holds, each with its one-line reason."""
        out: dict[str, str] = {}
        for name, member in self.members.items():
            if name in self.held or self.desired.get(name) != self.replica_id or not self._held_by_other(member):
                continue
            assert member.record is not None
            if self.membership is not None and member.record.holder_runs_ha:
                continue  # another replica hands it over on its next round
            out[name] = refusal_message(name, member.record, ha=self.membership is not None)
        return out

    def settled(self) -> bool:
        """Whether every cluster this process wants is held, refused by a live holder, or unreachable."""
        for name, member in self.members.items():
            if name in self.held or self.desired.get(name) != self.replica_id or member.failing_since is not None:
                continue
            if member.seen is None or not (self._held_by_other(member) and member.alive):
                return False
        return True

    def status(self) -> dict[str, Any]:
        return {
            "identity": self.identity,
            "mode": "ha" if self.membership is not None else "single",
            "held": self.owned(),
            "refused": self.refused(),
            "unreachable": sorted(self.unreachable()),
        }

    # --- one round ----------------------------------------------------------------------------------------

    def _labels(self, cluster: str) -> dict[str, str]:
        return {LEASE_KIND_LABEL: "cluster", CLUSTER_NAME_LABEL: cluster}

    def _advertised(self) -> dict[str, str]:
        notes = dict(self.advertise())
        unreachable = self.unreachable()
        if unreachable:
            notes[UNREACHABLE_ANNOTATION] = ",".join(sorted(unreachable))
        return notes

    async def run_round(self) -> None:
        """Renew, observe, rebalance: what a process does every retry period."""
        try:
            await self._run_round()
            self.last_error = None
        except ReplicaIdInUse as exc:
            self.failure = exc
            self.failed.set()
        except KubeError as exc:
            self.last_error = str(exc)
            log.warning("ha: %s", exc)
        finally:
            self._round.count += 1
            async with self._round.done:
                self._round.done.notify_all()

    async def wait_rounds(self, count: int, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout), self._round.done:
            await self._round.done.wait_for(lambda: self._round.count >= count)

    async def wait_settled(self, timeout: float) -> None:
        """Until something is held or every wanted cluster is decided (refused, unreachable), or `timeout`."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout), self._round.done:
                await self._round.done.wait_for(lambda: bool(self.held) or self.settled())

    def _replicas(self) -> dict[str, Replica]:
        if self.membership is not None:
            return self.membership.live
        return {self.replica_id: Replica(self.replica_id, self.identity)}

    async def _run_round(self) -> None:
        # Renewals first: they are what the fence waits on; the reads and the decisions can lag behind.
        renewals = [self._renew(name) for name in list(self.held)]
        if self.membership is not None:
            results = await asyncio.gather(self.membership.renew(self._advertised()), *renewals, return_exceptions=True)
            if isinstance(results[0], BaseException):
                raise results[0]
            await self.membership.observe()
        else:
            await asyncio.gather(*renewals)
        replicas = self._replicas()
        replicas.setdefault(self.replica_id, Replica(self.replica_id, self.identity))
        self.live_replicas = sorted(replicas)
        excluded = {r.replica_id: r.unreachable for r in replicas.values()}
        mine = self.unreachable()
        excluded[self.replica_id] = frozenset(mine)
        self.desired = assign(self.members, replicas, excluded)
        if self._closing:
            return
        for cluster in list(self.held):
            owner = self.desired.get(cluster)
            if owner != self.replica_id and cluster not in self.releasing:
                successor = replicas.get(owner) if owner is not None else None
                self._spawn(self.release(cluster, successor=successor), f"ha-release-{cluster}")
        # Every other member's Lease is read too (and acquired where this process is the desired owner): a Lease
        # must be watched for a lease duration before it can be judged expired, so the watch starts before a dead
        # replica's clusters become ours, and a takeover takes one lease duration, not two.
        others = [c for c in sorted(self.members) if c not in self.held and c not in self.releasing]
        await asyncio.gather(*(self._consider(c) for c in others))
        if self.report_refusals:
            self.log_refusals()

    def log_refusals(self) -> None:
        for cluster, message in self.refused().items():
            member = self.members[cluster]
            holder = member.record.holder if member.record is not None else ""
            if member.reported != holder:
                member.reported = holder
                log.warning("%s", message)

    async def _consider(self, cluster: str) -> None:
        member = self.members.get(cluster)
        if member is None:
            return
        try:
            record = await member.leases.get(LEASE_NAME)
        except KubeError as exc:
            self._failed(member, exc)
            return
        self._reached(member)
        now_mono = self.clock.monotonic()
        self._observe(member, record, now_mono)
        if self.desired.get(cluster) != self.replica_id or self._closing:
            return
        if record is not None and self._held_by_other(member) and not self._expired(member, now_mono):
            return
        await self._acquire(cluster, member, record)

    async def _acquire(self, cluster: str, member: _Member, record: LeaseRecord | None) -> None:
        stamp, stamp_mono = self.clock.time(), self.clock.monotonic()
        transitions = 0 if record is None else record.transitions + (record.holder != self.identity)
        spec = lease_spec(self.identity, stamp, micro_time(stamp), transitions, self.timings.lease_seconds)
        try:
            written = await member.leases.write(
                LEASE_NAME, spec, self._labels(cluster), record, self.holder.annotations()
            )
        except asyncio.CancelledError:
            self._unsure.add(cluster)  # the server may have taken the write whose answer is now never read
            raise
        except KubeError as exc:
            self._failed(member, exc)
            log.warning("ha: cluster %s: taking the lease failed: %s", cluster, exc)
            return
        if written is None:
            log.info("ha: cluster %s: another process acquired the lease first", cluster)
            return
        self._observe(member, written, stamp_mono)
        member.alive = False
        if self._closing or cluster not in self.members:
            await self._release_lease(member, written)
            return
        self.held[cluster] = _Held(written, stamp_mono + self.timings.renew_deadline)
        previous = record.holder if record is not None else ""
        log.info(
            "ha: %s acquired cluster %s (from %s, transitions %d)",
            self.identity,
            cluster,
            previous or "nobody",
            transitions,
        )
        for listener in self.listeners:
            listener.acquired(cluster)

    async def _renew(self, cluster: str) -> None:
        held = self.held.get(cluster)
        member = self.members.get(cluster)
        if held is None or member is None:
            return
        stamp, stamp_mono = self.clock.time(), self.clock.monotonic()
        record = held.record
        spec = lease_spec(self.identity, stamp, record.acquire_time, record.transitions, self.timings.lease_seconds)
        try:
            written = await member.leases.write(record.name, spec, self._labels(cluster), record)
        except KubeError as exc:
            self._failed(member, exc)
            log.warning("ha: cluster %s: renewing the lease failed: %s", cluster, exc)
            self._check_deadline(cluster)
            return
        self._reached(member)
        if self.held.get(cluster) is not held:
            return  # released or fenced while the renewal was in flight
        if written is None:
            self._lose(cluster, "the lease was changed by another writer")
            return
        self._observe(member, written, stamp_mono)
        held.record = written
        held.deadline = stamp_mono + self.timings.renew_deadline

    def _check_deadline(self, cluster: str) -> None:
        held = self.held.get(cluster)
        if held is not None and self.clock.monotonic() >= held.deadline:
            member = self.members.get(cluster)
            if member is not None:
                # No good renewal for a renew deadline: unreached that long, however recent the first failure.
                member.fenced_unreached = True
            self._lose(cluster, f"not renewed within the renew deadline ({self.timings.renew_deadline} s)")

    def _lose(self, cluster: str, why: str) -> None:
        if self.held.pop(cluster, None) is None:
            return
        log.warning("ha: %s lost cluster %s: %s; its writes are fenced", self.identity, cluster, why)
        if cluster not in self.releasing:
            for listener in self.listeners:
                listener.lost(cluster)

    # --- release and shutdown ----------------------------------------------------------------------------

    async def _hand_over(self, cluster: str, successor: Replica | None, removed: bool) -> None:
        for listener in self.listeners:
            try:
                await listener.handing_over(cluster, successor, removed)
            except Exception:  # a hand-over that fails leaves the next owner to put things right
                log.exception("ha: cluster %s: handing over failed", cluster)

    async def release(self, cluster: str, *, successor: Replica | None = None, removed: bool = False) -> None:
        """Hand a cluster over: let the listeners hand it over, stop everything of it here (renewing meanwhile),
        then release its Lease (delete it, when the cluster left the registry)."""
        if cluster in self.releasing or cluster not in self.held:
            return
        self.releasing.add(cluster)
        try:
            log.info("ha: %s releasing cluster %s", self.identity, cluster)
            # 0. while the Lease is held: the webhook configuration re-pointed at the next owner, or deleted
            await self._hand_over(cluster, successor, removed)
            # 1. no new write, and every write in flight answered (the Lease is renewed meanwhile)
            drained = await self._drain(cluster, self.timings.renew_deadline / 2)
            # 2. the cluster's informers and workers stopped
            for listener in self.listeners:
                await listener.stopping(cluster)
            held = self.held.pop(cluster, None)
            member = self.members.get(cluster)
            # 3. only then the Lease is free for the next holder; a write that never answered keeps it until expiry
            if held is not None and member is not None and drained:
                if removed:
                    await self._delete_lease(member, held.record)
                else:
                    await self._release_lease(member, held.record)
            elif held is not None:
                log.warning("ha: cluster %s: a write is still in flight; its lease is left to expire", cluster)
        finally:
            self.releasing.discard(cluster)
            self.draining.discard(cluster)

    async def _release_lease(self, member: _Member, record: LeaseRecord) -> None:
        """Write `holderIdentity: ""` (client-go's release: duration 1 s), re-reading after a lost race."""
        current: LeaseRecord | None = record
        try:
            for _ in range(3):
                if current is None or current.holder != self.identity:
                    return  # gone, or someone else's by now
                stamp = self.clock.time()
                spec = lease_spec("", stamp, micro_time(stamp), current.transitions, 1)
                if await member.leases.write(current.name, spec, current.labels, current) is not None:
                    return
                current = await member.leases.get(current.name)  # a renewal in flight moved it: read, retry
        except KubeError as exc:
            log.warning("ha: releasing %s failed (it expires on its own): %s", record.name, exc)

    async def _release_if_mine(self, member: _Member) -> None:
        """Release a Lease this process may hold without knowing it (an acquisition cancelled unanswered)."""
        try:
            current = await member.leases.get(LEASE_NAME)
        except KubeError as exc:
            log.warning("ha: reading %s failed (if it is held here, it expires on its own): %s", LEASE_NAME, exc)
            return
        if current is not None:
            await self._release_lease(member, current)

    async def _delete_lease(self, member: _Member, record: LeaseRecord) -> None:
        current: LeaseRecord | None = record
        try:
            for _ in range(3):
                if current is None or current.holder != self.identity:
                    return
                if await member.leases.delete(current):
                    return
                current = await member.leases.get(current.name)
        except KubeError as exc:
            log.warning("ha: deleting %s failed (it expires on its own): %s", record.name, exc)

    def _spawn(self, coro: Any, name: str) -> None:
        self._tasks.spawn(coro, name)

    async def run(self) -> None:
        """Rounds every retry period (with client-go's jitter) and a watchdog that fences at each deadline."""
        async with alongside(self._watchdog, "ha-watchdog"):
            while not self.failed.is_set():
                started = self.clock.monotonic()
                await self.run_round()
                period = self.timings.retry_period * (1 + 0.2 * secrets.randbelow(1000) / 1000)
                await self.clock.sleep(max(0.0, period - (self.clock.monotonic() - started)))

    async def _watchdog(self) -> None:
        while True:
            now = self.clock.monotonic()
            for cluster in list(self.held):
                self._check_deadline(cluster)
            upcoming = [h.deadline for h in self.held.values()]
            wait = min([*upcoming, now + self.timings.retry_period]) - now
            await self.clock.sleep(min(max(wait, 0.01), self.timings.retry_period))

    def stop_acquiring(self) -> None:
        """A stop has begun: rounds go on renewing what is held (the controller is still finishing its work) but
        take no cluster, not even one another stopping replica has just released, and hand none over."""
        self._closing = True

    async def close(self) -> None:
        """Hand every held cluster over, release its Lease and leave the membership (call once stopped)."""
        self._closing = True
        # releases under way finish (they are bounded by the drain timeout); what is left then is cancelled
        await self._tasks.stop(grace=self.timings.renew_deadline)
        if self.membership is not None and self.held:
            with contextlib.suppress(KubeError):
                await self.membership.observe()  # the next owners as they are now, with their webhook URLs
        others = {r: info for r, info in self._replicas().items() if r != self.replica_id}
        successors = assign(self.members, others, {r.replica_id: r.unreachable for r in others.values()})
        held = dict(self.held)
        # while the Leases are still held: each webhook configuration re-pointed at the next owner, or deleted
        await asyncio.gather(
            *(self._hand_over(c, others.get(successors.get(c, "")), False) for c in held), return_exceptions=True
        )
        self._stopped = True  # nothing is written to a member from here on
        releases = [(m, self.held.get(c, h).record) for c, h in held.items() if (m := self.members.get(c)) is not None]
        await asyncio.gather(*(self._release_lease(m, r) for m, r in releases), return_exceptions=True)
        unsure = [m for c in sorted(self._unsure - set(held)) if (m := self.members.get(c)) is not None]
        await asyncio.gather(*(self._release_if_mine(m) for m in unsure), return_exceptions=True)
        self.held = {}
        if self.membership is not None:
            await self.membership.leave()
        for member in self.members.values():
            await member.client.close()


class Fenced(KubeConnectionError):
    """A write refused before it was sent: this process does not hold (or no longer holds) the cluster's Lease."""

    def __init__(self, cluster: str) -> None:
        super().__init__(cluster, "write fenced: this process does not hold the cluster's lease")


class WriteFence(Protocol):
    """What decides whether a write may be sent: a `ShardCoordinator` (per cluster) or a `LeaderLease`."""

    def writing(self, cluster: str) -> contextlib.AbstractContextManager[None]: ...


def fence_writes(client: ClusterClient, coordinator: WriteFence, cluster: str) -> None:
    """Send this client's writes (every method but GET) through `coordinator.writing(cluster)`.

    `ClusterClient.request_bytes` is where every call of the client goes (get, create, replace, patch, delete, the
    undecoded server-side applies, the writer's status PUTs, events: `request` calls it too), so the instance's
    `request_bytes` is wrapped: refused once the Lease is not held, counted in flight so a graceful release can wait
    for the answers.
    """
    send = client.request_bytes

    async def request_bytes(method: str, path: str, **kwargs: Any) -> bytes:
        if method.upper() == "GET":
            return await send(method, path, **kwargs)
        with coordinator.writing(cluster):
            return await send(method, path, **kwargs)

    setattr(client, "request_bytes", request_bytes)  # noqa: B010 - an instance attribute shadowing the method


# --- the provider seen by the controller -------------------------------------------------------------------


async def member_client(registration: ClusterRegistration) -> ClusterClient:
    """The client the coordinator reaches a member's Lease with (the controller opens its own for the rest)."""
    config = resolve_kubeconfig(registration)
    return await ClusterClient.from_kubeconfig(config_dict=config, context=registration.context, name=registration.name)


class ShardedProvider:
    """A `RegistrationProvider` that hands the controller only the clusters whose Leases this process holds.

    The inner provider says which clusters exist (each becomes a member of the coordinator, with its own client);
    the coordinator says which of them are ours. An acquired cluster is `added`; a cluster handed over is
    `removed`, and its Lease is released only once the controller has applied that batch (the next batch is asked
    for after the previous one took effect); a lost or fenced cluster is `removed` at once (its writes are already
    refused by `may_write`). `registry_listeners` hear of every registry change, owned or not.
    """

    def __init__(
        self,
        inner: RegistrationProvider,
        coordinator: ShardCoordinator,
        *,
        connect: Callable[[ClusterRegistration], Awaitable[ClusterClient]] = member_client,
    ) -> None:
        self.inner = inner
        self.coordinator = coordinator
        self.connect = connect
        self.registry_listeners: list[Callable[[RegistryChange], None]] = []
        self._registrations: dict[str, ClusterRegistration] = {}
        self._in_controller: dict[str, ClusterRegistration] = {}
        self._client_errors: dict[str, str] = {}
        self._outbox: asyncio.Queue[tuple[list[RegistryChange], asyncio.Future[None]]] = asyncio.Queue()
        self._tasks = BackgroundTasks("ha registry")
        self._registry_seen = asyncio.Event()
        self._started = False
        coordinator.listeners.insert(0, self)

    @property
    def errors(self) -> dict[str, str]:
        errors = dict(self.inner.errors)
        errors.update(self._client_errors)
        if self.coordinator.last_error:
            errors["ha"] = self.coordinator.last_error
        for cluster, message in self.coordinator.refused().items():
            errors[f"cluster {cluster}"] = message
        return errors

    @errors.setter
    def errors(self, value: dict[str, str]) -> None:
        self.inner.errors = value

    def snapshot(self) -> dict[str, ClusterRegistration]:
        return dict(self._in_controller)

    def registrations(self) -> dict[str, ClusterRegistration]:
        """Every registered cluster, owned or not."""
        return dict(self._registrations)

    def _emit(self, change: RegistryChange) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait(([change], done))
        return done

    # --- OwnershipListener ---------------------------------------------------------------------------------

    def acquired(self, cluster: str) -> None:
        registration = self._registrations.get(cluster)
        if registration is not None and cluster not in self._in_controller:
            self._in_controller[cluster] = registration
            self._emit(RegistryChange("added", registration))

    async def handing_over(self, cluster: str, successor: Replica | None, removed: bool) -> None:
        return None

    async def stopping(self, cluster: str) -> None:
        registration = self._in_controller.pop(cluster, None)
        if registration is not None:
            await self._emit(RegistryChange("removed", registration))

    def lost(self, cluster: str) -> None:
        registration = self._in_controller.pop(cluster, None)
        if registration is not None:
            self._emit(RegistryChange("removed", registration))

    # --- the registry --------------------------------------------------------------------------------------

    async def _follow_inner(self) -> None:
        async for changes in self.inner.watch():
            for change in changes:
                name = change.registration.name
                if change.kind == "removed":
                    self._registrations.pop(name, None)
                    self._client_errors.pop(name, None)
                    self.coordinator._spawn(self.coordinator.remove_member(name), f"ha-remove-{name}")
                else:
                    try:
                        client = await self.connect(change.registration)
                    except Exception as exc:  # a bad registration is reported, never a crash
                        self._client_errors[name] = str(exc)
                        log.error("ha: cluster %s: cannot connect: %s", name, exc)
                        continue
                    self._client_errors.pop(name, None)
                    self._registrations[name] = change.registration
                    self.coordinator.add_member(name, client)
                    if change.kind == "changed" and name in self._in_controller:
                        self._in_controller[name] = change.registration
                        self._emit(change)
                for listener in self.registry_listeners:
                    listener(change)
            self._registry_seen.set()

    async def start(self, *, wait_settled: bool = False) -> None:
        """Read the registry, claim the membership (`--ha`), run the first round; with `wait_settled`, wait
        until a cluster is held or every wanted one is decided (at most a lease duration and two rounds)."""
        if self._started:
            return
        self._started = True
        self._tasks.spawn(self._follow_inner(), "ha-registry")
        await self._registry_seen.wait()
        coordinator = self.coordinator
        if coordinator.membership is not None:
            await coordinator.membership.claim(coordinator.advertise())
        self._tasks.spawn(coordinator.run(), "ha-coordinator")
        await coordinator.wait_rounds(1)
        if wait_settled:
            timings = coordinator.timings
            await coordinator.wait_settled(timings.lease_duration + 3 * timings.retry_period)

    async def watch(self) -> AsyncGenerator[list[RegistryChange], None]:
        await self.start()
        first: list[RegistryChange] = []  # what the first rounds acquired, as one batch (possibly empty)
        first_done: list[asyncio.Future[None]] = []
        while not self._outbox.empty():
            changes, done = self._outbox.get_nowait()
            first.extend(changes)
            first_done.append(done)
        try:
            yield first
        finally:
            for done in first_done:
                if not done.done():
                    done.set_result(None)
        while True:
            changes, done = await self._outbox.get()
            try:
                yield changes
            finally:
                if not done.done():
                    done.set_result(None)

    async def close(self) -> None:
        await self._tasks.stop()
        await self.coordinator.close()
        await self.inner.close()
