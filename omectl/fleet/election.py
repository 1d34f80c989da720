"""Leader election over one `coordination.k8s.io` Lease: which `--ha` replica does a fleet-wide job alone.

Under `--ha` every replica runs its share of the member clusters, but a FleetRuntime must be driven by one process
(one status writer, one rollout state machine): the replica holding the Lease `omectl-fleet-runtimes` in the hub
namespace of the hub (`omectl.controller.fleet_driver`). The rules are those of the ownership Leases
(`omectl.fleet.sharding`, "Timing"), as client-go's `tools/leaderelection` has them:

- a Lease held by another process is taken only once this process has seen the same record (resourceVersion) for
  `leaseDurationSeconds` of its own monotonic time, or once it is released (`holderIdentity: ""`);
- the holder renews every retry period and fences itself at its last successful renewal's stamp plus the renew
  deadline: `writing()` refuses (`Fenced`) from then on, and the loss is reported;
- a clean stop releases the Lease (`holderIdentity: ""`, duration 1 s) after the writes in flight are answered, so
  another replica takes over at its next retry instead of a lease duration later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from omectl.fleet.leases import (
    Holder,
    LeaseClock,
    LeaseRecord,
    Leases,
    LeaseTimings,
    SystemClock,
    lease_spec,
    micro_time,
)
from omectl.fleet.sharding import LEASE_KIND_LABEL, Fenced
from omectl.kube.client import ClusterClient, KubeError

__all__ = ["LeaderLease"]

log = logging.getLogger(__name__)

Started = Callable[[], Awaitable[None]]
Stopped = Callable[[str], Awaitable[None]]


class LeaderLease:
    """One Lease `name` in `namespace` of the cluster `client` reaches, and whether this process holds it."""

    def __init__(
        self,
        client: ClusterClient,
        namespace: str,
        name: str,
        holder: Holder,
        *,
        timings: LeaseTimings | None = None,
        clock: LeaseClock | None = None,
    ) -> None:
        self.client = client
        self.namespace = namespace
        self.name = name
        self.holder = holder
        self.timings = timings or LeaseTimings()
        self.clock: LeaseClock = clock if clock is not None else SystemClock()
        self.leases = Leases(client, namespace, request_timeout=self.timings.renew_deadline / 2)
        self.record: LeaseRecord | None = None
        """The Lease as last read or written: who holds it (`holder`), for status and logs."""
        self._seen: tuple[str, float] | None = None  # (resourceVersion, monotonic time first seen)
        self._deadline: float | None = None  # while held: the monotonic time writes stop without a renewal
        self._in_flight = 0
        self._idle = asyncio.Event()  # set while no write is in flight
        self._idle.set()
        self._stopped = False

    @property
    def leading(self) -> bool:
        return self._deadline is not None

    def may_write(self) -> bool:
        """Whether a write may be sent now: the Lease is held and its renew deadline is ahead."""
        return self._deadline is not None and not self._stopped and self.clock.monotonic() < self._deadline

    @contextlib.contextmanager
    def writing(self, _cluster: str = "") -> Iterator[None]:
        """Around one write of the elected job: refused (`Fenced`) unless `may_write`, counted while in flight (the
        release waits for them). Takes a cluster name to stand where a `ShardCoordinator` does (`fence_writes`)."""
        if not self.may_write():
            raise Fenced(f"lease {self.namespace}/{self.name}")
        self._in_flight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._idle.set()

    def status(self) -> dict[str, Any]:
        return {
            "lease": f"{self.namespace}/{self.name}",
            "leading": self.leading,
            "holder": self.record.holder if self.record is not None else "",
        }

    async def run(self, started: Started, stopped: Stopped) -> None:
        """Until cancelled: take the Lease when free or expired, renew it while held; `started()` once it is taken,
        `stopped(why)` once it is lost (then try again)."""
        while True:
            was_leading = self.leading
            why = await self.run_round()
            if self.leading and not was_leading:
                await started()
            elif was_leading and not self.leading:
                await stopped(why)
            await self.clock.sleep(self.timings.retry_period)

    async def run_round(self) -> str:
        """One retry period's work: renew the Lease when held, else take it when free or expired; returns why it was
        lost, if it was (`run` calls it every retry period; tests call it by hand)."""
        if self._deadline is not None:
            return await self._renew()
        try:
            record = await self.leases.get(self.name)
        except KubeError as exc:
            log.debug("lease %s/%s: cannot be read: %s", self.namespace, self.name, exc)
            return ""
        now_mono = self.clock.monotonic()
        self._observe(record, now_mono)
        if record is not None and record.holder not in ("", self.holder.identity) and not self._expired(now_mono):
            return ""
        await self._acquire(record)
        return ""

    def _observe(self, record: LeaseRecord | None, now_mono: float) -> None:
        if record is None:
            self._seen = None
        elif self._seen is None or self._seen[0] != record.resource_version:
            self._seen = (record.resource_version, now_mono)
        self.record = record

    def _expired(self, now_mono: float) -> bool:
        if self._seen is None or self.record is None:
            return False
        return now_mono >= self._seen[1] + self.record.duration_seconds

    def _labels(self) -> dict[str, str]:
        return {LEASE_KIND_LABEL: "leader"}

    async def _acquire(self, record: LeaseRecord | None) -> None:
        stamp, stamp_mono = self.clock.time(), self.clock.monotonic()
        transitions = 0 if record is None else record.transitions + (record.holder != self.holder.identity)
        spec = lease_spec(self.holder.identity, stamp, micro_time(stamp), transitions, self.timings.lease_seconds)
        try:
            written = await self.leases.write(self.name, spec, self._labels(), record, self.holder.annotations())
        except KubeError as exc:
            log.warning("lease %s/%s: taking it failed: %s", self.namespace, self.name, exc)
            return
        if written is None:
            return  # another process wrote first
        self._observe(written, stamp_mono)
        self._deadline = stamp_mono + self.timings.renew_deadline
        previous = record.holder if record is not None else ""
        log.info("lease %s/%s: %s took it (from %s)", self.namespace, self.name, written.holder, previous or "nobody")

    async def _renew(self) -> str:
        record = self.record
        assert record is not None
        stamp, stamp_mono = self.clock.time(), self.clock.monotonic()
        spec = lease_spec(
            self.holder.identity, stamp, record.acquire_time, record.transitions, self.timings.lease_seconds
        )
        try:
            written = await self.leases.write(self.name, spec, self._labels(), record)
        except KubeError as exc:
            log.warning("lease %s/%s: renewing it failed: %s", self.namespace, self.name, exc)
            if self.clock.monotonic() >= (self._deadline or 0.0):
                return self._lose(f"not renewed within the renew deadline ({self.timings.renew_deadline:g} s)")
            return ""
        if written is None:
            return self._lose("the lease was changed by another writer")
        self._observe(written, stamp_mono)
        self._deadline = stamp_mono + self.timings.renew_deadline
        return ""

    def _lose(self, why: str) -> str:
        self._deadline = None
        log.warning("lease %s/%s: %s lost it: %s", self.namespace, self.name, self.holder.identity, why)
        return why

    async def release(self) -> None:
        """Stop writing, wait (up to half the renew deadline) for the writes in flight, then free the Lease; one
        still unanswered keeps it until it expires."""
        self._stopped = True
        record, self._deadline = self.record, None
        if record is None or record.holder != self.holder.identity:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.timings.renew_deadline / 2):
                await self._idle.wait()
        if self._in_flight:
            log.warning("lease %s/%s: a write is still in flight; left to expire", self.namespace, self.name)
            return
        stamp = self.clock.time()
        spec = lease_spec("", stamp, micro_time(stamp), record.transitions, 1)
        try:
            if await self.leases.write(self.name, spec, record.labels, record) is not None:
                log.info("lease %s/%s: released", self.namespace, self.name)
        except KubeError as exc:
            log.warning("lease %s/%s: releasing it failed (it expires on its own): %s", self.namespace, self.name, exc)
