"""`api_error` picks the KubeAPIError subclass of a status; every one is still a KubeAPIError."""

from __future__ import annotations

import pytest

from omectl.kube.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeAPIError,
    NotFound,
    TooManyRequests,
    api_error,
)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, BadRequest),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (410, Gone),
        (422, Invalid),
        (429, TooManyRequests),
    ],
)
def test_api_error_raises_the_subclass_of_its_status(status: int, expected: type[KubeAPIError]) -> None:
    error = api_error(status, "Reason", "message", cluster="east", method="GET", path="/api/v1/x")
    assert type(error) is expected
    assert isinstance(error, KubeAPIError)
    assert (error.status, error.reason, error.message, error.cluster) == (status, "Reason", "message", "east")
    assert str(error) == f"cluster east: GET /api/v1/x: {status} Reason: message"


@pytest.mark.parametrize("status", [401, 415, 500, 503])
def test_api_error_for_other_statuses_is_the_base_class(status: int) -> None:
    assert type(api_error(status, "Reason", "")) is KubeAPIError


def test_api_error_keeps_body_and_retry_after() -> None:
    error = api_error(429, "TooManyRequests", "slow down", {"kind": "Status"}, 2.5)
    assert (error.body, error.retry_after) == ({"kind": "Status"}, 2.5)


def test_expired_is_the_410_or_an_expired_reason() -> None:
    assert api_error(410, "Gone", "").expired
    assert api_error(500, "Expired", "").expired
    assert not api_error(404, "NotFound", "").expired
