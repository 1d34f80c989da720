"""The errors of talking to a cluster (re-exported by `omectl.kube.client`); importing them costs nothing."""

from __future__ import annotations

from typing import Any


class KubeError(Exception):
    """Any failure talking to a cluster; the message starts with the cluster's name."""

    def __init__(self, cluster: str, message: str) -> None:
        super().__init__(f"cluster {cluster}: {message}")
        self.cluster = cluster


class KubeConfigError(KubeError):
    """The kubeconfig cannot be read, or lacks the context, cluster or user asked for."""


class KubeConnectionError(KubeError):
    """No answer: connection refused or reset, TLS failure, timeout, or a watch stream that went silent."""


class KubeAPIError(KubeError):
    """A non-2xx answer; `reason` and `message` come from the Status body when there is one."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        body: Any = None,
        retry_after: float | None = None,
        *,
        cluster: str = "",
        method: str = "",
        path: str = "",
    ) -> None:
        where = f"{method} {path}: " if method else ""
        super().__init__(cluster, f"{where}{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.body = body
        self.retry_after = retry_after
        self.method = method
        self.path = path

    @property
    def expired(self) -> bool:
        """410: the resourceVersion or continue token is older than the server's history."""
        return self.status == 410 or self.reason in ("Expired", "Gone")


class BadRequest(KubeAPIError):
    """400: the request is malformed (a patch that does not apply, a field the server refuses to decode)."""


class Forbidden(KubeAPIError):
    """403: the credentials are not allowed this verb on this resource."""


class NotFound(KubeAPIError):
    """404: the object does not exist, or the kind (or its namespace) is not served."""


class Conflict(KubeAPIError):
    """409: the object changed since it was read, exists already, or an apply conflicts with another manager."""


class Gone(KubeAPIError):
    """410: the resourceVersion or continue token is older than the server's history."""


class Invalid(KubeAPIError):
    """422: the object fails validation (or an immutable field was changed)."""


class TooManyRequests(KubeAPIError):
    """429: throttled; `retry_after` says how long the server asked to wait, when it did."""


_BY_STATUS: dict[int, type[KubeAPIError]] = {
    400: BadRequest,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: Gone,
    422: Invalid,
    429: TooManyRequests,
}


def api_error(
    status: int,
    reason: str,
    message: str,
    body: Any = None,
    retry_after: float | None = None,
    *,
    cluster: str = "",
    method: str = "",
    path: str = "",
) -> KubeAPIError:
    """The `KubeAPIError` for a non-2xx answer: the subclass of its status, or `KubeAPIError` itself for others."""
    return _BY_STATUS.get(status, KubeAPIError)(
        status, reason, message, body, retry_after, cluster=cluster, method=method, path=path
    )
