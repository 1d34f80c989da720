"""A conversion webhook for tests, and the CRD it converts.

`ConversionWebhook` is an aiohttp server over TLS (a certificate from omectl's own CA helpers) that answers
ConversionReviews for any kind of the group `conv.example.com`: v1's `spec.size` is v2's `spec.replicas`, the rest
of the object travels as it is. An object labelled `conv.example.com/refuse: "true"` is refused
(`result.status: Failure`, `conversion refused for <name>`). Every review is recorded; `answer` replaces the
answer of the next reviews (malformed answers), `hold` keeps them waiting (timeouts).
"""

from __future__ import annotations

import asyncio
import base64
import copy
from collections.abc import Callable
from typing import Any

from aiohttp import web

from omectl.tls import CertificateAuthority, server_ssl_context

GROUP = "conv.example.com"
REFUSE_LABEL = f"{GROUP}/refuse"

Answer = Callable[[dict[str, Any]], Any]  # the review -> a JSON answer or an aiohttp response


def convert(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """The rename: v1 `spec.size` <-> v2 `spec.replicas`."""
    out = copy.deepcopy(obj)
    spec = out.get("spec") or {}
    if desired.endswith("/v2") and "size" in spec:
        spec["replicas"] = spec.pop("size")
    if desired.endswith("/v1") and "replicas" in spec:
        spec["size"] = spec.pop("replicas")
    out["apiVersion"] = desired
    return out


def converted(review: dict[str, Any]) -> dict[str, Any]:
    """The answer the webhook gives when nothing overrides it."""
    request = review["request"]
    response: dict[str, Any] = {"uid": request["uid"]}
    refused = [o for o in request["objects"] if (o["metadata"].get("labels") or {}).get(REFUSE_LABEL) == "true"]
    if refused:
        name = refused[0]["metadata"]["name"]
        response["result"] = {"status": "Failure", "message": f"conversion refused for {name}"}
    else:
        response["result"] = {"status": "Success"}
        response["convertedObjects"] = [convert(o, request["desiredAPIVersion"]) for o in request["objects"]]
    return {"apiVersion": review["apiVersion"], "kind": "ConversionReview", "response": response}


class ConversionWebhook:
    """The webhook on `127.0.0.1` (its certificate also names `hosts`), `https://127.0.0.1:<port>/convert`."""

    def __init__(self, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.ca = CertificateAuthority.generate("conversion-webhook-test-ca")
        self.hosts = hosts
        self.reviews: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.answer: Answer | None = None
        self.hold: asyncio.Event | None = None  # set: reviews wait for it before they are answered
        self.received = asyncio.Event()  # set on every review (clear it to wait for the next)
        self.port = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}/convert"

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.ca.cert_pem).decode()

    def client_config(self) -> dict[str, Any]:
        return {"url": self.url, "caBundle": self.ca_bundle}

    async def _review(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        self.reviews.append(review)
        self.paths.append(request.path_qs)
        self.received.set()
        if self.hold is not None:
            await self.hold.wait()
        answer = (self.answer or converted)(review)
        return answer if isinstance(answer, web.StreamResponse) else web.json_response(answer)

    async def start(self, port: int = 0) -> ConversionWebhook:
        app = web.Application()
        app.router.add_post("/convert", self._review)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        tls = server_ssl_context(self.ca.issue(list(self.hosts)))
        site = web.TCPSite(self._runner, "127.0.0.1", port, ssl_context=tls)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self.hold is not None:
            self.hold.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def desired_versions(self) -> list[str]:
        return [r["request"]["desiredAPIVersion"] for r in self.reviews]


def _version(name: str, field: str, maximum: int, tier: str, *, storage: bool) -> dict[str, Any]:
    spec = {
        "type": "object",
        "properties": {
            field: {"type": "integer", "maximum": maximum},
            "tier": {"type": "string", "default": tier},
        },
        "x-kubernetes-validations": [{"rule": f"!has(self.{field}) || self.{field} != 4", "message": f"{field} 4"}],
    }
    status = {"type": "object", "properties": {"phase": {"type": "string"}}}
    return {
        "name": name,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec, "status": status}}},
        "subresources": {"status": {}},
        "additionalPrinterColumns": [{"name": field.capitalize(), "type": "integer", "jsonPath": f".spec.{field}"}],
    }


def gizmo_crd(
    client_config: dict[str, Any],
    *,
    storage: str = "v1",
    plural: str = "gizmos",
    kind: str = "Gizmo",
    review_versions: tuple[str, ...] = ("v1",),
) -> dict[str, Any]:
    """A CRD served at v1 (`spec.size`, at most 10, `tier` defaulted to `from-v1`) and v2 (`spec.replicas`, at
    most 5, `tier` defaulted to `from-v2`), each with a rule refusing 4 and a status subresource, converted by
    the webhook `client_config` names."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
            "conversion": {
                "strategy": "Webhook",
                "webhook": {"clientConfig": client_config, "conversionReviewVersions": list(review_versions)},
            },
            "versions": [
                _version("v1", "size", 10, "from-v1", storage=storage == "v1"),
                _version("v2", "replicas", 5, "from-v2", storage=storage == "v2"),
            ],
        },
    }


def gizmo(
    version: str, name: str, count: int, *, kind: str = "Gizmo", namespace: str | None = None, **meta: Any
) -> dict[str, Any]:
    """A Gizmo at `version` (`size` at v1, `replicas` at v2 set to `count`); `meta`: more metadata."""
    metadata: dict[str, Any] = {"name": name, **meta}
    if namespace is not None:
        metadata["namespace"] = namespace
    field = "size" if version == "v1" else "replicas"
    return {"apiVersion": f"{GROUP}/{version}", "kind": kind, "metadata": metadata, "spec": {field: count}}
