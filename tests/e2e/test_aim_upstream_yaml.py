"""What upstream AIM Engine's own YAML found (issue 18's defects), through the real kubectl on one simulated cluster
with the controller running: upstream's Helm values example, its kubebuilder scaffolds (a model or service with no
spec), Gateway API patterns on a gatewayRef, the reconciliation-paused annotation and the AIM_ENGINE_ARGS merge.

Upstream's documents are pinned under tests/fixtures/upstream/aim (commit in its SOURCE and in each rendered file's
header). A kind we serve only at v1alpha2 gets upstream's v1alpha1 document at that version, otherwise unchanged.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
import yaml

from omectl.api import aim, crdgen
from omectl.sim.simulator import NodePool, SimulatorConfig
from tests.e2e.conftest import ROOT, ControlledFleet, running_fleet

pytestmark = [pytest.mark.kubectl, pytest.mark.xdist_group("e2e")]
T = TypeVar("T")

UPSTREAM = ROOT / "tests" / "fixtures" / "upstream" / "aim"
CLUSTER = "aimup-1"
V1 = f"{aim.GROUP}/{aim.V1ALPHA1}"


class Env:
    def __init__(self, fleet: ControlledFleet) -> None:
        self.fleet = fleet

    def run(self, *args: str, stdin: str | None = None) -> Any:
        return self.fleet.kubectl.run(f"--context={CLUSTER}", *args, input=stdin, check=False)

    def k(self, *args: str, stdin: str | None = None) -> str:
        proc = self.run(*args, stdin=stdin)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout  # type: ignore[no-any-return]

    def apply(self, *docs: dict[str, Any]) -> None:
        self.k("apply", "-f", "-", stdin=yaml.safe_dump_all(docs))

    def get(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        proc = self.run("get", resource, name, "-o", "json", *(["-n", namespace] if namespace else []))
        if proc.returncode != 0:
            assert "NotFound" in proc.stderr, proc.stderr
            return None
        return json.loads(proc.stdout)  # type: ignore[no-any-return]

    def status(self, resource: str, name: str, namespace: str | None = None) -> dict[str, Any]:
        return (self.get(resource, name, namespace) or {}).get("status") or {}

    def events(self, namespace: str, name: str, reason: str) -> list[dict[str, Any]]:
        items = json.loads(self.k("get", "events", "-n", namespace, "-o", "json"))["items"]
        return [e for e in items if e["involvedObject"]["name"] == name and e["reason"] == reason]


def until(probe: Callable[[], T | None], what: str, timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"never: {what} (last: {last!r})")


def upstream_doc(path: str) -> dict[str, Any]:
    """A pinned upstream document, at v1alpha2 when we do not serve its kind at v1alpha1."""
    doc: dict[str, Any] = yaml.safe_load((UPSTREAM / path).read_text())
    versions = next(d.versions for d in crdgen.CRDS if d.group == aim.GROUP and d.kind == doc["kind"])
    if aim.V1ALPHA1 not in versions:
        doc["apiVersion"] = f"{aim.GROUP}/{versions[0]}"
    return doc


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    simulator = SimulatorConfig(pools=(NodePool(count=1, gpus_per_node=8, gpu_resource="amd.com/gpu"),))
    with running_fleet(tmp_path_factory.mktemp("aimup"), 1, "aimup-", simulator=simulator) as fleet:
        env = Env(fleet)
        env.apply(namespace("aim-system"))
        yield env


# --- spec.model.autoDiscovery: upstream's Helm values example --------------------------------------------------


@pytest.mark.parametrize("kind", ["AIMClusterRuntimeConfig", "AIMRuntimeConfig"])
def test_upstreams_helm_values_example_applies_and_is_stored_unchanged(env: Env, kind: str) -> None:
    example = upstream_doc("helm/clusterruntimeconfig-values-example.yaml")
    assert example["spec"]["model"] == {"autoDiscovery": True}
    doc = {**example, "kind": kind, "metadata": {"name": "helm-example"}}
    ns = None
    if kind == "AIMRuntimeConfig":
        ns = "helm-example"
        env.apply(namespace(ns))
        doc["metadata"]["namespace"] = ns
    plural = f"{kind.lower()}s"
    env.apply(doc)
    stored = env.get(plural, "helm-example", ns)
    assert stored is not None
    assert stored["spec"] == example["spec"]
