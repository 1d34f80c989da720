"""Bad input to a running controller: fuzzed AdmissionReviews, malformed kubeconfigs and registration files,
oversized objects, unicode in labels, annotations and path templates. Never a 500, never a crash or a traceback,
always a clear verdict; the controller stays healthy and its workload equal to the expected render.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from omectl.fleet.providers import provider_from_settings
from omectl.tls import client_ssl_context
from tests.resilience.workload import (
    AIM_NAMESPACE,
    AIM_SERVICES_KEY,
    DEPLOYMENTS,
    MixedFleet,
    aim_namespace_config,
    aim_service,
    apply_all,
    expected_aim,
    inference_service,
    mixed_fleet,
    until,
)

pytestmark = pytest.mark.xdist_group("resilience")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def fleet(tmp_path: Path) -> AsyncIterator[MixedFleet]:
    async with mixed_fleet(tmp_path, "bi-", count=1) as fleet:
        yield fleet


# --- fuzzed admission ----------------------------------------------------------------------------------------


@pytest.fixture
async def fuzzed_fleet(tmp_path: Path) -> AsyncIterator[MixedFleet]:
    """The fleet the fuzz test hammers; after every example has run, that same fleet must be converged and
    healthy (checked here, at teardown: a failure shows as the test's error)."""
    async with mixed_fleet(tmp_path, "bf-", count=1) as fleet:
        yield fleet
        await fleet.converged(10)
        await fleet.healthy()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3),
    max_leaves=10,
)
TEXT = st.text(max_size=20) | st.sampled_from(["sglang-profile", "sglang-llama-3-2-3b", "", "é/ü", "{{.Name}}"])
METADATA = st.fixed_dictionaries(
    {},
    optional={
        "name": TEXT | JSON,
        "namespace": st.sampled_from(["team-a", "ml-team", ""]) | JSON,
        "labels": st.dictionaries(TEXT, TEXT, max_size=3) | JSON,
        "annotations": st.dictionaries(
            st.sampled_from(["ome.io/inherit-from", "ome.io/runtime-profile", "x"]), TEXT | JSON, max_size=2
        )
        | JSON,
    },
)
RUNTIME_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "disabled": JSON,
        "engineConfig": st.fixed_dictionaries({}, optional={"runner": JSON}) | JSON,
        "supportedModelFormats": JSON,
    },
)
AIM_SPEC = st.fixed_dictionaries(
    {},
    optional={
        "routing": st.fixed_dictionaries(
            {},
            optional={
                "enabled": JSON,
                "pathTemplate": TEXT
                | st.sampled_from(["/ml/{.metadata.labels['project']}", "/{.x", "/é/{.metadata.name}"]),
                "gatewayRef": JSON,
                "requestTimeout": TEXT | JSON,
            },
        )
        | JSON,
        "labelPropagation": st.fixed_dictionaries({}, optional={"enabled": JSON, "match": JSON}) | JSON,
        "env": JSON,
        "model": JSON,
        "runtimeConfigName": TEXT | JSON,
    },
)
OBJECTS = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.sampled_from(["ome.io/v1beta1", "aim.eai.amd.com/v1alpha2"]) | JSON,
        "kind": st.sampled_from(["ServingRuntime", "ClusterServingRuntime", "InferenceService", "AIMService"]) | JSON,
        "metadata": METADATA | JSON,
        "spec": RUNTIME_SPEC | AIM_SPEC | JSON,
    },
)
REVIEWS = st.fixed_dictionaries(
    {},
    optional={
        "apiVersion": st.just("admission.k8s.io/v1") | JSON,
        "kind": st.just("AdmissionReview") | JSON,
        "request": st.fixed_dictionaries(
            {},
            optional={
                "uid": st.uuids().map(str) | JSON,
                "operation": st.sampled_from(["CREATE", "UPDATE", "DELETE", "CONNECT"]) | JSON,
                "object": OBJECTS | JSON,
                "oldObject": OBJECTS | JSON,
            },
        )
        | JSON,
    },
)
PATHS = st.sampled_from(
    [
        "servingruntime",
        "clusterservingruntime",
        "inferenceservice",
        "aimruntimeconfig",
        "aimclusterruntimeconfig",
        "aimservice",
        "pod",
    ]
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=REVIEWS | JSON, kind=PATHS, cluster=st.sampled_from(["bf-1", "unknown"]), garbage=st.booleans())
async def test_fuzzed_admission_reviews_get_a_verdict_never_a_500(
    fuzzed_fleet: MixedFleet, body: Any, kind: str, cluster: str, garbage: bool
) -> None:
    webhook = fuzzed_fleet.app.webhook
    assert webhook.ca_pem is not None
    connector = aiohttp.TCPConnector(ssl=client_ssl_context(webhook.ca_pem))
    raw = b"\x00{not json" if garbage else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession(connector=connector) as session,
        session.post(f"{webhook.base_url}/validate/{cluster}/{kind}", data=raw) as reply,
    ):
        status, text = reply.status, await reply.text()
    assert status < 500, text
    request = body.get("request") if isinstance(body, dict) else None
    if garbage or not (isinstance(request, dict) and isinstance(request.get("uid"), str)):
        assert status == 400, text
        return
    assert status == 200, text
    response = json.loads(text)["response"]
    assert response["uid"] == request["uid"]
    if not response["allowed"]:
        message = response["status"]["message"]
        assert isinstance(message, str) and message.strip(), response
        assert not message.startswith("internal error"), message


# --- malformed kubeconfigs and registration files ---------------------------------------------------------------

