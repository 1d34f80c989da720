"""Timestamps in the API server's formats."""

from __future__ import annotations

import time
from datetime import UTC, datetime

_last_second: tuple[int, str] = (-1, "")  # the whole second of the last call and its text


def now_rfc3339() -> str:
    # Second resolution: format once per second rather than once per write.
    global _last_second
    second = int(time.time())
    if second != _last_second[0]:
        _last_second = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return _last_second[1]


def now_micro() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
