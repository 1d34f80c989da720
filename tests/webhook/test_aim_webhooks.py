"""Admission of AIMRuntimeConfig, AIMClusterRuntimeConfig and AIMService: exact denial reasons and malformed input.

Direct AdmissionReview posts to a real `WebhookServer` over HTTPS, and the real kubectl against an embedded cluster
whose ValidatingWebhookConfiguration `omectl run` installed.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.settings import Settings
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from omectl.tls import CertificateAuthority, client_ssl_context, server_ssl_context
from omectl.webhook.aim import (
    AIM_CLUSTER_RUNTIME_CONFIG_WEBHOOK,
    AIM_KINDS,
    AIM_RUNTIME_CONFIG_WEBHOOK,
    AIM_SERVICE_WEBHOOK,
    validate_aim,
)
from omectl.webhook.server import ClusterAdmission, WebhookServer, webhook_configuration
from tests.support import Kubectl, kubectl_path

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "deploy" / "samples" / "aim"
CLUSTER = "aimwh-1"
BAD_TEMPLATE = 'spec.routing.pathTemplate: invalid jsonpath expression "{.metadata[}": unterminated array'
BAD_PATTERN = (
    "spec.labelPropagation.match[1]: pattern 'compliance.example/[' has an unclosed character class at offset 19"
)


def config(kind: str = "AIMRuntimeConfig", **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "default"}
    if kind == "AIMRuntimeConfig":
        meta["namespace"] = "ml-team"
    return {"apiVersion": "aim.eai.amd.com/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}


def aim_service(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {"name": "qwen-chat", "namespace": "ml-team"},
        "spec": {"model": {"name": "qwen-qwen3-32b"}, **spec},
    }


ROUTING = {"enabled": True, "gatewayRef": {"name": "inference-gateway", "namespace": "gateways"}}


class Hook:
    def __init__(self, server: WebhookServer, session: aiohttp.ClientSession) -> None:
        self.server, self.session = server, session

    async def review(self, obj: Any, path: str, operation: str = "CREATE") -> dict[str, Any]:
        uid = str(uuid.uuid4())
        body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": uid}}
        body["request"].update(operation=operation, object=obj)
        async with self.session.post(f"{self.server.base_url}/validate/{CLUSTER}/{path}", json=body) as reply:
            assert reply.status == 200, await reply.text()
            answer = await reply.json()
        assert answer["response"]["uid"] == uid
        response: dict[str, Any] = answer["response"]
        return response

    async def denial(self, obj: Any, path: str) -> str:
        response = await self.review(obj, path)
        assert response["allowed"] is False, response
        assert response["status"]["code"] == 403
        message: str = response["status"]["message"]
        return message


@pytest.fixture
async def hook() -> AsyncIterator[Hook]:
    ca = CertificateAuthority.generate("aim-webhook-test-ca")
    server = WebhookServer("127.0.0.1", 0, server_ssl_context(ca.issue(["127.0.0.1", "localhost"])), ca.cert_pem)
    server.register(CLUSTER, lambda: ClusterAdmission(lookup=None, live_get=None))  # type: ignore[arg-type]
    await server.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=client_ssl_context(ca.cert_pem))) as s:
            yield Hook(server, s)
    finally:
        await server.stop()


# --- exact reasons --------------------------------------------------------------------------------------------


async def test_the_specs_configs_are_admitted(hook: Hook) -> None:
    reviewed = 0
    for path in SAMPLES.glob("*/*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            kind_path = doc["kind"].lower()
            if kind_path not in AIM_KINDS:
                continue  # kinds the AIM webhooks do not validate (models, profiles, caches, ...)
            response = await hook.review(doc, kind_path)
            assert response["allowed"] is True, (path, response)
            reviewed += 1
    assert reviewed >= 10  # every runtime config and service sample of the spec


async def test_an_invalid_path_template_is_denied_with_the_jsonpath_error(hook: Hook) -> None:
    bad = config(routing={**ROUTING, "pathTemplate": "/{.metadata[}"})
    assert await hook.denial(bad, "aimruntimeconfig") == BAD_TEMPLATE
    cluster_bad = config("AIMClusterRuntimeConfig", routing={"pathTemplate": "/{.metadata[}"})
    assert await hook.denial(cluster_bad, "aimclusterruntimeconfig") == BAD_TEMPLATE


async def test_every_problem_is_named_in_one_denial(hook: Hook) -> None:
    bad = config(
        routing={"gatewayRef": {"namespace": "gateways"}, "requestTimeout": "ten seconds"},
        labelPropagation={"enabled": True, "match": ["org.example/team", "compliance.example/["]},
        env=[{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
        storage={"pvcHeadroomPercent": -5},
    )
    assert await hook.denial(bad, "aimruntimeconfig") == "; ".join(
        [
            'spec.routing.requestTimeout: time: invalid duration "ten seconds"',
            "spec.routing.gatewayRef.name: required",
            BAD_PATTERN,
            "spec.env[1].name: duplicate name 'A'",
            "spec.storage.pvcHeadroomPercent: must be at least 0, got -5",
        ]
    )


async def test_an_aim_service_is_checked_inline_and_in_its_own_routing(hook: Hook) -> None:
    bad = aim_service(
        runtimeConfig={"labelPropagation": {"enabled": True, "match": ["compliance.example/["]}},
        routing={"pathTemplate": "/custom/{.metadata.labels['team']"},
    )
    assert await hook.denial(bad, "aimservice") == "; ".join(
        [
            "spec.runtimeConfig.labelPropagation.match[0]: pattern 'compliance.example/[' has an unclosed character "
            "class at offset 19",
            'spec.routing.pathTemplate: unmatched "{" at offset 8',
        ]
    )
    ok = aim_service(routing={"pathTemplate": "/custom/{.metadata.name}"}, runtimeConfigName="non-existent")
    assert (await hook.review(ok, "aimservice"))["allowed"] is True  # a missing config is the controller's to report


async def test_a_service_without_spec_is_admitted_as_its_crd_allows(hook: Hook) -> None:
    bare = {k: v for k, v in aim_service().items() if k != "spec"}
    assert (await hook.review(bare, "aimservice"))["allowed"] is True


async def test_a_delete_is_always_admitted(hook: Hook) -> None:
    response = await hook.review("not even an object", "aimservice", operation="DELETE")
    assert response["allowed"] is True


MALFORMED: list[tuple[str, str, Any, str]] = [
    ("a-list", "aimruntimeconfig", [1], "the object is not a JSON object"),
    ("null", "aimservice", None, "the object is not a JSON object"),
    ("no-metadata", "aimruntimeconfig", {"kind": "AIMRuntimeConfig"}, "metadata.name is required"),
    ("name-a-number", "aimservice", {"metadata": {"name": 3}, "spec": {}}, "metadata.name is required"),
    (
        "labels-not-strings",
        "aimservice",
        {"metadata": {"name": "x", "labels": {"team": 1}}, "spec": {"model": {"name": "m"}}},
        "metadata.labels must be a map of strings",
    ),
    ("service-spec-a-list", "aimservice", {"metadata": {"name": "x"}, "spec": []}, "spec must be an object"),
    ("spec-a-string", "aimclusterruntimeconfig", {"metadata": {"name": "x"}, "spec": "x"}, "spec must be an object"),
    (
        "routing-a-list",
        "aimruntimeconfig",
        {"metadata": {"name": "x"}, "spec": {"routing": ["enabled"]}},
        "spec.routing: must be an object",
    ),
    (
        "env-an-object",
        "aimservice",
        {"metadata": {"name": "x"}, "spec": {"model": {"name": "m"}, "env": {"A": "1"}}},
        "spec.env: must be a list",
    ),
    (
        "match-a-string",
        "aimruntimeconfig",
        {"metadata": {"name": "x"}, "spec": {"labelPropagation": {"match": "org.example/*"}}},
        "spec.labelPropagation.match: must be a list",
    ),
    (
        "inline-gateway-a-string",
        "aimservice",
        {"metadata": {"name": "x"}, "spec": {"model": {}, "runtimeConfig": {"routing": {"gatewayRef": "gw"}}}},
        "spec.runtimeConfig.routing.gatewayRef: must be an object",
    ),
    (
        "another-kind",
        "aimservice",
        {"kind": "AIMRuntimeConfig", "metadata": {"name": "x"}, "spec": {}},
        'this webhook validates AIMService objects, not "AIMRuntimeConfig"',
    ),
]


@pytest.mark.parametrize(("path", "obj", "message"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
async def test_malformed_input_gets_a_clear_denial(hook: Hook, path: str, obj: Any, message: str) -> None:
    assert await hook.denial(obj, path) == message


async def test_a_body_that_is_not_an_admission_review_gets_a_400_not_a_500(hook: Hook) -> None:
    async with hook.session.post(f"{hook.server.base_url}/validate/{CLUSTER}/aimservice", data=b"{") as reply:
        assert reply.status == 400


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=12,
)
FIELDS = st.sampled_from(["routing", "labelPropagation", "env", "storage", "runtimeConfig", "model", "x"])
SPECS = st.dictionaries(FIELDS, JSON | st.dictionaries(st.sampled_from(["match", "pathTemplate", "gatewayRef"]), JSON))


@settings(max_examples=200, deadline=None)
@given(kind=st.sampled_from(["AIMRuntimeConfig", "AIMClusterRuntimeConfig", "AIMService"]), spec=SPECS | JSON)
def test_random_specs_get_a_verdict_never_an_exception(kind: str, spec: Any) -> None:
    verdict = validate_aim(kind, {"metadata": {"name": "x"}, "spec": spec})
    assert verdict is None or (isinstance(verdict, str) and verdict)


def test_the_webhook_configuration_covers_the_aim_kinds_and_versions() -> None:
    server = WebhookServer("127.0.0.1", 9443, None, b"ca")
    hooks = {h["name"]: h for h in webhook_configuration(server, CLUSTER)["webhooks"]}
    rules = {name: hooks[name]["rules"][0] for name in (AIM_RUNTIME_CONFIG_WEBHOOK, AIM_CLUSTER_RUNTIME_CONFIG_WEBHOOK)}
    for rule in rules.values():
        assert rule["apiGroups"] == ["aim.eai.amd.com"]
        assert rule["apiVersions"] == ["v1alpha1", "v1alpha2"]
    assert rules[AIM_RUNTIME_CONFIG_WEBHOOK]["resources"] == ["aimruntimeconfigs"]
    assert rules[AIM_CLUSTER_RUNTIME_CONFIG_WEBHOOK]["resources"] == ["aimclusterruntimeconfigs"]
    service_rule = hooks[AIM_SERVICE_WEBHOOK]["rules"][0]
    assert (service_rule["apiVersions"], service_rule["resources"]) == (["v1alpha2"], ["aimservices"])
    assert hooks[AIM_SERVICE_WEBHOOK]["clientConfig"]["url"] == f"http://127.0.0.1:9443/validate/{CLUSTER}/aimservice"


# --- through kubectl and the cluster's ValidatingWebhookConfiguration ------------------------------------------


class Cluster:
    def __init__(self, kubectl: Kubectl) -> None:
        self.kubectl = kubectl

    def apply(self, doc: dict[str, Any]) -> tuple[int, str]:
        proc = self.kubectl.run(f"--context={CLUSTER}", "apply", "-f", "-", input=yaml.safe_dump(doc), check=False)
        return proc.returncode, proc.stderr + proc.stdout


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = tmp_path_factory.mktemp("aim-webhooks")
    bg = BackgroundFleet(EmbeddedFleet(1, name_prefix="aimwh-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))
        kubeconfig = bg.fleet.write_kubeconfig(base / "fleet.kubeconfig")
        write_registrations(base / "clusters", kubeconfig, [CLUSTER])
        settings = Settings.load(webhook_port=0, clusters_dir=base / "clusters", trace_file=base / "traces.jsonl")

        async def start() -> ControllerApp:
            app = ControllerApp(settings)
            await app.start()
            await app.wait_synced(60)
            return app

        app = bg.run(start())
        try:
            kubectl = Kubectl(kubectl_path(), kubeconfig, base / "kube-cache")
            deadline = time.monotonic() + 30
            while True:  # `omectl run` installs its webhooks in the background
                proc = kubectl.run(
                    f"--context={CLUSTER}", "get", "validatingwebhookconfigurations", "-o", "json", check=False
                )
                names = [w["name"] for c in json.loads(proc.stdout or "{}").get("items", []) for w in c["webhooks"]]
                if AIM_SERVICE_WEBHOOK in names:
                    break
                assert time.monotonic() < deadline, "the AIM webhooks were never installed"
                time.sleep(0.1)
            kubectl.run(f"--context={CLUSTER}", "apply", "-f", str(SAMPLES / "00-namespaces.yaml"))
            yield Cluster(kubectl)
        finally:
            bg.run(app.stop())
    finally:
        bg.stop()


def denied_by(webhook: str, reason: str) -> str:
    return f'admission webhook "{webhook}" denied the request: {reason}'


@pytest.mark.kubectl
def test_kubectl_apply_of_an_invalid_runtime_config_is_denied_with_the_reason(cluster: Cluster) -> None:
    rc, out = cluster.apply(config(routing={**ROUTING, "pathTemplate": "/{.metadata[}"}))
    assert rc != 0
    assert denied_by(AIM_RUNTIME_CONFIG_WEBHOOK, BAD_TEMPLATE) in out
    rc, out = cluster.apply(
        config("AIMClusterRuntimeConfig", labelPropagation={"enabled": True, "match": ["a", "compliance.example/["]})
    )
    assert rc != 0
    assert denied_by(AIM_CLUSTER_RUNTIME_CONFIG_WEBHOOK, BAD_PATTERN) in out


@pytest.mark.kubectl
def test_kubectl_apply_of_an_invalid_service_is_denied_and_a_valid_one_created(cluster: Cluster) -> None:
    rc, out = cluster.apply(aim_service(runtimeConfig={"routing": {"requestTimeout": "ten seconds"}}))
    assert rc != 0
    reason = 'spec.runtimeConfig.routing.requestTimeout: time: invalid duration "ten seconds"'
    assert denied_by(AIM_SERVICE_WEBHOOK, reason) in out
    rc, out = cluster.apply(aim_service(routing={"pathTemplate": "/custom/{.metadata.name}"}))
    assert rc == 0, out
    assert out.strip() == "aimservice.aim.eai.amd.com/qwen-chat created"
    rc, out = cluster.apply(config(routing={**ROUTING, "pathTemplate": "/ml/{.metadata.namespace}"}))
    assert rc == 0, out
