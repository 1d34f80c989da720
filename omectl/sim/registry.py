"""A small OCI registry for the simulated fleet: the images the tests and the demo name (`SIMULATED_IMAGES`), served
read-only over HTTP with the distribution API's manifest and blob reads. Each image is a manifest whose config blob
carries the image's labels; `index` images are an image index with a linux/arm64 and a linux/amd64 child (the labels
on the amd64 one only). With `credentials` the registry asks for a bearer token from its `/token` realm, given only
for those basic credentials; with `anonymous_tokens` it asks for a token that anyone gets (as ghcr.io and Docker Hub
do for public images); else it answers without authentication. The controller reaches it for a registry host through
its `image_registry_mirrors` setting (docs/operations.md, "Image registries")."""

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
)
"""The simulated images (every mirrored host has them): aim-dummy:0.1.10, aim-qwen-qwen3-32b:0.8.5 and
aim-meta-llama-llama-3-2-1b-instruct:0.8.5, each with one profile (its labels recommend it, its dry run prints it),
and aim-base:0.9, the base image of upstream's custom models (no model labels, no profile)."""


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
        self._tokens: set[str] = set()
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

    def _challenge(self, request: web.Request) -> web.Response | None:
        if self.credentials is None and not self.anonymous_tokens:
            return None
        given = request.headers.get("Authorization", "")
        if given.startswith("Bearer ") and given[7:] in self._tokens:
            return None
        name = request.match_info.get("name", "")
        realm = f'Bearer realm="{self.url}/token",service="omectl-sim",scope="repository:{name}:pull"'
        return web.json_response(
            {"errors": [{"code": "UNAUTHORIZED"}]}, status=401, headers={"WWW-Authenticate": realm}
        )

    async def _token(self, request: web.Request) -> web.Response:
        if self.credentials is not None:
            expected = "Basic " + base64.b64encode(":".join(self.credentials).encode()).decode()
            if request.headers.get("Authorization") != expected:
                return web.json_response({"errors": [{"code": "DENIED"}]}, status=401)
        token = secrets.token_hex(16)
        self._tokens.add(token)
        return web.json_response({"token": token})

    async def _base(self, request: web.Request) -> web.Response:
        return self._challenge(request) or web.json_response({})

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
