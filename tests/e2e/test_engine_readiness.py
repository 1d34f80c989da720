"""InferenceService readiness on simulated GPU nodes, driven by the real kubectl, and `omectl fleet status`.

One cluster has a single node with 2 NVIDIA GPUs, and a registry without the image `TYPO_IMAGE`. The spec's
InferenceService (1 GPU) becomes Ready; a second one asking for 4 GPUs in one pod never fits and reports the
scheduler's reason on EngineReady and Ready; a third whose engine names the missing image is scheduled (1 GPU) but
waits in ImagePullBackOff, and says so; `fleet status` counts GPUs requested against the nodes' capacity. Each test
sets up what it needs, so any order works.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from omectl.cli.main import app as omectl_app
from omectl.sim.fleet import BackgroundFleet
from omectl.sim.simulator import ImageRegistry, NodePool, SimulatorConfig
from tests.e2e.conftest import running_fleet
from tests.support import Kubectl

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "deploy" / "samples" / "ome"
CLUSTER = "ready-1"
TYPO_IMAGE = "docker.io/lmsysorg/sglang:v0.5.6-cu192-amd64"  # cu192 for cu129: the registry has no such image
pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]


class Env:
    def __init__(self, bg: BackgroundFleet, kubectl: Kubectl, clusters_dir: Path) -> None:
        self.bg, self.kubectl, self.clusters_dir = bg, kubectl, clusters_dir

    def k(self, *args: str, **kw: Any) -> str:
        return self.kubectl.run(f"--context={CLUSTER}", *args, **kw).stdout  # type: ignore[no-any-return]

    def isvc(self, name: str) -> dict[str, Any]:
        document: dict[str, Any] = json.loads(self.k("get", "inferenceservice", name, "-n", "llama-demo", "-o", "json"))
        return document

    def condition(self, name: str, condition_type: str) -> dict[str, Any]:
        conditions = (self.isvc(name).get("status") or {}).get("conditions") or []
        return next((c for c in conditions if c["type"] == condition_type), {})

    def wait_condition(self, name: str, condition_type: str, status: str, timeout: float = 30) -> dict[str, Any]:
        self.kubectl.run(
            f"--context={CLUSTER}",
            "wait",
            f"inferenceservice/{name}",
            "-n",
            "llama-demo",
            f"--for=condition={condition_type}={status}",
            f"--timeout={int(timeout)}s",
        )
        return self.condition(name, condition_type)


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(
        pools=(NodePool(count=1, gpus_per_node=2, gpu_resource="nvidia.com/gpu"),),
        registry=ImageRegistry(missing=(TYPO_IMAGE,)),
    )
    base = tmp_path_factory.mktemp("readiness")
    with running_fleet(base, 1, "ready-", simulator=simulator, install_webhooks=False) as fleet:
        env = Env(fleet.bg, fleet.kubectl, fleet.clusters_dir)
        env.k("create", "namespace", "llama-demo")
        for sample in ("clusterbasemodel.yaml", "profile.yaml", "runtime.yaml"):
            env.k("apply", "-f", str(SAMPLES / sample))
        yield env


def big_isvc() -> str:
    doc = yaml.safe_load((SAMPLES / "isvc.yaml").read_text())
    doc["metadata"]["name"] = "too-big"
    gpus = {"nvidia.com/gpu": "4"}  # one pod asking for 4 GPUs, on a 2-GPU node: it never fits and holds none
    doc["spec"]["engine"] = {"runner": {"name": "ome-container", "resources": {"requests": gpus, "limits": gpus}}}
    return yaml.safe_dump(doc)


def typo_isvc() -> str:
    doc = yaml.safe_load((SAMPLES / "isvc.yaml").read_text())
    doc["metadata"]["name"] = "typo"
    doc["spec"]["engine"]["runner"] = {"name": "ome-container", "image": TYPO_IMAGE}
    return yaml.safe_dump(doc)


def fleet_status(clusters_dir: Path) -> dict[str, Any]:
    result = CliRunner().invoke(omectl_app, ["fleet", "status", "--clusters-dir", str(clusters_dir), "-o", "json"])
    assert result.exit_code == 0, result.output
    (cluster,) = json.loads(result.stdout)["clusters"]
    return cluster  # type: ignore[no-any-return]


def test_an_engine_that_fits_makes_the_inference_service_ready_with_its_url(env: Env) -> None:
    env.k("apply", "-f", str(SAMPLES / "isvc.yaml"))
    engine = env.wait_condition("llama-3-2-3b-instruct", "EngineReady", "True")
    assert engine["reason"] == "MinimumReplicasAvailable"
    env.wait_condition("llama-3-2-3b-instruct", "Ready", "True")
    status = env.isvc("llama-3-2-3b-instruct")["status"]
    assert status["url"] == "http://llama-3-2-3b-instruct-engine.llama-demo.svc.cluster.local"
    revision = status["runtime"]["revision"]
    assert status["components"]["engine"] == {
        "url": status["url"],
        "latestCreatedRevision": revision,
        "latestReadyRevision": revision,
    }


def test_an_engine_that_does_not_fit_reports_the_schedulers_reason(env: Env) -> None:
    env.k("apply", "-f", "-", input=big_isvc())
    engine = env.wait_condition("too-big", "EngineReady", "False")
    message = "Deployment does not have minimum availability. 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    assert engine["reason"] == "MinimumReplicasUnavailable"
    assert engine["message"] == message
    ready = env.condition("too-big", "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "EngineNotReady", message)
    assert "latestReadyRevision" not in env.isvc("too-big")["status"]["components"]["engine"]


def test_an_engine_whose_image_cannot_be_pulled_says_so(env: Env) -> None:
    env.k("apply", "-f", "-", input=typo_isvc())
    engine = env.wait_condition("typo", "EngineReady", "False")
    message = f'Deployment does not have minimum availability. ImagePullBackOff: Back-off pulling image "{TYPO_IMAGE}"'
    assert (engine["reason"], engine["message"]) == ("MinimumReplicasUnavailable", message)
    ready = env.condition("typo", "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == ("False", "EngineNotReady", message)
    pods = env.k("get", "pods", "-n", "llama-demo", "-l", "ome.io/inferenceservice=typo", "--no-headers").split()
    assert pods[1:3] == ["0/1", "ImagePullBackOff"]


def test_fleet_status_counts_gpus_requested_against_capacity_and_ready_engines(env: Env) -> None:
    env.k("apply", "-f", str(SAMPLES / "isvc.yaml"))  # idempotent: the tests may run in any order
    env.k("apply", "-f", "-", input=big_isvc())
    env.k("apply", "-f", "-", input=typo_isvc())
    env.wait_condition("llama-3-2-3b-instruct", "Ready", "True")
    env.wait_condition("too-big", "Ready", "False")
    env.wait_condition("typo", "Ready", "False")
    status = fleet_status(env.clusters_dir)
    assert status["nodes"] == 1
    assert status["gpus"] == {"nvidia.com/gpu": {"total": 2, "requested": 6}}  # 1 + 4 + 1, placed or not
    assert status["engines"] == {"ready": 1, "total": 3}
    table = CliRunner().invoke(omectl_app, ["fleet", "status", "--clusters-dir", str(env.clusters_dir)])
    assert table.exit_code == 0, table.output
    header, row = table.stdout.splitlines()
    assert header.split() == ["CLUSTER", "NODES", "GPU", "REQUESTED/TOTAL", "FREE", "ENGINES", "READY/TOTAL"]
    assert row.split() == [CLUSTER, "1", "nvidia.com/gpu", "6/2", "0", "(over", "by", "4)", "1/3"]
