"""`make demo`: a 3-cluster simulated fleet driven by the real kubectl, start to finish, leaving nothing running."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from omectl.embedded.fleet import BackgroundFleet, EmbeddedFleet

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "deploy" / "samples"


class Step:
    def __init__(self, kubeconfig: Path, cache: Path, kubectl: str) -> None:
        self.kubeconfig = kubeconfig
        self.cache = cache
        self.kubectl = kubectl

    def run(self, *args: str, input: str | None = None, expect_failure: bool = False) -> str:
        argv = [self.kubectl, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.cache}", *args]
        print(f"\n$ kubectl {' '.join(args)}", flush=True)
        env = dict(os.environ, HOME=str(self.cache))
        env.pop("KUBECONFIG", None)
        proc = subprocess.run(argv, input=input, capture_output=True, text=True, env=env, timeout=60)
        output = (proc.stdout + proc.stderr).rstrip()
        if output:
            print(output, flush=True)
        if (proc.returncode != 0) != expect_failure:
            raise SystemExit(f"demo step failed: kubectl {' '.join(args)} (exit {proc.returncode})")
        return proc.stdout


def main() -> int:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        print("the demo drives the real kubectl, which is not on PATH", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="omectl-demo-") as tmp:
        work = Path(tmp)
        fleet = BackgroundFleet(EmbeddedFleet(3, name_prefix="sim-"))
        fleet.start()
        try:
            kubeconfig = fleet.fleet.write_kubeconfig(work / "fleet.kubeconfig")
            print("== omectl simulated fleet: 3 embedded Kubernetes API servers ==")
            for server in fleet.fleet.servers:
                print(f"  {server.name:8} {server.url}")
            step = Step(kubeconfig, work / "kube-cache", kubectl)
            step.run("config", "get-contexts")
            gpu = {"sim-1": "H100", "sim-2": "H200", "sim-3": "MI300X"}
            for server in fleet.fleet.servers:
                ctx = f"--context={server.name}"
                step.run(ctx, "version")
                step.run(ctx, "apply", "-f", str(SAMPLES / "modelcache-crd.yaml"))
                step.run(
                    ctx,
                    "wait",
                    "--for=condition=Established",
                    "crd/modelcaches.demo.omectl.io",
                    "--timeout=20s",
                )
                manifest = (SAMPLES / "modelcache.yaml").read_text().replace("H100", gpu[server.name])
                step.run(ctx, "apply", "-f", "-", input=manifest)
                step.run(
                    ctx,
                    "patch",
                    "modelcache",
                    "llama-3-2-3b",
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    '{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Downloaded"}]}}',
                )
            for server in fleet.fleet.servers:
                step.run(f"--context={server.name}", "get", "modelcaches")
            step.run(
                "--context=sim-2",
                "get",
                "mc",
                "llama-3-2-3b",
                "-o",
                'custom-columns=NAME:.metadata.name,GPU:.spec.gpuType,READY:.status.conditions[?(@.type=="Ready")].status,RV:.metadata.resourceVersion',
            )
            print("\n# validation happens on the server, with the API server's own wording:")
            bad = (SAMPLES / "modelcache.yaml").read_text().replace("H100", "TPU").replace("llama-3-2-3b", "bad")
            step.run("--context=sim-1", "apply", "-f", "-", input=bad, expect_failure=True)
            step.run("--context=sim-3", "delete", "modelcache", "llama-3-2-3b")
            step.run("--context=sim-3", "get", "modelcaches")
            print("\n# each cluster keeps its own resourceVersion counter:")
            for server in fleet.fleet.servers:
                print(f"  {server.name}: resourceVersion {server.api.store.rv}")
        finally:
            fleet.stop()
    print("\ndemo finished; every cluster is stopped.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
