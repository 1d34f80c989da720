"""A small OCI registry for the simulated fleet: the images the tests and the demo name (`SIMULATED_IMAGES`), served
read-only over HTTP with the distribution API's manifest and blob reads. Each image is a manifest whose config blob
carries the image's labels; `index` images are an image index with a linux/arm64 and a linux/amd64 child (the labels
on the amd64 one only). With `credentials` the registry asks for a bearer token from its `/token` realm, given only
for those basic credentials; with `anonymous_tokens` it asks for a token that anyone gets (as ghcr.io and Docker Hub
do for public images); else it answers without authentication. The controller reaches it for a registry host through
its `image_registry_mirrors` setting (docs/operations.md, "Image registries").

Listings, as a registry scan reads them (`AIMClusterModelSource`): a repository's tags (`/v2/<name>/tags/list`) and
the catalog (`/v2/_catalog`), both sorted and paged by `n` and `last` with a `Link` header to the next page, and Docker
Hub's repositories of a namespace (`/v2/namespaces/<namespace>/repositories`, unauthenticated, as hub.docker.com
answers it). The catalog is given, as registries with token authentication give it, only to a token its `/token`
realm issued for credentials (`registry:catalog:*` is never granted anonymously): a registry with `anonymous_tokens`
and no credentials answers every catalog read 401."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

MANIFEST: Final = "application/vnd.oci.image.manifest.v1+json"
INDEX: Final = "application/vnd.oci.image.index.v1+json"
CONFIG: Final = "application/vnd.oci.image.config.v1+json"

SIMULATED_REGISTRY_HOSTS: Final = ("ghcr.io", "docker.io", "hub.docker.com", "quay.io")
"""The registry hosts whose images the simulated registry stands in for (its images name these hosts), so a
controller on a simulated fleet mirrors them all to it and never reaches the internet's."""


@dataclass(frozen=True)
class SimulatedImage:
    repository: str  # as the registry names it, without the host: "silogen/aim-dummy"
    tag: str
    labels: Mapping[str, str] = field(default_factory=dict)
    index: bool = False
    dry_run: tuple[Mapping[str, Any], ...] = ()
    """The profiles the image's `dry-run --format=json` knows (upstream's output entries); none: it has no dry run."""


