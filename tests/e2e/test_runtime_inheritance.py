"""The spec's runtime inheritance walk-through, through the real kubectl, on simulated clusters with the controller."""

from __future__ import annotations

import itertools
import time

import pytest
import yaml

from tests.e2e.conftest import DATA, ControlledFleet

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

CHAIN_COLUMNS = (
    "custom-columns=NAME:.metadata.name,CHAIN:.status.inheritanceChain[*],"
    'READY:.status.conditions[?(@.type=="InheritanceReady")].status,'
    'REASON:.status.conditions[?(@.type=="InheritanceReady")].reason'
)
SR_WEBHOOK = 'admission webhook "servingruntime.ome-webhook-server.validator" denied the request: '
CSR_WEBHOOK = 'admission webhook "clusterservingruntime.ome-webhook-server.validator" denied the request: '


def wait_for_columns(fleet: ControlledFleet, cluster: str, args: list[str], expected: str, timeout: float = 30) -> str:
    """Re-run a kubectl get until its output is `expected` (the controller works asynchronously)."""
    deadline = time.monotonic() + timeout
    out = ""
    while time.monotonic() < deadline:
        out = fleet.k(cluster, *args)
        if out.strip() == expected.strip():
            return out
        time.sleep(0.1)
    raise AssertionError(f"kubectl {' '.join(args)} never printed:\n{expected}\nlast output:\n{out}")


def runtime(
    name: str, parent: str | None, namespace: str | None = "llama-demo", kind: str = "ServingRuntime", **extra: object
) -> str:
    meta: dict[str, object] = {"name": name}
    if namespace and kind == "ServingRuntime":
        meta["namespace"] = namespace
    if parent:
        meta["annotations"] = {"ome.io/inherit-from": parent}
    spec: dict[str, object] = {"engineConfig": {"runner": {"name": "ome-container", **extra}}}
    return yaml.safe_dump({"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec})


@pytest.fixture(scope="module")
def demo_ns(controlled_fleet: ControlledFleet) -> ControlledFleet:
    out = controlled_fleet.k("e2e-1", "create", "namespace", "llama-demo")
    assert out.strip() == "namespace/llama-demo created"
    return controlled_fleet


def test_runtime_before_its_profile_is_denied(demo_ns: ControlledFleet) -> None:
    demo_ns.k("e2e-1", "delete", "servingruntime", "sglang-llama-3-2-3b", "-n", "llama-demo", "--ignore-not-found")
    demo_ns.k("e2e-1", "delete", "clusterservingruntime", "sglang-profile", "--ignore-not-found")
    expected = SR_WEBHOOK + 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])'
    # The webhook reads its informer cache (a live read only for what the cache lacks), which may still hold the
    # profile for a moment after the delete: retry the apply until it is denied, within a deadline.
    deadline = time.monotonic() + 30
    while True:
        proc = demo_ns.kubectl.run("--context=e2e-1", "apply", "-f", str(DATA / "runtime.yaml"), check=False)
        if proc.returncode != 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert proc.returncode != 0
    assert expected in proc.stderr


def test_profile_then_runtime_resolve_with_the_specs_table(demo_ns: ControlledFleet) -> None:
    demo_ns.k("e2e-1", "delete", "servingruntime", "sglang-llama-3-2-3b", "-n", "llama-demo", "--ignore-not-found")
    demo_ns.k("e2e-1", "delete", "clusterservingruntime", "sglang-profile", "--ignore-not-found")
    assert demo_ns.k("e2e-1", "apply", "-f", str(DATA / "profile.yaml")).strip() == (
        "clusterservingruntime.ome.io/sglang-profile created"
    )
    assert demo_ns.k("e2e-1", "apply", "-f", str(DATA / "runtime.yaml")).strip() == (
        "servingruntime.ome.io/sglang-llama-3-2-3b created"
    )
    wait_for_columns(
        demo_ns,
        "e2e-1",
        ["get", "servingruntime", "sglang-llama-3-2-3b", "-n", "llama-demo", "-o", CHAIN_COLUMNS],
        "NAME                  CHAIN                                READY   REASON\n"
        "sglang-llama-3-2-3b   sglang-profile,sglang-llama-3-2-3b   True    Resolved",
    )


