"""`make demo`: a 3-cluster simulated fleet, its hub, the controller, and the spec's runtime inheritance story via
kubectl, closed by a fleet rollout (omectl/demo_rollout.py).

Everything runs in this process (the API servers and the controller on a background event loop) except kubectl
and `omectl trace`, which run as real subprocesses. It exits 0 and leaves nothing running.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from omectl.cli.dev import write_registrations
from omectl.controller.app import ControllerApp
from omectl.demo_rollout import HUB_NAMESPACE, REGISTRY, hub_registrations, rollout_story
from omectl.settings import Settings
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet, apply_document
from omectl.sim.kubeconfig import write_kubeconfig
from omectl.sim.simulator import NodePool, SimulatorConfig

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "deploy" / "samples" / "ome"
AIM_SAMPLES = ROOT / "deploy" / "samples" / "aim"
CRDS = ROOT / "deploy" / "crds"
CHAIN_COLUMNS = (
    "custom-columns=NAME:.metadata.name,CHAIN:.status.inheritanceChain[*],"
    'READY:.status.conditions[?(@.type=="InheritanceReady")].status,'
    'REASON:.status.conditions[?(@.type=="InheritanceReady")].reason'
)
ENGINE_JSONPATH = (
    'jsonpath={range .spec.template.spec.containers[?(@.name=="ome-container")]}{.image}{"\\n"}'
    '{range .command[*]}{@}{"\\n"}{end}{range .args[*]}{@}{"\\n"}{end}{end}'
)
GPU_VARIANTS = {
    "sim-1": ("H100", "nvidia.com/gpu"),
    "sim-2": ("H200", "nvidia.com/gpu"),
    "sim-3": ("MI300X", "amd.com/gpu"),
}
NEW_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-cu129-amd64"
AIM_COLUMNS = (
    "custom-columns=NAME:.metadata.name,STATUS:.status.status,PATH:.status.routing.path,"
    "CONFIG:.status.resolvedRuntimeConfig.kind,SCOPE:.status.resolvedRuntimeConfig.scope,"
    'CONFIG-VALID:.status.conditions[?(@.type=="ConfigValid")].reason'
)
COST_LABELS = ("org.example/cost-center=eng-ml", "org.example/department=engineering", "org.example/project=chatbot-v2")
NON_EXISTENT_CONFIG = """apiVersion: aim.eai.amd.com/v1alpha1
kind: AIMRuntimeConfig
metadata:
  name: non-existent
  namespace: ml-team
spec: {}
"""
READY_COLUMNS = (
    "custom-columns=NAME:.metadata.name,"
    'ENGINE:.status.conditions[?(@.type=="EngineReady")].status,'
    'READY:.status.conditions[?(@.type=="Ready")].status,'
    'DRIFTED:.status.conditions[?(@.type=="RuntimeDrifted")].status,'
    "REVISION:.status.runtime.revision,URL:.status.url"
)


def simulated_nodes() -> dict[str, SimulatorConfig]:
    """Two 8-GPU nodes per cluster, of the cluster's GPU model, pulling from the rollout story's registry."""
    return {
        cluster: SimulatorConfig(
            pools=(NodePool(count=2, gpus_per_node=8, gpu_resource=resource, gpu_type=gpu),), registry=REGISTRY
        )
        for cluster, (gpu, resource) in GPU_VARIANTS.items()
    }


def variant_isvc(cluster: str) -> str:
    """The spec's InferenceService, named for the cluster's GPU and naming its GPU-specific runtime."""
    gpu, _ = GPU_VARIANTS[cluster]
    doc = yaml.safe_load((SAMPLES / "isvc.yaml").read_text())
    doc["metadata"]["name"] = f"llama-3-2-3b-{gpu.lower()}"
    doc["spec"]["runtime"]["name"] = f"sglang-llama-3-2-3b-{gpu.lower()}"
    return yaml.safe_dump(doc, sort_keys=False)


def pinned_isvc() -> str:
    """The spec's InferenceService pinned to the revision it first renders (`autoSync: false`)."""
    doc = yaml.safe_load((SAMPLES / "isvc.yaml").read_text())
    doc["metadata"]["name"] = "llama-3-2-3b-pinned"
    doc["spec"]["runtime"]["autoSync"] = False
    return yaml.safe_dump(doc, sort_keys=False)