BAD_KUBECONFIGS = {
    "truncated": "apiVersion: v1\nclusters: [\n",
    "not-a-kubeconfig": "not: a kubeconfig\n",
    "a-list": "- 1\n- 2\n",
    "binary": "\x00\x01\x02",
    "no-server": "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {}}]\nusers: [{name: u, user: {}}]\n"
    "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n",
}
BAD_REGISTRATIONS = {
    "bad-yaml.yaml": "kind: ClusterRegistration\n: : :\n",
    "bad-name.yaml": "apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\nmetadata: {name: 'Bad Name!'}\n"
    "spec: {kubeconfig: {path: x}}\n",
    "inline-number.yaml": "apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\nmetadata: {name: num}\n"
    "spec: {kubeconfig: {inline: 42}}\n",
    "no-spec.yaml": "apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\nmetadata: {name: nospec}\n",
    "unicode.yaml": "apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\nmetadata: {name: ünï}\n"
    "spec: {kubeconfig: {path: ü.kc}}\n",
}


def omectl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "omectl", *args], capture_output=True, text=True, cwd=cwd, timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd), "COLUMNS": "400"},
    )  # fmt: skip


def test_malformed_kubeconfigs_and_registrations_give_one_line_errors_never_a_traceback(tmp_path: Path) -> None:
    clusters = tmp_path / "clusters"
    for name, text in BAD_KUBECONFIGS.items():
        path = tmp_path / f"{name}.kc"
        path.write_text(text)
        proc = omectl("cluster", "add", name, "--kubeconfig", str(path), "--clusters-dir", str(clusters), cwd=tmp_path)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 1, (name, output)
        assert "Traceback" not in output, output
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: "), (name, output)
    clusters.mkdir(exist_ok=True)
    for name, text in BAD_REGISTRATIONS.items():
        (clusters / name).write_text(text)
    for command in ("check", "list"):
        proc = omectl("cluster", command, "--clusters-dir", str(clusters), cwd=tmp_path)
        output = proc.stdout + proc.stderr
        assert "Traceback" not in output, output
        for name in BAD_REGISTRATIONS:
            (line,) = [line for line in output.splitlines() if f"{name}:" in line]
            assert len(line.split(f"{name}:", 1)[1].strip()) > 5, line


async def test_the_directory_provider_reports_each_bad_file_and_keeps_going(tmp_path: Path) -> None:
    for name, text in BAD_REGISTRATIONS.items():
        (tmp_path / name).write_text(text)
    provider = await provider_from_settings(tmp_path, None)
    try:
        await provider.rescan()  # type: ignore[attr-defined]
        errors = provider.errors
        assert len(errors) == len(BAD_REGISTRATIONS), errors
        assert all(isinstance(m, str) and m and "\n" not in m for m in errors.values()), errors
    finally:
        await provider.close()


# --- oversized objects, unicode ----------------------------------------------------------------------------------


async def test_an_oversized_object_is_refused_and_the_controller_survives(fleet: MixedFleet) -> None:
    server = fleet.servers[0]
    big = inference_service("isvc-huge", "team-a")
    big["metadata"]["annotations"] = {"example.com/blob": "x" * (3 * 1024 * 1024)}
    async with (
        aiohttp.ClientSession(headers=server.auth_headers) as session,
        session.post(f"{server.url}/apis/ome.io/v1beta1/namespaces/team-a/inferenceservices", json=big) as reply,
    ):
        assert reply.status in (413, 422), reply.status
        body = await reply.json()
        assert body["kind"] == "Status" and body["message"], body
    assert server.api.store.get(("ome.io", "inferenceservices"), "team-a", "isvc-huge") is None
    await fleet.converged(10)
    await fleet.healthy()


async def test_unicode_annotations_render_and_unicode_templates_render_or_say_path_template_invalid(
    fleet: MixedFleet,
) -> None:
    server = fleet.servers[0]
    isvc = inference_service(f"isvc-unicode-{uuid.uuid4().hex[:4]}", "team-b")
    isvc["metadata"]["annotations"] = {"example.com/owner": "Zoë Ångström ✓ 模型"}
    labels = {"project": "ü-project", "org.example/cost-center": "cc"}  # a label value Kubernetes refuses
    async with (
        aiohttp.ClientSession(headers=server.auth_headers) as session,
        session.post(
            f"{server.url}/apis/aim.eai.amd.com/v1alpha2/namespaces/{AIM_NAMESPACE}/aimservices",
            json=aim_service("chat-bad-label", labels),
        ) as reply,
    ):
        assert reply.status == 422 and "metadata.labels" in (await reply.json())["message"]
    await apply_all(server, [isvc, aim_namespace_config("/ml/é/{.metadata.labels['project']}/☃")])
    await apply_all(server, [aim_service("chat-weird-template", {"project": "p1"})])
    await fleet.converged(15)  # the unicode annotation reaches the Deployment as rendered; the paths as the core says
    deployment = server.api.store.get(DEPLOYMENTS, "team-b", f"{isvc['metadata']['name']}-engine")
    assert deployment is not None
    service = server.api.store.get(AIM_SERVICES_KEY, AIM_NAMESPACE, "chat-weird-template")
    assert service is not None
    expected = expected_aim(server, service)

    def route_condition() -> dict[str, Any] | None:
        live = server.api.store.get(AIM_SERVICES_KEY, AIM_NAMESPACE, "chat-weird-template") or {}
        conditions = (live.get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c.get("type") == "HTTPRouteReady"), None)

    condition = await until([server], route_condition, 10, "HTTPRouteReady")
    if expected.status["routing.path"] is None:
        assert (condition["status"], condition["reason"]) == ("False", "PathTemplateInvalid"), condition
        assert condition["message"], condition
    else:
        assert condition["reason"] != "PathTemplateInvalid", condition
    await fleet.healthy()
