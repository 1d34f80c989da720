"""ClusterClient against a real embedded API server over HTTP (and HTTPS once)."""

from __future__ import annotations

import asyncio
import base64
import itertools
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.kube import (
    ClusterClient,
    Conflict,
    Invalid,
    KubeAPIError,
    KubeConfigError,
    KubeConnectionError,
    NotFound,
    ResourceRef,
    TooManyRequests,
)
from omectl.kube.client import WATCH_YIELD_EVERY
from omectl.kube.resources import CONFIG_MAPS, CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.kubeconfig import build_kubeconfig
from tests.support import LoopTurns, widget, widget_crd

WIDGETS = ResourceRef("example.com", "v1", "widgets", "Widget", True)


def configmap(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


@pytest.fixture
async def client(server: EmbeddedAPIServer, tmp_path: Path) -> AsyncIterator[ClusterClient]:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    async with await ClusterClient.from_kubeconfig(path, name="east") as kube:
        yield kube


@pytest.fixture
async def widgets(client: ClusterClient) -> ResourceRef:
    await client.create(CUSTOM_RESOURCE_DEFINITIONS, widget_crd())
    return WIDGETS


async def test_configmap_create_get_list_replace_delete(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    created = await client.create(CONFIG_MAPS, configmap("settings", a="1"))
    assert created["metadata"]["uid"]
    fetched = await client.get(CONFIG_MAPS, "settings", "default")
    assert fetched["data"] == {"a": "1"}

    listed = await client.list(CONFIG_MAPS, "default")
    assert "settings" in [item["metadata"]["name"] for item in listed["items"]]
    assert listed["metadata"]["resourceVersion"] == str(server.api.store.rv)

    fetched["data"] = {"a": "2"}
    replaced = await client.replace(CONFIG_MAPS, fetched)
    assert replaced["data"] == {"a": "2"}
    assert int(replaced["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])

    await client.delete(CONFIG_MAPS, "settings", "default")
    with pytest.raises(KubeAPIError) as missing:
        await client.get(CONFIG_MAPS, "settings", "default")
    assert missing.value.status == 404


async def test_every_patch_type_on_a_configmap(client: ClusterClient) -> None:
    await client.create(CONFIG_MAPS, configmap("p", a="1", b="2"))

    merged = await client.patch(CONFIG_MAPS, "p", {"data": {"b": None, "c": "3"}}, "default", patch_type="merge")
    assert merged["data"] == {"a": "1", "c": "3"}

    ops = [{"op": "replace", "path": "/data/a", "value": "10"}, {"op": "add", "path": "/data/d", "value": "4"}]
    patched = await client.patch(CONFIG_MAPS, "p", ops, "default", patch_type="json")
    assert patched["data"] == {"a": "10", "c": "3", "d": "4"}

    strategic = await client.patch(
        CONFIG_MAPS, "p", {"metadata": {"labels": {"tier": "gpu"}}}, "default", patch_type="strategic"
    )
    assert strategic["metadata"]["labels"] == {"tier": "gpu"}

    applied = await client.patch(
        CONFIG_MAPS,
        "p",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "p", "namespace": "default"},
            "data": {"e": "5"},
        },
        patch_type="apply",
        field_manager="omectl-test",
        force=True,
    )
    assert applied["data"]["e"] == "5"
    assert "omectl-test" in [entry["manager"] for entry in applied["metadata"]["managedFields"]]


async def test_a_dict_sent_as_json_patch_is_a_bad_request(client: ClusterClient) -> None:
    await client.create(CONFIG_MAPS, configmap("j", a="1"))
    with pytest.raises(KubeAPIError) as bad:
        await client.patch(CONFIG_MAPS, "j", {"data": {"a": "2"}}, "default", patch_type="json")
    assert bad.value.status == 400


async def test_apply_without_a_field_manager_is_refused_before_sending(client: ClusterClient) -> None:
    with pytest.raises(ValueError, match="field_manager"):
        await client.patch(CONFIG_MAPS, "x", configmap("x"), "default", patch_type="apply")


async def test_custom_resource_crud_status_and_patches(client: ClusterClient, widgets: ResourceRef) -> None:
    created = await client.create(widgets, widget("w1", size=3, color="red"))
    assert created["spec"]["mode"] == "auto"  # the CRD's schema default: the server really handled it

    merged = await client.patch(widgets, "w1", {"spec": {"size": 4}}, "default")
    assert merged["spec"]["size"] == 4
    json_patched = await client.patch(
        widgets, "w1", [{"op": "add", "path": "/spec/tags", "value": ["a"]}], "default", patch_type="json"
    )
    assert json_patched["spec"]["tags"] == ["a"]
    applied = await client.patch(
        widgets,
        "w1",
        {**widget("w1", color="blue")},
        patch_type="apply",
        field_manager="omectl-test",
        force=True,
    )
    assert applied["spec"]["color"] == "blue"
    generation = applied["metadata"]["generation"]

    applied["status"] = {"phase": "Ready"}
    with_status = await client.replace(widgets, applied, subresource="status")
    assert with_status["status"] == {"phase": "Ready"}
    status_patched = await client.patch(
        widgets, "w1", {"status": {"phase": "Degraded"}}, "default", subresource="status"
    )
    assert status_patched["status"]["phase"] == "Degraded"
    assert status_patched["metadata"]["generation"] == generation

    with pytest.raises(KubeAPIError) as unsupported:
        await client.patch(widgets, "w1", {"spec": {"size": 5}}, "default", patch_type="strategic")
    assert unsupported.value.status == 415
    assert type(unsupported.value) is KubeAPIError  # a status without a subclass of its own

    cluster_wide = await client.list(widgets)
    assert [item["metadata"]["name"] for item in cluster_wide["items"]] == ["w1"]
    await client.delete(widgets, "w1", "default")
    assert (await client.list(widgets, "default"))["items"] == []


async def test_api_error_fields_for_404_409_and_422(client: ClusterClient, widgets: ResourceRef) -> None:
    with pytest.raises(NotFound) as not_found:
        await client.get(CONFIG_MAPS, "absent", "default")
    error = not_found.value
    assert (error.status, error.reason) == (404, "NotFound")
    assert error.message == 'configmaps "absent" not found'
    assert error.body["kind"] == "Status"
    assert error.cluster == "east"
    assert str(error).startswith("cluster east: GET /api/v1/namespaces/default/configmaps/absent: 404 NotFound")

    await client.create(CONFIG_MAPS, configmap("twice"))
    with pytest.raises(Conflict) as exists:
        await client.create(CONFIG_MAPS, configmap("twice"))
    assert (exists.value.status, exists.value.reason) == (409, "AlreadyExists")

    stale = await client.get(CONFIG_MAPS, "twice", "default")
    await client.patch(CONFIG_MAPS, "twice", {"data": {"k": "v"}}, "default")
    with pytest.raises(Conflict) as conflict:
        await client.replace(CONFIG_MAPS, stale)
    assert (conflict.value.status, conflict.value.reason) == (409, "Conflict")

    with pytest.raises(Invalid) as invalid:
        await client.create(widgets, widget("big", size=500))
    assert (invalid.value.status, invalid.value.reason) == (422, "Invalid")
    assert "spec.size" in invalid.value.message


async def test_429_carries_retry_after(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    server.faults.fail_next(1, 429, method="GET", path_contains="configmaps", retry_after=7)
    with pytest.raises(TooManyRequests) as throttled:
        await client.list(CONFIG_MAPS, "default")
    assert throttled.value.status == 429
    assert throttled.value.reason == "TooManyRequests"
    assert throttled.value.retry_after == 7.0
    assert (await client.list(CONFIG_MAPS, "default"))["kind"] == "ConfigMapList"


async def test_list_all_follows_continue_tokens(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    for i in range(7):
        await client.create(CONFIG_MAPS, configmap(f"page-{i}"))
    first = await client.list(CONFIG_MAPS, "default", limit=3)
    assert len(first["items"]) == 3 and first["metadata"]["continue"]
    before = server.http.request_counts[("GET", "configmaps")]
    names = [item["metadata"]["name"] for item in await client.list_all(CONFIG_MAPS, "default", page_size=3)]
    assert names == [f"page-{i}" for i in range(7)]
    assert server.http.request_counts[("GET", "configmaps")] - before == 3


async def test_watch_yields_events_and_ends_when_the_server_closes_it(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    start_rv = (await client.list(CONFIG_MAPS, "default"))["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []
    first_event = asyncio.Event()

    async def consume() -> None:
        async for event in client.watch(CONFIG_MAPS.path("default"), {"resourceVersion": start_rv}):
            events.append(event)
            first_event.set()

    consumer = asyncio.create_task(consume())
    await client.create(CONFIG_MAPS, configmap("watched"))
    await asyncio.wait_for(first_event.wait(), 5)
    server.api.store.close_all_watches()
    await asyncio.wait_for(consumer, 5)  # the iterator ended at EOF
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "watched")]


async def test_a_burst_of_watch_lines_lets_other_tasks_run_every_few_events(
    client: ClusterClient, server: EmbeddedAPIServer
) -> None:
    start_rv = (await client.list(CONFIG_MAPS, "default"))["metadata"]["resourceVersion"]
    for i in range(5 * WATCH_YIELD_EVERY):
        await client.create(CONFIG_MAPS, configmap(f"burst-{i}"))
    turns = LoopTurns()
    turns_at: list[int] = []  # the loop's turn when each event reached the consumer
    try:
        async for _event in client.watch(CONFIG_MAPS.path("default"), {"resourceVersion": start_rv}):
            turns_at.append(turns.now)  # the consumer itself never awaits: only the watch can let the loop turn
            if len(turns_at) == 5 * WATCH_YIELD_EVERY:
                break
    finally:
        turns.stop()
    longest_run, run = 0, 1
    for before, after in itertools.pairwise(turns_at):
        run = run + 1 if after == before else 1
        longest_run = max(longest_run, run)
    assert longest_run <= WATCH_YIELD_EVERY, f"{longest_run} events in a row held the loop"


async def test_watch_yields_an_expired_error_line_as_is(client: ClusterClient, server: EmbeddedAPIServer) -> None:
    old_rv = (await client.create(CONFIG_MAPS, configmap("old")))["metadata"]["resourceVersion"]
    await client.create(CONFIG_MAPS, configmap("newer"))
    server.api.store.compact()
    events = [e async for e in client.watch(CONFIG_MAPS.path("default"), {"resourceVersion": old_rv})]
    assert len(events) == 1
    assert events[0]["type"] == "ERROR"
    assert events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"


async def test_watch_of_a_silent_stream_times_out(tmp_path: Path) -> None:
    async with EmbeddedAPIServer("quiet", bookmark_interval=60) as srv:
        path = srv.write_kubeconfig(tmp_path / "kubeconfig")
        async with await ClusterClient.from_kubeconfig(path, name="quiet") as kube:
            rv = (await kube.list(CONFIG_MAPS, "default"))["metadata"]["resourceVersion"]
            with pytest.raises(KubeConnectionError, match=r"cluster quiet: watch .*no data for 0.2 s"):
                async for _ in kube.watch(CONFIG_MAPS.path("default"), {"resourceVersion": rv}, inactivity_timeout=0.2):
                    pass


async def test_tls_kubeconfig_verifies_the_server(tmp_path: Path) -> None:
    async with EmbeddedAPIServer("secure", tls=True) as srv:
        assert srv.url.startswith("https://")
        path = srv.write_kubeconfig(tmp_path / "kubeconfig")
        async with await ClusterClient.from_kubeconfig(path, name="secure") as kube:
            namespace = await kube.get(NAMESPACES, "default")
            assert namespace["metadata"]["name"] == "default"
            created = await kube.create(CONFIG_MAPS, configmap("over-tls"))
            assert created["metadata"]["name"] == "over-tls"


async def test_tls_with_the_wrong_ca_is_a_connection_error(tmp_path: Path) -> None:
    async with EmbeddedAPIServer("secure", tls=True) as srv, EmbeddedAPIServer("other", tls=True) as other:
        document = srv.write_kubeconfig(tmp_path / "kubeconfig").read_text()
        other_ca = other.kubeconfig_entry().ca_pem
        assert other_ca is not None
        config = yaml.safe_load(document)
        config["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(other_ca).decode()
        async with await ClusterClient.from_kubeconfig(config_dict=config, name="mismatch") as kube:
            with pytest.raises(KubeConnectionError, match="cluster mismatch"):
                await kube.get(NAMESPACES, "default")


async def test_unknown_context_is_a_clear_error(server: EmbeddedAPIServer, tmp_path: Path) -> None:
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    with pytest.raises(KubeConfigError) as unknown:
        await ClusterClient.from_kubeconfig(path, context="west", name="west")
    assert str(unknown.value) == (
        f"cluster west: context 'west' not found in kubeconfig {path}; available: {server.name}"
    )


async def test_missing_kubeconfig_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(KubeConfigError, match=f"cluster c9: kubeconfig not found: {missing}"):
        await ClusterClient.from_kubeconfig(missing, name="c9")


async def test_config_dict_context_and_default_namespace(server: EmbeddedAPIServer) -> None:
    entry = server.kubeconfig_entry(namespace="team-a")
    config = build_kubeconfig([entry])
    async with await ClusterClient.from_kubeconfig(config_dict=config, context=server.name, name="dict") as kube:
        assert kube.default_namespace == "team-a"
        assert kube.server == server.url
        assert (await kube.get(NAMESPACES, "default"))["kind"] == "Namespace"


async def test_connection_refused_names_the_cluster(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "down", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "down", "user": {"token": "t"}}],
        "contexts": [{"name": "down", "context": {"cluster": "down", "user": "down"}}],
        "current-context": "down",
    }
    async with await ClusterClient.from_kubeconfig(config_dict=config, name="down") as kube:
        with pytest.raises(KubeConnectionError, match=r"^cluster down: GET /api/v1/namespaces: "):
            await kube.list(NAMESPACES)


async def test_namespaced_kind_without_a_namespace_is_refused(client: ClusterClient) -> None:
    with pytest.raises(ValueError, match="configmaps is namespaced"):
        await client.get(CONFIG_MAPS, "x")


EXEC_PLUGIN = """
import json, os, sys
with open(os.environ["CALLS_FILE"], "a") as calls:
    calls.write("call\\n")
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1",
    "kind": "ExecCredential",
    "status": {"token": os.environ["TOKEN"], "expirationTimestamp": os.environ["EXPIRES"]},
}))
"""


def exec_kubeconfig(
    server: EmbeddedAPIServer, tmp_path: Path, expires: str, plugin: str | None = None
) -> tuple[dict[str, Any], Path]:
    """A kubeconfig whose user runs `plugin` (EXEC_PLUGIN by default) and the file each run of it is counted in."""
    script = tmp_path / "plugin.py"
    script.write_text(plugin or EXEC_PLUGIN)
    calls = tmp_path / "calls"
    config = build_kubeconfig([server.kubeconfig_entry()])
    config["users"][0]["user"] = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(script)],
            "env": [
                {"name": "CALLS_FILE", "value": str(calls)},
                {"name": "EXPIRES", "value": expires},
                {"name": "TOKEN", "value": server.token},
            ],
            "interactiveMode": "Never",
        }
    }
    return config, calls


