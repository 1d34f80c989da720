"""The admission webhook server over real HTTPS: the spec's denials, the live fallback, and malformed input.

A real `WebhookServer` with a certificate from `CertificateAuthority` answers AdmissionReviews for one cluster
whose lookups are real informer caches (`ObjectCache`, filled directly) with an in-memory stand-in for the API
server behind the live fallback.
"""

from __future__ import annotations

import base64
import json
import ssl
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omectl.controller.ome.lookup import INHERIT_INDEX, CacheLookup, inherit_index
from omectl.kube.cache import ObjectCache
from omectl.tls import CertificateAuthority, client_ssl_context, server_ssl_context
from omectl.webhook.server import (
    CLUSTER_SERVING_RUNTIME_WEBHOOK,
    INFERENCE_SERVICE_WEBHOOK,
    SERVING_RUNTIME_WEBHOOK,
    ClusterAdmission,
    WebhookServer,
    webhook_configuration,
)

CLUSTER = "wh-1"
SR_PATH = "servingruntime"
CSR_PATH = "clusterservingruntime"
PROFILE_NOT_DISABLED = 'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true'
RuntimeKey = tuple[str, str, str]


def runtime(
    name: str,
    parent: str | None = None,
    *,
    kind: str = "ServingRuntime",
    namespace: str = "llama-demo",
    profile: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "1"}
    if kind == "ServingRuntime":
        meta["namespace"] = namespace
    annotations = {}
    if parent is not None:
        annotations["ome.io/inherit-from"] = parent
    if profile:
        annotations["ome.io/runtime-profile"] = "true"
    if annotations:
        meta["annotations"] = annotations
    body = {"engineConfig": {"runner": {"name": "ome-container"}}, **spec}
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": body}


def cluster_runtime(name: str, parent: str | None = None, **kw: Any) -> dict[str, Any]:
    return runtime(name, parent, kind="ClusterServingRuntime", **kw)


def review_body(obj: Any, *, uid: str | None = None, operation: str = "CREATE") -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {"uid": uid or str(uuid.uuid4()), "operation": operation, "object": obj},
    }


