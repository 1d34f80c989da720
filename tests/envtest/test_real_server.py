"""A real kube-apiserver + etcd (from `make envtest`) through the real kubectl and kubernetes-asyncio.

Basics first (version, our CRDs established, a ServingRuntime, a watch, the server's own validation), then the
workload simulator as an API client, and the control plane's lifecycle: a crash reported with the log tail, a
clean stop that leaves no process behind, and `omectl dev up --real` end to end.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio import watch as k8s_watch

from omectl.envtest import EnvtestBinaries, RealAPIServer, RealFleet
from omectl.envtest.controlplane import ControlPlaneError
from omectl.sim.fleet import BackgroundFleet, manifest_documents
from tests.support import Kubectl, real_kubectl_path

from .conftest import CRDS, ROOT

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("envtest")]


def runtime(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ServingRuntime",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec
        or {
            "supportedModelFormats": [
                {"modelFormat": {"name": "safetensors"}, "modelFramework": {"name": "transformers"}, "autoSelect": True}
            ],
            "engineConfig": {"runner": {"name": "engine", "image": "vllm/vllm-openai:v0.9.0"}},
        },
    }


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s")
        time.sleep(interval)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0): read its state
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


# --- basics: kubectl and kubernetes-asyncio against the real server ----------------------------------------


def test_kubectl_reports_the_pinned_server_version(real_kubectl: Kubectl, envtest_binaries: EnvtestBinaries) -> None:
    out = json.loads(real_kubectl.run("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"] == envtest_binaries.kube_version
    client_minor = int(out["clientVersion"]["minor"].rstrip("+"))
    server_minor = int(out["serverVersion"]["minor"].rstrip("+"))
    assert abs(client_minor - server_minor) <= 1, "the suite drives a kubectl within the supported skew"


async def test_kubernetes_asyncio_reads_version_and_namespaces(real_fleet: BackgroundFleet, tmp_path: Path) -> None:
    path = real_fleet.fleet.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = await k8s_config.new_client_from_config(config_file=str(path))
    async with api_client:
        version = await k8s_client.VersionApi(api_client).get_code()
        assert version.git_version.startswith("v1.")
        namespaces = await k8s_client.CoreV1Api(api_client).list_namespace()
        assert {"default", "kube-system", "kube-public"} <= {n.metadata.name for n in namespaces.items}


def test_every_crd_of_ours_is_established(real_kubectl: Kubectl) -> None:
    expected = {d["metadata"]["name"] for d in manifest_documents([CRDS]) if d["kind"] == "CustomResourceDefinition"}
    assert len(expected) >= 20
    listing = json.loads(real_kubectl.run("get", "crd", "-o", "json").stdout)
    established = {
        crd["metadata"]["name"]
        for crd in listing["items"]
        if any(c["type"] == "Established" and c["status"] == "True" for c in crd["status"]["conditions"])
    }
    assert expected <= established


def test_create_and_read_a_serving_runtime(real_kubectl: Kubectl) -> None:
    out = real_kubectl.run("apply", "-f", "-", input=yaml.safe_dump(runtime("vllm-basic")))
    assert out.stdout.strip() == "servingruntime.ome.io/vllm-basic created"
    live = json.loads(real_kubectl.run("get", "servingruntime", "vllm-basic", "-o", "json").stdout)
    assert live["spec"]["engineConfig"]["runner"]["name"] == "engine"
    assert live["metadata"]["uid"] and live["metadata"]["resourceVersion"]


def test_the_real_server_refuses_a_runtime_without_runner_name(real_kubectl: Kubectl) -> None:
    bad = runtime("no-runner-name", engineConfig={"runner": {"image": "vllm/vllm-openai:v0.9.0"}})
    result = real_kubectl.run("apply", "-f", "-", input=yaml.safe_dump(bad), check=False)
    assert result.returncode != 0
    assert 'The ServingRuntime "no-runner-name" is invalid' in result.stderr
    assert "spec.engineConfig.runner.name: Required value" in result.stderr


def test_unknown_fields_are_sorted_for_a_custom_resource_and_in_document_order_for_a_built_in_kind(
    real_kubectl: Kubectl,
) -> None:
    """The order tests/sim/test_objects.py expects of the embedded server, asked of the real one (`create --raw`
    posts the body as written, where `kubectl create -f` would re-encode it with sorted keys)."""
    config = (
        '{"apiVersion":"aim.eai.amd.com/v1alpha1","kind":"AIMClusterRuntimeConfig","zz":4,'
        '"metadata":{"name":"unknown-order","zz":3},"spec":{"zeta":1,"alpha":2}}'
    )
    path = "/apis/aim.eai.amd.com/v1alpha1/aimclusterruntimeconfigs?fieldValidation=Strict"
    refused = real_kubectl.run("create", "--raw", path, "-f", "-", input=config, check=False)
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith(
        'strict decoding error: unknown field "metadata.zz", unknown field "spec.alpha", unknown field "spec.zeta", '
        'unknown field "zz"'
    )
    config_map = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"unknown-order","zz":3},"zeta":1,"alpha":2}'
    path = "/api/v1/namespaces/default/configmaps?fieldValidation=Strict"
    refused = real_kubectl.run("create", "--raw", path, "-f", "-", input=config_map, check=False)
    assert refused.stderr.strip().endswith(
        'strict decoding error: unknown field "metadata.zz", unknown field "zeta", unknown field "alpha"'
    )


async def test_a_watch_sees_a_runtime_created_by_kubectl(
    real_fleet: BackgroundFleet, real_kubectl: Kubectl, tmp_path: Path
) -> None:
    path = real_fleet.fleet.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = await k8s_config.new_client_from_config(config_file=str(path))
    async with api_client:
        objects = k8s_client.CustomObjectsApi(api_client)
        listing = await objects.list_namespaced_custom_object("ome.io", "v1beta1", "default", "servingruntimes")
        start_rv = listing["metadata"]["resourceVersion"]
        watcher = k8s_watch.Watch()
        stream = watcher.stream(
            objects.list_namespaced_custom_object,
            "ome.io",
            "v1beta1",
            "default",
            "servingruntimes",
            resource_version=start_rv,
            timeout_seconds=30,
        )
        await real_kubectl.arun("apply", "-f", "-", input=yaml.safe_dump(runtime("watched")))

        async def first_added() -> dict[str, Any]:
            async for event in stream:
                if event["type"] == "ADDED" and event["object"]["metadata"]["name"] == "watched":
                    return event["object"]
            raise AssertionError("the watch ended without the ADDED event")

        try:
            obj = await asyncio.wait_for(first_added(), 30)
        finally:
            watcher.stop()
        assert int(obj["metadata"]["resourceVersion"]) > int(start_rv)


# --- the workload simulator, as a client of the real server --------------------------------------------------


def test_simulated_gpu_nodes_are_registered(real_kubectl: Kubectl) -> None:
    nodes = json.loads(real_kubectl.run("get", "nodes", "-o", "json").stdout)["items"]
    names = sorted(n["metadata"]["name"] for n in nodes)
    assert names == ["envtest-1-gpu-node-1", "envtest-1-gpu-node-2"]
    assert all(n["status"]["capacity"]["nvidia.com/gpu"] == "8" for n in nodes)


def test_a_gpu_deployment_becomes_available_through_the_simulator(real_kubectl: Kubectl) -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "engine", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "engine"}},
            "template": {
                "metadata": {"labels": {"app": "engine"}},
                "spec": {
                    "containers": [
                        {
                            "name": "engine",
                            "image": "vllm/vllm-openai:v0.9.0",
                            "resources": {"limits": {"nvidia.com/gpu": "4"}},
                        }
                    ]
                },
            },
        },
    }
    real_kubectl.run("apply", "-f", "-", input=yaml.safe_dump(deployment))
    real_kubectl.run("wait", "--for=condition=Available", "deployment/engine", "--timeout=30s")
    status = json.loads(real_kubectl.run("get", "deployment", "engine", "-o", "json").stdout)["status"]
    assert status["readyReplicas"] == 2
    assert status["availableReplicas"] == 2


# --- lifecycle: crash report, clean stop, `omectl dev up --real` -------------------------------------------


async def test_a_crashed_apiserver_is_reported_with_its_log_tail(
    envtest_binaries: EnvtestBinaries, fresh_workdir: Path
) -> None:
    server = await RealAPIServer("crash", fresh_workdir, binaries=envtest_binaries).start()
    try:
        assert server.apiserver is not None and server.apiserver.pid is not None
        os.kill(server.apiserver.pid, signal.SIGKILL)
        report = await asyncio.wait_for(server.wait_crashed(), 30)
        assert "cluster crash: kube-apiserver exited with status -9" in report
        assert "kube-apiserver.log" in report
        assert len(report.splitlines()) > 3, "the report carries the tail of the log"
    finally:
        await server.stop()
    assert server.etcd is not None and server.etcd.pid is not None
    assert not pid_alive(server.etcd.pid)


async def test_a_server_that_cannot_start_says_why(envtest_binaries: EnvtestBinaries, fresh_workdir: Path) -> None:
    server = RealAPIServer(
        "badflag", fresh_workdir, binaries=envtest_binaries, extra_args=["--no-such-flag=1"], start_timeout=30
    )
    with pytest.raises(ControlPlaneError) as failure:
        await server.start()
    assert "kube-apiserver exited with status 1" in str(failure.value)
    assert "unknown flag: --no-such-flag" in str(failure.value)
    assert server.etcd is not None and server.etcd.pid is not None
    assert not pid_alive(server.etcd.pid), "a failed start leaves no etcd behind"


async def test_stop_ends_both_processes(envtest_binaries: EnvtestBinaries, fresh_workdir: Path) -> None:
    fleet = await RealFleet(1, name_prefix="stop-", workdir=fresh_workdir, binaries=envtest_binaries).start()
    pids = fleet.servers[0].pids()
    assert all(pid is not None and pid_alive(pid) for pid in pids.values())
    await fleet.stop()
    assert not any(pid_alive(pid) for pid in pids.values() if pid is not None)


def test_dev_up_real_serves_the_same_kubeconfig_and_ready_file(
    envtest_binaries: EnvtestBinaries, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "fleet.kubeconfig"
    ready = tmp_path / "ready"
    state = tmp_path / "state"  # etcd data and logs here, so the processes are found by their flags
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "omectl",
            "dev",
            "up",
            "--real",
            "--clusters=2",
            f"--kubeconfig-out={kubeconfig}",
            f"--ready-file={ready}",
            f"--state-dir={state}",
            "--simulate",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        wait_for(lambda: ready.exists() or proc.poll() is not None, timeout=120)
        assert proc.poll() is None, proc.communicate()[0]
        lines = ready.read_text().split("\n")
        assert [line.split()[0] for line in lines if line] == ["sim-1", "sim-2"]
        assert all(line.split()[1].startswith("https://127.0.0.1:") for line in lines if line)
        kubectl = Kubectl(real_kubectl_path(envtest_binaries.kube_version), kubeconfig, tmp_path / "cache")
        for context in ("sim-1", "sim-2"):
            crds = kubectl.run(f"--context={context}", "get", "crd", "-o", "name").stdout.split()
            assert "customresourcedefinition.apiextensions.k8s.io/servingruntimes.ome.io" in crds
            nodes = wait_for(
                lambda context=context: kubectl.run(f"--context={context}", "get", "nodes", "-o", "name").stdout.split()
            )
            assert nodes == [f"node/{context}-gpu-node-1", f"node/{context}-gpu-node-2"]
        whoami = json.loads(kubectl.run("--context=sim-1", "auth", "whoami", "-o", "json").stdout)
        assert whoami["status"]["userInfo"]["username"] == "omectl-admin"
        assert "system:masters" in whoami["status"]["userInfo"]["groups"]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "stopped" in out
    assert not ready.exists()
    leftovers = subprocess.run(["pgrep", "-f", str(state)], capture_output=True, text=True).stdout.split()
    assert leftovers == [], "no etcd or kube-apiserver of this fleet survives the stop"


def test_make_envtest_and_the_python_side_agree_on_the_directory() -> None:
    script = ROOT / "scripts" / "envtest.sh"
    printed = subprocess.run([str(script), "--dir"], capture_output=True, text=True, check=True).stdout.strip()
    from omectl.envtest.binaries import cache_dir

    assert printed == str(cache_dir())
