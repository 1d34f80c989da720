"""Go durations (`time.ParseDuration`) as `routing.requestTimeout` takes them, and the form an HTTPRoute needs.

`parse_duration` accepts exactly Go's syntax: an optional sign, then one or more decimal numbers each with a unit
(`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), e.g. `180s`, `1h30m`, `1.5s`; `0` alone is zero. Errors use Go's
texts (`time: invalid duration "x"`, `time: missing unit in duration "1"`, `time: unknown unit "d" in duration
"1d"`).

A request timeout must also fit an HTTPRoute (Gateway API, GEP-2257: `^([0-9]{1,5}(h|m|s|ms)){1,4}$`): not
negative and a whole number of milliseconds (`validate_duration`). `gateway_duration` writes it as Go formats a
duration (`180s` → `3m0s`, `1h` → `1h0m0s`) with any fraction of a second as milliseconds (`1.5s` → `1s500ms`).
"""

from __future__ import annotations

import re
from typing import Final

_UNITS: Final = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_COMPONENT: Final = re.compile(r"(\d*)(?:\.(\d*))?([^\d.]*)")
_MAX_NANOSECONDS: Final = 2**63 - 1
_MILLISECOND: Final = 1_000_000
_MAX_GATEWAY_HOURS: Final = 99999


class DurationError(ValueError):
    """Not a Go duration."""


def parse_duration(text: str) -> int:
    """Nanoseconds of a Go duration string; raises `DurationError` with Go's message."""
    quoted = _go_quote(text)
    rest = text
    sign = 1
    if rest[:1] in ("-", "+"):
        sign = -1 if rest[0] == "-" else 1
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise DurationError(f"time: invalid duration {quoted}")
    total = 0
    while rest:
        match = _COMPONENT.match(rest)
        assert match is not None  # every part of the pattern may be empty
        whole, fraction, unit = match.groups()
        if not whole and not fraction:
            raise DurationError(f"time: invalid duration {quoted}")
        if not unit:
            raise DurationError(f"time: missing unit in duration {quoted}")
        scale = _UNITS.get(unit)
        if scale is None:
            raise DurationError(f"time: unknown unit {_go_quote(unit)} in duration {quoted}")
        nanoseconds = int(whole or "0") * scale
        if fraction:
            nanoseconds += int(fraction) * scale // 10 ** len(fraction)
        total += nanoseconds
        if total > _MAX_NANOSECONDS:
            raise DurationError(f"time: invalid duration {quoted}")
        rest = rest[match.end() :]
    return sign * total


def validate_duration(text: str) -> str | None:
    """Why `text` cannot be a request timeout (not a Go duration, negative, finer than a millisecond, or longer
    than an HTTPRoute allows), or None."""
    try:
        nanoseconds = parse_duration(text)
    except DurationError as error:
        return str(error)
    if nanoseconds < 0:
        return f"duration {_go_quote(text)} is negative"
    if nanoseconds % _MILLISECOND:
        return f"duration {_go_quote(text)} is not a whole number of milliseconds"
    if nanoseconds // (3600 * 1_000_000_000) > _MAX_GATEWAY_HOURS:
        return f"duration {_go_quote(text)} is longer than {_MAX_GATEWAY_HOURS}h"
    return None


def gateway_duration(text: str) -> str:
    """`text` as an HTTPRoute timeout; raises `DurationError` when `validate_duration` rejects it."""
    problem = validate_duration(text)
    if problem is not None:
        raise DurationError(problem)
    milliseconds = parse_duration(text) // _MILLISECOND
    if milliseconds == 0:
        return "0s"
    seconds, millis = divmod(milliseconds, 1000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    if hours == minutes == seconds == 0:
        return f"{millis}ms"
    out = f"{hours}h{minutes}m" if hours else (f"{minutes}m" if minutes else "")
    out += f"{seconds}s"
    return out + (f"{millis}ms" if millis else "")


def _go_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
