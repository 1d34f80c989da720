"""Fault injection for reliability tests: failed, delayed or held requests, dropped watches, compaction, partitions.

Programmatic (`server.faults`) and over the admin endpoint `POST /_omectl/faults` (see `admin_http.py`); the REST
surface (`omectl/sim/apiserver/http.py`) consults it before it routes a request.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class RequestFault:
    """Answer the next `count` matching requests with `status` (0: pass through) after `delay` seconds."""

    count: int
    status: int = 0
    method: str | None = None  # e.g. "PATCH"; None matches all
    path_contains: str | None = None
    retry_after: int | None = None
    delay: float = 0.0
    include_watches: bool = False
    # A held request waits, once it has `arrived`, until the test sets `release` (then answers as above); a test
    # changes the server in between, at a point of a client's request sequence it chose (`hold_next`).
    release: asyncio.Event | None = None
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def matches(self, method: str, path: str, is_watch: bool) -> bool:
        if self.count <= 0:
            return False
        if is_watch and not self.include_watches:
            return False
        if self.method and self.method.upper() != method.upper():
            return False
        return not (self.path_contains and self.path_contains not in path)


_REASONS = {
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "Internal error occurred: injected fault"),
    502: ("BadGateway", "injected bad gateway"),
    503: ("ServiceUnavailable", "The server is currently unable to handle the request"),
    504: ("Timeout", "injected gateway timeout"),
    409: ("Conflict", "injected conflict"),
    410: ("Expired", "injected expiry"),
    403: ("Forbidden", "injected forbidden"),
}


def status_reason(code: int) -> tuple[str, str]:
    return _REASONS.get(code, ("InternalError", f"injected fault {code}"))


@dataclass
class FaultInjector:
    rules: list[RequestFault] = field(default_factory=list)
    injected: int = 0

    def fail_next(
        self,
        count: int,
        status: int,
        *,
        method: str | None = None,
        path_contains: str | None = None,
        retry_after: int | None = None,
        delay: float = 0.0,
        include_watches: bool = False,
    ) -> RequestFault:
        rule = RequestFault(count, status, method, path_contains, retry_after, delay, include_watches)
        self.rules.append(rule)
        return rule

    def delay_next(
        self, count: int, seconds: float, *, method: str | None = None, path_contains: str | None = None
    ) -> RequestFault:
        return self.fail_next(count, 0, method=method, path_contains=path_contains, delay=seconds)

    def hold_next(self, count: int = 1, *, method: str | None = None, path_contains: str | None = None) -> RequestFault:
        """Hold the next `count` matching requests: each waits until `rule.release` is set, then is served normally.
        Await `rule.arrived.wait()` to know one is waiting."""
        rule = RequestFault(count, method=method, path_contains=path_contains, release=asyncio.Event())
        self.rules.append(rule)
        return rule

    def take(self, method: str, path: str, is_watch: bool) -> RequestFault | None:
        for rule in self.rules:
            if rule.matches(method, path, is_watch):
                rule.count -= 1
                self.injected += 1
                if rule.count <= 0:
                    self.rules.remove(rule)
                return rule
        return None

    def clear(self) -> None:
        self.rules.clear()
