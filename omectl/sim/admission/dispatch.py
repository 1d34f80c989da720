"""Calling the validating webhooks a write selects: one AdmissionReview each over HTTP(S), in parallel, with
each webhook's timeout and failurePolicy, as kube-apiserver 1.32 does; their answers become errors and
warnings."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import orjson

from omectl.sim.admission.config import DEFAULT_TIMEOUT_SECONDS, NO_DRY_RUN_SIDE_EFFECTS, REVIEW_VERSIONS
from omectl.sim.admission.match import AdmissionAttributes, MatchedWebhook, matching_webhooks, request_namespace
from omectl.sim.apiserver.errors import APIError, bad_request, go_quote, internal_error
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.webhook_client import WebhookCallError, WebhookClient

_OPTIONS_KINDS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_SERVICES_UNSUPPORTED = (
    "clientConfig.service is not supported by the embedded API server (it has no cluster DNS); use clientConfig.url"
)


class WebhookRejection(APIError):
    """The `APIError` a webhook denial or failure produced, carrying the warnings the other webhooks returned
    (the real server sends those as `Warning` headers on the error response too)."""

    def __init__(self, error: APIError, warnings: list[str]) -> None:
        super().__init__(error.code, error.reason, error.message, error.details, error.headers)
        self.warnings = warnings


class _CallFailure(Exception):
    """`ErrCallingWebhook`: the webhook could not be asked. Its failurePolicy decides what that means."""


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
            f"received invalid webhook response: expected response.uid={go_quote(uid)}, "
            f"got {go_quote(str(response.get('uid', '')))}"
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
    denied_by = f"admission webhook {go_quote(webhook_name)} denied the request"
    if status.get("message"):
        message = f"{denied_by}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied_by}: {status['reason']}"
    else:
        message = f"{denied_by} without explanation"
    details = status.get("details")
    return APIError(code, str(status.get("reason") or ""), message, details if isinstance(details, dict) else None)


class WebhookDispatcher:
    """Calls validating webhooks for the embedded API server, through the server's `WebhookClient` (one HTTP
    session, one TLS context per caBundle). `allow_http` lets `http://` URLs through (tests only; the real
    server requires https)."""

    def __init__(self, allow_http: bool = False, client: WebhookClient | None = None) -> None:
        self.client = client or WebhookClient(allow_http=allow_http)

    @property
    def allow_http(self) -> bool:
        return self.client.allow_http

    async def close(self) -> None:
        await self.client.close()

    async def validate(
        self,
        attrs: AdmissionAttributes,
        configurations: list[dict[str, Any]],
        namespace_labels: Callable[[str], dict[str, str] | None],
    ) -> list[str]:
        """Call every webhook that selects this request, in parallel. Returns their warnings (deduplicated,
        in webhook order); raises `WebhookRejection` (an APIError) for the first denial or failing call."""
        matched = matching_webhooks(attrs, configurations, namespace_labels)
        if not matched:
            return []
        review_parts = _ReviewParts(attrs)
        await review_parts.prepare([m.version for m in matched])
        if len(matched) == 1:
            outcomes = [await self._invoke(matched[0], attrs, review_parts)]
        else:
            outcomes = await asyncio.gather(*(self._invoke(m, attrs, review_parts) for m in matched))
        warnings = list(dict.fromkeys(w for _, ws in outcomes for w in ws))
        for error, _ in outcomes:
            if error is not None:
                raise WebhookRejection(error, warnings)
        return warnings

    async def _invoke(
        self, matched: MatchedWebhook, attrs: AdmissionAttributes, review_parts: _ReviewParts
    ) -> tuple[APIError | None, list[str]]:
        webhook = matched.webhook
        name = str(webhook.get("name", ""))
        try:
            return await self._call(matched, attrs, review_parts, name)
        except _CallFailure as failure:
            if webhook.get("failurePolicy") == "Ignore":
                return None, []
            return internal_error(f"failed calling webhook {go_quote(name)}: {failure}"), []

    async def _call(
        self, matched: MatchedWebhook, attrs: AdmissionAttributes, review_parts: _ReviewParts, name: str
    ) -> tuple[APIError | None, list[str]]:
        webhook = matched.webhook
        if attrs.dry_run:
            side_effects = webhook.get("sideEffects")
            if side_effects is None:
                raise _CallFailure("Webhook SideEffects is nil")
            if side_effects not in NO_DRY_RUN_SIDE_EFFECTS:
                return bad_request(f"admission webhook {go_quote(name)} does not support dry run"), []
        versions = webhook.get("admissionReviewVersions") or ()
        review_version = next((v for v in versions if v in REVIEW_VERSIONS), None)
        if review_version is None:
            raise _CallFailure(
                "could not create admission objects: webhook does not accept known AdmissionReview versions "
                "(v1, v1beta1)"
            )
        timeout = webhook.get("timeoutSeconds") or DEFAULT_TIMEOUT_SECONDS
        try:
            target = self.client.target(webhook.get("clientConfig") or {}, unsupported_service=_SERVICES_UNSUPPORTED)
        except WebhookCallError as exc:
            raise _CallFailure(str(exc)) from None
        uid = str(uuid.uuid4())
        body = review_parts.body(uid, review_version, matched.version)
        try:
            _, raw = await self.client.post(target, f"timeout={timeout}s", body, timeout)
        except WebhookCallError as exc:
            raise _CallFailure(f"failed to call webhook: {exc}") from exc
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
        self.namespace = request_namespace(attrs)
        options: dict[str, Any] | None = attrs.options
        if not options:
            kind = _OPTIONS_KINDS.get(attrs.operation)
            options = {"kind": kind, "apiVersion": "meta.k8s.io/v1"} if kind else None
        self._options = orjson.Fragment(orjson.dumps(options))
        self._objects: dict[str, tuple[orjson.Fragment, orjson.Fragment]] = {}

    async def prepare(self, versions: list[ResourceType]) -> None:
        """Serialize the objects once per version a webhook is called with; an equivalent version gets them
        converted (a CRD's webhook conversion, else the version relabelled: CRD versions differ only there)."""
        attrs = self.attrs
        obj = None if attrs.operation == "DELETE" else attrs.obj
        for version in versions:
            if version.group_version in self._objects:
                continue
            converted, old = obj, attrs.old_obj
            if version is not attrs.resource_type:
                converted = await self._convert(obj, version)
                old = await self._convert(old, version)
            self._objects[version.group_version] = (
                orjson.Fragment(orjson.dumps(converted)),
                orjson.Fragment(orjson.dumps(old)),
            )

    async def _convert(self, obj: dict[str, Any] | None, version: ResourceType) -> dict[str, Any] | None:
        if obj is None:
            return None
        if self.attrs.convert is not None:
            return await self.attrs.convert(obj, version)
        return {**obj, "apiVersion": version.group_version}

    def body(self, uid: str, review_version: str, version: ResourceType) -> bytes:
        attrs, request_type = self.attrs, self.attrs.resource_type
        obj, old = self._objects[version.group_version]
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
