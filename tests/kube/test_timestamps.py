"""Kubernetes timestamps: RFC 3339 in UTC to the second, the current one formatted once per second."""

from __future__ import annotations

from datetime import UTC, datetime

from omectl.kube import timestamps


def test_a_moment_is_written_in_utc_to_the_whole_second() -> None:
    moment = datetime(2026, 12, 7, 19, 40, 5, 900_000, tzinfo=UTC).timestamp()

    assert timestamps.rfc3339(moment) == "2026-12-07T19:40:05Z"


def test_the_clock_says_the_new_second_as_soon_as_it_begins() -> None:
    start = datetime(2026, 12, 7, 23, 59, 59, tzinfo=UTC).timestamp()
    readings = iter([start + 0.1, start + 0.999, start + 1.0, start + 1.5, start + 61.0])
    clock = timestamps.Clock(lambda: next(readings))

    said = [clock.now() for _ in range(5)]

    assert said == [
        "2026-12-07T23:59:59Z",
        "2026-12-07T23:59:59Z",
        "2026-12-08T00:00:00Z",
        "2026-12-08T00:00:00Z",
        "2026-12-08T00:01:00Z",
    ]


def test_now_is_the_wall_clock_as_the_api_server_writes_it() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    said = datetime.strptime(timestamps.now(), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    after = datetime.now(UTC)

    assert before <= said <= after
