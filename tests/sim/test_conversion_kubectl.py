"""A CRD converted by a webhook, as the real kubectl sees it on the embedded server: kubectl reads the preferred
version (v2, converted from the stored v1), names a version explicitly, applies in v2, and prints the conversion
failure kube-apiserver answers (the fidelity scenarios `conversion-webhook*` compare the same steps with the real
server)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import yaml

from tests.conversion_webhook import GROUP, REFUSE_LABEL, ConversionWebhook, gizmo, gizmo_crd
from tests.support import Kubectl

pytestmark = pytest.mark.kubectl

V1 = f"gizmos.v1.{GROUP}"
V2 = f"gizmos.v2.{GROUP}"


@pytest.fixture
async def gizmos(kubectl: Kubectl) -> AsyncIterator[ConversionWebhook]:
    hook = await ConversionWebhook().start()
    await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(gizmo_crd(hook.client_config())))
    yield hook
    await hook.stop()


async def test_kubectl_reads_and_writes_either_version(kubectl: Kubectl, gizmos: ConversionWebhook) -> None:
    _, out, _ = await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(gizmo("v2", "g", 3)))
    assert out == "gizmo.conv.example.com/g created\n"
    _, out, _ = await kubectl.arun("get", "gizmos")  # the preferred version, v2, with its printer column
    assert out.splitlines()[0].split() == ["NAME", "REPLICAS"]
    assert out.splitlines()[1].split() == ["g", "3"]
    _, out, _ = await kubectl.arun("get", V1)
    assert out.splitlines()[0].split() == ["NAME", "SIZE"]
    _, out, _ = await kubectl.arun("get", V1, "g", "-o", "jsonpath={.apiVersion} {.spec.size} {.spec.tier}")
    assert out == "conv.example.com/v1 3 from-v2"
    _, out, _ = await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(gizmo("v2", "g", 3)))
    assert out == "gizmo.conv.example.com/g unchanged\n"
    _, out, _ = await kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(gizmo("v2", "g", 5)))
    assert out == "gizmo.conv.example.com/g configured\n"
    _, out, _ = await kubectl.arun(
        "patch", V2, "g", "--subresource=status", "--type=merge", "-p", '{"status":{"phase":"Up"}}'
    )
    assert out == "gizmo.conv.example.com/g patched\n"
    _, out, _ = await kubectl.arun("get", V1, "g", "-o", "jsonpath={.spec.size} {.status.phase}")
    assert out == "5 Up"


async def test_kubectl_server_side_apply_in_the_non_storage_version(
    kubectl: Kubectl, gizmos: ConversionWebhook
) -> None:
    manifest = yaml.safe_dump(gizmo("v2", "g", 2))
    _, out, _ = await kubectl.arun("apply", "--server-side", "-f", "-", input=manifest)
    assert out == "gizmo.conv.example.com/g serverside-applied\n"
    _, out, _ = await kubectl.arun("get", V1, "g", "-o", "jsonpath={.spec.size}")
    assert out == "2"


async def test_kubectl_prints_the_conversion_failure(kubectl: Kubectl, gizmos: ConversionWebhook) -> None:
    refused = gizmo("v1", "r", 1, labels={REFUSE_LABEL: "true"})
    await kubectl.arun("create", "-f", "-", input=yaml.safe_dump(refused))
    rc, out, err = await kubectl.arun("get", V2, "r", check=False)
    assert (rc, out) == (1, "")
    assert err == (
        "Error from server: conversion webhook for conv.example.com/v1, Kind=Gizmo failed: conversion refused for r\n"
    )
    _, out, _ = await kubectl.arun("get", V1, "r", "-o", "name")
    assert out == "gizmo.conv.example.com/r\n"


async def test_kubectl_validates_in_the_version_it_writes(kubectl: Kubectl, gizmos: ConversionWebhook) -> None:
    rc, _, err = await kubectl.arun("create", "-f", "-", input=yaml.safe_dump(gizmo("v2", "g", 7)), check=False)
    assert rc == 1
    assert err == (
        'The Gizmo "g" is invalid: spec.replicas: Invalid value: 7: spec.replicas in body should be less than or '
        "equal to 5\n"
    )
    assert gizmos.reviews == []