@dataclass
class Webhook:
    """The server under test, a client that trusts its CA, and the cluster state behind its lookups."""

    server: WebhookServer
    session: aiohttp.ClientSession
    serving: ObjectCache
    cluster_serving: ObjectCache
    live: dict[RuntimeKey, dict[str, Any]] = field(default_factory=dict)
    live_calls: list[RuntimeKey] = field(default_factory=list)

    def cache(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            target = self.serving if obj["kind"] == "ServingRuntime" else self.cluster_serving
            target.upsert(json.loads(json.dumps(obj)))

    def admission(self) -> ClusterAdmission:
        async def live_get(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
            self.live_calls.append((kind, namespace, name))
            return self.live.get((kind, namespace, name))

        return ClusterAdmission(lookup=CacheLookup(self.serving, self.cluster_serving), live_get=live_get)

    async def post(self, path: str, body: bytes) -> tuple[int, Any]:
        async with self.session.post(
            self.server.base_url + path, data=body, headers={"Content-Type": "application/json"}
        ) as reply:
            text = await reply.read()
            return reply.status, json.loads(text) if text else None

    async def review(self, obj: Any, kind_path: str = SR_PATH, **kw: Any) -> dict[str, Any]:
        """POST one AdmissionReview; returns its `response` after checking the envelope and the echoed uid."""
        body = review_body(obj, **kw)
        status, answer = await self.post(f"/validate/{CLUSTER}/{kind_path}", json.dumps(body).encode())
        assert status == 200, answer
        assert answer["apiVersion"] == "admission.k8s.io/v1"
        assert answer["kind"] == "AdmissionReview"
        assert answer["response"]["uid"] == body["request"]["uid"]
        response: dict[str, Any] = answer["response"]
        return response


def denial(response: dict[str, Any]) -> str:
    assert response["allowed"] is False, response
    message: str = response["status"]["message"]
    return message


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.generate("webhook-test-ca")


@pytest.fixture
async def webhook(ca: CertificateAuthority) -> AsyncIterator[Webhook]:
    server = WebhookServer("127.0.0.1", 0, server_ssl_context(ca.issue(["127.0.0.1", "localhost"])), ca.cert_pem)
    serving, cluster_serving = ObjectCache(), ObjectCache()
    for cache in (serving, cluster_serving):
        cache.add_index(INHERIT_INDEX, inherit_index)
    await server.start()
    connector = aiohttp.TCPConnector(ssl=client_ssl_context(ca.cert_pem))
    async with aiohttp.ClientSession(connector=connector) as session:
        hook = Webhook(server, session, serving, cluster_serving)
        server.register(CLUSTER, hook.admission)
        try:
            yield hook
        finally:
            await server.stop()


# --- what admission allows and denies --------------------------------------------------------------------------


async def test_a_child_of_a_disabled_profile_is_allowed(webhook: Webhook) -> None:
    webhook.cache(cluster_runtime("sglang-profile", profile=True, disabled=True))
    response = await webhook.review(runtime("sglang-llama-3-2-3b", "sglang-profile", disabled=False))
    assert response["allowed"] is True
    assert "status" not in response
    assert webhook.live_calls == []  # the cache had the parent: no live lookup


async def test_a_runtime_without_a_parent_is_allowed(webhook: Webhook) -> None:
    response = await webhook.review(cluster_runtime("standalone"), CSR_PATH)
    assert response["allowed"] is True


async def test_a_missing_parent_is_denied_with_the_chain_so_far(webhook: Webhook) -> None:
    response = await webhook.review(runtime("sglang-llama-3-2-3b", "sglang-profile"))
    assert denial(response) == 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    assert response["status"]["code"] == 403
    # both places a ServingRuntime's parent may live were asked for before denying
    assert webhook.live_calls == [
        ("ServingRuntime", "llama-demo", "sglang-profile"),
        ("ClusterServingRuntime", "", "sglang-profile"),
    ]


async def test_a_missing_grandparent_is_denied_with_every_runtime_found(webhook: Webhook) -> None:
    webhook.cache(cluster_runtime("mid", "root"))
    response = await webhook.review(runtime("child", "mid"))
    assert denial(response) == 'inherit-from parent "root" not found (chain so far: [child mid])'


async def test_a_runtime_naming_itself_is_a_cycle_of_one(webhook: Webhook) -> None:
    response = await webhook.review(runtime("sglang-llama-3-2-3b", "sglang-llama-3-2-3b"))
    assert denial(response) == "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]"


async def test_a_serving_runtime_naming_a_cluster_runtime_of_its_own_name_is_a_cycle(webhook: Webhook) -> None:
    webhook.cache(cluster_runtime("sglang-llama-3-2-3b"))
    response = await webhook.review(runtime("sglang-llama-3-2-3b", "sglang-llama-3-2-3b"))
    assert denial(response) == "inheritance cycle detected: [sglang-llama-3-2-3b sglang-llama-3-2-3b]"


async def test_an_update_closing_a_loop_of_two_is_a_cycle(webhook: Webhook) -> None:
    # the cache still holds the old `a` (no parent); the update's `a` must be the one the walk sees
    webhook.cache(cluster_runtime("a"), cluster_runtime("b", "a"))
    response = await webhook.review(cluster_runtime("a", "b"), CSR_PATH, operation="UPDATE")
    assert denial(response) == "inheritance cycle detected: [a b a]"


async def test_a_chain_of_six_exceeds_the_max_depth(webhook: Webhook) -> None:
    webhook.cache(*(cluster_runtime(f"r{i}", f"r{i + 1}") for i in range(2, 6)))  # r6 itself does not exist
    response = await webhook.review(runtime("r1", "r2"))
    assert denial(response) == "inheritance chain exceeds max depth 5 (chain so far: [r1 r2 r3 r4 r5 r6])"


async def test_a_chain_of_five_is_within_the_max_depth(webhook: Webhook) -> None:
    webhook.cache(*(cluster_runtime(f"r{i}", f"r{i + 1}") for i in range(2, 5)), cluster_runtime("r5"))
    response = await webhook.review(runtime("r1", "r2"))
    assert response["allowed"] is True


@pytest.mark.parametrize("spec", [{"disabled": False}, {}, {"disabled": "true"}], ids=["false", "absent", "string"])
async def test_a_profile_without_disabled_true_is_denied(webhook: Webhook, spec: dict[str, Any]) -> None:
    response = await webhook.review(cluster_runtime("sglang-profile", profile=True, **spec), CSR_PATH)
    assert denial(response) == PROFILE_NOT_DISABLED


async def test_a_disabled_profile_is_allowed(webhook: Webhook) -> None:
    response = await webhook.review(cluster_runtime("sglang-profile", profile=True, disabled=True), CSR_PATH)
    assert response["allowed"] is True


async def test_a_delete_is_always_allowed(webhook: Webhook) -> None:
    response = await webhook.review(runtime("orphan", "missing"), operation="DELETE")
    assert response["allowed"] is True


# --- the live fallback ---------------------------------------------------------------------------------------


async def test_a_parent_the_cache_has_not_seen_yet_is_found_live(webhook: Webhook) -> None:
    webhook.live[("ClusterServingRuntime", "", "sglang-profile")] = cluster_runtime(
        "sglang-profile", profile=True, disabled=True
    )
    response = await webhook.review(runtime("sglang-llama-3-2-3b", "sglang-profile"))
    assert response["allowed"] is True
    assert ("ClusterServingRuntime", "", "sglang-profile") in webhook.live_calls


async def test_several_missing_ancestors_are_fetched_live_hop_by_hop(webhook: Webhook) -> None:
    webhook.live[("ServingRuntime", "llama-demo", "mid")] = runtime("mid", "root")
    webhook.live[("ClusterServingRuntime", "", "root")] = cluster_runtime("root")
    response = await webhook.review(runtime("child", "mid"))
    assert response["allowed"] is True
    assert ("ServingRuntime", "llama-demo", "mid") in webhook.live_calls
    assert ("ClusterServingRuntime", "", "root") in webhook.live_calls


async def test_a_live_parent_that_closes_a_cycle_is_still_denied(webhook: Webhook) -> None:
    webhook.live[("ClusterServingRuntime", "", "b")] = cluster_runtime("b", "a")
    response = await webhook.review(cluster_runtime("a", "b"), CSR_PATH)
    assert denial(response) == "inheritance cycle detected: [a b a]"


async def test_a_parent_above_a_cluster_runtime_is_fetched_live_in_the_namespace_first(webhook: Webhook) -> None:
    # bridge (cluster) names base; the cache has not seen team-a's own base yet: it is looked up live, first.
    webhook.cache(cluster_runtime("bridge", "base"))
    webhook.live[("ServingRuntime", "llama-demo", "base")] = runtime("base")
    response = await webhook.review(runtime("leaf", "bridge"))
    assert response["allowed"] is True
    assert webhook.live_calls[-1] == ("ServingRuntime", "llama-demo", "base")  # found: the cluster one is not asked


# --- resolution contexts ---------------------------------------------------------------------------------------


async def test_a_cycle_in_one_namespaces_context_is_denied_there_only(webhook: Webhook) -> None:
    # base <- bridge (cluster runtimes); in llama-demo a ServingRuntime `base` naming bridge closes a loop.
    webhook.cache(cluster_runtime("base"), cluster_runtime("bridge", "base"))
    assert denial(await webhook.review(runtime("base", "bridge"))) == "inheritance cycle detected: [base bridge base]"
    webhook.cache(runtime("base", "bridge", namespace="llama-demo"))  # there anyway (created before the webhook)
    assert denial(await webhook.review(runtime("leaf", "bridge"))) == (
        "inheritance cycle detected: [leaf bridge base bridge]"
    )
    assert (await webhook.review(runtime("leaf", "bridge", namespace="team-b")))["allowed"] is True
    assert (await webhook.review(cluster_runtime("bridge", "base"), CSR_PATH))["allowed"] is True


async def test_an_inference_service_naming_a_cluster_runtime_checks_its_cluster_only_chain(webhook: Webhook) -> None:
    # In llama-demo, bridge's chain as a ServingRuntime would see would be broken; the InferenceService names
    # the ClusterServingRuntime itself, whose own chain is cluster-only and resolves.
    webhook.cache(cluster_runtime("base"), cluster_runtime("bridge", "base"), runtime("base", "gone"))
    assert (await webhook.review(inference_service("bridge"), "inferenceservice"))["allowed"] is True
    webhook.cache(runtime("leaf", "bridge"))
    response = await webhook.review(inference_service("leaf"), "inferenceservice")
    assert denial(response) == 'inherit-from parent "gone" not found (chain so far: [leaf bridge base])'


# --- malformed input: a clear denial or a 400, never a 500 --------------------------------------------------


MALFORMED_OBJECTS: list[tuple[str, Any, str]] = [
    ("object-null", None, "the object is not a JSON object"),
    ("object-list", [runtime("x")], "the object is not a JSON object"),
    ("object-string", "ServingRuntime", "the object is not a JSON object"),
    ("metadata-missing", {"kind": "ServingRuntime", "spec": {}}, "metadata.name is required"),
    ("metadata-a-list", {"kind": "ServingRuntime", "metadata": ["x"]}, "metadata.name is required"),
    ("name-empty", {"kind": "ServingRuntime", "metadata": {"name": ""}}, "metadata.name is required"),
    ("name-a-number", {"kind": "ServingRuntime", "metadata": {"name": 7}}, "metadata.name is required"),
    (
        "namespace-a-list",
        {"kind": "ServingRuntime", "metadata": {"name": "x", "namespace": ["a"]}},
        "metadata.namespace must be a string",
    ),
    (
        "annotations-a-list",
        {"kind": "ServingRuntime", "metadata": {"name": "x", "annotations": ["ome.io/inherit-from"]}},
        "metadata.annotations must be a map of strings",
    ),
    (
        "annotation-value-a-number",
        {"kind": "ServingRuntime", "metadata": {"name": "x", "annotations": {"ome.io/inherit-from": 5}}},
        "metadata.annotations must be a map of strings",
    ),
    (
        "spec-a-string",
        {"kind": "ServingRuntime", "metadata": {"name": "x"}, "spec": "disabled"},
        "spec must be an object",
    ),
    (
        "another-kind",
        {"kind": "Pod", "metadata": {"name": "x"}},
        'this webhook validates ServingRuntime objects, not "Pod"',
    ),
]


@pytest.mark.parametrize(("obj", "message"), [m[1:] for m in MALFORMED_OBJECTS], ids=[m[0] for m in MALFORMED_OBJECTS])
async def test_a_malformed_object_gets_a_clear_denial(webhook: Webhook, obj: Any, message: str) -> None:
    response = await webhook.review(obj)
    assert denial(response) == message
    assert response["status"]["code"] == 403


async def test_an_object_without_a_kind_is_validated_as_the_kind_the_path_names(webhook: Webhook) -> None:
    obj = runtime("x", "x")
    del obj["kind"]
    response = await webhook.review(obj)
    assert denial(response) == "inheritance cycle detected: [x x]"


async def test_an_unregistered_cluster_is_denied(webhook: Webhook) -> None:
    body = review_body(runtime("x"), uid="u-1")
    status, answer = await webhook.post(f"/validate/elsewhere/{SR_PATH}", json.dumps(body).encode())
    assert status == 200
    assert answer["response"]["uid"] == "u-1"
    assert denial(answer["response"]) == "cluster 'elsewhere' is not registered with omectl"


async def test_an_unknown_kind_path_is_denied(webhook: Webhook) -> None:
    body = review_body(runtime("x"), uid="u-2")
    status, answer = await webhook.post(f"/validate/{CLUSTER}/pod", json.dumps(body).encode())
    assert status == 200
    assert answer["response"]["uid"] == "u-2"
    assert denial(answer["response"]) == "omectl does not validate pod"


NOT_REVIEWS: list[tuple[str, bytes]] = [
    ("empty", b""),
    ("garbage", b"\xff\xfe not json at all"),
    ("truncated", b'{"request": {"uid": "x"'),
    ("a-list", b"[1, 2, 3]"),
    ("a-string", b'"AdmissionReview"'),
    ("a-number", b"42"),
    ("no-request", b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}'),
    ("request-null", b'{"request": null}'),
    ("request-a-list", b'{"request": ["uid"]}'),
    ("no-uid", b'{"request": {"object": {}}}'),
    ("uid-a-number", b'{"request": {"uid": 5, "object": {}}}'),
    ("uid-an-object", b'{"request": {"uid": {"a": 1}, "object": {}}}'),
    ("random-json", b'{"a": [1, {"b": null}], "c": "d"}'),
]


@pytest.mark.parametrize("body", [b for _, b in NOT_REVIEWS], ids=[name for name, _ in NOT_REVIEWS])
async def test_a_body_that_is_not_an_admission_review_gets_a_400(webhook: Webhook, body: bytes) -> None:
    status, answer = await webhook.post(f"/validate/{CLUSTER}/{SR_PATH}", body)
    assert status == 400
    assert isinstance(answer["error"], str) and answer["error"]


# --- TLS and the configuration clusters are given ------------------------------------------------------------


async def test_a_client_that_does_not_trust_the_ca_cannot_connect(webhook: Webhook) -> None:
    other = client_ssl_context(CertificateAuthority.generate("other-ca").cert_pem)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=other)) as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.post(webhook.server.url_for(CLUSTER, "ServingRuntime"), data=b"{}")


