"""An image's config labels from its registry (the OCI distribution API): the manifest by tag or digest (an image
index: its linux/amd64 image, the platform upstream's go-containerregistry picks by default), then its config blob's
`config.Labels`. A 401 is answered as its `WWW-Authenticate` asks: `Bearer` - a token from the realm (anonymous, or
with the pull secret's credentials), `Basic` - the credentials. Successful reads are kept per reference and
credentials (bounded, least recently used first out): a digest's labels never change, and upstream reads a tag's once
too (it keeps them in the model's status). `mirrors` sends a registry's requests to another base URL (the simulated
fleet's registry); a registry otherwise is `https://<host>` (Docker Hub: registry-1.docker.io).

Listings, never cached (they change): a repository's tags and a registry's catalog (the distribution API's
`tags/list` and `_catalog`, authenticated alike, every page followed by its `Link` header), and Docker Hub's
repositories of a namespace (its own API at `hub.docker.com`, which `mirrors` may send elsewhere too)."""

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
PAGE: Final = 1000
"""Entries asked for per page of a listing."""
DOCKER_HUB_WEB: Final = "hub.docker.com"
"""Docker Hub's own API, which lists a namespace's repositories (`RegistryClient.hub_repositories`)."""
_LINK: Final = re.compile(r"<(/v2/[^>]+)>")
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
    registry: str
    scope: str
    """The token scope asked for when a challenge names none (`repository:<name>:pull`)."""
    credentials: Credentials | None
    authorization: str | None = None

    async def get_json(self, path: str, accept: str = "application/json") -> Mapping[str, Any]:
        """GET `<base>/v2/<path>` as JSON, answering one 401 as its challenge asks."""
        return (await self.get_page(path, accept))[0]

    async def get_page(self, path: str, accept: str = "application/json") -> tuple[Mapping[str, Any], str]:
        """`get_json`, with the answer's `Link` header (a listing's next page; empty when none)."""
        url = f"{self.base}/v2/{path}"
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
                return parsed, response.headers.get("Link", "")
        raise RegistryError("auth", f"GET {url}: unauthorized")

    async def _authenticate(self, challenge: str) -> None:
        scheme, _, params_text = challenge.partition(" ")
        basic = self._basic()
        if scheme.lower() == "basic" and basic:
            self.authorization = basic
            return
        if scheme.lower() != "bearer":
            raise RegistryError("auth", f"registry {self.registry} asks for {scheme or 'no'} authentication")
        params = dict(_CHALLENGE_PARAM.findall(params_text))
        realm = params.get("realm")
        if not realm:
            raise RegistryError("auth", f"registry {self.registry}: a Bearer challenge without a realm")
        query = {"scope": params.get("scope") or self.scope}
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
    """Reads image labels and lists (module docstring); `timeout` bounds one read, `cache_size` the reads kept."""

    def __init__(
        self,
        *,
        mirrors: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        cache_size: int = 256,
        page_size: int = PAGE,
    ) -> None:
        self.mirrors = {host: url.rstrip("/") for host, url in (mirrors or {}).items()}
        self.page_size = page_size
        """Entries asked for per page of a listing."""
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
                scope = f"repository:{reference.repository}:pull"
                session = _Session(http, self.base_url(reference.registry), reference.registry, scope, credentials)
                labels = await _read_labels(session, reference)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RegistryError("generic", f"{type(error).__name__}: {error}") from error
        self._cache[key] = labels
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return dict(labels)

    async def tags(self, registry: str, repository: str, credentials: Credentials | None = None) -> list[str]:
        """The repository's tags (`/v2/<repository>/tags/list`, every page), never cached."""
        scope = f"repository:{repository}:pull"
        return await self._listing(registry, scope, credentials, f"{repository}/tags/list?n={self.page_size}", "tags")

    async def catalog(self, registry: str, credentials: Credentials | None = None) -> list[str]:
        """The registry's repositories (`/v2/_catalog`, every page), never cached. Registries give the catalog to
        accounts allowed `registry:catalog:*` only: without one it is a RegistryError `auth`."""
        return await self._listing(
            registry, "registry:catalog:*", credentials, f"_catalog?n={self.page_size}", "repositories"
        )

    async def hub_repositories(self, namespace: str) -> list[str]:
        """The public repositories of a Docker Hub namespace, `<namespace>/<name>` (Docker Hub's own API,
        `https://hub.docker.com/v2/namespaces/<namespace>/repositories`, every page): Docker Hub has no catalog."""
        url: str | None = (
            f"{self.base_url(DOCKER_HUB_WEB)}/v2/namespaces/{namespace}/repositories?page_size={self.page_size}"
        )
        found: list[str] = []
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as http:
                while url:
                    async with http.get(url, headers={"Accept": "application/json"}) as response:
                        if response.status != 200:
                            body = (await response.text())[:300]
                            raise RegistryError(
                                _kind(response.status), f"unexpected status {response.status} from {url}: {body}"
                            )
                        page = await response.json(content_type=None)
                    results = page.get("results") if isinstance(page, Mapping) else None
                    for entry in results if isinstance(results, list) else ():
                        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
                            found.append(f"{namespace}/{entry['name']}")
                    following = page.get("next") if isinstance(page, Mapping) else None
                    url = following if isinstance(following, str) and following else None
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RegistryError("generic", f"{type(error).__name__}: {error}") from error
        return found

    async def _listing(
        self, registry: str, scope: str, credentials: Credentials | None, path: str, key: str
    ) -> list[str]:
        """The strings under `key` of a paginated distribution-API list, following its `Link` headers."""
        found: list[str] = []
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout)) as http:
                session = _Session(http, self.base_url(registry), registry, scope, credentials)
                next_path: str | None = path
                while next_path:
                    page, link = await session.get_page(next_path)
                    values = page.get(key)
                    if isinstance(values, list):
                        found.extend(v for v in values if isinstance(v, str))
                    next_path = _next_page(link)
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RegistryError("generic", f"{type(error).__name__}: {error}") from error
        return found