def test_deleting_the_profile_breaks_the_chain_and_restoring_recovers(demo_ns: ControlledFleet) -> None:
    demo_ns.k("e2e-1", "apply", "-f", str(DATA / "profile.yaml"))
    demo_ns.k("e2e-1", "apply", "-f", str(DATA / "runtime.yaml"))
    args = ["get", "servingruntime", "sglang-llama-3-2-3b", "-n", "llama-demo", "-o", CHAIN_COLUMNS]
    header = "NAME                  CHAIN                                READY   REASON\n"
    wait_for_columns(
        demo_ns, "e2e-1", args, header + "sglang-llama-3-2-3b   sglang-profile,sglang-llama-3-2-3b   True    Resolved"
    )
    demo_ns.k("e2e-1", "delete", "clusterservingruntime", "sglang-profile")
    wait_for_columns(
        demo_ns,
        "e2e-1",
        args,
        header + "sglang-llama-3-2-3b   sglang-profile,sglang-llama-3-2-3b   False   ParentNotFound",
    )
    events = demo_ns.k(
        "e2e-1",
        "get",
        "events",
        "-n",
        "llama-demo",
        "--field-selector",
        "involvedObject.name=sglang-llama-3-2-3b",
        "-o",
        "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message",
        "--no-headers",
    )
    assert "Warning   ParentNotFound" in events
    assert 'inherit-from parent "sglang-profile" not found (chain so far: [sglang-llama-3-2-3b])' in events
    demo_ns.k("e2e-1", "apply", "-f", str(DATA / "profile.yaml"))
    wait_for_columns(
        demo_ns, "e2e-1", args, header + "sglang-llama-3-2-3b   sglang-profile,sglang-llama-3-2-3b   True    Resolved"
    )


def test_a_profile_must_be_disabled(demo_ns: ControlledFleet) -> None:
    doc = yaml.safe_load((DATA / "profile.yaml").read_text())
    doc["metadata"]["name"] = "enabled-profile"
    doc["spec"]["disabled"] = False
    proc = demo_ns.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert proc.returncode != 0
    assert CSR_WEBHOOK + 'runtimes carrying ome.io/runtime-profile="true" must also set spec.disabled: true' in (
        proc.stderr
    )


def test_three_level_chain_and_shadowing(demo_ns: ControlledFleet) -> None:
    k = demo_ns
    k.k("e2e-1", "apply", "-f", "-", input=runtime("base-l1", None, kind="ClusterServingRuntime", image="img:1"))
    k.k("e2e-1", "apply", "-f", "-", input=runtime("mid-l2", "base-l1", kind="ClusterServingRuntime"))
    k.k("e2e-1", "apply", "-f", "-", input=runtime("leaf-l3", "mid-l2"))
    wait_for_columns(
        k,
        "e2e-1",
        ["get", "servingruntime", "leaf-l3", "-n", "llama-demo", "-o", "jsonpath={.status.inheritanceChain}"],
        '["base-l1","mid-l2","leaf-l3"]',
    )
    # a ServingRuntime named like the ClusterServingRuntime shadows it for runtimes in its namespace
    k.k("e2e-1", "apply", "-f", "-", input=runtime("mid-l2", None))
    wait_for_columns(
        k,
        "e2e-1",
        ["get", "servingruntime", "leaf-l3", "-n", "llama-demo", "-o", "jsonpath={.status.inheritanceChain}"],
        '["mid-l2","leaf-l3"]',
    )
    # a ServingRuntime naming a ClusterServingRuntime with its own name is a cycle
    proc = k.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=runtime("base-l1", "base-l1"), check=False)
    assert proc.returncode != 0
    assert SR_WEBHOOK + "inheritance cycle detected: [base-l1 base-l1]" in proc.stderr


def test_depth_five_resolves_and_six_is_denied(demo_ns: ControlledFleet) -> None:
    k = demo_ns
    names = [f"deep-{i}" for i in range(1, 7)]
    k.k("e2e-1", "apply", "-f", "-", input=runtime(names[0], None))
    for parent, child in itertools.pairwise(names[:5]):
        k.k("e2e-1", "apply", "-f", "-", input=runtime(child, parent))
    wait_for_columns(
        k,
        "e2e-1",
        ["get", "servingruntime", "deep-5", "-n", "llama-demo", "-o", "jsonpath={.status.inheritanceChain}"],
        '["deep-1","deep-2","deep-3","deep-4","deep-5"]',
    )
    proc = k.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=runtime("deep-6", "deep-5"), check=False)
    assert proc.returncode != 0
    assert (
        SR_WEBHOOK + "inheritance chain exceeds max depth 5 (chain so far: [deep-6 deep-5 deep-4 deep-3 deep-2 deep-1])"
        in (proc.stderr)
    )


