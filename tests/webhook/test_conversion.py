"""The conversion webhook of the AIM kinds served at v1alpha1 and v1alpha2: ConversionReview v1 over TLS at
`/convert/<cluster>`, and the CRDs' clientConfig kept by the holder of each cluster's ownership Lease (installed,
put back after a re-apply, left in place on a clean stop, re-pointed at the next owner on an --ha handover).

The controllers run in-process against embedded API servers (tests/webhook/test_ownership.py's fleet: every CRD of
deploy/crds), which call the conversion webhook as kube-apiserver does; requests go over real HTTP.
"""

from __future__ import annotations

import base64
import copy
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from omectl.api import crdgen
from omectl.controller.app import ControllerApp
from omectl.core.aim.versions import carried_annotation
from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import apply_document
from omectl.tls import client_ssl_context
from omectl.webhook.conversion import conversion_answer
from omectl.webhook.conversion_keeper import conversion_of
from tests.webhook.test_ownership import CRDS, NS, Fleet, two_clusters

CRD = ("apiextensions.k8s.io", "customresourcedefinitions")
ARTIFACTS = "aimartifacts.aim.eai.amd.com"
CONVERTED = sorted(d.name for d in crdgen.converted_crds())
V1 = "aim.eai.amd.com/v1alpha1"
V2 = "aim.eai.amd.com/v1alpha2"


def artifact(version: str, name: str = "tiny", **spec: Any) -> dict[str, Any]:
    body = {"sourceUri": "hf://sshleifer/tiny-gpt2", "size": "100Mi", **spec}
    return {
        "apiVersion": version,
        "kind": "AIMArtifact",
        "metadata": {"name": name, "namespace": "default"},
        "spec": body,
    }


def review(desired: str, *objects: dict[str, Any]) -> dict[str, Any]:
    request = {"uid": str(uuid.uuid4()), "desiredAPIVersion": desired, "objects": list(objects)}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview", "request": request}


async def post_review(app: ControllerApp, cluster: str, body: Any) -> tuple[int, Any]:
    assert app.webhook.ca_pem is not None
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            app.webhook.conversion_url(cluster), data=json.dumps(body), ssl=client_ssl_context(app.webhook.ca_pem)
        ) as reply,
    ):
        return reply.status, await reply.json()


