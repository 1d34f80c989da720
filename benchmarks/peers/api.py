"""The kopf peer's writes and reads beyond kopf's watches: one aiohttp session per process, as kopf's own clients use.

kopf's handlers patch only the object their event is about, so what the peer writes elsewhere (the rendered
Deployments and Services, the runtime revisions, the statuses) goes through this session, as omectl's do through its
own client: server-side applies with one field manager (`FIELD_MANAGER`, as omectl applies, creates and writes
statuses as `omectl`), status replaced with a PUT guarded by the resourceVersion, re-read on a conflict.
"""

from __future__ import annotations

import base64
import ssl
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import aiohttp
import orjson
import yaml

FIELD_MANAGER: Final = "kopf-engine-peer"
USER_AGENT: Final = "kopf-engine-peer/1.0"
APPLY: Final = "application/apply-patch+yaml"
STATUS_RETRIES: Final = 5

# apiVersion, kind -> (API path prefix, plural) of every kind the engine reconciler may render
PATHS: Final[Mapping[tuple[str, str], tuple[str, str]]] = {
    ("apps/v1", "Deployment"): ("/apis/apps/v1", "deployments"),
    ("v1", "Service"): ("/api/v1", "services"),
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): ("/apis/leaderworkerset.x-k8s.io/v1", "leaderworkersets"),
    ("v1", "ServiceAccount"): ("/api/v1", "serviceaccounts"),
    ("rbac.authorization.k8s.io/v1", "Role"): ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
}


class ApiError(Exception):
    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: {status} {body[:300]!r}")
        self.status = status


def object_path(prefix: str, plural: str, namespace: str, name: str = "") -> str:
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{prefix}{scope}/{plural}" + (f"/{name}" if name else "")


def resource_of(path: str) -> str:
    """`deployments`, `inferenceservices/status`, ...: what a request path addresses, for the request counts."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    parts = parts[2:] if parts[0] == "api" else parts[3:]
    if parts[:1] == ["namespaces"] and len(parts) > 2:
        parts = parts[2:]
    return parts[0] + (f"/{parts[2]}" if len(parts) > 2 else "")


def rendered_path(obj: Mapping[str, Any]) -> str:
    """The path of a rendered object; KeyError for a kind the engine reconciler does not render."""
    prefix, plural = PATHS[(obj["apiVersion"], obj["kind"])]
    meta = obj["metadata"]
    return object_path(prefix, plural, meta.get("namespace") or "", meta["name"])


def kubeconfig_target(path: Path) -> tuple[str, dict[str, str], ssl.SSLContext | None]:
    """The current context's server URL, auth header (its bearer token, if any) and TLS context."""
    config = yaml.safe_load(path.read_text())
    context_name = config["current-context"]
    context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user: dict[str, Any] = next((u["user"] for u in config.get("users", []) if u["name"] == context.get("user")), {})
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if user.get("token"):
        headers["Authorization"] = f"Bearer {user['token']}"
    context_ssl = None
    if cluster.get("certificate-authority-data"):
        context_ssl = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
    elif cluster.get("insecure-skip-tls-verify"):
        context_ssl = ssl.create_default_context()
        context_ssl.check_hostname = False
        context_ssl.verify_mode = ssl.CERT_NONE
    return cluster["server"].rstrip("/"), headers, context_ssl


class Api:
    """The calls the peer makes itself, against one cluster; `requests` counts them by `METHOD what`."""

    def __init__(self, kubeconfig: Path, connections: int) -> None:
        self.server, headers, context_ssl = kubeconfig_target(kubeconfig)
        self.session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(limit=connections, ssl=context_ssl if context_ssl is not None else True),
            timeout=aiohttp.ClientTimeout(total=60),
        )
        self.requests: Counter[str] = Counter()

    async def close(self) -> None:
        await self.session.close()

    async def call(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> tuple[int, bytes]:
        self.requests[f"{method} {resource_of(path)}"] += 1
        headers = {"Content-Type": content_type} if body is not None else None
        async with self.session.request(method, self.server + path, data=body, headers=headers) as resp:
            return resp.status, await resp.read()

    async def get(self, path: str) -> dict[str, Any] | None:
        """The object at `path`; None when it does not exist."""
        status, body = await self.call("GET", path)
        if status == 404:
            return None
        if status != 200:
            raise ApiError("GET", path, status, body)
        found: dict[str, Any] = orjson.loads(body)
        return found

    async def list(self, path: str, label_selector: str = "") -> list[dict[str, Any]]:
        query = f"?labelSelector={quote(label_selector)}" if label_selector else ""
        status, body = await self.call("GET", path + query)
        if status != 200:
            raise ApiError("GET", path, status, body)
        items: list[dict[str, Any]] = orjson.loads(body)["items"]
        return items

    async def apply(self, path: str, obj: Mapping[str, Any]) -> bytes:
        """Server-side apply `obj` at `path` (forced, as the peer's field manager); the answer undecoded."""
        query = f"?fieldManager={FIELD_MANAGER}&force=true"
        status, body = await self.call("PATCH", path + query, orjson.dumps(obj), APPLY)
        if status not in (200, 201):
            raise ApiError("PATCH", path, status, body)
        return body

    async def create(self, path: str, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """POST `obj` to the collection at `path`; None when one of its name exists already."""
        status, body = await self.call("POST", f"{path}?fieldManager={FIELD_MANAGER}", orjson.dumps(obj))
        if status == 409:
            return None
        if status != 201:
            raise ApiError("POST", path, status, body)
        created: dict[str, Any] = orjson.loads(body)
        return created

    async def delete(self, path: str) -> None:
        status, body = await self.call("DELETE", path)
        if status not in (200, 202, 404):
            raise ApiError("DELETE", path, status, body)

    async def write_status(
        self,
        path: str,
        cached: Mapping[str, Any],
        desired: Callable[[Mapping[str, Any]], dict[str, Any] | None],
    ) -> dict[str, Any] | None:
        """Replace the status of the object at `path` with `desired(object)` (None: leave it), against the cached
        copy first, re-reading the object after a conflict; the object as written (its resourceVersion the one it was
        written against), None when nothing was."""
        live: Mapping[str, Any] | None = cached
        for _ in range(STATUS_RETRIES + 1):
            if live is None:
                return None
            status = desired(live)
            if status is None:
                return None
            meta = {k: v for k, v in live["metadata"].items() if k != "managedFields"}
            written = {**live, "metadata": meta, "status": status}
            code, answer = await self.call("PUT", f"{path}/status?fieldManager={FIELD_MANAGER}", orjson.dumps(written))
            if code == 200:
                return written
            if code == 404:
                return None
            if code != 409:
                raise ApiError("PUT", f"{path}/status", code, answer)
            live = await self.get(path)
        raise ApiError("PUT", f"{path}/status", 409, b"conflicts on every retry")
