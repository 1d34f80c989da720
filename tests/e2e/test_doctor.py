"""`omectl doctor` against a simulated cluster with the controller running, then with each thing it checks broken."""

from __future__ import annotations

import base64
import datetime as dt
import json
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from typer.testing import CliRunner, Result

from omectl.api import crdgen
from omectl.cli.dev import write_registrations
from omectl.cli.main import app
from omectl.kube.crds import INSTALL_CRDS
from tests.e2e.conftest import DATA, ROOT, ControlledFleet, running_fleet
from tests.support import ClusterKubectl, Kubectl, simulated_fleet, start_omectl_run, stop_process, until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]
# libyaml when present: the runtime CRDs are ~0.8 MB each
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

CLUSTER = "doc-1"
CONVERSION_URL = "{.spec.conversion.webhook.clientConfig.url}"
UPSTREAM_E2E = ROOT / "tests" / "fixtures" / "upstream" / "aim" / "tests" / "e2e"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledFleet]:
    with running_fleet(tmp_path_factory.mktemp("doctor"), 1, "doc-", concurrency=4) as running:
        if running.app is None:
            pytest.skip("breaks the embedded cluster on purpose (OMECTL_E2E_KUBECONFIG is set)")
        wait_webhooks(running)
        yield running


def wait_webhooks(fleet: ControlledFleet, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while "omectl-ome-webhooks" not in fleet.k(CLUSTER, "get", "validatingwebhookconfigurations", "-o", "name"):
        assert time.monotonic() < deadline, "the controller never installed its webhooks"
        time.sleep(0.05)
    until(lambda: converting(fleet.kubectl, CLUSTER), "the converted CRDs pointed at the controller", timeout)


def converting(kubectl: Kubectl, cluster: str) -> bool:
    """Every CRD served at two versions names the conversion webhook of the controller that runs `cluster`."""
    for definition in crdgen.converted_crds():
        url = kubectl.run(
            f"--context={cluster}", "get", "crd", definition.name, "-o", f"jsonpath={CONVERSION_URL}"
        ).stdout
        if not url.endswith(f"/convert/{cluster}"):
            return False
    return True


def doctor(
    fleet: ControlledFleet | Kubectl, *args: str, cluster: str = CLUSTER
) -> tuple[int, dict[str, list[dict[str, str]]]]:
    """Exit code, and findings by check."""
    kubeconfig = fleet.kubeconfig if isinstance(fleet, Kubectl) else fleet.kubectl.kubeconfig
    result: Result = CliRunner().invoke(
        app, ["doctor", "--kubeconfig", str(kubeconfig), "--context", cluster, "-o", "json", *args]
    )
    (cluster,) = json.loads(result.stdout)["clusters"]
    by_check: dict[str, list[dict[str, str]]] = {}
    for finding in cluster["findings"]:
        by_check.setdefault(finding["check"], []).append(finding)
    return result.exit_code, by_check


def statuses(findings: dict[str, list[dict[str, str]]]) -> dict[str, list[str]]:
    return {check: [f["status"] for f in found] for check, found in findings.items()}


def test_a_healthy_cluster_passes_and_says_what_it_could_not_check(fleet: ControlledFleet) -> None:
    code, findings = doctor(fleet)
    assert statuses(findings) == {
        "crds": ["PASS"],
        "controller": ["PASS"],
        "webhooks": ["PASS"],
        "webhook-certificates": ["PASS"],
        "conversion-webhooks": ["PASS"],
        # the embedded server serves no SelfSubjectAccessReview; a real one answers it (the admin token may do all)
        "permissions": ["PASS" if fleet.real_api_server else "WARN"],
        "chains": ["PASS"],
        "drift": ["PASS"],
        "aim-namespace": ["WARN"],  # no aim-system namespace, but no cluster model needs it yet
    }
    assert code == 0
    assert doctor(fleet, "--strict")[0] == 1
    table = CliRunner().invoke(app, ["doctor", "--kubeconfig", str(fleet.kubectl.kubeconfig), "--context", CLUSTER])
    assert table.stdout.splitlines()[0].split() == ["CLUSTER", "CHECK", "STATUS", "MESSAGE"]
    assert "To fix:" in table.stdout and "kubectl create namespace aim-system" in table.stdout
    wide = CliRunner().invoke(
        app, ["doctor", "--kubeconfig", str(fleet.kubectl.kubeconfig), "--context", CLUSTER, "-o", "wide"]
    )
    assert wide.stdout.splitlines()[0].split() == ["CLUSTER", "CHECK", "STATUS", "MESSAGE", "FIX"]
    aim_row = next(line for line in wide.stdout.splitlines() if line.split()[1:3] == ["aim-namespace", "WARN"])
    assert aim_row.endswith(findings["aim-namespace"][0]["fix"])
    assert findings["conversion-webhooks"][0]["message"] == (
        f"the conversion webhook(s) of all {len(crdgen.converted_crds())} converted CRD(s) answer"
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def certificate_pem(days_left: float) -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "soon-expired-ca")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=365))
        .not_valid_after(now + dt.timedelta(days=days_left))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM)


