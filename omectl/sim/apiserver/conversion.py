"""Custom resources whose CRD says `conversion.strategy: Webhook`, converted as apiextensions-apiserver converts
them: one object per ConversionReview, to the CRD's conversion webhook, and only when the object is not already
in the version wanted.

`ClusterAPI` stores such objects in the storage version and converts on the way in (the request's version to the
storage version) and out (to the version asked for). What it reads for a list or a watch goes through
`cached_view`, one conversion per object, resourceVersion and version (kube-apiserver serves those from a watch
cache per version, filled as objects change); a single GET converts every time (kube reads it from etcd).
Objects are sent without their resourceVersion (etcd holds them so) and come back with it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from omectl.sim.apiserver.conversion_review import ReviewError, converted_object, gvk_string, review_body
from omectl.sim.apiserver.conversion_review import review_version as pick_review_version
from omectl.sim.apiserver.webhook_client import ServiceLookup, WebhookCallError, WebhookClient, WebhookTarget

DEFAULT_TIMEOUT_SECONDS = 30.0  # kube-apiserver's fixed deadline for a conversion webhook (no setting for it)
_DEADLINE_TEXT = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
_VIEW_CACHE_LIMIT = 20_000  # converted objects kept per CRD for lists and watches; cleared when full


class ConversionError(Exception):
    """A conversion that failed; `str()` is kube-apiserver's message."""


@dataclass(frozen=True)
class ConversionConfig:
    """What a CRD says about converting its objects, when its strategy is Webhook."""

    group: str
    kind: str
    storage_version: str
    versions: frozenset[str]
    client_config: str  # the webhook's clientConfig, as JSON (hashable)
    review_versions: tuple[str, ...]

    @classmethod
    def of(cls, crd: dict[str, Any]) -> ConversionConfig | None:
        spec = crd.get("spec") or {}
        conversion = spec.get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return None
        webhook = conversion.get("webhook") or {}
        versions = [v for v in spec.get("versions") or () if isinstance(v, dict)]
        return cls(
            group=str(spec.get("group") or ""),
            kind=str((spec.get("names") or {}).get("kind") or ""),
            storage_version=next((str(v.get("name")) for v in versions if v.get("storage")), ""),
            versions=frozenset(str(v.get("name")) for v in versions),
            client_config=orjson.dumps(webhook.get("clientConfig") or {}, option=orjson.OPT_SORT_KEYS).decode(),
            review_versions=tuple(str(v) for v in webhook.get("conversionReviewVersions") or ()),
        )

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}"

    @property
    def storage_api_version(self) -> str:
        return self.api_version(self.storage_version)


def go_duration(seconds: float) -> str:
    """Go's `time.Duration` text for whole seconds or milliseconds (`30s`, `500ms`)."""
    return f"{int(seconds)}s" if seconds == int(seconds) else f"{round(seconds * 1000)}ms"


# Prunes a converted object, in place, to what the schema of its version (the second argument) knows.
Pruner = Callable[[dict[str, Any], str], None]


class WebhookConverter:
    """The conversions of one CRD's objects, through its webhook (`client`, which also calls admission webhooks;
    `services` finds the Service a `clientConfig.service` names). What the webhook returns is pruned to the
    schema of the version it was converted to (`prune`), as the real server's decoder prunes it."""

    def __init__(
        self,
        config: ConversionConfig,
        client: WebhookClient,
        services: ServiceLookup,
        prune: Pruner,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.config = config
        self._client = client
        self._services = services
        self._prune = prune
        self._timeout = timeout
        self._views: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._converting: dict[tuple[str, str, str], asyncio.Future[dict[str, Any]]] = {}  # shared by watchers

    async def convert(self, obj: dict[str, Any], version: str) -> dict[str, Any]:
        """`obj` in `version` (itself when it is in that version already). Raises `ConversionError`."""
        config = self.config
        desired = config.api_version(version)
        source = str(obj.get("apiVersion") or "")
        if source == desired:
            return obj
        if version not in config.versions:
            raise ConversionError(f"request to convert CR to an invalid group/version: {desired}")
        if source.rpartition("/")[2] not in config.versions or not source.startswith(f"{config.group}/"):
            raise ConversionError(f"request to convert CR from an invalid group/version: {source}")
        failing = f"conversion webhook for {gvk_string(source, obj.get('kind'))}"
        review_version = pick_review_version(list(config.review_versions))
        if review_version is None:
            raise ConversionError("no supported conversion review versions")
        meta = obj.get("metadata") or {}
        sent = obj
        if "resourceVersion" in meta:
            sent = {**obj, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
        uid = str(uuid.uuid4())
        try:
            target = self._target()
            _, raw = await self._client.post(
                target,
                f"timeout={go_duration(self._timeout)}",
                review_body(review_version, uid, desired, [sent]),
                self._timeout,
                services=self._services,
                deadline_text=_DEADLINE_TEXT,
            )
        except WebhookCallError as exc:
            raise ConversionError(f"{failing} failed: {exc}") from None
        try:
            answer = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise ConversionError(f"{failing} failed: couldn't get version/kind; json parse error: {exc}") from None
        try:
            converted = converted_object(answer, review_version, uid, obj, desired)
        except ReviewError as exc:
            raise ConversionError(f"{failing} {exc}") from None
        self._prune(converted, version)
        return converted

    def _target(self) -> WebhookTarget:
        return self._client.target(orjson.loads(self.config.client_config))

    async def cached_view(self, obj: dict[str, Any], version: str) -> dict[str, Any]:
        """`convert`, remembered per object, resourceVersion and version for lists and watches; watchers that
        need the same conversion at once share one call."""
        if obj.get("apiVersion") == self.config.api_version(version):
            return obj
        meta = obj["metadata"]
        key = (str(meta.get("uid", "")), str(meta.get("resourceVersion", "")), version)
        view = self._views.get(key)
        if view is not None:
            return view
        task = self._converting.get(key)
        if task is None:
            task = asyncio.ensure_future(self._convert_and_remember(obj, version))
            self._converting[key] = task
            task.add_done_callback(lambda done: self._settled(key, done))
        return await asyncio.shield(task)

    async def _convert_and_remember(self, obj: dict[str, Any], version: str) -> dict[str, Any]:
        view = await self.convert(obj, version)
        self.remember(obj, version, view)
        return view

    def _settled(self, key: tuple[str, str, str], task: asyncio.Future[dict[str, Any]]) -> None:
        self._converting.pop(key, None)
        if not task.cancelled():
            task.exception()  # retrieved: a failure whose waiters all went away is not an unhandled one

    def remember(self, obj: dict[str, Any], version: str, view: dict[str, Any]) -> None:
        """Keep a conversion of a stored object made for another reason (a write's answer) for lists and
        watches."""
        meta = obj["metadata"]
        if len(self._views) >= _VIEW_CACHE_LIMIT:
            self._views.clear()
        self._views[(str(meta.get("uid", "")), str(meta.get("resourceVersion", "")), version)] = view
