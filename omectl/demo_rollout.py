"""The demo's fleet rollout story (issue 16): a hub cluster holding the registrations of the demo's clusters and a
FleetRuntime, an image bump rolled wave by wave (the lab cluster `sim-1` first), and a bad revision halted at wave 1
and rolled back on its own, the other clusters untouched.

`omectl.demo` calls `hub_registrations` before it starts the controller (the controller reads its clusters from the
hub then) and `rollout_story` once the other stories are done.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from omectl.fleet.providers import CLUSTER_LABEL, CLUSTER_NAME_LABEL, LABEL_ANNOTATION_PREFIX
from omectl.sim.simulator import ImageRegistry

if TYPE_CHECKING:
    from omectl.demo import Shell

HUB_NAMESPACE = "omectl-system"
LAB_CLUSTER = "sim-1"
FLEET_RUNTIME = "sglang-fleet"
ISVC = "llama-fleet"
START_IMAGE = "docker.io/lmsysorg/sglang:v0.5.5.post3-cu129-amd64"
BUMPED_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-cu129-amd64"
BAD_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-cu192-amd64"  # a typo in the tag (cu192 for cu129)
REGISTRY = ImageRegistry(missing=(BAD_IMAGE,))
"""The demo clusters' simulated registry: it has every image but the typo, whose engines stay in ImagePullBackOff."""
LAB_SOAK_SECONDS = 3
REST_SOAK_SECONDS = 1
LAB_DEADLINE_SECONDS = 6
ISVC_LABEL = "ome.io/inferenceservice"
IMAGE_JSONPATH = 'jsonpath={.spec.template.spec.containers[0].image}{"\\n"}'
WAVE_PHASES = "jsonpath={.status.waves[*].phase}"


