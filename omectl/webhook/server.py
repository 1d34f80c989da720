"""The admission webhook server: validating webhooks for every registered cluster, over TLS.

Each cluster calls `POST /validate/<cluster>/<kind>` (kind: `servingruntime`, `clusterservingruntime`,
`inferenceservice`). A runtime is admitted when its chain resolves and the profile rule holds; an
InferenceService when the chain of the runtime it names resolves; otherwise the denial reason is the chain error,
exactly as the spec words it. Malformed objects get a clear denial, never a 500.

AMD AIM kinds (`aimruntimeconfig`, `aimclusterruntimeconfig`, `aimservice`) are checked by `omectl.webhook.aim`.
The same server answers the AIM CRDs' ConversionReviews at `POST /convert/<cluster>` (`omectl.webhook.conversion`).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
from aiohttp import web

from omectl.core.ome.inheritance import ChainError, ResolutionContext, profile_error, resolve_chain
from omectl.core.ome.runtimes import CLUSTER_SERVING_RUNTIME, SERVING_RUNTIME
from omectl.webhook.aim import AIM_KINDS, aim_verdict, aim_webhooks
from omectl.webhook.conversion import handle_conversion

log = logging.getLogger(__name__)

SERVING_RUNTIME_WEBHOOK = "servingruntime.ome-webhook-server.validator"
CLUSTER_SERVING_RUNTIME_WEBHOOK = "clusterservingruntime.ome-webhook-server.validator"
INFERENCE_SERVICE_WEBHOOK = "inferenceservice.ome-webhook-server.validator"
INFERENCE_SERVICE = "InferenceService"
WEBHOOK_CONFIGURATION_NAME = "omectl-ome-webhooks"
MAX_LIVE_FETCHES = 6

# A lookup that may consult the API server: (kind, namespace, name) -> object or None.
LiveGet = Callable[[str, str, str], Awaitable[Mapping[str, Any] | None]]


@dataclass
class ClusterAdmission:
    """What the webhook needs of one cluster: a cache lookup and a live fallback for cache misses."""

    lookup: Any  # a RuntimeLookup over the informer caches, with `.overlay`
    live_get: LiveGet


class AdmissionError(Exception):
    """The request cannot be read as an AdmissionReview (answered 400, not a denial)."""


def _review(uid: str, allowed: bool, message: str | None = None, code: int = 403) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if not allowed:
        response["status"] = {"code": code, "message": message or "denied", "reason": "Forbidden"}
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


async def validate_runtime(kind: str, obj: Mapping[str, Any], admission: ClusterAdmission) -> str | None:
    """The denial reason for a ServingRuntime or ClusterServingRuntime, or None to admit it."""
    if not isinstance(obj, Mapping):
        return "the object is not a JSON object"
    object_kind = obj.get("kind")
    if object_kind is None:
        obj = {**obj, "kind": kind}  # the path names the kind; the chain walk needs it on the object
    elif object_kind != kind:
        return f"this webhook validates {kind} objects, not {_describe(object_kind)}"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return "metadata.name is required"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return "metadata.name is required"
    namespace = (meta.get("namespace") or "") if kind == SERVING_RUNTIME else ""
    if not isinstance(namespace, str):
        return "metadata.namespace must be a string"
    annotations = meta.get("annotations") or {}
    if not isinstance(annotations, Mapping) or not all(isinstance(v, str) for v in annotations.values()):
        return "metadata.annotations must be a map of strings"
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        return "spec must be an object"
    problem = profile_error(obj)
    if problem:
        return problem
    lookup = admission.lookup
    lookup.overlay[(kind, namespace, name)] = obj
    for _ in range(MAX_LIVE_FETCHES):
        try:
            resolve_chain(obj, lookup)
            return None
        except ChainError as exc:
            if exc.reason != "ParentNotFound":
                return exc.message
            missing = await _fetch_missing_parent(exc, lookup, admission)
            if not missing:
                return exc.message
    return "inheritance chain could not be resolved"


async def validate_inference_service(obj: Mapping[str, Any], admission: ClusterAdmission) -> str | None:
    """The denial reason for an InferenceService, or None: malformed specs, and a named runtime whose chain is
    broken (the reason is the chain error). A runtime that does not exist is admitted:
    the controller reports it, and it may be created next."""
    if not isinstance(obj, Mapping):
        return "the object is not a JSON object"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        return "metadata.name is required"
    namespace = meta.get("namespace") or ""
    if not isinstance(namespace, str):
        return "metadata.namespace must be a string"
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return "spec must be an object"
    for field in ("model", "runtime"):
        if spec.get(field) is not None and not isinstance(spec.get(field), Mapping):
            return f"spec.{field} must be an object"
    runtime_spec = spec.get("runtime") or {}
    runtime_name = runtime_spec.get("name")
    if runtime_name is None:
        return None
    if not isinstance(runtime_name, str) or not runtime_name:
        return "spec.runtime.name must be a non-empty string"
    lookup = admission.lookup
    # The runtime it names: its namespace's ServingRuntime, else the ClusterServingRuntime (whose own chain then
    # resolves cluster-only).
    for candidate in ResolutionContext(namespace).candidates(runtime_name):
        key = (candidate.kind, candidate.namespace, candidate.name)
        runtime = lookup.get(*key)
        if runtime is None and key not in lookup.overlay:
            runtime = await admission.live_get(*key)
            lookup.overlay[key] = runtime
        if runtime is not None:
            break
    else:
        return None
    for _ in range(MAX_LIVE_FETCHES):
        try:
            resolve_chain(runtime, lookup)
            return None
        except ChainError as exc:
            if exc.reason != "ParentNotFound" or not await _fetch_missing_parent(exc, lookup, admission):
                return exc.message
    return "inheritance chain could not be resolved"


def _describe(value: Any) -> str:
    """A value from the request, quoted and cut short for a denial message."""
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 80 else text[:77] + "..."


async def _fetch_missing_parent(exc: ChainError, lookup: Any, admission: ClusterAdmission) -> bool:
    """The informer cache may lag the API server: look the missing parent up live before denying."""
    if exc.missing is None:
        return False
    context, parent = exc.missing
    for candidate in context.candidates(parent):  # in lookup order: the first that exists is the parent
        key = (candidate.kind, candidate.namespace, candidate.name)
        if key not in lookup.overlay:
            lookup.overlay[key] = await admission.live_get(*key)
        if lookup.overlay[key] is not None:
            return True
    return False


class WebhookServer:
    """One aiohttp HTTPS server answering AdmissionReviews for every registered cluster."""

    def __init__(
        self,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        ca_pem: bytes | None,
        public_url: str | None = None,
    ) -> None:
        self.public_url = public_url.rstrip("/") if public_url else None
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self.ca_pem = ca_pem
        self.clusters: dict[str, Callable[[], ClusterAdmission]] = {}
        self._runner: web.AppRunner | None = None
        self.requests = 0

    @property
    def base_url(self) -> str:
        """Where clusters call the webhooks: the configured public URL, else the address it listens on."""
        if self.public_url:
            return self.public_url
        return f"{'https' if self.ssl_context else 'http'}://{self.host}:{self.port}"

    def url_for(self, cluster: str, kind: str) -> str:
        return f"{self.base_url}/validate/{cluster}/{kind.lower()}"

    def conversion_url(self, cluster: str) -> str:
        return f"{self.base_url}/convert/{cluster}"

    def register(self, cluster: str, admission: Callable[[], ClusterAdmission]) -> None:
        self.clusters[cluster] = admission

    def unregister(self, cluster: str) -> None:
        self.clusters.pop(cluster, None)

    async def start(self) -> None:
        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_post("/validate/{cluster}/{kind}", self._handle)
        app.router.add_post("/convert/{cluster}", handle_conversion)
        app.router.add_get("/healthz", self._healthz)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        sockets = getattr(site._server, "sockets", None)
        if self.port == 0 and sockets:
            self.port = sockets[0].getsockname()[1]

    @staticmethod
    async def _healthz(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests += 1
        cluster = request.match_info["cluster"]
        kind_path = request.match_info["kind"]
        try:
            body = orjson.loads(await request.read())
            req = body["request"]
            uid = req["uid"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return web.json_response({"error": "the request body is not an AdmissionReview"}, status=400)
        if not isinstance(uid, str):  # the response must echo the uid; only a string can be echoed as sent
            return web.json_response({"error": "request.uid must be a string"}, status=400)
        kind = {
            "servingruntime": SERVING_RUNTIME,
            "clusterservingruntime": CLUSTER_SERVING_RUNTIME,
            "inferenceservice": INFERENCE_SERVICE,
            **AIM_KINDS,  # AMD AIM: aimruntimeconfig, aimclusterruntimeconfig, aimservice (omectl.webhook.aim)
        }.get(kind_path)
        factory = self.clusters.get(cluster)
        if kind is None:
            return web.json_response(_review(uid, False, f"omectl does not validate {kind_path}", 400))
        if factory is None:
            return web.json_response(_review(uid, False, f"cluster {cluster!r} is not registered with omectl", 503))
        if req.get("operation") == "DELETE":
            return web.json_response(_review(uid, True))
        if kind_path in AIM_KINDS:  # AMD AIM: pure checks of the object itself
            return web.json_response(_review(uid, *aim_verdict(kind, req.get("object"))))
        try:
            check = (
                validate_inference_service(req.get("object"), factory())
                if kind == INFERENCE_SERVICE
                else validate_runtime(kind, req.get("object"), factory())
            )
            reason = await asyncio.wait_for(check, 8)
        except TimeoutError:
            reason = "timed out resolving the inheritance chain"
        except Exception as exc:  # a bug must still answer with a clear denial
            log.exception("webhook for cluster %s failed", cluster)
            reason = f"internal error validating the runtime: {type(exc).__name__}: {exc}"
        return web.json_response(_review(uid, reason is None, reason))


class WebhookEndpoint(Protocol):
    """Where webhooks answer: this process's `WebhookServer`, or another replica's (`omectl.webhook.keeper`)."""

    @property
    def ca_pem(self) -> bytes | None: ...

    def url_for(self, cluster: str, kind: str) -> str: ...

    def conversion_url(self, cluster: str) -> str: ...


OWNER_LABEL = "omectl.io/owner"  # the holder identity of the cluster's ownership Lease that installed it


def webhook_configuration(
    server: WebhookEndpoint, cluster: str, failure_policy: str = "Fail", owner: str | None = None
) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration `omectl run` installs into a cluster (labelled with its owner)."""
    labels = {"app.kubernetes.io/managed-by": "omectl", **({OWNER_LABEL: owner} if owner else {})}
    ca_bundle = base64.b64encode(server.ca_pem).decode() if server.ca_pem else None

    def hook(name: str, kind: str, resource: str) -> dict[str, Any]:
        client_config: dict[str, Any] = {"url": server.url_for(cluster, kind)}
        if ca_bundle:
            client_config["caBundle"] = ca_bundle
        return {
            "name": name,
            "clientConfig": client_config,
            "rules": [
                {
                    "operations": ["CREATE", "UPDATE"],
                    "apiGroups": ["ome.io"],
                    "apiVersions": ["v1beta1"],
                    "resources": [resource],
                }
            ],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "failurePolicy": failure_policy,
            "timeoutSeconds": 10,
        }

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": WEBHOOK_CONFIGURATION_NAME, "labels": labels},
        "webhooks": [
            hook(SERVING_RUNTIME_WEBHOOK, SERVING_RUNTIME, "servingruntimes"),
            hook(CLUSTER_SERVING_RUNTIME_WEBHOOK, CLUSTER_SERVING_RUNTIME, "clusterservingruntimes"),
            hook(INFERENCE_SERVICE_WEBHOOK, INFERENCE_SERVICE, "inferenceservices"),
            *aim_webhooks(server.url_for, cluster, ca_bundle, failure_policy),  # AMD AIM (omectl.webhook.aim)
        ],
    }
