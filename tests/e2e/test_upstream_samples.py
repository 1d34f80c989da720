"""Upstream OME's own YAML (tests/fixtures/upstream/ome, pinned at the commit in its SOURCE) applied unchanged
through the real kubectl to a simulated cluster with omectl's CRDs and the controller running: every file applies,
the simulated model agent fills in what upstream's would read from config.json, and every sample InferenceService
whose model and runtime are present renders its engine."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.sim.simulator import SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]

UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "ome" / "config"
CLUSTER = "up-1"


def docs(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]


def files(kind_dir: str) -> list[Path]:
    return sorted((UPSTREAM / kind_dir).rglob("*.yaml"))


def names_of(kind_dir: str, kind: str) -> set[str]:
    return {d["metadata"]["name"] for path in files(kind_dir) for d in docs(path) if d.get("kind") == kind}


@dataclass
class Applied:
    fleet: ControlledFleet
    results: dict[Path, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Applied]:
    with running_fleet(tmp_path_factory.mktemp("upstream"), 1, "up-", simulator=SimulatorConfig()) as fleet:
        results: dict[Path, subprocess.CompletedProcess[str]] = {}
        for path in [*files("runtimes"), *files("models"), *files("samples")]:
            contents = docs(path)
            declared = {d["metadata"]["name"] for d in contents if d.get("kind") == "Namespace"}
            for namespace in {d["metadata"].get("namespace") for d in contents} - declared - {None}:
                # a sample that does not create its namespace expects it to exist, as on a real cluster
                fleet.kubectl.run(f"--context={CLUSTER}", "create", "namespace", str(namespace), check=False)
            results[path] = fleet.kubectl.run(f"--context={CLUSTER}", "apply", "-f", str(path), check=False)
        yield Applied(fleet, results)


def test_the_pinned_set_covers_runtimes_models_and_samples() -> None:
    assert len(files("runtimes")) >= 10 and len(files("models")) >= 10 and len(files("samples")) >= 10
    assert "Commit:" in (UPSTREAM.parent / "SOURCE").read_text()


def test_every_upstream_file_applies_unchanged(applied: Applied) -> None:
    failed = {str(p.relative_to(UPSTREAM)): r.stderr.strip() for p, r in applied.results.items() if r.returncode}
    assert failed == {}
    for path, result in applied.results.items():
        lines = result.stdout.strip().splitlines()
        assert len(lines) == len(docs(path)), (path, result.stdout)
        assert all(line.endswith((" created", " configured", " unchanged")) for line in lines), result.stdout


def test_the_model_agent_fills_what_upstream_reads_from_config_json(applied: Applied) -> None:
    spec = yaml.safe_load(applied.fleet.k(CLUSTER, "get", "clusterbasemodel", "llama-3-2-3b-instruct", "-o", "yaml"))[
        "spec"
    ]
    assert spec["modelArchitecture"] == "LlamaForCausalLM"
    # the schema defaults what the agent leaves out, as upstream's CRD does
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0", "operator": "Equal", "weight": 1}
    assert spec["modelFramework"]["name"] == "transformers"
    assert spec["storage"]["storageUri"] == "hf://meta-llama/Llama-3.2-3B-Instruct"  # what the file says stays
    assert spec["modelCapabilities"] == ["TEXT_TO_TEXT"]


def engine_of(fleet: ControlledFleet, namespace: str, name: str) -> str:
    return fleet.k(
        CLUSTER,
        "get",
        "deployments,leaderworkersets",
        "-n",
        namespace,
        "-l",
        f"ome.io/inferenceservice={name},component=engine",
        "-o",
        "name",
    ).strip()


# Samples that do not render, and the Warning event that says why, as upstream's controller would refuse them too
# (or, for Serverless, because omectl renders RawDeployment and MultiNode only).
REFUSED = {
    ("default", "mixtral-8x7b-instruct-v0-1"): "ServerlessModeRejected",  # engine minReplicas 0: Knative
    # upstream's GreaterThanOrEqual asks runtime >= model: the runtime's transformers 4.33.1 is below R1's 4.46.3
    ("deepseek-r1", "deepseek-r1"): "RuntimeValidationError",
}


def test_every_sample_whose_model_and_runtime_are_present_renders_an_engine(applied: Applied) -> None:
    models, runtimes = names_of("models", "ClusterBaseModel"), names_of("runtimes", "ClusterServingRuntime")
    expected = []
    for path in files("samples"):
        for doc in docs(path):
            if doc.get("kind") != "InferenceService":
                continue
            spec = doc["spec"]
            runtime = (spec.get("runtime") or {}).get("name")
            if spec["model"]["name"] in models and (runtime is None or runtime in runtimes):
                expected.append((doc["metadata"].get("namespace", "default"), doc["metadata"]["name"]))
    assert len(expected) >= 10 and set(REFUSED) <= set(expected)
    deadline = time.monotonic() + 60
    missing = [ref for ref in expected if ref not in REFUSED]
    while missing and time.monotonic() < deadline:
        missing = [(ns, name) for ns, name in missing if not engine_of(applied.fleet, ns, name)]
        if missing:
            time.sleep(0.2)
    events = applied.fleet.k(CLUSTER, "get", "events", "-A", "--field-selector", "type=Warning")
    assert missing == [], events
    for (namespace, name), reason in REFUSED.items():
        selector = f"involvedObject.name={name},reason={reason}"
        while not applied.fleet.k(CLUSTER, "get", "events", "-n", namespace, f"--field-selector={selector}", "-oname"):
            assert time.monotonic() < deadline + 30, f"no {reason} event for {namespace}/{name}"
            time.sleep(0.2)
        assert not engine_of(applied.fleet, namespace, name)
