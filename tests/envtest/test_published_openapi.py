"""The pinned capture of kube-apiserver's built-in schemas (`omectl/sim/apiserver/published-openapi.json.gz`) is
what the real server of `make envtest` publishes, and custom resources are published as it publishes them."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from omectl.envtest import EnvtestBinaries, RealAPIServer
from omectl.sim.apiserver import published_openapi
from omectl.sim.apiserver.openapi import builtin_schema_roots, openapi_v3_document, served_gv_paths
from omectl.sim.apiserver.openapi_v2 import swagger_document
from omectl.sim.apiserver.registry import builtin_types, types_from_crd
from omectl.sim.fleet import BackgroundFleet, manifest_documents

from .conftest import CRDS

pytestmark = [pytest.mark.xdist_group("envtest")]


async def real_documents(server: RealAPIServer, gv_paths: list[str]) -> dict[str, dict[str, Any]]:
    headers = {"Authorization": f"Bearer {server.token}", "Accept": "application/json"}
    docs = {}
    async with aiohttp.ClientSession(headers=headers) as session:
        for gv_path in gv_paths:
            async with session.get(f"{server.url}/openapi/v3/{gv_path}", ssl=server.ssl_context()) as reply:
                assert reply.status == 200, gv_path
                docs[gv_path] = await reply.json()
    return docs


def test_the_capture_is_what_the_real_server_publishes(
    real_fleet: BackgroundFleet, envtest_binaries: EnvtestBinaries
) -> None:
    server = real_fleet.fleet.servers[0]
    docs = real_fleet.run(real_documents(server, served_gv_paths(builtin_types())))
    fresh = published_openapi.extract(docs.values(), builtin_schema_roots(), envtest_binaries.kube_version)
    assert published_openapi.kubernetes_version() == envtest_binaries.kube_version
    assert sorted(fresh["schemas"]) == sorted(published_openapi.schemas())
    stale = [name for name, schema in fresh["schemas"].items() if published_openapi.schemas()[name] != schema]
    assert not stale, f"re-run scripts/capture_published_openapi.py: {stale[:5]}"


def test_custom_resource_schemas_are_published_as_the_real_server_publishes_them(real_fleet: BackgroundFleet) -> None:
    """Every kind of our CRDs, and the meta types its document references, as apiextensions-apiserver builds them."""
    crds = [doc for doc in manifest_documents([CRDS]) if doc.get("kind") == "CustomResourceDefinition"]
    types = builtin_types() + [rt for crd in crds for rt in types_from_crd(crd)]
    custom = sorted({p for p in served_gv_paths(types) if p not in served_gv_paths(builtin_types())})
    assert custom
    real = real_fleet.run(real_documents(real_fleet.fleet.servers[0], custom))
    for gv_path in custom:
        ours = openapi_v3_document(types, gv_path)
        assert ours is not None
        assert without_delete_options_kinds(ours) == without_delete_options_kinds(real[gv_path]), gv_path
        assert ours["info"] == real[gv_path]["info"]


SCALE = tuple(f"io.k8s.api.autoscaling.v1.{kind}" for kind in ("Scale", "ScaleSpec", "ScaleStatus"))


def without_delete_options_kinds(doc: dict[str, Any]) -> dict[str, Any]:
    """The document's schemas, less what differs and why: the group-versions DeleteOptions is registered in (a
    CRD's document lists those of the server's scheme, the capture those of the built-in documents), and the
    autoscaling Scale schemas of a CRD's scale subresource, which the embedded server does not serve."""
    schemas = {name: schema for name, schema in doc["components"]["schemas"].items() if name not in SCALE}
    delete_options = f"{published_openapi.META}.DeleteOptions"
    schemas[delete_options] = {
        k: v for k, v in schemas[delete_options].items() if k != "x-kubernetes-group-version-kind"
    }
    return schemas


async def real_swagger(server: RealAPIServer) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {server.token}", "Accept": "application/json"}
    async with (
        aiohttp.ClientSession(headers=headers) as session,
        session.get(f"{server.url}/openapi/v2", ssl=server.ssl_context()) as reply,
    ):
        assert reply.status == 200
        swagger: dict[str, Any] = await reply.json()
        return swagger


def test_v2_definitions_are_those_the_real_server_serves(real_fleet: BackgroundFleet) -> None:
    """Every definition of our /openapi/v2, built-in or from our CRDs, as kube-apiserver writes it for v2."""
    crds = [doc for doc in manifest_documents([CRDS]) if doc.get("kind") == "CustomResourceDefinition"]
    types = builtin_types() + [rt for crd in crds for rt in types_from_crd(crd)]
    ours = swagger_document(d for p in served_gv_paths(types) if (d := openapi_v3_document(types, p)))
    real = real_fleet.run(real_swagger(real_fleet.fleet.servers[0]))["definitions"]
    assert set(ours["definitions"]) <= set(real)
    different = [name for name, schema in ours["definitions"].items() if schema != real[name]]
    assert different == [], different[:5]