AIM_DUMMY_DEPLOYMENTS: Final = [
    {
        "gpuModel": "MI300X",
        "gpuCount": 1,
        "metric": "latency",
        "precision": "fp16",
        "profileId": "vllm-mi300x-fp16-tp1-latency",
    }
]
AIM_DUMMY_DRY_RUN: Final = [
    {
        "id": "vllm-mi300x-fp16-tp1-latency",
        "filename": "vllm-mi300x-fp16-tp1-latency.yaml",
        "profile": {
            "model": "HuggingFaceTB/SmolLM2-135M",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI300X",
                "precision": "fp16",
                "gpu_count": 1,
                "metric": "latency",
                "type": "optimized",
            },
        },
        "models": [{"name": "HuggingFaceTB/SmolLM2-135M", "source": "hf://HuggingFaceTB/SmolLM2-135M", "size_gb": 0.5}],
    }
]
"""What aim-dummy:0.1.10's `dry-run --format=json` knows: its one profile (the one its labels recommend), as
upstream's dry run prints it (`omectl.sim.simulator.dry_runs` prints the ones a discovery Job's env selects). Its type
is `optimized`: upstream's aimservice/common/model-by-image selects it automatically on kind, which takes an
optimized profile only without `allowUnoptimized`."""
MI300X_FP16_LATENCY: Final = [
    {
        "gpuModel": "MI300X",
        "gpuCount": 1,
        "metric": "latency",
        "precision": "fp16",
        "profileId": "vllm-mi300x-fp16-tp1-latency",
    }
]
QWEN3_32B_DRY_RUN: Final = [
    {
        "id": "vllm-mi300x-fp16-tp1-latency",
        "filename": "vllm-mi300x-fp16-tp1-latency.yaml",
        "profile": {
            "model": "Qwen/Qwen3-32B",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI300X",
                "precision": "fp16",
                "gpu_count": 1,
                "metric": "latency",
                "type": "optimized",
            },
        },
        "models": [{"name": "Qwen/Qwen3-32B", "source": "hf://Qwen/Qwen3-32B", "size_gb": 61.0}],
    }
]
"""amdenterpriseai/aim-qwen-qwen3-32b:0.8.5 (upstream's GPU happy path and its docs' model), simulated with one
optimized profile: upstream's docs name its template `qwen3-32b-mi300x-fp16-latency`."""
LLAMA_32_1B_DRY_RUN: Final = [
    {
        "id": "vllm-mi300x-fp16-tp1-latency",
        "filename": "vllm-mi300x-fp16-tp1-latency.yaml",
        "profile": {
            "model": "meta-llama/Llama-3.2-1B-Instruct",
            "metadata": {
                "engine": "vllm",
                "gpu": "MI300X",
                "precision": "fp16",
                "gpu_count": 1,
                "metric": "latency",
                "type": "unoptimized",
            },
        },
        "models": [
            {
                "name": "meta-llama/Llama-3.2-1B-Instruct",
                "source": "hf://meta-llama/Llama-3.2-1B-Instruct",
                "size_gb": 2.5,
            }
        ],
    }
]
"""amdenterpriseai/aim-meta-llama-llama-3-2-1b-instruct:0.8.5 (upstream's gpu/profile-id-propagation), simulated with
the profile that scenario expects (`vllm-mi300x-fp16-tp1-latency`), unoptimized: the scenario allows unoptimized
templates."""
RELEASE_084: Final = (
    "aim-google-gemma-3-1b-it",
    "aim-meta-llama-llama-3-1-8b-instruct",
    "aim-meta-llama-llama-3-2-1b-instruct",
    "aim-mistralai-mistral-7b-instruct-v0-3",
    "aim-qwen-qwen3-32b",
    "aim-qwen-qwen3-8b",
)
SIMULATED_IMAGES: Final = (
    SimulatedImage(
        "silogen/aim-dummy",
        "0.1.10",
        {
            "org.opencontainers.image.title": "aim-dummy",
            "org.opencontainers.image.vendor": "AMD",
            "com.amd.aim.model.canonicalName": "HuggingFaceTB/SmolLM2-135M",
            "com.amd.aim.model.source": "https://huggingface.co/HuggingFaceTB/SmolLM2-135M",
            "com.amd.aim.model.recommendedDeployments": json.dumps(AIM_DUMMY_DEPLOYMENTS),
        },
        index=True,
        dry_run=tuple(AIM_DUMMY_DRY_RUN),
    ),
    SimulatedImage(
        "amdenterpriseai/aim-qwen-qwen3-32b",
        "0.8.5",
        {
            "org.opencontainers.image.title": "aim-qwen-qwen3-32b",
            "org.opencontainers.image.vendor": "AMD",
            "com.amd.aim.model.canonicalName": "Qwen/Qwen3-32B",
            "com.amd.aim.model.source": "https://huggingface.co/Qwen/Qwen3-32B",
            "com.amd.aim.model.recommendedDeployments": json.dumps(MI300X_FP16_LATENCY),
        },
        dry_run=tuple(QWEN3_32B_DRY_RUN),
    ),
    SimulatedImage(
        "amdenterpriseai/aim-meta-llama-llama-3-2-1b-instruct",
        "0.8.5",
        {
            "org.opencontainers.image.title": "aim-meta-llama-llama-3-2-1b-instruct",
            "org.opencontainers.image.vendor": "AMD",
            "com.amd.aim.model.canonicalName": "meta-llama/Llama-3.2-1B-Instruct",
            "com.amd.aim.model.recommendedDeployments": json.dumps(MI300X_FP16_LATENCY),
        },
        dry_run=tuple(LLAMA_32_1B_DRY_RUN),
    ),
    SimulatedImage("amdenterpriseai/aim-base", "0.9", {"org.opencontainers.image.title": "aim-base"}),
    *(
        SimulatedImage(f"amdenterpriseai/{name}", "0.8.4", {"org.opencontainers.image.title": name})
        for name in RELEASE_084
    ),
    SimulatedImage("amdenterpriseai/aim-base", "0.8.4", {"org.opencontainers.image.title": "aim-base"}),
)
"""The simulated images (every mirrored host has them): aim-dummy:0.1.10, aim-qwen-qwen3-32b:0.8.5 and
aim-meta-llama-llama-3-2-1b-instruct:0.8.5, each with one profile (its labels recommend it, its dry run prints it),
and aim-base:0.9, the base image of upstream's custom models (no model labels, no profile). The 0.8.4 release of six
amdenterpriseai/aim-* models and of aim-base, labelled with their titles only (their models make no templates), are
what upstream's AIMClusterModelSource scenarios scan Docker Hub for (`amdenterpriseai/aim-*` at 0.8.4 without
aim-base, five at most)."""


