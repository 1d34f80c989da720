"""An image's config labels from its registry (the OCI distribution API): the manifest by tag or digest (an image
index: its linux/amd64 image, the platform upstream's go-containerregistry picks by default), then its config blob's
`config.Labels`. A 401 is answered as its `WWW-Authenticate` asks: `Bearer` - a token from the realm (anonymous, or
with the pull secret's credentials), `Basic` - the credentials. Successful reads are kept per reference and
credentials (bounded, least recently used first out): a digest's labels never change, and upstream reads a tag's once
too (it keeps them in the model's status). `mirrors` sends a registry's requests to another base URL (the simulated
fleet's registry); a registry otherwise is `https://<host>` (Docker Hub: registry-1.docker.io)."""

from __future__ import annotations

import base64
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import aiohttp

from omectl.oci.credentials import Credentials
from omectl.oci.reference import DOCKER_HUB, DOCKER_HUB_API, ImageReference

INDEX_TYPES: Final = frozenset(
    {"application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json"}
)
MANIFEST_ACCEPT: Final = ", ".join(
    (
        "application/vnd.oci.image.manifest.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        *sorted(INDEX_TYPES),
    )
)
PLATFORM: Final = ("linux", "amd64")
_CHALLENGE_PARAM: Final = re.compile(r'(\w+)="([^"]*)"')

ErrorKind = Literal["auth", "not-found", "generic"]


class RegistryError(Exception):
    """A failed read, categorised as upstream does: `auth` (401, 403), `not-found` (404), `generic` (else)."""

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


def _kind(status: int) -> ErrorKind:
    return "auth" if status in (401, 403) else "not-found" if status == 404 else "generic"


@dataclass
class _Session:
    http: aiohttp.ClientSession
    base: str
    reference: ImageReference
    credentials: Credentials | None
    authorization: str | None = None

    async def get_json(self, path: str, accept: str) -> Mapping[str, Any]:
        url = f"{self.base}/v2/{self.reference.repository}/{path}"
        for attempt in range(2):
            headers = {"Accept": accept}
            if self.authorization:
                headers["Authorization"] = self.authorization
            async with self.http.get(url, headers=headers) as response:
                if response.status == 401 and attempt == 0:
                    await self._authenticate(response.headers.get("WWW-Authenticate", ""))
                    continue
                if response.status != 200:
                    body = (await response.text())[:300]
                    raise RegistryError(
                        _kind(response.status), f"GET {url}: unexpected status code {response.status}: {body}"
                    )
                parsed = await response.json(content_type=None)
                if not isinstance(parsed, Mapping):
                    raise RegistryError("generic", f"GET {url}: not a JSON object")
                return parsed
        raise RegistryError("auth", f"GET {url}: unauthorized")

    async def _authenticate(self, challenge: str) -> None:
        scheme, _, params_text = challenge.partition(" ")
        basic = self._basic()
        if scheme.lower() == "basic" and basic:
            self.authorization = basic
            return
        if scheme.lower() != "bearer":
            raise RegistryError("auth", f"registry {self.reference.registry} asks for {scheme or 'no'} authentication")
        params = dict(_CHALLENGE_PARAM.findall(params_text))
        realm = params.get("realm")
        if not realm:
            raise RegistryError("auth", f"registry {self.reference.registry}: a Bearer challenge without a realm")
        query = {"scope": params.get("scope") or f"repository:{self.reference.repository}:pull"}
        if params.get("service"):
            query["service"] = params["service"]
        headers = {"Authorization": basic} if basic else {}
        async with self.http.get(realm, params=query, headers=headers) as response:
            if response.status != 200:
                raise RegistryError("auth", f"GET {realm}: unexpected status code {response.status}")
            body = await response.json(content_type=None)
        token = body.get("token") or body.get("access_token") if isinstance(body, Mapping) else None
        if not isinstance(token, str) or not token:
            raise RegistryError("auth", f"GET {realm}: no token in the answer")
        self.authorization = f"Bearer {token}"

    def _basic(self) -> str | None:
        if self.credentials is None:
            return None
        pair = f"{self.credentials.username}:{self.credentials.password}".encode()
        return "Basic " + base64.b64encode(pair).decode()


class RegistryClient:
    """Reads image labels (module docstring); `timeout` bounds one read, `cache_size` the reads kept."""

    def __init__(
        self, *, mirrors: Mapping[str, str] | None = None, timeout: float = 30.0, cache_size: int = 256
    ) -> None:
        self.mirrors = {host: url.rstrip("/") for host, url in (mirrors or {}).items()}
        self.timeout = timeout
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple[str, Credentials | None], dict[str, str]] = OrderedDict()
        self.reads = 0
        """Registry reads made (cache misses), for tests and metrics."""

    def base_url(self, registry: str) -> str:
        if registry in self.mirrors:
            return self.mirrors[registry]
        return f"https://{DOCKER_HUB_API if registry == DOCKER_HUB else registry}"

    async def labels(self, reference: ImageReference, credentials: Credentials | None = None) -> dict[str, str]:
        """The image's config labels (`{}` when it has none); RegistryError when it cannot be read."""
        key = (str(reference), credentials)
        if key in self._cache:
            self._cache.move_to_end(key)
            return dict(self._cache[key])
        self.reads += 1
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as http:
                session = _Session(http, self.base_url(reference.registry), reference, credentials)
                labels = await _read_labels(session)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RegistryError("generic", f"{type(error).__name__}: {error}") from error
        self._cache[key] = labels
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return dict(labels)


async def _read_labels(session: _Session) -> dict[str, str]:
    manifest = await session.get_json(f"manifests/{session.reference.identifier}", MANIFEST_ACCEPT)
    if manifest.get("mediaType") in INDEX_TYPES or "manifests" in manifest:
        chosen = _platform_manifest(manifest)
        manifest = await session.get_json(f"manifests/{chosen}", MANIFEST_ACCEPT)
    digest = (manifest.get("config") or {}).get("digest") if isinstance(manifest.get("config"), Mapping) else None
    if not isinstance(digest, str):
        raise RegistryError("generic", f"the manifest of {session.reference} names no config blob")
    config = await session.get_json(f"blobs/{digest}", "*/*")
    labels = (config.get("config") or {}).get("Labels") if isinstance(config.get("config"), Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items() if isinstance(v, str)}


def _platform_manifest(index: Mapping[str, Any]) -> str:
    for entry in index.get("manifests") or []:
        platform = entry.get("platform") if isinstance(entry, Mapping) else None
        if isinstance(platform, Mapping) and (platform.get("os"), platform.get("architecture")) == PLATFORM:
            digest = entry.get("digest")
            if isinstance(digest, str):
                return digest
    raise RegistryError("not-found", f"no child with platform {PLATFORM[0]}/{PLATFORM[1]} in index")