def edited_profile() -> str:
    doc = yaml.safe_load((SAMPLES / "profile.yaml").read_text())
    doc["spec"]["engineConfig"]["runner"]["image"] = NEW_IMAGE
    return yaml.safe_dump(doc, sort_keys=False)


class Shell:
    def __init__(self, kubeconfig: Path, cache: Path, kubectl: str, trace_file: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache = cache
        self.kubectl = kubectl
        self.trace_file = trace_file

    def _run(
        self, argv: list[str], shown: str, input: str | None, expect_failure: bool, exit_code: int | None = None
    ) -> str:
        print(f"\n$ {shown}", flush=True)
        env = dict(os.environ, HOME=str(self.cache), OMECTL_TRACE_FILE=str(self.trace_file))
        # kubectl finds the `kubectl-ome` plugin next to this interpreter (the virtualenv's bin)
        env["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), env.get("PATH", "")))
        env.pop("KUBECONFIG", None)
        proc = subprocess.run(argv, input=input, capture_output=True, text=True, env=env, timeout=120)
        output = (proc.stdout + proc.stderr).rstrip()
        if output:
            print(output, flush=True)
        if (exit_code is not None and proc.returncode != exit_code) or (proc.returncode != 0) != expect_failure:
            raise SystemExit(f"demo step failed (exit {proc.returncode}): {shown}")
        return proc.stdout

    def plugin(self, *args: str) -> str:
        """`kubectl ome ...`: kubectl refuses global flags before a plugin's name, so the kubeconfig goes by env."""
        return self._run([self.kubectl, "ome", *args], "kubectl ome " + " ".join(args), None, False)

    def wait_isvc(self, context: str, name: str, condition: str) -> None:
        """Quietly wait until an InferenceService in llama-demo has `condition` (`Type` or `Type=Status`)."""
        self.kq(
            context,
            "wait",
            "inferenceservice",
            name,
            "-n",
            "llama-demo",
            f"--for=condition={condition}",
            "--timeout=30s",
        )

    def kq(self, *args: str) -> None:
        """kubectl, quietly (waits): only a failure is shown."""
        argv = [self.kubectl, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        proc = subprocess.run(
            argv, capture_output=True, text=True, env=dict(os.environ, HOME=str(self.cache)), timeout=120
        )
        if proc.returncode != 0:
            raise SystemExit(f"demo step failed: kubectl {' '.join(args)}\n{proc.stdout}{proc.stderr}")

    def k(self, *args: str, input: str | None = None, expect_failure: bool = False) -> str:
        argv = [self.kubectl, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        return self._run(argv, "kubectl " + " ".join(args), input, expect_failure)

    def omectl(self, *args: str, exit_code: int = 0) -> str:
        argv = [sys.executable, "-m", "omectl", *args]
        return self._run(argv, "omectl " + " ".join(args), None, exit_code != 0, exit_code)

    def omectl_with(self, args: list[str], shown: str) -> str:
        return self._run([sys.executable, "-m", "omectl", *args], "omectl " + shown, None, False)

    def wait_for(self, args: list[str], predicate: str, timeout: float = 30) -> str:
        """Quietly re-run a kubectl get until its output contains `predicate`, then show it once (and return it)."""
        argv = [self.kubectl, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        env = dict(os.environ, HOME=str(self.cache))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60).stdout
            if predicate in out:
                break
            time.sleep(0.2)
        else:
            raise SystemExit(f"demo: timed out waiting for {predicate!r} from kubectl {' '.join(args)}")
        return self.k(*args)


def variant_child(cluster: str) -> str:
    gpu, resource = GPU_VARIANTS[cluster]
    doc = yaml.safe_load((SAMPLES / "runtime.yaml").read_text())
    doc["metadata"]["name"] = f"sglang-llama-3-2-3b-{gpu.lower()}"
    runner = doc["spec"]["engineConfig"]["runner"]
    runner["resources"] = {"requests": {resource: "1"}, "limits": {resource: "1"}}
    runner["args"] = ["--tp-size=1", "--mem-frac=0.85"]
    doc["spec"]["engineConfig"]["nodeSelector"] = {"gpu.omectl.io/type": gpu}
    return yaml.safe_dump(doc, sort_keys=False)


def engine_story(sh: Shell, servers: list[str], clusters_dir: Path, kubeconfig: Path, work: Path) -> None:
    """Engine workloads on simulated GPU nodes: readiness, fleet status, blast radius, plan, rollout and drift."""
    print("\n# 2c. On every cluster: the spec's InferenceService and one for the cluster's own GPUs, on simulated")
    print("#     GPU nodes (sim-3 has AMD GPUs only, so the spec's NVIDIA engine cannot be placed there):")
    for server in servers:
        ctx = f"--context={server}"
        if server != "sim-1":
            sh.k(ctx, "apply", "-f", str(SAMPLES / "clusterbasemodel.yaml"))
            sh.k(ctx, "apply", "-f", str(SAMPLES / "isvc.yaml"))
        sh.k(ctx, "apply", "-f", "-", input=variant_isvc(server))
    sh.k("--context=sim-1", "apply", "-f", "-", input=pinned_isvc())
    for server in servers:
        gpu = GPU_VARIANTS[server][0].lower()
        sh.wait_isvc(f"--context={server}", f"llama-3-2-3b-{gpu}", "Ready")
    sh.wait_isvc("--context=sim-3", "llama-3-2-3b-instruct", "EngineReady=False")
    sh.wait_isvc("--context=sim-1", "llama-3-2-3b-pinned", "Ready")
    for server in servers:
        sh.k(f"--context={server}", "get", "inferenceservice", "-n", "llama-demo", "-o", READY_COLUMNS)
    sh.k(
        "--context=sim-3",
        "get",
        "inferenceservice",
        "llama-3-2-3b-instruct",
        "-n",
        "llama-demo",
        "-o",
        'jsonpath={.status.conditions[?(@.type=="EngineReady")].message}{"\\n"}',
    )
    sh.omectl("fleet", "status", "--clusters-dir", str(clusters_dir))

    print("\n# 2d. Before editing the profile: its blast radius across the fleet, and the plan of the edit:")
    sh.plugin("runtime", "tree", "sglang-profile", "--all-clusters", "--clusters-dir", str(clusters_dir))
    edit = work / "edited-profile.yaml"
    edit.write_text(edited_profile())
    # it exits as kubectl diff does: 1, something would change
    sh.omectl(
        "runtime", "plan", "-f", str(edit), "--cluster", "sim-1", "--clusters-dir", str(clusters_dir), exit_code=1
    )

    print("\n# 2e. The image bump, applied on every cluster, rolls every autoSync engine; the pinned one drifts:")
    for server in servers:
        sh.k(f"--context={server}", "apply", "-f", str(edit))
    for server in servers:
        gpu = GPU_VARIANTS[server][0].lower()
        sh.wait_for(
            [
                f"--context={server}",
                "get",
                "deployment",
                f"llama-3-2-3b-{gpu}-engine",
                "-n",
                "llama-demo",
                "-o",
                "jsonpath={.spec.template.spec.containers[0].image}",
            ],
            NEW_IMAGE,
        )
    sh.wait_isvc("--context=sim-1", "llama-3-2-3b-pinned", "RuntimeDrifted=True")
    sh.k("--context=sim-1", "get", "inferenceservice", "-n", "llama-demo", "-o", READY_COLUMNS)
    sh.k(
        "--context=sim-1",
        "get",
        "deployment",
        "llama-3-2-3b-pinned-engine",
        "-n",
        "llama-demo",
        "-o",
        'jsonpath={.spec.template.spec.containers[0].image}{"\\n"}',
    )
    sh.omectl_with(
        [
            "runtime",
            "rollout",
            "llama-3-2-3b-pinned",
            "-n",
            "llama-demo",
            "--kubeconfig",
            str(kubeconfig),
            "--context",
            "sim-1",
        ],
        "runtime rollout llama-3-2-3b-pinned -n llama-demo --context sim-1",
    )
    sh.wait_isvc("--context=sim-1", "llama-3-2-3b-pinned", "RuntimeDrifted=False")
    sh.wait_for(
        [
            "--context=sim-1",
            "get",
            "deployment",
            "llama-3-2-3b-pinned-engine",
            "-n",
            "llama-demo",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ],
        NEW_IMAGE,
    )
    sh.k(
        "--context=sim-1",
        "get",
        "inferenceservice",
        "llama-3-2-3b-pinned",
        "-n",
        "llama-demo",
        "-o",
        READY_COLUMNS,
    )


def contexts_story(sh: Shell, kubeconfig: Path) -> None:
    """A ClusterServingRuntime in the middle of ServingRuntimes' chains: each namespace looks its own runtimes up
    first at every depth, so team-a's own `nsf-base` shadows the cluster one for team-a's chains only."""
    ctx = "--context=sim-1"
    print(
        "\n# 2f. Resolution contexts: ClusterServingRuntime nsf-bridge inherits nsf-base; team-a has its own nsf-base."
    )
    print("#     team-a's engine runs team-a's image, team-b's the cluster runtime's:")
    leaf = yaml.safe_load((SAMPLES / "runtime.yaml").read_text())["spec"]

    def runtime(
        name: str, parent: str | None, namespace: str | None = None, image: str | None = None
    ) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
        if parent:
            meta["annotations"] = {"ome.io/inherit-from": parent}
        spec: dict[str, Any] = dict(leaf) if parent else {"engineConfig": {"runner": {"name": "ome-container"}}}
        if image:
            spec["engineConfig"] = {"runner": {"name": "ome-container", "image": image}}
        kind = "ServingRuntime" if namespace else "ClusterServingRuntime"
        return {"apiVersion": "ome.io/v1beta1", "kind": kind, "metadata": meta, "spec": spec}

    def isvc(namespace: str) -> dict[str, Any]:
        doc: dict[str, Any] = yaml.safe_load((SAMPLES / "isvc.yaml").read_text())
        doc["metadata"] = {"name": "nsf", "namespace": namespace}
        doc["spec"]["runtime"] = {"name": "nsf-leaf"}
        return doc

    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-b"}},
        runtime("nsf-base", None, image="registry.example/cluster-base:1"),
        runtime("nsf-bridge", "nsf-base"),
        runtime("nsf-base", None, "team-a", image="registry.example/team-a-base:1"),
        runtime("nsf-leaf", "nsf-bridge", "team-a"),
        runtime("nsf-leaf", "nsf-bridge", "team-b"),
        isvc("team-a"),
        isvc("team-b"),
    ]
    sh.k(ctx, "apply", "-f", "-", input=yaml.safe_dump_all(docs, sort_keys=False))
    image = ["get", "deployment", "nsf-engine", "-o", 'jsonpath={.spec.template.spec.containers[0].image}{"\\n"}']
    sh.wait_for([ctx, *image, "-n", "team-a"], "team-a-base:1")
    sh.wait_for([ctx, *image, "-n", "team-b"], "cluster-base:1")
    where = ("--kubeconfig", str(kubeconfig), "--context", "sim-1")
    sh.plugin("runtime", "tree", "nsf-base", "--kind", "ClusterServingRuntime", *where)
    sh.plugin("runtime", "tree", "nsf-bridge", "--ancestors", *where)
    print("\n# The revisions the pinned InferenceService's runtime went through, and what changed:")
    sh.plugin("runtime", "history", "sglang-llama-3-2-3b", "-n", "llama-demo", *where)


def aim_story(sh: Shell) -> None:
    """The spec's AMD AIM runtime-config examples on sim-3 (AMD GPUs), with the real kubectl."""
    ctx, ns = "--context=sim-3", ("-n", "ml-team")
    print("\n# 5. AMD AIM runtime configs on sim-3: the ml-team namespace config routes qwen-chat by its labels:")
    sh.k(ctx, "apply", "-f", str(AIM_SAMPLES / "00-namespaces.yaml"), "-f", str(AIM_SAMPLES / "gateway.yaml"))
    sh.k(ctx, "apply", "-f", str(AIM_SAMPLES / "routing"))
    sh.wait_for([ctx, "get", "aimservice", *ns, "-o", AIM_COLUMNS], "/ml/ml-team/conversational-ai")
    sh.k(ctx, "get", "httproute", "qwen-chat", *ns, "-o", 'jsonpath={.spec.rules[0].matches[0].path.value}{"\\n"}')
    sh.wait_for([ctx, "get", "aimservice", "qwen-chat", *ns, "-o", AIM_COLUMNS], "Running")

    print("\n# The service's own pathTemplate wins over the runtime config's:")
    sh.k(ctx, "apply", "-f", str(AIM_SAMPLES / "routing-override"))
    sh.wait_for([ctx, "get", "aimservice", "qwen-chat", *ns, "-o", AIM_COLUMNS], "/custom/qwen-chat")

    print("\n# Multi-tenant cost tracking: a cluster config propagates the org.example labels to the children:")
    sh.k(ctx, "apply", "-f", str(AIM_SAMPLES / "cost-tracking" / "cluster-default.yaml"))
    sh.k(ctx, "label", "aimservice", "qwen-chat", *ns, *COST_LABELS)
    columns = "-L" + ",".join(label.split("=")[0] for label in COST_LABELS)
    sh.wait_for([ctx, "get", "httproute", "qwen-chat", *ns, columns], "chatbot-v2")
    sh.k(ctx, "get", "inferenceservices.serving.kserve.io,httproute", *ns, columns)

    print("\n# A service naming a config that does not exist fails with ReferenceNotFound until it appears:")
    sh.k(ctx, "apply", "-f", str(AIM_SAMPLES / "missing-config"))
    sh.wait_for([ctx, "get", "aimservice", "qwen-chat-missing-config", *ns, "-o", AIM_COLUMNS], "ReferenceNotFound")
    sh.k(
        ctx,
        "get",
        "events",
        *ns,
        "--field-selector",
        "reason=ReferenceNotFound",
        "-o",
        "custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message",
    )
    sh.k(ctx, "apply", "-f", "-", input=NON_EXISTENT_CONFIG)
    sh.wait_for([ctx, "get", "aimservice", "qwen-chat-missing-config", *ns, "-o", AIM_COLUMNS], "Running")


def aim_caching_story(sh: Shell) -> None:
    """Model caching on sim-3 (docs/aim-resources.md): qwen-chat caches its profile; the cost-tracking labels reach
    every child down to the download pods, and the download Job's env follows the spec's merge precedence."""
    ctx, ns = "--context=sim-3", ("-n", "ml-team")
    print("\n# 6. Model caching: download protocol cluster HTTP,XET, ml-team HTTP; qwen-chat caches its profile:")
    protocol = '{"spec":{"env":[{"name":"AIM_DOWNLOADER_PROTOCOL","value":"%s"}]}}'
    sh.k(ctx, "patch", "aimclusterruntimeconfig", "default", "--type=merge", "-p", protocol % "HTTP,XET")
    sh.k(ctx, "patch", "aimruntimeconfig", "default", *ns, "--type=merge", "-p", protocol % "HTTP")
    sh.k(ctx, "apply", "-f", str(AIM_SAMPLES / "cost-tracking" / "caching.yaml"))
    sh.k(ctx, "patch", "aimservice", "qwen-chat", *ns, "--type=merge", "-p", '{"spec":{"caching":{"enabled":true}}}')
    sh.wait_for([ctx, "get", "aimprofilecache", *ns], "Ready")
    print("\n# The org.example labels on every child, one kind at a time:")
    columns = "-L" + ",".join(label.split("=")[0] for label in COST_LABELS)
    download = ("-l", "aim.eai.amd.com/component=download")
    for kind in ("inferenceservices.serving.kserve.io", "httproute", "aimprofilecache", "aimartifact"):
        sh.k(ctx, "get", kind, *ns, columns)
    sh.k(ctx, "get", "pvc", *ns, "-l", "aim.eai.amd.com/artifact", columns)
    sh.k(ctx, "get", "jobs", *ns, *download, columns)
    pods = 'jsonpath={range .items[*]}{.metadata.name}{": "}{.spec.template.metadata.labels}{"\\n"}{end}'
    sh.k(ctx, "get", "jobs", *ns, *download, "-o", pods)
    print("\n# AIM_DOWNLOADER_PROTOCOL of the download Jobs: ml-team's over the cluster's; an artifact's own wins:")
    env = '.spec.template.spec.containers[0].env[?(@.name=="AIM_DOWNLOADER_PROTOCOL")].value'
    sh.k(ctx, "get", "jobs", *ns, *download, "-o", f"custom-columns=JOB:.metadata.name,AIM_DOWNLOADER_PROTOCOL:{env}")


def hub_and_registrations(fleet: BackgroundFleet, hub: BackgroundFleet, work: Path) -> tuple[Path, Path, Settings]:
    """The CRDs on every cluster (the FleetRuntime CRD alone on the hub), one kubeconfig with a context for each
    cluster and the hub, the members registered in the hub and as files (for the CLI's `--clusters-dir`); returns
    the kubeconfig, the registration directory and the controller's settings (the hub its registry)."""
    servers = [*fleet.fleet.servers, *hub.fleet.servers]
    kubeconfig = write_kubeconfig(work / "fleet.kubeconfig", [s.kubeconfig_entry() for s in servers], "sim-1")
    fleet.run(fleet.fleet.apply([CRDS]))
    hub.run(hub.fleet.apply([CRDS / "hub"]))
    members = {s.name: s.write_kubeconfig(work / f"{s.name}.kubeconfig").read_text() for s in fleet.fleet.servers}
    gpus = {name: gpu for name, (gpu, _) in GPU_VARIANTS.items()}
    for doc in hub_registrations(members, gpus):
        hub.run(apply_document(hub.fleet.servers[0], doc))
    clusters_dir = work / "clusters"
    write_registrations(clusters_dir, kubeconfig, [s.name for s in fleet.fleet.servers])
    settings = Settings.load(
        webhook_port=0,
        clusters_dir=clusters_dir,
        hub_kubeconfig=hub.fleet.servers[0].write_kubeconfig(work / "hub.kubeconfig"),
        hub_namespace=HUB_NAMESPACE,
        trace_file=work / "traces.jsonl",
    )
    return kubeconfig, clusters_dir, settings


def main() -> int:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("the demo drives the real kubectl, which is not on PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="omectl-demo-") as tmp:
        work = Path(tmp)
        fleet = BackgroundFleet(EmbeddedFleet(3, name_prefix="sim-", simulator=simulated_nodes()))
        hub = BackgroundFleet(EmbeddedFleet(1, name_prefix="hub-"))  # hub-1: registrations and FleetRuntimes
        fleet.start()
        hub.start()
        app: ControllerApp | None = None
        try:
            kubeconfig, clusters_dir, settings = hub_and_registrations(fleet, hub, work)
            servers = [*fleet.fleet.servers, *hub.fleet.servers]
            trace_file = settings.trace_file

            async def start() -> ControllerApp:
                controller = ControllerApp(settings)
                await controller.start()
                await controller.wait_synced(60)
                return controller

            app = fleet.run(start())
            print(f"== omectl: 3 simulated clusters, registered in the hub hub-1 (and as files in {clusters_dir}) ==")
            for server in servers:
                print(f"  {server.name:8} {server.url}")
            print(f"  controller webhooks on {app.webhook.base_url}")
            sh = Shell(kubeconfig, work / "kube-cache", kubectl, trace_file)
            sh.omectl("cluster", "list", "--clusters-dir", str(clusters_dir))

            print("\n# 1. A runtime applied before its profile is denied by the admission webhook:")
            sh.k("--context=sim-1", "create", "namespace", "llama-demo")
            sh.k("--context=sim-1", "apply", "-f", str(SAMPLES / "runtime.yaml"), expect_failure=True)

            print("\n# 2. The profile, the spec's child and a GPU-specific child on every cluster:")
            for server in fleet.fleet.servers:
                ctx = f"--context={server.name}"
                if server.name != "sim-1":
                    sh.k(ctx, "create", "namespace", "llama-demo")
                sh.k(ctx, "apply", "-f", str(SAMPLES / "profile.yaml"))
                sh.k(ctx, "apply", "-f", str(SAMPLES / "runtime.yaml"))
                sh.k(ctx, "apply", "-f", "-", input=variant_child(server.name))
            for server in fleet.fleet.servers:
                sh.wait_for(
                    [f"--context={server.name}", "get", "servingruntime", "-n", "llama-demo", "-o", CHAIN_COLUMNS],
                    "Resolved",
                )

            print("\n# 2b. The spec's InferenceService on sim-1: its engine Deployment runs the merged runtime:")
            sh.k("--context=sim-1", "apply", "-f", str(SAMPLES / "clusterbasemodel.yaml"))
            sh.k("--context=sim-1", "apply", "-f", str(SAMPLES / "isvc.yaml"))
            sh.wait_for(
                [
                    "--context=sim-1",
                    "get",
                    "deployment",
                    "llama-3-2-3b-instruct-engine",
                    "-n",
                    "llama-demo",
                    "-o",
                    ENGINE_JSONPATH,
                ],
                "--mem-frac=0.9",
            )

            engine_story(sh, [s.name for s in fleet.fleet.servers], clusters_dir, kubeconfig, work)
            contexts_story(sh, kubeconfig)

            print("\n# 3. Delete the profile on sim-2: its children report ParentNotFound and keep their last chain:")
            sh.k("--context=sim-2", "delete", "clusterservingruntime", "sglang-profile")
            sh.wait_for(
                ["--context=sim-2", "get", "servingruntime", "-n", "llama-demo", "-o", CHAIN_COLUMNS], "ParentNotFound"
            )
            sh.k(
                "--context=sim-2",
                "get",
                "events",
                "-n",
                "llama-demo",
                "--field-selector",
                "type=Warning",
                "-o",
                "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,COUNT:.count,MESSAGE:.message",
            )
            print("\n# ... and recover when it is restored:")
            sh.k("--context=sim-2", "apply", "-f", str(SAMPLES / "profile.yaml"))
            sh.wait_for(
                ["--context=sim-2", "get", "servingruntime", "-n", "llama-demo", "-o", CHAIN_COLUMNS],
                "True    Resolved",
            )

            print("\n# 4. Where each field of the child's merged spec came from (from the traces):")
            app.tracing.provider.force_flush()
            sh.omectl("trace", "explain", "ServingRuntime", "llama-demo/sglang-llama-3-2-3b", "--cluster", "sim-1")
            sh.omectl("trace", "list", "--cluster", "sim-2", "--limit", "5")

            aim_story(sh)
            aim_caching_story(sh)
            rollout_story(sh, kubeconfig, [s.name for s in fleet.fleet.servers])
        finally:
            if app is not None:
                fleet.run(app.stop())
            fleet.stop()
            hub.stop()
    print("\ndemo finished; the controller and every cluster are stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