def _blob(document: Mapping[str, Any]) -> tuple[str, bytes]:
    body = json.dumps(document, sort_keys=True).encode()
    return "sha256:" + hashlib.sha256(body).hexdigest(), body


class SimulatedRegistry:
    def __init__(
        self,
        images: Iterable[SimulatedImage] = SIMULATED_IMAGES,
        *,
        credentials: tuple[str, str] | None = None,
        anonymous_tokens: bool = False,
    ) -> None:
        self.credentials = credentials
        self.anonymous_tokens = anonymous_tokens
        self.blobs: dict[str, tuple[str, bytes]] = {}  # digest -> media type, body
        self.tags: dict[tuple[str, str], str] = {}  # (repository, tag) -> manifest digest
        self.requests = 0
        self.unavailable: set[str] = set()
        """Repositories whose manifests answer 503 (the registry failing for a while), until removed."""
        self._tokens: dict[str, bool] = {}
        """Token -> whether it was issued for credentials (the catalog's scope is granted only then)."""
        self._runner: web.AppRunner | None = None
        self.url = ""
        for image in images:
            self.add(image)

    def add(self, image: SimulatedImage) -> str:
        """Serve `image`; its manifest's (or index's) digest."""
        config = {"architecture": "amd64", "os": "linux", "config": {"Labels": dict(image.labels)}, "rootfs": {}}
        digest = self._store(CONFIG, config)
        manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": {"mediaType": CONFIG, "digest": digest}}
        top = self._store(MANIFEST, manifest)
        if image.index:
            other = self._store(
                MANIFEST,
                {
                    **manifest,
                    "config": {
                        "mediaType": CONFIG,
                        "digest": self._store(CONFIG, {"architecture": "arm64", "os": "linux", "config": {}}),
                    },
                },
            )
            children = [
                {"mediaType": MANIFEST, "digest": other, "platform": {"os": "linux", "architecture": "arm64"}},
                {"mediaType": MANIFEST, "digest": top, "platform": {"os": "linux", "architecture": "amd64"}},
            ]
            top = self._store(INDEX, {"schemaVersion": 2, "mediaType": INDEX, "manifests": children})
        self.tags[(image.repository, image.tag)] = top
        return top

    def _store(self, media_type: str, document: Mapping[str, Any]) -> str:
        digest, body = _blob(document)
        self.blobs[digest] = (media_type, body)
        return digest

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/token", self._token)
        app.router.add_get("/v2/", self._base)
        app.router.add_get("/v2/_catalog", self._catalog)
        app.router.add_get(r"/v2/namespaces/{namespace}/repositories", self._hub_repositories)
        app.router.add_get(r"/v2/{name:.+}/tags/list", self._tags)
        app.router.add_get(r"/v2/{name:.+}/manifests/{ref}", self._manifest)
        app.router.add_get(r"/v2/{name:.+}/blobs/{digest}", self._blob)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on `host:port` (0: any free port); the registry's base URL."""
        self._runner = web.AppRunner(self.app())
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://{host}:{bound}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # --- handlers ---------------------------------------------------------------------------------------------

    def _challenge(self, request: web.Request, *, catalog: bool = False) -> web.Response | None:
        if self.credentials is None and not self.anonymous_tokens:
            return None
        given = request.headers.get("Authorization", "")
        token = given[7:] if given.startswith("Bearer ") else None
        if token in self._tokens and (self._tokens[token] or not catalog):
            return None
        scope = "registry:catalog:*" if catalog else f"repository:{request.match_info.get('name', '')}:pull"
        realm = f'Bearer realm="{self.url}/token",service="omectl-sim",scope="{scope}"'
        return web.json_response(
            {"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]},
            status=401,
            headers={"WWW-Authenticate": realm},
        )

    async def _token(self, request: web.Request) -> web.Response:
        if self.credentials is not None:
            expected = "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode()
            if request.headers.get("Authorization") != expected:
                return web.json_response({"errors": [{"code": "DENIED"}]}, status=401)
        token = secrets.token_hex(16)
        self._tokens[token] = self.credentials is not None
        return web.json_response({"token": token})

    async def _base(self, request: web.Request) -> web.Response:
        return self._challenge(request) or web.json_response({})

    async def _catalog(self, request: web.Request) -> web.Response:
        self.requests += 1
        if denied := self._challenge(request, catalog=True):
            return denied
        return _paged(request, "_catalog", "repositories", {}, sorted({repository for repository, _ in self.tags}))

    async def _tags(self, request: web.Request) -> web.Response:
        self.requests += 1
        if denied := self._challenge(request):
            return denied
        name = request.match_info["name"]
        tags = sorted(tag for repository, tag in self.tags if repository == name)
        if not tags:
            return web.json_response(
                {"errors": [{"code": "NAME_UNKNOWN", "message": "repository name not known to registry"}]}, status=404
            )
        return _paged(request, f"{name}/tags/list", "tags", {"name": name}, tags)

    async def _hub_repositories(self, request: web.Request) -> web.Response:
        namespace = request.match_info["namespace"]
        names = sorted(
            {repository.split("/", 1)[1] for repository, _ in self.tags if repository.startswith(f"{namespace}/")}
        )
        results = [{"name": name, "namespace": namespace} for name in names]
        return web.json_response({"count": len(results), "next": None, "previous": None, "results": results})

    async def _manifest(self, request: web.Request) -> web.Response:
        self.requests += 1
        if denied := self._challenge(request):
            return denied
        name, ref = request.match_info["name"], request.match_info["ref"]
        if name in self.unavailable:
            return web.json_response(
                {"errors": [{"code": "UNAVAILABLE", "message": "service unavailable"}]}, status=503
            )
        digest = ref if ref.startswith("sha256:") else self.tags.get((name, ref))
        if digest is None or digest not in self.blobs or self.blobs[digest][0] == CONFIG:
            return web.json_response(
                {"errors": [{"code": "MANIFEST_UNKNOWN", "message": "manifest unknown"}]}, status=404
            )
        media_type, body = self.blobs[digest]
        return web.Response(body=body, content_type=media_type, headers={"Docker-Content-Digest": digest})

    async def _blob(self, request: web.Request) -> web.Response:
        self.requests += 1
        if denied := self._challenge(request):
            return denied
        found = self.blobs.get(request.match_info["digest"])
        if found is None:
            return web.json_response({"errors": [{"code": "BLOB_UNKNOWN"}]}, status=404)
        return web.Response(body=found[1], content_type="application/octet-stream")


def _paged(request: web.Request, path: str, key: str, head: Mapping[str, Any], values: list[str]) -> web.Response:
    """One page of a sorted listing: at most `n` values after `last`, and a `Link` to the next page when more follow."""
    last = request.query.get("last")
    rest = [v for v in values if last is None or v > last]
    try:
        size = int(request.query.get("n", "0")) or len(rest)
    except ValueError:
        size = len(rest)
    page, more = rest[:size], len(rest) > size
    headers = {"Link": f'</v2/{path}?n={size}&last={page[-1]}>; rel="next"'} if more and page else {}
    return web.json_response({**head, key: page}, headers=headers)
