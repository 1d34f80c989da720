"""Conformance through the real kubectl (the (k) items): apply, get, patch, watch, delete, wait, webhooks, TLS."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from omectl.tls import CertificateAuthority, server_ssl_context
from tests.support import Kubectl, kubectl_path, widget, widget_crd

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("kubectl")]


def dump(*docs: dict[str, Any]) -> str:
    return yaml.safe_dump_all(list(docs))


@pytest.fixture(scope="module")
def k(fleet_kubectl: Kubectl) -> Kubectl:
    """kubectl on cluster bg-1 with the widget CRD installed."""
    fleet_kubectl.run("--context=bg-1", "apply", "-f", "-", input=dump(widget_crd()))
    fleet_kubectl.run("--context=bg-1", "wait", "--for=condition=Established", "crd/widgets.example.com")
    return fleet_kubectl


def table(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_dispatcher_picks_kubectl_1_32(k: Kubectl) -> None:
    out = json.loads(k.run("--context=bg-1", "version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"].startswith("v1.32.")
    assert out["clientVersion"]["minor"].rstrip("+") == "32"
    assert out["clientVersion"]["gitVersion"].startswith("v1.32.")


def test_api_resources_lists_builtins_and_the_crd(k: Kubectl) -> None:
    out = k.run("--context=bg-1", "api-resources").stdout
    rows = {r[0]: r for r in table(out)[1:]}
    assert rows["widgets"][1] == "wd"
    assert rows["widgets"][2] == "example.com/v1"
    assert "configmaps" in rows
    assert "leases" in rows


def test_apply_client_side_created_unchanged_configured(k: Kubectl) -> None:
    doc = widget("csa", size=1)
    assert k.run("--context=bg-1", "apply", "-f", "-", input=dump(doc)).stdout.strip() == (
        "widget.example.com/csa created"
    )
    assert k.run("--context=bg-1", "apply", "-f", "-", input=dump(doc)).stdout.strip() == (
        "widget.example.com/csa unchanged"
    )
    doc["spec"] = {"size": 2}
    assert k.run("--context=bg-1", "apply", "-f", "-", input=dump(doc)).stdout.strip() == (
        "widget.example.com/csa configured"
    )
    live = json.loads(k.run("--context=bg-1", "get", "widget", "csa", "-o", "json").stdout)
    assert live["spec"] == {"size": 2, "mode": "auto"}
    last = json.loads(live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"])
    assert last["spec"] == {"size": 2}


def test_apply_server_side_conflicts_and_force(k: Kubectl) -> None:
    doc = widget("ssa", size=1)
    out = k.run("--context=bg-1", "apply", "--server-side", "-f", "-", input=dump(doc)).stdout
    assert out.strip() == "widget.example.com/ssa serverside-applied"
    doc["spec"] = {"size": 5}
    clash = k.run(
        "--context=bg-1",
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        "-",
        input=dump(doc),
        check=False,
    )
    assert clash.returncode != 0
    assert 'conflict with "kubectl"' in clash.stderr
    assert ".spec.size" in clash.stderr
    k.run(
        "--context=bg-1",
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        "-",
        input=dump(doc),
    )
    live = json.loads(k.run("--context=bg-1", "get", "widget", "ssa", "-o", "json", "--show-managed-fields").stdout)
    assert live["spec"]["size"] == 5
    managers = {m["manager"] for m in live["metadata"]["managedFields"]}
    assert "other" in managers


def test_get_table_shows_printer_columns(k: Kubectl) -> None:
    k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("tbl", size=7, color="red")))
    k.run(
        "--context=bg-1",
        "patch",
        "widget",
        "tbl",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"conditions":[{"type":"Ready","status":"True"}]}}',
    )
    rows = table(k.run("--context=bg-1", "get", "widgets", "tbl").stdout)
    assert rows[0] == ["NAME", "SIZE", "COLOR", "READY", "AGE"]
    assert rows[1][:4] == ["tbl", "7", "red", "True"]


def test_get_custom_columns_with_a_filter_and_jsonpath(k: Kubectl) -> None:
    k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("cc", size=3, color="blue")))
    k.run(
        "--context=bg-1",
        "patch",
        "wd",
        "cc",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status":{"conditions":[{"type":"Synced","status":"False"},{"type":"Ready","status":"True"}]}}',
    )
    out = k.run(
        "--context=bg-1",
        "get",
        "wd",
        "cc",
        "-o",
        'custom-columns=NAME:.metadata.name,SIZE:.spec.size,READY:.status.conditions[?(@.type=="Ready")].status',
    ).stdout
    assert table(out) == [["NAME", "SIZE", "READY"], ["cc", "3", "True"]]
    jp = k.run("--context=bg-1", "get", "wd", "cc", "-o", "jsonpath={.spec.color}/{.metadata.namespace}").stdout
    assert jp == "blue/default"


def test_get_yaml_lists_items(k: Kubectl) -> None:
    k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("y1"), widget("y2")))
    doc = yaml.safe_load(k.run("--context=bg-1", "get", "widgets", "-o", "yaml").stdout)
    names = [i["metadata"]["name"] for i in doc["items"]]
    assert {"y1", "y2"} <= set(names)
    assert all("managedFields" not in i["metadata"] for i in doc["items"])


def test_patch_types_and_the_strategic_415(k: Kubectl) -> None:
    k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("pt", size=1)))
    k.run("--context=bg-1", "patch", "widget", "pt", "--type=merge", "-p", '{"spec":{"size":4}}')
    k.run(
        "--context=bg-1",
        "patch",
        "widget",
        "pt",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/spec/color","value":"green"}]',
    )
    spec = json.loads(k.run("--context=bg-1", "get", "widget", "pt", "-o", "json").stdout)["spec"]
    assert (spec["size"], spec["color"]) == (4, "green")
    smp = k.run("--context=bg-1", "patch", "widget", "pt", "-p", '{"spec":{"size":5}}', check=False)
    assert smp.returncode != 0
    assert "application/strategic-merge-patch+json is not supported" in smp.stderr
    assert "the body of the request was in an unknown format" in smp.stderr


def test_validation_error_is_printed_with_the_servers_text(k: Kubectl) -> None:
    bad = k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("bad", size=1000)), check=False)
    assert bad.returncode != 0
    assert 'The Widget "bad" is invalid' in bad.stderr
    assert "spec.size" in bad.stderr
    assert "less than or equal to 100" in bad.stderr


def test_get_watch_prints_an_update(k: Kubectl) -> None:
    k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("wt", size=1)))
    proc = subprocess.Popen(
        k.argv("--context=bg-1", "get", "widgets", "wt", "-w", "--output-watch-events"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=k.env(),
    )
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline().split()
        assert header[:3] == ["EVENT", "NAME", "SIZE"]
        first = proc.stdout.readline().split()
        assert first[:3] == ["ADDED", "wt", "1"]
        k.run("--context=bg-1", "patch", "widget", "wt", "--type=merge", "-p", '{"spec":{"size":9}}')
        update = proc.stdout.readline().split()
        assert update[:3] == ["MODIFIED", "wt", "9"]
    finally:
        proc.kill()
        proc.wait(10)


def test_delete_returns_once_the_object_is_gone(k: Kubectl, bg_fleet: BackgroundFleet) -> None:
    doc = widget("del", size=1)
    doc["metadata"]["finalizers"] = ["example.com/hold"]
    k.run("--context=bg-1", "apply", "-f", "-", input=dump(doc))
    proc = subprocess.Popen(
        k.argv("--context=bg-1", "delete", "widget", "del", "--timeout=30s"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=k.env(),
    )
    server = bg_fleet.fleet["bg-1"]
    key = ("example.com", "widgets")
    deadline = time.monotonic() + 20
    while not (server.api.store.get(key, "default", "del") or {}).get("metadata", {}).get("deletionTimestamp"):
        assert time.monotonic() < deadline, "delete was never marked"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    assert proc.poll() is None  # still waiting: the finalizer holds the object
    k.run("--context=bg-1", "patch", "widget", "del", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out.strip() == 'widget.example.com "del" deleted'
    assert server.api.store.get(key, "default", "del") is None


def test_server_dry_run_writes_nothing(k: Kubectl, bg_fleet: BackgroundFleet) -> None:
    server = bg_fleet.fleet["bg-1"]
    rv = server.api.store.rv
    out = k.run("--context=bg-1", "apply", "--dry-run=server", "-f", "-", input=dump(widget("dry"))).stdout
    assert out.strip() == "widget.example.com/dry created (server dry run)"
    assert server.api.store.rv == rv
    assert k.run("--context=bg-1", "get", "widget", "dry", check=False).returncode != 0


def test_events_table_columns(k: Kubectl) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "ev1", "namespace": "default"},
        "involvedObject": {
            "kind": "Widget",
            "name": "tbl",
            "namespace": "default",
            "apiVersion": "example.com/v1",
        },
        "reason": "Tested",
        "message": "an event for the table",
        "type": "Normal",
        "count": 1,
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:00Z",
    }
    k.run("--context=bg-1", "create", "-f", "-", input=dump(event))
    out = k.run("--context=bg-1", "get", "events").stdout
    lines = out.strip().splitlines()
    assert lines[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert any("Tested" in line and "widget/tbl" in line and "an event for the table" in line for line in lines[1:])


def test_namespaces_table(k: Kubectl) -> None:
    rows = table(k.run("--context=bg-1", "get", "namespaces").stdout)
    assert rows[0] == ["NAME", "STATUS", "AGE"]
    assert rows[1][:2] == ["default", "Active"]


def test_contexts_select_independent_clusters(fleet_kubectl: Kubectl, bg_fleet: BackgroundFleet) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "only-on-2", "namespace": "default"}}
    fleet_kubectl.run("--context=bg-2", "apply", "-f", "-", input=dump(cm))
    assert fleet_kubectl.run("--context=bg-2", "get", "cm", "only-on-2", "-o", "name").stdout.strip() == (
        "configmap/only-on-2"
    )
    missing = fleet_kubectl.run("--context=bg-1", "get", "cm", "only-on-2", check=False)
    assert missing.returncode != 0
    assert 'configmaps "only-on-2" not found' in missing.stderr
    one, two = bg_fleet.fleet["bg-1"], bg_fleet.fleet["bg-2"]
    assert one.url != two.url


def test_webhook_denial_is_printed_by_kubectl(k: Kubectl, bg_fleet: BackgroundFleet) -> None:
    ca = CertificateAuthority.generate()
    cert = ca.issue(["127.0.0.1", "localhost"])

    async def review(request: web.Request) -> web.Response:
        body = await request.json()
        obj = body["request"]["object"]
        allowed = (obj.get("spec") or {}).get("color") != "red"
        response: dict[str, Any] = {"uid": body["request"]["uid"], "allowed": allowed}
        if not allowed:
            response["status"] = {"code": 403, "message": "red widgets are not allowed"}
        return web.json_response({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})

    async def start_webhook() -> tuple[web.AppRunner, int]:
        app = web.Application()
        app.router.add_post("/validate", review)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl_context(cert))
        await site.start()
        return runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    runner, port = bg_fleet.run(start_webhook())
    import base64

    config = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "widget-policy"},
        "webhooks": [
            {
                "name": "color.widgets.example.com",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{port}/validate",
                    "caBundle": base64.b64encode(ca.cert_pem).decode(),
                },
                "rules": [
                    {
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["example.com"],
                        "apiVersions": ["*"],
                        "resources": ["widgets"],
                    }
                ],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "failurePolicy": "Fail",
            }
        ],
    }
    try:
        k.run("--context=bg-1", "apply", "-f", "-", input=dump(config))
        denied = k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("red", color="red")), check=False)
        assert denied.returncode != 0
        assert 'admission webhook "color.widgets.example.com" denied the request: red widgets are not allowed' in (
            denied.stderr
        )
        k.run("--context=bg-1", "apply", "-f", "-", input=dump(widget("green", color="green")))
    finally:
        k.run("--context=bg-1", "delete", "validatingwebhookconfiguration", "widget-policy")
        bg_fleet.run(runner.cleanup())


@pytest.mark.parametrize("mode", ["ca-data", "insecure"])
def test_kubectl_over_tls(mode: str, tmp_path: Path) -> None:
    binary = kubectl_path()
    with BackgroundFleet(EmbeddedFleet(1, name_prefix="tls-", tls=True)) as fleet:
        path = fleet.fleet.write_kubeconfig(tmp_path / "kubeconfig")
        if mode == "insecure":
            config = yaml.safe_load(path.read_text())
            cluster = config["clusters"][0]["cluster"]
            del cluster["certificate-authority-data"]
            cluster["insecure-skip-tls-verify"] = True
            path.write_text(yaml.safe_dump(config))
        k = Kubectl(binary, path, tmp_path / "cache")
        assert fleet.fleet.servers[0].url.startswith("https://")
        k.run("apply", "-f", "-", input=dump(widget_crd()))
        k.run("wait", "--for=condition=Established", "crd/widgets.example.com")
        assert k.run("apply", "-f", "-", input=dump(widget("secure"))).stdout.strip() == (
            "widget.example.com/secure created"
        )


def test_kubectl_create_generators_send_protobuf_and_work(k: Kubectl) -> None:
    assert k.run("--context=bg-1", "create", "namespace", "proto-ns").stdout.strip() == "namespace/proto-ns created"
    out = k.run("--context=bg-1", "create", "configmap", "proto-cm", "-n", "proto-ns", "--from-literal=a=b").stdout
    assert out.strip() == "configmap/proto-cm created"
    k.run("--context=bg-1", "create", "secret", "generic", "proto-s", "-n", "proto-ns", "--from-literal=token=t0k")
    cm = json.loads(k.run("--context=bg-1", "get", "cm", "proto-cm", "-n", "proto-ns", "-o", "json").stdout)
    assert cm["data"] == {"a": "b"}
    secret = json.loads(k.run("--context=bg-1", "get", "secret", "proto-s", "-n", "proto-ns", "-o", "json").stdout)
    assert secret["data"] == {"token": "dDBr"}
    assert secret["type"] == "Opaque"
