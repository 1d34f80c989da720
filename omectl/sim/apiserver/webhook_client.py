"""Posting to a webhook as kube-apiserver's webhook client does (apiserver's webhook ClientManager over client-go):
the endpoint of a `clientConfig` (a URL, or a Service resolved the way kube-apiserver's default resolver resolves
it), TLS verified against the `caBundle` alone, a deadline, and the failures worded as Go's net/http and client-go
word them. Admission webhooks and conversion webhooks both call through it."""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import posixpath
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from cryptography import x509

from omectl.sim.apiserver.errors import go_quote

__all__ = ["ServiceLookup", "WebhookCallError", "WebhookClient", "WebhookTarget", "http_error_text"]

USER_AGENT = "kube-apiserver-admission"  # what both webhook kinds are called with
_MAX_UNSTRUCTURED_BODY = 2048  # client-go's cap on a non-Status error body it quotes
_SSL_CACHE_LIMIT = 256

# A Service by namespace and name, as the server stores it (None: there is none).
ServiceLookup = Callable[[str, str], dict[str, Any] | None]


class WebhookCallError(Exception):
    """The webhook could not be asked, or answered with an HTTP error; `str()` is client-go's text."""


@dataclass(frozen=True)
class ServiceReference:
    namespace: str
    name: str
    port: int


@dataclass(frozen=True)
class WebhookTarget:
    """Where one webhook is posted: `url` as client-go names it in errors (for a Service,
    `https://<name>.<namespace>.svc:<port><path>`), and, for a Service, the reference resolved on each call."""

    scheme: str
    netloc: str  # host[:port] as the URL spells it
    host: str
    port: int
    path: str
    ssl: ssl.SSLContext | None
    service: ServiceReference | None = None

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}"


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _clean_path(path: str) -> str:
    """The path client-go actually posts to: cleaned, "/" when empty."""
    cleaned = posixpath.normpath("/" + path) if path else "/"
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


_HOSTNAME_MISMATCH = 62  # OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH (and its IP twin below)
_IP_ADDRESS_MISMATCH = 64


async def _certificate_cause(exc: aiohttp.ClientConnectorCertificateError, host: str, port: int, name: str) -> str:
    """Go's words for a certificate the webhook's TLS check refused. For a name mismatch they list the names
    the certificate carries, so the certificate is fetched again, unverified, to read them."""
    cert_error = exc.certificate_error
    code = getattr(cert_error, "verify_code", None)
    if code in (2, 18, 19, 20, 21):
        detail = "x509: certificate signed by unknown authority"
    elif code in (9, 10):
        detail = "x509: certificate has expired or is not yet valid"
    elif code in (_HOSTNAME_MISMATCH, _IP_ADDRESS_MISMATCH):
        detail = hostname_error(await _peer_certificate(host, port, name), name)
    else:
        detail = getattr(cert_error, "verify_message", None) or str(cert_error)
    return f"tls: failed to verify certificate: {detail}"


async def _peer_certificate(host: str, port: int, name: str) -> bytes | None:
    unverified = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    unverified.check_hostname = False
    unverified.verify_mode = ssl.CERT_NONE
    try:
        async with asyncio.timeout(5):
            _, writer = await asyncio.open_connection(host, port, ssl=unverified, server_hostname=name)
    except (OSError, TimeoutError, ssl.SSLError):
        return None
    try:
        tls_object = writer.get_extra_info("ssl_object")
        return tls_object.getpeercert(binary_form=True) if tls_object is not None else None
    finally:
        writer.close()


def hostname_error(certificate_der: bytes | None, wanted: str) -> str:
    """Go's `x509.HostnameError` for a certificate that is not valid for `wanted`."""
    if certificate_der is None:
        return f"x509: certificate is not valid for {wanted}"
    certificate = x509.load_der_x509_certificate(certificate_der)
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "x509: certificate relies on legacy Common Name field, use SANs instead"
    try:
        ipaddress.ip_address(wanted)
    except ValueError:
        valid = ", ".join(names.get_values_for_type(x509.DNSName))
    else:
        addresses = names.get_values_for_type(x509.IPAddress)
        if not addresses:
            return f"x509: cannot validate certificate for {wanted} because it doesn't contain any IP SANs"
        valid = ", ".join(str(a) for a in addresses)
    if not valid:
        return f"x509: certificate is not valid for any names, but wanted to match {wanted}"
    return f"x509: certificate is valid for {valid}, not {wanted}"


