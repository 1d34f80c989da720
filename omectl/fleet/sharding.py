"""Sharding the fleet across controller replicas with coordination.k8s.io Leases.

Every replica of `omectl run --ha` holds two kinds of Lease in one namespace of a coordination cluster (the hub,
or any cluster named by `ha_kubeconfig`):

- a **membership** Lease `omectl-replica-<id>`, renewed every retry period; a replica is *live* while its
  `renewTime + leaseDurationSeconds` lies in the future (wall clock: membership only steers the assignment,
  never safety);
- one **ownership** Lease `omectl-cluster-<name>` per cluster it owns: `holderIdentity` is the replica id,
  `leaseTransitions` counts the hand-overs, `renewTime` moves every retry period.

The owner a cluster *should* have is decided by rendezvous (highest-random-weight) hashing over the live
replicas: each (replica, cluster) pair gets a pseudo-random weight, the highest weight wins. A replica joining
takes about 1/N of the clusters, each from whichever replica had it; a replica leaving gives up only its own.

Each retry period a replica renews its membership and every ownership Lease it holds, lists the Leases, and
then: it releases the clusters whose desired owner is now another replica (stop that cluster's informers and
workers first, then write `holderIdentity: ""`), and acquires the clusters whose desired owner it is and whose
Lease is free, expired, or already its own. Every Lease write carries the `resourceVersion` read, so of two
replicas racing for one Lease exactly one write succeeds (the other gets 409 Conflict).

**Timing (why two replicas never write to one cluster at once).** The defaults are client-go's and
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
   limit client-go's leader election has).
4. A graceful release (rebalancing, a cluster deregistered) refuses new writes, waits until every write in
   flight has its answer, stops the cluster's informers and workers, and only then writes the release (a write
   still unanswered after R/2 keeps the Lease until it expires instead). So every write of the old holder
   committed or failed before the next holder could acquire, let alone write.

Replica ids must be unique: two processes with one id would both believe they hold the same Leases.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import logging
import math
import os
import re
import secrets
import socket
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from omectl.kube.client import ClusterClient, KubeAPIError, KubeConnectionError, KubeError
from omectl.kube.resources import LEASES, NAMESPACES

from .providers import RegistrationProvider, RegistryChange
from .registration import ClusterRegistration

__all__ = [
    "CLUSTER_LEASE_PREFIX",
    "DEFAULT_HA_NAMESPACE",
    "LEASE_KIND_LABEL",
    "REPLICA_LEASE_PREFIX",
    "Fenced",
    "LeaseRecord",
    "LeaseTimings",
    "Leases",
    "ShardCoordinator",
    "ShardedProvider",
    "assign",
    "default_replica_id",
    "desired_owner",
    "fence_writes",
    "rendezvous_weight",
    "validate_replica_id",
]

log = logging.getLogger(__name__)

DEFAULT_HA_NAMESPACE = "omectl-system"
REPLICA_LEASE_PREFIX = "omectl-replica-"
CLUSTER_LEASE_PREFIX = "omectl-cluster-"
LEASE_KIND_LABEL = "omectl.io/ha-lease"  # "replica" or "cluster"
CLUSTER_NAME_LABEL = "omectl.io/cluster-name"
JITTER_FACTOR = 1.2  # client-go's leaderelection.JitterFactor
_REPLICA_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_REPLICA_ID_MAX = 63


# --- timings and identities ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseTimings:
    """Lease duration, renew deadline and retry period, in seconds (client-go's defaults: 15 / 10 / 2)."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if self.retry_period <= 0:
            raise ValueError("the retry period must be positive")
        if not self.renew_deadline > JITTER_FACTOR * self.retry_period:
            raise ValueError(
                f"the renew deadline ({self.renew_deadline} s) must exceed {JITTER_FACTOR} x the retry period "
                f"({self.retry_period} s)"
            )
        if not self.lease_duration > self.renew_deadline:
            raise ValueError(
                f"the lease duration ({self.lease_duration} s) must exceed the renew deadline ({self.renew_deadline} s)"
            )

    @property
    def lease_seconds(self) -> int:
        """`leaseDurationSeconds` as written (an integer, rounded up so it never undercuts the fence)."""
        return math.ceil(self.lease_duration)


def validate_replica_id(replica_id: str) -> str | None:
    """The problem with a replica id, or None (lowercase letters, digits and '-', at most 63 characters)."""
    if len(replica_id) > _REPLICA_ID_MAX or not _REPLICA_ID.match(replica_id):
        return (
            f'invalid replica id "{replica_id}": use lowercase letters, digits and "-", starting and ending with a '
            f"letter or digit (at most {_REPLICA_ID_MAX} characters)"
        )
    return None


def default_replica_id() -> str:
    """`<host>-<random>`: the pod's name in a Deployment, made unique for processes sharing a host."""
    host = re.sub(r"[^a-z0-9-]+", "-", (os.environ.get("POD_NAME") or socket.gethostname()).lower()).strip("-")
    return f"{host[:50].strip('-') or 'omectl'}-{secrets.token_hex(3)}"


# --- rendezvous hashing ----------------------------------------------------------------------------------


def rendezvous_weight(replica: str, cluster: str) -> int:
    """The pseudo-random weight of a (replica, cluster) pair: the same on every replica, on every run."""
    digest = hashlib.blake2b(f"{cluster}\x00{replica}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def desired_owner(cluster: str, replicas: Iterable[str]) -> str | None:
    """The replica of highest weight for `cluster` (ties, practically impossible, go to the larger id)."""
    return max(replicas, key=lambda r: (rendezvous_weight(r, cluster), r), default=None)


def assign(clusters: Iterable[str], replicas: Iterable[str]) -> dict[str, str]:
    """The desired owner of every cluster; empty when there is no replica."""
    live = sorted(set(replicas))
    if not live:
        return {}
    return {c: owner for c in clusters if (owner := desired_owner(c, live)) is not None}


# --- Lease objects -----------------------------------------------------------------------------------------


def micro_time(t: float) -> str:
    """A MicroTime (`2006-01-02T15:04:05.000000Z`)."""
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_micro_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class LeaseRecord:
    """What a Lease says: who holds it, since and until when, and how often it changed hands."""

    name: str
    holder: str
    duration_seconds: int
    acquire_time: str
    renew_time: str
    transitions: int
    resource_version: str
    labels: dict[str, str]

    @classmethod
    def from_object(cls, obj: dict[str, Any]) -> LeaseRecord:
        meta = obj.get("metadata") or {}
        spec = obj.get("spec") or {}
        return cls(
            name=str(meta.get("name", "")),
            holder=str(spec.get("holderIdentity") or ""),
            duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
            acquire_time=str(spec.get("acquireTime") or ""),
            renew_time=str(spec.get("renewTime") or ""),
            transitions=int(spec.get("leaseTransitions") or 0),
            resource_version=str(meta.get("resourceVersion", "")),
            labels=dict(meta.get("labels") or {}),
        )

    def fresh(self, now: float) -> bool:
        """Whether `renewTime + leaseDurationSeconds` is after `now` (wall clock)."""
        renewed = parse_micro_time(self.renew_time)
        return bool(self.holder) and renewed is not None and renewed + self.duration_seconds > now


class Leases:
    """Lease reads and optimistic-concurrency writes in one namespace of the coordination cluster."""

    def __init__(self, client: ClusterClient, namespace: str, *, request_timeout: float = 5.0) -> None:
        self.client = client
        self.namespace = namespace
        self.request_timeout = request_timeout
        self._namespace_checked = False

    def _path(self, name: str | None = None) -> str:
        return LEASES.path(self.namespace, name)

    def _body(self, name: str, spec: dict[str, Any], labels: dict[str, str], rv: str | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace, "labels": labels}
        if rv:
            meta["resourceVersion"] = rv
        return {"apiVersion": LEASES.api_version, "kind": LEASES.kind, "metadata": meta, "spec": spec}

    async def list(self) -> dict[str, LeaseRecord]:
        body = await self.client.request(
            "GET", self._path(), query={"labelSelector": LEASE_KIND_LABEL}, timeout=self.request_timeout
        )
        records = (LeaseRecord.from_object(o) for o in body.get("items") or [])
        return {r.name: r for r in records}

    async def get(self, name: str) -> LeaseRecord | None:
        try:
            return LeaseRecord.from_object(
                await self.client.request("GET", self._path(name), timeout=self.request_timeout)
            )
        except KubeAPIError as exc:
            if exc.status == 404:
                return None
            raise

    async def write(
        self, name: str, spec: dict[str, Any], labels: dict[str, str], previous: LeaseRecord | None
    ) -> LeaseRecord | None:
        """Create (no `previous`) or replace at `previous`'s resourceVersion; None when another write won."""
        try:
            if previous is None:
                obj = await self._create(name, spec, labels)
            else:
                obj = await self.client.request(
                    "PUT",
                    self._path(name),
                    body=self._body(name, spec, labels, previous.resource_version),
                    timeout=self.request_timeout,
                )
        except KubeAPIError as exc:
            if exc.status in (404, 409):  # 409: changed or created since; 404: deleted since
                return None
            raise
        return LeaseRecord.from_object(obj)

    async def _create(self, name: str, spec: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
        body = self._body(name, spec, labels, None)
        try:
            return await self.client.request("POST", self._path(), body=body, timeout=self.request_timeout)
        except KubeAPIError as exc:
            if exc.status != 404 or self._namespace_checked:
                raise
        # The namespace is missing: create it once (best effort, the role may not allow it), then retry.
        self._namespace_checked = True
        with contextlib.suppress(KubeAPIError):
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            await self.client.request("POST", NAMESPACES.path(), body=namespace, timeout=self.request_timeout)
        return await self.client.request("POST", self._path(), body=body, timeout=self.request_timeout)

    async def delete(self, record: LeaseRecord) -> None:
        """Delete a Lease if it is still as read (a precondition on its resourceVersion)."""
        with contextlib.suppress(KubeAPIError):
            await self.client.delete(
                LEASES, record.name, self.namespace, preconditions={"resourceVersion": record.resource_version}
            )


# --- the coordinator -------------------------------------------------------------------------------------


@dataclass
class _Held:
    record: LeaseRecord
    deadline: float  # monotonic: writes stop at this instant unless a renewal moves it


class ShardCoordinator:
    """One replica's side of the sharding: its membership, the cluster Leases it holds, and the write fence.

    `start_cluster(name)` is called (synchronously) right after a cluster's Lease is acquired, `stop_cluster(name)`
    is awaited before a Lease is released and must return once nothing of that cluster runs any more, and
    `lost_cluster(name)` is called when a Lease was lost or its renew deadline passed (writes are fenced already).
    """

    def __init__(
        self,
        client: ClusterClient,
        replica_id: str,
        *,
        namespace: str = DEFAULT_HA_NAMESPACE,
        timings: LeaseTimings | None = None,
        clock: Callable[[], float] = time.time,
        owns_client: bool = False,
    ) -> None:
        problem = validate_replica_id(replica_id)
        if problem is not None:
            raise ValueError(problem)
        self.client = client
        self.owns_client = owns_client
        self.replica_id = replica_id
        self.timings = timings or LeaseTimings()
        self.leases = Leases(client, namespace, request_timeout=self.timings.renew_deadline / 2)
        self.clock = clock
        self.registered: set[str] = set()
        self.held: dict[str, _Held] = {}
        self.releasing: set[str] = set()
        self.live_replicas: list[str] = []
        self.desired: dict[str, str] = {}
        self.records: dict[str, LeaseRecord] = {}
        self.rounds = 0
        self.last_error: str | None = None
        self.start_cluster: Callable[[str], None] = lambda name: None
        self.stop_cluster: Callable[[str], Any] = _nothing
        self.lost_cluster: Callable[[str], None] = lambda name: None
        self._membership: LeaseRecord | None = None
        self._observed: dict[str, tuple[str, float]] = {}  # lease name -> (resourceVersion, monotonic first seen)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False
        self.draining: set[str] = set()
        self._in_flight: dict[str, int] = {}
        self._drained: dict[str, asyncio.Future[None]] = {}
        self._round_done = asyncio.Condition()

    # --- the fence -------------------------------------------------------------------------------------

    def may_write(self, cluster: str) -> bool:
        """Whether this replica may send a write to `cluster` now: it holds the Lease and the deadline is ahead."""
        held = self.held.get(cluster)
        return (
            held is not None and not self._closing and cluster not in self.draining and time.monotonic() < held.deadline
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

    # --- one round ----------------------------------------------------------------------------------------

    def _labels(self, kind: str, cluster: str | None = None) -> dict[str, str]:
        labels = {LEASE_KIND_LABEL: kind}
        if cluster is not None:
            labels[CLUSTER_NAME_LABEL] = cluster
        return labels

    def _spec(self, holder: str, stamp: float, acquired: str, transitions: int, duration: int) -> dict[str, Any]:
        return {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": acquired,
            "renewTime": micro_time(stamp),
            "leaseTransitions": transitions,
        }

    async def run_round(self) -> None:
        """Renew, observe, rebalance: what a replica does every retry period."""
        try:
            await self._round()
            self.last_error = None
        except KubeError as exc:
            self.last_error = str(exc)
            log.warning("ha: %s", exc)
        finally:
            self.rounds += 1
            async with self._round_done:
                self._round_done.notify_all()

    async def wait_rounds(self, count: int, timeout: float | None = None) -> None:
        async with asyncio.timeout(timeout), self._round_done:
            await self._round_done.wait_for(lambda: self.rounds >= count)

    async def _round(self) -> None:
        # Renewals first: they are what the fence waits on; the list and the decisions can lag behind.
        membership, *_ = await asyncio.gather(
            self._renew_membership(), *(self._renew(name) for name in list(self.held)), return_exceptions=True
        )
        if isinstance(membership, BaseException):
            raise membership
        records = await self.leases.list()
        now_mono = time.monotonic()
        for name, record in records.items():
            seen = self._observed.get(name)
            if seen is None or seen[0] != record.resource_version:
                self._observed[name] = (record.resource_version, now_mono)
        for name in list(self._observed):
            if name not in records:
                del self._observed[name]
        self.records = records
        now = self.clock()
        live = {
            r.holder
            for r in records.values()
            if r.labels.get(LEASE_KIND_LABEL) == "replica"
            and r.name == REPLICA_LEASE_PREFIX + r.holder
            and r.fresh(now)
        }
        live.add(self.replica_id)
        self.live_replicas = sorted(live)
        self.desired = assign(self.registered, self.live_replicas)
        if self._closing:
            return
        for cluster in list(self.held):
            if self.desired.get(cluster) != self.replica_id and cluster not in self.releasing:
                self._spawn(self.release(cluster), f"ha-release-{cluster}")
        wanted = [
            c
            for c in sorted(self.registered)
            if self.desired.get(c) == self.replica_id and c not in self.held and c not in self.releasing
        ]
        await asyncio.gather(*(self._try_acquire(c, records.get(CLUSTER_LEASE_PREFIX + c), now_mono) for c in wanted))

    def _expired(self, record: LeaseRecord, now_mono: float) -> bool:
        seen = self._observed.get(record.name)
        if seen is None or seen[0] != record.resource_version:
            return False  # never judge a record not observed for a whole lease duration
        return now_mono >= seen[1] + record.duration_seconds

    async def _try_acquire(self, cluster: str, record: LeaseRecord | None, now_mono: float) -> None:
        if record is not None and record.holder not in ("", self.replica_id) and not self._expired(record, now_mono):
            return
        stamp, stamp_mono = self.clock(), time.monotonic()
        transitions = 0 if record is None else record.transitions + (record.holder != self.replica_id)
        spec = self._spec(self.replica_id, stamp, micro_time(stamp), transitions, self.timings.lease_seconds)
        written = await self.leases.write(
            CLUSTER_LEASE_PREFIX + cluster, spec, self._labels("cluster", cluster), record
        )
        if written is None:
            log.info("ha: cluster %s: another replica acquired the lease first", cluster)
            return
        if self._closing or cluster not in self.registered:
            await self._release_lease(written)
            return
        self.held[cluster] = _Held(written, stamp_mono + self.timings.renew_deadline)
        previous = record.holder if record is not None else ""
        log.info(
            "ha: replica %s acquired cluster %s (from %s, transitions %d)",
            self.replica_id,
            cluster,
            previous or "nobody",
            transitions,
        )
        self.start_cluster(cluster)

    async def _renew(self, cluster: str) -> None:
        held = self.held.get(cluster)
        if held is None:
            return
        stamp, stamp_mono = self.clock(), time.monotonic()
        record = held.record
        spec = self._spec(self.replica_id, stamp, record.acquire_time, record.transitions, self.timings.lease_seconds)
        try:
            written = await self.leases.write(record.name, spec, self._labels("cluster", cluster), record)
        except KubeError as exc:
            log.warning("ha: cluster %s: renewing the lease failed: %s", cluster, exc)
            self._check_deadline(cluster)
            return
        if self.held.get(cluster) is not held:
            return  # released or fenced while the renewal was in flight
        if written is None:
            self._lose(cluster, "the lease was changed by another writer")
            return
        held.record = written
        held.deadline = stamp_mono + self.timings.renew_deadline

    def _check_deadline(self, cluster: str) -> None:
        held = self.held.get(cluster)
        if held is not None and time.monotonic() >= held.deadline:
            self._lose(cluster, f"not renewed within the renew deadline ({self.timings.renew_deadline} s)")

    def _lose(self, cluster: str, why: str) -> None:
        if self.held.pop(cluster, None) is None:
            return
        log.warning("ha: replica %s lost cluster %s: %s; its writes are fenced", self.replica_id, cluster, why)
        if cluster not in self.releasing:
            self.lost_cluster(cluster)

    async def _renew_membership(self) -> None:
        stamp = self.clock()
        name = REPLICA_LEASE_PREFIX + self.replica_id
        previous = self._membership
        acquired = previous.acquire_time if previous is not None else micro_time(stamp)
        spec = self._spec(self.replica_id, stamp, acquired, 0, self.timings.lease_seconds)
        written = await self.leases.write(name, spec, self._labels("replica"), previous)
        if written is None:  # first start with a leftover Lease, or our last answer was lost: read, then write
            current = await self.leases.get(name)
            written = await self.leases.write(name, spec, self._labels("replica"), current)
        self._membership = written

    # --- release and shutdown ----------------------------------------------------------------------------

    async def release(self, cluster: str) -> None:
        """Hand a cluster over: stop everything of it here (renewing meanwhile), then release its Lease."""
        if cluster in self.releasing or cluster not in self.held:
            return
        self.releasing.add(cluster)
        try:
            log.info("ha: replica %s releasing cluster %s", self.replica_id, cluster)
            # 1. no new write, and every write in flight answered (the Lease is renewed meanwhile)
            drained = await self._drain(cluster, self.timings.renew_deadline / 2)
            # 2. the cluster's informers and workers stopped, its client closed
            await self.stop_cluster(cluster)
            held = self.held.pop(cluster, None)
            # 3. only then the Lease is free for the next holder; a write that never answered keeps it until expiry
            if held is not None and drained:
                await self._release_lease(held.record)
            elif held is not None:
                log.warning("ha: cluster %s: a write is still in flight; its lease is left to expire", cluster)
        finally:
            self.releasing.discard(cluster)
            self.draining.discard(cluster)

    async def _release_lease(self, record: LeaseRecord) -> None:
        """Write `holderIdentity: ""` (client-go's release: duration 1 s), re-reading after a lost race."""
        current: LeaseRecord | None = record
        try:
            for _ in range(3):
                if current is None or current.holder != self.replica_id:
                    return  # gone, or someone else's by now
                stamp = self.clock()
                spec = self._spec("", stamp, micro_time(stamp), current.transitions, 1)
                if await self.leases.write(current.name, spec, current.labels, current) is not None:
                    return
                current = await self.leases.get(current.name)  # a renewal in flight moved it: read, retry
        except KubeError as exc:
            log.warning("ha: releasing %s failed (it expires on its own): %s", record.name, exc)

    def _spawn(self, coro: Any, name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def run(self) -> None:
        """Rounds every retry period (with client-go's jitter) and a watchdog that fences at each deadline."""
        watchdog = asyncio.create_task(self._watchdog(), name="ha-watchdog")
        try:
            while True:
                started = time.monotonic()
                await self.run_round()
                period = self.timings.retry_period * (1 + 0.2 * secrets.randbelow(1000) / 1000)
                await asyncio.sleep(max(0.0, period - (time.monotonic() - started)))
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog

    async def _watchdog(self) -> None:
        while True:
            now = time.monotonic()
            for cluster in list(self.held):
                self._check_deadline(cluster)
            upcoming = [h.deadline for h in self.held.values()]
            wait = min([*upcoming, now + self.timings.retry_period]) - now
            await asyncio.sleep(min(max(wait, 0.01), self.timings.retry_period))

    async def close(self) -> None:
        """Stop writing everywhere, release every Lease held and leave the membership (call once stopped)."""
        self._closing = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        held, self.held = self.held, {}
        await asyncio.gather(*(self._release_lease(h.record) for h in held.values()), return_exceptions=True)
        if self._membership is not None:
            with contextlib.suppress(KubeError):
                await self.leases.delete(self._membership)
        if self.owns_client:
            await self.client.close()


async def _nothing(name: str) -> None:
    return None


class Fenced(KubeConnectionError):
    """A write refused before it was sent: this replica does not hold (or no longer holds) the cluster's Lease."""

    def __init__(self, cluster: str) -> None:
        super().__init__(cluster, "write fenced: this replica does not hold the cluster's lease")


def fence_writes(client: ClusterClient, coordinator: ShardCoordinator, cluster: str) -> None:
    """Send this client's writes (every method but GET) through `coordinator.writing(cluster)`.

    `ClusterClient.request` is where every call of the client goes (get, create, replace, patch, delete, the
    writer's status PUTs, events), so the instance's `request` is wrapped: refused once the Lease is not held,
    counted in flight so a graceful release can wait for the answers.
    """
    send = client.request

    async def request(method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if method.upper() == "GET":
            return await send(method, path, **kwargs)
        with coordinator.writing(cluster):
            return await send(method, path, **kwargs)

    setattr(client, "request", request)  # noqa: B010 - an instance attribute shadowing the method


# --- the provider seen by the controller -------------------------------------------------------------------


class ShardedProvider:
    """A `RegistrationProvider` that hands the controller only the clusters whose Leases this replica holds.

    The inner provider says which clusters exist; the coordinator says which of them are ours. An acquired
    cluster is `added`; a cluster handed over is `removed`, and its Lease is released only once the controller
    has applied that batch (the next batch is asked for after the previous one took effect); a lost or fenced
    cluster is `removed` at once (its writes are already refused by `may_write`).
    """

    def __init__(self, inner: RegistrationProvider, coordinator: ShardCoordinator) -> None:
        self.inner = inner
        self.coordinator = coordinator
        self._registrations: dict[str, ClusterRegistration] = {}
        self._in_controller: dict[str, ClusterRegistration] = {}
        self._outbox: asyncio.Queue[tuple[list[RegistryChange], asyncio.Future[None]]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[Any]] = []
        self._registry_seen = asyncio.Event()
        coordinator.start_cluster = self._start_cluster
        coordinator.stop_cluster = self._stop_cluster
        coordinator.lost_cluster = self._lost_cluster

    @property
    def errors(self) -> dict[str, str]:
        errors = dict(self.inner.errors)
        if self.coordinator.last_error:
            errors["ha"] = self.coordinator.last_error
        return errors

    @errors.setter
    def errors(self, value: dict[str, str]) -> None:
        self.inner.errors = value

    def snapshot(self) -> dict[str, ClusterRegistration]:
        return dict(self._in_controller)

    def _emit(self, change: RegistryChange) -> asyncio.Future[None]:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._outbox.put_nowait(([change], done))
        return done

    def _start_cluster(self, name: str) -> None:
        registration = self._registrations.get(name)
        if registration is not None and name not in self._in_controller:
            self._in_controller[name] = registration
            self._emit(RegistryChange("added", registration))

    async def _stop_cluster(self, name: str) -> None:
        registration = self._in_controller.pop(name, None)
        if registration is not None:
            await self._emit(RegistryChange("removed", registration))

    def _lost_cluster(self, name: str) -> None:
        registration = self._in_controller.pop(name, None)
        if registration is not None:
            self._emit(RegistryChange("removed", registration))

    async def _follow_inner(self) -> None:
        async for changes in self.inner.watch():
            for change in changes:
                name = change.registration.name
                if change.kind == "removed":
                    self._registrations.pop(name, None)
                    self.coordinator.registered.discard(name)
                    if name in self.coordinator.held:
                        self.coordinator._spawn(self.coordinator.release(name), f"ha-release-{name}")
                    continue
                self._registrations[name] = change.registration
                self.coordinator.registered.add(name)
                if change.kind == "changed" and name in self._in_controller:
                    self._in_controller[name] = change.registration
                    self._emit(change)
            self._registry_seen.set()

    async def watch(self) -> AsyncGenerator[list[RegistryChange], None]:
        if not self._tasks:
            self._tasks.append(asyncio.create_task(self._follow_inner(), name="ha-registry"))
            await self._registry_seen.wait()
            self._tasks.append(asyncio.create_task(self.coordinator.run(), name="ha-coordinator"))
            await self.coordinator.wait_rounds(1)
        first: list[RegistryChange] = []  # what the first round acquired, as one batch (possibly empty)
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
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        await self.coordinator.close()
        await self.inner.close()
