"""Rules kube-apiserver applies to built-in kinds beyond ObjectMeta (each also a scenario of docs/fidelity.md):
immutable ConfigMaps and Secrets, a Secret's write-only stringData, approval of CRDs in protected groups, and the
namespace of a core/v1 Event."""

from __future__ import annotations

import base64
from typing import Any

from tests.support import RawClient, widget_crd

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
MERGE = "application/merge-patch+json"


def causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def test_an_immutable_configmap_keeps_its_data_and_stays_immutable(raw: RawClient) -> None:
    created = await raw.post(
        CONFIGMAPS, {"metadata": {"name": "frozen"}, "data": {"a": "1"}, "binaryData": {"b": "MQ=="}, "immutable": True}
    )
    assert created.status == 201, created.body
    changed = await raw.patch(CONFIGMAPS + "/frozen", {"data": {"a": "2"}, "binaryData": {"b": "Mg=="}}, MERGE)
    assert changed.status == 422
    assert changed.body["message"] == (
        'ConfigMap "frozen" is invalid: [data: Forbidden: field is immutable when `immutable` is set, '
        "binaryData: Forbidden: field is immutable when `immutable` is set]"
    )
    thawed = await raw.patch(CONFIGMAPS + "/frozen", {"immutable": False}, MERGE)
    assert thawed.status == 422
    assert causes(thawed.body) == [("immutable", "Forbidden: field is immutable when `immutable` is set")]
    labelled = await raw.patch(CONFIGMAPS + "/frozen", {"metadata": {"labels": {"seen": "yes"}}}, MERGE)
    assert labelled.status == 200, "metadata of an immutable ConfigMap still changes"
    assert (await raw.get(CONFIGMAPS + "/frozen")).body["data"] == {"a": "1"}


async def test_a_mutable_configmap_may_become_immutable(raw: RawClient) -> None:
    assert (await raw.post(CONFIGMAPS, {"metadata": {"name": "thaw"}, "data": {"a": "1"}})).status == 201
    frozen = await raw.patch(CONFIGMAPS + "/thaw", {"data": {"a": "2"}, "immutable": True}, MERGE)
    assert frozen.status == 200, frozen.body
    assert frozen.body["data"] == {"a": "2"}


async def test_a_secrets_string_data_is_folded_into_data(raw: RawClient) -> None:
    created = await raw.post(
        SECRETS, {"metadata": {"name": "s1"}, "data": {"token": "b2xk", "keep": "MQ=="}, "stringData": {"token": "new"}}
    )
    assert created.status == 201, created.body
    assert "stringData" not in created.body
    assert created.body["data"] == {"token": base64.b64encode(b"new").decode(), "keep": "MQ=="}
    assert created.body["type"] == "Opaque"


async def test_an_immutable_secret_refuses_data_changes_and_no_secret_changes_type(raw: RawClient) -> None:
    created = await raw.post(SECRETS, {"metadata": {"name": "s2"}, "data": {"k": "MQ=="}, "immutable": True})
    assert created.status == 201, created.body
    changed = await raw.patch(SECRETS + "/s2", {"stringData": {"k": "2"}}, MERGE)
    assert changed.status == 422
    assert causes(changed.body) == [("data", "Forbidden: field is immutable when `immutable` is set")]
    assert (await raw.post(SECRETS, {"metadata": {"name": "s3"}, "data": {"k": "MQ=="}})).status == 201
    retyped = await raw.patch(SECRETS + "/s3", {"type": "example.com/custom"}, MERGE)
    assert retyped.status == 422
    assert causes(retyped.body) == [("type", 'Invalid value: "example.com/custom": field is immutable')]


def protected_crd(group: str, approval: str | None) -> dict[str, Any]:
    crd = widget_crd(group=group, plural="gadgets")
    if approval is not None:
        crd["metadata"]["annotations"] = {"api-approved.kubernetes.io": approval}
    return crd


async def test_a_crd_in_a_protected_group_needs_the_approval_annotation(raw: RawClient) -> None:
    missing = await raw.post(CRDS, protected_crd("missing.k8s.io", None))
    assert missing.status == 422
    assert causes(missing.body) == [
        (
            "metadata.annotations[api-approved.kubernetes.io]",
            'Required value: protected groups must have approval annotation "api-approved.kubernetes.io", '
            "see https://github.com/kubernetes/enhancements/pull/1111",
        )
    ]
    bad = await raw.post(CRDS, protected_crd("bad.kubernetes.io", "soon"))
    assert bad.status == 422
    assert causes(bad.body)[0][1].startswith('Invalid value: "soon": protected groups must have approval annotation')
    for group, approval in (("url.k8s.io", "https://example.com/pull/1"), ("bypass.k8s.io", "unapproved, testing")):
        accepted = await raw.post(CRDS, protected_crd(group, approval))
        assert accepted.status == 201, (group, accepted.body)
    assert (await raw.post(CRDS, protected_crd("example.com", None))).status == 201, "other groups need nothing"


def core_event(name: str, involved_namespace: str, **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "involvedObject": {"kind": "Node", "name": "n1", "namespace": involved_namespace},
        "reason": "Tested",
        "type": "Normal",
        **extra,
    }


async def test_a_core_event_lives_in_the_namespace_of_what_it_is_about(raw: RawClient) -> None:
    elsewhere = await raw.post("/api/v1/namespaces/kube-public/events", core_event("e1", ""))
    assert elsewhere.status == 422
    assert causes(elsewhere.body) == [("involvedObject.namespace", 'Invalid value: "": does not match event.namespace')]
    mismatch = await raw.post("/api/v1/namespaces/default/events", core_event("e2", "kube-public"))
    assert mismatch.status == 422
    assert (await raw.post("/api/v1/namespaces/default/events", core_event("e3", ""))).status == 201
    timed = core_event("e4", "", eventTime="2026-01-01T00:00:00.000000Z", reportingComponent="t", reportingInstance="i")
    assert (await raw.post("/api/v1/namespaces/kube-system/events", timed)).status == 201
    assert (await raw.post("/api/v1/namespaces/kube-public/events", timed)).status == 422
