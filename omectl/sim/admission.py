"""Validating admission webhooks: pick the ValidatingWebhookConfiguration webhooks a write matches, call
them over HTTPS in parallel as kube-apiserver 1.32 does, and turn their answers into errors and warnings."""

from __future__ import annotations

import asyncio
import base64
import binascii
import posixpath
import re
import ssl
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from omectl.sim.apiserver.errors import APIError, FieldError, bad_request, internal_error, not_found
from omectl.sim.apiserver.metadata import VALUE_MSG, name_errors, qualified_name_errors
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.selectors import label_selector_from_object

REVIEW_VERSIONS = ("v1", "v1beta1")  # the AdmissionReview versions the real server can send, in its order
DEFAULT_TIMEOUT_SECONDS = 10
_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_NO_DRY_RUN_SIDE_EFFECTS = ("None", "NoneOnDryRun")
_USER_AGENT = "kube-apiserver-admission"
_MAX_UNSTRUCTURED_BODY = 2048  # client-go's cap on a non-Status error body it quotes
_SSL_CACHE_LIMIT = 256


def _default_user() -> dict[str, Any]:
    return {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass
class AdmissionAttributes:
    """One write as admission sees it (`admission.Attributes`)."""

    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    resource_type: ResourceType
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    obj: dict[str, Any] | None = None
    old_obj: dict[str, Any] | None = None
    dry_run: bool = False
    # CreateOptions/UpdateOptions/DeleteOptions (kind + apiVersion meta.k8s.io/v1); empty: the bare kind.
    options: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=_default_user)
    # Other served versions of the same storage, for `matchPolicy: Equivalent` (e.g. every version of a CRD).
    equivalent_types: Sequence[ResourceType] = ()


class WebhookRejection(APIError):
    """The `APIError` a webhook denial or failure produced, carrying the warnings the other webhooks returned
    (the real server sends those as `Warning` headers on the error response too)."""

    def __init__(self, error: APIError, warnings: list[str]) -> None:
        super().__init__(error.code, error.reason, error.message, error.details, error.headers)
        self.warnings = warnings


class _CallFailure(Exception):
    """`ErrCallingWebhook`: the webhook could not be asked. Its failurePolicy decides what that means."""


# ---------------------------------------------------------------------------------------------------------
# Selection
# ---------------------------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    """Go's `%q` for the strings that appear in these messages."""
    return orjson.dumps(text).decode()


def _is_namespaces(rt: ResourceType) -> bool:
    return rt.group == "" and rt.version == "v1" and rt.plural == "namespaces"


def _request_namespace(attrs: AdmissionAttributes) -> str:
    # The real server sets a Namespace's own name as the request namespace (create.go does so even on create).
    if not attrs.namespace and attrs.resource_type.plural == "namespaces" and attrs.resource_type.group == "":
        return attrs.name
    return attrs.namespace