@pytest.mark.parametrize(
    ("expires", "runs_after_three_requests"), [("2999-01-01T00:00:00Z", 1), ("2000-01-01T00:00:00Z", 4)]
)
async def test_an_exec_credential_is_rerun_only_once_it_expires(
    server: EmbeddedAPIServer, tmp_path: Path, expires: str, runs_after_three_requests: int
) -> None:
    config, calls = exec_kubeconfig(server, tmp_path, expires)
    async with await ClusterClient.from_kubeconfig(config_dict=config, name="exec") as kube:
        assert kube.configuration.api_key["BearerToken"] == f"Bearer {server.token}"
        for _ in range(3):
            await kube.get(NAMESPACES, "default")
    assert calls.read_text().count("call") == runs_after_three_requests


async def test_a_401_re_runs_the_exec_plugin_once_and_retries_the_request(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    config, calls = exec_kubeconfig(server, tmp_path, "2999-01-01T00:00:00Z")  # never expires by itself
    async with await ClusterClient.from_kubeconfig(config_dict=config, name="exec") as kube:
        server.faults.fail_next(1, 401, method="GET", path_contains="/namespaces/default")
        assert (await kube.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
        server.faults.fail_next(2, 401, method="GET", path_contains="/namespaces/default")
        with pytest.raises(KubeAPIError) as refused:  # a second 401 in a row is the answer: no retry loop
            await kube.get(NAMESPACES, "default")
        assert refused.value.status == 401
    assert calls.read_text().count("call") == 3  # loading, then one refresh per 401 answered first


async def test_a_watch_answered_401_re_runs_the_exec_plugin_so_the_next_watch_gets_through(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    config, calls = exec_kubeconfig(server, tmp_path, "2999-01-01T00:00:00Z")  # never expires by itself
    async with await ClusterClient.from_kubeconfig(config_dict=config, name="exec") as kube:
        rv = (await kube.list(CONFIG_MAPS, "default"))["metadata"]["resourceVersion"]
        query = {"resourceVersion": rv, "timeoutSeconds": "1"}
        server.faults.fail_next(1, 401, method="GET", path_contains="/configmaps", include_watches=True)
        with pytest.raises(KubeAPIError) as refused:  # a watch is not retried in place: its caller watches again
            _ = [e async for e in kube.watch(CONFIG_MAPS.path("default"), query)]
        assert refused.value.status == 401
        assert str(refused.value).startswith("cluster exec: GET /api/v1/namespaces/default/configmaps (watch): 401")
        assert calls.read_text().count("call") == 2  # loading, then the refresh the 401 asked for
        await kube.create(CONFIG_MAPS, configmap("after"))
        events = [e async for e in kube.watch(CONFIG_MAPS.path("default"), query)]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "after")]
    assert calls.read_text().count("call") == 2


FAILING_AFTER_FIRST_RUN = """
import json, os, sys
with open(os.environ["CALLS_FILE"], "a+") as calls:
    calls.seek(0)
    earlier = calls.read().count("call")
    calls.write("call\\n")
if earlier:
    print("the identity provider is down", file=sys.stderr)
    sys.exit(1)
print(json.dumps({
    "apiVersion": "client.authentication.k8s.io/v1",
    "kind": "ExecCredential",
    "status": {"token": os.environ["TOKEN"], "expirationTimestamp": os.environ["EXPIRES"]},
}))
"""


async def test_an_exec_plugin_failing_on_refresh_is_a_kubeconfig_error_naming_the_cluster(
    server: EmbeddedAPIServer, tmp_path: Path
) -> None:
    config, calls = exec_kubeconfig(server, tmp_path, "2999-01-01T00:00:00Z", FAILING_AFTER_FIRST_RUN)
    async with await ClusterClient.from_kubeconfig(config_dict=config, name="exec") as kube:
        server.faults.fail_next(1, 401, method="GET", path_contains="/namespaces/default")
        with pytest.raises(KubeConfigError) as failed:
            await kube.get(NAMESPACES, "default")
    assert str(failed.value).startswith("cluster exec: exec credential plugin failed: ")
    assert calls.read_text().count("call") == 2