async def test_the_webhook_configuration_reaches_the_server_with_its_ca_bundle(webhook: Webhook) -> None:
    config = webhook_configuration(webhook.server, CLUSTER)
    hooks = {hook["name"]: hook for hook in config["webhooks"]}
    ome_hooks = sorted(name for name in hooks if hooks[name]["rules"][0]["apiGroups"] == ["ome.io"])
    assert ome_hooks == sorted([SERVING_RUNTIME_WEBHOOK, CLUSTER_SERVING_RUNTIME_WEBHOOK, INFERENCE_SERVICE_WEBHOOK])
    assert len(hooks) == 6  # and the three AIM hooks (tests/webhook/test_aim_webhooks.py)
    assert hooks[INFERENCE_SERVICE_WEBHOOK]["rules"][0]["resources"] == ["inferenceservices"]
    assert hooks[SERVING_RUNTIME_WEBHOOK]["rules"][0]["resources"] == ["servingruntimes"]
    assert hooks[CLUSTER_SERVING_RUNTIME_WEBHOOK]["rules"][0]["resources"] == ["clusterservingruntimes"]
    client_config = hooks[SERVING_RUNTIME_WEBHOOK]["clientConfig"]
    # what a cluster does with it: trust only the bundle, call the URL
    trust = ssl.create_default_context(cadata=base64.b64decode(client_config["caBundle"]).decode())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=trust)) as session:
        body = review_body(runtime("x", "x"), uid="via-config")
        async with session.post(client_config["url"], json=body) as reply:
            answer = await reply.json()
    assert answer["response"]["uid"] == "via-config"
    assert denial(answer["response"]) == "inheritance cycle detected: [x x]"


