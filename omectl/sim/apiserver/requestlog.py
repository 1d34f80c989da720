"""The embedded API server's request log: every API request in a bounded in-memory ring, read back as records.

The hot path appends one tuple per request (arrival and completion time, method, path, whether it was a watch,
status code, User-Agent, the client identity header and a GET's fieldSelector) to a `deque` with a `maxlen`;
everything else (the verb, group, resource, namespace, name and subresource) is derived from the path only when
the log is read (a list or watch limited by `fieldSelector=metadata.name=X` names X, as kube-apiserver's
RequestInfo does for RBAC).
That keeps the cost per request near a microsecond on a server that answers thousands of writes a second.

Entries carry a sequence number (0, 1, 2, ... over the server's life, restarts included), so a reader can
follow the log: `GET /_omectl/requests?since=N` answers the entries numbered N and later and `next`, the
number to ask for next time; `dropped` counts entries that fell off the ring before they were read.

Read it in-process with `server.request_log.records(since)` or over HTTP; the HA tests use it to check that
no two controller replicas wrote to a cluster in the same lease term.
"""

from __future__ import annotations

import itertools
import sys
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any, Final
from urllib.parse import unquote

__all__ = ["CLIENT_IDENTITY_HEADER", "DEFAULT_CAPACITY", "RequestLog", "RequestRecord", "parse_api_path"]

CLIENT_IDENTITY_HEADER: Final = "X-Omectl-Client"
"""A client may name itself in this header (besides its User-Agent); the log records it when present."""
DEFAULT_CAPACITY: Final = 20_000  # about 250 B an entry: 5 MB when full

WRITE_VERBS: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})

# (arrival, completion, method, path, watch, status, user agent, identity, fieldSelector); status 0: never answered
_Raw = tuple[float, float, str, str, bool, int, str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as Kubernetes audit logs describe it: verb, resource coordinates, code, user agent."""

    seq: int
    time: float  # wall clock (time.time()) when the request arrived
    end: float  # wall clock when the handler returned (for a write: after its commit)
    method: str
    path: str
    verb: str  # get, list, watch, create, update, patch, delete, deletecollection; "" for non-resource paths
    group: str
    version: str
    resource: str
    namespace: str
    name: str
    subresource: str
    code: int
    user_agent: str
    identity: str

    @property
    def is_write(self) -> bool:
        return self.verb in WRITE_VERBS and 200 <= self.code < 300

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_api_path(path: str) -> tuple[str, str, str, str, str, str] | None:
    """`(group, version, resource, namespace, name, subresource)` of a resource path, or None for other paths.

    The same rules as the server's router: `/api/v1/...` is the core group, `/apis/<group>/<version>/...` the
    others; `namespaces/<ns>/<resource>` scopes a namespaced resource, while `namespaces/<name>/status|finalize`
    is a subresource of a namespace.
    """
    parts = [unquote(p) for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    namespace = ""
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    return group, version, resource, namespace, name, subresource


def _verb(method: str, named: bool, watch: bool) -> str:
    if method == "GET":
        return "watch" if watch else ("get" if named else "list")
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return method.lower()


def _selected_name(field_selector: str) -> str:
    """The name a list or watch is limited to by `fieldSelector=metadata.name=X`, as kube-apiserver's RequestInfo
    reads it (so RBAC `resourceNames` can allow it), else ""."""
    terms = [t.strip() for t in field_selector.split(",") if t.strip()]
    for term in terms:
        for op in ("==", "="):
            key, sep, value = term.partition(op)
            if sep and key.strip() == "metadata.name" and not value.startswith("="):
                return value.strip() if "/" not in value else ""
    return ""


class RequestLog:
    """A bounded ring of the last `capacity` requests; `append` is the only call on the request path."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._ring: deque[_Raw] = deque(maxlen=capacity)
        self.total = 0  # requests logged so far; the next entry's sequence number

    def append(
        self,
        arrived: float,
        ended: float,
        method: str,
        path: str,
        watch: bool,
        status: int,
        user_agent: str | None,
        identity: str | None,
        field_selector: str | None = None,
    ) -> None:
        # The same few clients send every request: one copy of each agent string, not one per entry.
        if user_agent is not None:
            user_agent = sys.intern(user_agent)
        if identity is not None:
            identity = sys.intern(identity)
        self._ring.append((arrived, ended, method, path, watch, status, user_agent, identity, field_selector))
        self.total += 1

    def __len__(self) -> int:
        return len(self._ring)

    @property
    def first_seq(self) -> int:
        """The sequence number of the oldest entry still held."""
        return self.total - len(self._ring)

    def clear(self) -> None:
        """Forget the entries (sequence numbers keep counting)."""
        self._ring.clear()

    def records(self, since: int = 0, limit: int | None = None) -> list[RequestRecord]:
        """Entries numbered `since` and later (oldest first), at most `limit` of them."""
        first = self.first_seq
        start = max(since, first)
        if start >= self.total:
            return []
        stop = None if limit is None else start - first + max(0, limit)
        raw = itertools.islice(self._ring, start - first, stop)
        return [self._record(start + i, entry) for i, entry in enumerate(raw)]

    def read(self, since: int = 0, limit: int | None = None) -> dict[str, Any]:
        """The JSON answer of `GET /_omectl/requests?since=N[&limit=M]`."""
        records = self.records(since, limit)
        first = self.first_seq
        return {
            "since": since,
            "next": (records[-1].seq + 1) if records else max(first, min(since, self.total)),
            "first": first,
            "dropped": max(0, first - since),
            "capacity": self.capacity,
            "requests": [r.to_dict() for r in records],
        }

    @staticmethod
    def _record(seq: int, raw: _Raw) -> RequestRecord:
        arrived, ended, method, path, watch, status, user_agent, identity, field_selector = raw
        parsed = parse_api_path(path)
        if parsed is None:
            group = version = resource = namespace = name = subresource = verb = ""
        else:
            group, version, resource, namespace, name, subresource = parsed
            verb = _verb(method, bool(name), watch)
            if verb in ("list", "watch") and field_selector:
                name = _selected_name(field_selector)
        return RequestRecord(
            seq=seq,
            time=arrived,
            end=ended,
            method=method,
            path=path,
            verb=verb,
            group=group,
            version=version,
            resource=resource,
            namespace=namespace,
            name=name,
            subresource=subresource,
            code=status,
            user_agent=user_agent or "",
            identity=identity or "",
        )