def _in_or_star(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _rule_matches(rule: dict[str, Any], attrs: AdmissionAttributes, rt: ResourceType, namespace: str) -> bool:
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        if _is_namespaces(rt) or not namespace:
            return False
    elif scope == "Cluster":
        if not (_is_namespaces(rt) or not namespace):
            return False
    elif scope != "*":
        return False
    if not (
        _in_or_star(rule.get("operations"), attrs.operation)
        and _in_or_star(rule.get("apiGroups"), rt.group)
        and _in_or_star(rule.get("apiVersions"), rt.version)
    ):
        return False
    for entry in rule.get("resources") or ():
        resource, _, sub = entry.partition("/")
        if resource in ("*", rt.plural) and sub in ("*", attrs.subresource):
            return True
    return False


def _select_version(webhook: dict[str, Any], attrs: AdmissionAttributes, namespace: str) -> ResourceType | None:
    """The version the webhook is called with: the request's own, or (matchPolicy Equivalent, the default) the
    first equivalent version an earlier rule names. None: the webhook's rules do not select the request."""
    rules = [r for r in webhook.get("rules") or () if isinstance(r, dict)]
    request_type = attrs.resource_type
    for rule in rules:
        if _rule_matches(rule, attrs, request_type, namespace):
            return request_type
    if (webhook.get("matchPolicy") or "Equivalent") != "Equivalent":
        return None
    for rule in rules:
        for other in attrs.equivalent_types:
            if (other.group, other.version, other.plural) == (
                request_type.group,
                request_type.version,
                request_type.plural,
            ):
                continue
            if _rule_matches(rule, attrs, other, namespace):
                return other
    return None


def _is_everything(selector: Any) -> bool:
    # An unset selector is defaulted to {} by the v1 API, and {} selects everything.
    return not selector or not (selector.get("matchLabels") or selector.get("matchExpressions"))


def _labels_of(obj: dict[str, Any] | None) -> dict[str, str] | None:
    if not isinstance(obj, dict):
        return None
    return (obj.get("metadata") or {}).get("labels")


def _namespace_selector_matches(
    selector: dict[str, Any],
    attrs: AdmissionAttributes,
    namespace: str,
    namespace_labels: Callable[[str], dict[str, str] | None],
) -> bool:
    """Raises APIError (404 for a missing namespace, 500 for a bad selector) as the real matcher does."""
    try:
        matcher = label_selector_from_object(selector)
    except ValueError as exc:  # SelectorError
        raise internal_error(str(exc)) from exc
    if _is_namespaces(attrs.resource_type) and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE"):
        # The namespace being written is not stored yet: its own labels decide.
        return matcher.matches(_labels_of(attrs.obj))
    labels = namespace_labels(namespace)
    if labels is None:
        raise not_found("namespaces", "", namespace)
    return matcher.matches(labels)


def _object_selector_matches(selector: dict[str, Any], attrs: AdmissionAttributes) -> bool:
    try:
        matcher = label_selector_from_object(selector)
    except ValueError as exc:  # SelectorError
        raise internal_error(str(exc)) from exc
    candidates = [o for o in (None if attrs.operation == "DELETE" else attrs.obj, attrs.old_obj) if o is not None]
    return any(matcher.matches(_labels_of(o)) for o in candidates)


@dataclass
class _Invocation:
    webhook: dict[str, Any]
    version: ResourceType


def _invocations(
    attrs: AdmissionAttributes,
    configurations: list[dict[str, Any]],
    namespace_labels: Callable[[str], dict[str, str] | None],
) -> list[_Invocation]:
    namespace = _request_namespace(attrs)
    out: list[_Invocation] = []
    # The real server orders configurations by name, then webhooks as listed.
    for config in sorted(configurations, key=lambda c: (c.get("metadata") or {}).get("name", "")):
        for webhook in config.get("webhooks") or ():
            if not isinstance(webhook, dict):
                continue
            version = _select_version(webhook, attrs, namespace)
            if version is None:
                continue
            # As upstream: a selector that cannot be evaluated fails the request only when nothing else
            # already excludes the webhook.
            ns_selector: dict[str, Any] = webhook.get("namespaceSelector") or {}
            ns_error: APIError | None = None
            ns_match = True
            cluster_scoped = not namespace and not _is_namespaces(attrs.resource_type)
            if not (cluster_scoped or _is_everything(ns_selector)):
                try:
                    ns_match = _namespace_selector_matches(ns_selector, attrs, namespace, namespace_labels)
                except APIError as exc:
                    ns_error, ns_match = exc, False
            if not ns_match and ns_error is None:
                continue
            obj_selector: dict[str, Any] = webhook.get("objectSelector") or {}
            obj_error: APIError | None = None
            obj_match = True
            if not _is_everything(obj_selector):
                try:
                    obj_match = _object_selector_matches(obj_selector, attrs)
                except APIError as exc:
                    obj_error, obj_match = exc, False
            if not obj_match and obj_error is None:
                continue
            if ns_error is not None:
                raise ns_error
            if obj_error is not None:
                raise obj_error
            out.append(_Invocation(webhook, version))
    return out


# ---------------------------------------------------------------------------------------------------------
# Calling
# ---------------------------------------------------------------------------------------------------------


def _clean_url(url: str, allow_http: bool) -> tuple[str, str, str, int]:
    """The URL client-go actually posts to (path cleaned, "/" when empty), plus scheme, host and port."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or (parts.scheme == "http" and not allow_http):
        raise _CallFailure(
            f"could not get REST client: webhook URL scheme {_quote(parts.scheme)} is not allowed: "
            "'https' is the only allowed URL scheme"
        )
    if not parts.hostname:
        raise _CallFailure("could not get REST client: host must be specified in the webhook URL")
    path = posixpath.normpath("/" + parts.path) if parts.path else "/"
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{parts.netloc}{path}", parts.scheme, parts.hostname, port


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _transport_cause(exc: BaseException, host: str, port: int) -> str:
    """What Go's net/http would say for the same failure."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert_error = exc.certificate_error
        code = getattr(cert_error, "verify_code", None)
        if code in (2, 18, 19, 20, 21):
            detail = "x509: certificate signed by unknown authority"
        elif code in (9, 10):
            detail = "x509: certificate has expired or is not yet valid"
        elif code == 62:
            detail = f"x509: certificate is not valid for {host}"
        else:
            detail = getattr(cert_error, "verify_message", None) or str(cert_error)
        return f"tls: failed to verify certificate: {detail}"
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


def _http_error_text(status: int, content_type: str, body: bytes) -> str:
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
        return f"an error on the server ({_quote(server_message)}) has prevented the request from succeeding"
    return f"the server responded with the status code {status} but did not return more information"


def _gvk_string(api_version: Any, kind: Any) -> str:
    group, _, version = str(api_version or "").rpartition("/")
    return f"{group}/{version}, Kind={kind or ''}"


def _verify_response(review: Any, uid: str, review_version: str) -> dict[str, Any]:
    """`VerifyAdmissionResponse` for a validating webhook. Raises _CallFailure."""
    response = review.get("response") if isinstance(review, dict) else None
    if not isinstance(response, dict):
        raise _CallFailure("received invalid webhook response: webhook response was absent")
    if review_version == "v1beta1":
        return response  # v1beta1 never checked uid or kind
    if response.get("uid", "") != uid:
        raise _CallFailure(
            f"received invalid webhook response: expected response.uid={_quote(uid)}, "
            f"got {_quote(str(response.get('uid', '')))}"
        )
    if review.get("apiVersion") != "admission.k8s.io/v1" or review.get("kind") != "AdmissionReview":
        raise _CallFailure(
            "received invalid webhook response: expected webhook response of admission.k8s.io/v1, "
            f"Kind=AdmissionReview, got {_gvk_string(review.get('apiVersion'), review.get('kind'))}"
        )
    if response.get("patch"):
        raise _CallFailure("received invalid webhook response: validating webhook may not return response.patch")
    if response.get("patchType") is not None:
        raise _CallFailure("received invalid webhook response: validating webhook may not return response.patchType")
    return response


def _denial(webhook_name: str, status: Any) -> APIError:
    """`ToStatusErr` as of 1.32: keep the webhook's code (at least 400), reason and details."""
    status = status if isinstance(status, dict) else {}
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    denied_by = f"admission webhook {_quote(webhook_name)} denied the request"
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = status.get("details")
    return APIError(code, str(status.get("reason") or ""), message, details if isinstance(details, dict) else None)


class WebhookDispatcher:
    """Calls validating webhooks for the embedded API server. One per server: it keeps one HTTP session and
    one TLS context per caBundle. `allow_http` lets `http://` URLs through (tests only; the real server
    requires https)."""

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
            # Deadlines come from each webhook's timeoutSeconds, not from the session.
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    def _ssl_context(self, ca_bundle: str) -> ssl.SSLContext:
        context = self._ssl_contexts.get(ca_bundle)
        if context is not None:
            return context
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            if ca_bundle:
                # Like client-go's CAData: the bundle replaces the system roots.
                context.load_verify_locations(cadata=base64.b64decode(ca_bundle, validate=True).decode("ascii"))
            else:
                context.load_default_certs()
        except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
            raise _CallFailure(
                "could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
            ) from exc
        if len(self._ssl_contexts) >= _SSL_CACHE_LIMIT:
            self._ssl_contexts.clear()
        self._ssl_contexts[ca_bundle] = context
        return context

    async def validate(
        self,
        attrs: AdmissionAttributes,
        configurations: list[dict[str, Any]],
        namespace_labels: Callable[[str], dict[str, str] | None],
    ) -> list[str]:
        """Call every webhook that selects this request, in parallel. Returns their warnings (deduplicated,
        in webhook order); raises `WebhookRejection` (an APIError) for the first denial or failing call."""
        invocations = _invocations(attrs, configurations, namespace_labels)
        if not invocations:
            return []
        review_parts = _ReviewParts(attrs)
        if len(invocations) == 1:
            outcomes = [await self._invoke(invocations[0], attrs, review_parts)]
        else:
            outcomes = await asyncio.gather(*(self._invoke(i, attrs, review_parts) for i in invocations))
        warnings = list(dict.fromkeys(w for _, ws in outcomes for w in ws))
        for error, _ in outcomes:
            if error is not None:
                raise WebhookRejection(error, warnings)
        return warnings

    async def _invoke(
        self, invocation: _Invocation, attrs: AdmissionAttributes, review_parts: _ReviewParts
    ) -> tuple[APIError | None, list[str]]:
        webhook = invocation.webhook
        name = str(webhook.get("name", ""))
        try:
            return await self._call(invocation, attrs, review_parts, name)
        except _CallFailure as failure:
            if webhook.get("failurePolicy") == "Ignore":
                return None, []
            return internal_error(f"failed calling webhook {_quote(name)}: {failure}"), []

    async def _call(
        self, invocation: _Invocation, attrs: AdmissionAttributes, review_parts: _ReviewParts, name: str
    ) -> tuple[APIError | None, list[str]]:
        webhook = invocation.webhook
        if attrs.dry_run:
            side_effects = webhook.get("sideEffects")
            if side_effects is None:
                raise _CallFailure("Webhook SideEffects is nil")
            if side_effects not in _NO_DRY_RUN_SIDE_EFFECTS:
                return bad_request(f"admission webhook {_quote(name)} does not support dry run"), []
        versions = webhook.get("admissionReviewVersions") or ()
        review_version = next((v for v in versions if v in REVIEW_VERSIONS), None)
        if review_version is None:
            raise _CallFailure(
                "could not create admission objects: webhook does not accept known AdmissionReview versions "
                "(v1, v1beta1)"
            )
        client_config = webhook.get("clientConfig") or {}
        url = client_config.get("url")
        if not url:
            if client_config.get("service"):
                raise _CallFailure(
                    "could not get REST client: clientConfig.service is not supported by the embedded API "
                    "server (it has no cluster DNS); use clientConfig.url"
                )
            raise _CallFailure("could not get REST client: clientConfig.url is required")
        endpoint, scheme, host, port = _clean_url(str(url), self.allow_http)
        ssl_context = self._ssl_context(str(client_config.get("caBundle") or "")) if scheme == "https" else None
        timeout = webhook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS
        post_url = f"{endpoint}?timeout={timeout}s"
        uid = str(uuid.uuid4())
        body = review_parts.body(uid, review_version, invocation.version)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, */*",
            "User-Agent": _USER_AGENT,
        }
        try:
            async with (
                asyncio.timeout(timeout),
                self._client().post(post_url, data=body, headers=headers, ssl=ssl_context or False) as answer,
            ):
                status, content_type, raw = answer.status, answer.content_type, await answer.read()
        except TimeoutError as exc:
            raise _CallFailure(f"failed to call webhook: Post {_quote(post_url)}: context deadline exceeded") from exc
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            cause = _transport_cause(exc, host, port)
            raise _CallFailure(f"failed to call webhook: Post {_quote(post_url)}: {cause}") from exc
        if not 200 <= status <= 206:
            raise _CallFailure(f"failed to call webhook: {_http_error_text(status, content_type, raw)}")
        try:
            review = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise _CallFailure(f"failed to call webhook: couldn't get version/kind; json parse error: {exc}") from exc
        if review is None:
            review = {}  # JSON null decodes to an empty review in Go
        if not isinstance(review, dict):
            # (A missing kind is fine at this point: the decoder defaults it; v1's GVK check rejects it below.)
            json_type = {list: "array", str: "string", bool: "bool"}.get(type(review), "number")
            raise _CallFailure(
                f"failed to call webhook: json: cannot unmarshal {json_type} into Go value of type v1.AdmissionReview"
            )
        response = _verify_response(review, uid, review_version)
        warnings = [w for w in response.get("warnings") or () if isinstance(w, str)]
        if response.get("allowed") is True:
            return None, warnings
        return _denial(name, response.get("status")), warnings


class _ReviewParts:
    """The AdmissionReview pieces shared by every webhook of one request; objects are serialized once."""

    def __init__(self, attrs: AdmissionAttributes) -> None:
        self.attrs = attrs
        self.namespace = _request_namespace(attrs)
        options: dict[str, Any] | None = attrs.options
        if not options:
            kind = _OPTIONS_KINDS.get(attrs.operation)
            options = {"kind": kind, "apiVersion": "meta.k8s.io/v1"} if kind else None
        self._options = orjson.Fragment(orjson.dumps(options))
        self._objects: dict[str, tuple[orjson.Fragment, orjson.Fragment]] = {}

    def _serialized_objects(self, version: ResourceType) -> tuple[orjson.Fragment, orjson.Fragment]:
        key = version.group_version
        cached = self._objects.get(key)
        if cached is None:
            obj = None if self.attrs.operation == "DELETE" else self.attrs.obj
            old = self.attrs.old_obj
            if version is not self.attrs.resource_type:
                # An equivalent version: send the objects as that version (CRD versions differ only here).
                obj = {**obj, "apiVersion": key} if obj else obj
                old = {**old, "apiVersion": key} if old else old
            cached = (orjson.Fragment(orjson.dumps(obj)), orjson.Fragment(orjson.dumps(old)))
            self._objects[key] = cached
        return cached

    def body(self, uid: str, review_version: str, version: ResourceType) -> bytes:
        attrs, request_type = self.attrs, self.attrs.resource_type
        obj, old = self._serialized_objects(version)
        request: dict[str, Any] = {
            "uid": uid,
            "kind": {"group": version.group, "version": version.version, "kind": version.kind},
            "resource": {"group": version.group, "version": version.version, "resource": version.plural},
        }
        if attrs.subresource:
            request["subResource"] = attrs.subresource
        request["requestKind"] = {
            "group": request_type.group,
            "version": request_type.version,
            "kind": request_type.kind,
        }
        request["requestResource"] = {
            "group": request_type.group,
            "version": request_type.version,
            "resource": request_type.plural,
        }
        if attrs.subresource:
            request["requestSubResource"] = attrs.subresource
        if attrs.name:
            request["name"] = attrs.name
        if self.namespace:
            request["namespace"] = self.namespace
        request["operation"] = attrs.operation
        request["userInfo"] = attrs.user
        request["object"] = obj
        request["oldObject"] = old
        request["dryRun"] = attrs.dry_run
        request["options"] = self._options
        return orjson.dumps(
            {
                "kind": "AdmissionReview",
                "apiVersion": f"admission.k8s.io/{review_version}",
                "request": request,
            }
        )


# ---------------------------------------------------------------------------------------------------------
# ValidatingWebhookConfiguration validation and defaults
# ---------------------------------------------------------------------------------------------------------

_SUPPORTED_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_FAILURE_POLICIES = ("Fail", "Ignore")
_MATCH_POLICIES = ("Equivalent", "Exact")
_DNS1035_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_dns1035_re = re.compile(f"^{_DNS1035_FMT}$")
_DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    f"character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    f"validation is '{_DNS1035_FMT}')"
)
_URL_FORM = "; desired format: https://host[/path]"


def _go_slice(values: list[Any], element_type: str = "string") -> str:
    """Go's `%#v` of a string slice, which is how field errors print list values."""
    return f"[]{element_type}{{" + ", ".join(_quote(str(v)) for v in values) + "}"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _resources_errors(resources: list[Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not resources:
        errors.append(FieldError("Required", path))
    wildcard_subresources: set[str] = set()  # x/*
    wildcard_resources: set[str] = set()  # */x
    has_double_wildcard = has_single_wildcard = has_plain_resource = False
    for i, entry in enumerate(resources):
        entry = str(entry)
        if not entry:
            errors.append(FieldError("Required", f"{path}[{i}]"))
            continue
        has_double_wildcard = has_double_wildcard or entry == "*/*"
        has_single_wildcard = has_single_wildcard or entry == "*"
        if "/" not in entry:
            has_plain_resource = entry != "*"  # the last plain entry decides, exactly as upstream does
            continue
        resource, _, sub = entry.partition("/")
        if resource in wildcard_subresources:
            errors.append(
                FieldError(
                    "Invalid",
                    f"{path}[{i}]",
                    f"if '{resource}/*' is present, must not specify {entry}",
                    entry,
                )
            )
        if sub in wildcard_resources:
            errors.append(
                FieldError("Invalid", f"{path}[{i}]", f"if '*/{sub}' is present, must not specify {entry}", entry)
            )
        if sub == "*":
            wildcard_subresources.add(resource)
        if resource == "*":
            wildcard_resources.add(sub)
    if len(resources) > 1 and has_double_wildcard:
        errors.append(
            FieldError(
                "Invalid",
                path,
                "if '*/*' is present, must not specify other resources",
                raw_value=_go_slice(resources),
            )
        )
    if has_single_wildcard and has_plain_resource:
        errors.append(
            FieldError(
                "Invalid",
                path,
                "if '*' is present, must not specify other resources without subresources",
                raw_value=_go_slice(resources),
            )
        )
    return errors


def _rule_errors(rule: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    operations = _list(rule.get("operations"))
    if not operations:
        errors.append(FieldError("Required", f"{path}.operations"))
    if len(operations) > 1 and "*" in operations:
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.operations",
                "if '*' is present, must not specify other operations",
                raw_value=_go_slice(operations, "admissionregistration.OperationType"),
            )
        )
    for i, op in enumerate(operations):
        if op not in _SUPPORTED_OPERATIONS:
            errors.append(
                FieldError("NotSupported", f"{path}.operations[{i}]", value=op, supported=_SUPPORTED_OPERATIONS)
            )
    groups = _list(rule.get("apiGroups"))
    if not groups:
        errors.append(FieldError("Required", f"{path}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.apiGroups",
                "if '*' is present, must not specify other API groups",
                raw_value=_go_slice(groups),
            )
        )
    versions = _list(rule.get("apiVersions"))
    if not versions:
        errors.append(FieldError("Required", f"{path}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.apiVersions",
                "if '*' is present, must not specify other API versions",
                raw_value=_go_slice(versions),
            )
        )
    for i, version in enumerate(versions):
        if version == "":
            errors.append(FieldError("Required", f"{path}.apiVersions[{i}]"))
    errors += _resources_errors(_list(rule.get("resources")), f"{path}.resources")
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errors.append(FieldError("NotSupported", f"{path}.scope", value=scope, supported=_SCOPES))
    return errors


