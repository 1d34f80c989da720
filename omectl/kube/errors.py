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
