"""Kubernetes' `Time` as the API server writes it: RFC 3339 in UTC, to the second (`2026-12-07T19:40:00Z`)."""

from __future__ import annotations

import time
from collections.abc import Callable

_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def rfc3339(seconds: float) -> str:
    """The moment `seconds` after the epoch, to the whole second."""
    return time.strftime(_FORMAT, time.gmtime(seconds))


class Clock:
    """`now()` as Kubernetes writes it. Status writes ask for it thousands of times a second and it changes once a
    second, so the text is formatted once per second and reused."""

    def __init__(self, seconds: Callable[[], float] = time.time) -> None:
        self._seconds = seconds
        self._said: tuple[int, str] = (-1, "")  # one attribute, so a thread never reads a second with another's text

    def now(self) -> str:
        second = int(self._seconds())
        said = self._said
        if second != said[0]:
            said = self._said = (second, rfc3339(second))
        return said[1]


_CLOCK = Clock()


def now() -> str:
    """The current time as Kubernetes writes it."""
    return _CLOCK.now()
