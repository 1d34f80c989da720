"""`coordination.k8s.io` Leases: timings, what a Lease says, optimistic-concurrency writes, and who holds one.

Used by `omectl.fleet.sharding` for the ownership Lease in every member cluster and for the `--ha` membership
Leases in the coordination cluster. A holder's identity is its replica id plus a per-process nonce
(`<replica-id>_<nonce>`, client-go's `<host>_<uuid>` habit), so two processes never share one, even when they
were started with the same replica id.
"""

from __future__ import annotations

import asyncio
import datetime
import math
import os
import re
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from omectl.kube import timestamps
from omectl.kube.client import ClusterClient, KubeAPIError
from omectl.kube.errors import Conflict, Forbidden, NotFound
from omectl.kube.informer import Clock
from omectl.kube.resources import LEASES, NAMESPACES

__all__ = [
    "HOST_ANNOTATION",
    "JITTER_FACTOR",
    "MODE_ANNOTATION",
    "PID_ANNOTATION",
    "Holder",
    "LeaseClock",
    "LeaseRecord",
    "LeaseTimings",
    "Leases",
    "SystemClock",
    "default_replica_id",
    "describe_holder",
    "lease_spec",
    "micro_time",
    "parse_micro_time",
    "validate_replica_id",
]

JITTER_FACTOR = 1.2  # client-go's leaderelection.JitterFactor


class LeaseClock(Clock, Protocol):
    """The informer's clock (monotonic time for deadlines and expiry, and sleeping) plus the wall clock that Lease
    times (`renewTime`, `acquireTime`) are written and judged in. Tests pass one that moves only when told."""

    def time(self) -> float: ...


