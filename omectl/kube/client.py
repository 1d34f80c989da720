"""`ClusterClient`: one cluster's connection, raw REST over aiohttp with plain-dict bodies.

kubernetes-asyncio does what it is good at: reading the kubeconfig, running exec credential plugins (and
re-running them when the credential expires or the server answers 401) and turning the cluster's TLS settings
into files. Requests, responses and watch lines are bytes decoded with orjson; no typed models.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import datetime
import logging
import os
import ssl
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote, urlencode

import aiohttp
import orjson
import yaml
import yarl
from kubernetes_asyncio.client import Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from kubernetes_asyncio.config.kube_config import ENV_KUBECONFIG_PATH_SEPARATOR, KubeConfigLoader, KubeConfigMerger

from omectl.kube.errors import KubeAPIError, KubeConfigError, KubeConnectionError, KubeError, api_error
from omectl.kube.resources import ResourceRef
from omectl.observability.redact import register_kubeconfig_secrets, register_secret, without_userinfo
from omectl.problems import read_problem, yaml_problem

__all__ = [
    "PATCH_CONTENT_TYPES",
    "ClusterClient",
    "KubeAPIError",
    "KubeConfigError",
    "KubeConnectionError",
    "KubeError",
    "PatchType",
    "set_user_agent",
]

log = logging.getLogger(__name__)

PatchType = Literal["merge", "json", "apply", "strategic"]
PATCH_CONTENT_TYPES: dict[str, str] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
    "strategic": "application/strategic-merge-patch+json",
}
_USER_AGENT = "omectl/0.1.0"


def set_user_agent(agent: str) -> None:
    """The User-Agent of every request from this process (an HA replica: `omectl/<version> (replica=<id>)`)."""
    global _USER_AGENT
    _USER_AGENT = agent


# An exec credential is renewed this long before the expiry it announced, so no request carries a stale token.
_CREDENTIAL_EXPIRY_SKEW = datetime.timedelta(seconds=10)
_READ_BUFFER = 2**21  # watch lines carry whole objects; etcd allows up to 1.5 MiB
# A burst of watch lines sits in the read buffer, where readline returns without ever suspending: every this many
# lines the watch yields to the loop, so a thousand events and their handlers never hold it all at once.
WATCH_YIELD_EVERY = 16


def _query_string(query: Mapping[str, Any] | None) -> str:
    if not query:
        return ""
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        if value is None:
            continue
        values = value if isinstance(value, list | tuple) else [value]
        for item in values:
            if isinstance(item, bool):
                pairs.append((key, "true" if item else "false"))
            else:
                pairs.append((key, str(item)))
    return urlencode(pairs, quote_via=quote)


def _encode_body(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return orjson.dumps(body)


def _register_credentials(configuration: Configuration) -> None:
    """Keep the credentials a kubeconfig (or an exec plugin) gave out of every log line, event and span."""
    register_secret(configuration.api_key.get("BearerToken"))
    register_secret(configuration.password)


def _parse_retry_after(headers: Mapping[str, str], body: Any) -> float | None:
    raw = headers.get("Retry-After")
    if raw:
        try:
            return max(0.0, float(raw))
        except ValueError:
            pass  # an HTTP-date; Kubernetes sends seconds, and the Status body below has them too
    if isinstance(body, dict):
        seconds = (body.get("details") or {}).get("retryAfterSeconds")
        if isinstance(seconds, int | float):
            return float(seconds)
    return None


def _kubeconfig_files(name: str, source: str) -> list[str]:
    """The files of a kubeconfig path list (`a:b`, as in $KUBECONFIG) that exist, each checked to be a kubeconfig:
    kubernetes_asyncio fails on anything else with a TypeError, and warns of a missing file on stderr."""
    candidates = (os.path.expanduser(p) for p in source.split(ENV_KUBECONFIG_PATH_SEPARATOR) if p)
    files = [p for p in candidates if os.path.exists(p)]
    if not files:
        raise KubeConfigError(name, f"kubeconfig not found: {source}")
    for file in files:
        try:
            with open(file, encoding="utf-8") as handle:
                document = yaml.safe_load(handle)
        except (OSError, UnicodeDecodeError) as exc:
            raise KubeConfigError(name, f"cannot read kubeconfig {file}: {read_problem(exc)}") from None
        except yaml.YAMLError as exc:
            raise KubeConfigError(name, f"{file}: not a kubeconfig (invalid YAML: {yaml_problem(exc)})") from None
        if not isinstance(document, dict):
            raise KubeConfigError(name, f"{file}: not a kubeconfig (expected a mapping)")
        for section in ("clusters", "contexts", "users"):
            entries = document.get(section)
            if entries is not None and not (
                isinstance(entries, list) and all(isinstance(e, dict) and "name" in e for e in entries)
            ):
                raise KubeConfigError(name, f"{file}: not a kubeconfig ({section} must be a list of named entries)")
    return files


class ClusterClient:
    """REST calls and watches against one cluster, named `name` in every error."""

    def __init__(
        self,
        name: str,
        configuration: Configuration,
        *,
        loader: KubeConfigLoader | None = None,
        default_namespace: str = "default",
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        max_connections: int = 100,
    ) -> None:
        self.name = name
        self.configuration = configuration
        self.default_namespace = default_namespace  # the context's namespace, for CLI callers; never implied
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self._loader = loader
        self._session: aiohttp.ClientSession | None = None
        self._session_tls: tuple[Any, ...] | None = None
        self._credential_lock = asyncio.Lock()
        self._closed = False
        self.api_errors: dict[int, int] = {}  # non-2xx answers by HTTP status, for the metrics
        # object path -> the resourceVersions a status write of this process replaced (`omectl.kube.writer`)
        self.status_written_over: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    # --- construction ------------------------------------------------------------------------------------

    @classmethod
    async def from_kubeconfig(
        cls,
        path: str | Path | None = None,
        *,
        config_dict: dict[str, Any] | None = None,
        context: str | None = None,
        name: str,
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
    ) -> ClusterClient:
        """Load a kubeconfig file (`path`, else `$KUBECONFIG`, else `~/.kube/config`) or dict, for one context."""
        if config_dict is not None:
            source = "(in-memory kubeconfig)"
            document: Any = config_dict
            contexts = config_dict.get("contexts") or []
            current = config_dict.get("current-context")
        else:
            source = str(path) if path is not None else os.environ.get("KUBECONFIG") or "~/.kube/config"
            merged = KubeConfigMerger(ENV_KUBECONFIG_PATH_SEPARATOR.join(_kubeconfig_files(name, source)))
            assert merged.config is not None
            document = merged.config
            contexts = merged.config.value.get("contexts") or []
            current = merged.config.value.get("current-context")
        available = [str(c["name"]) for c in contexts if "name" in c]
        chosen = context or current
        if not chosen:
            raise KubeConfigError(
                name, f"kubeconfig {source} has no current-context; choose one of: {', '.join(available) or '(none)'}"
            )
        if chosen not in available:
            raise KubeConfigError(
                name,
                f"context {chosen!r} not found in kubeconfig {source}; available: {', '.join(available) or '(none)'}",
            )
        configuration = Configuration()
        register_kubeconfig_secrets(config_dict if config_dict is not None else dict(document.value))
        try:
            loader = KubeConfigLoader(document, active_context=chosen, config_base_path=None)
            await loader.load_and_set(configuration)
        except (ConfigException, KeyError, ValueError, AssertionError, OSError) as exc:
            raise KubeConfigError(name, f"kubeconfig {source}, context {chosen!r}: {exc}") from exc
        _register_credentials(configuration)
        context_node = loader.current_context or {}
        namespace = (context_node.get("context") or {}).get("namespace") or "default"
        return cls(
            name,
            configuration,
            loader=loader,
            default_namespace=namespace,
            connect_timeout=connect_timeout,
            request_timeout=request_timeout,
        )

    @property
    def server(self) -> str:
        """The API server's URL, without any `user:password@` the kubeconfig put in it: requests authenticate with
        the kubeconfig's credentials (as client-go does once it has a token), and the URL is shown in places."""
        return without_userinfo(str(self.configuration.host))

    # --- session, TLS and credentials --------------------------------------------------------------------

    def _ssl_context(self) -> ssl.SSLContext | bool:
        cfg = self.configuration
        if not self.server.startswith("https"):
            return False
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
        if not cfg.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def _tls_identity(self) -> tuple[Any, ...]:
        cfg = self.configuration
        return (cfg.ssl_ca_cert, cfg.cert_file, cfg.key_file, cfg.verify_ssl)

    def _get_session(self) -> aiohttp.ClientSession:
        if self._closed:
            raise KubeConnectionError(self.name, "client is closed")
        identity = self._tls_identity()
        if self._session is not None and self._session_tls == identity:
            return self._session
        if self._session is not None:
            # An exec plugin handed out a new client certificate: later requests use a new session; the old one's
            # open watches end and their informers reconnect.
            old = self._session
            asyncio.get_running_loop().create_task(old.close())
        try:
            ssl_context = self._ssl_context()
        except (OSError, ssl.SSLError) as exc:
            raise KubeConfigError(self.name, f"TLS settings for {self.server}: {exc}") from exc
        connector = aiohttp.TCPConnector(limit=self.max_connections, ssl=ssl_context)
        # trust_env=False: with it aiohttp reads ~/.netrc and the proxy variables in a thread on every request; the
        # kubeconfig's proxy-url is honoured through the Configuration instead.
        self._session = aiohttp.ClientSession(connector=connector, trust_env=False, read_bufsize=_READ_BUFFER)
        self._session_tls = identity
        return self._session

    def _uses_exec_credentials(self) -> bool:
        user = getattr(self._loader, "_user", None) if self._loader is not None else None
        return user is not None and "exec" in user

    async def _refresh_credentials(self, *, force: bool) -> bool:
        """Re-run the exec plugin when its credential expired (or `force`, after a 401); True if it ran."""
        loader = self._loader
        if loader is None or not self._uses_exec_credentials():
            return False
        async with self._credential_lock:
            expiry = getattr(loader, "exec_plugin_expiry", None)
            if not force:
                if expiry is None:
                    return False
                if datetime.datetime.now(datetime.UTC) < expiry - _CREDENTIAL_EXPIRY_SKEW:
                    return False
            if expiry is not None:
                del loader.exec_plugin_expiry
            try:
                await loader.load_from_exec_plugin()
            except Exception as exc:  # third-party code running a user's binary: any failure is the kubeconfig's
                raise KubeConfigError(self.name, f"exec credential plugin failed: {exc}") from exc
            loader._set_config(self.configuration)
            _register_credentials(self.configuration)
            return True

    async def _headers(self, content_type: str | None) -> dict[str, str]:
        await self._refresh_credentials(force=False)
        headers = {"Accept": "application/json", "User-Agent": _USER_AGENT}
        token = self.configuration.api_key.get("BearerToken")
        if token:
            headers["Authorization"] = token
        if content_type is not None:
            headers["Content-Type"] = content_type
        return headers

    def _url(self, path: str, query: Mapping[str, Any] | None) -> yarl.URL:
        qs = _query_string(query)
        return yarl.URL(self.server.rstrip("/") + path + (f"?{qs}" if qs else ""), encoded=True)

    def _request_kwargs(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.configuration.proxy:
            extra["proxy"] = self.configuration.proxy
        if self.configuration.tls_server_name:
            extra["server_hostname"] = self.configuration.tls_server_name
        return extra

    def _api_error(self, method: str, path: str, status: int, raw: bytes, headers: Mapping[str, str]) -> KubeAPIError:
        self.api_errors[status] = self.api_errors.get(status, 0) + 1
        body: Any = None
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = raw.decode(errors="replace")
        try:
            phrase = HTTPStatus(status).phrase.replace(" ", "")
        except ValueError:
            phrase = "Unknown"
        if isinstance(body, dict) and body.get("kind") == "Status":
            reason = str(body.get("reason") or phrase)
            message = str(body.get("message") or "")
        else:
            reason = phrase
            message = body[:500] if isinstance(body, str) else ""
        return api_error(
            status,
            reason,
            message,
            body,
            _parse_retry_after(headers, body),
            cluster=self.name,
            method=method,
            path=path,
        )

    # --- raw REST ----------------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """One call; the decoded JSON answer for 2xx, else `KubeAPIError`. A dict or list body is sent as JSON."""
        method = method.upper()
        raw = await self.request_bytes(method, path, query=query, body=body, content_type=content_type, timeout=timeout)
        if not raw:
            return {}
        try:
            decoded = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise KubeError(self.name, f"{method} {path}: answer is not JSON: {raw[:200]!r}") from exc
        return decoded if isinstance(decoded, dict) else {"items": decoded}

    async def request_bytes(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> bytes:
        """`request` without decoding the answer: its bytes for 2xx, else `KubeAPIError` (decoding a large answer
        is a cost a caller that does not read it should not pay)."""
        method = method.upper()
        data = _encode_body(body)
        url = self._url(path, query)
        client_timeout = aiohttp.ClientTimeout(
            total=timeout if timeout is not None else self.request_timeout,
            connect=self.connect_timeout,
            sock_connect=self.connect_timeout,
        )
        for attempt in range(2):
            headers = await self._headers(content_type if data is not None else None)
            session = self._get_session()
            try:
                async with session.request(
                    method, url, data=data, headers=headers, timeout=client_timeout, **self._request_kwargs()
                ) as resp:
                    raw = await resp.read()
                    status = resp.status
                    resp_headers = resp.headers
            except TimeoutError as exc:
                raise KubeConnectionError(self.name, f"{method} {path}: timed out") from exc
            except aiohttp.ClientError as exc:
                raise KubeConnectionError(self.name, f"{method} {path}: {exc}") from exc
            if status == 401 and attempt == 0 and await self._refresh_credentials(force=True):
                continue
            break
        if 200 <= status < 300:
            return raw
        raise self._api_error(method, path, status, raw, resp_headers)

    async def watch(
        self, path: str, query: dict[str, Any] | None = None, *, inactivity_timeout: float | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """Decoded `{"type","object"}` events of a streaming GET (`watch=true`) until the server ends it.

        ERROR events are yielded as they are. A non-200 answer raises `KubeAPIError`; no line at all (not even
        a bookmark) for `inactivity_timeout` seconds raises `KubeConnectionError`.
        """
        full_query = {**(query or {}), "watch": "true"}
        url = self._url(path, full_query)
        client_timeout = aiohttp.ClientTimeout(
            total=None, connect=self.connect_timeout, sock_connect=self.connect_timeout
        )
        headers = await self._headers(None)
        session = self._get_session()
        try:
            async with session.get(url, headers=headers, timeout=client_timeout, **self._request_kwargs()) as resp:
                if resp.status != 200:
                    raw = await resp.read()
                    if resp.status == 401:
                        await self._refresh_credentials(force=True)
                    raise self._api_error("GET", f"{path} (watch)", resp.status, raw, resp.headers)
                content = resp.content
                lines = 0
                while True:
                    async with asyncio.timeout(inactivity_timeout):
                        line = await content.readline()
                    if not line:
                        return
                    line = line.strip()
                    if line:
                        yield orjson.loads(line)
                        lines += 1
                        if lines % WATCH_YIELD_EVERY == 0:
                            await asyncio.sleep(0)
        except TimeoutError as exc:
            raise KubeConnectionError(
                self.name, f"watch {path}: no data for {inactivity_timeout} s, the stream is presumed dead"
            ) from exc
        except aiohttp.ClientError as exc:
            raise KubeConnectionError(self.name, f"watch {path}: {exc}") from exc
        except orjson.JSONDecodeError as exc:
            raise KubeError(self.name, f"watch {path}: a line is not JSON: {exc}") from exc

    # --- conveniences over ResourceRef -------------------------------------------------------------------

    @staticmethod
    def _namespace_for(ref: ResourceRef, namespace: str | None, body: Any = None) -> str | None:
        if not ref.namespaced:
            return namespace  # ResourceRef.path rejects a namespace for a cluster-scoped kind
        if namespace:
            return namespace
        if isinstance(body, dict):
            from_body = (body.get("metadata") or {}).get("namespace")
            if from_body:
                return str(from_body)
        raise ValueError(f"{ref.plural} is namespaced: pass a namespace or set metadata.namespace")

    @staticmethod
    def _write_query(field_manager: str | None, dry_run: bool, force: bool | None = None) -> dict[str, Any]:
        query: dict[str, Any] = {}
        if field_manager:
            query["fieldManager"] = field_manager
        if dry_run:
            query["dryRun"] = "All"
        if force is not None:
            query["force"] = force
        return query

    async def get(
        self, ref: ResourceRef, name: str, namespace: str | None = None, *, subresource: str | None = None
    ) -> dict[str, Any]:
        ns = self._namespace_for(ref, namespace)
        return await self.request("GET", ref.path(ns, name, subresource))

    async def list(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
    ) -> dict[str, Any]:
        """One page of a list; `namespace=None` on a namespaced kind lists every namespace."""
        query = {
            "labelSelector": label_selector or None,
            "fieldSelector": field_selector or None,
            "limit": limit,
            "continue": continue_token or None,
            "resourceVersion": resource_version,
        }
        return await self.request("GET", ref.path(namespace), query=query)

    async def create(
        self,
        ref: ResourceRef,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        ns = self._namespace_for(ref, namespace, body)
        return await self.request("POST", ref.path(ns), query=self._write_query(field_manager, dry_run), body=body)

    async def replace(
        self,
        ref: ResourceRef,
        body: dict[str, Any],
        namespace: str | None = None,
        *,
        subresource: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PUT the whole object (name from `metadata.name`); a stale `metadata.resourceVersion` answers 409."""
        ns = self._namespace_for(ref, namespace, body)
        name = body["metadata"]["name"]
        return await self.request(
            "PUT", ref.path(ns, name, subresource), query=self._write_query(field_manager, dry_run), body=body
        )

    async def patch(
        self,
        ref: ResourceRef,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: PatchType = "merge",
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """PATCH with the Content-Type of `patch_type`; "apply" (server-side apply) needs a field manager."""
        content_type = PATCH_CONTENT_TYPES.get(patch_type)
        if content_type is None:
            raise ValueError(f"patch_type must be one of {', '.join(PATCH_CONTENT_TYPES)}, not {patch_type!r}")
        if patch_type == "apply" and not field_manager:
            raise ValueError("a server-side apply patch needs a field_manager")
        if force is not None and patch_type != "apply":
            raise ValueError("force applies to server-side apply patches only")
        ns = self._namespace_for(ref, namespace, patch if patch_type == "apply" else None)
        return await self.request(
            "PATCH",
            ref.path(ns, name, subresource),
            query=self._write_query(field_manager, dry_run, force),
            body=patch,
            content_type=content_type,
        )

    async def apply_bytes(
        self, ref: ResourceRef, body: Mapping[str, Any], *, field_manager: str, force: bool = True
    ) -> bytes:
        """Server-side apply `body` (its metadata names it); the server's answer undecoded."""
        name = body["metadata"]["name"]
        ns = self._namespace_for(ref, body["metadata"].get("namespace") or None, body)
        return await self.request_bytes(
            "PATCH",
            ref.path(ns, name),
            query=self._write_query(field_manager, False, force),
            body=body,
            content_type=PATCH_CONTENT_TYPES["apply"],
        )

    async def delete(
        self,
        ref: ResourceRef,
        name: str,
        namespace: str | None = None,
        *,
        propagation_policy: Literal["Background", "Foreground", "Orphan"] | None = None,
        preconditions: dict[str, str] | None = None,
        grace_period_seconds: int | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """DELETE; the answer is the object (when finalizers keep it) or a Success Status."""
        ns = self._namespace_for(ref, namespace)
        options: dict[str, Any] = {}
        if propagation_policy:
            options["propagationPolicy"] = propagation_policy
        if preconditions:
            options["preconditions"] = preconditions
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        if dry_run:
            options["dryRun"] = ["All"]
        body = {"kind": "DeleteOptions", "apiVersion": "v1", **options} if options else None
        return await self.request("DELETE", ref.path(ns, name), body=body)

    async def list_all(
        self,
        ref: ResourceRef,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
    ) -> builtins.list[dict[str, Any]]:
        """Every item, following `continue` tokens."""
        items: builtins.list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = await self.list(ref, namespace, label_selector=label_selector, limit=page_size, continue_token=token)
            items.extend(page.get("items") or [])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items

    # --- lifecycle ---------------------------------------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        if self._session is not None:
            session, self._session = self._session, None
            with contextlib.suppress(Exception):
                await session.close()

    async def __aenter__(self) -> ClusterClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"ClusterClient({self.name!r}, {self.server!r})"