async def call(server: EmbeddedAPIServer, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    async with (
        aiohttp.ClientSession(headers=server.auth_headers) as session,
        session.request(method, f"{server.url}{path}", json=body) as reply,
    ):
        return reply.status, await reply.json()


def artifacts_path(version: str, name: str | None = None) -> str:
    return f"/apis/{version}/namespaces/default/aimartifacts" + (f"/{name}" if name else "")


def conversion_url(fleet: Fleet, cluster: str, crd: str = ARTIFACTS) -> str | None:
    conversion = conversion_of(fleet.sim[cluster].api.store.get(CRD, "", crd)) or {}
    url: str | None = conversion.get("webhook", {}).get("clientConfig", {}).get("url")
    return url


def pointed_at(fleet: Fleet, app: ControllerApp) -> bool:
    return all(
        conversion_url(fleet, s.name, crd) == app.webhook.conversion_url(s.name)
        for s in fleet.servers
        for crd in CONVERTED
    )


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[Fleet]:
    async with two_clusters(tmp_path) as f:
        yield f


# --- the ConversionReview exchange ------------------------------------------------------------------------------


def test_a_review_is_answered_with_every_object_converted_and_the_request_uid() -> None:
    sent = review(V2, artifact(V1, "a"), artifact(V1, "b", imagePullSecrets=[{"name": "pull"}]))
    answer = conversion_answer(sent)
    assert answer["apiVersion"] == "apiextensions.k8s.io/v1" and answer["kind"] == "ConversionReview"
    response = answer["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert response["result"] == {"status": "Success"}
    a, b = response["convertedObjects"]
    assert (a["apiVersion"], a["spec"]) == (V2, {"sourceUri": "hf://sshleifer/tiny-gpt2", "size": "100Mi"})
    assert json.loads(b["metadata"]["annotations"][carried_annotation("v1alpha1")]) == {
        "spec": {"imagePullSecrets": [{"name": "pull"}]}
    }


def test_an_object_that_cannot_be_converted_fails_the_review_with_the_reason() -> None:
    profile = {"apiVersion": V1, "kind": "AIMProfile", "metadata": {"name": "s"}}
    response = conversion_answer(review(V2, artifact(V1), profile))["response"]
    assert response["result"]["status"] == "Failure"
    assert response["result"]["message"].startswith("omectl converts no 'AIMProfile' objects")
    assert "convertedObjects" not in response


async def test_the_webhook_server_answers_reviews_over_tls_and_refuses_what_is_no_review(fleet: Fleet) -> None:
    app = await fleet.start("solo")
    cluster = fleet.servers[0].name
    status, answer = await post_review(app, cluster, review(V1, artifact(V2)))
    assert status == 200
    assert answer["response"]["convertedObjects"][0]["apiVersion"] == V1
    status, answer = await post_review(app, cluster, {"kind": "AdmissionReview"})
    assert status == 400
    assert answer == {
        "error": "the request body is not a ConversionReview (apiextensions.k8s.io/v1 or apiextensions.k8s.io/v1beta1)"
    }


# --- the CRDs' clientConfig, kept by the owner --------------------------------------------------------------------


async def test_the_owner_points_the_crds_at_its_webhook_and_both_versions_read_one_stored_object(fleet: Fleet) -> None:
    generated = yaml.safe_load((CRDS / f"aim.eai.amd.com_{ARTIFACTS.split('.')[0]}.yaml").read_text())
    assert conversion_of(generated) == crdgen.conversion_webhook(crdgen.CONVERSION_PLACEHOLDER_URL)
    app = await fleet.start("solo")
    await fleet.until(lambda: pointed_at(fleet, app), "every converted CRD points at the owner's webhook")
    server = fleet.servers[0]
    stored_crd = server.api.store.get(CRD, "", ARTIFACTS)
    assert app.webhook.ca_pem is not None
    ca_bundle = base64.b64encode(app.webhook.ca_pem).decode()
    assert conversion_of(stored_crd) == crdgen.conversion_webhook(app.webhook.conversion_url(server.name), ca_bundle)
    # created in upstream's version: stored once, in v1alpha2, and read back in both
    sent = artifact(V1, imagePullSecrets=[{"name": "pull"}])
    status, created = await call(server, "POST", artifacts_path(V1), sent)
    assert status == 201, created
    assert created["spec"] == {**sent["spec"], "modelDownloadImage": "ghcr.io/silogen/aim-artifact-downloader:0.2.0"}
    stored = server.api.store.get(("aim.eai.amd.com", "aimartifacts"), "default", "tiny")
    assert stored is not None and stored["apiVersion"] == V2
    assert stored["spec"] == {
        "sourceUri": "hf://sshleifer/tiny-gpt2",
        "size": "100Mi",
        "downloadImage": "ghcr.io/silogen/aim-artifact-downloader:0.2.0",
    }
    assert json.loads(stored["metadata"]["annotations"][carried_annotation("v1alpha1")]) == {
        "spec": {"imagePullSecrets": [{"name": "pull"}]}
    }
    status, v1 = await call(server, "GET", artifacts_path(V1, "tiny"))
    assert status == 200 and v1["spec"] == created["spec"]
    assert "annotations" not in v1["metadata"]
    status, v2 = await call(server, "GET", artifacts_path(V2, "tiny"))
    assert status == 200 and v2["spec"] == stored["spec"]


async def test_a_reapplied_crd_is_pointed_back_at_the_owner(fleet: Fleet) -> None:
    app = await fleet.start("solo")
    await fleet.until(lambda: pointed_at(fleet, app), "pointed at the owner")
    victim = fleet.servers[0]
    generated = yaml.safe_load((CRDS / "aim.eai.amd.com_aimartifacts.yaml").read_text())
    await apply_document(victim, generated)  # `kubectl apply --server-side --force-conflicts -f deploy/crds/`
    await fleet.until(lambda: conversion_url(fleet, victim.name) == app.webhook.conversion_url(victim.name), "put back")
    assert app.conversion_keepers[victim.name].applied >= 2


async def test_a_clean_stop_leaves_the_crds_pointing_at_it_and_only_the_other_version_fails(fleet: Fleet) -> None:
    app = await fleet.start("solo")
    await fleet.until(lambda: pointed_at(fleet, app), "pointed at the owner")
    server = fleet.servers[0]
    status, _ = await call(server, "POST", artifacts_path(V1), artifact(V1))
    assert status == 201
    url = app.webhook.conversion_url(server.name)
    await app.stop()
    del fleet.apps["solo"]
    assert conversion_url(fleet, server.name) == url, "left as it was: a CRD's conversion cannot be turned off"
    status, stored = await call(server, "GET", artifacts_path(V2, "tiny"))
    assert status == 200 and stored["spec"]["sourceUri"] == "hf://sshleifer/tiny-gpt2"
    status, failed = await call(server, "GET", artifacts_path(V1, "tiny"))
    assert status == 500
    assert failed["message"].startswith(
        f'conversion webhook for aim.eai.amd.com/v1alpha2, Kind=AIMArtifact failed: Post "{url}?timeout=30s": '
    )
    # the next controller takes over and v1alpha1 reads work again
    app = await fleet.start("next")
    await fleet.until(lambda: pointed_at(fleet, app), "pointed at the next controller")
    status, v1 = await call(server, "GET", artifacts_path(V1, "tiny"))
    assert status == 200 and v1["apiVersion"] == V1


async def test_ha_hands_the_crds_over_to_the_next_owner_before_the_lease_goes(fleet: Fleet) -> None:
    hub = EmbeddedAPIServer("conv-hub")
    await hub.start()
    try:
        ha = {"ha": True, "ha_kubeconfig": hub.write_kubeconfig(fleet.tmp / "hub.kc"), "ha_namespace": NS}
        a = await fleet.start("replica-a", **ha)
        b = await fleet.start("replica-b", **ha)

        def owned_by(app: ControllerApp) -> list[str]:
            return [
                s.name for s in fleet.servers if conversion_url(fleet, s.name) == app.webhook.conversion_url(s.name)
            ]

        await fleet.until(lambda: owned_by(a) and owned_by(b), "one cluster each")
        (of_a,) = owned_by(a)
        (of_b,) = owned_by(b)
        await fleet.until(lambda: (r := fleet.lease(of_b)) is not None and r.holder == b.holder.identity, "b holds")
        server = fleet.sim[of_a]
        before = copy.deepcopy(server.api.store.get(CRD, "", ARTIFACTS))
        await a.stop()
        del fleet.apps["replica-a"]
        assert conversion_url(fleet, of_a) == b.webhook.conversion_url(of_a), "re-pointed at b by a, before it left"
        assert conversion_of(before) != conversion_of(server.api.store.get(CRD, "", ARTIFACTS))
        status, created = await call(server, "POST", artifacts_path(V1), artifact(V1, "after-handover"))
        assert status == 201, created
    finally:
        for app in fleet.apps.values():
            await app.stop()
        fleet.apps.clear()
        await hub.stop()


@pytest.mark.parametrize("crd", CONVERTED)
def test_the_member_role_may_keep_exactly_the_converted_crds(crd: str) -> None:
    role_file = CRDS.parents[1] / "deploy" / "member" / "rbac" / "clusterrole.yaml"
    role = next(d for d in yaml.safe_load_all(role_file.read_text()) if d["kind"] == "ClusterRole")
    rules = [r for r in role["rules"] if "customresourcedefinitions" in r["resources"]]
    assert [sorted(r["resourceNames"]) for r in rules] == [CONVERTED]
    assert crd in rules[0]["resourceNames"]