def _transport_cause(exc: BaseException, host: str, port: int) -> str:
    """What Go's net/http would say for the same failure (a refused certificate aside)."""
    if isinstance(exc, aiohttp.ClientSSLError):
        return f"remote error: tls: {exc}"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"dial tcp: lookup {host}: no such host"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        if isinstance(os_error, ConnectionRefusedError):
            return f"dial tcp {_host_port(host, port)}: connect: connection refused"
        reason = (os_error.strerror or str(os_error)).lower() if os_error else str(exc)
        return f"dial tcp {_host_port(host, port)}: connect: {reason}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "EOF"
    return str(exc) or type(exc).__name__


_GENERIC_STATUS_TEXT = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: ("the server was unable to return a response in the time allotted, but may still be processing the request"),
}


def http_error_text(status: int, content_type: str, body: bytes) -> str:
    """client-go's error for a non-2xx answer: the body's Status message, else a generic server response."""
    try:
        decoded = orjson.loads(body)
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status" and decoded.get("message"):
        return str(decoded["message"])
    server_message = "unknown"
    if content_type.startswith("text/"):
        server_message = body[:_MAX_UNSTRUCTURED_BODY].decode("utf-8", "replace").strip()
    if status == 403:
        return server_message
    if status in _GENERIC_STATUS_TEXT:
        return _GENERIC_STATUS_TEXT[status]
    if status >= 500:
        return f"an error on the server ({go_quote(server_message)}) has prevented the request from succeeding"
    return f"the server responded with the status code {status} but did not return more information"


def resolve_service(service: dict[str, Any] | None, ref: ServiceReference) -> tuple[str, int]:
    """The address kube-apiserver's default (cluster IP) resolver dials for a Service reference. Raises
    `WebhookCallError` with its text; a cluster IP is unreachable here: the embedded server has no cluster
    network, so only an ExternalName Service (whose name the webhook's certificate need not carry: the TLS name
    is still `<name>.<namespace>.svc`) leads anywhere."""
    if service is None:
        raise WebhookCallError(f"service {go_quote(ref.name)} not found")
    spec = service.get("spec") or {}
    service_type = spec.get("type") or "ClusterIP"
    if service_type == "ExternalName":
        return str(spec.get("externalName") or ""), ref.port
    if service_type not in ("ClusterIP", "NodePort", "LoadBalancer"):
        raise WebhookCallError(f"unsupported service type {go_quote(str(service_type))}")
    cluster_ip = str(spec.get("clusterIP") or "")
    if service_type == "ClusterIP" and cluster_ip == "None":
        raise WebhookCallError(f"cannot route to service with ClusterIP {go_quote('None')}")
    if not any(isinstance(p, dict) and p.get("port") == ref.port for p in spec.get("ports") or ()):
        raise WebhookCallError(f"no service port {ref.port} found for service {go_quote(ref.name)}")
    raise WebhookCallError(
        f"dial tcp {_host_port(cluster_ip, ref.port)}: connect: network is unreachable "
        "(the embedded API server has no cluster network: point an ExternalName Service at the webhook)"
    )