def registration(name: str, kubeconfig: str, labels: dict[str, str]) -> dict[str, Any]:
    """A member's registration Secret in the hub (omectl/fleet/providers.py: SecretProvider)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"omectl-cluster-{name}",
            "namespace": HUB_NAMESPACE,
            "labels": {CLUSTER_LABEL: "true", CLUSTER_NAME_LABEL: name},
            "annotations": {f"{LABEL_ANNOTATION_PREFIX}{key}": value for key, value in labels.items()},
        },
        "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
    }


def hub_registrations(members: dict[str, str], gpus: dict[str, str]) -> list[dict[str, Any]]:
    """The hub's namespace and one registration per member (name -> its own kubeconfig's text), labelled with its
    GPU model, `sim-1` also `tier=lab`."""
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HUB_NAMESPACE}}]
    for name, kubeconfig in members.items():
        labels = {"gpu": gpus[name].lower(), **({"tier": "lab"} if name == LAB_CLUSTER else {})}
        docs.append(registration(name, kubeconfig, labels))
    return docs


def fleet_runtime(image: str, *, waves: bool = True) -> dict[str, Any]:
    """FleetRuntime sglang-fleet: a ClusterServingRuntime inheriting the demo's profile, for every registered
    cluster, rolled out in two waves (lab, then the rest) with short soaks so the demo stays quick; without
    `waves`, applied everywhere at once."""
    engine: dict[str, Any] = {"runner": {"name": "ome-container", "image": image, "args": ["--tp-size=1"]}}
    template = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "ClusterServingRuntime",
        "metadata": {"name": FLEET_RUNTIME, "annotations": {"ome.io/inherit-from": "sglang-profile"}},
        "spec": {
            "disabled": False,
            "supportedModelFormats": [
                {
                    "modelFormat": {"name": "safetensors", "version": "1.0.0"},
                    "modelFramework": {"name": "transformers", "version": "4.45.0.dev0"},
                    "modelArchitecture": "LlamaForCausalLM",
                    "autoSelect": False,
                }
            ],
            "engineConfig": engine,
        },
    }
    rollout_waves = [
        {
            "name": "lab",
            "clusterSelector": {"matchLabels": {"tier": "lab"}},
            "soakSeconds": LAB_SOAK_SECONDS,
            "progressDeadlineSeconds": LAB_DEADLINE_SECONDS,
        },
        {"name": "rest", "percent": 100, "soakSeconds": REST_SOAK_SECONDS},
    ]
    spec: dict[str, Any] = {
        "placement": {"clusterSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
        "template": template,
    }
    if waves:
        spec["rollout"] = {"autoRollback": True, "waves": rollout_waves}
    return {
        "apiVersion": "fleet.omectl.io/v1alpha1",
        "kind": "FleetRuntime",
        "metadata": {"name": FLEET_RUNTIME},
        "spec": spec,
    }


def fleet_isvc() -> str:
    doc = {
        "apiVersion": "ome.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": ISVC, "namespace": "llama-demo"},
        "spec": {
            "model": {"name": "llama-3-2-3b-instruct"},
            "runtime": {"name": FLEET_RUNTIME},
            "engine": {"minReplicas": 1, "maxReplicas": 1},
        },
    }
    return yaml.safe_dump(doc, sort_keys=False)


def rollout_story(sh: Shell, kubeconfig: Path, servers: list[str]) -> dict[str, str]:
    """Returns each cluster's engine image at the end (the rollback's outcome)."""
    hub = "--context=hub-1"
    where = ("--kubeconfig", str(kubeconfig), "--context", "hub-1")
    shown = "--context hub-1"

    def status() -> None:
        sh.omectl_with(["rollout", "status", FLEET_RUNTIME, *where], f"rollout status {FLEET_RUNTIME} {shown}")

    def apply(doc: dict[str, Any]) -> None:
        sh.k(hub, "apply", "--validate=false", "-f", "-", input=json.dumps(doc))

    def rollout_phase(phase: str, revision: int) -> None:
        sh.wait_for(
            [hub, "get", "fleetruntime", FLEET_RUNTIME, "-o", "jsonpath={.status.revision} {.status.phase}"],
            f"{revision} {phase}",
        )

    print("\n# 7. Fleet rollouts. The controller reads its clusters from the hub hub-1 (sim-1 labelled tier=lab).")
    print(
        "#    FleetRuntime sglang-fleet in the hub puts a ClusterServingRuntime on every cluster (at once, to start):"
    )
    sh.k(hub, "get", "secrets", "-n", HUB_NAMESPACE, "-l", CLUSTER_LABEL, "-o", "name")
    apply(fleet_runtime(START_IMAGE, waves=False))
    rollout_phase("Succeeded", 1)
    for server in servers:
        sh.k(f"--context={server}", "apply", "-f", "-", input=fleet_isvc())
    for server in servers:
        sh.wait_isvc(f"--context={server}", ISVC, "Ready")
    status()

    print(f"\n# 7a. An image bump, in waves now: lab (sim-1) first, soaking {LAB_SOAK_SECONDS}s, then the rest; a wave")
    print("#     passes when its engines are Ready. sim-1 gets it and soaks while sim-2 and sim-3 keep revision 1 ...")
    apply(fleet_runtime(BUMPED_IMAGE))
    sh.wait_for([hub, "get", "fleetruntime", FLEET_RUNTIME, "-o", WAVE_PHASES], "Soaking Pending")
    status()
    print("\n# ... then the rest, once the lab wave passed its gate:")
    rollout_phase("Succeeded", 2)
    status()

    print("\n# 7b. A bad revision: a typo in its image tag (cu192 for cu129), an image the registry does not have.")
    print("#     sim-1's new engine pod waits in ImagePullBackOff while the old one keeps serving (the rolling update")
    print("#     takes no old pod down first), so the engine stays Ready but never rolls revision 3 out: wave 1 fails")
    print(f"#     its gate after {LAB_DEADLINE_SECONDS}s and sim-1 gets revision 2 back on its own; sim-2 and sim-3")
    print("#     never see revision 3.")
    apply(fleet_runtime(BAD_IMAGE))
    sh.wait_for(
        [hub, "get", "fleetruntime", FLEET_RUNTIME, "-o", "jsonpath={.status.rollout.message}"],
        "not rolled out",
    )
    sh.k(f"--context={LAB_CLUSTER}", "get", "pods", "-n", "llama-demo", "-l", f"{ISVC_LABEL}={ISVC}")
    status()
    rollout_phase("RolledBack", 3)
    status()
    sh.k(
        hub,
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=FleetRuntime",
        "--sort-by=.metadata.creationTimestamp",
        "-o",
        "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message",
    )
    images = {}
    for server in servers:
        image = ["get", "deployment", f"{ISVC}-engine", "-n", "llama-demo", "-o", IMAGE_JSONPATH]
        images[server] = sh.wait_for([f"--context={server}", *image], BUMPED_IMAGE).strip()
    sh.omectl_with(["rollout", "history", FLEET_RUNTIME, *where], f"rollout history {FLEET_RUNTIME} {shown}")
    return images