def stale_webhook(name: str, policy: str, days_left: float = 365) -> str:
    config: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": f"{name}.example.com",
                "clientConfig": {
                    "url": f"https://127.0.0.1:{closed_port()}/validate",
                    "caBundle": base64.b64encode(certificate_pem(days_left)).decode(),
                },
                "rules": [
                    {
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["nothings"],
                    }
                ],
                "failurePolicy": policy,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }
        ],
    }
    return yaml.safe_dump(config)


def test_a_webhook_whose_server_is_down_fails_naming_it(fleet: ControlledFleet) -> None:
    fleet.k(CLUSTER, "apply", "-f", "-", input=stale_webhook("left-behind", "Fail", days_left=10))
    fleet.k(CLUSTER, "apply", "-f", "-", input=stale_webhook("optional", "Ignore"))
    try:
        code, findings = doctor(fleet)
        assert code == 1
        by_status = {f["status"]: f for f in findings["webhooks"]}
        assert set(by_status) == {"FAIL", "WARN"}
        assert by_status["FAIL"]["message"].startswith(
            "ValidatingWebhookConfiguration left-behind, webhook left-behind.example.com: https://127.0.0.1:"
        )
        assert "every write it matches is denied" in by_status["FAIL"]["message"]
        assert "kubectl delete validatingwebhookconfiguration left-behind" in by_status["FAIL"]["fix"]
        assert "(failurePolicy Ignore)" in by_status["WARN"]["message"]
        (expiring,) = findings["webhook-certificates"]
        assert expiring["status"] == "WARN" and "the caBundle expires" in expiring["message"]
    finally:
        fleet.k(CLUSTER, "delete", "validatingwebhookconfiguration", "left-behind", "optional")


def test_a_broken_chain_and_a_missing_operator_namespace_fail(fleet: ControlledFleet) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "llama-demo"}}
    fleet.k(CLUSTER, "apply", "-f", "-", input=yaml.safe_dump(namespace))
    fleet.k(CLUSTER, "apply", "-f", str(DATA / "profile.yaml"))
    fleet.k(CLUSTER, "apply", "-f", str(DATA / "runtime.yaml"))
    fleet.k(CLUSTER, "delete", "clusterservingruntime", "sglang-profile")
    cluster_model = {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMClusterModel",
        "metadata": {"name": "needs-discovery"},
        "spec": {"image": "amdenterpriseai/aim-qwen-qwen3-32b:0.8.5"},
    }
    fleet.k(CLUSTER, "apply", "-f", "-", input=yaml.safe_dump(cluster_model))
    try:
        deadline = time.monotonic() + 30
        while True:
            code, findings = doctor(fleet)
            if findings["chains"][0]["status"] == "FAIL" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:  # leave the cluster healthy for the other tests, whatever their order
        fleet.k(CLUSTER, "delete", "aimclustermodel", "needs-discovery")
        fleet.k(CLUSTER, "delete", "servingruntime", "sglang-llama-3-2-3b", "-n", "llama-demo")
    assert code == 1
    assert findings["chains"][0]["message"] == (
        "1 runtime chain(s) do not resolve: llama-demo: sglang-llama-3-2-3b (ParentNotFound)"
    )
    assert findings["aim-namespace"][0]["status"] == "FAIL"
    assert "1 AIMClusterModel(s) cannot run discovery" in findings["aim-namespace"][0]["message"]


