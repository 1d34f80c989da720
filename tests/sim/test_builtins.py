"""Built-in kinds are served with the generic object rules; cluster-scoped custom resources; history window."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from omectl.sim.apiserver.server import EmbeddedAPIServer
from tests.support import RawClient, widget_crd

POD_TEMPLATE = {
    "metadata": {"labels": {"app": "x"}},
    "spec": {"containers": [{"name": "main", "image": "registry.example/app:1"}], "restartPolicy": "Never"},
}
DEPLOYMENT_SPEC = {"replicas": 1, "selector": {"matchLabels": {"app": "x"}}, "template": POD_TEMPLATE}

BUILTINS: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces/default/secrets", {"apiVersion": "v1", "kind": "Secret", "data": {"k": "dg=="}}),
    ("/api/v1/namespaces/default/services", {"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}}),
    (
        "/api/v1/namespaces/default/persistentvolumeclaims",
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {"accessModes": ["ReadWriteOnce"]}},
    ),
    ("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {"gpu": "h100"}}}),
    (
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"holderIdentity": "a"}},
    ),
    (
        "/apis/apps/v1/namespaces/default/deployments",
        {"apiVersion": "apps/v1", "kind": "Deployment", "spec": DEPLOYMENT_SPEC},
    ),
    (
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": {"a": 1}},
    ),
    (
        "/apis/batch/v1/namespaces/default/jobs",
        {"apiVersion": "batch/v1", "kind": "Job", "spec": {"completions": 1, "template": POD_TEMPLATE}},
    ),
]


@pytest.mark.parametrize(("path", "body"), BUILTINS, ids=[b["kind"] for _, b in BUILTINS])
async def test_builtin_kind_round_trip(raw: RawClient, path: str, body: dict[str, Any]) -> None:
    obj = {**body, "metadata": {**body.get("metadata", {}), "name": "x1"}}
    created = await raw.post(path, obj)
    assert created.status == 201, created.body
    assert created.body["kind"] == body["kind"]
    fetched = await raw.get(path + "/x1")
    assert fetched.body["metadata"]["uid"] == created.body["metadata"]["uid"]
    listed = await raw.get(path)
    assert listed.body["kind"] == body["kind"] + "List"
    assert [i["metadata"]["name"] for i in listed.body["items"]] == ["x1"]
    # built-ins allow unconditional updates (no resourceVersion in the body)
    update = {**obj, "metadata": {**obj["metadata"], "labels": {"touched": "yes"}}}
    updated = await raw.put(path + "/x1", update)
    assert updated.status == 200, updated.body
    assert updated.body["metadata"]["labels"]["touched"] == "yes"
    assert (await raw.delete(path + "/x1")).status == 200
    assert (await raw.get(path + "/x1")).status == 404


async def test_deployment_generation_follows_spec_changes(raw: RawClient) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    await raw.post(
        path, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": DEPLOYMENT_SPEC}
    )
    scaled = await raw.patch(path + "/d", {"spec": {"replicas": 2}}, "application/strategic-merge-patch+json")
    assert scaled.body["metadata"]["generation"] == 2
    status = await raw.patch(path + "/d/status", {"status": {"availableReplicas": 2}}, "application/merge-patch+json")
    assert status.body["metadata"]["generation"] == 2
    assert status.body["status"] == {"availableReplicas": 2}


async def test_a_workload_quantity_that_does_not_parse_is_a_bad_request(raw: RawClient) -> None:
    container = {"name": "main", "image": "registry.example/app:1", "resources": {"limits": {"cpu": "lots"}}}
    template = {**POD_TEMPLATE, "spec": {"containers": [container]}}
    reply = await raw.post(
        "/apis/apps/v1/namespaces/default/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "lots"},
            "spec": {**DEPLOYMENT_SPEC, "template": template},
        },
    )
    assert (reply.status, reply.body["reason"]) == (400, "BadRequest")
    assert reply.body["message"] == (
        'Deployment in version "v1" cannot be handled as a Deployment: quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    for good in ("500m", "1.5", "2Gi", "1e3", 4):
        ok = {**container, "resources": {"requests": {"cpu": good}}}
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"q-{str(good).lower().replace('.', '-')}"}}
        created = await raw.post("/api/v1/namespaces/default/pods", {**pod, "spec": {"containers": [ok]}})
        assert created.status == 201, (good, created.body)


async def test_a_workload_needs_containers_with_names_and_images_and_a_matching_selector(raw: RawClient) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments"
    no_image = {**POD_TEMPLATE, "spec": {"containers": [{"name": "main"}, {"image": "registry.example/b:1"}]}}
    reply = await raw.post(
        path,
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "bad"},
            "spec": {**DEPLOYMENT_SPEC, "template": no_image},
        },
    )
    assert reply.status == 422
    assert [(c["field"], c["message"]) for c in reply.body["details"]["causes"]] == [
        ("spec.template.spec.containers[0].image", "Required value"),
        ("spec.template.spec.containers[1].name", "Required value"),
    ]
    mismatch = {**DEPLOYMENT_SPEC, "selector": {"matchLabels": {"app": "other"}}}
    reply = await raw.post(
        path, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mm"}, "spec": mismatch}
    )
    assert reply.status == 422
    assert reply.body["message"] == (
        'Deployment.apps "mm" is invalid: spec.template.metadata.labels: Invalid value: {"app":"x"}: '
        "`selector` does not match template `labels`"
    )
    bare = await raw.post(
        "/api/v1/namespaces/default/pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare"}}
    )
    assert [c["field"] for c in bare.body["details"]["causes"]] == ["spec.containers"]


@pytest.mark.parametrize(
    ("ports", "message"),
    [
        ([], "spec.ports: Required value"),
        ([{"port": 0}], "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"),
        (
            [{"port": 80, "targetPort": 70000}],
            "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            [{"port": 80, "protocol": "FOO"}],
            'spec.ports[0].protocol: Unsupported value: "FOO": supported values: "SCTP", "TCP", "UDP"',
        ),
        ([{"port": 80}, {"port": 81}], "spec.ports[0].name: Required value"),
        ([{"name": "a", "port": 80}, {"name": "a", "port": 81}], 'spec.ports[1].name: Duplicate value: "a"'),
    ],
)
async def test_a_service_needs_ports_in_range_named_when_several(
    raw: RawClient, ports: list[dict[str, Any]], message: str
) -> None:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"}, "spec": {"ports": ports}}
    reply = await raw.post("/api/v1/namespaces/default/services", body)
    assert (reply.status, reply.body["reason"]) == (422, "Invalid"), reply.body
    assert message in reply.body["message"]
    headless = {**body, "spec": {"clusterIP": "None", "ports": []}}
    assert (await raw.post("/api/v1/namespaces/default/services", headless)).status == 201


async def test_cluster_scoped_custom_resources(raw: RawClient) -> None:
    crd = widget_crd(plural="gizmos", scope="Cluster")
    assert (await raw.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)).status == 201
    body = {"apiVersion": "example.com/v1", "kind": "Gizmo", "metadata": {"name": "g1", "namespace": "ignored"}}
    created = await raw.post("/apis/example.com/v1/gizmos", body)
    assert created.status == 201
    assert "namespace" not in created.body["metadata"]
    assert (await raw.get("/apis/example.com/v1/gizmos/g1")).status == 200
    assert (await raw.get("/apis/example.com/v1/namespaces/default/gizmos")).status == 404


async def test_resume_below_the_history_window_is_expired() -> None:
    async with EmbeddedAPIServer("small", history_window=5) as server:
        import aiohttp

        async with aiohttp.ClientSession(headers=server.auth_headers) as session:
            raw = RawClient(server.url, session)
            path = "/api/v1/namespaces/default/configmaps"
            first = await raw.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c0"}})
            for i in range(1, 15):
                await raw.post(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"}})
            rv = first.body["metadata"]["resourceVersion"]
            resp = await session.get(server.url + path + f"?watch=true&resourceVersion={rv}")
            event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 5))
            assert event["type"] == "ERROR"
            assert event["object"]["code"] == 410
            resp.close()
            recent = server.api.store.rv - 2
            resp = await session.get(server.url + path + f"?watch=true&resourceVersion={recent}")
            event = orjson.loads(await asyncio.wait_for(resp.content.readline(), 5))
            assert event["type"] == "ADDED"
            assert int(event["object"]["metadata"]["resourceVersion"]) == recent + 1
            resp.close()