async def _read_labels(session: _Session, reference: ImageReference) -> dict[str, str]:
    repository = reference.repository
    manifest = await session.get_json(f"{repository}/manifests/{reference.identifier}", MANIFEST_ACCEPT)
    if manifest.get("mediaType") in INDEX_TYPES or "manifests" in manifest:
        chosen = _platform_manifest(manifest)
        manifest = await session.get_json(f"{repository}/manifests/{chosen}", MANIFEST_ACCEPT)
    digest = (manifest.get("config") or {}).get("digest") if isinstance(manifest.get("config"), Mapping) else None
    if not isinstance(digest, str):
        raise RegistryError("generic", f"the manifest of {reference} names no config blob")
    config = await session.get_json(f"{repository}/blobs/{digest}", "*/*")
    labels = (config.get("config") or {}).get("Labels") if isinstance(config.get("config"), Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(k): str(v) for k, v in labels.items() if isinstance(v, str)}


def _next_page(link: str) -> str | None:
    """The path under `/v2/` of the next page a listing's `Link: </v2/...?n=..&last=..>; rel="next"` names."""
    found = _LINK.search(link) if 'rel="next"' in link else None
    return found.group(1).removeprefix("/v2/") if found else None


def _platform_manifest(index: Mapping[str, Any]) -> str:
    for entry in index.get("manifests") or []:
        platform = entry.get("platform") if isinstance(entry, Mapping) else None
        if isinstance(platform, Mapping) and (platform.get("os"), platform.get("architecture")) == PLATFORM:
            digest = entry.get("digest")
            if isinstance(digest, str):
                return digest
    raise RegistryError("not-found", f"no child with platform {PLATFORM[0]}/{PLATFORM[1]} in index")