def test_upstream_runtime_crds_without_a_status_subresource_fail(tmp_path: Any) -> None:
    from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
    from tests.e2e.conftest import ROOT

    bg = BackgroundFleet(EmbeddedFleet(1, name_prefix="upstream-"))
    bg.start()
    try:
        crds = ROOT / "deploy" / "crds"
        bg.run(bg.fleet.apply([path for path in crds.glob("*.yaml") if "servingruntimes" not in path.name]))
        for path in crds.glob("ome.io_*servingruntimes.yaml"):
            crd = next(doc for doc in yaml.load_all(path.read_text(), Loader=_LOADER) if doc)
            for version in crd["spec"]["versions"]:
                version.pop("subresources", None)  # as upstream OME's runtime CRDs are
            (tmp_path / path.name).write_text(yaml.dump(crd, Dumper=_DUMPER))
        bg.run(bg.fleet.apply([tmp_path]))
        kubeconfig = bg.fleet.write_kubeconfig(tmp_path / "kubeconfig")
        result = CliRunner().invoke(app, ["doctor", "--kubeconfig", str(kubeconfig), "-o", "json"])
        assert result.exit_code == 1
        (cluster,) = json.loads(result.stdout)["clusters"]
        crd_findings = [f for f in cluster["findings"] if f["check"] == "crds"]
        assert sorted(f["message"].split(" ")[0] for f in crd_findings) == [
            "clusterservingruntimes.ome.io",
            "servingruntimes.ome.io",
        ]
        assert all(f["status"] == "FAIL" and INSTALL_CRDS in f["fix"] for f in crd_findings)
    finally:
        bg.stop()


def test_after_a_kill_9_doctor_names_the_dead_owner_and_the_fix(tmp_path: Any) -> None:
    # What a SIGKILLed controller leaves: its Lease no longer renewed, its webhooks (failurePolicy Fail) pointing
    # at a server that is gone.
    from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
    from tests.e2e.conftest import ROOT

    bg = BackgroundFleet(EmbeddedFleet(1, name_prefix="killed-"))
    bg.start()
    try:
        bg.run(bg.fleet.apply([ROOT / "deploy" / "crds"]))
        kubeconfig = bg.fleet.write_kubeconfig(tmp_path / "kubeconfig")
        from tests.support import Kubectl, kubectl_path

        k = Kubectl(kubectl_path(), kubeconfig, tmp_path / "cache")
        an_hour_ago = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "omectl-controller", "namespace": "omectl-system"},
            "spec": {
                "holderIdentity": "ctl-a_1f2e3d4c",
                "leaseDurationSeconds": 15,
                "acquireTime": an_hour_ago,
                "renewTime": an_hour_ago,
            },
        }
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "omectl-system"}}
        k.run("apply", "-f", "-", input=yaml.safe_dump_all([namespace, lease]))
        config = yaml.safe_load(stale_webhook("omectl-ome-webhooks", "Fail"))
        k.run("apply", "-f", "-", input=yaml.safe_dump(config))
        result = CliRunner().invoke(app, ["doctor", "--kubeconfig", str(kubeconfig), "-o", "json"])
        assert result.exit_code == 1
        findings = {f["check"]: f for f in json.loads(result.stdout)["clusters"][0]["findings"]}
        controller = findings["controller"]
        assert controller["status"] == "FAIL"
        assert "ctl-a_1f2e3d4c" in controller["message"] and "stopped renewing its lease" in controller["message"]
        assert "omectl cluster uninstall-webhooks" in controller["fix"] or "omectl run" in controller["fix"]
        assert findings["webhooks"]["status"] == "FAIL"
    finally:
        bg.stop()


