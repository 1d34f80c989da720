"""A ServingRuntime's chain looks in its namespace first at every depth, also past a ClusterServingRuntime: the
issue's example through the real kubectl with the controller running, and shadowing that re-renders exactly the
chains of that namespace that pass through the shadowed name.

What the controller reconciled is read from its reconcile spans (the trace file), so "nothing else" is observed,
not assumed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.tracing.reader import TraceStore, object_of
from tests.e2e.conftest import DATA, ControlledFleet, running_fleet
from tests.support import until

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CLUSTER = "ctx-1"


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with running_fleet(tmp_path_factory.mktemp("contexts"), 1, "ctx-", concurrency=4) as running:
        if running.app is None:
            pytest.skip("reads the in-process controller's reconcile spans (OMECTL_E2E_KUBECONFIG is set)")
        running.k(CLUSTER, "apply", "-f", str(DATA / "clusterbasemodel.yaml"))
        for namespace in ("team-a", "team-b"):
            running.k(CLUSTER, "create", "namespace", namespace)
        yield running


def runtime(name: str, parent: str | None = None, namespace: str | None = None, image: str | None = None) -> Any:
    """A ServingRuntime (with `namespace`) or ClusterServingRuntime; children carry the spec runtime's formats."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    runner: dict[str, Any] = {"name": "ome-container"}
    if image:
        runner["image"] = image
    spec: dict[str, Any] = {"engineConfig": {"runner": runner}}
    if parent:
        leaf = yaml.safe_load((DATA / "runtime.yaml").read_text())["spec"]
        spec = {**leaf, "engineConfig": {"runner": {**leaf["engineConfig"]["runner"], **runner}}}
    kind = "ServingRuntime" if namespace else "ClusterServingRuntime"
    return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}


def isvc(name: str, namespace: str, runtime_name: str) -> Any:
    return {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "model": {"name": "llama-3-2-3b-instruct"},
            "runtime": {"name": runtime_name},
            "engine": {"minReplicas": 1, "maxReplicas": 1},
        },
    }


def apply(fleet: ControlledFleet, *docs: Any) -> None:
    fleet.k(CLUSTER, "apply", "-f", "-", input=yaml.safe_dump_all(docs))


def image(fleet: ControlledFleet, isvc_name: str, namespace: str) -> str:
    proc = fleet.kubectl.run(
        f"--context={CLUSTER}", "get", "deployment", f"{isvc_name}-engine", "-n", namespace, "-o",
        'jsonpath={.spec.template.spec.containers[?(@.name=="ome-container")].image}', check=False,
    )  # fmt: skip
    return proc.stdout if proc.returncode == 0 else ""