# --- random AdmissionReview-shaped bodies ---------------------------------------------------------------------

JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=16,
)
NAMES = st.sampled_from(["base", "profile", "loop-a", "missing", "x"]) | st.text(max_size=6)
ANNOTATIONS = st.dictionaries(
    st.sampled_from(["ome.io/inherit-from", "ome.io/runtime-profile", "other"]),
    st.sampled_from(["base", "loop-a", "missing", "true", "false", ""]) | JSON_VALUES,
    max_size=3,
)
METADATA = st.fixed_dictionaries(
    {},
    optional={
        "name": NAMES | JSON_VALUES,
        "namespace": st.sampled_from(["llama-demo", ""]) | JSON_VALUES,
        "annotations": ANNOTATIONS | JSON_VALUES,
    },
)
RUNTIME_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.just("ome.io/v1beta1") | JSON_VALUES,
        "kind": st.sampled_from(["ServingRuntime", "ClusterServingRuntime"]) | JSON_VALUES,
        "metadata": METADATA | JSON_VALUES,
        "spec": st.fixed_dictionaries({}, optional={"disabled": JSON_VALUES}) | JSON_VALUES,
    },
)
REQUESTS = st.fixed_dictionaries(
    {},
    optional={
        "uid": st.uuids().map(str) | JSON_VALUES,
        "operation": st.sampled_from(["CREATE", "UPDATE", "DELETE"]) | JSON_VALUES,
        "object": RUNTIME_LIKE | JSON_VALUES,
        "oldObject": RUNTIME_LIKE | JSON_VALUES,
    },
)
BODIES = (
    st.fixed_dictionaries(
        {},
        optional={
            "apiVersion": st.just("admission.k8s.io/v1") | JSON_VALUES,
            "kind": st.just("AdmissionReview") | JSON_VALUES,
            "request": REQUESTS | JSON_VALUES,
        },
    )
    | JSON_VALUES
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=BODIES,
    cluster=st.sampled_from([CLUSTER, "elsewhere"]),
    kind_path=st.sampled_from([SR_PATH, CSR_PATH, "pod"]),
)
async def test_random_admission_reviews_never_get_a_5xx(
    webhook: Webhook, body: Any, cluster: str, kind_path: str
) -> None:
    webhook.cache(
        cluster_runtime("base"),
        cluster_runtime("profile", profile=True, disabled=True),
        cluster_runtime("loop-a", "loop-b"),
        cluster_runtime("loop-b", "loop-a"),
    )
    status, answer = await webhook.post(f"/validate/{cluster}/{kind_path}", json.dumps(body).encode())
    assert status < 500, answer
    request = body.get("request") if isinstance(body, dict) else None
    if not (isinstance(request, dict) and isinstance(request.get("uid"), str)):
        assert status == 400, answer
        return
    assert status == 200, answer
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    response = answer["response"]
    assert response["uid"] == request["uid"]
    assert isinstance(response["allowed"], bool)
    if not response["allowed"]:
        message = response["status"]["message"]
        assert isinstance(message, str) and message
        assert not message.startswith("internal error"), message  # every malformed input has a clear reason