def test_cycles_of_one_and_two(demo_ns: ControlledFleet) -> None:
    k = demo_ns
    one = k.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=runtime("selfish", "selfish"), check=False)
    assert one.returncode != 0
    assert SR_WEBHOOK + "inheritance cycle detected: [selfish selfish]" in one.stderr
    k.k("e2e-1", "apply", "-f", "-", input=runtime("ping", None))
    k.k("e2e-1", "apply", "-f", "-", input=runtime("pong", "ping"))
    two = k.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=runtime("ping", "pong"), check=False)
    assert two.returncode != 0
    assert SR_WEBHOOK + "inheritance cycle detected: [ping pong ping]" in two.stderr


def test_a_child_without_runner_name_is_rejected_by_the_schema(demo_ns: ControlledFleet) -> None:
    doc = yaml.safe_load((DATA / "runtime.yaml").read_text())
    doc["metadata"]["name"] = "nameless"
    del doc["spec"]["engineConfig"]["runner"]["name"]
    proc = demo_ns.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=yaml.safe_dump(doc), check=False)
    assert proc.returncode != 0
    assert "spec.engineConfig.runner.name: Required value" in proc.stderr


def test_clusters_are_independent(demo_ns: ControlledFleet) -> None:
    missing = demo_ns.kubectl.run("--context=e2e-2", "get", "clusterservingruntime", "sglang-profile", check=False)
    assert missing.returncode != 0
    demo_ns.k("e2e-2", "apply", "-f", str(DATA / "profile.yaml"))
    out = demo_ns.k("e2e-2", "get", "clusterservingruntime", "sglang-profile", "-o", "name")
    assert out.strip() == "clusterservingruntime.ome.io/sglang-profile"


SPEC_JSONPATH = (
    'jsonpath={range .spec.template.spec.containers[?(@.name=="ome-container")]}{.image}{"\\n"}'
    '{range .command[*]}{@}{"\\n"}{end}{range .args[*]}{@}{"\\n"}{end}{end}'
)
SPEC_ENGINE_LINES = """docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64
python3
-m
sglang.launch_server
--host=0.0.0.0
--port=8080
--model-path=$(MODEL_PATH)
--served-model-name=llama-3-2-3b-instruct
--tp-size=1
--mem-frac=0.9
"""


def test_the_specs_inference_service_renders_the_engine_deployment(demo_ns: ControlledFleet) -> None:
    k = demo_ns
    k.k("e2e-1", "apply", "-f", str(DATA / "clusterbasemodel.yaml"))
    k.k("e2e-1", "apply", "-f", str(DATA / "profile.yaml"))
    k.k("e2e-1", "apply", "-f", str(DATA / "runtime.yaml"))
    assert k.k("e2e-1", "apply", "-f", str(DATA / "isvc.yaml")).strip() == (
        "inferenceservice.ome.io/llama-3-2-3b-instruct created"
    )
    deadline = time.monotonic() + 30
    out = ""
    while time.monotonic() < deadline:
        proc = k.kubectl.run(
            "--context=e2e-1",
            "get",
            "deployment",
            "llama-3-2-3b-instruct-engine",
            "-n",
            "llama-demo",
            "-o",
            SPEC_JSONPATH,
            check=False,
        )
        out = proc.stdout
        if proc.returncode == 0 and out:
            break
        time.sleep(0.1)
    assert out == SPEC_ENGINE_LINES
    runtime_status = k.k(
        "e2e-1",
        "get",
        "inferenceservice",
        "llama-3-2-3b-instruct",
        "-n",
        "llama-demo",
        "-o",
        "jsonpath={.status.runtime.name}/{.status.runtime.kind}/{.status.runtime.chain}",
    )
    assert runtime_status == 'sglang-llama-3-2-3b/ServingRuntime/["sglang-profile","sglang-llama-3-2-3b"]'


def test_an_inference_service_naming_a_broken_chain_is_denied(demo_ns: ControlledFleet) -> None:
    k = demo_ns
    k.k("e2e-1", "apply", "-f", "-", input=runtime("doomed-parent", None, kind="ClusterServingRuntime"))
    k.k("e2e-1", "apply", "-f", "-", input=runtime("doomed", "doomed-parent"))
    k.k("e2e-1", "delete", "clusterservingruntime", "doomed-parent")
    isvc = yaml.safe_dump(
        {
            "apiVersion": "ome.io/v1beta1",
            "kind": "InferenceService",
            "metadata": {"name": "on-a-broken-chain", "namespace": "llama-demo"},
            "spec": {"runtime": {"name": "doomed"}, "engine": {"minReplicas": 1}},
        }
    )
    proc = k.kubectl.run("--context=e2e-1", "apply", "-f", "-", input=isvc, check=False)
    assert proc.returncode != 0
    assert (
        'admission webhook "inferenceservice.ome-webhook-server.validator" denied the request: '
        'inherit-from parent "doomed-parent" not found (chain so far: [doomed])'
    ) in proc.stderr