def _label_value_errors(value: Any, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    text = str(value)
    if len(text) > 63:
        errors.append(FieldError("Invalid", path, "must be no more than 63 characters", text))
    if not re.fullmatch("(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?", text):
        errors.append(FieldError("Invalid", path, VALUE_MSG, text))
    return errors


def _selector_errors(selector: Any, path: str) -> list[FieldError]:
    """`ValidateLabelSelector` (label values in selectors must be valid, as on create)."""
    if not isinstance(selector, dict):
        return []
    errors: list[FieldError] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        errors += qualified_name_errors(str(key), f"{path}.matchLabels")
        errors += _label_value_errors(value, f"{path}.matchLabels")
    for i, expr in enumerate(_list(selector.get("matchExpressions"))):
        expr_path = f"{path}.matchExpressions[{i}]"
        expr = expr if isinstance(expr, dict) else {}
        op, values = expr.get("operator"), _list(expr.get("values"))
        if op in ("In", "NotIn"):
            if not values:
                errors.append(
                    FieldError(
                        "Required",
                        f"{expr_path}.values",
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    )
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    FieldError(
                        "Forbidden",
                        f"{expr_path}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(FieldError("Invalid", f"{expr_path}.operator", "not a valid selector operator", op))
        errors += qualified_name_errors(str(expr.get("key", "")), f"{expr_path}.key")
        for j, value in enumerate(values):
            errors += _label_value_errors(value, f"{expr_path}.values[{j}]")
    return errors


def _url_errors(url: str, path: str, allow_http: bool) -> list[FieldError]:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises ValueError for a bad port, as Go's url.Parse does
    except ValueError as exc:
        return [FieldError("Required", path, f"url must be a valid URL: {exc}{_URL_FORM}")]
    errors: list[FieldError] = []
    if parts.scheme != "https" and not (allow_http and parts.scheme == "http"):
        errors.append(FieldError("Invalid", path, "'https' is the only allowed URL scheme" + _URL_FORM, parts.scheme))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        errors.append(FieldError("Invalid", path, "host must be specified" + _URL_FORM, host))
    if "@" in parts.netloc:
        errors.append(
            FieldError(
                "Invalid",
                path,
                "user information is not permitted in the URL",
                parts.netloc.rpartition("@")[0],
            )
        )
    if parts.fragment:
        errors.append(FieldError("Invalid", path, "fragments are not permitted in the URL", parts.fragment))
    if parts.query:
        errors.append(FieldError("Invalid", path, "query parameters are not permitted in the URL", parts.query))
    return errors


def _service_errors(service: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not service.get("name"):
        errors.append(FieldError("Required", f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        errors.append(FieldError("Required", f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        errors.append(
            FieldError("Invalid", f"{path}.port", "port is not valid: must be between 1 and 65535, inclusive", port)
        )
    service_path = service.get("path")
    if service_path and service_path != "/" and not str(service_path).startswith("/"):
        errors.append(FieldError("Invalid", f"{path}.path", "must start with a '/'", service_path))
    return errors


def _review_versions_errors(versions: list[Any], path: str) -> list[FieldError]:
    if not versions:
        return [FieldError("Required", path, "must specify one of v1, v1beta1")]
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        version = str(version)
        if version in seen:
            errors.append(FieldError("Invalid", f"{path}[{i}]", "duplicate version", version))
            continue
        seen.add(version)
        if len(version) > 63:
            errors.append(FieldError("Invalid", f"{path}[{i}]", "must be no more than 63 characters", version))
        if not _dns1035_re.match(version):
            errors.append(FieldError("Invalid", f"{path}[{i}]", _DNS1035_MSG, version))
    if not seen.intersection(REVIEW_VERSIONS):
        errors.append(
            FieldError("Invalid", path, "must include at least one of v1, v1beta1", raw_value=_go_slice(versions))
        )
    return errors


def _webhook_name_errors(name: str, path: str) -> list[FieldError]:
    """`IsFullyQualifiedName`: a DNS subdomain with at least three dot-separated segments."""
    if not name:
        return [FieldError("Required", path)]
    errors = name_errors(name, path=path)
    if errors:
        return errors
    if len(name.split(".")) < 3:
        return [FieldError("Invalid", path, "should be a domain with at least three segments separated by dots", name)]
    return []


def _webhook_errors(webhook: dict[str, Any], path: str, allow_http: bool) -> list[FieldError]:
    errors = _webhook_name_errors(str(webhook.get("name") or ""), f"{path}.name")
    for i, rule in enumerate(_list(webhook.get("rules"))):
        errors += _rule_errors(rule if isinstance(rule, dict) else {}, f"{path}.rules[{i}]")
    failure_policy = webhook.get("failurePolicy")
    if failure_policy is not None and failure_policy not in _FAILURE_POLICIES:
        errors.append(
            FieldError("NotSupported", f"{path}.failurePolicy", value=failure_policy, supported=_FAILURE_POLICIES)
        )
    match_policy = webhook.get("matchPolicy")
    if match_policy is not None and match_policy not in _MATCH_POLICIES:
        errors.append(FieldError("NotSupported", f"{path}.matchPolicy", value=match_policy, supported=_MATCH_POLICIES))
    side_effects = webhook.get("sideEffects")
    if side_effects is None:
        errors.append(FieldError("Required", f"{path}.sideEffects", "must specify one of None, NoneOnDryRun"))
    elif side_effects not in _NO_DRY_RUN_SIDE_EFFECTS:
        errors.append(
            FieldError("NotSupported", f"{path}.sideEffects", value=side_effects, supported=_NO_DRY_RUN_SIDE_EFFECTS)
        )
    timeout = webhook.get("timeoutSeconds")
    if timeout is not None and (not isinstance(timeout, int) or not 1 <= timeout <= 30):
        errors.append(
            FieldError(
                "Invalid",
                f"{path}.timeoutSeconds",
                "the timeout value must be between 1 and 30 seconds",
                timeout,
            )
        )
    errors += _selector_errors(webhook.get("namespaceSelector"), f"{path}.namespaceSelector")
    errors += _selector_errors(webhook.get("objectSelector"), f"{path}.objectSelector")
    client_config = webhook.get("clientConfig")
    client_config = client_config if isinstance(client_config, dict) else {}
    url, service = client_config.get("url"), client_config.get("service")
    if (url is None) == (service is None):
        errors.append(FieldError("Required", f"{path}.clientConfig", "exactly one of url or service is required"))
    elif url is not None:
        errors += _url_errors(str(url), f"{path}.clientConfig.url", allow_http)
    else:
        errors += _service_errors(service if isinstance(service, dict) else {}, f"{path}.clientConfig.service")
    return errors


def validate_webhook_configuration(obj: dict[str, Any], *, allow_http: bool = False) -> list[FieldError]:
    """The API server's checks of a ValidatingWebhookConfiguration's webhooks on create/update (metadata is
    checked by the generic object rules). `allow_http` accepts `http://` URLs, matching the dispatcher's."""
    errors: list[FieldError] = []
    seen_names: set[str] = set()
    for i, webhook in enumerate(_list(obj.get("webhooks"))):
        path = f"webhooks[{i}]"
        webhook = webhook if isinstance(webhook, dict) else {}
        errors += _webhook_errors(webhook, path, allow_http)
        errors += _review_versions_errors(
            _list(webhook.get("admissionReviewVersions")), f"{path}.admissionReviewVersions"
        )
        name = webhook.get("name")
        if name:
            if name in seen_names:
                errors.append(FieldError("Duplicate", f"{path}.name", value=name))
            seen_names.add(name)
    return errors


def default_webhook_configuration(obj: dict[str, Any]) -> None:
    """Apply the admissionregistration/v1 defaults in place, as the real server stores them."""
    for webhook in _list(obj.get("webhooks")):
        if not isinstance(webhook, dict):
            continue
        webhook.setdefault("failurePolicy", "Fail")
        webhook.setdefault("matchPolicy", "Equivalent")
        webhook.setdefault("namespaceSelector", {})
        webhook.setdefault("objectSelector", {})
        webhook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
        for rule in _list(webhook.get("rules")):
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")
        service = (webhook.get("clientConfig") or {}).get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)