class SystemClock:
    """Real time: `time.time`, `time.monotonic` and `asyncio.sleep` (usable outside an event loop, unlike the
    informer's loop clock: `may_write` and `status` are plain calls)."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


HOST_ANNOTATION = "omectl.io/holder-host"
PID_ANNOTATION = "omectl.io/holder-pid"
MODE_ANNOTATION = "omectl.io/holder-mode"  # "ha" (omectl run --ha) or "single"
_REPLICA_ID = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
NONCE_LENGTH = 8
# The identity `<id>_<nonce>` labels the webhook configuration it installs: a label value is at most 63 characters.
REPLICA_ID_MAX = 63 - 1 - NONCE_LENGTH


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
    """The problem with a replica id, or None (lowercase letters, digits and '-', at most 54 characters)."""
    if len(replica_id) > REPLICA_ID_MAX or not _REPLICA_ID.match(replica_id):
        return (
            f'invalid replica id "{replica_id}": use lowercase letters, digits and "-", starting and ending with a '
            f"letter or digit (at most {REPLICA_ID_MAX} characters)"
        )
    return None


def default_replica_id(host: str | None = None) -> str:
    """`host` (the pod's name in a Deployment: the setting `pod_name`), else the host name, as a valid replica id:
    stable across restarts; the per-process nonce of `Holder` is what keeps two processes apart."""
    host = re.sub(r"[^a-z0-9-]+", "-", (host or socket.gethostname()).lower()).strip("-")
    return host[:REPLICA_ID_MAX].strip("-") or "omectl"


def micro_time(t: float) -> str:
    """A MicroTime (`2006-01-02T15:04:05.000000Z`)."""
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_spec(holder: str, stamp: float, acquired: str, transitions: int, duration: int) -> dict[str, Any]:
    """A Lease's spec: `holder` (empty: released) renewed at `stamp`, held since `acquired` (a MicroTime)."""
    return {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration,
        "acquireTime": acquired,
        "renewTime": micro_time(stamp),
        "leaseTransitions": transitions,
    }


def parse_micro_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(frozen=True)
class Holder:
    """This process as a Lease holder: a replica id (stable) and a nonce (new for every process)."""

    replica_id: str
    nonce: str
    host: str
    pid: int
    ha: bool

    @classmethod
    def for_this_process(cls, replica_id: str | None = None, *, ha: bool = False, host: str | None = None) -> Holder:
        """`host`: the pod's name (the setting `pod_name`), else the machine's host name."""
        chosen = replica_id or default_replica_id(host)
        problem = validate_replica_id(chosen)
        if problem is not None:
            raise ValueError(problem)
        return cls(chosen, secrets.token_hex(NONCE_LENGTH // 2), host or socket.gethostname(), os.getpid(), ha)

    @property
    def identity(self) -> str:
        """`holderIdentity` of its Leases, and the value of the owner label on what it installs."""
        return f"{self.replica_id}_{self.nonce}"

    def annotations(self) -> dict[str, str]:
        mode = "ha" if self.ha else "single"
        return {HOST_ANNOTATION: self.host, PID_ANNOTATION: str(self.pid), MODE_ANNOTATION: mode}


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
    annotations: dict[str, str] = field(default_factory=dict)

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
            annotations=dict(meta.get("annotations") or {}),
        )

    def fresh(self, now: float) -> bool:
        """Whether `renewTime + leaseDurationSeconds` is after `now` (wall clock)."""
        renewed = parse_micro_time(self.renew_time)
        return bool(self.holder) and renewed is not None and renewed + self.duration_seconds > now

    @property
    def holder_runs_ha(self) -> bool:
        return self.annotations.get(MODE_ANNOTATION) == "ha"


def _seconds(value: str) -> str:
    """A MicroTime without its fraction, for people: `2025-06-01T10:00:00Z`."""
    stamp = parse_micro_time(value)
    if stamp is None:
        return value or "an unknown time"
    return timestamps.rfc3339(stamp)


def describe_holder(record: LeaseRecord) -> str:
    """`host-a_1f2e3d4c on host host-a (pid 4242, --ha) since 2025-06-01T10:00:00Z`: who holds a Lease."""
    where = record.annotations.get(HOST_ANNOTATION)
    details = [f"pid {record.annotations[PID_ANNOTATION]}"] if PID_ANNOTATION in record.annotations else []
    if record.holder_runs_ha:
        details.append("--ha")
    text = record.holder + (f" on host {where}" if where else "")
    if details:
        text += f" ({', '.join(details)})"
    return f"{text} since {_seconds(record.acquire_time)}"


class Leases:
    """Lease reads and optimistic-concurrency writes in one namespace of one cluster."""

    def __init__(self, client: ClusterClient, namespace: str, *, request_timeout: float = 5.0) -> None:
        self.client = client
        self.namespace = namespace
        self.request_timeout = request_timeout
        self._namespace_forbidden = False

    def _path(self, name: str | None = None) -> str:
        return LEASES.path(self.namespace, name)

    def _body(
        self, name: str, spec: dict[str, Any], labels: dict[str, str], annotations: dict[str, str], rv: str | None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace, "labels": labels}
        if annotations:
            meta["annotations"] = annotations
        if rv:
            meta["resourceVersion"] = rv
        return {"apiVersion": LEASES.api_version, "kind": LEASES.kind, "metadata": meta, "spec": spec}

    async def list(self, label_selector: str) -> dict[str, LeaseRecord]:
        body = await self.client.request(
            "GET", self._path(), query={"labelSelector": label_selector}, timeout=self.request_timeout
        )
        records = (LeaseRecord.from_object(o) for o in body.get("items") or [])
        return {r.name: r for r in records}

    async def get(self, name: str) -> LeaseRecord | None:
        try:
            return LeaseRecord.from_object(
                await self.client.request("GET", self._path(name), timeout=self.request_timeout)
            )
        except NotFound:
            return None

    async def write(
        self,
        name: str,
        spec: dict[str, Any],
        labels: dict[str, str],
        previous: LeaseRecord | None,
        annotations: dict[str, str] | None = None,
    ) -> LeaseRecord | None:
        """Create (no `previous`) or replace at `previous`'s resourceVersion; None when another write won."""
        notes = annotations if annotations is not None else (previous.annotations if previous is not None else {})
        try:
            if previous is None:
                obj = await self._create(self._body(name, spec, labels, notes, None))
            else:
                obj = await self.client.request(
                    "PUT",
                    self._path(name),
                    body=self._body(name, spec, labels, notes, previous.resource_version),
                    timeout=self.request_timeout,
                )
        except (NotFound, Conflict):  # 409: changed or created since; 404: deleted since
            return None
        return LeaseRecord.from_object(obj)

    async def _create(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            return await self.client.request("POST", self._path(), body=body, timeout=self.request_timeout)
        except NotFound:
            if self._namespace_forbidden:
                raise
        # The namespace is missing (never made, or the cluster came back empty): create it (best effort; the role
        # may not allow it, then it is not asked again), then retry.
        try:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            await self.client.request("POST", NAMESPACES.path(), body=namespace, timeout=self.request_timeout)
        except KubeAPIError as exc:
            self._namespace_forbidden = isinstance(exc, Forbidden)
        return await self.client.request("POST", self._path(), body=body, timeout=self.request_timeout)

    async def delete(self, record: LeaseRecord) -> bool:
        """Delete a Lease if it is still as read (a precondition on its resourceVersion); False if it was not."""
        try:
            await self.client.delete(
                LEASES, record.name, self.namespace, preconditions={"resourceVersion": record.resource_version}
            )
        except KubeAPIError as exc:
            return isinstance(exc, NotFound)
        return True
