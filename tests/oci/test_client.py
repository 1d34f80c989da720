"""Reading an image's config labels from a registry (omectl.oci.client) against local registries over real HTTP: the
simulated fleet's registry (omectl.sim.registry) and small aiohttp apps for the answers it never gives."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from omectl.oci.client import RegistryClient, RegistryError
from omectl.oci.credentials import Credentials, credentials_for
from omectl.oci.reference import parse_reference
from omectl.sim.registry import SimulatedImage, SimulatedRegistry

LABELS = {"com.amd.aim.model.canonicalName": "org/model"}
IMAGES = (
    SimulatedImage("team/plain", "1", LABELS),
    SimulatedImage("team/multi", "2", LABELS, index=True),
    SimulatedImage("team/bare", "3"),
)


async def served(registry: SimulatedRegistry) -> tuple[SimulatedRegistry, RegistryClient]:
    url = await registry.start()
    return registry, RegistryClient(mirrors={"example.io": url}, timeout=5)


@pytest.fixture
async def open_registry() -> AsyncIterator[tuple[SimulatedRegistry, RegistryClient]]:
    registry, client = await served(SimulatedRegistry(IMAGES, anonymous_tokens=True))
    yield registry, client
    await registry.stop()


async def test_labels_are_read_through_an_anonymous_token_and_an_index_gives_its_linux_amd64_image(
    open_registry: tuple[SimulatedRegistry, RegistryClient],
) -> None:
    _, client = open_registry
    assert await client.labels(parse_reference("example.io/team/plain:1")) == LABELS
    assert await client.labels(parse_reference("example.io/team/multi:2")) == LABELS, "the amd64 child's labels"
    assert await client.labels(parse_reference("example.io/team/bare:3")) == {}


async def test_a_digest_reads_the_same_image_and_reads_are_cached(
    open_registry: tuple[SimulatedRegistry, RegistryClient],
) -> None:
    registry, client = open_registry
    digest = registry.tags[("team/plain", "1")]
    assert await client.labels(parse_reference(f"example.io/team/plain@{digest}")) == LABELS
    served_before = registry.requests
    assert await client.labels(parse_reference(f"example.io/team/plain@{digest}")) == LABELS
    assert registry.requests == served_before and client.reads == 1, "the second read came from the cache"


async def test_the_cache_is_bounded(open_registry: tuple[SimulatedRegistry, RegistryClient]) -> None:
    _, client = open_registry
    client.cache_size = 1
    for image in ("example.io/team/plain:1", "example.io/team/bare:3", "example.io/team/plain:1"):
        await client.labels(parse_reference(image))
    assert client.reads == 3, "the first image was dropped for the second"


async def test_a_missing_image_is_not_found(open_registry: tuple[SimulatedRegistry, RegistryClient]) -> None:
    _, client = open_registry
    with pytest.raises(RegistryError) as raised:
        await client.labels(parse_reference("example.io/team/plain:404"))
    assert raised.value.kind == "not-found" and "404" in str(raised.value)


async def test_a_private_registry_gives_a_token_only_for_the_pull_secrets_credentials() -> None:
    registry, client = await served(SimulatedRegistry(IMAGES, credentials=("robot", "s3cret")))
    try:
        with pytest.raises(RegistryError) as raised:
            await client.labels(parse_reference("example.io/team/plain:1"))
        assert raised.value.kind == "auth"
        with pytest.raises(RegistryError) as wrong:
            await client.labels(parse_reference("example.io/team/plain:1"), Credentials("robot", "wrong"))
        assert wrong.value.kind == "auth"
        assert await client.labels(parse_reference("example.io/team/plain:1"), Credentials("robot", "s3cret")) == LABELS
    finally:
        await registry.stop()


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


async def answering(handler: Handler) -> tuple[web.AppRunner, RegistryClient]:
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, RegistryClient(mirrors={"example.io": f"http://127.0.0.1:{port}"}, timeout=2)


async def test_basic_challenges_server_errors_and_an_index_without_amd64_are_reported() -> None:
    basic = "Basic " + base64.b64encode(b"u:p").decode()

    async def handler(request: web.Request) -> web.Response:
        name = request.path
        if "basic" in name and request.headers.get("Authorization") != basic:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="x"'})
        if "broken" in name:
            return web.Response(status=503, text="down")
        if "arm" in name:
            index = {
                "mediaType": "application/vnd.oci.image.index.v1+json",
                "manifests": [{"digest": "sha256:" + "b" * 64, "platform": {"os": "linux", "architecture": "arm64"}}],
            }
            return web.json_response(index)
        if "/manifests/" in name:
            return web.json_response({"schemaVersion": 2, "config": {"digest": "sha256:" + "c" * 64}})
        return web.json_response({"config": {"Labels": LABELS}})

    runner, client = await answering(handler)
    try:
        assert await client.labels(parse_reference("example.io/basic/x:1"), Credentials("u", "p")) == LABELS
        cases = {"example.io/basic/x:2": "auth", "example.io/broken/x:1": "generic", "example.io/arm/x:1": "not-found"}
        for image, kind in cases.items():
            with pytest.raises(RegistryError) as raised:
                await client.labels(parse_reference(image))
            assert raised.value.kind == kind, image
    finally:
        await runner.cleanup()


async def test_an_unreachable_registry_is_a_generic_error() -> None:
    client = RegistryClient(mirrors={"example.io": "http://127.0.0.1:9"}, timeout=2)
    with pytest.raises(RegistryError) as raised:
        await client.labels(parse_reference("example.io/team/plain:1"))
    assert raised.value.kind == "generic"


def dockerconfig(auths: dict[str, dict[str, str]]) -> dict[str, object]:
    encoded = base64.b64encode(json.dumps({"auths": auths}).encode()).decode()
    return {"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": encoded}}


def test_pull_secrets_give_the_credentials_of_the_images_registry() -> None:
    auth = base64.b64encode(b"robot:token").decode()
    secrets = [
        dockerconfig({"quay.io": {"username": "q", "password": "q"}}),
        dockerconfig({"https://ghcr.io/v2/": {"auth": auth}, "https://index.docker.io/v1/": {"auth": auth}}),
    ]
    assert credentials_for("ghcr.io", secrets) == Credentials("robot", "token")
    assert credentials_for("docker.io", secrets) == Credentials("robot", "token"), "Docker Hub under its old name"
    assert credentials_for("quay.io", secrets) == Credentials("q", "q")
    assert credentials_for("example.io", secrets) is None


async def test_tags_are_listed_page_by_page_and_the_catalog_needs_credentials() -> None:
    images = [SimulatedImage("team/plain", str(n)) for n in range(5)]
    registry, client = await served(SimulatedRegistry([*images, *IMAGES], credentials=("robot", "s3cret")))
    robot = Credentials("robot", "s3cret")
    try:
        paging = RegistryClient(mirrors=client.mirrors, timeout=5, page_size=2)
        before = registry.requests
        assert await paging.tags("example.io", "team/plain", robot) == ["0", "1", "2", "3", "4"]
        assert registry.requests - before == 4, "three pages: the first asked without a token too, the token kept"
        assert await client.catalog("example.io", robot) == ["team/bare", "team/multi", "team/plain"]
        with pytest.raises(RegistryError) as raised:
            await client.catalog("example.io")
        assert raised.value.kind == "auth"
    finally:
        await registry.stop()


async def test_anonymous_tokens_read_tags_but_never_the_catalog_and_docker_hub_lists_a_namespace(
    open_registry: tuple[SimulatedRegistry, RegistryClient],
) -> None:
    registry, _ = open_registry
    client = RegistryClient(mirrors={"example.io": registry.url, "hub.docker.com": registry.url}, timeout=5)
    assert await client.tags("example.io", "team/multi") == ["2"]
    with pytest.raises(RegistryError) as raised:
        await client.catalog("example.io")
    assert raised.value.kind == "auth" and "401" in str(raised.value)
    assert await client.hub_repositories("team") == ["team/bare", "team/multi", "team/plain"]
    with pytest.raises(RegistryError) as missing:
        await client.tags("example.io", "team/none")
    assert missing.value.kind == "not-found"