def wait_images(fleet: ControlledFleet, expected: dict[tuple[str, str], str], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while (found := {key: image(fleet, *key) for key in expected}) != expected:
        if time.monotonic() > deadline:
            events = fleet.k(CLUSTER, "get", "events", "-A", "--field-selector", "type=Warning", "-o",
                             "custom-columns=OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message")  # fmt: skip
            raise AssertionError(f"engine images {found}, expected {expected}; warnings:\n{events}")
        time.sleep(0.05)


def quiet(fleet: ControlledFleet) -> None:
    """Wait until the controller has nothing queued or in flight."""
    assert fleet.app is not None
    queue = fleet.app.controller.queue
    until(lambda: queue.depth() == 0 and queue.in_flight == 0, "an idle queue")


def reconciled_since(fleet: ControlledFleet, since_ns: int) -> set[str]:
    """`Kind namespace/name` of every object reconciled since `since_ns`, once the queue is idle again."""
    assert fleet.app is not None
    quiet(fleet)
    fleet.app.tracing.force_flush()
    store = TraceStore.load(fleet.app.settings.trace_file)
    found = set()
    for span in store.reconciles(cluster=CLUSTER, since_ns=since_ns):
        ref = object_of(span)
        found.add(f"{ref.kind.split('/')[-1]} {ref.namespace + '/' if ref.namespace else ''}{ref.name}")
    return found


def test_the_issues_example_renders_each_namespace_from_its_own_parents(fleet: ControlledFleet) -> None:
    apply(
        fleet,
        runtime("nsf-base", image="registry.example/cluster-base:1"),
        runtime("nsf-bridge", "nsf-base"),
        runtime("nsf-base", namespace="team-a", image="registry.example/team-a-base:1"),
        runtime("nsf-leaf", "nsf-bridge", namespace="team-a"),
        runtime("nsf-leaf", "nsf-bridge", namespace="team-b"),
        isvc("svc-x", "team-a", "nsf-leaf"),
        isvc("svc-y", "team-b", "nsf-leaf"),
        isvc("direct", "team-a", "nsf-bridge"),  # names the ClusterServingRuntime: its chain is cluster-only
    )
    wait_images(
        fleet,
        {
            ("svc-x", "team-a"): "registry.example/team-a-base:1",
            ("svc-y", "team-b"): "registry.example/cluster-base:1",
            ("direct", "team-a"): "registry.example/cluster-base:1",
        },
    )
    chain = fleet.k(CLUSTER, "get", "isvc", "svc-x", "-n", "team-a", "-o", "jsonpath={.status.runtime.chain}")
    assert json.loads(chain) == ["nsf-base", "nsf-bridge", "nsf-leaf"]

    # The reverse: without its own nsf-base, team-a moves to the cluster runtime; only team-a's chain re-renders.
    quiet(fleet)
    since = time.time_ns()
    fleet.k(CLUSTER, "delete", "servingruntime", "nsf-base", "-n", "team-a")
    wait_images(fleet, {("svc-x", "team-a"): "registry.example/cluster-base:1"})
    assert reconciled_since(fleet, since) == {"ServingRuntime team-a/nsf-leaf", "InferenceService team-a/svc-x"}
    assert image(fleet, "svc-y", "team-b") == "registry.example/cluster-base:1"

    quiet(fleet)
    since = time.time_ns()
    apply(fleet, runtime("nsf-base", namespace="team-a", image="registry.example/team-a-base:1"))
    wait_images(fleet, {("svc-x", "team-a"): "registry.example/team-a-base:1"})
    assert reconciled_since(fleet, since) == {
        "ServingRuntime team-a/nsf-base",
        "ServingRuntime team-a/nsf-leaf",
        "InferenceService team-a/svc-x",
    }


@pytest.mark.parametrize("depth", [3, 4])
def test_shadowing_at_depth_re_renders_exactly_that_namespaces_chains(fleet: ControlledFleet, depth: int) -> None:
    # d{depth}-p0 <- d{depth}-p1 <- ... (ClusterServingRuntimes) <- a leaf in team-a and one in team-b; the
    # shadowed name is the chain's root, `depth` parents above each leaf.
    prefix = f"d{depth}"
    names = [f"{prefix}-p{i}" for i in range(depth)]
    docs = [runtime(names[0], image=f"registry.example/{prefix}-cluster:1")]
    docs += [runtime(names[i], names[i - 1]) for i in range(1, depth)]
    for namespace in ("team-a", "team-b"):
        docs += [
            runtime(f"{prefix}-leaf", names[-1], namespace=namespace),
            isvc(f"{prefix}-svc", namespace, f"{prefix}-leaf"),
        ]
    apply(fleet, *docs)
    cluster_image = f"registry.example/{prefix}-cluster:1"
    wait_images(fleet, {(f"{prefix}-svc", "team-a"): cluster_image, (f"{prefix}-svc", "team-b"): cluster_image})
    quiet(fleet)
    since = time.time_ns()
    apply(fleet, runtime(names[0], namespace="team-a", image=f"registry.example/{prefix}-team-a:1"))
    wait_images(fleet, {(f"{prefix}-svc", "team-a"): f"registry.example/{prefix}-team-a:1"})
    assert reconciled_since(fleet, since) == {
        f"ServingRuntime team-a/{names[0]}",
        f"ServingRuntime team-a/{prefix}-leaf",
        f"InferenceService team-a/{prefix}-svc",
    }
    assert image(fleet, f"{prefix}-svc", "team-b") == cluster_image
    leaf_chain = fleet.k(
        CLUSTER, "get", "servingruntime", f"{prefix}-leaf", "-n", "team-a", "-o", "jsonpath={.status.inheritanceChain}"
    )
    assert json.loads(leaf_chain) == [*names, f"{prefix}-leaf"]


def kubectl_ome(fleet: ControlledFleet, *args: str) -> subprocess.CompletedProcess[str]:
    """The real kubectl running omectl as its `ome` plugin (kubectl takes no global flags before a plugin)."""
    env = fleet.kubectl.env()
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    argv = [fleet.kubectl.binary, "ome", *args, "--kubeconfig", str(fleet.kubectl.kubeconfig), "--context", CLUSTER]
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_kubectl_ome_runtime_tree_shows_each_context(fleet: ControlledFleet) -> None:
    apply(
        fleet,
        runtime("tree-base", image="registry.example/tree-cluster:1"),
        runtime("tree-bridge", "tree-base"),
        runtime("tree-base", namespace="team-a", image="registry.example/tree-team-a:1"),
        runtime("tree-leaf", "tree-bridge", namespace="team-a"),
        runtime("tree-leaf", "tree-bridge", namespace="team-b"),
    )
    until(
        lambda: fleet.k(
            CLUSTER, "get", "servingruntime", "tree-leaf", "-n", "team-a", "-o", "jsonpath={.status.inheritanceChain}"
        ),
        "team-a's tree-leaf resolved",
    )
    proc = kubectl_ome(fleet, "runtime", "tree", "tree-base", "--kind", "ClusterServingRuntime")
    lines = proc.stdout.splitlines()
    assert "namespace team-b" in proc.stdout and "ServingRuntime team-b/tree-leaf" in proc.stdout
    assert "namespace team-a: shadowed by ServingRuntime team-a/tree-base" in proc.stdout
    assert "ServingRuntime team-a/tree-leaf" not in proc.stdout
    assert lines[-1] == "2 runtimes and 0 InferenceServices below ClusterServingRuntime tree-base"
    ancestors = kubectl_ome(fleet, "runtime", "tree", "tree-bridge", "--ancestors", "-o", "json")
    chains = {
        entry["context"]: [hop.get("namespace", "") + "/" + hop["name"] for hop in entry["chain"]]
        for entry in json.loads(ancestors.stdout)["clusters"][0]["ancestors"]
    }
    assert chains == {
        "cluster-only": ["/tree-base", "/tree-bridge"],
        "namespace team-a": ["team-a/tree-base", "/tree-bridge"],
        "namespace team-b": ["/tree-base", "/tree-bridge"],
    }
