"""Bearer-token authentication, as kube-apiserver's: the 401 Status, the public info paths, the fault plane, kubectl."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import EmbeddedFleet
from omectl.tls import client_ssl_context
from tests.support import Kubectl

# kube-apiserver's body, byte for byte (a real server adds a trailing newline)
UNAUTHORIZED = (
    b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized",'
    b'"reason":"Unauthorized","code":401}'
)
KUBECTL_UNAUTHORIZED = "error: You must be logged in to the server (Unauthorized)"
FAULT = {"action": "fail", "count": 1, "status": 503}
PROTECTED = [
    ("GET", "/api/v1/namespaces"),  # API
    ("GET", "/apis"),  # discovery
    ("GET", "/api"),
    ("GET", "/openapi/v3"),
    ("GET", "/"),
    ("GET", "/healthz/ping"),  # only the exact public paths are public
    ("POST", "/healthz"),  # and only for GET
    ("GET", "/_omectl/state"),  # the fault plane
    ("POST", "/_omectl/faults"),
]
PUBLIC = ["/healthz", "/livez", "/readyz", "/version", "/version/"]


@pytest.fixture
async def tls_server() -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer("auth", tls=True) as server:
        yield server


@pytest.fixture
async def session(tls_server: EmbeddedAPIServer) -> AsyncIterator[aiohttp.ClientSession]:
    assert tls_server.ca is not None
    connector = aiohttp.TCPConnector(ssl=client_ssl_context(tls_server.ca.cert_pem))
    async with aiohttp.ClientSession(connector=connector) as session:
        yield session


async def call(
    session: aiohttp.ClientSession, server: EmbeddedAPIServer, method: str, path: str, authorization: str | None
) -> tuple[int, str, bytes]:
    headers = {"Authorization": authorization} if authorization is not None else {}
    body = FAULT if path == "/_omectl/faults" else None
    async with session.request(method, server.url + path, headers=headers, json=body) as reply:
        return reply.status, reply.headers.get("Content-Type", ""), await reply.read()


@pytest.mark.parametrize(("method", "path"), PROTECTED)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong", "Bearer ", "Basic YWRtaW46YWRtaW4="])
async def test_a_request_without_the_right_token_gets_kube_apiservers_401(
    tls_server: EmbeddedAPIServer, session: aiohttp.ClientSession, method: str, path: str, authorization: str | None
) -> None:
    assert await call(session, tls_server, method, path, authorization) == (401, "application/json", UNAUTHORIZED)
    assert tls_server.faults.rules == []  # the fault plane did nothing


@pytest.mark.parametrize(("method", "path"), PROTECTED)
async def test_the_right_token_is_served(
    tls_server: EmbeddedAPIServer, session: aiohttp.ClientSession, method: str, path: str
) -> None:
    assert (await call(session, tls_server, method, path, f"Bearer {tls_server.token}"))[0] == 200


@pytest.mark.parametrize("path", PUBLIC)
async def test_the_public_info_paths_are_open_without_a_token_but_not_with_a_wrong_one(
    tls_server: EmbeddedAPIServer, session: aiohttp.ClientSession, path: str
) -> None:
    for authorization in (None, "Bearer ", "Basic YWRtaW46YWRtaW4=", f"bearer {tls_server.token}"):
        assert (await call(session, tls_server, "GET", path, authorization))[0] == 200
    # kube-apiserver never takes a bad token for anonymous
    assert await call(session, tls_server, "GET", path, "Bearer wrong") == (401, "application/json", UNAUTHORIZED)


async def test_over_plain_http_the_api_is_anonymous_but_a_wrong_token_and_the_fault_plane_are_not(
    server: EmbeddedAPIServer,
) -> None:
    async with aiohttp.ClientSession() as session:
        assert (await call(session, server, "GET", "/api/v1/namespaces", None))[0] == 200
        assert (await call(session, server, "GET", "/api/v1/namespaces", "Bearer wrong"))[0] == 401
        for method, path in (("POST", "/_omectl/faults"), ("GET", "/_omectl/requests")):
            assert await call(session, server, method, path, None) == (401, "application/json", UNAUTHORIZED)
        assert server.faults.rules == []
        assert (await call(session, server, "POST", "/_omectl/faults", f"Bearer {server.token}"))[0] == 200
        assert len(server.faults.rules) == 1


async def test_each_server_has_its_own_token_kept_across_a_restart(tmp_path: Path) -> None:
    fleet = await EmbeddedFleet(2, name_prefix="tok-").start()
    try:
        first, second = fleet.servers
        assert first.token != second.token
        config = yaml.safe_load(fleet.write_kubeconfig(tmp_path / "kubeconfig").read_text())
        assert [u["user"]["token"] for u in config["users"]] == [first.token, second.token]
        token = first.token
        await first.restart()
        assert first.token == token
        async with aiohttp.ClientSession() as session:
            assert (await call(session, first, "GET", "/_omectl/state", f"Bearer {token}"))[0] == 200
            assert (await call(session, first, "GET", "/_omectl/state", f"Bearer {second.token}"))[0] == 401
    finally:
        await fleet.stop()
    assert EmbeddedAPIServer("given", token="s3cret").kubeconfig_entry().token == "s3cret"


async def test_kubectl_with_the_kubeconfig_works_and_without_its_token_is_unauthorized(
    tls_server: EmbeddedAPIServer, tmp_path: Path, kubectl_binary: str
) -> None:
    path = tls_server.write_kubeconfig(tmp_path / "kubeconfig")
    kubectl = Kubectl(kubectl_binary, path, tmp_path / "cache")
    _, out, _ = await kubectl.arun("get", "ns", "default", "-o", "name")
    assert out.strip() == "namespace/default"
    config = yaml.safe_load(path.read_text())
    config["users"][0]["user"]["token"] = "wrong"
    path.write_text(yaml.safe_dump(config))
    code, out, err = await kubectl.arun("get", "ns", check=False)
    assert (code, out, err) == (1, "", KUBECTL_UNAUTHORIZED + "\n")
    # Without a token kubectl asks for a username and password (basic auth; the prompt needs a terminal, the flags
    # do not), which are no credentials here either.
    config["users"][0]["user"] = {}
    path.write_text(yaml.safe_dump(config))
    code, out, err = await kubectl.arun("get", "ns", input="", check=False)
    assert (code, out, err) == (1, "Please enter Username: ", "error: EOF\n")
    code, out, err = await kubectl.arun("--username=someone", "--password=secret", "get", "ns", check=False)
    assert (code, out, err) == (1, "", KUBECTL_UNAUTHORIZED + "\n")