# --- InferenceServices ------------------------------------------------------------------------------------------


def inference_service(runtime_name: Any = "child", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": {"name": "m"}, **spec}
    if runtime_name is not None:
        body["runtime"] = {"name": runtime_name}
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": "svc", "namespace": "llama-demo"},
        "spec": body,
    }


async def test_an_inference_service_on_a_resolving_chain_is_allowed(webhook: Webhook) -> None:
    webhook.cache(cluster_runtime("profile"), runtime("child", "profile"))
    assert (await webhook.review(inference_service(), "inferenceservice"))["allowed"] is True


async def test_an_inference_service_on_a_broken_chain_is_denied_with_the_chain_error(webhook: Webhook) -> None:
    webhook.cache(runtime("child", "gone"))
    response = await webhook.review(inference_service(), "inferenceservice")
    assert denial(response) == 'inherit-from parent "gone" not found (chain so far: [child])'


async def test_an_inference_service_naming_a_missing_runtime_or_none_is_allowed(webhook: Webhook) -> None:
    assert (await webhook.review(inference_service("not-yet"), "inferenceservice"))["allowed"] is True
    assert (await webhook.review(inference_service(None), "inferenceservice"))["allowed"] is True


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (None, "the object is not a JSON object"),
        ({"metadata": {}}, "metadata.name is required"),
        ({"metadata": {"name": "a"}, "spec": "x"}, "spec must be an object"),
        ({"metadata": {"name": "a"}, "spec": {"runtime": []}}, "spec.runtime must be an object"),
        ({"metadata": {"name": "a"}, "spec": {"runtime": {"name": 3}}}, "spec.runtime.name must be a non-empty string"),
    ],
)
async def test_a_malformed_inference_service_gets_a_clear_denial(webhook: Webhook, obj: Any, message: str) -> None:
    assert denial(await webhook.review(obj, "inferenceservice")) == message
