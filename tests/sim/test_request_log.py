"""The request log: every API request recorded (verb, resource, code, agent, identity), bounded, readable over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from omectl.sim.apiserver.requestlog import CLIENT_IDENTITY_HEADER, RequestLog, parse_api_path
from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.support import RawClient

CM = "/api/v1/namespaces/default/configmaps"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


@pytest.mark.parametrize(
    ("path", "parsed"),
    [
        ("/api/v1/namespaces/default/configmaps/a", ("", "v1", "configmaps", "default", "a", "")),
        ("/api/v1/namespaces/x", ("", "v1", "namespaces", "", "x", "")),
        ("/api/v1/namespaces/x/finalize", ("", "v1", "namespaces", "", "x", "finalize")),
        ("/api/v1/namespaces/x/status", ("", "v1", "namespaces", "", "x", "status")),
        ("/apis/ome.io/v1beta1/clusterservingruntimes/p/status", ("ome.io", "v1beta1", "clusterservingruntimes", "",
                                                                  "p", "status")),
        ("/apis/coordination.k8s.io/v1/namespaces/ns/leases", ("coordination.k8s.io", "v1", "leases", "ns", "", "")),
        ("/apis/ome.io", None),
        ("/version", None),
        ("/api/v1", None),
    ],
)  # fmt: skip
def test_paths_parse_like_the_router(path: str, parsed: tuple[str, ...] | None) -> None:
    assert parse_api_path(path) == parsed


async def test_every_request_is_recorded_with_verb_resource_code_and_agent(
    raw: RawClient, server: EmbeddedAPIServer
) -> None:
    agent = {"User-Agent": "omectl/0.1.0 (replica=a)", CLIENT_IDENTITY_HEADER: "replica-a"}
    assert (await raw.post(CM, configmap("a"), headers=agent)).status == 201
    assert (await raw.post(CM, configmap("a"), headers=agent)).status == 409
    assert (await raw.get(CM + "/a")).status == 200
    assert (await raw.get(CM)).status == 200
    patched = await raw.patch(CM + "/a", {"data": {"k": "v"}}, "application/merge-patch+json", headers=agent)
    assert patched.status == 200
    await raw.get("/version")
    await raw.get("/_omectl/state")  # admin calls are not recorded
    assert (await raw.delete(CM + "/a")).status == 200

    records = server.request_log.records()
    assert [(r.verb, r.resource, r.name, r.code) for r in records] == [
        ("create", "configmaps", "", 201),
        ("create", "configmaps", "", 409),
        ("get", "configmaps", "a", 200),
        ("list", "configmaps", "", 200),
        ("patch", "configmaps", "a", 200),
        ("", "", "", 200),  # /version: not a resource
        ("delete", "configmaps", "a", 200),
    ]
    first = records[0]
    assert (first.namespace, first.group, first.version) == ("default", "", "v1")
    assert first.user_agent == "omectl/0.1.0 (replica=a)"
    assert first.identity == "replica-a"
    assert first.is_write and not records[1].is_write  # a refused create wrote nothing
    assert first.time <= first.end
    assert [r.seq for r in records] == list(range(len(records)))
    assert records[2].identity == ""


async def test_watches_are_recorded_as_watch_when_they_end(raw: RawClient, server: EmbeddedAPIServer) -> None:
    reply = await raw.session.get(raw.base + CM + "?watch=true&timeoutSeconds=1", headers=raw.headers)
    await reply.read()
    reply.close()
    for _ in range(50):
        if server.request_log.records():
            break
        await asyncio.sleep(0.02)
    [record] = server.request_log.records()
    assert (record.verb, record.resource, record.code) == ("watch", "configmaps", 200)
    assert record.end - record.time >= 0.9


async def test_the_log_is_read_over_http_from_a_cursor(raw: RawClient, server: EmbeddedAPIServer) -> None:
    for i in range(3):
        await raw.post(CM, configmap(f"c{i}"))
    first = (await raw.get("/_omectl/requests")).body
    assert first["since"] == 0 and first["next"] == 3 and first["dropped"] == 0
    assert [r["name"] for r in first["requests"]] == ["", "", ""]
    assert [r["verb"] for r in first["requests"]] == ["create"] * 3
    await raw.put(LEASES + "/missing", {"metadata": {"name": "missing"}})
    second = (await raw.get(f"/_omectl/requests?since={first['next']}")).body
    assert [(r["seq"], r["verb"], r["resource"], r["code"]) for r in second["requests"]] == [
        (3, "update", "leases", 404)
    ]
    assert second["next"] == 4
    empty = (await raw.get("/_omectl/requests?since=4")).body
    assert empty["requests"] == [] and empty["next"] == 4
    limited = (await raw.get("/_omectl/requests?since=1&limit=2")).body
    assert [r["seq"] for r in limited["requests"]] == [1, 2] and limited["next"] == 3
    assert (await raw.get("/_omectl/requests?since=x")).status == 400


async def test_the_log_survives_a_restart(raw: RawClient, server: EmbeddedAPIServer) -> None:
    await raw.post(CM, configmap("a"))
    await server.restart()
    await raw.post(CM, configmap("b"))
    assert [r.code for r in server.request_log.records()] == [201, 201]


def test_the_ring_is_bounded_and_counts_what_fell_off() -> None:
    log = RequestLog(capacity=3)
    for i in range(5):
        log.append(float(i), float(i), "POST", CM, False, 201, "ua", None)
    assert len(log) == 3 and log.total == 5 and log.first_seq == 2
    assert [r.seq for r in log.records()] == [2, 3, 4]
    answer = log.read(since=0)
    assert answer["dropped"] == 2 and answer["first"] == 2 and answer["next"] == 5
    assert [r["seq"] for r in answer["requests"]] == [2, 3, 4]
    assert [r.seq for r in log.records(since=4)] == [4]
    assert log.read(since=7)["next"] == 5