def test_after_a_kill_9_v1alpha1_fails_and_doctor_names_the_conversion_webhook(tmp_path: Path) -> None:
    """`omectl run` (a real process) points the CRDs served at v1alpha1 and v1alpha2 at its conversion webhook;
    SIGKILLed, it leaves them pointing at a dead port: every v1alpha1 read is a 500, v1alpha2 works, and `omectl
    doctor` says which kinds and versions fail and what to do. The next controller takes the cluster over."""
    artifact = yaml.safe_load((UPSTREAM_E2E / "aimartifact" / "basic-lifecycle-hf" / "artifact.yaml").read_text())
    name = artifact["metadata"]["name"]
    with simulated_fleet(tmp_path, 1, "conv-") as fleet:
        k = ClusterKubectl(fleet.kubectl, "conv-1")
        write_registrations(tmp_path / "clusters", fleet.kubectl.kubeconfig, [k.cluster])
        config = tmp_path / "controller.yaml"  # short leases: the next controller takes the cluster sooner
        config.write_text("lease_duration: 3\nlease_renew_deadline: 2\nlease_retry_period: 0.5\n")
        run = ["--install-webhooks", "--clusters-dir", str(tmp_path / "clusters"), "--config", str(config)]
        first = start_omectl_run(tmp_path / "first.log", *run)
        try:
            until(lambda: converting(fleet.kubectl, k.cluster), "the converted CRDs pointed at the controller")
            k.k("apply", "-n", "default", "-f", "-", stdin=yaml.safe_dump(artifact))
            assert k.get("aimartifacts.v1alpha1.aim.eai.amd.com", name, "default") is not None
            assert statuses(doctor(fleet.kubectl, cluster=k.cluster)[1])["conversion-webhooks"] == ["PASS"]
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        finally:
            stop_process(first)
        url = k.k("get", "crd", "aimartifacts.aim.eai.amd.com", "-o", f"jsonpath={CONVERSION_URL}")
        host = url.split("/")[2]
        read = k.run("get", "aimartifacts.v1alpha1.aim.eai.amd.com", name, "-n", "default", "-v=6")
        assert read.returncode == 1
        path = f"/apis/aim.eai.amd.com/v1alpha1/namespaces/default/aimartifacts/{name}?"
        (get,) = [line for line in read.stderr.splitlines() if "GET http" in line and path in line]
        assert " 500 Internal Server Error in " in get, read.stderr
        assert (
            "Error from server: conversion webhook for aim.eai.amd.com/v1alpha2, Kind=AIMArtifact "
            f'failed: Post "{url}?timeout=30s": dial tcp {host}: connect: connection refused'
        ) in read.stderr, read.stderr
        assert (k.get("aimartifacts", name, "default") or {})["apiVersion"] == "aim.eai.amd.com/v1alpha2"

        code, findings = doctor(fleet.kubectl, cluster=k.cluster)
        assert code == 1
        (finding,) = findings["conversion-webhooks"]
        assert finding["status"] == "FAIL"
        assert finding["message"].startswith(
            f"conversion webhook {url} does not answer (cannot connect to {host}: Connection refused): "
        ), finding
        converted = sorted(d.kind for d in crdgen.converted_crds())
        kinds = f"{', '.join(converted[:-1])} and {converted[-1]}"
        assert finding["message"].endswith(
            f"reads and writes of {kinds} at aim.eai.amd.com/v1alpha1 fail with 500 "
            f"until it answers again ({kinds} at aim.eai.amd.com/v1alpha2 unaffected)"
        ), finding
        assert finding["fix"].startswith("start `omectl run` with this cluster registered: "), finding
        assert ", ".join(sorted(d.name for d in crdgen.converted_crds())) in finding["fix"]
        table = CliRunner().invoke(
            app, ["doctor", "--kubeconfig", str(fleet.kubectl.kubeconfig), "--context", k.cluster]
        )
        assert table.exit_code == 1
        (row,) = [line for line in table.stdout.splitlines() if "conversion-webhooks" in line.split()[1:2]]
        assert row.split()[:3] == [k.cluster, "conversion-webhooks", "FAIL"] and row.endswith("unaffected)")

        second = start_omectl_run(tmp_path / "second.log", *run)
        try:
            v1 = ("get", "aimartifacts.v1alpha1.aim.eai.amd.com", name, "-n", "default")
            until(lambda: k.run(*v1).returncode == 0, "v1alpha1 served again (the next controller took the cluster)")
            assert statuses(doctor(fleet.kubectl, cluster=k.cluster)[1])["conversion-webhooks"] == ["PASS"]
        finally:
            stop_process(second)