class WebhookClient:
    """One HTTP session and one TLS context per caBundle, shared by every webhook a server calls. `allow_http`
    lets `http://` URLs through (tests only; the real server requires https)."""

    def __init__(self, allow_http: bool = False) -> None:
        self.allow_http = allow_http
        self._session: aiohttp.ClientSession | None = None
        self._ssl_contexts: dict[str, ssl.SSLContext] = {}

    async def close(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # Deadlines come from each call, not from the session.
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    def ssl_context(self, ca_bundle: str) -> ssl.SSLContext:
        """A client context trusting the bundle alone (client-go's CAData); the system roots without one."""
        context = self._ssl_contexts.get(ca_bundle)
        if context is not None:
            return context
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            if ca_bundle:
                context.load_verify_locations(cadata=base64.b64decode(ca_bundle, validate=True).decode("ascii"))
            else:
                context.load_default_certs()
        except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise WebhookCallError(
                "could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
            ) from exc
        if len(self._ssl_contexts) >= _SSL_CACHE_LIMIT:
            self._ssl_contexts.clear()
        self._ssl_contexts[ca_bundle] = context
        return context

    def target(self, client_config: dict[str, Any], *, unsupported_service: str | None = None) -> WebhookTarget:
        """The target of a `clientConfig`: its `url`, else its `service`. Raises `WebhookCallError`
        ("could not get REST client: ..."). `unsupported_service`: refuse a service reference with that text."""
        ca_bundle = str(client_config.get("caBundle") or "")
        url = client_config.get("url")
        service = client_config.get("service")
        if not url and isinstance(service, dict):
            if unsupported_service:
                raise WebhookCallError(f"could not get REST client: {unsupported_service}")
            port = int(service.get("port") or 443)
            ref = ServiceReference(str(service.get("namespace") or ""), str(service.get("name") or ""), port)
            host = f"{ref.name}.{ref.namespace}.svc"
            path = _clean_path(str(service.get("path") or ""))
            return WebhookTarget("https", f"{host}:{port}", host, port, path, self.ssl_context(ca_bundle), ref)
        if not url:
            raise WebhookCallError("could not get REST client: clientConfig.url is required")
        parts = urlsplit(str(url))
        if parts.scheme not in ("https", "http") or (parts.scheme == "http" and not self.allow_http):
            raise WebhookCallError(
                f"could not get REST client: webhook URL scheme {go_quote(parts.scheme)} is not allowed: "
                "'https' is the only allowed URL scheme"
            )
        if not parts.hostname:
            raise WebhookCallError("could not get REST client: host must be specified in the webhook URL")
        port = parts.port or (443 if parts.scheme == "https" else 80)
        tls = self.ssl_context(ca_bundle) if parts.scheme == "https" else None
        return WebhookTarget(parts.scheme, parts.netloc, parts.hostname, port, _clean_path(parts.path), tls)

    async def post(
        self,
        target: WebhookTarget,
        query: str,
        body: bytes,
        timeout: float,
        *,
        services: ServiceLookup | None = None,
        deadline_text: str = "context deadline exceeded",
    ) -> tuple[str, bytes]:
        """POST `body` to the target with `?query`; returns the answer's content type and body (2xx only).
        Raises `WebhookCallError`: `Post "URL?query": cause` for a call that failed or ran past `timeout`
        (`deadline_text` is how the deadline reads), client-go's text for an HTTP error."""
        post_url = f"{target.url}?{query}"
        host, port, tls_name, url = target.host, target.port, target.host, post_url
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*", "User-Agent": USER_AGENT}
        if target.service is not None:
            ref = target.service
            try:
                host, port = resolve_service(services(ref.namespace, ref.name) if services else None, ref)
            except WebhookCallError as exc:
                raise WebhookCallError(f"Post {go_quote(post_url)}: {exc}") from None
            url = f"https://{_host_port(host, port)}{target.path}?{query}"
            headers["Host"] = target.netloc
        try:
            async with (
                asyncio.timeout(timeout),
                self._client().post(
                    url,
                    data=body,
                    headers=headers,
                    ssl=target.ssl or False,
                    server_hostname=tls_name if target.service is not None else None,
                ) as answer,
            ):
                status, content_type, raw = answer.status, answer.content_type, await answer.read()
        except TimeoutError as exc:
            raise WebhookCallError(f"Post {go_quote(post_url)}: {deadline_text}") from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            cause = await _certificate_cause(exc, host, port, tls_name)
            raise WebhookCallError(f"Post {go_quote(post_url)}: {cause}") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            raise WebhookCallError(f"Post {go_quote(post_url)}: {_transport_cause(exc, host, port)}") from exc
        if not 200 <= status <= 206:
            raise WebhookCallError(http_error_text(status, content_type, raw))
        return content_type, raw
