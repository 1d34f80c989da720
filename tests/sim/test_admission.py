"""Validating admission webhooks against a real HTTPS webhook server (self-signed CA made here)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import ipaddress
import socket
import ssl
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from omectl.sim.admission.config import default_webhook_configuration, validate_webhook_configuration
from omectl.sim.admission.dispatch import WebhookDispatcher, WebhookRejection
from omectl.sim.admission.match import AdmissionAttributes
from omectl.sim.apiserver.errors import APIError
from omectl.sim.apiserver.registry import ResourceType, TypeRegistry

_registry = TypeRegistry()


def _builtin(plural: str) -> ResourceType:
    found = _registry.lookup("", "v1", plural)
    assert found is not None
    return found


CONFIGMAPS, NAMESPACES, NODES = _builtin("configmaps"), _builtin("namespaces"), _builtin("nodes")
WIDGETS_V1 = ResourceType("example.com", "v1", "Widget", "widgets", "widget", True, has_status=True, builtin=False)
WIDGETS_V2 = ResourceType("example.com", "v2", "Widget", "widgets", "widget", True, has_status=True, builtin=False)

NAMESPACE_LABELS = {
    "default": {"kubernetes.io/metadata.name": "default"},
    "prod": {"kubernetes.io/metadata.name": "prod", "env": "prod"},
}
DEADLINE = 8  # seconds any single validate() may take in these tests


# ------------------------------------------------------------------------------------------------------------
# TLS material and the webhook server
# ------------------------------------------------------------------------------------------------------------


@dataclass
class CA:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @property
    def bundle(self) -> str:
        return base64.b64encode(self.cert.public_bytes(serialization.Encoding.PEM)).decode()


def _make_ca(name: str) -> CA:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CA(key, cert)


def _server_context(ca: CA, directory: Path) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.key.public_key()), critical=False)
        .sign(ca.key, hashes.SHA256())
    )
    cert_file, key_file = directory / "tls.crt", directory / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[CA, ssl.SSLContext]:
    ca = _make_ca("webhook-test-ca")
    return ca, _server_context(ca, tmp_path_factory.mktemp("tls"))


Handler = Callable[[dict[str, Any]], Awaitable[Any]]


def allow(review: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": True, **extra},
    }


def deny(review: dict[str, Any], status: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": False, **extra}
    if status is not None:
        response["status"] = status
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


async def _allow(review: dict[str, Any]) -> dict[str, Any]:
    return allow(review)


@dataclass
class Received:
    review: dict[str, Any]
    query: str
    headers: dict[str, str]
    peer: Any


@dataclass
class WebhookServer:
    url: str = ""
    ca_bundle: str = ""
    handlers: dict[str, Handler] = field(default_factory=dict)
    received: dict[str, list[Received]] = field(default_factory=lambda: defaultdict(list))
    # Set only when the server shuts down: handlers that must hang wait on it.
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        review = await request.json()
        self.received[request.path].append(
            Received(
                review,
                request.query_string,
                dict(request.headers),
                request.transport.get_extra_info("peername") if request.transport else None,
            )
        )
        handler: Handler = self.handlers.get(request.path, _allow)
        result = await handler(review)
        return result if isinstance(result, web.StreamResponse) else web.json_response(result)

    def webhook(self, path: str, name: str = "check.example.com", **overrides: Any) -> dict[str, Any]:
        hook: dict[str, Any] = {
            "name": name,
            "clientConfig": {"url": self.url + path, "caBundle": self.ca_bundle},
            "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }
        hook.update(overrides)
        return hook


@asynccontextmanager
async def run_webhook_server(ssl_context: ssl.SSLContext | None, ca_bundle: str = "") -> AsyncIterator[WebhookServer]:
    server = WebhookServer(ca_bundle=ca_bundle)
    app = web.Application()
    app.router.add_post("/{tail:.*}", server.handle)
    runner = web.AppRunner(app, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    host, port = runner.addresses[0][:2]
    server.url = f"{'https' if ssl_context else 'http'}://{host}:{port}"
    try:
        yield server
    finally:
        server.release.set()
        await runner.cleanup()


@pytest.fixture
async def server(tls: tuple[CA, ssl.SSLContext]) -> AsyncIterator[WebhookServer]:
    ca, context = tls
    async with run_webhook_server(context, ca.bundle) as running:
        yield running


@pytest.fixture
async def dispatcher() -> AsyncIterator[WebhookDispatcher]:
    instance = WebhookDispatcher()
    yield instance
    await instance.close()


def configuration(name: str, *webhooks: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": list(webhooks),
    }


def configmap(name: str = "cm1", namespace: str = "default", labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def create_configmap(obj: dict[str, Any] | None = None, **kwargs: Any) -> AdmissionAttributes:
    obj = obj or configmap()
    return AdmissionAttributes(
        operation="CREATE",
        resource_type=CONFIGMAPS,
        name=obj["metadata"]["name"],
        namespace=obj["metadata"]["namespace"],
        obj=obj,
        **kwargs,
    )


async def run_validate(
    dispatcher: WebhookDispatcher, attrs: AdmissionAttributes, *configs: dict[str, Any]
) -> list[str]:
    return await asyncio.wait_for(dispatcher.validate(attrs, list(configs), NAMESPACE_LABELS.get), DEADLINE)


async def rejected(dispatcher: WebhookDispatcher, attrs: AdmissionAttributes, *configs: dict[str, Any]) -> APIError:
    with pytest.raises(APIError) as caught:
        await run_validate(dispatcher, attrs, *configs)
    return caught.value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# ------------------------------------------------------------------------------------------------------------
# The AdmissionReview request
# ------------------------------------------------------------------------------------------------------------


async def test_create_sends_a_v1_admission_review_with_the_object(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    obj = configmap(labels={"app": "web"})
    await run_validate(dispatcher, create_configmap(obj), configuration("cfg", server.webhook("/validate")))

    [call] = server.received["/validate"]
    assert call.query == "timeout=10s"
    assert call.headers["Content-Type"] == "application/json"
    review = call.review
    assert (review["apiVersion"], review["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    request = review["request"]
    uuid.UUID(request.pop("uid"))
    assert request == {
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "requestKind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "requestResource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "cm1",
        "namespace": "default",
        "operation": "CREATE",
        "userInfo": {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]},
        "object": obj,
        "oldObject": None,
        "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
    }


async def test_update_of_a_subresource_sends_old_object_and_subresource(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    old = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "prod"},
        "status": {"ready": False},
    }
    new = {**old, "status": {"ready": True}}
    options = {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "ctl"}
    attrs = AdmissionAttributes(
        "UPDATE",
        WIDGETS_V1,
        "status",
        "w1",
        "prod",
        new,
        old,
        options=options,
        user={"username": "alice", "groups": ["devs"]},
    )
    await run_validate(dispatcher, attrs, configuration("cfg", server.webhook("/w", timeoutSeconds=7)))

    [call] = server.received["/w"]
    assert call.query == "timeout=7s"
    request = call.review["request"]
    assert request["kind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert request["resource"] == {"group": "example.com", "version": "v1", "resource": "widgets"}
    assert (request["subResource"], request["requestSubResource"]) == ("status", "status")
    assert request["operation"] == "UPDATE"
    assert (request["object"], request["oldObject"]) == (new, old)
    assert request["options"] == options
    assert request["userInfo"] == {"username": "alice", "groups": ["devs"]}


async def test_delete_sends_null_object_and_the_old_object(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    old = configmap()
    attrs = AdmissionAttributes(
        "DELETE",
        CONFIGMAPS,
        "",
        "cm1",
        "default",
        None,
        old,
        dry_run=True,
        options={"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]},
    )
    await run_validate(dispatcher, attrs, configuration("cfg", server.webhook("/d")))

    request = server.received["/d"][0].review["request"]
    assert request["operation"] == "DELETE"
    assert request["object"] is None
    assert request["oldObject"] == old
    assert request["dryRun"] is True
    assert request["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}
    assert "subResource" not in request


async def test_namespace_object_requests_carry_their_own_name_as_namespace(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    attrs = AdmissionAttributes("CREATE", NAMESPACES, "", "team-a", "", ns, None)
    await run_validate(dispatcher, attrs, configuration("cfg", server.webhook("/ns")))
    assert server.received["/ns"][0].review["request"]["namespace"] == "team-a"


async def test_each_webhook_gets_its_own_uid(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    config = configuration("cfg", server.webhook("/a", "a.example.com"), server.webhook("/b", "b.example.com"))
    await run_validate(dispatcher, create_configmap(), config)
    uids = {server.received[p][0].review["request"]["uid"] for p in ("/a", "/b")}
    assert len(uids) == 2


# ------------------------------------------------------------------------------------------------------------
# Answers: allow, deny, warnings
# ------------------------------------------------------------------------------------------------------------


async def test_allowed_request_returns_the_webhooks_warnings(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    async def warn_a(review: dict[str, Any]) -> dict[str, Any]:
        return allow(review, warnings=["size is large", "deprecated field"])

    async def warn_b(review: dict[str, Any]) -> dict[str, Any]:
        return allow(review, warnings=["deprecated field", "another"])

    server.handlers.update({"/a": warn_a, "/b": warn_b})
    config = configuration("cfg", server.webhook("/a", "a.example.com"), server.webhook("/b", "b.example.com"))
    warnings = await run_validate(dispatcher, create_configmap(), config)
    assert warnings == ["size is large", "deprecated field", "another"]


async def test_no_matching_webhook_returns_no_warnings(dispatcher: WebhookDispatcher) -> None:
    assert await run_validate(dispatcher, create_configmap()) == []


async def test_denial_with_message_uses_the_real_wording_and_the_webhooks_code(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    async def refuse(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review, {"code": 403, "reason": "Forbidden", "message": "size must be below 10"})

    server.handlers["/v"] = refuse
    error = await rejected(
        dispatcher, create_configmap(), configuration("cfg", server.webhook("/v", "size.example.com"))
    )
    assert error.status() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'admission webhook "size.example.com" denied the request: size must be below 10',
        "reason": "Forbidden",
        "code": 403,
    }


async def test_denial_code_below_400_becomes_400(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def refuse(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review, {"code": 200, "message": "nope"})

    server.handlers["/v"] = refuse
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert (error.code, error.reason) == (400, "")
    assert error.message == 'admission webhook "check.example.com" denied the request: nope'


async def test_denial_without_status_is_without_explanation(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    async def refuse(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review)

    server.handlers["/v"] = refuse
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert error.code == 400
    assert error.message == 'admission webhook "check.example.com" denied the request without explanation'
    assert error.status()["status"] == "Failure"


async def test_denial_with_only_a_reason_quotes_the_reason(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    async def refuse(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review, {"reason": "NotAllowedHere", "code": 409})

    server.handlers["/v"] = refuse
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert (error.code, error.reason) == (409, "NotAllowedHere")
    assert error.message == 'admission webhook "check.example.com" denied the request: NotAllowedHere'


async def test_first_denial_in_configuration_order_wins_and_keeps_warnings(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    async def refuse_a(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review, {"message": "from a"}, warnings=["warned by a"])

    async def refuse_b(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review, {"message": "from b"})

    server.handlers.update({"/a": refuse_a, "/b": refuse_b})
    # Passed in reverse: the real server orders configurations by name.
    configs = (
        configuration("zz-second", server.webhook("/b", "b.example.com")),
        configuration("aa-first", server.webhook("/a", "a.example.com")),
    )
    error = await rejected(dispatcher, create_configmap(), *configs)
    assert error.message == 'admission webhook "a.example.com" denied the request: from a'
    assert isinstance(error, WebhookRejection)
    assert error.warnings == ["warned by a"]
    assert len(server.received["/b"]) == 1  # every matching webhook is still called


async def test_matching_webhooks_are_called_in_parallel(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    a_entered, b_entered = asyncio.Event(), asyncio.Event()

    def waits_for_the_other(mine: asyncio.Event, other: asyncio.Event) -> Handler:
        async def handler(review: dict[str, Any]) -> dict[str, Any]:
            mine.set()
            try:
                await asyncio.wait_for(other.wait(), 5)
            except TimeoutError:
                return deny(review, {"message": "the other webhook was not called concurrently"})
            return allow(review)

        return handler

    server.handlers.update(
        {"/a": waits_for_the_other(a_entered, b_entered), "/b": waits_for_the_other(b_entered, a_entered)}
    )
    config = configuration("cfg", server.webhook("/a", "a.example.com"), server.webhook("/b", "b.example.com"))
    assert await run_validate(dispatcher, create_configmap(), config) == []
    assert a_entered.is_set() and b_entered.is_set()


# ------------------------------------------------------------------------------------------------------------
# Selection: rules, namespaceSelector, objectSelector, matchPolicy
# ------------------------------------------------------------------------------------------------------------

CM_CREATE = AdmissionAttributes("CREATE", CONFIGMAPS, "", "cm1", "default", configmap(), None)
CM_UPDATE = AdmissionAttributes("UPDATE", CONFIGMAPS, "", "cm1", "default", configmap(), configmap())
CM_DELETE = AdmissionAttributes("DELETE", CONFIGMAPS, "", "cm1", "default", None, configmap())
WIDGET_STATUS = AdmissionAttributes("UPDATE", WIDGETS_V1, "status", "w1", "prod", {"metadata": {}}, {"metadata": {}})
WIDGET_MAIN = AdmissionAttributes("UPDATE", WIDGETS_V1, "", "w1", "prod", {"metadata": {}}, {"metadata": {}})
NODE_CREATE = AdmissionAttributes("CREATE", NODES, "", "n1", "", {"metadata": {"name": "n1"}}, None)
NS_CREATE = AdmissionAttributes("CREATE", NAMESPACES, "", "team", "", {"metadata": {"name": "team"}}, None)


def rule(
    operations: list[str] | None = None,
    groups: list[str] | None = None,
    versions: list[str] | None = None,
    resources: list[str] | None = None,
    scope: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "operations": operations or ["*"],
        "apiGroups": groups or ["*"],
        "apiVersions": versions or ["*"],
        "resources": resources or ["*/*"],
    }
    if scope:
        out["scope"] = scope
    return out


@pytest.mark.parametrize(
    ("case", "webhook_rule", "attrs", "called"),
    [
        ("operation wildcard matches delete", rule(operations=["*"]), CM_DELETE, True),
        ("listed operation matches", rule(operations=["CREATE"]), CM_CREATE, True),
        ("other operation does not match", rule(operations=["CREATE"]), CM_UPDATE, False),
        ("resource wildcard matches a main resource", rule(resources=["*"]), CM_CREATE, True),
        ("resource wildcard does not match a subresource", rule(resources=["*"]), WIDGET_STATUS, False),
        ("double wildcard matches a subresource", rule(resources=["*/*"]), WIDGET_STATUS, True),
        ("named subresource matches", rule(resources=["widgets/status"]), WIDGET_STATUS, True),
        ("named subresource does not match the main resource", rule(resources=["widgets/status"]), WIDGET_MAIN, False),
        ("any resource's subresource", rule(resources=["*/status"]), WIDGET_STATUS, True),
        ("named resource", rule(resources=["configmaps"]), CM_CREATE, True),
        ("other resource", rule(resources=["secrets"]), CM_CREATE, False),
        ("api group mismatch", rule(groups=["apps"]), CM_CREATE, False),
        ("core api group", rule(groups=[""]), CM_CREATE, True),
        ("custom api group", rule(groups=["example.com"]), WIDGET_MAIN, True),
        ("api version mismatch", rule(versions=["v1beta1"]), CM_CREATE, False),
        ("namespaced scope matches a namespaced object", rule(scope="Namespaced"), CM_CREATE, True),
        ("namespaced scope skips a cluster object", rule(scope="Namespaced"), NODE_CREATE, False),
        ("namespaced scope skips a namespace", rule(scope="Namespaced"), NS_CREATE, False),
        ("cluster scope matches a node", rule(scope="Cluster"), NODE_CREATE, True),
        ("cluster scope matches a namespace", rule(scope="Cluster"), NS_CREATE, True),
        ("cluster scope skips a namespaced object", rule(scope="Cluster"), CM_CREATE, False),
        ("any scope", rule(scope="*"), NODE_CREATE, True),
    ],
)
async def test_rules_select_requests(
    server: WebhookServer,
    dispatcher: WebhookDispatcher,
    case: str,
    webhook_rule: dict[str, Any],
    attrs: AdmissionAttributes,
    called: bool,
) -> None:
    await run_validate(dispatcher, attrs, configuration("cfg", server.webhook("/r", rules=[webhook_rule])))
    assert len(server.received["/r"]) == (1 if called else 0), case


async def test_webhook_without_rules_is_never_called(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    await run_validate(dispatcher, CM_CREATE, configuration("cfg", server.webhook("/r", rules=[])))
    assert server.received["/r"] == []


async def test_equivalent_match_policy_calls_with_the_rules_version(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "prod"}}
    attrs = AdmissionAttributes(
        "CREATE", WIDGETS_V1, "", "w1", "prod", obj, None, equivalent_types=[WIDGETS_V1, WIDGETS_V2]
    )
    v2_rule = [rule(groups=["example.com"], versions=["v2"], resources=["widgets"])]
    await run_validate(
        dispatcher,
        attrs,
        configuration(
            "cfg",
            server.webhook("/eq", rules=v2_rule),
            server.webhook("/exact", "exact.example.com", rules=v2_rule, matchPolicy="Exact"),
        ),
    )
    assert server.received["/exact"] == []
    request = server.received["/eq"][0].review["request"]
    assert request["kind"] == {"group": "example.com", "version": "v2", "kind": "Widget"}
    assert request["resource"]["version"] == "v2"
    assert request["requestKind"] == {"group": "example.com", "version": "v1", "kind": "Widget"}
    assert request["object"]["apiVersion"] == "example.com/v2"


@pytest.mark.parametrize(
    ("case", "selector", "attrs", "called"),
    [
        (
            "namespace labels match",
            {"matchLabels": {"env": "prod"}},
            create_configmap(configmap(namespace="prod")),
            True,
        ),
        ("namespace labels do not match", {"matchLabels": {"env": "prod"}}, create_configmap(), False),
        (
            "expression NotIn matches a namespace without the label",
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
            create_configmap(),
            True,
        ),
        (
            "a namespace being created is matched by its own labels",
            {"matchLabels": {"env": "prod"}},
            AdmissionAttributes(
                "CREATE", NAMESPACES, "", "fresh", "", {"metadata": {"name": "fresh", "labels": {"env": "prod"}}}, None
            ),
            True,
        ),
        (
            "a deleted namespace is matched by its stored labels",
            {"matchLabels": {"env": "prod"}},
            AdmissionAttributes("DELETE", NAMESPACES, "", "prod", "", None, {"metadata": {"name": "prod"}}),
            True,
        ),
        ("cluster-scoped objects always match", {"matchLabels": {"env": "prod"}}, NODE_CREATE, True),
        ("an empty selector matches everything", {}, create_configmap(), True),
    ],
)
async def test_namespace_selector(
    server: WebhookServer,
    dispatcher: WebhookDispatcher,
    case: str,
    selector: dict[str, Any],
    attrs: AdmissionAttributes,
    called: bool,
) -> None:
    await run_validate(dispatcher, attrs, configuration("cfg", server.webhook("/ns", namespaceSelector=selector)))
    assert len(server.received["/ns"]) == (1 if called else 0), case


async def test_namespace_selector_with_a_missing_namespace_is_not_found(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    hook = server.webhook("/ns", namespaceSelector={"matchLabels": {"env": "prod"}})
    error = await rejected(dispatcher, create_configmap(configmap(namespace="ghost")), configuration("cfg", hook))
    assert (error.code, error.reason, error.message) == (404, "NotFound", 'namespaces "ghost" not found')
    assert server.received["/ns"] == []


@pytest.mark.parametrize(
    ("case", "attrs", "called"),
    [
        ("new object labels match", create_configmap(configmap(labels={"app": "web"})), True),
        ("new object labels do not match", create_configmap(configmap(labels={"app": "db"})), False),
        ("object without labels does not match", create_configmap(), False),
        (
            "old object labels match on update",
            AdmissionAttributes(
                "UPDATE",
                CONFIGMAPS,
                "",
                "cm1",
                "default",
                configmap(labels={"app": "db"}),
                configmap(labels={"app": "web"}),
            ),
            True,
        ),
        (
            "old object labels match on delete",
            AdmissionAttributes("DELETE", CONFIGMAPS, "", "cm1", "default", None, configmap(labels={"app": "web"})),
            True,
        ),
    ],
)
async def test_object_selector(
    server: WebhookServer, dispatcher: WebhookDispatcher, case: str, attrs: AdmissionAttributes, called: bool
) -> None:
    hook = server.webhook("/o", objectSelector={"matchLabels": {"app": "web"}})
    await run_validate(dispatcher, attrs, configuration("cfg", hook))
    assert len(server.received["/o"]) == (1 if called else 0), case


# ------------------------------------------------------------------------------------------------------------
# Failures and failurePolicy
# ------------------------------------------------------------------------------------------------------------


async def test_unreachable_webhook_fails_closed_with_the_upstream_message(
    dispatcher: WebhookDispatcher, tls: tuple[CA, ssl.SSLContext]
) -> None:
    port = free_port()
    hook = {
        "name": "down.example.com",
        "clientConfig": {"url": f"https://127.0.0.1:{port}", "caBundle": tls[0].bundle},
        "rules": [rule()],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    cause = (
        f'failed calling webhook "down.example.com": failed to call webhook: '
        f'Post "https://127.0.0.1:{port}/?timeout=10s": dial tcp 127.0.0.1:{port}: connect: connection refused'
    )
    assert (error.code, error.reason) == (500, "InternalError")
    assert error.message == f"Internal error occurred: {cause}"
    assert error.details == {"causes": [{"message": cause}]}


async def test_unreachable_webhook_with_ignore_policy_is_skipped(dispatcher: WebhookDispatcher) -> None:
    hook = {
        "name": "down.example.com",
        "clientConfig": {"url": f"https://127.0.0.1:{free_port()}/check"},
        "rules": [rule()],
        "failurePolicy": "Ignore",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    assert await run_validate(dispatcher, create_configmap(), configuration("cfg", hook)) == []


async def test_webhook_timeout_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def hang(review: dict[str, Any]) -> dict[str, Any]:
        await server.release.wait()
        return allow(review)

    server.handlers["/slow"] = hang
    error = await rejected(
        dispatcher,
        create_configmap(),
        configuration("cfg", server.webhook("/slow", "slow.example.com", timeoutSeconds=1)),
    )
    assert error.code == 500
    assert error.message == (
        'Internal error occurred: failed calling webhook "slow.example.com": failed to call webhook: '
        f'Post "{server.url}/slow?timeout=1s": context deadline exceeded'
    )


async def test_wrong_ca_bundle_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    other_ca = _make_ca("someone-else")
    hook = server.webhook("/v", clientConfig={"url": server.url + "/v", "caBundle": other_ca.bundle})
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    assert error.code == 500
    assert error.message.startswith(
        f'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
        f'Post "{server.url}/v?timeout=10s": tls: failed to verify certificate: '
    )
    assert error.message.endswith("x509: certificate signed by unknown authority")
    assert server.received["/v"] == []


async def test_missing_ca_bundle_uses_system_roots_and_fails_for_a_private_ca(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    hook = server.webhook("/v", clientConfig={"url": server.url + "/v"})
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    assert "tls: failed to verify certificate" in error.message


async def test_garbage_ca_bundle_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    hook = server.webhook("/v", clientConfig={"url": server.url + "/v", "caBundle": "bm90IGEgY2VydA=="})
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    assert error.message == (
        'Internal error occurred: failed calling webhook "check.example.com": could not get REST client: '
        "unable to load root certificates: unable to parse bytes as PEM block"
    )


async def test_non_200_answer_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def broken(review: dict[str, Any]) -> web.Response:
        return web.Response(status=500, text="boom")

    server.handlers["/v"] = broken
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert error.message == (
        'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
        'an error on the server ("boom") has prevented the request from succeeding'
    )


async def test_bad_json_answer_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def garbage(review: dict[str, Any]) -> web.Response:
        return web.Response(status=200, text="{not json", content_type="application/json")

    server.handlers["/v"] = garbage
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert error.message.startswith(
        'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: '
        "couldn't get version/kind; json parse error: "
    )


async def test_uid_mismatch_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def wrong_uid(review: dict[str, Any]) -> dict[str, Any]:
        answer = allow(review)
        answer["response"]["uid"] = "not-the-uid"
        return answer

    server.handlers["/v"] = wrong_uid
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    uid = server.received["/v"][0].review["request"]["uid"]
    assert error.message == (
        'Internal error occurred: failed calling webhook "check.example.com": received invalid webhook response: '
        f'expected response.uid="{uid}", got "not-the-uid"'
    )


async def test_wrong_review_kind_fails_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def wrong_version(review: dict[str, Any]) -> dict[str, Any]:
        return {**allow(review), "apiVersion": "admission.k8s.io/v1beta1"}

    server.handlers["/v"] = wrong_version
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert error.message.endswith(
        "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
        "got admission.k8s.io/v1beta1, Kind=AdmissionReview"
    )


async def test_v1_answer_without_kind_fails_the_gvk_check(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def bare(review: dict[str, Any]) -> dict[str, Any]:
        return {"response": {"uid": review["request"]["uid"], "allowed": True}}

    server.handlers["/v"] = bare
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert error.message.endswith(
        "received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, "
        "got /, Kind="
    )


async def test_validating_webhook_may_not_patch(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def patches(review: dict[str, Any]) -> dict[str, Any]:
        return allow(review, patch="W10=", patchType="JSONPatch")

    server.handlers["/v"] = patches
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v")))
    assert error.message.endswith("received invalid webhook response: validating webhook may not return response.patch")


async def test_invalid_selector_fails_the_request_with_an_internal_error(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    hook = server.webhook("/v", objectSelector={"matchExpressions": [{"key": "app", "operator": "Near"}]})
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    assert (error.code, error.reason) == (500, "InternalError")
    assert server.received["/v"] == []


async def test_invalid_selector_on_a_webhook_whose_rules_do_not_match_is_ignored(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    hook = server.webhook(
        "/v",
        rules=[rule(resources=["secrets"])],
        objectSelector={"matchExpressions": [{"key": "app", "operator": "Near"}]},
    )
    assert await run_validate(dispatcher, create_configmap(), configuration("cfg", hook)) == []


async def test_invalid_answer_with_ignore_policy_is_skipped(
    server: WebhookServer, dispatcher: WebhookDispatcher
) -> None:
    async def no_response(review: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}

    server.handlers["/v"] = no_response
    hook = server.webhook("/v", failurePolicy="Ignore")
    assert await run_validate(dispatcher, create_configmap(), configuration("cfg", hook)) == []
    assert len(server.received["/v"]) == 1


async def test_denial_is_not_subject_to_ignore_policy(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def refuse(review: dict[str, Any]) -> dict[str, Any]:
        return deny(review, {"message": "no"})

    server.handlers["/v"] = refuse
    error = await rejected(
        dispatcher, create_configmap(), configuration("cfg", server.webhook("/v", failurePolicy="Ignore"))
    )
    assert error.message == 'admission webhook "check.example.com" denied the request: no'


async def test_v1beta1_only_webhook_gets_a_v1beta1_review(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    async def old_style(review: dict[str, Any]) -> dict[str, Any]:
        return {"response": {"allowed": True}}  # v1beta1 answers were never checked for uid or kind

    server.handlers["/v"] = old_style
    hook = server.webhook("/v", admissionReviewVersions=["v1beta1", "v1"])
    assert await run_validate(dispatcher, create_configmap(), configuration("cfg", hook)) == []
    assert server.received["/v"][0].review["apiVersion"] == "admission.k8s.io/v1beta1"


async def test_unknown_review_versions_fail_the_call(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    hook = server.webhook("/v", admissionReviewVersions=["v2"])
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    assert error.message == (
        'Internal error occurred: failed calling webhook "check.example.com": could not create admission objects: '
        "webhook does not accept known AdmissionReview versions (v1, v1beta1)"
    )
    assert server.received["/v"] == []


async def test_service_reference_is_a_call_failure(dispatcher: WebhookDispatcher) -> None:
    hook = {
        "name": "svc.example.com",
        "clientConfig": {"service": {"namespace": "default", "name": "hook", "port": 443}},
        "rules": [rule()],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    error = await rejected(dispatcher, create_configmap(), configuration("cfg", hook))
    assert error.code == 500
    assert error.message == (
        'Internal error occurred: failed calling webhook "svc.example.com": could not get REST client: '
        "clientConfig.service is not supported by the embedded API server (it has no cluster DNS); "
        "use clientConfig.url"
    )


# ------------------------------------------------------------------------------------------------------------
# Dry run, http://, connection reuse
# ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("side_effects", ["Some", "Unknown"])
async def test_dry_run_with_side_effects_is_rejected_without_calling(
    server: WebhookServer, dispatcher: WebhookDispatcher, side_effects: str
) -> None:
    hook = server.webhook("/v", "effects.example.com", sideEffects=side_effects, failurePolicy="Ignore")
    error = await rejected(dispatcher, create_configmap(dry_run=True), configuration("cfg", hook))
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.message == 'admission webhook "effects.example.com" does not support dry run'
    assert server.received["/v"] == []


@pytest.mark.parametrize("side_effects", ["None", "NoneOnDryRun"])
async def test_dry_run_calls_webhooks_without_side_effects(
    server: WebhookServer, dispatcher: WebhookDispatcher, side_effects: str
) -> None:
    hook = server.webhook("/v", sideEffects=side_effects)
    await run_validate(dispatcher, create_configmap(dry_run=True), configuration("cfg", hook))
    assert server.received["/v"][0].review["request"]["dryRun"] is True


async def test_side_effects_do_not_matter_without_dry_run(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    await run_validate(dispatcher, create_configmap(), configuration("cfg", server.webhook("/v", sideEffects="Some")))
    assert len(server.received["/v"]) == 1


async def test_http_url_is_rejected_unless_allowed() -> None:
    async with run_webhook_server(None) as plain:
        config = configuration("cfg", plain.webhook("/v"))
        strict = WebhookDispatcher()
        try:
            error = await rejected(strict, create_configmap(), config)
        finally:
            await strict.close()
        assert error.code == 500
        assert "'https' is the only allowed URL scheme" in error.message
        assert plain.received["/v"] == []

        relaxed = WebhookDispatcher(allow_http=True)
        try:
            assert await run_validate(relaxed, create_configmap(), config) == []
        finally:
            await relaxed.close()
        assert len(plain.received["/v"]) == 1


async def test_one_session_is_reused_across_requests(server: WebhookServer, dispatcher: WebhookDispatcher) -> None:
    config = configuration("cfg", server.webhook("/v"))
    await run_validate(dispatcher, create_configmap(), config)
    await run_validate(dispatcher, create_configmap(), config)
    first, second = server.received["/v"]
    assert first.peer == second.peer  # the same keep-alive connection

    await dispatcher.close()
    await run_validate(dispatcher, create_configmap(), config)  # a closed dispatcher opens a fresh session
    assert len(server.received["/v"]) == 3


def test_ssl_context_is_cached_per_ca_bundle(tls: tuple[CA, ssl.SSLContext]) -> None:
    client = WebhookDispatcher().client
    bundle = tls[0].bundle
    assert client.ssl_context(bundle) is client.ssl_context(bundle)
    assert client.ssl_context(bundle) is not client.ssl_context(_make_ca("other").bundle)


# ------------------------------------------------------------------------------------------------------------
# validate_webhook_configuration / default_webhook_configuration
# ------------------------------------------------------------------------------------------------------------


def good_webhook(**overrides: Any) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": "check.example.com",
        "clientConfig": {"url": "https://hooks.example.com/validate", "caBundle": "Y2E="},
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps", "configmaps/status"],
                "scope": "Namespaced",
            }
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 5,
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
        "objectSelector": {"matchLabels": {"app": "web"}},
    }
    hook.update(overrides)
    return hook


def messages(obj: dict[str, Any], **kwargs: Any) -> list[str]:
    return [str(e) for e in validate_webhook_configuration(obj, **kwargs)]


def test_valid_configuration_has_no_errors() -> None:
    service_hook = good_webhook(
        name="svc.example.com", clientConfig={"service": {"namespace": "hooks", "name": "svc", "path": "/v"}}
    )
    assert messages(configuration("cfg", good_webhook(), service_hook)) == []
    assert messages(configuration("empty")) == []


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"name": ""}, ["webhooks[0].name: Required value"]),
        (
            {"name": "example.com"},
            [
                'webhooks[0].name: Invalid value: "example.com": should be a domain with at least three segments '
                "separated by dots"
            ],
        ),
        (
            {"name": "Bad_Name.example.com"},
            [
                'webhooks[0].name: Invalid value: "Bad_Name.example.com": a lowercase RFC 1123 subdomain must '
                "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (e.g. 'example.com', regex used for validation is "
                "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ],
        ),
        ({"clientConfig": {}}, ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]),
        (
            {"clientConfig": {"url": "https://a.example.com", "service": {"namespace": "n", "name": "s"}}},
            ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"],
        ),
        (
            {"clientConfig": {"url": "http://a.example.com/v"}},
            [
                "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; "
                "desired format: https://host[/path]"
            ],
        ),
        (
            {"clientConfig": {"url": "https://a.example.com/v?x=1#frag"}},
            [
                'webhooks[0].clientConfig.url: Invalid value: "frag": fragments are not permitted in the URL',
                'webhooks[0].clientConfig.url: Invalid value: "x=1": query parameters are not permitted in the URL',
            ],
        ),
        (
            {"clientConfig": {"service": {"name": "s", "port": 0, "path": "v"}}},
            [
                "webhooks[0].clientConfig.service.name: Required value",  # sic: the namespace is missing
                "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and "
                "65535, inclusive",
                "webhooks[0].clientConfig.service.path: Invalid value: \"v\": must start with a '/'",
                'webhooks[0].clientConfig.service.path: Invalid value: "v": segment[0] may not be empty',
            ],
        ),
        ({"sideEffects": None}, ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]),
        (
            {"sideEffects": "Some"},
            ['webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"'],
        ),
        (
            {"timeoutSeconds": 31},
            ["webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds"],
        ),
        (
            {"timeoutSeconds": 0},
            ["webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds"],
        ),
        (
            {"failurePolicy": "Maybe"},
            ['webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"'],
        ),
        (
            {"matchPolicy": "Fuzzy"},
            ['webhooks[0].matchPolicy: Unsupported value: "Fuzzy": supported values: "Equivalent", "Exact"'],
        ),
        (
            {"admissionReviewVersions": []},
            ["webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"],
        ),
        (
            {"admissionReviewVersions": ["v2"]},
            [
                'webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, '
                "v1beta1"
            ],
        ),
        (
            {"admissionReviewVersions": ["v1", "v1"]},
            ['webhooks[0].admissionReviewVersions[1]: Invalid value: "v1": duplicate version'],
        ),
        (
            {"rules": [{"operations": ["CREATE", "*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]},
            [
                'webhooks[0].rules[0].operations: Invalid value: []admissionregistration.OperationType{"CREATE", "*"}: '
                "if '*' is present, must not specify other operations"
            ],
        ),
        (
            {"rules": [{"operations": ["PATCH"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]},
            [
                'webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", '
                '"CREATE", "DELETE", "UPDATE"'
            ],
        ),
        (
            {"rules": [{"operations": [], "apiGroups": [], "apiVersions": [], "resources": []}]},
            [
                "webhooks[0].rules[0].operations: Required value",
                "webhooks[0].rules[0].apiGroups: Required value",
                "webhooks[0].rules[0].apiVersions: Required value",
                "webhooks[0].rules[0].resources: Required value",
            ],
        ),
        (
            {
                "rules": [
                    {
                        "operations": ["*"],
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "resources": ["*/*", "pods"],
                        "scope": "Everywhere",
                    }
                ]
            },
            [
                'webhooks[0].rules[0].resources: Invalid value: []string{"*/*", "pods"}: if \'*/*\' is present, '
                "must not specify other resources",
                'webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", '
                '"Namespaced"',
            ],
        ),
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": "env", "operator": "Near"},
                        {"key": "env", "operator": "In"},
                        {"key": "env", "operator": "Exists", "values": ["x"]},
                    ]
                }
            },
            [
                'webhooks[0].namespaceSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid '
                "selector operator",
                "webhooks[0].namespaceSelector.matchExpressions[1].values: Required value: must be specified when "
                "`operator` is 'In' or 'NotIn'",
                "webhooks[0].namespaceSelector.matchExpressions[2].values: Forbidden: may not be specified when "
                "`operator` is 'Exists' or 'DoesNotExist'",
            ],
        ),
    ],
)
def test_invalid_webhook_fields(overrides: dict[str, Any], expected: list[str]) -> None:
    assert messages(configuration("cfg", good_webhook(**overrides))) == expected


def test_object_selector_label_values_are_validated() -> None:
    errors = validate_webhook_configuration(
        configuration("cfg", good_webhook(objectSelector={"matchLabels": {"app": "a b"}}))
    )
    assert [(e.kind, e.field, e.value) for e in errors] == [
        ("Invalid", "webhooks[0].objectSelector.matchLabels", "a b")
    ]


def test_duplicate_webhook_names() -> None:
    assert messages(configuration("cfg", good_webhook(), good_webhook())) == [
        'webhooks[1].name: Duplicate value: "check.example.com"'
    ]


def test_http_urls_pass_validation_when_allowed() -> None:
    config = configuration("cfg", good_webhook(clientConfig={"url": "http://127.0.0.1:8080/v"}))
    assert messages(config) != []
    assert messages(config, allow_http=True) == []


def test_defaults_fill_the_v1_defaults_and_keep_set_values() -> None:
    config = configuration(
        "cfg",
        {
            "name": "a.example.com",
            "rules": [{"operations": ["*"]}],
            "clientConfig": {"service": {"namespace": "n", "name": "s"}},
            "timeoutSeconds": 3,
        },
    )
    default_webhook_configuration(config)
    [hook] = config["webhooks"]
    assert hook["failurePolicy"] == "Fail"
    assert hook["matchPolicy"] == "Equivalent"
    assert (hook["namespaceSelector"], hook["objectSelector"]) == ({}, {})
    assert hook["timeoutSeconds"] == 3
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["service"]["port"] == 443
